"""A class of right answers to lesson 01's code exercises, written independently, and one copy.

Each student writes every answer cell from the idioms students use for it (several per line, as the
example answers and the mistake catalogue show them: `@` or `matmul` or `einsum`, `masked_fill` or
`where`, `view`+`transpose` or `reshape`+`permute` or `unflatten`...), with their own names, their
own intermediate steps, constants and comments, each choice drawn on its own. `copy_of` is what a
student who copied does to hide it: every name renamed, independent lines reordered, comments
reworded. Every answer is checked right against the reference (tests/test_similarity.py)."""

from __future__ import annotations

import random
import re

NAMES = {
    "scores": ["scores", "attn", "logits", "sim", "s", "att", "energy", "qk", "raw", "compat"],
    "weights": ["weights", "probs", "p", "attn_weights", "alpha", "a", "w", "dist", "att_w"],
    "dk": ["d_k", "dk", "d", "head_dim", "dim", "depth", "n_feat", "size"],
    "out": ["out", "output", "result", "ctx", "context", "o", "y", "res"],
    "pos": ["positions", "pos", "idx", "r", "arange", "steps", "cols", "j"],
    "B": ["B", "b", "batch", "bs", "n_batch"],
    "L": ["L", "T", "seq", "n", "length", "seq_len_"],
    "D": ["d_model", "D", "C", "dm", "width", "feat"],
    "dh": ["d_head", "dh", "hd", "head_size", "per_head"],
}
COMMENTS = [
    "# scale so the softmax does not saturate",
    "# masked positions get -inf before the softmax",
    "# rows that are fully masked give NaN: make them 0",
    "# (B, h, L, dh)",
    "# shape check",
    "# normalise over the keys",
    "# weighted sum of the values",
    "# TODO: check again",
    "# per head",
    "# from the lecture",
    "",
    "",
    "",
]


def _c(rng) -> str:
    c = rng.choice(COMMENTS)
    return f"  {c}" if c else ""


def _sdpa(rng, n) -> str:
    s, w, dk, o = n["scores"], n["weights"], n["dk"], n["out"]
    dk_expr = rng.choice(["q.shape[-1]", "q.size(-1)", "k.shape[-1]", "q.size()[-1]", "int(q.shape[-1])"])
    kt = rng.choice(["k.transpose(-2, -1)", "k.transpose(-1, -2)", "k.mT", "k.swapaxes(-2, -1)"])
    prod = rng.choice(
        [
            f"q @ {kt}",
            f"torch.matmul(q, {kt})",
            'torch.einsum("...qd,...kd->...qk", q, k)',
            f"q.matmul({kt})",
        ]
    )
    scale = rng.choice(
        [
            f" / math.sqrt({dk})",
            f" * {dk} ** -0.5",
            f" / {dk} ** 0.5",
            f" / math.sqrt(float({dk}))",
            f" * (1.0 / math.sqrt({dk}))",
        ]
    )
    lines = [f"    {dk} = {dk_expr}{_c(rng)}"]
    if rng.random() < 0.3:
        lines += [f"    {s} = {prod}", f"    {s} = {s}{scale}{_c(rng)}"]
    else:
        lines += [f"    {s} = {prod}{scale}{_c(rng)}"]
    fill = rng.choice(
        [
            'float("-inf")',
            "float('-inf')",
            "-math.inf",
            "-torch.inf",
            "torch.finfo(q.dtype).min * 0 - math.inf",
        ]
    )
    mask_line = rng.choice(
        [
            f"        {s} = {s}.masked_fill(~mask, {fill})",
            f"        {s} = {s}.masked_fill(mask == 0, {fill})",
            f"        {s} = {s}.masked_fill(mask.logical_not(), {fill})",
            f"        {s} = torch.where(mask, {s}, torch.full_like({s}, {fill}))",
            f"        {s} = {s}.masked_fill(mask == False, {fill})  # noqa",
        ]
    )
    if rng.random() < 0.3:
        lines += [
            "    if mask is None:",
            f"        mask = torch.ones_like({s}, dtype=torch.bool)",
            mask_line.replace("        ", "    ", 1),
        ]
    else:
        lines += ["    if mask is not None:", mask_line + _c(rng)]
    soft = rng.choice(
        [
            f"torch.softmax({s}, dim=-1)",
            f"F.softmax({s}, dim=-1)",
            f"{s}.softmax(dim=-1)",
            f"torch.nn.functional.softmax({s}, -1)",
            f"F.softmax({s}, -1)",
            f"torch.exp({s} - {s}.amax(dim=-1, keepdim=True)) / torch.exp({s} - {s}.amax(dim=-1, keepdim=True)).sum(dim=-1, keepdim=True)",
        ]
    )
    lines += [f"    {w} = {soft}{_c(rng)}"]
    lines += [
        rng.choice(
            [
                f"    {w} = torch.nan_to_num({w}, nan=0.0)",
                f"    {w} = {w}.nan_to_num(0.0)",
                f"    {w} = torch.where(torch.isnan({w}), torch.zeros_like({w}), {w})",
                f"    {w} = {w}.masked_fill({w}.isnan(), 0.0)",
                f"    {w} = torch.nan_to_num({w})",
            ]
        )
        + _c(rng)
    ]
    mult = rng.choice(
        [f"{w} @ v", f"torch.matmul({w}, v)", f'torch.einsum("...qk,...kd->...qd", {w}, v)', f"{w}.matmul(v)"]
    )
    if rng.random() < 0.5:
        lines += [f"    {o} = {mult}", f"    return {o}, {w}"]
    else:
        lines += [f"    return {mult}, {w}"]
    doc = rng.choice(['    """Returns (output (..., Lq, d_v), weights (..., Lq, Lk))."""\n', ""])
    return "def scaled_dot_product_attention(q, k, v, mask=None):\n" + doc + "\n".join(lines) + "\n"


def _causal(rng, n) -> str:
    body = rng.choice(
        [
            "    return torch.tril(torch.ones(seq_len, seq_len, dtype=torch.bool))",
            "    return torch.ones(seq_len, seq_len).tril().bool()",
            f"    {n['pos']} = torch.arange(seq_len)\n    return {n['pos']}[:, None] >= {n['pos']}[None, :]",
            "    return ~torch.triu(torch.ones(seq_len, seq_len, dtype=torch.bool), diagonal=1)",
            "    return torch.tril(torch.ones(seq_len, seq_len)) == 1",
            f"    {n['pos']} = torch.arange(seq_len)\n    return {n['pos']}.unsqueeze(1) >= {n['pos']}.unsqueeze(0)",
        ]
    )
    return "def causal_mask(seq_len):\n" + body + _c(rng) + "\n"


def _padding(rng, n) -> str:
    p = n["pos"]
    body = rng.choice(
        [
            f"    {p} = torch.arange(max_len, device=lengths.device)\n    return {p}[None, :] < lengths[:, None]",
            f"    {p} = torch.arange(max_len).unsqueeze(0)\n    return {p} < lengths.unsqueeze(1)",
            "    return torch.arange(max_len).expand(len(lengths), max_len) < lengths.unsqueeze(-1)",
            f"    m = torch.zeros(len(lengths), max_len, dtype=torch.bool)\n    for i, {p} in enumerate(lengths.tolist()):\n        m[i, :{p}] = True\n    return m",
            f"    {p} = torch.arange(max_len)\n    return {p}.view(1, -1) < lengths.view(-1, 1)",
        ]
    )
    return "def padding_mask(lengths, max_len):\n" + body + _c(rng) + "\n"


def _split_merge(rng, n) -> str:
    B, L, D, dh = n["B"], n["L"], n["D"], n["dh"]
    split = rng.choice(
        [
            f"    {B}, {L}, {D} = x.shape\n    return x.view({B}, {L}, n_heads, {D} // n_heads).transpose(1, 2)",
            f"    {B}, {L}, {D} = x.shape\n    return x.reshape({B}, {L}, n_heads, -1).permute(0, 2, 1, 3)",
            "    return x.unflatten(-1, (n_heads, -1)).transpose(1, 2)",
            "    return torch.stack(x.chunk(n_heads, dim=-1), dim=1)",
            f"    {B}, {L}, _ = x.shape\n    {dh} = x.shape[-1] // n_heads\n    return x.view({B}, {L}, n_heads, {dh}).transpose(1, 2)",
        ]
    )
    merge = rng.choice(
        [
            f"    {B}, h, {L}, {dh} = x.shape\n    return x.transpose(1, 2).reshape({B}, {L}, h * {dh})",
            f"    {B}, _, {L}, _ = x.shape\n    return x.permute(0, 2, 1, 3).contiguous().view({B}, {L}, -1)",
            "    return x.transpose(1, 2).flatten(2)",
            "    return torch.cat(x.unbind(1), dim=-1)",
            f"    {B}, h, {L}, {dh} = x.size()\n    return x.transpose(1, 2).contiguous().view({B}, {L}, h * {dh})",
        ]
    )
    return f"def split_heads(x, n_heads):\n{split}{_c(rng)}\n\n\ndef merge_heads(x):\n{merge}{_c(rng)}\n"


def _mha(rng, n) -> str:
    layers = ["w_q", "w_k", "w_v", "w_o"]
    if rng.random() < 0.4:
        rng.shuffle(layers)
    init = ["        super().__init__()"]
    if rng.random() < 0.5:
        init.append(
            rng.choice(
                [
                    "        assert d_model % n_heads == 0",
                    '        assert d_model % n_heads == 0, "d_model must be divisible by n_heads"',
                    '        if d_model % n_heads:\n            raise ValueError("n_heads must divide d_model")',
                ]
            )
        )
    heads = rng.choice(["n_heads", "h", "num_heads", "heads"])
    init.append(f"        self.{heads} = n_heads")
    if rng.random() < 0.3:
        init.append(f"        self.{n['dh']} = d_model // n_heads")
    init += [f"        self.{name} = nn.Linear(d_model, d_model, bias=bias){_c(rng)}" for name in layers]
    q, k, v = rng.choice([("q", "k", "v"), ("Q", "K", "V"), ("qh", "kh", "vh"), ("q_", "k_", "v_")])
    proj = [
        f"        {q} = split_heads(self.w_q(query), self.{heads})",
        f"        {k} = split_heads(self.w_k(key), self.{heads})",
        f"        {v} = split_heads(self.w_v(value), self.{heads})",
    ]
    if rng.random() < 0.5:
        rng.shuffle(proj)
    mask = rng.choice(
        [
            "        if mask is not None and mask.dim() == 3:\n            mask = mask[:, None]",
            "        if mask is not None and mask.ndim == 3:\n            mask = mask.unsqueeze(1)",
            "        if mask is not None and len(mask.shape) == 3:\n            mask = mask.unsqueeze(1)",
            "        if mask is not None:\n            if mask.dim() == 3:\n                mask = mask[:, None, :, :]",
        ]
    )
    o = n["out"]
    tail = rng.choice(
        [
            f"        {o}, _ = scaled_dot_product_attention({q}, {k}, {v}, mask)\n        return self.w_o(merge_heads({o}))",
            f"        {o} = scaled_dot_product_attention({q}, {k}, {v}, mask=mask)[0]\n        {o} = merge_heads({o})\n        return self.w_o({o})",
            f"        return self.w_o(merge_heads(scaled_dot_product_attention({q}, {k}, {v}, mask)[0]))",
        ]
    )
    return (
        "class MultiHeadAttention(nn.Module):\n    def __init__(self, d_model, n_heads, bias=True):\n"
        + "\n".join(init)
        + "\n\n    def forward(self, query, key, value, mask=None):\n"
        + "\n".join(proj)
        + "\n"
        + mask
        + "\n"
        + tail
        + "\n"
    )


def student(seed: int) -> dict:
    """One student's answer cells of lesson 01 (grade_id -> source), written independently."""
    rng = random.Random(seed)
    n = {role: rng.choice(pool) for role, pool in NAMES.items()}
    return {
        "scaled_dot_product_attention_answer": _sdpa(rng, n),
        "causal_mask_answer": _causal(rng, n),
        "padding_mask_answer": _padding(rng, n),
        "split_heads_answer": _split_merge(rng, n),
        "MultiHeadAttention_answer": _mha(rng, n),
    }


RENAMES = {
    "scores": "sc",
    "attn": "a_mat",
    "logits": "lg",
    "sim": "similarity",
    "s": "ss",
    "att": "at",
    "energy": "e",
    "qk": "qkt",
    "raw": "r0",
    "compat": "cm",
    "weights": "wts",
    "probs": "pr",
    "p": "pp",
    "attn_weights": "aw",
    "alpha": "al",
    "a": "aa",
    "w": "ww",
    "dist": "dd",
    "att_w": "atw",
    "d_k": "kdim",
    "dk": "kd",
    "d": "dd0",
    "head_dim": "hdim",
    "dim": "dm0",
    "depth": "dep",
    "n_feat": "nf",
    "size": "sz",
    "out": "res_out",
    "output": "op",
    "result": "rs",
    "ctx": "cx",
    "context": "cont",
    "o": "oo",
    "y": "yy",
    "res": "rr",
    "positions": "ps",
    "pos": "pz",
    "idx": "ix",
    "r": "rr0",
    "arange": "ar",
    "steps": "st",
    "cols": "cl",
    "j": "jj",
    "B": "nb",
    "b": "bb",
    "batch": "bt",
    "bs": "bsz",
    "n_batch": "nbt",
    "L": "ln",
    "T": "tt",
    "seq": "sq",
    "n": "nn0",
    "length": "lng",
    "seq_len_": "sl",
    "D": "dmod",
    "C": "cc",
    "dm": "dmm",
    "width": "wd",
    "feat": "ft",
    "d_head": "dhd",
    "dh": "dhh",
    "hd": "hdd",
    "head_size": "hs",
    "per_head": "ph",
    "m": "mm",
    "q": "qq",
    "k": "kk",
    "v": "vv",
    "Q": "QQ",
    "K": "KK",
    "V": "VV",
    "qh": "qhh",
    "kh": "khh",
    "vh": "vhh",
    "q_": "q1",
    "k_": "k1",
    "v_": "v1",
    "h": "hh",
    "i": "ii",
}


def copy_of(answers: dict, seed: int = 1) -> dict:
    """What a student who copied `answers` hands in: every local name renamed (the parameters the
    exercise fixes stay), independent statements swapped, comments reworded or dropped."""
    rng = random.Random(seed)
    fixed = {
        "q",
        "k",
        "v",
        "mask",
        "seq_len",
        "lengths",
        "max_len",
        "x",
        "n_heads",
        "d_model",
        "bias",
        "query",
        "key",
        "value",
        "self",
    }
    out = {}
    for cell, src in answers.items():
        lines = src.split("\n")
        # reorder: swap adjacent assignments that do not read each other (e.g. the three projections)
        for i in range(len(lines) - 1):
            a, b = lines[i], lines[i + 1]
            la, lb = a.strip(), b.strip()
            if (
                re.match(r"^[\w.]+ = ", la)
                and re.match(r"^[\w.]+ = ", lb)
                and a[: len(a) - len(la)] == b[: len(b) - len(lb)]
            ):
                ta, tb = la.split(" = ")[0], lb.split(" = ")[0]
                if (
                    not re.search(rf"\b{re.escape(ta)}\b", lb.split(" = ", 1)[1])
                    and not re.search(rf"\b{re.escape(tb)}\b", la.split(" = ", 1)[1])
                    and ta != tb
                    and not la.startswith("super")
                ):
                    if rng.random() < 0.7:
                        lines[i], lines[i + 1] = b, a
        src = "\n".join(lines)
        src = re.sub(r"  # [^\n]*", lambda m: rng.choice(["", "  # my version", "  # ok"]), src)
        out[cell] = _rename(src, fixed)
    return out


def _rename(src: str, fixed: set) -> str:
    """Every local name the answer binds (assignments, loop targets) renamed, where it is used."""
    import ast

    tree = ast.parse(src)
    bound = {n.id for n in ast.walk(tree) if isinstance(n, ast.Name) and isinstance(n.ctx, ast.Store)}
    bound -= fixed
    spots = sorted(
        ((n.lineno, n.col_offset, n.id) for n in ast.walk(tree) if isinstance(n, ast.Name) and n.id in bound),
        reverse=True,
    )
    lines = src.split("\n")
    for line, col, name in spots:
        text = lines[line - 1]
        lines[line - 1] = text[:col] + RENAMES.get(name, name + "_2") + text[col + len(name) :]
    return "\n".join(lines)
