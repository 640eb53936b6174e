"""Example answers for lesson 03_residual: the example class, the classic mistakes of
docs/mistakes.md (residual rows, plus a few more), and correct answers written differently.
Keys are answer-cell ids."""


def _ffn(
    forward="return self.w2(self.dropout(torch.relu(self.w1(x))))",
    dropout_init="self.dropout = nn.Dropout(dropout)",
):
    return f"""
class PositionwiseFeedForward(nn.Module):
    def __init__(self, d_model, d_ff, dropout=0.0):
        super().__init__()
        self.w1 = nn.Linear(d_model, d_ff)
        self.w2 = nn.Linear(d_ff, d_model)
        {dropout_init}

    def forward(self, x):
        {forward}
"""


def _sublayer(
    pre="return x + self.dropout(sublayer(self.norm(x)))",
    post="return self.norm(x + self.dropout(sublayer(x)))",
    default="pre_norm=True",
):
    return f"""
class SublayerConnection(nn.Module):
    def __init__(self, d_model, dropout=0.0, {default}):
        super().__init__()
        self.norm = nn.LayerNorm(d_model)
        self.dropout = nn.Dropout(dropout)
        self.pre_norm = pre_norm

    def forward(self, x, sublayer):
        if self.pre_norm:
            {pre}
        {post}
"""


def _hybrid(forward="return x + self.dropout(self.norm(sublayer(x)))"):
    return f"""
class HybridSublayerConnection(nn.Module):
    def __init__(self, d_model, dropout=0.0):
        super().__init__()
        self.norm = nn.LayerNorm(d_model)
        self.dropout = nn.Dropout(dropout)

    def forward(self, x, sublayer):
        {forward}
"""


FFN_OK = _ffn()
SUBLAYER_OK = _sublayer()
HYBRID_OK = _hybrid()
ALL_OK = {
    "PositionwiseFeedForward_answer": FFN_OK,
    "SublayerConnection_answer": SUBLAYER_OK,
    "HybridSublayerConnection_answer": HYBRID_OK,
}

MISTAKES = {
    "ffn_no_relu": dict(
        cells={"PositionwiseFeedForward_answer": _ffn("return self.w2(self.dropout(self.w1(x)))")},
        question="PositionwiseFeedForward",
        hint="ReLU is missing",
    ),
    "ffn_relu_after_w2": dict(
        cells={
            "PositionwiseFeedForward_answer": _ffn("return torch.relu(self.w2(self.dropout(self.w1(x))))")
        },
        question="PositionwiseFeedForward",
        hint="after w2",
    ),
    "ffn_gelu": dict(
        cells={"PositionwiseFeedForward_answer": _ffn("return self.w2(self.dropout(F.gelu(self.w1(x))))")},
        question="PositionwiseFeedForward",
        hint="GELU",
    ),
    "ffn_sigmoid": dict(
        cells={
            "PositionwiseFeedForward_answer": _ffn("return self.w2(self.dropout(torch.sigmoid(self.w1(x))))")
        },
        question="PositionwiseFeedForward",
        hint="sigmoid",
        not_hints=("default",),
    ),
    "sublayer_adds_in_place": dict(
        cells={
            "SublayerConnection_answer": _sublayer(
                pre="x += self.dropout(sublayer(self.norm(x)))\n            return x",
            )
        },
        question="SublayerConnection",
        hint="modified its input x in place",
    ),
    "ffn_dropout_in_eval": dict(
        cells={
            "PositionwiseFeedForward_answer": _ffn(
                "return self.w2(F.dropout(torch.relu(self.w1(x)), self.p))", dropout_init="self.p = dropout"
            )
        },
        question="PositionwiseFeedForward",
        hint="eval mode",
    ),
    "ffn_no_dropout": dict(
        cells={"PositionwiseFeedForward_answer": _ffn("return self.w2(torch.relu(self.w1(x)))")},
        question="PositionwiseFeedForward",
        hint="did not drop anything",
    ),
    "ffn_dropout_after_w2": dict(
        cells={
            "PositionwiseFeedForward_answer": _ffn("return self.dropout(self.w2(torch.relu(self.w1(x))))")
        },
        question="PositionwiseFeedForward",
        hint="between the layers",
    ),
    "sublayer_pre_post_swapped": dict(
        cells={
            "SublayerConnection_answer": _sublayer(
                pre="return self.norm(x + self.dropout(sublayer(x)))",
                post="return x + self.dropout(sublayer(self.norm(x)))",
            )
        },
        question="SublayerConnection",
        hint="swapped",
    ),
    "sublayer_no_residual": dict(
        cells={
            "SublayerConnection_answer": _sublayer(
                pre="return self.dropout(sublayer(self.norm(x)))",
                post="return self.norm(self.dropout(sublayer(x)))",
            )
        },
        question="SublayerConnection",
        hint="residual path is missing",
    ),
    "sublayer_pre_no_residual": dict(
        cells={"SublayerConnection_answer": _sublayer(pre="return self.dropout(sublayer(self.norm(x)))")},
        question="SublayerConnection",
        hint="residual path is missing",
    ),
    "sublayer_hybrid": dict(
        cells={"SublayerConnection_answer": _sublayer(pre="return x + self.dropout(self.norm(sublayer(x)))")},
        question="SublayerConnection",
        hint="hybrid",
    ),
    "sublayer_normed_residual": dict(
        cells={
            "SublayerConnection_answer": _sublayer(
                pre="x = self.norm(x)\n            return x + self.dropout(sublayer(x))"
            )
        },
        question="SublayerConnection",
        hint="normalised x",
    ),
    "sublayer_default_post": dict(
        cells={"SublayerConnection_answer": _sublayer(default="pre_norm=False")},
        question="SublayerConnection",
        hint="default",
    ),
    "sublayer_dropout_everything": dict(
        cells={"SublayerConnection_answer": _sublayer(pre="return self.dropout(x + sublayer(self.norm(x)))")},
        question="SublayerConnection",
        hint="dropped everything",
    ),
    "ffn_forward_misspelled": dict(
        cells={"PositionwiseFeedForward_answer": _ffn().replace("def forward(", "def foward(")},
        question="PositionwiseFeedForward",
        hint="misspelling of `forward`",
        not_hints=("not done yet",),
    ),
    "ffn_layers_in_a_list": dict(
        cells={
            "PositionwiseFeedForward_answer": _ffn("return self.w2(self.dropout(torch.relu(self.w1(x))))")
            .replace(
                "self.w1 = nn.Linear(d_model, d_ff)\n        self.w2 = nn.Linear(d_ff, d_model)",
                "self.layers = [nn.Linear(d_model, d_ff), nn.Linear(d_ff, d_model)]",
            )
            .replace("self.w1(x)", "self.layers[0](x)")
            .replace("self.w2(", "self.layers[1](")
        },
        question="PositionwiseFeedForward",
        hint="there is no self.w1",
    ),
    "ffn_plain_tensor_weights": dict(
        cells={
            "PositionwiseFeedForward_answer": """
class MyLinear(nn.Module):
    def __init__(self, d_in, d_out):
        super().__init__()
        self.weight = torch.randn(d_out, d_in) / d_in ** 0.5   # plain tensors: not registered
        self.bias = torch.zeros(d_out)

    def forward(self, x):
        return x @ self.weight.T + self.bias


class PositionwiseFeedForward(nn.Module):
    def __init__(self, d_model, d_ff, dropout=0.0):
        super().__init__()
        self.w1 = MyLinear(d_model, d_ff)
        self.w2 = MyLinear(d_ff, d_model)
        self.dropout = nn.Dropout(dropout)

    def forward(self, x):
        return self.w2(self.dropout(torch.relu(self.w1(x))))
"""
        },
        question="PositionwiseFeedForward",
        hint="plain tensor",
    ),
    "hybrid_is_pre_ln": dict(
        cells={"HybridSublayerConnection_answer": _hybrid("return x + self.dropout(sublayer(self.norm(x)))")},
        question="HybridSublayerConnection",
        hint="that is Pre-LN",
    ),
    "hybrid_is_post_ln": dict(
        cells={"HybridSublayerConnection_answer": _hybrid("return self.norm(x + self.dropout(sublayer(x)))")},
        question="HybridSublayerConnection",
        hint="that is Post-LN",
    ),
    "hybrid_no_residual": dict(
        cells={"HybridSublayerConnection_answer": _hybrid("return self.dropout(self.norm(sublayer(x)))")},
        question="HybridSublayerConnection",
        hint="residual path is missing",
    ),
    "hybrid_dropout_before_norm": dict(
        cells={"HybridSublayerConnection_answer": _hybrid("return x + self.norm(self.dropout(sublayer(x)))")},
        question="HybridSublayerConnection",
        hint="dropout is applied before the norm",
    ),
    # found by writing answers from the lesson's text alone (issue 38): each passed the self-check before
    "sublayer_assumes_three_dims": dict(
        cells={
            "SublayerConnection_answer": _sublayer(
                pre="B, L, D = x.shape\n            return x + self.dropout(sublayer(self.norm(x)))",
                post="B, L, D = x.shape\n        return self.norm(x + self.dropout(sublayer(x)))",
            )
        },
        question="SublayerConnection",
        hint="any number of leading dims",
    ),
    "hybrid_assumes_three_dims": dict(
        cells={
            "HybridSublayerConnection_answer": _hybrid(
                "B, L, D = x.shape\n        return x + self.dropout(self.norm(sublayer(x)))"
            )
        },
        question="HybridSublayerConnection",
        hint="any number of leading dims",
    ),
    "ffn_flattens_three_dims": dict(
        cells={
            "PositionwiseFeedForward_answer": _ffn(
                "B, L, d = x.shape\n        h = self.w1(x.reshape(B * L, d))\n"
                "        return self.w2(self.dropout(torch.relu(h))).reshape(B, L, d)"
            )
        },
        question="PositionwiseFeedForward",
        hint="any number of leading dims",
    ),
    "sublayer_dropout_default_0_1": dict(
        cells={"SublayerConnection_answer": _sublayer().replace("dropout=0.0", "dropout=0.1")},
        question="SublayerConnection",
        hint="dropout should default to 0.0",
    ),
    "hybrid_dropout_default_0_1": dict(
        cells={"HybridSublayerConnection_answer": _hybrid().replace("dropout=0.0", "dropout=0.1")},
        question="HybridSublayerConnection",
        hint="dropout should default to 0.0",
    ),
    # two bugs at once
    "ffn_no_relu_and_no_dropout": dict(
        cells={"PositionwiseFeedForward_answer": _ffn("return self.w2(self.w1(x))")},
        question="PositionwiseFeedForward",
        hint=("ReLU is missing", "did not drop anything"),
    ),
}

ALTERNATIVES = {
    "clamp_relu": {
        "PositionwiseFeedForward_answer": _ffn(
            "h = self.w1(x).clamp(min=0)\n        return self.w2(self.dropout(h))"
        )
    },
    "modules_and_functional": {
        "PositionwiseFeedForward_answer": """
class PositionwiseFeedForward(nn.Module):
    def __init__(self, d_model, d_ff, dropout=0.0):
        super().__init__()
        self.w1 = nn.Linear(d_model, d_ff)
        self.act = nn.ReLU()
        self.drop = nn.Dropout(p=dropout)
        self.w2 = nn.Linear(d_ff, d_model)

    def forward(self, x):
        h = F.dropout(F.relu(self.w1(x)), self.drop.p, training=self.training)
        return F.linear(h, self.w2.weight, self.w2.bias)
""",
        "HybridSublayerConnection_answer": """
class HybridSublayerConnection(nn.Module):
    def __init__(self, d_model, dropout=0.0):
        super().__init__()
        self.norm = nn.LayerNorm(d_model)
        self.p = dropout

    def forward(self, x, sublayer):
        y = F.layer_norm(sublayer(x), self.norm.normalized_shape, self.norm.weight, self.norm.bias)
        return torch.add(x, F.dropout(y, self.p, self.training))
""",
        "SublayerConnection_answer": """
class SublayerConnection(nn.Module):
    def __init__(self, d_model, dropout=0.0, pre_norm=True):
        super().__init__()
        self.norm = nn.LayerNorm(d_model)
        self.p, self.pre_norm = dropout, pre_norm

    def forward(self, x, sublayer):
        ln = lambda t: F.layer_norm(t, self.norm.normalized_shape, self.norm.weight, self.norm.bias, self.norm.eps)
        drop = lambda t: F.dropout(t, self.p, self.training)
        return x + drop(sublayer(ln(x))) if self.pre_norm else ln(x + drop(sublayer(x)))
""",
    },
    "prints_and_warns": {
        "PositionwiseFeedForward_answer": "import warnings\n"
        + _ffn(
            "print('ffn input', tuple(x.shape))\n        warnings.warn('debug')\n"
            "        return self.w2(self.dropout(torch.maximum(self.w1(x), torch.zeros(()))))"
        ),
        "SublayerConnection_answer": "import sys\n"
        + _sublayer(
            pre="print('pre-LN block', file=sys.stderr)\n            residual = x\n"
            "            return residual + self.dropout(sublayer(self.norm(x)))",
            post="out = x + self.dropout(sublayer(x))\n        print('post-LN block')\n        return self.norm(out)",
        ),
    },
}

# The example class. A student missing here does not submit this lesson.
STUDENTS = {
    "alice_perfect": ALL_OK,
    "bob_blank": {},
    "carol_partial": {"PositionwiseFeedForward_answer": FFN_OK},
    "dave_relu_after_w2": {**ALL_OK, **MISTAKES["ffn_relu_after_w2"]["cells"]},
    "erin_pre_post_swapped": {**ALL_OK, **MISTAKES["sublayer_pre_post_swapped"]["cells"]},
}

MAX = {"PositionwiseFeedForward": 2, "SublayerConnection": 3, "HybridSublayerConnection": 2}
EXPECTED = {
    "alice_perfect": dict(MAX),
    "bob_blank": {q: 0 for q in MAX},
    "carol_partial": {"PositionwiseFeedForward": 2, "SublayerConnection": 0, "HybridSublayerConnection": 0},
    "dave_relu_after_w2": {**MAX, "PositionwiseFeedForward": 0},
    "erin_pre_post_swapped": {**MAX, "SublayerConnection": 0},
}
