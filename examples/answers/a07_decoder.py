"""Example answers for lesson 07_decoder: the example class, the classic mistakes (targets not shifted
or shifted the wrong way, the causal mask missing or inverted, the cache concatenated on the wrong
axis or its positions restarted at 0, temperature after the softmax, top-k without renormalizing or
keeping the smallest, untied weights, sampling from the wrong position, ...), and correct answers
written differently. Keys are answer-cell ids."""

SHIFT_OK = """
def shift_targets(tokens):
    return tokens[:, :-1], tokens[:, 1:]
"""

ATTN_OK = """
class CausalSelfAttention(nn.Module):
    def __init__(self, d_model, n_heads):
        super().__init__()
        self.n_heads = n_heads
        self.qkv = nn.Linear(d_model, 3 * d_model)
        self.proj = nn.Linear(d_model, d_model)

    def forward(self, x, kv_cache=None):
        B, T, d = x.shape
        H = self.n_heads
        q, k, v = self.qkv(x).split(d, dim=-1)
        q, k, v = (z.view(B, T, H, d // H).transpose(1, 2) for z in (q, k, v))
        if kv_cache is not None:
            past_k, past_v = kv_cache
            k = torch.cat([past_k, k], dim=2)
            v = torch.cat([past_v, v], dim=2)
        T_past = k.shape[2] - T
        scores = q @ k.transpose(-2, -1) / math.sqrt(d // H)
        pos_q = torch.arange(T_past, T_past + T, device=x.device)
        pos_k = torch.arange(k.shape[2], device=x.device)
        allowed = pos_k[None, :] <= pos_q[:, None]
        scores = scores.masked_fill(~allowed, float("-inf"))
        y = scores.softmax(dim=-1) @ v
        y = y.transpose(1, 2).reshape(B, T, d)
        return self.proj(y), (k, v)
"""

GPT_OK = """
class Block(nn.Module):
    def __init__(self, d_model, n_heads):
        super().__init__()
        self.ln1 = nn.LayerNorm(d_model)
        self.attn = CausalSelfAttention(d_model, n_heads)
        self.ln2 = nn.LayerNorm(d_model)
        self.mlp = nn.Sequential(nn.Linear(d_model, 4 * d_model), nn.GELU(), nn.Linear(4 * d_model, d_model))

    def forward(self, x, kv_cache=None):
        a, new_cache = self.attn(self.ln1(x), kv_cache)
        x = x + a
        x = x + self.mlp(self.ln2(x))
        return x, new_cache


class GPT(nn.Module):
    def __init__(self, vocab_size, d_model, n_heads, n_layers, max_len):
        super().__init__()
        self.tok_emb = nn.Embedding(vocab_size, d_model)
        self.pos_emb = nn.Embedding(max_len, d_model)
        self.blocks = nn.ModuleList([Block(d_model, n_heads) for _ in range(n_layers)])
        self.ln_f = nn.LayerNorm(d_model)
        self.head = nn.Linear(d_model, vocab_size, bias=False)
        self.head.weight = self.tok_emb.weight
        for m in self.modules():
            if isinstance(m, (nn.Linear, nn.Embedding)):
                nn.init.normal_(m.weight, mean=0.0, std=0.02)
            if isinstance(m, nn.Linear) and m.bias is not None:
                nn.init.zeros_(m.bias)

    def forward(self, idx, kv_cache=None):
        B, T = idx.shape
        T_past = 0 if kv_cache is None else kv_cache[0][0].shape[2]
        pos = torch.arange(T_past, T_past + T, device=idx.device)
        x = self.tok_emb(idx) + self.pos_emb(pos)
        new_cache = []
        for i, block in enumerate(self.blocks):
            x, c = block(x, None if kv_cache is None else kv_cache[i])
            new_cache.append(c)
        x = self.ln_f(x)
        return self.head(x), new_cache
"""

SAMPLE_OK = """
def sample_next(logits, temperature=1.0, top_k=None, generator=None):
    if temperature == 0:
        return logits.argmax(dim=-1)
    logits = logits / temperature
    if top_k is not None:
        kth = torch.topk(logits, top_k, dim=-1).values[:, -1:]
        logits = logits.masked_fill(logits < kth, float("-inf"))
    probs = torch.softmax(logits, dim=-1)
    return torch.multinomial(probs, 1, generator=generator)[:, 0]
"""

GENERATE_OK = """
def generate(model, idx, max_new_tokens, temperature=1.0, top_k=None, generator=None, use_cache=True):
    out, cache = idx, None
    with torch.no_grad():
        for _ in range(max_new_tokens):
            if use_cache:
                step_input = out if cache is None else out[:, -1:]
                logits, cache = model(step_input, kv_cache=cache)
            else:
                logits, _ = model(out)
            nxt = sample_next(logits[:, -1, :], temperature, top_k, generator)
            out = torch.cat([out, nxt[:, None]], dim=1)
    return out
"""

ALL_OK = {
    "shift_targets_answer": SHIFT_OK,
    "CausalSelfAttention_answer": ATTN_OK,
    "GPT_answer": GPT_OK,
    "sample_next_answer": SAMPLE_OK,
    "generate_answer": GENERATE_OK,
}


def _replace(text, old, new):
    """`text` with `old` replaced by `new`; fails loudly when `old` is not there (a stale catalogue)."""
    assert old in text, f"not in the answer: {old!r}"
    return text.replace(old, new)


def _attn(old, new):
    return {"CausalSelfAttention_answer": _replace(ATTN_OK, old, new)}


def _gpt(old, new):
    return {"GPT_answer": _replace(GPT_OK, old, new)}


def _sample(old, new):
    return {"sample_next_answer": _replace(SAMPLE_OK, old, new)}


def _generate(old, new):
    return {"generate_answer": _replace(GENERATE_OK, old, new)}


SAMPLE_INVERSE_CDF = """
def sample_next(logits, temperature=1.0, top_k=None, generator=None):
    if temperature == 0:
        return logits.argmax(dim=-1)
    probs = torch.softmax(logits / temperature, dim=-1)
    if top_k is None:
        return torch.multinomial(probs, 1, generator=generator)[:, 0]
    kept, ids = probs.topk(top_k, dim=-1)
    u = torch.rand(probs.shape[0], 1, generator=generator, dtype=probs.dtype)
    j = (kept.cumsum(-1) < u).sum(-1).clamp(max=top_k - 1)
    return ids.gather(-1, j[:, None])[:, 0]
"""

MISTAKES = {
    "targets_not_shifted": dict(
        cells={"shift_targets_answer": _replace(SHIFT_OK, "tokens[:, 1:]", "tokens[:, :-1]")},
        question="shift_targets",
        hint="not shifted",
    ),
    "shifted_the_wrong_way": dict(
        cells={
            "shift_targets_answer": _replace(
                SHIFT_OK, "return tokens[:, :-1], tokens[:, 1:]", "return tokens[:, 1:], tokens[:, :-1]"
            )
        },
        question="shift_targets",
        hint="wrong way",
    ),
    "shifted_along_the_batch": dict(
        cells={
            "shift_targets_answer": _replace(
                SHIFT_OK, "return tokens[:, :-1], tokens[:, 1:]", "return tokens[:-1], tokens[1:]"
            )
        },
        question="shift_targets",
        hint="time axis",
    ),
    # inputs = the whole of tokens: the targets are shifted, the inputs not shortened
    "inputs_not_shortened": dict(
        cells={
            "shift_targets_answer": _replace(
                SHIFT_OK, "return tokens[:, :-1], tokens[:, 1:]", "return tokens, tokens[:, 1:]"
            )
        },
        question="shift_targets",
        hint="inputs keep all T+1 tokens",
    ),
    "no_causal_mask": dict(
        cells=_attn('        scores = scores.masked_fill(~allowed, float("-inf"))\n', ""),
        question="CausalSelfAttention",
        hint="ignores the causal mask",
    ),
    "causal_mask_inverted": dict(
        cells=_attn(
            "allowed = pos_k[None, :] <= pos_q[:, None]", "allowed = pos_k[None, :] >= pos_q[:, None]"
        ),
        question="CausalSelfAttention",
        hint="inverted",
    ),
    "causal_mask_triu_gives_nan": dict(
        cells=_attn(
            "allowed = pos_k[None, :] <= pos_q[:, None]", "allowed = pos_k[None, :] > pos_q[:, None]"
        ),
        question="CausalSelfAttention",
        hint="inverted",
    ),
    "mask_positions_restart_at_0": dict(
        cells=_attn(
            "pos_q = torch.arange(T_past, T_past + T, device=x.device)",
            "pos_q = torch.arange(T, device=x.device)",
        ),
        question="CausalSelfAttention",
        hint="restart at 0",
    ),
    "cache_concatenated_on_the_heads_axis": dict(
        cells=_attn("k = torch.cat([past_k, k], dim=2)", "k = torch.cat([past_k, k], dim=1)"),
        question="CausalSelfAttention",
        hint="time axis is dim 2",
    ),
    "cache_new_keys_first": dict(
        cells={
            "CausalSelfAttention_answer": _replace(
                _replace(ATTN_OK, "torch.cat([past_k, k], dim=2)", "torch.cat([k, past_k], dim=2)"),
                "torch.cat([past_v, v], dim=2)",
                "torch.cat([v, past_v], dim=2)",
            )
        },
        question="CausalSelfAttention",
        hint="wrong order",
    ),
    "cache_laid_out_before_the_transpose": dict(
        cells={
            "CausalSelfAttention_answer": """
class CausalSelfAttention(nn.Module):
    def __init__(self, d_model, n_heads):
        super().__init__()
        self.n_heads = n_heads
        self.qkv = nn.Linear(d_model, 3 * d_model)
        self.proj = nn.Linear(d_model, d_model)

    def forward(self, x, kv_cache=None):
        B, T, d = x.shape
        H = self.n_heads
        q, k, v = (z.view(B, T, H, d // H) for z in self.qkv(x).split(d, dim=-1))   # (B, T, H, dh)
        if kv_cache is not None:
            k = torch.cat([kv_cache[0], k], dim=1)
            v = torch.cat([kv_cache[1], v], dim=1)
        Tk = k.shape[1]
        scores = q.transpose(1, 2) @ k.permute(0, 2, 3, 1) / math.sqrt(d // H)
        allowed = torch.ones(Tk, Tk, dtype=torch.bool, device=x.device).tril()[Tk - T:]
        scores = scores.masked_fill(~allowed, float("-inf"))
        y = (scores.softmax(-1) @ v.transpose(1, 2)).transpose(1, 2).reshape(B, T, d)
        return self.proj(y), (k, v)
"""
        },
        question="CausalSelfAttention",
        hint="heads are not transposed",
    ),
    "causal_mask_strict": dict(
        cells=_attn(
            "allowed = pos_k[None, :] <= pos_q[:, None]", "allowed = pos_k[None, :] < pos_q[:, None]"
        ),
        question="CausalSelfAttention",
        hint="hides the diagonal",
    ),
    "softmax_over_the_queries": dict(
        cells=_attn("y = scores.softmax(dim=-1) @ v", "y = scores.softmax(dim=-2) @ v"),
        question="CausalSelfAttention",
        hint="over the queries",
    ),
    "heads_split_by_view_without_the_transpose": dict(
        cells=_attn(
            "q, k, v = (z.view(B, T, H, d // H).transpose(1, 2) for z in (q, k, v))",
            "q, k, v = (z.contiguous().view(B, H, T, d // H) for z in (q, k, v))",
        ),
        question="CausalSelfAttention",
        hint="split by a view without the transpose",
    ),
    # view(B, H, T, d_head) of the split q, k, v raises (they are not contiguous); what the same
    # call gives with reshape in its place is the split without the transpose, so that is named, not
    # "use reshape"
    "heads_split_by_a_view_that_raises": dict(
        cells=_attn(
            "q, k, v = (z.view(B, T, H, d // H).transpose(1, 2) for z in (q, k, v))",
            "q, k, v = (z.view(B, H, T, d // H) for z in (q, k, v))",
        ),
        question="CausalSelfAttention",
        hint="reshape(B, n_heads, T, d_head) would run but mix",
    ),
    # the heads merged by a view after the transpose: it raises, and with reshape it is right, so
    # the error's own explanation is the hint
    "heads_merged_by_a_view_after_the_transpose": dict(
        cells=_attn("y = y.transpose(1, 2).reshape(B, T, d)", "y = y.transpose(1, 2).view(B, T, d)"),
        question="CausalSelfAttention",
        hint="view needs a contiguous tensor",
    ),
    # right numbers on the CPU; on a GPU the mask's positions would stay on the CPU
    "mask_positions_on_the_default_device": dict(
        cells=_attn(
            "pos_q = torch.arange(T_past, T_past + T, device=x.device)\n"
            "        pos_k = torch.arange(k.shape[2], device=x.device)\n",
            "pos_q = torch.arange(T_past, T_past + T)\n        pos_k = torch.arange(k.shape[2])\n",
        ),
        question="CausalSelfAttention",
        hint="torch.arange(T, device=x.device)",
    ),
    "heads_merged_without_the_transpose": dict(
        cells=_attn("y = y.transpose(1, 2).reshape(B, T, d)", "y = y.reshape(B, T, d)"),
        question="CausalSelfAttention",
        hint="merged by a reshape without the transpose",
    ),
    "no_scaling": dict(
        cells=_attn(" / math.sqrt(d // H)", ""),
        question="CausalSelfAttention",
        hint="not scaled",
    ),
    "scaled_by_sqrt_d_model": dict(
        cells=_attn("math.sqrt(d // H)", "math.sqrt(d)"),
        question="CausalSelfAttention",
        hint="sqrt(d_model)",
    ),
    "q_k_v_read_in_the_wrong_order": dict(
        cells=_attn("q, k, v = self.qkv(x).split(d, dim=-1)", "k, q, v = self.qkv(x).split(d, dim=-1)"),
        question="CausalSelfAttention",
        hint="wrong parts of qkv",
    ),
    "weights_not_tied": dict(
        cells=_gpt("        self.head.weight = self.tok_emb.weight\n", ""),
        question="GPT",
        hint="not tied",
    ),
    "weights_copied_not_tied": dict(
        cells=_gpt(
            "        self.head.weight = self.tok_emb.weight\n",
            "        self.head.weight.data.copy_(self.tok_emb.weight.data)\n",
        ),
        question="GPT",
        hint="two separate matrices",
    ),
    # one tensor under two Parameters: equal after loading, until .to() gives each its own copy
    "weights_tied_through_data": dict(
        cells=_gpt(
            "        self.head.weight = self.tok_emb.weight\n",
            "        self.head.weight.data = self.tok_emb.weight.data\n",
        ),
        question="GPT",
        hint="not the parameters",
    ),
    "no_final_layernorm": dict(
        cells=_gpt("        x = self.ln_f(x)\n", ""),
        question="GPT",
        hint="ln_f",
    ),
    "no_position_embeddings": dict(
        cells=_gpt("x = self.tok_emb(idx) + self.pos_emb(pos)", "x = self.tok_emb(idx)"),
        question="GPT",
        hint="position embeddings are missing",
    ),
    # the right logits and new cache, and the caller's list now holds the new cache too
    "gpt_cache_list_updated_in_place": dict(
        cells={
            "GPT_answer": GPT_OK.replace(
                "            new_cache.append(c)\n",
                "            new_cache.append(c)\n            if kv_cache is not None:\n                kv_cache[i] = c\n",
            )
        },
        question="GPT",
        hint="leave kv_cache as it is",
    ),
    # T_past = kv_cache[0][0].shape[1], n_heads: the attention's own mask is right (it counts k)
    "t_past_read_from_the_heads_dim": dict(
        cells=_gpt(
            "T_past = 0 if kv_cache is None else kv_cache[0][0].shape[2]",
            "T_past = 0 if kv_cache is None else kv_cache[0][0].shape[1]",
        ),
        question="GPT",
        hint="read from dim 1 of the cache",
    ),
    "positions_restart_at_0_with_a_cache": dict(
        cells=_gpt(
            "pos = torch.arange(T_past, T_past + T, device=idx.device)",
            "pos = torch.arange(T, device=idx.device)",
        ),
        question="GPT",
        hint="restart at 0",
    ),
    "post_ln_blocks": dict(
        cells=_gpt(
            "        a, new_cache = self.attn(self.ln1(x), kv_cache)\n        x = x + a\n"
            "        x = x + self.mlp(self.ln2(x))\n",
            "        a, new_cache = self.attn(x, kv_cache)\n        x = self.ln1(x + a)\n"
            "        x = self.ln2(x + self.mlp(x))\n",
        ),
        question="GPT",
        hint="Post-LN",
    ),
    "relu_mlp": dict(
        cells=_gpt("nn.GELU()", "nn.ReLU()"),
        question="GPT",
        hint="ReLU",
    ),
    "default_init": dict(
        cells=_gpt(
            "        for m in self.modules():\n"
            "            if isinstance(m, (nn.Linear, nn.Embedding)):\n"
            "                nn.init.normal_(m.weight, mean=0.0, std=0.02)\n"
            "            if isinstance(m, nn.Linear) and m.bias is not None:\n"
            "                nn.init.zeros_(m.bias)\n",
            "",
        ),
        question="GPT_init",
        hint="predicts the token it just read",
    ),
    "temperature_after_softmax": dict(
        cells={
            "sample_next_answer": """
def sample_next(logits, temperature=1.0, top_k=None, generator=None):
    if temperature == 0:
        return logits.argmax(dim=-1)
    if top_k is not None:
        kth = torch.topk(logits, top_k, dim=-1).values[:, -1:]
        logits = logits.masked_fill(logits < kth, float("-inf"))
    probs = torch.softmax(logits, dim=-1) / temperature
    return torch.multinomial(probs, 1, generator=generator)[:, 0]
"""
        },
        question="sample_next",
        hint="after the softmax",
    ),
    "temperature_multiplies": dict(
        cells=_sample("logits = logits / temperature", "logits = logits * temperature"),
        question="sample_next",
        hint="multiplied",
    ),
    "top_k_keeps_the_smallest": dict(
        cells=_sample(
            "        kth = torch.topk(logits, top_k, dim=-1).values[:, -1:]\n"
            '        logits = logits.masked_fill(logits < kth, float("-inf"))\n',
            "        ids = torch.topk(logits, top_k, dim=-1, largest=False).indices\n"
            '        keep = torch.full_like(logits, float("-inf")).scatter(-1, ids, 0.0)\n'
            "        logits = logits + keep\n",
        ),
        question="sample_next",
        hint="smallest",
    ),
    "top_k_not_renormalized": dict(
        cells={
            "sample_next_answer": SAMPLE_INVERSE_CDF  # the kept probabilities do not sum to 1
        },
        question="sample_next",
        hint="not renormalized",
    ),
    "top_k_keeps_k_minus_1": dict(
        cells=_sample(
            'logits = logits.masked_fill(logits < kth, float("-inf"))',
            'logits = logits.masked_fill(logits <= kth, float("-inf"))',
        ),
        question="sample_next",
        hint="k - 1",
    ),
    "top_k_masked_with_zero": dict(
        cells=_sample(
            'logits = logits.masked_fill(logits < kth, float("-inf"))',
            "logits = logits.masked_fill(logits < kth, 0.0)",
        ),
        question="sample_next",
        hint="-inf",
    ),
    # temperature 0 as a tiny temperature: the draw is the argmax unless the largest logit is tied,
    # and then it falls on any of the tied positions
    "temperature_0_sampled": dict(
        cells=_sample(
            "    if temperature == 0:\n        return logits.argmax(dim=-1)\n    logits = logits / temperature\n",
            "    logits = logits / max(temperature, 1e-6)\n",
        ),
        question="sample_next",
        hint="tied positions",
    ),
    # logits /= temperature and masked_fill_: the caller's logits change at every call
    "logits_changed_in_place": dict(
        cells=_sample(
            "    logits = logits / temperature\n    if top_k is not None:\n"
            "        kth = torch.topk(logits, top_k, dim=-1).values[:, -1:]\n"
            '        logits = logits.masked_fill(logits < kth, float("-inf"))\n',
            "    logits /= temperature\n    if top_k is not None:\n"
            "        kth = torch.topk(logits, top_k, dim=-1).values[:, -1:]\n"
            '        logits.masked_fill_(logits < kth, float("-inf"))\n',
        ),
        question="sample_next",
        hint="caller's logits in place",
    ),
    # a draw among the top k returned as its rank in torch.topk's list, not as the token's id
    "top_k_returns_the_rank": dict(
        cells={
            "sample_next_answer": """
def sample_next(logits, temperature=1.0, top_k=None, generator=None):
    if temperature == 0:
        return logits.argmax(dim=-1)
    logits = logits / temperature
    if top_k is not None:
        logits = torch.topk(logits, top_k, dim=-1).values
    probs = torch.softmax(logits, dim=-1)
    return torch.multinomial(probs, 1, generator=generator)[:, 0]
"""
        },
        question="sample_next",
        hint="position of the draw within the top-k list",
    ),
    "default_temperature_0_8": dict(
        cells=_sample("temperature=1.0", "temperature=0.8"),
        question="sample_next",
        hint="default temperature should be 1.0",
    ),
    "generator_ignored": dict(
        cells=_sample("torch.multinomial(probs, 1, generator=generator)", "torch.multinomial(probs, 1)"),
        question="sample_next",
        hint="generator=",
    ),
    "samples_shaped_b_1": dict(
        cells=_sample(
            "torch.multinomial(probs, 1, generator=generator)[:, 0]",
            "torch.multinomial(probs, 1, generator=generator)",
        ),
        question="sample_next",
        hint="squeeze",
    ),
    "sampled_from_every_position": dict(
        cells=_generate("sample_next(logits[:, -1, :],", "sample_next(logits.reshape(logits.shape[0], -1),"),
        question="generate",
        hint="every position",
    ),
    # every position sampled, the last one kept: the right tokens at temperature 0, and a right
    # distribution, from B * T draws of the generator per step instead of B
    "sampled_every_position_kept_the_last": dict(
        cells=_generate(
            "nxt = sample_next(logits[:, -1, :], temperature, top_k, generator)",
            "nxt = sample_next(logits.flatten(0, 1), temperature, top_k, generator).view(len(out), -1)[:, -1]",
        ),
        question="generate",
        hint="kept the last one",
    ),
    "top_k_not_passed_on": dict(
        cells=_generate(
            "nxt = sample_next(logits[:, -1, :], temperature, top_k, generator)",
            "nxt = sample_next(logits[:, -1, :], temperature, generator=generator)",
        ),
        question="generate",
        hint="does not pass top_k on",
    ),
    # a token sampled after the prompt's step, then one per step of a loop of max_new_tokens
    "one_token_too_many": dict(
        cells={
            "generate_answer": """
def generate(model, idx, max_new_tokens, temperature=1.0, top_k=None, generator=None, use_cache=True):
    with torch.no_grad():
        logits, cache = model(idx)
        out = torch.cat([idx, sample_next(logits[:, -1], temperature, top_k, generator)[:, None]], 1)
        for _ in range(max_new_tokens):
            if use_cache:
                logits, cache = model(out[:, -1:], kv_cache=cache)
            else:
                logits, _ = model(out)
            out = torch.cat([out, sample_next(logits[:, -1], temperature, top_k, generator)[:, None]], 1)
    return out
"""
        },
        question="generate",
        hint="one token too many",
    ),
    "sampled_from_the_first_position": dict(
        cells=_generate("sample_next(logits[:, -1, :],", "sample_next(logits[:, 0, :],"),
        question="generate",
        hint="first position",
    ),
    "whole_sequence_fed_with_the_cache": dict(
        cells=_generate("step_input = out if cache is None else out[:, -1:]", "step_input = out"),
        question="generate",
        hint="counted twice",
    ),
    "cache_never_used": dict(
        cells=_generate("            if use_cache:\n", "            if False:  # the cache is never used\n"),
        question="generate",
        hint="never uses the cache",
    ),
    "generate_builds_a_graph": dict(
        cells=_generate("    with torch.no_grad():\n", "    if True:  # no torch.no_grad()\n"),
        question="generate",
        hint="torch.no_grad()",
    ),
    "last_token_without_the_cache": dict(
        cells=_generate(
            "logits, cache = model(step_input, kv_cache=cache)", "logits, cache = model(out[:, -1:])"
        ),
        question="generate",
        hint="sees only the last token",
    ),
}

ALTERNATIVES = {
    # einsum, pre-scaled q, chunk, a tril slice for the mask, torch.where; the tie made the other way
    # round and a named-parameter init; Gumbel-max sampling with top-k by indices; a while loop that
    # preallocates its output
    "by_hand": {
        "shift_targets_answer": """
def shift_targets(tokens):
    T = tokens.shape[1] - 1
    return tokens.narrow(1, 0, T).clone(), tokens.narrow(1, 1, T).clone()
""",
        "CausalSelfAttention_answer": """
class CausalSelfAttention(nn.Module):
    def __init__(self, d_model, n_heads):
        super().__init__()
        self.h = n_heads
        self.qkv = nn.Linear(d_model, 3 * d_model)
        self.proj = nn.Linear(d_model, d_model)

    def forward(self, x, kv_cache=None):
        B, T, D = x.shape
        q, k, v = self.qkv(x).chunk(3, dim=-1)
        q, k, v = (t.unflatten(-1, (self.h, D // self.h)).permute(0, 2, 1, 3) for t in (q, k, v))
        if kv_cache:
            k, v = torch.cat((kv_cache[0], k), -2), torch.cat((kv_cache[1], v), -2)
        Tk = k.size(-2)
        q = q * (D // self.h) ** -0.5
        s = torch.einsum("bhqd,bhkd->bhqk", q, k)
        mask = torch.ones(Tk, Tk, dtype=torch.bool, device=x.device).tril()[Tk - T:]
        s = torch.where(mask, s, torch.tensor(float("-inf"), dtype=s.dtype, device=s.device))
        o = torch.einsum("bhqk,bhkd->bhqd", s.softmax(-1), v)
        return self.proj(o.permute(0, 2, 1, 3).flatten(2)), (k, v)
""",
        "GPT_answer": """
class Block(nn.Module):
    def __init__(self, d_model, n_heads):
        super().__init__()
        self.ln1, self.ln2 = nn.LayerNorm(d_model), nn.LayerNorm(d_model)
        self.attn = CausalSelfAttention(d_model, n_heads)
        self.mlp = nn.Sequential(
            nn.Linear(d_model, 4 * d_model), nn.GELU(approximate="none"), nn.Linear(4 * d_model, d_model)
        )

    def forward(self, x, kv_cache=None):
        h, cache = self.attn(self.ln1(x), kv_cache=kv_cache)
        h = x + h
        return h + self.mlp(self.ln2(h)), cache


class GPT(nn.Module):
    def __init__(self, vocab_size, d_model, n_heads, n_layers, max_len):
        super().__init__()
        self.tok_emb = nn.Embedding(vocab_size, d_model)
        self.pos_emb = nn.Embedding(max_len, d_model)
        self.blocks = nn.ModuleList()
        for _ in range(n_layers):
            self.blocks.append(Block(d_model, n_heads))
        self.ln_f = nn.LayerNorm(d_model)
        self.head = nn.Linear(d_model, vocab_size, bias=False)
        self.tok_emb.weight = self.head.weight
        for name, p in self.named_parameters():
            if "ln" in name:
                continue
            if p.dim() == 2:
                nn.init.normal_(p, std=0.02)
            else:
                nn.init.zeros_(p)

    def forward(self, idx, kv_cache=None):
        start = kv_cache[0][0].size(2) if kv_cache else 0
        x = F.embedding(idx, self.tok_emb.weight) + self.pos_emb.weight[start : start + idx.size(1)]
        caches = [None] * len(self.blocks) if kv_cache is None else kv_cache
        new = []
        for block, c in zip(self.blocks, caches):
            x, c = block(x, c)
            new.append(c)
        return F.linear(self.ln_f(x), self.tok_emb.weight), new
""",
        "sample_next_answer": """
def sample_next(logits, temperature=1.0, top_k=None, generator=None):
    if temperature == 0:
        return torch.max(logits, dim=-1).indices
    z = logits / temperature
    ids = None
    if top_k is not None:
        z, ids = torch.topk(z, top_k, dim=-1)
    u = torch.rand(z.shape, generator=generator, dtype=torch.float64).clamp_min(1e-300).to(z.device)
    pick = (z.double() - torch.log(-torch.log(u))).argmax(-1)          # Gumbel-max: an exact sample
    return pick if ids is None else ids.gather(-1, pick[:, None]).squeeze(-1)
""",
        "generate_answer": """
@torch.no_grad()
def generate(model, idx, max_new_tokens, temperature=1.0, top_k=None, generator=None, use_cache=True):
    B, T = idx.shape
    out = torch.empty(B, T + max_new_tokens, dtype=idx.dtype, device=idx.device)
    out[:, :T] = idx
    n, cache = T, None
    while n < T + max_new_tokens:
        if use_cache:
            logits, cache = model(out[:, :n] if cache is None else out[:, n - 1 : n], cache)
        else:
            logits = model(out[:, :n])[0]
        out[:, n] = sample_next(logits[:, -1], temperature=temperature, top_k=top_k, generator=generator)
        n += 1
    return out
""",
    },
    # nanoGPT's ways: a persistent tril buffer for the mask, GPT-2's tanh GELU, the residual
    # projections initialized with std 0.02 / sqrt(2 * n_layers), top-k by comparing with the k-th
    # value in place, torch.inference_mode() for generation
    "nanogpt_style": {
        "CausalSelfAttention_answer": """
class CausalSelfAttention(nn.Module):
    def __init__(self, d_model, n_heads, block_size=128):
        super().__init__()
        self.n_head = n_heads
        self.qkv = nn.Linear(d_model, 3 * d_model)
        self.proj = nn.Linear(d_model, d_model)
        self.register_buffer("bias", torch.tril(torch.ones(block_size, block_size)).view(1, 1, block_size, block_size))

    def forward(self, x, kv_cache=None):
        B, T, C = x.size()
        q, k, v = self.qkv(x).split(C, dim=2)
        k = k.view(B, T, self.n_head, C // self.n_head).transpose(1, 2)
        q = q.view(B, T, self.n_head, C // self.n_head).transpose(1, 2)
        v = v.view(B, T, self.n_head, C // self.n_head).transpose(1, 2)
        if kv_cache is not None:
            k = torch.cat((kv_cache[0], k), dim=2)
            v = torch.cat((kv_cache[1], v), dim=2)
        P = k.size(2) - T
        att = (q @ k.transpose(-2, -1)) * (1.0 / math.sqrt(k.size(-1)))
        att = att.masked_fill(self.bias[:, :, P : P + T, : P + T] == 0, float("-inf"))
        y = F.softmax(att, dim=-1) @ v
        y = y.transpose(1, 2).contiguous().view(B, T, C)
        return self.proj(y), (k, v)
""",
        "GPT_answer": _replace(
            _replace(GPT_OK, "nn.GELU()", 'nn.GELU(approximate="tanh")'),
            "                nn.init.zeros_(m.bias)\n",
            "                nn.init.zeros_(m.bias)\n"
            "        for block in self.blocks:\n"
            "            for w in (block.attn.proj.weight, block.mlp[2].weight):\n"
            "                nn.init.normal_(w, mean=0.0, std=0.02 / math.sqrt(2 * n_layers))\n",
        ),
        "sample_next_answer": """
def sample_next(logits, temperature=1.0, top_k=None, generator=None):
    if temperature == 0:
        return logits.argmax(dim=-1)
    logits = logits / temperature
    if top_k is not None:
        v, _ = torch.topk(logits, min(top_k, logits.size(-1)))
        logits[logits < v[:, [-1]]] = -float("Inf")
    probs = F.softmax(logits, dim=-1)
    return torch.multinomial(probs, num_samples=1, generator=generator).view(-1)
""",
        "generate_answer": _replace(GENERATE_OK, "with torch.no_grad():", "with torch.inference_mode():"),
    },
    # torch's own scaled_dot_product_attention with a bool mask, prints and warnings; inverse-CDF
    # sampling that renormalizes its top-k
    "sdpa_and_prints": {
        "CausalSelfAttention_answer": "import warnings\n"
        + """
class CausalSelfAttention(nn.Module):
    def __init__(self, d_model, n_heads):
        super().__init__()
        self.n_heads = n_heads
        self.qkv = nn.Linear(d_model, 3 * d_model)
        self.proj = nn.Linear(d_model, d_model)

    def forward(self, x, kv_cache=None):
        print("attention input", tuple(x.shape))
        warnings.warn("just a warning")
        B, T, d = x.shape
        q, k, v = (z.reshape(B, T, self.n_heads, -1).transpose(1, 2) for z in self.qkv(x).split(d, -1))
        if kv_cache is not None:
            k, v = torch.cat([kv_cache[0], k], 2), torch.cat([kv_cache[1], v], 2)
        t_past = k.shape[2] - T
        i = torch.arange(T, device=x.device)[:, None] + t_past
        j = torch.arange(k.shape[2], device=x.device)[None, :]
        y = F.scaled_dot_product_attention(q, k, v, attn_mask=j <= i)
        return self.proj(y.transpose(1, 2).reshape(B, T, d)), (k, v)
""",
        "sample_next_answer": SAMPLE_INVERSE_CDF.replace(
            "    kept, ids = probs.topk(top_k, dim=-1)\n",
            "    kept, ids = probs.topk(top_k, dim=-1)\n    kept = kept / kept.sum(-1, keepdim=True)\n",
        ),
    },
}

# The example class. A student missing here does not submit this lesson.
STUDENTS = {
    "alice_perfect": ALL_OK,
    "bob_blank": {},
    "carol_partial": {"shift_targets_answer": SHIFT_OK, "CausalSelfAttention_answer": ATTN_OK},
    "dave_temperature_after_softmax": {**ALL_OK, **MISTAKES["temperature_after_softmax"]["cells"]},
    "erin_no_causal_mask_weights_not_tied": {
        **ALL_OK,
        **MISTAKES["no_causal_mask"]["cells"],
        **MISTAKES["weights_not_tied"]["cells"],
    },
}

MAX = {"shift_targets": 1, "CausalSelfAttention": 3, "GPT": 3, "GPT_init": 1, "sample_next": 2, "generate": 2}
EXPECTED = {
    "alice_perfect": dict(MAX),
    "bob_blank": {q: 0 for q in MAX},
    "carol_partial": {**{q: 0 for q in MAX}, "shift_targets": 1, "CausalSelfAttention": 3},
    # generate's graded cases are greedy (temperature 0, top_k=1) or check repeatability only, so a
    # temperature applied after the softmax costs sample_next alone
    "dave_temperature_after_softmax": {**MAX, "sample_next": 0},
    # GPT and generate run the reference attention (and GPT) in place of the failing ones; a fresh model is
    # still near ln V
    "erin_no_causal_mask_weights_not_tied": {**MAX, "CausalSelfAttention": 0, "GPT": 0, "generate": 2},
}
