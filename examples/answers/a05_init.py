"""Example answers for lesson 05_init: the example class, the init rows of docs/mistakes.md
(Kaiming with fan_out, Kaiming without the ReLU gain, fan_in taken from weight.shape[0]) and other
wrong answers, and correct answers written differently. Keys are answer-cell ids."""

STD_OK = """
def init_std(scheme, fan_in, fan_out):
    if scheme == "xavier":
        return math.sqrt(2.0 / (fan_in + fan_out))
    if scheme == "kaiming":
        return math.sqrt(2.0 / fan_in)
    raise ValueError(f"unknown scheme {scheme!r}")
"""

LINEAR_OK = """
def init_linear_(layer, scheme):
    fan_out, fan_in = layer.weight.shape
    with torch.no_grad():
        layer.weight.normal_(0.0, init_std(scheme, fan_in, fan_out))
        if layer.bias is not None:
            layer.bias.zero_()
    return layer
"""

ALL_OK = {"init_std_answer": STD_OK, "init_linear__answer": LINEAR_OK}

MISTAKES = {
    # docs/mistakes.md, init rows
    "kaiming_fan_out": dict(
        cells={"init_std_answer": STD_OK.replace("math.sqrt(2.0 / fan_in)", "math.sqrt(2.0 / fan_out)")},
        question="init_std",
        hint="fan_out",
    ),
    # the type before the value (docs/authoring-lessons.md): init_std returns a float
    "std_as_tensor": dict(
        cells={
            "init_std_answer": STD_OK.replace(
                "math.sqrt(2.0 / fan_in)", "torch.sqrt(torch.tensor(2.0 / fan_in))"
            )
        },
        question="init_std",
        hint="`.item()` turns a one-element tensor",
    ),
    "kaiming_no_gain": dict(
        cells={"init_std_answer": STD_OK.replace("math.sqrt(2.0 / fan_in)", "math.sqrt(1.0 / fan_in)")},
        question="init_std",
        hint="gain",
    ),
    "fan_in_from_shape0": dict(
        cells={
            "init_linear__answer": LINEAR_OK.replace(
                "fan_out, fan_in = layer.weight.shape", "fan_in, fan_out = layer.weight.shape"
            )
        },
        question="init_linear_",
        hint="shape[0]",
    ),
    # more wrong answers students write
    "gain_on_std": dict(
        cells={"init_std_answer": STD_OK.replace("math.sqrt(2.0 / fan_in)", "2.0 / math.sqrt(fan_in)")},
        question="init_std",
        hint="variance",
    ),
    "xavier_lecun": dict(
        cells={
            "init_std_answer": STD_OK.replace(
                "math.sqrt(2.0 / (fan_in + fan_out))", "math.sqrt(1.0 / fan_in)"
            )
        },
        question="init_std",
        hint="LeCun",
    ),
    "variance_as_std": dict(
        cells={
            "init_linear__answer": LINEAR_OK.replace(
                "layer.weight.normal_(0.0, init_std(scheme, fan_in, fan_out))",
                "layer.weight.normal_(0.0, init_std(scheme, fan_in, fan_out) ** 2)",
            )
        },
        question="init_linear_",
        hint="variance",
    ),
    "uniform_draw": dict(
        cells={
            "init_linear__answer": LINEAR_OK.replace(
                "layer.weight.normal_(0.0, init_std(scheme, fan_in, fan_out))",
                "b = init_std(scheme, fan_in, fan_out) * math.sqrt(3.0); layer.weight.uniform_(-b, b)",
            )
        },
        question="init_linear_",
        hint="uniform",
    ),
    "bias_kept": dict(
        cells={"init_linear__answer": LINEAR_OK.replace("layer.bias.zero_()", "pass")},
        question="init_linear_",
        hint="zeros",
    ),
    "no_return": dict(
        cells={"init_linear__answer": LINEAR_OK.replace("    return layer\n", "")},
        question="init_linear_",
        hint="return",
    ),
    "new_layer_returned": dict(
        cells={
            "init_linear__answer": """
def init_linear_(layer, scheme):
    new = nn.Linear(layer.in_features, layer.out_features).to(layer.weight.dtype)
    nn.init.normal_(new.weight, 0.0, init_std(scheme, layer.in_features, layer.out_features))
    nn.init.zeros_(new.bias)
    return new
"""
        },
        question="init_linear_",
        hint="default init",
    ),
}

ALTERNATIVES = {
    "torch_init_functions": {
        "init_std_answer": '''
def init_std(scheme, fan_in, fan_out):
    """Via torch's own gains: xavier gain 1, kaiming gain sqrt(2) (ReLU)."""
    print("init_std", scheme, fan_in, fan_out)
    gains = {"xavier": (1.0, (fan_in + fan_out) / 2), "kaiming": (nn.init.calculate_gain("relu"), fan_in)}
    gain, fan = gains[scheme]
    return gain / fan ** 0.5
''',
        "init_linear__answer": """
def init_linear_(layer, scheme):
    if scheme == "kaiming":
        nn.init.kaiming_normal_(layer.weight, mode="fan_in", nonlinearity="relu")
    else:
        nn.init.xavier_normal_(layer.weight, gain=1.0)
    nn.init.zeros_(layer.bias)
    return layer
""",
    },
    "copy_from_randn": {
        "init_linear__answer": """
import warnings
def init_linear_(layer, scheme):
    std = init_std(scheme, layer.in_features, layer.out_features)
    with torch.no_grad():
        layer.weight.copy_(torch.randn_like(layer.weight) * std)
        layer.bias.fill_(0.0)
    warnings.warn("initialised")
    return layer
"""
    },
}

# The example class. A student missing here does not submit this lesson.
STUDENTS = {
    "alice_perfect": ALL_OK,
    "bob_blank": {},
    "carol_partial": {"init_std_answer": STD_OK},
    "dave_kaiming_fan_out": {**ALL_OK, **MISTAKES["kaiming_fan_out"]["cells"]},
    "erin_fan_in_from_shape0": {**ALL_OK, **MISTAKES["fan_in_from_shape0"]["cells"]},
}

MAX = {"init_std": 1, "init_linear_": 2}
EXPECTED = {
    "alice_perfect": dict(MAX),
    "bob_blank": {q: 0 for q in MAX},
    "carol_partial": {"init_std": 1, "init_linear_": 0},
    # init_linear_ draws with the student's own init_std: a wrong one is replaced by the reference
    "dave_kaiming_fan_out": {"init_std": 0, "init_linear_": 2},
    "erin_fan_in_from_shape0": {"init_std": 1, "init_linear_": 0},
}
