"""Example answers for lesson 10_flash_attention: the example class, the classic mistakes of the
online softmax (the accumulated output not rescaled, the normaliser rescaled twice, lse without the
max, the causal diagonal block skipped or fully masked, the scale applied twice, the ragged last
block dropped), answers that build the L x L matrix (whole, or whole and then looped over in
blocks, or a row of blocks), a causal answer that masks instead of skipping, backward passes with
D from one block's dp or P rebuilt by a softmax per block, a Function that saves P, and correct
answers written differently. Keys are answer-cell ids."""

FWD, BWD, FN = "flash_attention_forward_answer", "flash_attention_backward_answer", "FlashAttention_answer"


def _forward(
    scale_line="scale = 1 / math.sqrt(q.shape[-1])",
    key_range="range(0, min(i1, lk) if is_causal else lk, block_k)",
    query_range="range(0, lq, block_q)",
    mask_cond="is_causal and j0 + k_j.shape[-2] - 1 > i0",
    mask_line="s = s.masked_fill(kpos > qpos, -math.inf)",
    l_line="l = alpha * l + p.sum(dim=-1)",
    acc_line="acc = alpha.unsqueeze(-1) * acc + p @ v_j",
    lse_line="lse[..., i0:i1] = m + torch.log(l)",
    init_line="o = q.new_zeros(*q.shape[:-1], v.shape[-1])",
):
    return f"""
def flash_attention_forward(q, k, v, is_causal=False, block_q=64, block_k=64):
    lq, lk = q.shape[-2], k.shape[-2]
    {scale_line}
    {init_line}
    lse = q.new_zeros(q.shape[:-1])
    for i0 in {query_range}:
        q_i = q[..., i0:i0 + block_q, :] * scale
        rows = q_i.shape[:-1]
        m = q.new_full(rows, -math.inf)
        l = q.new_zeros(rows)
        acc = q.new_zeros(*rows, v.shape[-1])
        i1 = i0 + q_i.shape[-2]
        for j0 in {key_range}:
            k_j, v_j = k[..., j0:j0 + block_k, :], v[..., j0:j0 + block_k, :]
            s = q_i @ k_j.transpose(-2, -1)
            if {mask_cond}:
                qpos = torch.arange(i0, i1, device=q.device)[:, None]
                kpos = torch.arange(j0, j0 + k_j.shape[-2], device=q.device)[None, :]
                {mask_line}
            m_new = torch.maximum(m, s.amax(dim=-1))
            p = torch.exp(s - m_new.unsqueeze(-1))
            alpha = torch.exp(m - m_new)
            {l_line}
            {acc_line}
            m = m_new
        o[..., i0:i1, :] = acc / l.unsqueeze(-1)
        {lse_line}
    return o, lse
"""


FORWARD_OK = _forward()


def _backward(
    d_line="big_d = (do * o).sum(dim=-1)",
    first_line="first = (j0 // block_q) * block_q if is_causal else 0",
    p_line="p = torch.exp(s - lse[..., i0:i1].unsqueeze(-1))",
    ds_line="ds = p * (dp - big_d[..., i0:i1].unsqueeze(-1))",
    scale_bwd="scale",
):
    return f"""
def flash_attention_backward(q, k, v, o, lse, do, is_causal=False, block_q=64, block_k=64):
    lq, lk = q.shape[-2], k.shape[-2]
    scale = 1 / math.sqrt(q.shape[-1])
    {d_line}
    dq, dk, dv = torch.zeros_like(q), torch.zeros_like(k), torch.zeros_like(v)
    for j0 in range(0, lk, block_k):
        k_j, v_j = k[..., j0:j0 + block_k, :], v[..., j0:j0 + block_k, :]
        j1 = j0 + k_j.shape[-2]
        dk_j, dv_j = torch.zeros_like(k_j), torch.zeros_like(v_j)
        {first_line}
        for i0 in range(first, lq, block_q):
            q_i, do_i = q[..., i0:i0 + block_q, :], do[..., i0:i0 + block_q, :]
            i1 = i0 + q_i.shape[-2]
            s = q_i @ k_j.transpose(-2, -1) * scale
            if is_causal and j1 - 1 > i0:
                qpos = torch.arange(i0, i1, device=q.device)[:, None]
                kpos = torch.arange(j0, j1, device=q.device)[None, :]
                s = s.masked_fill(kpos > qpos, -math.inf)
            {p_line}
            dv_j = dv_j + p.transpose(-2, -1) @ do_i
            dp = do_i @ v_j.transpose(-2, -1)
            {ds_line}
            dq[..., i0:i1, :] += ds @ k_j * {scale_bwd}
            dk_j = dk_j + ds.transpose(-2, -1) @ q_i * {scale_bwd}
        dk[..., j0:j1, :] = dk_j
        dv[..., j0:j1, :] = dv_j
    return dq, dk, dv
"""


BACKWARD_OK = _backward()


def _function(forward, backward):
    return f"""
class FlashAttention(torch.autograd.Function):
    @staticmethod
    def forward(ctx, q, k, v, is_causal=False):
{forward}

    @staticmethod
    def backward(ctx, do):
{backward}
"""


FN_FORWARD_OK = """        o, lse = flash_attention_forward(q, k, v, is_causal)
        ctx.save_for_backward(q, k, v, o, lse)
        ctx.is_causal = is_causal
        return o"""
FN_BACKWARD_OK = """        q, k, v, o, lse = ctx.saved_tensors
        dq, dk, dv = flash_attention_backward(q, k, v, o, lse, do, ctx.is_causal)
        return dq, dk, dv, None"""
FUNCTION_OK = _function(FN_FORWARD_OK, FN_BACKWARD_OK)

ALL_OK = {FWD: FORWARD_OK, BWD: BACKWARD_OK, FN: FUNCTION_OK}

# The L x L matrix whole, then the online softmax over blocks of it: right numbers, wrong memory.
FULL_THEN_BLOCKS = """
def flash_attention_forward(q, k, v, is_causal=False, block_q=64, block_k=64):
    lq, lk = q.shape[-2], k.shape[-2]
    scores = q @ k.transpose(-2, -1) / math.sqrt(q.shape[-1])     # (..., Lq, Lk), all of it
    if is_causal:
        scores = scores.masked_fill(~torch.ones(lq, lk, dtype=torch.bool).tril(), -math.inf)
    o = q.new_zeros(*q.shape[:-1], v.shape[-1])
    lse = q.new_zeros(q.shape[:-1])
    for i0 in range(0, lq, block_q):
        s_i = scores[..., i0:i0 + block_q, :]
        m = s_i.amax(-1)
        p = torch.exp(s_i - m.unsqueeze(-1))
        l = p.sum(-1)
        o[..., i0:i0 + block_q, :] = (p @ v) / l.unsqueeze(-1)
        lse[..., i0:i0 + block_q] = m + torch.log(l)
    return o, lse
"""

NAIVE = """
def flash_attention_forward(q, k, v, is_causal=False, block_q=64, block_k=64):
    s = q @ k.transpose(-2, -1) / math.sqrt(q.shape[-1])
    if is_causal:
        s = s.masked_fill(~torch.ones(s.shape[-2:], dtype=torch.bool, device=q.device).tril(), -math.inf)
    return torch.softmax(s, -1) @ v, torch.logsumexp(s, -1)
"""

# Loops over query blocks only: each step holds a (block_q, Lk) row of scores.
ROW_OF_BLOCKS = """
def flash_attention_forward(q, k, v, is_causal=False, block_q=64, block_k=64):
    lq, lk = q.shape[-2], k.shape[-2]
    outs, lses = [], []
    for i0 in range(0, lq, block_q):
        s = q[..., i0:i0 + block_q, :] @ k.transpose(-2, -1) / math.sqrt(q.shape[-1])   # (..., bq, Lk)
        if is_causal:
            rows = torch.arange(i0, i0 + s.shape[-2])[:, None]
            s = s.masked_fill(torch.arange(lk)[None, :] > rows, -math.inf)
        outs.append(torch.softmax(s, -1) @ v)
        lses.append(torch.logsumexp(s, -1))
    return torch.cat(outs, -2), torch.cat(lses, -1)
"""

MISTAKES = {
    "fwd_output_not_rescaled": dict(
        cells={FWD: _forward(acc_line="acc = acc + p @ v_j")},
        question="flash_attention_forward",
        hint="not used to rescale the accumulated output",
    ),
    "fwd_normaliser_rescaled_twice": dict(
        cells={FWD: _forward(l_line="l = alpha * alpha * l + p.sum(dim=-1)")},
        question="flash_attention_forward",
        hint="rescaled twice",
    ),
    "fwd_lse_without_max": dict(
        cells={FWD: _forward(lse_line="lse[..., i0:i1] = torch.log(l)")},
        question="flash_attention_forward",
        hint="without the max",
    ),
    "fwd_causal_diagonal_skipped": dict(
        cells={FWD: _forward(key_range="range(0, (i0 // block_k) * block_k if is_causal else lk, block_k)")},
        question="flash_attention_forward",
        hint="diagonal block is skipped",
    ),
    "fwd_causal_diagonal_fully_masked": dict(
        cells={FWD: _forward(mask_line="s = s.masked_fill(kpos >= qpos, -math.inf)")},
        question="flash_attention_forward",
        hint="fully masked",
    ),
    "fwd_causal_diagonal_not_masked": dict(
        cells={FWD: _forward(mask_cond="False")},
        question="flash_attention_forward",
        hint="is not masked",
    ),
    "fwd_scale_twice": dict(
        cells={FWD: _forward(scale_line="scale = 1 / q.shape[-1]")},
        question="flash_attention_forward",
        hint="applied twice",
    ),
    "fwd_ragged_key_block_dropped": dict(
        cells={
            FWD: _forward(
                key_range="range(0, (min(i1, lk) if is_causal else lk) // block_k * block_k, block_k)"
            )
        },
        question="flash_attention_forward",
        hint="last key block is dropped",
    ),
    "fwd_ragged_query_block_dropped": dict(
        cells={FWD: _forward(query_range="range(0, lq // block_q * block_q, block_q)")},
        question="flash_attention_forward",
        hint="last query block is dropped",
    ),
    "fwd_full_matrix_then_blocks": dict(
        cells={FWD: FULL_THEN_BLOCKS},
        question="flash_attention_forward",
        hint="whole score (or probability) matrix",
    ),
    "fwd_naive_attention": dict(
        cells={FWD: NAIVE}, question="flash_attention_forward", hint="whole score (or probability) matrix"
    ),
    "fwd_row_of_blocks": dict(
        cells={FWD: ROW_OF_BLOCKS},
        question="flash_attention_forward",
        hint="a row of blocks that grows with L",
    ),
    "causal_masks_instead_of_skipping": dict(
        cells={FWD: _forward(key_range="range(0, lk, block_k)", mask_cond="is_causal")},
        question="causal_skipping",
        hint="masks the blocks above the diagonal instead of skipping them",
    ),
    "bwd_d_from_dp_in_block": dict(
        cells={BWD: _backward(ds_line="ds = p * (dp - (p * dp).sum(-1, keepdim=True))")},
        question="flash_attention_backward",
        hint="D is computed from dp inside each block",
    ),
    "bwd_p_softmax_per_block": dict(
        cells={BWD: _backward(p_line="p = torch.softmax(s, dim=-1)")},
        question="flash_attention_backward",
        hint="softmax inside each block",
    ),
    "bwd_no_scale": dict(
        cells={BWD: _backward(scale_bwd="1.0")},
        question="flash_attention_backward",
        hint="dq and dk miss the scale",
    ),
    "bwd_masks_instead_of_skipping": dict(
        cells={BWD: _backward(first_line="first = 0")},
        question="flash_attention_backward",
        hint="masks the blocks above the diagonal",
    ),
    "bwd_full_p": dict(
        cells={
            BWD: """
def flash_attention_backward(q, k, v, o, lse, do, is_causal=False, block_q=64, block_k=64):
    scale = 1 / math.sqrt(q.shape[-1])
    s = q @ k.transpose(-2, -1) * scale
    if is_causal:
        s = s.masked_fill(~torch.ones(s.shape[-2:], dtype=torch.bool).tril(), -math.inf)
    p = torch.exp(s - lse.unsqueeze(-1))
    dv = p.transpose(-2, -1) @ do
    dp = do @ v.transpose(-2, -1)
    ds = p * (dp - (do * o).sum(-1, keepdim=True))
    return ds @ k * scale, ds.transpose(-2, -1) @ q * scale, dv
"""
        },
        question="flash_attention_backward",
        hint="whole score (or probability) matrix",
    ),
    "fn_saves_p": dict(
        cells={
            FN: _function(
                """        s = q @ k.transpose(-2, -1) / math.sqrt(q.shape[-1])
        if is_causal:
            s = s.masked_fill(~torch.ones(s.shape[-2:], dtype=torch.bool).tril(), -math.inf)
        p = torch.softmax(s, -1)
        ctx.save_for_backward(q, k, v, p)
        return p @ v""",
                """        q, k, v, p = ctx.saved_tensors
        scale = 1 / math.sqrt(q.shape[-1])
        dv = p.transpose(-2, -1) @ do
        dp = do @ v.transpose(-2, -1)
        ds = p * (dp - (p * dp).sum(-1, keepdim=True))
        return ds @ k * scale, ds.transpose(-2, -1) @ q * scale, dv, None""",
            )
        },
        question="FlashAttention",
        hint="keeps a tensor of size Lq x Lk",
    ),
    "fn_saves_the_graph": dict(
        cells={
            FN: _function(
                """        with torch.enable_grad():
            leaves = [t.detach().requires_grad_(True) for t in (q, k, v)]
            o = attention(*leaves, is_causal)
        ctx.graph = (o, leaves)
        return o.detach()""",
                """        o, leaves = ctx.graph
        return (*torch.autograd.grad(o, leaves, do), None)""",
            )
        },
        question="FlashAttention",
        hint="saves an autograd graph",
    ),
    "fn_no_none_for_is_causal": dict(
        cells={
            FN: _function(
                FN_FORWARD_OK, FN_BACKWARD_OK.replace("return dq, dk, dv, None", "return dq, dk, dv")
            )
        },
        question="FlashAttention",
        hint="None for is_causal",
    ),
    # found by writing answers from the lesson's text alone (issue 38): each passed every check before
    "fwd_no_running_max": dict(
        cells={
            FWD: _forward(
                l_line="l = l + p.sum(dim=-1)",
                acc_line="acc = acc + p @ v_j",
                lse_line="lse[..., i0:i1] = torch.log(l)",
            )
            .replace("m_new = torch.maximum(m, s.amax(dim=-1))", "m_new = m")
            .replace("p = torch.exp(s - m_new.unsqueeze(-1))", "p = torch.exp(s)")
        },
        question="flash_attention_forward",
        hint="exp(S) overflows on large scores",
    ),
    "fwd_max_starts_at_zero": dict(
        cells={FWD: FORWARD_OK.replace("m = q.new_full(rows, -math.inf)", "m = q.new_zeros(rows)")},
        question="flash_attention_forward",
        hint="the running max starts at 0 instead of -inf",
    ),
    "fwd_causal_keys_stop_at_first_query": dict(
        cells={FWD: _forward(key_range="range(0, min(i0 + 1, lk) if is_causal else lk, block_k)")},
        question="flash_attention_forward",
        hint="the key loop stops at the query block's first query",
    ),
    "fwd_causal_keys_stop_before_last_query": dict(
        cells={FWD: _forward(key_range="range(0, min(i1 - 1, lk) if is_causal else lk, block_k)")},
        question="flash_attention_forward",
        hint="not range(0, i1 - 1, block_k)",
    ),
    "fwd_causal_by_default": dict(
        cells={FWD: FORWARD_OK.replace("is_causal=False, block_q=64", "is_causal=True, block_q=64")},
        question="flash_attention_forward",
        hint="is_causal should default to False",
    ),
    "fwd_default_blocks_32": dict(
        cells={FWD: FORWARD_OK.replace("block_q=64, block_k=64", "block_q=32, block_k=32")},
        question="flash_attention_forward",
        hint="block_q and block_k should default to 64",
    ),
    "bwd_partial_query_block_skipped": dict(
        cells={BWD: _backward(first_line="first = -(-j0 // block_q) * block_q if is_causal else 0")},
        question="flash_attention_backward",
        hint="skips a query block that sees the key block",
    ),
    "bwd_p_from_exp_s": dict(
        cells={BWD: _backward(p_line="p = torch.exp(s) / torch.exp(lse[..., i0:i1].unsqueeze(-1))")},
        question="flash_attention_backward",
        hint="never exp(S) / exp(lse)",
    ),
    "bwd_default_blocks_16": dict(
        cells={BWD: BACKWARD_OK.replace("block_q=64, block_k=64", "block_q=16, block_k=16")},
        question="flash_attention_backward",
        hint="block_q and block_k should default to 64",
    ),
    "fn_backward_through_autograd": dict(
        cells={
            FN: _function(
                FN_FORWARD_OK,
                """        q, k, v, o, lse = ctx.saved_tensors
        with torch.enable_grad():
            leaves = [t.detach().requires_grad_(True) for t in (q, k, v)]
            out = attention(*leaves, ctx.is_causal)
            dq, dk, dv = torch.autograd.grad(out, leaves, do)
        return dq, dk, dv, None""",
            )
        },
        question="FlashAttention",
        hint="with no autograd inside it",
    ),
    "fn_forward_builds_the_matrix": dict(
        cells={
            FN: _function(
                """        o = attention(q, k, v, is_causal)
        s = q @ k.transpose(-2, -1) / math.sqrt(q.shape[-1])
        if is_causal:
            s = s.masked_fill(~torch.ones(s.shape[-2:], dtype=torch.bool).tril(), -math.inf)
        ctx.save_for_backward(q, k, v, o, torch.logsumexp(s, -1))
        ctx.is_causal = is_causal
        return o""",
                FN_BACKWARD_OK,
            )
        },
        question="FlashAttention",
        hint="whole score (or probability) matrix",
    ),
    "fn_causal_by_default": dict(
        cells={
            FN: FUNCTION_OK.replace(
                "def forward(ctx, q, k, v, is_causal=False):", "def forward(ctx, q, k, v, is_causal=True):"
            )
        },
        question="FlashAttention",
        hint="is_causal should default to False",
    ),
    "fn_small_blocks": dict(
        cells={
            FN: _function(
                FN_FORWARD_OK.replace("(q, k, v, is_causal)", "(q, k, v, is_causal, 16, 16)"),
                FN_BACKWARD_OK.replace("ctx.is_causal)", "ctx.is_causal, 16, 16)"),
            )
        },
        question="FlashAttention",
        hint="use the default block sizes",
    ),
}

ALTERNATIVES = {
    "lists_and_cat": {
        FWD: """
def flash_attention_forward(q, k, v, is_causal=False, block_q=64, block_k=64):
    # log2-free, written with lists and torch.cat, the max kept as in FlashAttention-2
    d = q.shape[-1]
    outs, lses = [], []
    for i0 in range(0, q.shape[-2], block_q):
        qi = q[..., i0:i0 + block_q, :]
        nq = qi.shape[-2]
        m = torch.full(qi.shape[:-1], float("-inf"), dtype=q.dtype, device=q.device)
        l = torch.zeros_like(m)
        acc = torch.zeros(*qi.shape[:-1], v.shape[-1], dtype=q.dtype, device=q.device)
        for j0 in range(0, k.shape[-2], block_k):
            if is_causal and j0 > i0 + nq - 1:
                break
            kj, vj = k[..., j0:j0 + block_k, :], v[..., j0:j0 + block_k, :]
            s = torch.einsum("...qd,...kd->...qk", qi, kj) / math.sqrt(d)
            if is_causal:
                qpos = torch.arange(i0, i0 + nq, device=q.device).unsqueeze(-1)
                kpos = torch.arange(j0, j0 + kj.shape[-2], device=q.device)
                s = torch.where(kpos <= qpos, s, torch.tensor(float("-inf"), dtype=s.dtype, device=s.device))
            m_new = torch.maximum(m, s.max(-1).values)
            corr = torch.exp(m - m_new)
            p = torch.exp(s - m_new[..., None])
            l = l * corr + p.sum(-1)
            acc = acc * corr[..., None] + torch.einsum("...qk,...kd->...qd", p, vj)
            m = m_new
        outs.append(acc / l[..., None])
        lses.append(m + l.log())
    return torch.cat(outs, dim=-2), torch.cat(lses, dim=-1)
""",
        BWD: """
def flash_attention_backward(q, k, v, o, lse, do, is_causal=False, block_q=64, block_k=64):
    # queries outer, keys inner (dk, dv accumulated with index_add-free slicing)
    scale = q.shape[-1] ** -0.5
    D = torch.einsum("...qd,...qd->...q", do, o)
    dq, dk, dv = torch.zeros_like(q), torch.zeros_like(k), torch.zeros_like(v)
    for i0 in range(0, q.shape[-2], block_q):
        qi, doi = q[..., i0:i0 + block_q, :], do[..., i0:i0 + block_q, :]
        nq = qi.shape[-2]
        for j0 in range(0, k.shape[-2], block_k):
            if is_causal and j0 > i0 + nq - 1:
                break
            kj, vj = k[..., j0:j0 + block_k, :], v[..., j0:j0 + block_k, :]
            s = qi @ kj.transpose(-2, -1) * scale
            if is_causal:
                s = s.masked_fill(torch.arange(j0, j0 + kj.shape[-2]) > torch.arange(i0, i0 + nq)[:, None], float("-inf"))
            p = (s - lse[..., i0:i0 + nq, None]).exp()
            dv[..., j0:j0 + block_k, :] += p.transpose(-2, -1) @ doi
            ds = p * (doi @ vj.transpose(-2, -1) - D[..., i0:i0 + nq, None]) * scale
            dq[..., i0:i0 + block_q, :] += ds @ kj
            dk[..., j0:j0 + block_k, :] += ds.transpose(-2, -1) @ qi
    return dq, dk, dv
""",
        FN: _function(
            """        ctx.is_causal = is_causal
        o, lse = flash_attention_forward(q, k, v, is_causal=is_causal)
        ctx.save_for_backward(q, k, v, o, lse)
        return o""",
            """        grads = flash_attention_backward(*ctx.saved_tensors, do, is_causal=ctx.is_causal)
        return (*grads, None)""",
        ),
    },
    "prints": {
        FWD: FORWARD_OK.replace(
            "    return o, lse", "    print('forward', tuple(o.shape))\n    return o, lse"
        ),
        BWD: BACKWARD_OK,
        FN: FUNCTION_OK,
    },
}

# The example class. A student missing here does not submit this lesson.
STUDENTS = {
    "alice_perfect": ALL_OK,
    "bob_blank": {},
    "carol_partial": {FWD: FORWARD_OK},
    "dave_full_matrix": {**ALL_OK, **MISTAKES["fwd_full_matrix_then_blocks"]["cells"]},
    "erin_masks_causal": {
        **ALL_OK,
        **MISTAKES["causal_masks_instead_of_skipping"]["cells"],
        **MISTAKES["bwd_d_from_dp_in_block"]["cells"],
    },
}

MAX = {"flash_attention_forward": 3, "causal_skipping": 1, "flash_attention_backward": 3, "FlashAttention": 2}
EXPECTED = {
    "alice_perfect": dict(MAX),
    "bob_blank": {q: 0 for q in MAX},
    "carol_partial": {**{q: 0 for q in MAX}, "flash_attention_forward": 3, "causal_skipping": 1},
    # FlashAttention calls the student's forward, whose allocations its check watches too; skipping
    # is judged on FLOPs
    "dave_full_matrix": {**MAX, "flash_attention_forward": 0, "causal_skipping": 0, "FlashAttention": 0},
    "erin_masks_causal": {**MAX, "causal_skipping": 0, "flash_attention_backward": 0, "FlashAttention": 0},
}
