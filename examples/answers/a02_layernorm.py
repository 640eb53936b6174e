"""Example answers for lesson 02_layernorm: the example class, the classic mistakes of
docs/mistakes.md (layernorm, rmsnorm, batchnorm rows, plus a few more), and correct answers written
differently. Keys are answer-cell ids."""


def _layer_norm(
    var_line="var = x.var(dim=-1, unbiased=False, keepdim=True)",
    mean_line="mean = x.mean(dim=-1, keepdim=True)",
    return_line="return (x - mean) / torch.sqrt(var + eps) * weight + bias",
):
    return f"""
def layer_norm(x, weight, bias, eps=1e-5):
    {mean_line}
    {var_line}
    {return_line}
"""


LAYER_NORM_OK = _layer_norm()
LAYERNORM_OK = """
class LayerNorm(nn.Module):
    def __init__(self, d_model, eps=1e-5):
        super().__init__()
        self.eps = eps
        self.weight = nn.Parameter(torch.ones(d_model))
        self.bias = nn.Parameter(torch.zeros(d_model))

    def forward(self, x):
        return layer_norm(x, self.weight, self.bias, self.eps)
"""
RMS_NORM_OK = """
def rms_norm(x, weight, eps=1e-6):
    ms = x.pow(2).mean(dim=-1, keepdim=True)
    return x / torch.sqrt(ms + eps) * weight
"""
RMSNORM_OK = """
class RMSNorm(nn.Module):
    def __init__(self, d_model, eps=1e-6):
        super().__init__()
        self.eps = eps
        self.weight = nn.Parameter(torch.ones(d_model))

    def forward(self, x):
        return rms_norm(x, self.weight, self.eps)
"""


def _batch_norm(
    norm_var="var",
    running_var_update="var * n / (n - 1)",
    update="running_mean.mul_(1 - momentum).add_(momentum * mean)\n"
    "            running_var.mul_(1 - momentum).add_(momentum * {rv})",
    eval_line="mean, var = running_mean, running_var",
):
    update = update.format(rv=running_var_update)
    return f"""
def batch_norm(x, running_mean, running_var, weight, bias, training, momentum=0.1, eps=1e-5):
    n = x.shape[0]
    if training:
        mean = x.mean(dim=0)
        var = x.var(dim=0, unbiased=False)
        with torch.no_grad():
            {update}
    else:
        {eval_line}
    return (x - mean) / torch.sqrt({norm_var} + eps) * weight + bias
"""


BATCH_NORM_OK = _batch_norm()

ALL_OK = {
    "layer_norm_answer": LAYER_NORM_OK,
    "LayerNorm_answer": LAYERNORM_OK,
    "rms_norm_answer": RMS_NORM_OK,
    "RMSNorm_answer": RMSNORM_OK,
    "batch_norm_answer": BATCH_NORM_OK,
}

MISTAKES = {
    # layernorm
    "ln_unbiased_var": dict(
        cells={"layer_norm_answer": _layer_norm(var_line="var = x.var(dim=-1, keepdim=True)")},
        question="layer_norm",
        hint="unbiased",
        not_hints=("tutorial", "outside the sqrt"),
    ),
    "ln_unbiased_and_wrong_dim": dict(
        cells={
            "layer_norm_answer": _layer_norm(
                mean_line="mean = x.mean(dim=0, keepdim=True)", var_line="var = x.var(dim=0, keepdim=True)"
            )
        },
        question="layer_norm",
        hint=("two mistakes at once", "unbiased", "dims (0,)"),
    ),
    "ln_eps_outside_and_no_bias": dict(
        cells={
            "layer_norm_answer": _layer_norm(
                return_line="return (x - mean) / (torch.sqrt(var) + eps) * weight"
            )
        },
        question="layer_norm",
        hint=("outside the sqrt", "bias is missing"),
        not_hints=("tutorial",),
    ),
    "ln_tutorial_std_plus_eps": dict(
        cells={
            "layer_norm_answer": _layer_norm(
                var_line="std = x.std(-1, keepdim=True)",
                return_line="return weight * (x - mean) / (std + eps) + bias",
            )
        },
        question="layer_norm",
        hint="tutorial",
    ),
    "ln_eps_outside_sqrt": dict(
        cells={
            "layer_norm_answer": _layer_norm(
                return_line="return (x - mean) / (torch.sqrt(var) + eps) * weight + bias"
            )
        },
        question="layer_norm",
        hint="outside the sqrt",
    ),
    "ln_wrong_dim": dict(
        cells={
            "layer_norm_answer": _layer_norm(
                mean_line="mean = x.mean(dim=0, keepdim=True)",
                var_line="var = x.var(dim=0, unbiased=False, keepdim=True)",
            )
        },
        question="layer_norm",
        hint="last dim",
    ),
    "ln_wrong_dim_1": dict(
        cells={
            "layer_norm_answer": _layer_norm(
                mean_line="mean = x.mean(dim=1, keepdim=True)",
                var_line="var = x.var(dim=1, unbiased=False, keepdim=True)",
            )
        },
        question="layer_norm",
        hint="last dim",
    ),
    "ln_affine_ignored": dict(
        cells={"layer_norm_answer": _layer_norm(return_line="return (x - mean) / torch.sqrt(var + eps)")},
        question="layer_norm",
        hint="affine",
    ),
    "ln_affine_wrong_order": dict(
        cells={
            "layer_norm_answer": _layer_norm(
                return_line="return ((x - mean) / torch.sqrt(var + eps) + bias) * weight"
            )
        },
        question="layer_norm",
        hint="wrong order",
    ),
    "LayerNorm_unbiased_var": dict(
        cells={
            "LayerNorm_answer": LAYERNORM_OK.replace(
                "return layer_norm(x, self.weight, self.bias, self.eps)",
                "m = x.mean(-1, keepdim=True)\n        s = x.std(-1, keepdim=True)\n"
                "        return self.weight * (x - m) / (s + self.eps) + self.bias",
            )
        },
        question="LayerNorm",
        hint="tutorial",
    ),
    "LayerNorm_unbiased_eps_inside": dict(
        cells={
            "LayerNorm_answer": LAYERNORM_OK.replace(
                "return layer_norm(x, self.weight, self.bias, self.eps)",
                "m = x.mean(-1, keepdim=True)\n        v = x.var(-1, keepdim=True)\n"
                "        return self.weight * (x - m) / torch.sqrt(v + self.eps) + self.bias",
            )
        },
        question="LayerNorm",
        hint="unbiased",
        not_hints=("tutorial", "outside the sqrt"),
    ),
    "LayerNorm_forward_misspelled": dict(
        cells={"LayerNorm_answer": LAYERNORM_OK.replace("def forward(", "def foward(")},
        question="LayerNorm",
        hint="misspelling of `forward`",
        not_hints=("not done yet",),
    ),
    "LayerNorm_eps_ignored": dict(
        cells={
            "LayerNorm_answer": LAYERNORM_OK.replace(
                "layer_norm(x, self.weight, self.bias, self.eps)", "layer_norm(x, self.weight, self.bias)"
            )
        },
        question="LayerNorm",
        hint="eps",
    ),
    "LayerNorm_gamma_beta": dict(
        cells={
            "LayerNorm_answer": LAYERNORM_OK.replace("self.weight", "self.gamma").replace(
                "self.bias", "self.beta"
            )
        },
        question="LayerNorm",
        hint=("there is no self.weight", "self.bias"),
    ),
    "ln_subtracts_in_place": dict(
        cells={
            "layer_norm_answer": _layer_norm(
                return_line="return x.sub_(mean).div_(torch.sqrt(var + eps)) * weight + bias"
            )
        },
        question="layer_norm",
        hint="modified its input x in place",
    ),
    "LayerNorm_not_parameters": dict(
        cells={
            "LayerNorm_answer": LAYERNORM_OK.replace(
                "nn.Parameter(torch.ones(d_model))", "torch.ones(d_model)"
            ).replace(
                "self.bias = nn.Parameter(torch.zeros(d_model))",
                "self.register_buffer('bias', torch.zeros(d_model))",
            )
        },
        question="LayerNorm",
        hint="nn.Parameter",
    ),
    # rmsnorm
    "rms_mean_subtracted": dict(
        cells={
            "rms_norm_answer": RMS_NORM_OK.replace(
                "ms = x.pow(2)", "x = x - x.mean(-1, keepdim=True)\n    ms = x.pow(2)"
            )
        },
        question="rms_norm",
        hint="subtracted the mean",
    ),
    "RMSNorm_mean_subtracted": dict(
        cells={
            "RMSNorm_answer": RMSNORM_OK.replace(
                "return rms_norm(x, self.weight, self.eps)",
                "x = x - x.mean(-1, keepdim=True)\n        return x * torch.rsqrt(x.pow(2).mean(-1, keepdim=True) + self.eps) * self.weight",
            )
        },
        question="RMSNorm",
        hint="subtracted the mean",
    ),
    "rms_eps_outside_sqrt": dict(
        cells={"rms_norm_answer": RMS_NORM_OK.replace("torch.sqrt(ms + eps)", "(torch.sqrt(ms) + eps)")},
        question="rms_norm",
        hint="outside the sqrt",
    ),
    # batchnorm
    "bn_unbiased_normalize": dict(
        cells={"batch_norm_answer": _batch_norm(norm_var="(var * n / (n - 1) if training else var)")},
        question="batch_norm",
        hint="unbiased",
    ),
    "bn_running_var_biased": dict(
        cells={"batch_norm_answer": _batch_norm(running_var_update="var")},
        question="batch_norm",
        hint="running_var is updated with the biased",
    ),
    "bn_running_not_in_place": dict(
        cells={
            "batch_norm_answer": _batch_norm(
                update="running_mean = (1 - momentum) * running_mean + momentum * mean\n"
                "            running_var = (1 - momentum) * running_var + momentum * {rv}"
            )
        },
        question="batch_norm",
        hint="in place",
    ),
    "bn_momentum_swapped": dict(
        cells={
            "batch_norm_answer": _batch_norm(
                update="running_mean.mul_(momentum).add_((1 - momentum) * mean)\n"
                "            running_var.mul_(momentum).add_((1 - momentum) * {rv})"
            )
        },
        question="batch_norm",
        hint="NEW statistic",
    ),
    "bn_eval_uses_batch_stats": dict(
        cells={
            "batch_norm_answer": _batch_norm(
                eval_line="mean, var = x.mean(dim=0), x.var(dim=0, unbiased=False)"
            )
        },
        question="batch_norm",
        hint="eval mode",
    ),
}

ALTERNATIVES = {
    "rsqrt": {
        "layer_norm_answer": """
def layer_norm(x, weight, bias, eps=1e-5):
    xc = x - x.mean(-1, keepdim=True)
    return torch.addcmul(bias, xc * torch.rsqrt(xc.square().mean(-1, keepdim=True) + eps), weight)
""",
        "rms_norm_answer": """
def rms_norm(x, weight, eps=1e-6):
    return weight * (x * torch.rsqrt(torch.mean(x * x, dim=-1, keepdim=True) + eps))
""",
    },
    "var_mean": {
        "layer_norm_answer": """
def layer_norm(x, weight, bias, eps=1e-5):
    var, mean = torch.var_mean(x, dim=-1, correction=0, keepdim=True)
    return weight * (x - mean) / (var + eps) ** 0.5 + bias
""",
        "batch_norm_answer": """
def batch_norm(x, running_mean, running_var, weight, bias, training, momentum=0.1, eps=1e-5):
    if not training:
        return (x - running_mean) / (running_var + eps).sqrt() * weight + bias
    var, mean = torch.var_mean(x, dim=0, unbiased=False)
    unbiased = torch.var(x, dim=0)                       # correction=1
    with torch.no_grad():
        running_mean.lerp_(mean, momentum)
        running_var.copy_((1 - momentum) * running_var + momentum * unbiased)
    return torch.einsum("nc,c->nc", x - mean, torch.rsqrt(var + eps) * weight) + bias
""",
    },
    "functional_inside_module": {
        "LayerNorm_answer": """
class LayerNorm(nn.Module):
    def __init__(self, d_model, eps=1e-5):
        super().__init__()
        self.d_model, self.eps = d_model, eps
        self.weight = nn.Parameter(torch.ones(d_model))
        self.bias = nn.Parameter(torch.zeros(d_model))

    def forward(self, x):
        return F.layer_norm(x, (self.d_model,), self.weight, self.bias, self.eps)
""",
        "RMSNorm_answer": """
class RMSNorm(nn.Module):
    def __init__(self, d_model, eps=1e-6):
        super().__init__()
        self.eps = eps
        self.weight = nn.Parameter(torch.ones(d_model))

    def forward(self, x):
        return F.rms_norm(x, self.weight.shape, self.weight, self.eps)
""",
        "batch_norm_answer": """
def batch_norm(x, running_mean, running_var, weight, bias, training, momentum=0.1, eps=1e-5):
    return F.batch_norm(x, running_mean, running_var, weight, bias, training, momentum, eps)
""",
    },
    "prints_and_warns": {
        "layer_norm_answer": "import warnings, sys\n"
        + LAYER_NORM_OK.replace(
            "    mean =",
            "    print('debug:', x.shape, x.dtype)\n    warnings.warn('just a warning')\n"
            "    print('to stderr', file=sys.stderr)\n    mean =",
            1,
        ),
        "rms_norm_answer": """
def rms_norm(x, weight, eps=1e-6):
    print("rms_norm called on", tuple(x.shape))
    rms = torch.linalg.vector_norm(x, dim=-1, keepdim=True) / x.shape[-1] ** 0.5
    return x / torch.sqrt(rms ** 2 + eps) * weight
""",
        "batch_norm_answer": """
def batch_norm(x, running_mean, running_var, weight, bias, training, momentum=0.1, eps=1e-5):
    import warnings
    warnings.warn("BatchNorm is a poor fit for padded token batches")
    if training:
        n = x.shape[0]
        mean = x.sum(0) / n
        var = ((x - mean) ** 2).sum(0) / n
        running_mean.data = (1 - momentum) * running_mean.data + momentum * mean.detach()
        running_var.data = (1 - momentum) * running_var.data + momentum * var.detach() * n / (n - 1)
    else:
        mean, var = running_mean, running_var
    return weight * (x - mean) / torch.sqrt(var + eps) + bias
""",
    },
}

# The example class. A student missing here does not submit this lesson.
STUDENTS = {
    "alice_perfect": ALL_OK,
    "bob_blank": {},
    "carol_partial": {
        "layer_norm_answer": LAYER_NORM_OK,
        "LayerNorm_answer": LAYERNORM_OK,
        "rms_norm_answer": RMS_NORM_OK,
    },
    "dave_unbiased_var": {**ALL_OK, **MISTAKES["ln_unbiased_var"]["cells"]},
    "erin_running_var_biased": {
        **ALL_OK,
        **MISTAKES["bn_running_var_biased"]["cells"],
        **MISTAKES["rms_mean_subtracted"]["cells"],
    },
}

MAX = {"layer_norm": 2, "LayerNorm": 1, "rms_norm": 1, "RMSNorm": 1, "batch_norm": 3}
EXPECTED = {
    "alice_perfect": dict(MAX),
    "bob_blank": {q: 0 for q in MAX},
    "carol_partial": {**{q: 0 for q in MAX}, "layer_norm": 2, "LayerNorm": 1, "rms_norm": 1},
    # LayerNorm and RMSNorm call the student's own functions: a wrong one is replaced by the reference
    "dave_unbiased_var": {**MAX, "layer_norm": 0, "LayerNorm": 1},
    "erin_running_var_biased": {**MAX, "batch_norm": 0, "rms_norm": 0, "RMSNorm": 1},
}
