"""Example answers for lesson 09_modern_block: the example class, the classic mistakes of the Llama-style
block (RoPE in the half-split layout, with the exponent i/d, turned the wrong way, ignoring its
positions or theta; SwiGLU with the wrong gate or branches; key/value heads tiled; RoPE missing, on
the values, before the head split, or not offset by the cache; a cache of repeated heads or of keys
before RoPE; a Post-norm or parallel block, one norm for both sublayers, eps not passed on), and
correct answers written differently (Meta's complex-number RoPE, the half-split layout on permuted
features, einsum over the groups, torch's attention). Keys are answer-cell ids."""

ROPE_OK = """
def apply_rope(x, positions, theta=10000.0):
    d = x.shape[-1]
    two_i = torch.arange(0, d, 2, device=x.device, dtype=torch.float64)
    inv_freq = theta ** (-two_i / d)
    angle = positions.to(torch.float64)[..., None] * inv_freq
    cos, sin = angle.cos().to(x.dtype), angle.sin().to(x.dtype)
    a, b = x[..., 0::2], x[..., 1::2]
    out = torch.stack([a * cos - b * sin, a * sin + b * cos], dim=-1)
    return out.flatten(-2)
"""

SWIGLU_OK = """
class SwiGLU(nn.Module):
    def __init__(self, d_model, d_ff):
        super().__init__()
        self.w1 = nn.Linear(d_model, d_ff, bias=False)
        self.w3 = nn.Linear(d_model, d_ff, bias=False)
        self.w2 = nn.Linear(d_ff, d_model, bias=False)

    def forward(self, x):
        return self.w2(F.silu(self.w1(x)) * self.w3(x))
"""

REPEAT_OK = """
def repeat_kv(x, n_rep):
    B, H_kv, L, d = x.shape
    x = x[:, :, None].expand(B, H_kv, n_rep, L, d)
    return x.reshape(B, H_kv * n_rep, L, d)
"""

GQA_OK = """
class GroupedQueryAttention(nn.Module):
    def __init__(self, d_model, n_heads, n_kv_heads, theta=10000.0):
        super().__init__()
        self.n_heads, self.n_kv_heads, self.theta = n_heads, n_kv_heads, theta
        self.d_head = d_model // n_heads
        self.w_q = nn.Linear(d_model, d_model, bias=False)
        self.w_k = nn.Linear(d_model, n_kv_heads * self.d_head, bias=False)
        self.w_v = nn.Linear(d_model, n_kv_heads * self.d_head, bias=False)
        self.w_o = nn.Linear(d_model, d_model, bias=False)

    def forward(self, x, positions=None, kv_cache=None):
        B, T, d = x.shape
        H, H_kv, dh = self.n_heads, self.n_kv_heads, self.d_head
        q = self.w_q(x).view(B, T, H, dh).transpose(1, 2)
        k = self.w_k(x).view(B, T, H_kv, dh).transpose(1, 2)
        v = self.w_v(x).view(B, T, H_kv, dh).transpose(1, 2)
        T_past = 0 if kv_cache is None else kv_cache[0].shape[2]
        if positions is None:
            positions = torch.arange(T_past, T_past + T, device=x.device)
        q, k = apply_rope(q, positions, self.theta), apply_rope(k, positions, self.theta)
        if kv_cache is not None:
            k = torch.cat([kv_cache[0], k], dim=2)
            v = torch.cat([kv_cache[1], v], dim=2)
        k_all, v_all = repeat_kv(k, H // H_kv), repeat_kv(v, H // H_kv)
        scores = q @ k_all.transpose(-2, -1) / math.sqrt(dh)
        pos_q = torch.arange(T_past, T_past + T, device=x.device)
        pos_k = torch.arange(T_past + T, device=x.device)
        scores = scores.masked_fill(pos_k[None, :] > pos_q[:, None], float("-inf"))
        y = scores.softmax(dim=-1) @ v_all
        y = y.transpose(1, 2).reshape(B, T, d)
        return self.w_o(y), (k, v)
"""

BLOCK_OK = """
class LlamaBlock(nn.Module):
    def __init__(self, d_model, n_heads, n_kv_heads, d_ff, eps=1e-6):
        super().__init__()
        self.attn_norm = nn.RMSNorm(d_model, eps=eps)
        self.attn = GroupedQueryAttention(d_model, n_heads, n_kv_heads)
        self.ffn_norm = nn.RMSNorm(d_model, eps=eps)
        self.ffn = SwiGLU(d_model, d_ff)

    def forward(self, x, positions=None, kv_cache=None):
        a, new_cache = self.attn(self.attn_norm(x), positions, kv_cache)
        h = x + a
        return h + self.ffn(self.ffn_norm(h)), new_cache
"""

ALL_OK = {
    "apply_rope_answer": ROPE_OK,
    "SwiGLU_answer": SWIGLU_OK,
    "repeat_kv_answer": REPEAT_OK,
    "GroupedQueryAttention_answer": GQA_OK,
    "LlamaBlock_answer": BLOCK_OK,
}


def _replace(text, old, new):
    """`text` with `old` replaced by `new`; fails loudly when `old` is not there (a stale catalogue)."""
    assert old in text, f"not in the answer: {old!r}"
    return text.replace(old, new)


def _mistake(cell, base, old, new, question, hint):
    return dict(cells={cell: _replace(base, old, new)}, question=question, hint=hint)


def _rope(old, new, hint):
    return _mistake("apply_rope_answer", ROPE_OK, old, new, "apply_rope", hint)


def _swiglu(old, new, hint):
    return _mistake("SwiGLU_answer", SWIGLU_OK, old, new, "SwiGLU", hint)


def _gqa(old, new, hint):
    return _mistake("GroupedQueryAttention_answer", GQA_OK, old, new, "GroupedQueryAttention", hint)


def _block(old, new, hint):
    return _mistake("LlamaBlock_answer", BLOCK_OK, old, new, "LlamaBlock", hint)


ROPE_HALF_SPLIT = """
def apply_rope(x, positions, theta=10000.0):
    d = x.shape[-1]
    inv_freq = theta ** (-torch.arange(0, d, 2, device=x.device, dtype=torch.float64) / d)
    angle = positions.to(torch.float64)[..., None] * inv_freq
    cos, sin = angle.cos().to(x.dtype), angle.sin().to(x.dtype)
    a, b = x[..., : d // 2], x[..., d // 2 :]
    return torch.cat([a * cos - b * sin, a * sin + b * cos], dim=-1)
"""

GQA_CACHE_BEFORE_ROPE = """
class GroupedQueryAttention(nn.Module):
    def __init__(self, d_model, n_heads, n_kv_heads, theta=10000.0):
        super().__init__()
        self.n_heads, self.n_kv_heads, self.theta = n_heads, n_kv_heads, theta
        self.d_head = d_model // n_heads
        self.w_q = nn.Linear(d_model, d_model, bias=False)
        self.w_k = nn.Linear(d_model, n_kv_heads * self.d_head, bias=False)
        self.w_v = nn.Linear(d_model, n_kv_heads * self.d_head, bias=False)
        self.w_o = nn.Linear(d_model, d_model, bias=False)

    def forward(self, x, positions=None, kv_cache=None):
        B, T, d = x.shape
        H, H_kv, dh = self.n_heads, self.n_kv_heads, self.d_head
        q = self.w_q(x).view(B, T, H, dh).transpose(1, 2)
        k = self.w_k(x).view(B, T, H_kv, dh).transpose(1, 2)
        v = self.w_v(x).view(B, T, H_kv, dh).transpose(1, 2)
        if kv_cache is not None:
            k = torch.cat([kv_cache[0], k], dim=2)
            v = torch.cat([kv_cache[1], v], dim=2)
        Tk = k.shape[2]
        q = apply_rope(q, torch.arange(Tk - T, Tk, device=x.device), self.theta)
        k_rot = apply_rope(k, torch.arange(Tk, device=x.device), self.theta)
        k_all, v_all = repeat_kv(k_rot, H // H_kv), repeat_kv(v, H // H_kv)
        scores = q @ k_all.transpose(-2, -1) / math.sqrt(dh)
        allowed = torch.ones(Tk, Tk, dtype=torch.bool, device=x.device).tril()[Tk - T:]
        scores = scores.masked_fill(~allowed, float("-inf"))
        y = (scores.softmax(dim=-1) @ v_all).transpose(1, 2).reshape(B, T, d)
        return self.w_o(y), (k, v)
"""

MISTAKES = {
    # apply_rope
    "rope_half_split_layout": dict(
        cells={"apply_rope_answer": ROPE_HALF_SPLIT}, question="apply_rope", hint="half-split"
    ),
    "rope_exponent_i_over_d": _rope(
        "two_i = torch.arange(0, d, 2, device=x.device, dtype=torch.float64)",
        "two_i = torch.arange(0, d // 2, device=x.device, dtype=torch.float64)",
        "-i/d",
    ),
    "rope_exponent_positive": _rope("theta ** (-two_i / d)", "theta ** (two_i / d)", "wrong sign"),
    "rope_turns_the_wrong_way": _rope(
        "[a * cos - b * sin, a * sin + b * cos]", "[a * cos + b * sin, b * cos - a * sin]", "wrong way"
    ),
    "rope_positions_ignored": _rope(
        "angle = positions.to(torch.float64)[..., None] * inv_freq",
        "angle = torch.arange(x.shape[-2], dtype=torch.float64, device=x.device)[:, None] * inv_freq",
        "ignores its positions",
    ),
    "rope_theta_ignored": _rope(
        "inv_freq = theta ** (-two_i / d)", "inv_freq = 10000.0 ** (-two_i / d)", "ignores theta"
    ),
    # SwiGLU
    "swiglu_w1_w3_swapped": _swiglu(
        "F.silu(self.w1(x)) * self.w3(x)", "F.silu(self.w3(x)) * self.w1(x)", "swapped"
    ),
    "swiglu_sigmoid_gate": _swiglu("F.silu(self.w1(x))", "torch.sigmoid(self.w1(x))", "GLU"),
    "swiglu_relu_gate": _swiglu("F.silu(self.w1(x))", "F.relu(self.w1(x))", "ReGLU"),
    "swiglu_no_gate": _swiglu("F.silu(self.w1(x)) * self.w3(x)", "F.silu(self.w1(x))", "w3(x) is missing"),
    "swiglu_silu_of_the_product": _swiglu(
        "F.silu(self.w1(x)) * self.w3(x)", "F.silu(self.w1(x) * self.w3(x))", "product"
    ),
    "swiglu_with_biases": dict(
        cells={"SwiGLU_answer": SWIGLU_OK.replace(", bias=False)", ")")},
        question="SwiGLU",
        hint="does not name",
    ),
    # repeat_kv
    "repeat_kv_tiled": dict(
        cells={"repeat_kv_answer": "\ndef repeat_kv(x, n_rep):\n    return x.repeat(1, n_rep, 1, 1)\n"},
        question="repeat_kv",
        hint="tiled",
    ),
    "repeat_kv_on_the_time_axis": dict(
        cells={
            "repeat_kv_answer": "\ndef repeat_kv(x, n_rep):\n    return x.repeat_interleave(n_rep, dim=2)\n"
        },
        question="repeat_kv",
        hint="time axis",
    ),
    # GroupedQueryAttention
    "gqa_no_rope": _gqa(
        "        q, k = apply_rope(q, positions, self.theta), apply_rope(k, positions, self.theta)\n",
        "",
        "RoPE is missing",
    ),
    "gqa_values_rotated": _gqa(
        "q, k = apply_rope(q, positions, self.theta), apply_rope(k, positions, self.theta)\n",
        "q, k = apply_rope(q, positions, self.theta), apply_rope(k, positions, self.theta)\n"
        "        v = apply_rope(v, positions, self.theta)\n",
        "values are rotated",
    ),
    "gqa_only_q_rotated": _gqa(
        "q, k = apply_rope(q, positions, self.theta), apply_rope(k, positions, self.theta)",
        "q = apply_rope(q, positions, self.theta)",
        "only q is rotated",
    ),
    "gqa_positions_not_offset_by_the_cache": _gqa(
        "positions = torch.arange(T_past, T_past + T, device=x.device)",
        "positions = torch.arange(T, device=x.device)",
        "restart at 0",
    ),
    "gqa_rope_before_the_head_split": dict(
        cells={
            "GroupedQueryAttention_answer": _replace(
                _replace(
                    GQA_OK,
                    "        q, k = apply_rope(q, positions, self.theta), apply_rope(k, positions, self.theta)\n",
                    "",
                ),
                "        q = self.w_q(x).view(B, T, H, dh).transpose(1, 2)\n"
                "        k = self.w_k(x).view(B, T, H_kv, dh).transpose(1, 2)\n",
                "        T_past = 0 if kv_cache is None else kv_cache[0].shape[2]\n"
                "        pos = torch.arange(T_past, T_past + T, device=x.device) if positions is None else positions\n"
                "        q = apply_rope(self.w_q(x), pos, self.theta).view(B, T, H, dh).transpose(1, 2)\n"
                "        k = apply_rope(self.w_k(x), pos, self.theta).view(B, T, H_kv, dh).transpose(1, 2)\n",
            )
        },
        question="GroupedQueryAttention",
        hint="before the head split",
    ),
    "gqa_kv_heads_tiled": _gqa(
        "k_all, v_all = repeat_kv(k, H // H_kv), repeat_kv(v, H // H_kv)",
        "k_all, v_all = k.repeat(1, H // H_kv, 1, 1), v.repeat(1, H // H_kv, 1, 1)",
        "tiled",
    ),
    "gqa_cache_holds_repeated_heads": _gqa(
        "        if kv_cache is not None:\n            k = torch.cat([kv_cache[0], k], dim=2)\n"
        "            v = torch.cat([kv_cache[1], v], dim=2)\n"
        "        k_all, v_all = repeat_kv(k, H // H_kv), repeat_kv(v, H // H_kv)\n",
        "        k, v = repeat_kv(k, H // H_kv), repeat_kv(v, H // H_kv)\n"
        "        if kv_cache is not None:\n            k = torch.cat([kv_cache[0], k], dim=2)\n"
        "            v = torch.cat([kv_cache[1], v], dim=2)\n"
        "        k_all, v_all = k, v\n",
        "n_heads heads",
    ),
    "gqa_cache_holds_keys_before_rope": dict(
        cells={"GroupedQueryAttention_answer": GQA_CACHE_BEFORE_ROPE},
        question="GroupedQueryAttention",
        # it also rotates by torch.arange, never by its positions argument: a second mistake it makes
        hint=("before RoPE", "ignores its positions argument"),
    ),
    "gqa_positions_argument_ignored": _gqa(
        "        if positions is None:\n            positions = torch.arange(T_past, T_past + T, device=x.device)\n",
        "        positions = torch.arange(T_past, T_past + T, device=x.device)\n",
        "ignores its positions argument",
    ),
    "gqa_no_causal_mask": _gqa(
        '        scores = scores.masked_fill(pos_k[None, :] > pos_q[:, None], float("-inf"))\n',
        "",
        "causal mask",
    ),
    "gqa_scaled_by_sqrt_d_model": _gqa("math.sqrt(dh)", "math.sqrt(d)", "sqrt(d_model)"),
    # LlamaBlock
    "block_post_norm": _block(
        "        a, new_cache = self.attn(self.attn_norm(x), positions, kv_cache)\n        h = x + a\n"
        "        return h + self.ffn(self.ffn_norm(h)), new_cache\n",
        "        a, new_cache = self.attn(x, positions, kv_cache)\n        h = self.attn_norm(x + a)\n"
        "        return self.ffn_norm(h + self.ffn(h)), new_cache\n",
        "Post-norm",
    ),
    "block_parallel": _block(
        "return h + self.ffn(self.ffn_norm(h)), new_cache",
        "return h + self.ffn(self.ffn_norm(x)), new_cache",
        "parallel",
    ),
    "block_one_norm_for_both": _block(
        "self.ffn(self.ffn_norm(h))", "self.ffn(self.attn_norm(h))", "its own RMSNorm"
    ),
    "block_layernorm": dict(
        cells={
            "LlamaBlock_answer": BLOCK_OK.replace(
                "nn.RMSNorm(d_model, eps=eps)", "nn.LayerNorm(d_model, eps=eps, bias=False)"
            )
        },
        question="LlamaBlock",
        hint="subtracts the mean",
    ),
    "block_eps_not_passed_on": dict(
        cells={"LlamaBlock_answer": BLOCK_OK.replace("nn.RMSNorm(d_model, eps=eps)", "nn.RMSNorm(d_model)")},
        question="LlamaBlock",
        hint="eps argument",
    ),
    "block_no_attention_residual": _block("h = x + a", "h = a", "around the attention"),
    # found by writing answers from the lesson's text alone (issue 38): each passed the self-check before
    "rope_angles_in_float32": dict(
        cells={
            "apply_rope_answer": """
def apply_rope(x, positions, theta=10000.0):
    d = x.shape[-1]
    inv_freq = 1.0 / (theta ** (torch.arange(0, d, 2).float() / d))
    angle = positions.float()[..., None] * inv_freq
    cos, sin = angle.cos().to(x.dtype), angle.sin().to(x.dtype)
    a, b = x[..., 0::2], x[..., 1::2]
    return torch.stack([a * cos - b * sin, a * sin + b * cos], dim=-1).flatten(-2)
"""
        },
        question="apply_rope",
        hint="your angles lose precision at large positions",
    ),
    "rope_angles_in_x_dtype": _rope(
        "angle = positions.to(torch.float64)[..., None] * inv_freq",
        "angle = positions.to(x.dtype)[..., None] * inv_freq.to(x.dtype)",
        "your angles lose precision at large positions",
    ),
    "rope_angle_cast_before_cos": _rope(
        "cos, sin = angle.cos().to(x.dtype), angle.sin().to(x.dtype)",
        "angle = angle.to(x.dtype)\n    cos, sin = angle.cos(), angle.sin()",
        "your angles lose precision at large positions",
    ),
    "rope_one_shared_position_vector": _rope(
        "angle = positions.to(torch.float64)[..., None] * inv_freq",
        "angle = torch.outer(positions.to(torch.float64), inv_freq)",
        "one row per sequence",
    ),
    "rope_positions_flattened": _rope(
        "angle = positions.to(torch.float64)[..., None] * inv_freq",
        "angle = positions.to(torch.float64).view(-1, 1) * inv_freq",
        "one row per sequence",
    ),
    "gqa_theta_not_passed_to_rope": _gqa(
        "apply_rope(q, positions, self.theta), apply_rope(k, positions, self.theta)",
        "apply_rope(q, positions), apply_rope(k, positions)",
        "ignores its theta argument",
    ),
    "block_eps_default_1e5": _block("d_ff, eps=1e-6):", "d_ff, eps=1e-5):", "eps should default to 1e-6"),
    "block_positions_not_passed_on": _block(
        "self.attn(self.attn_norm(x), positions, kv_cache)",
        "self.attn(self.attn_norm(x), kv_cache=kv_cache)",
        "does not pass its positions",
    ),
}

ALTERNATIVES = {
    # Meta's complex-number RoPE; SwiGLU through F.linear; repeat_interleave; einsum over the groups
    # of query heads, no repeat at all; RMSNorm by hand with rsqrt
    "complex_and_einsum": {
        "apply_rope_answer": """
def apply_rope(x, positions, theta=10000.0):
    d = x.shape[-1]
    freqs = 1.0 / (theta ** (torch.arange(0, d, 2, dtype=torch.float64, device=x.device)[: d // 2] / d))
    angles = positions.to(torch.float64)[..., None] * freqs
    rot = torch.polar(torch.ones_like(angles), angles)
    xc = torch.view_as_complex(x.to(torch.float64).reshape(*x.shape[:-1], d // 2, 2).contiguous())
    return torch.view_as_real(xc * rot).flatten(-2).to(x.dtype)
""",
        "SwiGLU_answer": """
class SwiGLU(nn.Module):
    def __init__(self, d_model, d_ff):
        super().__init__()
        self.w1, self.w2, self.w3 = (
            nn.Linear(d_model, d_ff, bias=False), nn.Linear(d_ff, d_model, bias=False), nn.Linear(d_model, d_ff, bias=False)
        )

    def forward(self, x):
        a = F.linear(x, self.w1.weight)
        return F.linear(a * torch.sigmoid(a) * F.linear(x, self.w3.weight), self.w2.weight)
""",
        "repeat_kv_answer": """
def repeat_kv(x, n_rep):
    return torch.repeat_interleave(x, repeats=n_rep, dim=1)
""",
        "GroupedQueryAttention_answer": """
class GroupedQueryAttention(nn.Module):
    def __init__(self, d_model, n_heads, n_kv_heads, theta=10000.0):
        super().__init__()
        self.h, self.g, self.theta = n_heads, n_kv_heads, theta
        dh = d_model // n_heads
        self.w_q = nn.Linear(d_model, d_model, bias=False)
        self.w_k = nn.Linear(d_model, n_kv_heads * dh, bias=False)
        self.w_v = nn.Linear(d_model, n_kv_heads * dh, bias=False)
        self.w_o = nn.Linear(d_model, d_model, bias=False)

    def forward(self, x, positions=None, kv_cache=None):
        B, T, D = x.shape
        dh, r = D // self.h, self.h // self.g
        start = kv_cache[0].size(2) if kv_cache is not None else 0
        pos = torch.arange(start, start + T, device=x.device) if positions is None else positions
        q = apply_rope(self.w_q(x).unflatten(-1, (self.h, dh)).permute(0, 2, 1, 3), pos, self.theta)
        k = apply_rope(self.w_k(x).unflatten(-1, (self.g, dh)).permute(0, 2, 1, 3), pos, self.theta)
        v = self.w_v(x).unflatten(-1, (self.g, dh)).permute(0, 2, 1, 3)
        if kv_cache is not None:
            k, v = torch.cat((kv_cache[0], k), -2), torch.cat((kv_cache[1], v), -2)
        Tk = k.size(-2)
        qg = q.reshape(B, self.g, r, T, dh) * dh**-0.5
        s = torch.einsum("bgrqd,bgkd->bgrqk", qg, k)
        mask = torch.ones(Tk, Tk, dtype=torch.bool, device=x.device).tril()[Tk - T :]
        s = torch.where(mask, s, torch.tensor(float("-inf"), dtype=s.dtype, device=s.device))
        o = torch.einsum("bgrqk,bgkd->bgrqd", s.softmax(-1), v).reshape(B, self.h, T, dh)
        return self.w_o(o.permute(0, 2, 1, 3).flatten(2)), (k, v)
""",
        "LlamaBlock_answer": """
class LlamaBlock(nn.Module):
    def __init__(self, d_model, n_heads, n_kv_heads, d_ff, eps=1e-6):
        super().__init__()
        self.attn_norm, self.ffn_norm = nn.RMSNorm(d_model, eps=eps), nn.RMSNorm(d_model, eps=eps)
        self.attn = GroupedQueryAttention(d_model, n_heads, n_kv_heads)
        self.ffn = SwiGLU(d_model, d_ff)
        self.eps = eps

    def rms(self, x, w):
        return x * torch.rsqrt(x.pow(2).mean(-1, keepdim=True) + self.eps) * w

    def forward(self, x, positions=None, kv_cache=None):
        a, cache = self.attn(self.rms(x, self.attn_norm.weight), positions=positions, kv_cache=kv_cache)
        x = x + a
        x = x + self.ffn(self.rms(x, self.ffn_norm.weight))
        return x, cache
""",
    },
    # the half-split layout on permuted features (the same rotation); torch's attention with a bool
    # mask; prints and warnings
    "half_split_sdpa_and_prints": {
        "apply_rope_answer": """
def apply_rope(x, positions, theta=10000.0):
    d = x.shape[-1]
    perm = torch.cat([torch.arange(0, d, 2), torch.arange(1, d, 2)]).to(x.device)
    inv = torch.argsort(perm)
    xp = x[..., perm]
    angle = positions.double()[..., None] * theta ** (-torch.arange(0, d, 2, device=x.device).double() / d)
    cos, sin = torch.cat([angle.cos(), angle.cos()], -1), torch.cat([angle.sin(), angle.sin()], -1)
    half = torch.cat([-xp[..., d // 2 :], xp[..., : d // 2]], dim=-1)
    return (xp * cos.to(x.dtype) + half * sin.to(x.dtype))[..., inv]
""",
        "GroupedQueryAttention_answer": "import warnings\n"
        + """
class GroupedQueryAttention(nn.Module):
    def __init__(self, d_model, n_heads, n_kv_heads, theta=10000.0):
        super().__init__()
        self.n_heads, self.n_kv_heads, self.theta = n_heads, n_kv_heads, theta
        dh = d_model // n_heads
        self.w_q = nn.Linear(d_model, d_model, bias=False)
        self.w_k = nn.Linear(d_model, n_kv_heads * dh, bias=False)
        self.w_v = nn.Linear(d_model, n_kv_heads * dh, bias=False)
        self.w_o = nn.Linear(d_model, d_model, bias=False)

    def forward(self, x, positions=None, kv_cache=None):
        print("attention input", tuple(x.shape))
        warnings.warn("just a warning")
        B, T, d = x.shape
        H, G = self.n_heads, self.n_kv_heads
        q = self.w_q(x).reshape(B, T, H, -1).transpose(1, 2)
        k = self.w_k(x).reshape(B, T, G, -1).transpose(1, 2)
        v = self.w_v(x).reshape(B, T, G, -1).transpose(1, 2)
        t_past = 0 if kv_cache is None else kv_cache[0].shape[2]
        if positions is None:
            positions = t_past + torch.arange(T, device=x.device)
        q, k = apply_rope(q, positions, self.theta), apply_rope(k, positions, self.theta)
        if kv_cache is not None:
            k, v = torch.cat([kv_cache[0], k], 2), torch.cat([kv_cache[1], v], 2)
        i = torch.arange(T, device=x.device)[:, None] + t_past
        j = torch.arange(k.shape[2], device=x.device)[None, :]
        y = F.scaled_dot_product_attention(q, repeat_kv(k, H // G), repeat_kv(v, H // G), attn_mask=j <= i)
        return self.w_o(y.transpose(1, 2).reshape(B, T, d)), (k, v)
""",
    },
}

# The example class. A student missing here does not submit this lesson.
STUDENTS = {
    "alice_perfect": ALL_OK,
    "bob_blank": {},
    "carol_partial": {
        "apply_rope_answer": ROPE_OK,
        "SwiGLU_answer": SWIGLU_OK,
        "repeat_kv_answer": REPEAT_OK,
    },
    "dave_values_rotated": {**ALL_OK, **MISTAKES["gqa_values_rotated"]["cells"]},
    "erin_half_split_sigmoid_gate": {
        **ALL_OK,
        **MISTAKES["rope_half_split_layout"]["cells"],
        **MISTAKES["swiglu_sigmoid_gate"]["cells"],
    },
}

MAX = {"apply_rope": 3, "SwiGLU": 2, "repeat_kv": 1, "GroupedQueryAttention": 3, "LlamaBlock": 2}
EXPECTED = {
    "alice_perfect": dict(MAX),
    "bob_blank": {q: 0 for q in MAX},
    "carol_partial": {**{q: 0 for q in MAX}, "apply_rope": 3, "SwiGLU": 2, "repeat_kv": 1},
    # LlamaBlock runs the student's own attention (the reference one when it fails its own check)
    "dave_values_rotated": {**MAX, "GroupedQueryAttention": 0, "LlamaBlock": 2},
    # GroupedQueryAttention runs the student's apply_rope, LlamaBlock both (the references when they fail)
    "erin_half_split_sigmoid_gate": {
        **MAX,
        "apply_rope": 0,
        "SwiGLU": 0,
        "GroupedQueryAttention": 3,
        "LlamaBlock": 2,
    },
}
