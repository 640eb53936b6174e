"""Example answers for lesson 01_attention: the example class, the classic mistakes of
docs/mistakes.md, and correct answers written differently. Keys are answer-cell ids."""

SDPA_OK = """
def scaled_dot_product_attention(q, k, v, mask=None):
    scores = q @ k.transpose(-2, -1) / math.sqrt(q.shape[-1])
    if mask is not None:
        scores = scores.masked_fill(~mask, float("-inf"))
    w = torch.nan_to_num(torch.softmax(scores, dim=-1), nan=0.0)
    return w @ v, w
"""


def _sdpa(
    scores_line,
    mask_line='scores = scores.masked_fill(~mask, float("-inf"))',
    softmax="torch.softmax(scores, dim=-1)",
    fix_nan=True,
):
    return f"""
def scaled_dot_product_attention(q, k, v, mask=None):
    {scores_line}
    if mask is not None:
        {mask_line}
    w = {softmax}
    {"w = torch.nan_to_num(w, nan=0.0)" if fix_nan else "pass"}
    return w @ v, w
"""


CAUSAL_OK = (
    "def causal_mask(seq_len):\n    return torch.tril(torch.ones(seq_len, seq_len, dtype=torch.bool))\n"
)
PADDING_OK = (
    "def padding_mask(lengths, max_len):\n    return torch.arange(max_len)[None, :] < lengths[:, None]\n"
)
HEADS_OK = """
def split_heads(x, n_heads):
    B, L, D = x.shape
    return x.view(B, L, n_heads, D // n_heads).transpose(1, 2)

def merge_heads(x):
    B, H, L, Dh = x.shape
    return x.transpose(1, 2).reshape(B, L, H * Dh)
"""
MHA_OK = """
class MultiHeadAttention(nn.Module):
    def __init__(self, d_model, n_heads, bias=True):
        super().__init__()
        self.h = n_heads
        self.w_q = nn.Linear(d_model, d_model, bias=bias)
        self.w_k = nn.Linear(d_model, d_model, bias=bias)
        self.w_v = nn.Linear(d_model, d_model, bias=bias)
        self.w_o = nn.Linear(d_model, d_model, bias=bias)

    def forward(self, query, key, value, mask=None):
        q, k, v = (split_heads(f(t), self.h) for f, t in ((self.w_q, query), (self.w_k, key), (self.w_v, value)))
        if mask is not None and mask.dim() == 3:
            mask = mask.unsqueeze(1)
        out, _ = scaled_dot_product_attention(q, k, v, mask)
        return self.w_o(merge_heads(out))
"""
ALL_OK = {
    "scaled_dot_product_attention_answer": SDPA_OK,
    "causal_mask_answer": CAUSAL_OK,
    "padding_mask_answer": PADDING_OK,
    "split_heads_answer": HEADS_OK,
    "MultiHeadAttention_answer": MHA_OK,
}

MISTAKES = {
    "sdpa_scales_q_in_place": dict(
        cells={
            "scaled_dot_product_attention_answer": _sdpa(
                "scores = q.div_(math.sqrt(q.shape[-1])) @ k.transpose(-2, -1)"
            )
        },
        question="scaled_dot_product_attention",
        hint="modified its input q in place",
    ),
    "mha_w_k_is_w_q": dict(
        cells={
            "MultiHeadAttention_answer": MHA_OK.replace(
                "self.w_k = nn.Linear(d_model, d_model, bias=bias)", "self.w_k = self.w_q"
            )
        },
        question="MultiHeadAttention",
        hint="self.w_q and self.w_k are one and the same module",
        not_hints=("every block",),
    ),
    "no_scaling": dict(
        cells={"scaled_dot_product_attention_answer": _sdpa("scores = q @ k.transpose(-2, -1)")},
        question="scaled_dot_product_attention",
        hint="not scaled",
    ),
    "divide_by_dk": dict(
        cells={
            "scaled_dot_product_attention_answer": _sdpa("scores = q @ k.transpose(-2, -1) / q.shape[-1]")
        },
        question="scaled_dot_product_attention",
        hint="divided by d_k",
    ),
    "softmax_over_queries": dict(
        cells={
            "scaled_dot_product_attention_answer": _sdpa(
                "scores = q @ k.transpose(-2, -1) / math.sqrt(q.shape[-1])",
                softmax="torch.softmax(scores, dim=-2)",
            )
        },
        question="scaled_dot_product_attention",
        hint="over the queries",
    ),
    "mask_inverted": dict(
        cells={
            "scaled_dot_product_attention_answer": _sdpa(
                "scores = q @ k.transpose(-2, -1) / math.sqrt(q.shape[-1])",
                mask_line='scores = scores.masked_fill(mask, float("-inf"))',
            )
        },
        question="scaled_dot_product_attention",
        hint="polarity",
    ),
    "masked_to_zero": dict(
        cells={
            "scaled_dot_product_attention_answer": _sdpa(
                "scores = q @ k.transpose(-2, -1) / math.sqrt(q.shape[-1])",
                mask_line="scores = scores.masked_fill(~mask, 0.0)",
            )
        },
        question="scaled_dot_product_attention",
        hint="instead of -inf",
    ),
    "nan_on_dead_row": dict(
        cells={
            "scaled_dot_product_attention_answer": _sdpa(
                "scores = q @ k.transpose(-2, -1) / math.sqrt(q.shape[-1])", fix_nan=False
            )
        },
        question="scaled_dot_product_attention",
        hint="NaN",
    ),
    "mha_scale_d_model": dict(
        cells={
            "MultiHeadAttention_answer": MHA_OK.replace(
                "out, _ = scaled_dot_product_attention(q, k, v, mask)",
                "out, _ = scaled_dot_product_attention(q * math.sqrt(q.shape[-1]) / math.sqrt(query.shape[-1]), k, v, mask)",
            )
        },
        question="MultiHeadAttention",
        hint="sqrt(d_model)",
    ),
    "split_view_no_transpose": dict(
        cells={
            "split_heads_answer": HEADS_OK.replace(
                "x.view(B, L, n_heads, D // n_heads).transpose(1, 2)", "x.view(B, n_heads, L, D // n_heads)"
            )
        },
        question="split_heads",
        hint="transpose",
    ),
    "causal_triu": dict(
        cells={"causal_mask_answer": CAUSAL_OK.replace("tril", "triu")}, question="causal_mask", hint="triu"
    ),
    # the diagonal masked out too; judged on seq_len=1 first it read as the strict upper triangle (issue 51)
    "causal_diagonal_masked": dict(
        cells={
            "causal_mask_answer": CAUSAL_OK.replace("dtype=torch.bool))", "dtype=torch.bool), diagonal=-1)")
        },
        question="causal_mask",
        hint="the diagonal is missing",
        not_hints=("strictly above the diagonal",),
    ),
    # a (B, Lq, Lk) mask given a trailing dim: the error is raised in the student's own
    # scaled_dot_product_attention, and the message says which line of MultiHeadAttention called it
    "mha_mask_unsqueezed_last": dict(
        cells={
            "MultiHeadAttention_answer": MHA_OK.replace(
                "mask = mask.unsqueeze(1)", "mask = mask.unsqueeze(-1)"
            )
        },
        question="MultiHeadAttention",
        hint="called from <01_attention:MultiHeadAttention_answer>",
    ),
    # the most copied tutorial code: a finite fill; only a fully masked row tells it from -inf
    "masked_fill_minus_1e9": dict(
        cells={
            "scaled_dot_product_attention_answer": _sdpa(
                "scores = q @ k.transpose(-2, -1) / math.sqrt(q.shape[-1])",
                mask_line="scores = scores.masked_fill(mask == 0, -1e9)",
                fix_nan=False,
            )
        },
        question="scaled_dot_product_attention",
        hint="uniform weights 1/Lk",
        not_hints=("contains NaN", "instead of -inf"),
    ),
    "mask_ignored": dict(
        cells={
            "scaled_dot_product_attention_answer": _sdpa(
                "scores = q @ k.transpose(-2, -1) / math.sqrt(q.shape[-1])", mask_line="pass"
            )
        },
        question="scaled_dot_product_attention",
        hint="mask is ignored",
    ),
    # two bugs at once: both are named
    "no_scaling_and_softmax_over_queries": dict(
        cells={
            "scaled_dot_product_attention_answer": _sdpa(
                "scores = q @ k.transpose(-2, -1)", softmax="torch.softmax(scores, dim=-2)"
            )
        },
        question="scaled_dot_product_attention",
        hint=("not scaled", "over the queries"),
    ),
    "divide_by_dk_and_mask_inverted": dict(
        cells={
            "scaled_dot_product_attention_answer": _sdpa(
                "scores = q @ k.transpose(-2, -1) / q.shape[-1]",
                mask_line='scores = scores.masked_fill(mask, float("-inf"))',
            )
        },
        question="scaled_dot_product_attention",
        hint=("divided by d_k", "polarity"),
    ),
    # structural mistakes in the module
    "mha_forward_misspelled": dict(
        cells={"MultiHeadAttention_answer": MHA_OK.replace("def forward(", "def foward(")},
        question="MultiHeadAttention",
        hint="`foward` looks like a misspelling of `forward`",
        not_hints=("not done yet",),
    ),
    # the right output, and the caller's (B, Lq, Lk) mask left (B, 1, Lq, Lk)
    "mha_mask_unsqueezed_in_place": dict(
        cells={"MultiHeadAttention_answer": MHA_OK.replace("mask = mask.unsqueeze(1)", "mask.unsqueeze_(1)")},
        question="MultiHeadAttention",
        hint="not mask.unsqueeze_(1)",
    ),
    "mha_mask_ignored": dict(
        cells={
            "MultiHeadAttention_answer": MHA_OK.replace(
                "scaled_dot_product_attention(q, k, v, mask)", "scaled_dot_product_attention(q, k, v)"
            )
        },
        question="MultiHeadAttention",
        hint="ignores its mask argument",
    ),
    "mha_projections_in_a_list": dict(
        cells={
            "MultiHeadAttention_answer": MHA_OK.replace(
                """        self.w_q = nn.Linear(d_model, d_model, bias=bias)
        self.w_k = nn.Linear(d_model, d_model, bias=bias)
        self.w_v = nn.Linear(d_model, d_model, bias=bias)
        self.w_o = nn.Linear(d_model, d_model, bias=bias)""",
                """        self.proj = [nn.Linear(d_model, d_model, bias=bias) for _ in range(4)]""",
            ).replace(
                "def forward(self, query, key, value, mask=None):",
                "def forward(self, query, key, value, mask=None):\n"
                "        self.w_q, self.w_k, self.w_v, self.w_o = self.proj",
            )
        },
        question="MultiHeadAttention",
        hint="self.proj is a Python list of modules",
    ),
}

ALTERNATIVES = {
    "einsum": {
        "scaled_dot_product_attention_answer": """
def scaled_dot_product_attention(q, k, v, mask=None):
    s = torch.einsum("...qd,...kd->...qk", q, k) / q.shape[-1] ** 0.5
    if mask is not None:
        s = torch.where(mask, s, torch.tensor(float("-inf"), dtype=s.dtype))
    w = s.softmax(-1)
    w = torch.where(torch.isnan(w), torch.zeros_like(w), w)
    return torch.einsum("...qk,...kd->...qd", w, v), w
"""
    },
    "causal_not_strict_upper": {
        "causal_mask_answer": "def causal_mask(seq_len):\n    return ~torch.ones(seq_len, seq_len, dtype=torch.bool).triu(1)\n"
    },
    "prescaled_q_rsqrt": {
        "scaled_dot_product_attention_answer": """
def scaled_dot_product_attention(q, k, v, mask=None):
    q = q * torch.rsqrt(torch.tensor(float(q.shape[-1]), dtype=q.dtype))
    scores = torch.matmul(q, k.transpose(-1, -2))
    if mask is not None:
        scores = scores.masked_fill(mask.logical_not(), -torch.inf)
        scores = scores.masked_fill(~mask.any(-1, keepdim=True), 0.0)
    w = F.softmax(scores, dim=-1)
    if mask is not None:
        w = w * mask.any(-1, keepdim=True)
    return torch.matmul(w, v), w
"""
    },
    "prints_and_warns": {
        "scaled_dot_product_attention_answer": "import warnings, sys\n"
        + SDPA_OK.replace(
            "    scores =",
            "    print('debug: shapes', q.shape, k.shape)\n    warnings.warn('just a warning')\n"
            "    print('to stderr', file=sys.stderr)\n    scores =",
            1,
        ),
        "causal_mask_answer": "def causal_mask(seq_len):\n    i = torch.arange(seq_len)\n    return i[:, None] >= i[None, :]\n",
        "split_heads_answer": """
def split_heads(x, n_heads):
    return x.unflatten(-1, (n_heads, -1)).permute(0, 2, 1, 3)

def merge_heads(x):
    return x.permute(0, 2, 1, 3).flatten(-2)
""",
    },
}

# The example class. A student missing here does not submit this lesson.
STUDENTS = {
    "alice_perfect": ALL_OK,
    "bob_blank": {},
    "carol_partial": {
        "causal_mask_answer": CAUSAL_OK,
        "padding_mask_answer": PADDING_OK,
        "split_heads_answer": HEADS_OK,
    },
    "dave_no_scaling": {**ALL_OK, **MISTAKES["no_scaling"]["cells"]},
    "erin_mask_inverted": {
        **ALL_OK,
        **MISTAKES["mask_inverted"]["cells"],
        **MISTAKES["causal_triu"]["cells"],
    },
}

MAX = {
    "scaled_dot_product_attention": 3,
    "causal_mask": 1,
    "padding_mask": 1,
    "split_heads": 1,
    "merge_heads": 1,
    "MultiHeadAttention": 3,
}
EXPECTED = {
    "alice_perfect": dict(MAX),
    "bob_blank": {q: 0 for q in MAX},
    "carol_partial": {
        **{q: 0 for q in MAX},
        "causal_mask": 1,
        "padding_mask": 1,
        "split_heads": 1,
        "merge_heads": 1,
    },
    # MHA calls the student's own attention: a wrong one is replaced by the reference (one mistake, one question)
    "dave_no_scaling": {**MAX, "scaled_dot_product_attention": 0, "MultiHeadAttention": 3},
    "erin_mask_inverted": {
        **MAX,
        "scaled_dot_product_attention": 0,
        "causal_mask": 0,
        "MultiHeadAttention": 3,
    },
}
