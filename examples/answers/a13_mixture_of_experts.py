"""Example answers for lesson 13_mixture_of_experts: the classic mistakes of the router (no renormalisation,
renormalising when normalize=False, ties toward the higher index, the softmax after the top-k, the
experts by index, the softmax over the tokens), of dispatch (every expert on every token, a tokens x
experts x d_model buffer, one call per token, no weight, the weight inside the expert, normalize not
passed on), of capacity (floor or round instead of ceil, k left out, the last tokens or the largest
weights kept, off by one either way), of the losses (f from probabilities, counts, divided by T, no
E, detached; z-loss without the square, with a sum, the square of the mean, the wrong dim, the
overflow), and correct answers written differently. Keys are answer-cell ids."""

ROUTE, MOE, CAP, LOSS = (
    "route_answer",
    "moe_forward_answer",
    "expert_capacity_answer",
    "load_balancing_loss_answer",
)


def _route(
    probs_line="probs = torch.softmax(x @ w_gate, dim=-1)",
    pick_line="top = torch.sort(probs, dim=-1, descending=True, stable=True)",
    experts_line="experts = top.indices[:, :k]",
    weights_line="weights = probs.gather(-1, experts)",
    renorm_cond="normalize",
):
    return f"""
def route(x, w_gate, k, normalize=True):
    {probs_line}
    {pick_line}
    {experts_line}
    {weights_line}
    if {renorm_cond}:
        weights = weights / weights.sum(dim=-1, keepdim=True)
    return weights, experts
"""


ROUTE_OK = _route()

MOE_OK = """
def moe_forward(x, w_gate, experts, k, normalize=True):
    weights, chosen = route(x, w_gate, k, normalize)
    flat = chosen.reshape(-1)
    order = torch.argsort(flat, stable=True)
    counts = torch.bincount(flat, minlength=len(experts)).tolist()
    y = torch.zeros_like(x)
    for e, idx in enumerate(order.split(counts)):
        if len(idx) == 0:
            continue
        tokens = idx // k
        y.index_add_(0, tokens, experts[e](x[tokens]) * weights.reshape(-1)[idx, None])
    return y
"""


def _capacity(
    cap_line="return math.ceil(capacity_factor * k * n_tokens / n_experts)",
    seen_line="seen_before = one_hot.cumsum(dim=0) - one_hot",
    keep_line="return (position < capacity).reshape(experts.shape)",
    order_lines="",
):
    return f"""
def expert_capacity(n_tokens, n_experts, k, capacity_factor):
    {cap_line}


def capacity_keep(weights, experts, n_experts, capacity):
    {order_lines}one_hot = F.one_hot(experts.reshape(-1), n_experts)
    {seen_line}
    position = (seen_before * one_hot).sum(dim=-1)
    {keep_line}
"""


CAP_OK = _capacity()


def _losses(
    f_line="f = torch.bincount(experts.reshape(-1), minlength=n_experts).to(router_probs.dtype) / experts.numel()",
    p_line="P = router_probs.mean(dim=0)",
    return_line="return n_experts * (f * P).sum()",
    z_line="return torch.logsumexp(logits, dim=-1).pow(2).mean()",
):
    return f"""
def load_balancing_loss(router_probs, experts, n_experts):
    {f_line}
    {p_line}
    {return_line}


def router_z_loss(logits):
    {z_line}
"""


LOSS_OK = _losses()

ALL_OK = {ROUTE: ROUTE_OK, MOE: MOE_OK, CAP: CAP_OK, LOSS: LOSS_OK}

REVERSED = """flip = torch.arange(experts.numel() - 1, -1, -1)
    experts = experts.reshape(-1)[flip].reshape(experts.shape)
    """


def _mistake(cell, code, question, hint):
    return dict(cells={cell: code}, question=question, hint=hint)


MISTAKES = {
    "route_no_renormalisation": _mistake(ROUTE, _route(renorm_cond="False"), "route", "not renormalised"),
    "route_renormalises_always": _mistake(
        ROUTE, _route(renorm_cond="True"), "route", "although normalize=False"
    ),
    "route_ties_to_higher_index": _mistake(
        ROUTE,
        _route(
            pick_line="top = torch.sort(probs.flip(-1), dim=-1, descending=True, stable=True)",
            experts_line="experts = probs.shape[-1] - 1 - top.indices[:, :k]",
        ),
        "route",
        "higher expert index",
    ),
    "route_topk_any_order_of_ties": _mistake(
        ROUTE,
        _route(pick_line="top = torch.topk(probs, k, dim=-1)", experts_line="experts = top.indices"),
        "route",
        "right up to ties",
    ),
    "route_softmax_after_topk": _mistake(
        ROUTE,
        _route(
            probs_line="logits = x @ w_gate; probs = logits",
            weights_line="weights = torch.softmax(logits.gather(-1, experts), dim=-1)",
            renorm_cond="False",
        ),
        "route",
        "after the top-k",
    ),
    "route_returns_experts_first": _mistake(
        ROUTE, ROUTE_OK.replace("return weights, experts", "return experts, weights"), "route", "other order"
    ),
    "route_experts_by_index": _mistake(
        ROUTE,
        _route(experts_line="experts = top.indices[:, :k].sort(dim=-1).values"),
        "route",
        "listed by index",
    ),
    "route_softmax_over_tokens": _mistake(
        ROUTE, _route(probs_line="probs = torch.softmax(x @ w_gate, dim=0)"), "route", "over the tokens"
    ),
    "moe_every_expert_every_token": _mistake(
        MOE,
        """
def moe_forward(x, w_gate, experts, k, normalize=True):
    weights, chosen = route(x, w_gate, k, normalize)
    y = torch.zeros_like(x)
    for e, expert in enumerate(experts):
        w = (weights * (chosen == e)).sum(dim=-1, keepdim=True)   # 0 for tokens not routed to e
        y = y + w * expert(x)
    return y
""",
        "moe_forward",
        "every expert on every token",
    ),
    "moe_tokens_experts_dmodel_buffer": _mistake(
        MOE,
        """
def moe_forward(x, w_gate, experts, k, normalize=True):
    weights, chosen = route(x, w_gate, k, normalize)
    buffer = x.new_zeros(x.shape[0], len(experts), x.shape[1])   # (T, E, d)
    for e, expert in enumerate(experts):
        tokens, slot = torch.where(chosen == e)
        if len(tokens):
            buffer[tokens, e] = weights[tokens, slot, None] * expert(x[tokens])
    return buffer.sum(dim=1)
""",
        "moe_forward",
        "tokens x experts x d_model",
    ),
    "moe_one_call_per_token": _mistake(
        MOE,
        """
def moe_forward(x, w_gate, experts, k, normalize=True):
    weights, chosen = route(x, w_gate, k, normalize)
    rows = []
    for t in range(x.shape[0]):
        rows.append(sum(weights[t, j] * experts[int(chosen[t, j])](x[t:t + 1])[0] for j in range(k)))
    return torch.stack(rows)
""",
        "moe_forward",
        "more than once",
    ),
    "moe_outputs_not_weighted": _mistake(
        MOE, MOE_OK.replace(" * weights.reshape(-1)[idx, None]", ""), "moe_forward", "not weighted"
    ),
    "moe_weight_inside_expert": _mistake(
        MOE,
        MOE_OK.replace(
            "experts[e](x[tokens]) * weights.reshape(-1)[idx, None]",
            "experts[e](x[tokens] * weights.reshape(-1)[idx, None])",
        ),
        "moe_forward",
        "multiplies the expert's input",
    ),
    "moe_normalize_not_passed_on": _mistake(
        MOE,
        MOE_OK.replace("route(x, w_gate, k, normalize)", "route(x, w_gate, k)"),
        "moe_forward",
        "pass normalize on",
    ),
    "capacity_floor": _mistake(
        CAP,
        _capacity(cap_line="return math.floor(capacity_factor * k * n_tokens / n_experts)"),
        "expert_capacity",
        "rounded down",
    ),
    "capacity_round": _mistake(
        CAP,
        _capacity(cap_line="return round(capacity_factor * k * n_tokens / n_experts)"),
        "expert_capacity",
        "rounded down",
    ),
    "capacity_without_k": _mistake(
        CAP,
        _capacity(cap_line="return math.ceil(capacity_factor * n_tokens / n_experts)"),
        "expert_capacity",
        "k is missing",
    ),
    "keep_drops_the_first_tokens": _mistake(
        CAP,
        _capacity(
            order_lines=REVERSED,
            keep_line="return (position < capacity)[flip].reshape(experts.shape)",
        ),
        "capacity_keep",
        "last tokens",
    ),
    "keep_largest_weights": _mistake(
        CAP,
        _capacity(
            order_lines="""by_weight = torch.argsort(-weights.reshape(-1), stable=True)
    experts = experts.reshape(-1)[by_weight]
    """,
            keep_line="kept = torch.empty_like(position, dtype=torch.bool); kept[by_weight] = position < capacity; "
            "return kept.reshape(weights.shape)",
        ),
        "capacity_keep",
        "largest weights",
    ),
    "keep_capacity_plus_one": _mistake(
        CAP,
        _capacity(keep_line="return (position <= capacity).reshape(experts.shape)"),
        "capacity_keep",
        "capacity + 1",
    ),
    "keep_counts_itself": _mistake(
        CAP, _capacity(seen_line="seen_before = one_hot.cumsum(dim=0)"), "capacity_keep", "capacity - 1"
    ),
    "balance_f_from_probabilities": _mistake(
        LOSS, _losses(f_line="f = router_probs.mean(dim=0)"), "load_balancing_loss", "mean probabilities"
    ),
    "balance_counts_not_fractions": _mistake(
        LOSS,
        _losses(f_line="f = torch.bincount(experts.reshape(-1), minlength=n_experts).to(router_probs.dtype)"),
        "load_balancing_loss",
        "are counts",
    ),
    "balance_divided_by_tokens": _mistake(
        LOSS,
        _losses(
            f_line="f = torch.bincount(experts.reshape(-1), minlength=n_experts).to(router_probs.dtype) / experts.shape[0]"
        ),
        "load_balancing_loss",
        "divided by T",
    ),
    "balance_without_E": _mistake(
        LOSS, _losses(return_line="return (f * P).sum()"), "load_balancing_loss", "factor E"
    ),
    "balance_detached": _mistake(
        LOSS, _losses(p_line="P = router_probs.detach().mean(dim=0)"), "load_balancing_loss", "no gradient"
    ),
    "z_loss_without_square": _mistake(
        LOSS,
        _losses(z_line="return torch.logsumexp(logits, dim=-1).mean()"),
        "router_z_loss",
        "square is missing",
    ),
    "z_loss_sum": _mistake(
        LOSS,
        _losses(z_line="return torch.logsumexp(logits, dim=-1).pow(2).sum()"),
        "router_z_loss",
        "sum over the tokens",
    ),
    "z_loss_square_of_mean": _mistake(
        LOSS,
        _losses(z_line="return torch.logsumexp(logits, dim=-1).mean() ** 2"),
        "router_z_loss",
        "squares the mean",
    ),
    "z_loss_naive_logsumexp": _mistake(
        LOSS,
        _losses(z_line="return torch.log(torch.exp(logits).sum(dim=-1)).pow(2).mean()"),
        "router_z_loss",
        "overflows",
    ),
    # From the student trial (student_trial/RESULTS.md): answers that passed or got a wrong hint.
    "route_argsort_not_stable": _mistake(
        ROUTE,
        _route(
            pick_line="order = torch.argsort(probs, dim=-1, descending=True)",
            experts_line="experts = order[:, :k]",
        ),
        "route",
        "right up to ties",
    ),
    "route_renormalises_with_epsilon": _mistake(
        ROUTE,
        ROUTE_OK.replace("weights.sum(dim=-1, keepdim=True)", "(weights.sum(dim=-1, keepdim=True) + 1e-6)"),
        "route",
        "divided by their sum over the k",
    ),
    "route_centres_x_in_place": _mistake(
        ROUTE,
        _route(probs_line="x -= x.mean(dim=-1, keepdim=True); probs = torch.softmax(x @ w_gate, dim=-1)"),
        "route",
        "modified its input x",
    ),
    "capacity_clamped_to_tokens": _mistake(
        CAP,
        _capacity(cap_line="return min(math.ceil(capacity_factor * k * n_tokens / n_experts), n_tokens)"),
        "expert_capacity",
        "ceil(capacity_factor * k * n_tokens / n_experts)",
    ),
    "balance_clamps_probs_in_place": _mistake(
        LOSS,
        _losses(p_line="router_probs.data.clamp_(min=1e-9); P = router_probs.mean(dim=0)"),
        "load_balancing_loss",
        "modified its input router_probs",
    ),
    # Issue 54's list, beside the student trial's (drafts/13_mixture_of_experts/student_trial)
    "route_logits_as_weights": _mistake(
        ROUTE,
        _route(
            probs_line="probs = x @ w_gate",
        ),
        "route",
        "softmax probabilities",
    ),
    "route_experts_int32": _mistake(
        ROUTE, _route(experts_line="experts = top.indices[:, :k].to(torch.int32)"), "route", "long"
    ),
    "route_in_float32": _mistake(
        ROUTE,
        _route(probs_line="probs = torch.softmax(x.float() @ w_gate.float(), dim=-1)"),
        "route",
        "keep the input dtype",
    ),
    "moe_output_in_float32": _mistake(
        MOE,
        MOE_OK.replace("y = torch.zeros_like(x)", "y = torch.zeros(x.shape[0], x.shape[1])").replace(
            "y.index_add_(0, tokens, experts[e](x[tokens]) * weights.reshape(-1)[idx, None])",
            "y.index_add_(0, tokens, (experts[e](x[tokens]) * weights.reshape(-1)[idx, None]).to(y.dtype))",
        ),
        "moe_forward",
        "keep the input dtype",
    ),
    "keep_capacity_per_batch": _mistake(
        CAP,
        _capacity(
            seen_line="seen_before = torch.arange(one_hot.shape[0])[:, None].expand_as(one_hot)",
        ),
        "capacity_keep",
        "tokens before t chose expert",
    ),
    "keep_slot_major_order": _mistake(
        CAP,
        _capacity(
            order_lines="experts = experts.t()\n    ",
            keep_line="return (position < capacity).reshape(experts.shape).t()",
        ),
        "capacity_keep",
        "tokens before t chose expert",
    ),
    "balance_first_slot_only": _mistake(
        LOSS,
        _losses(
            f_line="f = torch.bincount(experts[:, 0], minlength=n_experts).to(router_probs.dtype) / experts.shape[0]"
        ),
        "load_balancing_loss",
        "E * sum_i f_i * P_i",
    ),
    "z_loss_max_instead_of_logsumexp": _mistake(
        LOSS,
        _losses(z_line="return logits.amax(dim=-1).pow(2).mean()"),
        "router_z_loss",
        "logsumexp(logits, dim=-1) ** 2",
    ),
}

ALTERNATIVES = {
    "balance_bincount_without_minlength_cut_p": {
        LOSS: _losses(
            f_line="f = torch.bincount(experts.reshape(-1)).to(router_probs.dtype) / experts.numel()",
            p_line="P = router_probs.mean(dim=0)[: len(f)]  # the idle trailing experts have f = 0",
        )
    },
    "route_per_token_sorted_key": {
        ROUTE: """
def route(x, w_gate, k, normalize=True):
    probs = torch.softmax(x @ w_gate, dim=-1)
    experts = torch.empty(probs.shape[0], k, dtype=torch.long)
    for t, row in enumerate(probs.tolist()):
        experts[t] = torch.tensor(sorted(range(len(row)), key=lambda i: (-row[i], i))[:k])
    weights = probs.gather(1, experts)
    if normalize:
        weights = weights / weights.sum(-1, keepdim=True)
    return weights, experts
"""
    },
    "route_topk_of_logits_then_softmax_all": {
        ROUTE: """
def route(x, w_gate, k, normalize=True):
    logits = torch.einsum("td,de->te", x, w_gate)
    probs = logits.softmax(-1)
    order = torch.argsort(-probs, dim=-1, stable=True)[:, :k]   # stable: ties keep the lower index
    weights = torch.gather(probs, 1, order)
    return (weights / weights.sum(-1, keepdim=True) if normalize else weights), order
"""
    },
    "moe_where_per_expert": {
        MOE: """
def moe_forward(x, w_gate, experts, k, normalize=True):
    weights, chosen = route(x, w_gate, k, normalize)
    y = torch.zeros_like(x)
    for e, expert in enumerate(experts):
        tokens, slot = torch.where(chosen == e)
        if tokens.numel() == 0:
            continue
        y[tokens] += weights[tokens, slot].unsqueeze(-1) * expert(x[tokens])
    return y
"""
    },
    "capacity_python_loop": {
        CAP: """
def expert_capacity(n_tokens, n_experts, k, capacity_factor):
    return int(-(-(capacity_factor * k * n_tokens) // n_experts))


def capacity_keep(weights, experts, n_experts, capacity):
    used = [0] * n_experts
    kept = torch.zeros(experts.shape, dtype=torch.bool)
    for t in range(experts.shape[0]):
        for j in range(experts.shape[1]):
            e = int(experts[t, j])
            kept[t, j] = used[e] < capacity
            used[e] += 1
    return kept.to(experts.device)
"""
    },
    "losses_one_hot_and_manual_max": {
        LOSS: """
def load_balancing_loss(router_probs, experts, n_experts):
    f = F.one_hot(experts, n_experts).to(router_probs.dtype).mean(dim=(0, 1))
    return n_experts * torch.dot(f, router_probs.mean(0))


def router_z_loss(logits):
    m = logits.amax(dim=-1, keepdim=True)
    lse = (logits - m).exp().sum(-1).log() + m.squeeze(-1)
    return (lse * lse).mean()
"""
    },
}

STUDENTS = {
    "alice_perfect": dict(ALL_OK),
    "bob_blank": {},
    "carol_dense_dispatch": {**ALL_OK, **MISTAKES["moe_every_expert_every_token"]["cells"]},
    "dave_floor": {
        **ALL_OK,
        **MISTAKES["capacity_floor"]["cells"],
        **MISTAKES["route_ties_to_higher_index"]["cells"],
    },
}

MAX = {
    "route": 2,
    "moe_forward": 3,
    "expert_capacity": 1,
    "capacity_keep": 2,
    "load_balancing_loss": 2,
    "router_z_loss": 1,
}
EXPECTED = {
    "alice_perfect": dict(MAX),
    "bob_blank": {q: 0 for q in MAX},
    "carol_dense_dispatch": {**MAX, "moe_forward": 0},
    # dave's route breaks ties toward the higher index; moe_forward's real-valued inputs have no ties
    "dave_floor": {**MAX, "route": 0, "expert_capacity": 0},
}
