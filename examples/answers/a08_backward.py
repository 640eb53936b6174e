"""Example answers for lesson 08_backward: the example class, the classic mistakes of backward passes
(softmax diagonal term only, a cross-entropy gradient not averaged, without its -1 at the target, or
dividing by an underflowed probability, LayerNorm without its mean or variance path, dweight not reduced or
reduced over the wrong dims, attention without the scale or the mask, a custom Function that saves
the whole graph, intermediates it does not need, nothing, or keeps its tensors as ctx attributes,
gradients "by hand" that autograd computes), and correct answers written differently. Keys are answer-cell ids."""

SOFTMAX_OK = """
def softmax_backward(dy, y):
    return y * (dy - (dy * y).sum(dim=-1, keepdim=True))
"""


def _cross_entropy(body):
    return f"\ndef cross_entropy_backward(logits, target):\n{body}\n"


CROSS_ENTROPY_OK = _cross_entropy(
    """    p = torch.softmax(logits, dim=-1)
    return (p - F.one_hot(target, logits.shape[-1]).to(logits.dtype)) / logits.shape[0]"""
)


def _layer_norm_backward(
    dx_line="dx = rstd * (g - g.mean(-1, keepdim=True) - x_hat * (g * x_hat).mean(-1, keepdim=True))",
    var_line="var = x.var(dim=-1, unbiased=False, keepdim=True)",
    rstd_line="rstd = torch.rsqrt(var + eps)",
    g_line="g = dy * weight",
    return_line="return dx, flat(dy * x_hat).sum(0), flat(dy).sum(0)",
):
    return f"""
def layer_norm_backward(dy, x, weight, eps=1e-5):
    mean = x.mean(dim=-1, keepdim=True)
    {var_line}
    {rstd_line}
    x_hat = (x - mean) * rstd
    {g_line}
    {dx_line}
    flat = lambda t: t.reshape(-1, x.shape[-1])
    {return_line}
"""


LAYER_NORM_OK = _layer_norm_backward()


def _attention_backward(
    scale_line="scale = 1 / math.sqrt(q.shape[-1])",
    mask_line="scores = scores.masked_fill(~mask, float('-inf'))",
    p_line="p = torch.nan_to_num(torch.softmax(scores, dim=-1), nan=0.0)",
    ds_line="ds = softmax_backward(dp, p)",
    dq_line="dq = ds @ k * scale",
    dk_line="dk = ds.transpose(-2, -1) @ q * scale",
):
    return f"""
def attention_backward(d_out, q, k, v, mask=None):
    {scale_line}
    scores = q @ k.transpose(-2, -1) * scale
    if mask is not None:
        {mask_line}
    {p_line}
    dv = p.transpose(-2, -1) @ d_out
    dp = d_out @ v.transpose(-2, -1)
    {ds_line}
    {dq_line}
    {dk_line}
    return dq, dk, dv
"""


ATTENTION_OK = _attention_backward()


def _function(forward, backward):
    return f"""
class LayerNormFunction(torch.autograd.Function):
    @staticmethod
    def forward(ctx, x, weight, bias, eps):
{forward}

    @staticmethod
    def backward(ctx, dy):
{backward}
"""


FORWARD_OK = """        ctx.save_for_backward(x, weight)
        ctx.eps = eps
        return layer_norm(x, weight, bias, eps)"""
BACKWARD_OK = """        x, weight = ctx.saved_tensors
        dx, dweight, dbias = layer_norm_backward(dy, x, weight, ctx.eps)
        return dx, dweight, dbias, None"""
FUNCTION_OK = _function(FORWARD_OK, BACKWARD_OK)

ALL_OK = {
    "softmax_backward_answer": SOFTMAX_OK,
    "cross_entropy_backward_answer": CROSS_ENTROPY_OK,
    "layer_norm_backward_answer": LAYER_NORM_OK,
    "attention_backward_answer": ATTENTION_OK,
    "LayerNormFunction_answer": FUNCTION_OK,
}


def _softmax(body):
    return f"\ndef softmax_backward(dy, y):\n    {body}\n"


def _mistake(cell, code, question, hint):
    return dict(cells={cell: code}, question=question, hint=hint)


CE = "cross_entropy_backward_answer"
SM, LN, AT, FN = (
    "softmax_backward_answer",
    "layer_norm_backward_answer",
    "attention_backward_answer",
    "LayerNormFunction_answer",
)

MISTAKES = {
    # softmax
    "sm_diagonal_term_only": _mistake(SM, _softmax("return dy * y"), "softmax_backward", "diagonal term"),
    "sm_jacobian_diagonal": _mistake(
        SM, _softmax("return dy * y * (1 - y)"), "softmax_backward", "only the diagonal of the Jacobian"
    ),
    "sm_off_diagonal_only": _mistake(
        SM, _softmax("return -y * (dy * y).sum(-1, keepdim=True)"), "softmax_backward", "is missing"
    ),
    "sm_sign_flipped": _mistake(
        SM, _softmax("return y * ((dy * y).sum(-1, keepdim=True) - dy)"), "softmax_backward", "wrong sign"
    ),
    "sm_log_softmax_backward": _mistake(
        SM, _softmax("return dy - y * dy.sum(-1, keepdim=True)"), "softmax_backward", "log_softmax"
    ),
    "sm_sum_over_dim0": _mistake(
        SM, _softmax("return y * (dy - (dy * y).sum(0, keepdim=True))"), "softmax_backward", "wrong dim"
    ),
    # the row sum without keepdim: (...,) against (..., n) raises a broadcast error on every case
    "sm_row_sum_without_keepdim": _mistake(
        SM, _softmax("return y * (dy - (dy * y).sum(-1))"), "softmax_backward", "no keepdim=True"
    ),
    "sm_full_sum_not_per_row": _mistake(
        SM, _softmax("return y * (dy - (dy * y).sum())"), "softmax_backward", "the dot product is per row"
    ),
    "sm_by_autograd": _mistake(  # the logits back from y, then autograd's J^T dy: right numbers, no formula
        SM,
        _softmax(
            "x = torch.log(y).detach().requires_grad_(True)\n"
            "    return torch.autograd.grad(torch.softmax(x, dim=-1), x, dy)[0]"
        ),
        "softmax_backward",
        "not what may compute it",
    ),
    # cross-entropy
    "ce_sum_not_mean": _mistake(
        CE,
        _cross_entropy(
            "    p = torch.softmax(logits, dim=-1)\n"
            "    return p - F.one_hot(target, logits.shape[-1]).to(logits.dtype)"
        ),
        "cross_entropy_backward",
        "N times too large",
    ),
    "ce_mean_over_every_entry": _mistake(
        CE,
        _cross_entropy(
            "    p = torch.softmax(logits, dim=-1)\n"
            "    return (p - F.one_hot(target, logits.shape[-1]).to(logits.dtype)) / logits.numel()"
        ),
        "cross_entropy_backward",
        "divided by N * C",
    ),
    "ce_sign_flipped": _mistake(
        CE,
        _cross_entropy(
            "    p = torch.softmax(logits, dim=-1)\n"
            "    return (F.one_hot(target, logits.shape[-1]).to(logits.dtype) - p) / logits.shape[0]"
        ),
        "cross_entropy_backward",
        "wrong sign",
    ),
    "ce_onehot_missing": _mistake(
        CE,
        _cross_entropy("    return torch.softmax(logits, dim=-1) / logits.shape[0]"),
        "cross_entropy_backward",
        "is missing",
    ),
    "ce_logits_for_probabilities": _mistake(
        CE,
        _cross_entropy(
            "    return (logits - F.one_hot(target, logits.shape[-1]).to(logits.dtype)) / logits.shape[0]"
        ),
        "cross_entropy_backward",
        "where the probabilities belong",
    ),
    "ce_softmax_over_rows": _mistake(
        CE,
        _cross_entropy(
            "    p = torch.softmax(logits, dim=0)\n"
            "    return (p - F.one_hot(target, logits.shape[-1]).to(logits.dtype)) / logits.shape[0]"
        ),
        "cross_entropy_backward",
        "over the rows",
    ),
    "ce_chain_divides_by_p": _mistake(
        CE,
        _cross_entropy(
            """    # the log's gradient at the target, then the softmax's backward, not multiplied out
    p = torch.softmax(logits, dim=-1)
    rows = torch.arange(len(target))
    dp = torch.zeros_like(p)
    dp[rows, target] = -1 / (p[rows, target] * logits.shape[0])
    return p * (dp - (dp * p).sum(-1, keepdim=True))"""
        ),
        "cross_entropy_backward",
        "underflows to 0",
    ),
    "ce_by_autograd": _mistake(
        CE,
        _cross_entropy(
            """    z = logits.detach().clone().requires_grad_(True)
    F.cross_entropy(z, target).backward()
    return z.grad"""
        ),
        "cross_entropy_backward",
        "not what may compute it",
    ),
    # layer norm
    "ln_mean_term_missing": _mistake(
        LN,
        _layer_norm_backward(dx_line="dx = rstd * (g - x_hat * (g * x_hat).mean(-1, keepdim=True))"),
        "layer_norm_backward",
        "mean term",
    ),
    "ln_variance_term_missing": _mistake(
        LN,
        _layer_norm_backward(dx_line="dx = rstd * (g - g.mean(-1, keepdim=True))"),
        "layer_norm_backward",
        "variance term",
    ),
    "ln_variance_term_sign": _mistake(
        LN,
        _layer_norm_backward(
            dx_line="dx = rstd * (g - g.mean(-1, keepdim=True) + x_hat * (g * x_hat).mean(-1, keepdim=True))"
        ),
        "layer_norm_backward",
        "instead of subtracting",
    ),
    "ln_mean_terms_use_dy": _mistake(
        LN,
        _layer_norm_backward(
            dx_line="dx = rstd * (g - dy.mean(-1, keepdim=True) - x_hat * (dy * x_hat).mean(-1, keepdim=True))"
        ),
        "layer_norm_backward",
        "where they need g",
    ),
    "ln_statistics_constant": _mistake(
        LN, _layer_norm_backward(dx_line="dx = rstd * g"), "layer_norm_backward", "treated as constants"
    ),
    "ln_weight_ignored_in_dx": _mistake(
        LN, _layer_norm_backward(g_line="g = dy"), "layer_norm_backward", "ignores weight"
    ),
    "ln_unbiased_variance": _mistake(
        LN,
        _layer_norm_backward(
            var_line="var = x.var(dim=-1, keepdim=True)",
            dx_line="dx = rstd * (g - g.mean(-1, keepdim=True) - x_hat * (g * x_hat).sum(-1, keepdim=True) "
            "/ (x.shape[-1] - 1))",
        ),
        "layer_norm_backward",
        "unbiased",
    ),
    # x.var's default is the unbiased variance; the backward's means divide by d as they should
    "ln_unbiased_variance_only": _mistake(
        LN,
        _layer_norm_backward(var_line="var = x.var(dim=-1, keepdim=True)"),
        "layer_norm_backward",
        "unbiased=False",
    ),
    "ln_eps_outside_sqrt": _mistake(
        LN,
        _layer_norm_backward(rstd_line="rstd = 1 / (var.sqrt() + eps)"),
        "layer_norm_backward",
        "outside the sqrt",
    ),
    "ln_eps_ignored": _mistake(
        LN, _layer_norm_backward(rstd_line="rstd = torch.rsqrt(var)"), "layer_norm_backward", "eps is ignored"
    ),
    "ln_dweight_not_reduced": _mistake(
        LN,
        _layer_norm_backward(return_line="return dx, dy * x_hat, flat(dy).sum(0)"),
        "layer_norm_backward",
        "dweight is not reduced",
    ),
    "ln_dweight_first_dim_only": _mistake(
        LN,
        _layer_norm_backward(return_line="return dx, (dy * x_hat).sum(0), dy.sum(0)"),
        "layer_norm_backward",
        "first dim only",
    ),
    "ln_dweight_over_features": _mistake(
        LN,
        _layer_norm_backward(return_line="return dx, (dy * x_hat).sum(-1), flat(dy).sum(0)"),
        "layer_norm_backward",
        "wrong dim",
    ),
    "ln_dweight_averaged": _mistake(
        LN,
        _layer_norm_backward(return_line="return dx, flat(dy * x_hat).mean(0), flat(dy).sum(0)"),
        "layer_norm_backward",
        "averaged",
    ),
    "ln_dweight_uses_x": _mistake(
        LN,
        _layer_norm_backward(return_line="return dx, flat(dy * x).sum(0), flat(dy).sum(0)"),
        "layer_norm_backward",
        "instead of x_hat",
    ),
    "ln_sum_over_empty_dims": _mistake(
        LN,
        _layer_norm_backward(
            return_line="lead = tuple(range(x.dim() - 1))\n"
            "    return dx, (dy * x_hat).sum(dim=lead), dy.sum(dim=lead)"
        ),
        "layer_norm_backward",
        "empty tuple",
    ),
    "ln_dbias_not_reduced": _mistake(
        LN,
        _layer_norm_backward(return_line="return dx, flat(dy * x_hat).sum(0), dy"),
        "layer_norm_backward",
        "dbias is not reduced",
    ),
    "ln_by_autograd": _mistake(
        LN,
        """
def layer_norm_backward(dy, x, weight, eps=1e-5):
    x_, w_ = x.detach().requires_grad_(True), weight.detach().requires_grad_(True)
    b_ = torch.zeros_like(weight, requires_grad=True)
    y = F.layer_norm(x_, x.shape[-1:], w_, b_, eps)
    return torch.autograd.grad(y, (x_, w_, b_), dy)
""",
        "layer_norm_backward",
        "not what may compute it",
    ),
    # attention
    "attn_scale_missing_in_backward": _mistake(
        AT,
        _attention_backward(dq_line="dq = ds @ k", dk_line="dk = ds.transpose(-2, -1) @ q"),
        "attention_backward",
        "miss the scale",
    ),
    "attn_scale_ignored": _mistake(
        AT, _attention_backward(scale_line="scale = 1.0"), "attention_backward", "without the scale"
    ),
    "attn_p_without_scale": _mistake(
        AT,
        _attention_backward().replace(
            "scores = q @ k.transpose(-2, -1) * scale", "scores = q @ k.transpose(-2, -1)"
        ),
        "attention_backward",
        "though dq and dk have it",
    ),
    "attn_scale_by_d_k": _mistake(
        AT, _attention_backward(scale_line="scale = 1 / q.shape[-1]"), "attention_backward", "divided by d_k"
    ),
    "attn_mask_ignored": _mistake(
        AT, _attention_backward(mask_line="pass"), "attention_backward", "mask is ignored"
    ),
    "attn_mask_inverted": _mistake(
        AT,
        _attention_backward(mask_line="scores = scores.masked_fill(mask, float('-inf'))"),
        "attention_backward",
        "polarity",
    ),
    "attn_dead_row_nan": _mistake(
        AT, _attention_backward(p_line="p = torch.softmax(scores, dim=-1)"), "attention_backward", "NaN"
    ),
    "attn_softmax_diagonal_only": _mistake(
        AT, _attention_backward(ds_line="ds = p * dp"), "attention_backward", "diagonal term"
    ),
    "attn_dk_without_transpose": _mistake(
        AT, _attention_backward(dk_line="dk = ds @ q * scale"), "attention_backward", "without the transpose"
    ),
    "attn_by_autograd": _mistake(  # enable_grad does not help: the check calls it in inference mode
        AT,
        """
def attention_backward(d_out, q, k, v, mask=None):
    with torch.enable_grad():
        q_, k_, v_ = (t.detach().requires_grad_(True) for t in (q, k, v))
        scores = q_ @ k_.transpose(-2, -1) / math.sqrt(q.shape[-1])
        if mask is not None:
            scores = scores.masked_fill(~mask, float("-inf"))
        p = torch.nan_to_num(torch.softmax(scores, dim=-1), nan=0.0)
        return torch.autograd.grad(p @ v_, (q_, k_, v_), d_out)
""",
        "attention_backward",
        "not what may compute it",
    ),
    # the custom Function
    "fn_saves_the_whole_graph": _mistake(
        FN,
        _function(
            """        with torch.enable_grad():
            leaves = [t.detach().requires_grad_(True) for t in (x, weight, bias)]
            y = layer_norm(*leaves, eps)
        ctx.graph = (y, leaves)
        return y.detach()""",
            """        y, leaves = ctx.graph
        return (*torch.autograd.grad(y, leaves, dy), None)""",
        ),
        "LayerNormFunction",
        "saves the whole graph",
    ),
    "fn_saves_graph_for_backward": _mistake(
        FN,
        _function(
            """        with torch.enable_grad():
            x_ = x.detach().requires_grad_(True)
            w_ = weight.detach().requires_grad_(True)
            b_ = bias.detach().requires_grad_(True)
            y = layer_norm(x_, w_, b_, eps)
        ctx.save_for_backward(x_, w_, b_, y)
        return y.detach()""",
            """        x_, w_, b_, y = ctx.saved_tensors
        return (*torch.autograd.grad(y, (x_, w_, b_), dy), None)""",
        ),
        "LayerNormFunction",
        "saves the whole graph",
    ),
    "fn_saves_intermediates": _mistake(
        FN,
        _function(
            """        mean = x.mean(-1, keepdim=True)
        xc = x - mean
        var = xc.pow(2).mean(-1, keepdim=True)
        std = torch.sqrt(var + eps)
        x_hat = xc / std
        ctx.save_for_backward(x, weight, mean, xc, var, std, x_hat)
        ctx.eps = eps
        return x_hat * weight + bias""",
            """        x, weight = ctx.saved_tensors[:2]
        dx, dweight, dbias = layer_norm_backward(dy, x, weight, ctx.eps)
        return dx, dweight, dbias, None""",
        ),
        "LayerNormFunction",
        "intermediates it does not need",
    ),
    "fn_saves_nothing": _mistake(
        FN,
        _function(
            """        ctx.eps = eps
        return layer_norm(x, weight, bias, eps)""",
            BACKWARD_OK,
        ),
        "LayerNormFunction",
        "saves nothing",
    ),
    "fn_tensors_on_ctx": _mistake(
        FN,
        _function(
            """        ctx.x, ctx.weight, ctx.eps = x, weight, eps
        return layer_norm(x, weight, bias, eps)""",
            """        dx, dweight, dbias = layer_norm_backward(dy, ctx.x, ctx.weight, ctx.eps)
        return dx, dweight, dbias, None""",
        ),
        "LayerNormFunction",
        "not ctx.x = x",
    ),
    "fn_three_gradients": _mistake(
        FN,
        _function(
            FORWARD_OK, BACKWARD_OK.replace("return dx, dweight, dbias, None", "return dx, dweight, dbias")
        ),
        "LayerNormFunction",
        "None for eps",
    ),
    "fn_eps_not_passed_on": _mistake(
        FN,
        _function(
            FORWARD_OK,
            BACKWARD_OK.replace(
                "layer_norm_backward(dy, x, weight, ctx.eps)", "layer_norm_backward(dy, x, weight)"
            ),
        ),
        "LayerNormFunction",
        "eps passed in is not used",
    ),
    "fn_global_instead_of_ctx": _mistake(
        FN,
        _function(
            """        global _cache
        _cache = (x, weight, eps)
        return layer_norm(x, weight, bias, eps)""",
            """        x, weight, eps = _cache
        dx, dweight, dbias = layer_norm_backward(dy, x, weight, eps)
        return dx, dweight, dbias, None""",
        ),
        "LayerNormFunction",
        "not from a global",
    ),
    "fn_backward_by_autograd": _mistake(  # saves only x and weight, then autograd inside backward
        FN,
        _function(
            FORWARD_OK,
            """        x, weight = ctx.saved_tensors
        with torch.enable_grad():
            x_ = x.detach().requires_grad_(True)
            w_ = weight.detach().requires_grad_(True)
            b_ = torch.zeros_like(w_, requires_grad=True)
            y = layer_norm(x_, w_, b_, ctx.eps)
            dx, dweight, dbias = torch.autograd.grad(y, (x_, w_, b_), dy)
        return dx, dweight, dbias, None""",
        ),
        "LayerNormFunction",
        "autograd calls your backward",
    ),
}

ALTERNATIVES = {
    "cross_entropy_in_place": {
        CE: _cross_entropy(
            """    grad = torch.softmax(logits, dim=-1)                 # a new tensor: logits stay as they are
    grad[torch.arange(logits.shape[0]), target] -= 1
    return grad / logits.shape[0]"""
        ),
    },
    "cross_entropy_scatter": {
        CE: _cross_entropy(
            """    p = torch.exp(torch.log_softmax(logits, dim=-1))
    minus_one = -torch.ones(target.shape[0], 1, dtype=logits.dtype)
    return p.scatter_add(-1, target[:, None], minus_one).div(len(target))"""
        ),
    },
    "einsum": {
        SM: """
def softmax_backward(dy, y):
    dot = torch.einsum("...i,...i->...", dy, y)          # (...,)
    return y * (dy - dot.unsqueeze(-1))
""",
        AT: """
def attention_backward(d_out, q, k, v, mask=None):
    scores = torch.einsum("...qd,...kd->...qk", q / math.sqrt(q.shape[-1]), k)
    if mask is not None:
        scores = torch.where(mask, scores, torch.tensor(float("-inf"), dtype=scores.dtype))
    p = torch.softmax(scores, dim=-1)
    p = torch.where(torch.isnan(p), torch.zeros_like(p), p)
    dv = torch.einsum("...qk,...qd->...kd", p, d_out)
    dp = torch.einsum("...qd,...kd->...qk", d_out, v)
    ds = p * (dp - torch.einsum("...qk,...qk->...q", dp, p)[..., None])
    ds = ds / math.sqrt(q.shape[-1])
    return torch.einsum("...qk,...kd->...qd", ds, k), torch.einsum("...qk,...qd->...kd", ds, q), dv
""",
    },
    "explicit_jacobian": {
        SM: """
def softmax_backward(dy, y):
    # J[..., j, i] = dy_j / dx_i = y_j (delta_ij - y_i); fine for the small sizes of this lesson
    J = torch.diag_embed(y) - y.unsqueeze(-1) * y.unsqueeze(-2)   # (..., n, n)
    return (J.transpose(-1, -2) @ dy.unsqueeze(-1)).squeeze(-1)
""",
        LN: """
def layer_norm_backward(dy, x, weight, eps=1e-5):
    d = x.shape[-1]
    mean = x.mean(-1, keepdim=True)
    rstd = 1 / torch.sqrt(((x - mean) ** 2).mean(-1, keepdim=True) + eps)
    x_hat = (x - mean) * rstd
    eye = torch.eye(d, dtype=x.dtype, device=x.device)
    # J[..., j, i] = d x_hat_j / d x_i = rstd (delta_ij - 1/d - x_hat_i x_hat_j / d)
    J = rstd.unsqueeze(-1) * (eye - 1 / d - x_hat.unsqueeze(-1) * x_hat.unsqueeze(-2) / d)
    dx = (J.transpose(-1, -2) @ (dy * weight).unsqueeze(-1)).squeeze(-1)
    flat = lambda t: t.reshape(-1, d)
    return dx, (flat(dy) * flat(x_hat)).sum(0), flat(dy).sum(0)
""",
    },
    "staged_cs231n_layer_norm": {
        LN: """
def layer_norm_backward(dy, x, weight, eps=1e-5):
    # backprop through the forward graph one node at a time (mean, variance, normalise)
    n = x.shape[-1]
    mu = x.mean(-1, keepdim=True)
    xmu = x - mu
    var = (xmu ** 2).mean(-1, keepdim=True)
    ivar = 1.0 / torch.sqrt(var + eps)
    x_hat = xmu * ivar
    dxhat = dy * weight
    dvar = (dxhat * xmu).sum(-1, keepdim=True) * -0.5 * ivar ** 3
    dmu = -(dxhat * ivar).sum(-1, keepdim=True) + dvar * (-2.0 * xmu).mean(-1, keepdim=True)
    dx = dxhat * ivar + dvar * 2.0 * xmu / n + dmu / n
    return dx, (dy * x_hat).reshape(-1, n).sum(0), dy.reshape(-1, n).sum(0)
""",
        FN: _function(
            """        mean = x.mean(-1, keepdim=True)
        rstd = torch.rsqrt(x.var(-1, unbiased=False, keepdim=True) + eps)
        x_hat = (x - mean) * rstd
        ctx.save_for_backward(x_hat, rstd, weight)      # one x-sized tensor, as before
        return x_hat * weight + bias""",
            """        x_hat, rstd, weight = ctx.saved_tensors
        g = dy * weight
        d = x_hat.shape[-1]
        dx = rstd / d * (d * g - g.sum(-1, keepdim=True) - x_hat * (g * x_hat).sum(-1, keepdim=True))
        flat = lambda t: t.reshape(-1, d)
        return dx, (flat(dy) * flat(x_hat)).sum(0), flat(dy).sum(0), None""",
        ),
    },
    "projection_form": {
        LN: """
def layer_norm_backward(dy, x, weight, eps=1e-5):
    # dx = rstd * P g with P projecting out the directions 1 and x_hat
    var, mean = torch.var_mean(x, dim=-1, correction=0, keepdim=True)
    rstd = (var + eps) ** -0.5
    x_hat = (x - mean) * rstd
    g = dy * weight
    g = g - g.mean(-1, keepdim=True)
    dx = rstd * (g - x_hat * (g * x_hat).mean(-1, keepdim=True))
    return dx, (dy * x_hat).sum_to_size(weight.shape), dy.sum_to_size(weight.shape)
""",
        FN: _function(
            """        ctx.eps = eps
        ctx.save_for_backward(x, weight)
        return F.layer_norm(x, x.shape[-1:], weight, bias, eps)""",
            """        x, weight = ctx.saved_tensors
        grads = layer_norm_backward(dy, x, weight, eps=ctx.eps)
        return grads + (None,)""",
        ),
    },
    "prints_and_warns": {
        SM: "import warnings, sys\n"
        + SOFTMAX_OK.replace(
            "    return",
            "    print('softmax_backward on', tuple(y.shape))\n    warnings.warn('just a warning')\n"
            "    print('to stderr', file=sys.stderr)\n    return",
        ),
        AT: ATTENTION_OK.replace(
            "    return dq, dk, dv", "    print('dq', dq.shape, 'dk', dk.shape)\n    return dq, dk, dv"
        ),
        FN: FUNCTION_OK.replace(
            "        x, weight = ctx.saved_tensors",
            "        print('backward of LayerNormFunction')\n        x, weight = ctx.saved_tensors",
        ),
    },
}

# The example class. A student missing here does not submit this lesson.
STUDENTS = {
    "alice_perfect": ALL_OK,
    "bob_blank": {},
    "carol_partial": {"softmax_backward_answer": SOFTMAX_OK, "layer_norm_backward_answer": LAYER_NORM_OK},
    "dave_softmax_diagonal": {**ALL_OK, **MISTAKES["sm_diagonal_term_only"]["cells"]},
    "erin_saves_graph": {
        **ALL_OK,
        **MISTAKES["fn_saves_the_whole_graph"]["cells"],
        **MISTAKES["attn_scale_missing_in_backward"]["cells"],
    },
}

MAX = {
    "softmax_backward": 2,
    "cross_entropy_backward": 2,
    "layer_norm_backward": 3,
    "attention_backward": 3,
    "LayerNormFunction": 2,
}
EXPECTED = {
    "alice_perfect": dict(MAX),
    "bob_blank": {q: 0 for q in MAX},
    "carol_partial": {**{q: 0 for q in MAX}, "softmax_backward": 2, "layer_norm_backward": 3},
    # attention_backward calls the student's softmax_backward: a wrong one is replaced by the reference
    "dave_softmax_diagonal": {**MAX, "softmax_backward": 0, "attention_backward": 3},
    "erin_saves_graph": {**MAX, "LayerNormFunction": 0, "attention_backward": 0},
}
