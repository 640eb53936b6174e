"""Example answers for lesson 12_training: the example class, the classic mistakes of the training
loop (cross-entropy through softmax then log, the max not added back, a sum for the mean; Adam's
bias correction missing, swapped or on one moment only; weight decay added to the gradient, applied
after the update or not scaled by the learning rate; the learning rate read once; the schedule one
step off at the warm-up boundary, decaying to 0, or not held at its floor; clipping per parameter,
or always; a generator read twice; windows that overrun the array, targets not shifted, x and y
from different windows, the generator ignored; a checkpoint without the optimizer or the
iteration), and correct answers written differently. Keys are answer-cell ids."""

CE, ADAM, SCHED, CLIP, BATCH, CKPT = (
    "cross_entropy_answer",
    "AdamW_answer",
    "lr_cosine_schedule_answer",
    "clip_grad_norm__answer",
    "get_batch_answer",
    "checkpoint_answer",
)


def _ce(body):
    return f"""
def cross_entropy(logits, targets):
{body}
"""


CE_OK = _ce(
    """    m = logits.amax(dim=-1, keepdim=True)
    shifted = logits - m
    lse = shifted.exp().sum(dim=-1).log()
    picked = shifted.gather(-1, targets.unsqueeze(-1)).squeeze(-1)
    return (lse - picked).mean()"""
)


def _adamw(
    decay_before="p.mul_(1 - lr * wd)",
    grad_line="g = p.grad",
    m_hat="state['exp_avg'] / (1 - beta1 ** t)",
    v_hat="state['exp_avg_sq'] / (1 - beta2 ** t)",
    decay_after="",
    lr_line='lr = group["lr"]',
    skip="if p.grad is None:\n                    continue",
):
    return f"""
class AdamW(torch.optim.Optimizer):
    def __init__(self, params, lr=1e-3, betas=(0.9, 0.999), eps=1e-8, weight_decay=0.01):
        super().__init__(params, dict(lr=lr, betas=betas, eps=eps, weight_decay=weight_decay))

    @torch.no_grad()
    def step(self, closure=None):
        loss = None
        if closure is not None:
            with torch.enable_grad():
                loss = closure()
        for group in self.param_groups:
            {lr_line}
            beta1, beta2 = group["betas"]
            eps, wd = group["eps"], group["weight_decay"]
            for p in group["params"]:
                {skip}
                state = self.state[p]
                if not state:
                    state["step"] = 0
                    state["exp_avg"] = torch.zeros_like(p)
                    state["exp_avg_sq"] = torch.zeros_like(p)
                state["step"] += 1
                t = state["step"]
                {grad_line}
                {decay_before}
                state["exp_avg"].mul_(beta1).add_(g, alpha=1 - beta1)
                state["exp_avg_sq"].mul_(beta2).addcmul_(g, g, value=1 - beta2)
                m_hat = {m_hat}
                v_hat = {v_hat}
                p.sub_(lr * m_hat / (v_hat.sqrt() + eps))
                {decay_after}
        return loss
"""


ADAMW_OK = _adamw()

# a frozen parameter: no gradient, but this one is still decayed
_NO_SKIP = "if p.grad is None:\n                    p.mul_(1 - lr * wd)\n                    continue"


def _sched(
    warm="t * lr_max / warmup_iters",
    phase="(t - warmup_iters) / (cosine_iters - warmup_iters)",
    low="lr_min",
    tail="return lr_min",
):
    return f"""
def lr_cosine_schedule(t, lr_max, lr_min, warmup_iters, cosine_iters):
    if t < warmup_iters:
        return {warm}
    if t <= cosine_iters:
        phase = {phase}
        return {low} + (1 + math.cos(math.pi * phase)) * (lr_max - {low}) / 2
    {tail}
"""


SCHED_OK = _sched()


def _clip(
    grads="grads = [p.grad for p in parameters if p.grad is not None]",
    norm="norm = torch.stack([g.detach().norm() for g in grads]).norm()",
    coef="coef = (max_norm / (norm + 1e-6)).clamp(max=1.0)",
    ret="return norm",
):
    return f"""
def clip_grad_norm_(parameters, max_norm):
    {grads}
    {norm}
    {coef}
    for g in grads:
        g.mul_(coef.to(g.dtype))
    {ret}
"""


CLIP_OK = _clip()


def _batch(
    high="len(data) - context_length",
    idx="starts[:, None] + torch.arange(context_length + 1)",
    split="return windows[:, :-1], windows[:, 1:]",
    gen="generator=generator",
):
    return f"""
def get_batch(data, batch_size, context_length, generator=None, device="cpu"):
    starts = torch.randint(0, {high}, (batch_size,), {gen})
    idx = {idx}
    if isinstance(data, torch.Tensor):
        windows = data[idx]
    else:
        windows = torch.from_numpy(np.asarray(data[idx.numpy()]).astype(np.int64))
    windows = windows.to(device=device, dtype=torch.long)
    {split}
"""


BATCH_OK = _batch()


def _replace(text, old, new):
    """`text` with `old` replaced by `new`; fails loudly when `old` is not there (a stale catalogue)."""
    assert old in text, f"not in the answer: {old!r}"
    return text.replace(old, new)


def _ckpt(
    saved='{"model": model.state_dict(), "optimizer": optimizer.state_dict(), "iteration": iteration}',
    load_opt='optimizer.load_state_dict(state["optimizer"])',
    ret='return state["iteration"]',
):
    return f"""
def save_checkpoint(model, optimizer, iteration, out):
    torch.save({saved}, out)


def load_checkpoint(src, model, optimizer):
    state = torch.load(src, weights_only=True)
    model.load_state_dict(state["model"])
    {load_opt}
    {ret}
"""


CKPT_OK = _ckpt()

ALL_OK = {CE: CE_OK, ADAM: ADAMW_OK, SCHED: SCHED_OK, CLIP: CLIP_OK, BATCH: BATCH_OK, CKPT: CKPT_OK}

MISTAKES = {
    "ce_softmax_then_log": dict(
        cells={
            CE: _ce(
                "    p = torch.exp(logits) / torch.exp(logits).sum(-1, keepdim=True)\n    return -torch.log(p.gather(-1, targets.unsqueeze(-1))).mean()"
            )
        },
        question="cross_entropy",
        hint="cross-entropy overflows",
    ),
    "ce_torch_softmax_then_log": dict(
        cells={
            CE: _ce(
                "    p = torch.softmax(logits, dim=-1)\n    return -torch.log(p.gather(-1, targets.unsqueeze(-1))).mean()"
            )
        },
        question="cross_entropy",
        hint="cross-entropy overflows",
    ),
    "ce_max_not_added_back": dict(
        cells={
            CE: _ce(
                "    m = logits.amax(dim=-1, keepdim=True)\n    lse = (logits - m).exp().sum(-1).log()\n    return (lse - logits.gather(-1, targets.unsqueeze(-1)).squeeze(-1)).mean()"
            )
        },
        question="cross_entropy",
        hint="not added back",
    ),
    "ce_torch_logsumexp": dict(
        cells={
            CE: _ce(
                "    picked = logits.gather(-1, targets.unsqueeze(-1)).squeeze(-1)\n"
                "    return (torch.logsumexp(logits, dim=-1) - picked).mean()"
            )
        },
        question="cross_entropy",
        hint="compute the log-sum-exp yourself",
    ),
    "ce_log_softmax": dict(
        cells={
            CE: _ce(
                "    log_p = torch.log_softmax(logits, dim=-1)\n"
                "    return -log_p.gather(-1, targets.unsqueeze(-1)).mean()"
            )
        },
        question="cross_entropy",
        hint="compute the log-sum-exp yourself",
    ),
    # z_y picked as if the logits were (N, V): right on (N, V), an IndexError on (B, T, V)
    "ce_two_dim_indexing": dict(
        cells={
            CE: CE_OK.replace(
                "shifted.gather(-1, targets.unsqueeze(-1)).squeeze(-1)",
                "shifted[torch.arange(logits.shape[0]), targets]",
            )
        },
        question="cross_entropy",
        hint="any number of leading dims",
    ),
    "ce_sum_not_mean": dict(
        cells={CE: CE_OK.replace("(lse - picked).mean()", "(lse - picked).sum()")},
        question="cross_entropy",
        hint="summed",
    ),
    "adamw_no_bias_correction": dict(
        cells={ADAM: _adamw(m_hat="state['exp_avg']", v_hat="state['exp_avg_sq']")},
        question="AdamW",
        hint="bias correction is missing",
    ),
    "adamw_bias_correction_swapped": dict(
        cells={
            ADAM: _adamw(
                m_hat="state['exp_avg'] / (1 - beta2 ** t)", v_hat="state['exp_avg_sq'] / (1 - beta1 ** t)"
            )
        },
        question="AdamW",
        hint="bias corrections are swapped",
    ),
    "adamw_bias_correction_on_m_only": dict(
        cells={ADAM: _adamw(v_hat="state['exp_avg_sq']")},
        question="AdamW",
        hint="applied to m only",
    ),
    "adamw_eps_inside_sqrt": dict(
        cells={ADAM: _adamw().replace("(v_hat.sqrt() + eps)", "(v_hat + eps).sqrt()")},
        question="AdamW",
        hint="eps is added inside the square root",
    ),
    "adamw_weight_decay_in_gradient": dict(
        cells={ADAM: _adamw(grad_line="g = p.grad + wd * p", decay_before="")},
        question="AdamW",
        hint="added to the gradient",
    ),
    "adamw_decay_after_update": dict(
        cells={ADAM: _adamw(decay_before="", decay_after="p.mul_(1 - lr * wd)")},
        question="AdamW",
        hint="after the Adam update",
    ),
    "adamw_decay_without_lr": dict(
        cells={ADAM: _adamw(decay_before="p.mul_(1 - wd)")},
        question="AdamW",
        hint="not scaled by the learning rate",
    ),
    "adamw_lr_read_once": dict(
        cells={ADAM: _adamw(lr_line='lr = self.defaults["lr"]')},
        question="AdamW",
        hint="read once",
    ),
    "adamw_decays_params_without_grad": dict(
        cells={ADAM: _adamw(skip=_NO_SKIP)},
        question="AdamW",
        hint="without a gradient was changed",
    ),
    "adamw_state_outside_self_state": dict(
        cells={
            ADAM: _adamw().replace(
                "state = self.state[p]", "state = self.__dict__.setdefault('mine', {}).setdefault(p, {})"
            )
        },
        question="AdamW",
        hint="did not survive state_dict()",
    ),
    # the type before the value (docs/authoring-lessons.md): the schedule returns a float, the
    # loss and the norm tensors of shape ()
    "schedule_returns_tensor": dict(
        cells={SCHED: _sched(low="torch.tensor(lr_min)")},
        question="lr_cosine_schedule",
        hint="`.item()` turns a one-element tensor",
    ),
    "ce_returns_item": dict(
        cells={CE: CE_OK.replace("(lse - picked).mean()", "(lse - picked).mean().item()")},
        question="cross_entropy",
        hint="not a Python number made of it",
    ),
    "ce_shape_one": dict(
        cells={CE: CE_OK.replace("(lse - picked).mean()", "(lse - picked).flatten().mean(0, keepdim=True)")},
        question="cross_entropy",
        hint="shape (1,) is not a scalar",
    ),
    "clip_returns_float": dict(
        cells={CLIP: _clip(ret="return norm.item()")},
        question="clip_grad_norm_",
        hint="not a Python number made of it",
    ),
    "clip_norm_shape_one": dict(
        cells={
            CLIP: _clip(
                norm="norm = torch.cat([g.detach().reshape(-1) for g in grads]).norm(dim=0, keepdim=True)"
            )
        },
        question="clip_grad_norm_",
        hint="shape (1,) is not a scalar",
    ),
    "schedule_warmup_one_step_ahead": dict(
        cells={SCHED: _sched(warm="(t + 1) * lr_max / warmup_iters")},
        question="lr_cosine_schedule",
        hint="one step ahead",
    ),
    "schedule_cosine_one_step_ahead": dict(
        cells={SCHED: _sched(phase="(t - warmup_iters + 1) / (cosine_iters - warmup_iters)")},
        question="lr_cosine_schedule",
        hint="cosine is one step ahead at the warm-up boundary",
    ),
    "schedule_cosine_not_shifted": dict(
        cells={SCHED: _sched(phase="t / cosine_iters")},
        question="lr_cosine_schedule",
        hint="does not start at the end of the warm-up",
    ),
    "schedule_decays_to_zero": dict(
        cells={SCHED: _sched(low="0.0")},
        question="lr_cosine_schedule",
        hint="decays to 0",
    ),
    "schedule_no_floor": dict(
        cells={
            SCHED: _sched(
                tail="return lr_min + (1 + math.cos(math.pi * (t - warmup_iters) / (cosine_iters - warmup_iters))) * (lr_max - lr_min) / 2"
            )
        },
        question="lr_cosine_schedule",
        hint="stay at lr_min",
    ),
    "clip_per_parameter": dict(
        cells={
            CLIP: """
def clip_grad_norm_(parameters, max_norm):
    grads = [p.grad for p in parameters if p.grad is not None]
    norm = torch.stack([g.norm() for g in grads]).norm()
    for g in grads:
        g.mul_(min(1.0, max_norm / (g.norm().item() + 1e-6)))
    return norm
"""
        },
        question="clip_grad_norm_",
        hint="clipped by its own norm",
    ),
    "clip_always": dict(
        cells={CLIP: _clip(coef="coef = max_norm / (norm + 1e-6)")},
        question="clip_grad_norm_",
        hint="even when the norm is below max_norm",
    ),
    "clip_sum_of_norms": dict(
        cells={CLIP: _clip(norm="norm = torch.stack([g.detach().norm() for g in grads]).sum()")},
        question="clip_grad_norm_",
        hint="sum of the per-parameter norms",
    ),
    "clip_generator_read_twice": dict(
        cells={
            CLIP: """
def clip_grad_norm_(parameters, max_norm):
    norm = torch.stack([p.grad.norm() for p in parameters if p.grad is not None]).norm()
    coef = min(1.0, max_norm / (norm.item() + 1e-6))
    for p in parameters:
        if p.grad is not None:
            p.grad.mul_(coef)
    return norm
"""
        },
        question="clip_grad_norm_",
        hint="can be read only once",
    ),
    "clip_without_eps": dict(
        cells={CLIP: _clip(coef="coef = (max_norm / norm).clamp(max=1.0)")},
        question="clip_grad_norm_",
        hint="the 1e-6 is missing",
    ),
    "batch_whole_array_converted": dict(
        cells={
            BATCH: _replace(
                BATCH_OK,
                "        windows = torch.from_numpy(np.asarray(data[idx.numpy()]).astype(np.int64))",
                "        windows = torch.as_tensor(np.asarray(data).astype(np.int64))[idx]",
            )
        },
        question="get_batch",
        hint="the whole array is converted",
    ),
    "batch_int32": dict(
        cells={BATCH: _replace(BATCH_OK, "dtype=torch.long)", "dtype=torch.int32)")},
        question="get_batch",
        hint="convert the window to torch.long",
    ),
    "batch_windows_overrun": dict(
        cells={BATCH: _batch(high="len(data) - context_length + 1")},
        question="get_batch",
        hint="overruns the array",
    ),
    "batch_last_start_never_drawn": dict(
        cells={BATCH: _batch(high="len(data) - context_length - 1")},
        question="get_batch",
        hint="last valid start",
    ),
    "batch_targets_not_shifted": dict(
        cells={BATCH: _batch(split="return windows[:, :-1], windows[:, :-1]")},
        question="get_batch",
        hint="targets are not shifted",
    ),
    "batch_x_and_y_from_two_starts": dict(
        cells={
            BATCH: """
def get_batch(data, batch_size, context_length, generator=None, device="cpu"):
    data = torch.as_tensor(np.asarray(data).astype(np.int64)) if not isinstance(data, torch.Tensor) else data.long()
    high = len(data) - context_length
    sx = torch.randint(0, high, (batch_size,), generator=generator)
    sy = torch.randint(0, high, (batch_size,), generator=generator)
    x = torch.stack([data[s:s + context_length] for s in sx.tolist()])
    y = torch.stack([data[s + 1:s + 1 + context_length] for s in sy.tolist()])
    return x.to(device), y.to(device)
"""
        },
        question="get_batch",
        hint="different windows",
    ),
    "batch_generator_ignored": dict(
        cells={BATCH: _batch(gen="")},
        question="get_batch",
        hint="does not come from the generator",
    ),
    "batch_device_ignored": dict(
        cells={
            BATCH: _replace(
                BATCH_OK,
                "windows = windows.to(device=device, dtype=torch.long)",
                "windows = windows.long()  # the device argument never used",
            )
        },
        question="get_batch",
        hint="device argument is ignored",
    ),
    "checkpoint_without_optimizer": dict(
        cells={CKPT: _ckpt(saved='{"model": model.state_dict(), "iteration": iteration}', load_opt="")},
        question="checkpoint",
        hint="does not restore the optimizer",
    ),
    "checkpoint_loaded_unsafely": dict(
        cells={CKPT: _replace(CKPT_OK, "weights_only=True", "weights_only=False")},
        question="checkpoint",
        hint="unpickles anything",
    ),
    "checkpoint_iteration_plus_one": dict(
        cells={CKPT: _ckpt(ret='return state["iteration"] + 1')},
        question="checkpoint",
        hint="one more than the saved iteration",
    ),
    "checkpoint_without_iteration": dict(
        cells={
            CKPT: _ckpt(saved='{"model": model.state_dict(), "optimizer": optimizer.state_dict()}', ret="")
        },
        question="checkpoint",
        hint="should return the iteration",
    ),
}

ALTERNATIVES = {
    "written_otherwise": {
        CE: _ce(
            """    # log-softmax by hand, flattened first
    z = logits.reshape(-1, logits.shape[-1])
    y = targets.reshape(-1)
    z = z - z.max(dim=-1).values[:, None]
    log_probs = z - torch.log(torch.sum(torch.exp(z), dim=-1, keepdim=True))
    return -log_probs[torch.arange(len(y)), y].mean()"""
        ),
        ADAM: """
class AdamW(torch.optim.Optimizer):
    # the step size folded as in Kingma and Ba's Algorithm 1 end note, eps scaled like torch's
    def __init__(self, params, lr=1e-3, betas=(0.9, 0.999), eps=1e-8, weight_decay=0.01):
        defaults = {"lr": lr, "betas": betas, "eps": eps, "weight_decay": weight_decay}
        super().__init__(params, defaults)

    def step(self, closure=None):
        loss = closure() if closure is not None else None
        with torch.no_grad():
            for group in self.param_groups:
                b1, b2 = group["betas"]
                for p in group["params"]:
                    if p.grad is None:
                        continue
                    st = self.state[p]
                    if len(st) == 0:
                        st["step"] = torch.tensor(0.0)
                        st["exp_avg"] = torch.zeros_like(p, memory_format=torch.preserve_format)
                        st["exp_avg_sq"] = torch.zeros_like(p, memory_format=torch.preserve_format)
                    st["step"] += 1
                    t = st["step"].item()
                    p.data = p.data * (1 - group["lr"] * group["weight_decay"])
                    st["exp_avg"].lerp_(p.grad, 1 - b1)
                    st["exp_avg_sq"].mul_(b2).add_((1 - b2) * p.grad ** 2)
                    step_size = group["lr"] / (1 - b1 ** t)
                    denom = st["exp_avg_sq"].sqrt() / math.sqrt(1 - b2 ** t) + group["eps"]
                    p.data = p.data - step_size * st["exp_avg"] / denom
        return loss
""",
        SCHED: """
def lr_cosine_schedule(t, lr_max, lr_min, warmup_iters, cosine_iters):
    if t >= cosine_iters:
        return lr_min if t > cosine_iters else lr_min + (lr_max - lr_min) * (1 + math.cos(math.pi)) / 2
    if t >= warmup_iters:
        progress = (t - warmup_iters) / (cosine_iters - warmup_iters)
        return lr_min + 0.5 * (lr_max - lr_min) * (1 + math.cos(progress * math.pi))
    return lr_max * t / warmup_iters
""",
        CLIP: """
def clip_grad_norm_(parameters, max_norm):
    params = [p for p in parameters if p.grad is not None]
    total = torch.sqrt(sum((p.grad.double() ** 2).sum() for p in params))
    if total > max_norm:
        for p in params:
            p.grad *= max_norm / (total.item() + 1e-6)
    return total
""",
        BATCH: """
def get_batch(data, batch_size, context_length, generator=None, device="cpu"):
    # one window per row, sliced in a loop (the way nanoGPT writes it)
    ix = torch.randint(len(data) - context_length, (batch_size,), generator=generator)
    rows = [np.asarray(data[i:i + context_length + 1], dtype=np.int64) for i in ix.tolist()]
    w = torch.from_numpy(np.stack(rows)) if not isinstance(data, torch.Tensor) else torch.stack([data[i:i + context_length + 1] for i in ix.tolist()]).long()
    return w[:, :-1].contiguous().to(device), w[:, 1:].contiguous().to(device)
""",
        CKPT: """
def save_checkpoint(model, optimizer, iteration, out):
    torch.save(dict(weights=model.state_dict(), opt=optimizer.state_dict(), it=torch.tensor(iteration)), out)


def load_checkpoint(src, model, optimizer):
    blob = torch.load(src, map_location="cpu", weights_only=True)
    model.load_state_dict(blob["weights"])
    optimizer.load_state_dict(blob["opt"])
    return int(blob["it"])
""",
    },
    "prints": {
        **ALL_OK,
        CE: CE_OK.replace(
            "    return (lse - picked).mean()",
            "    print('loss over', tuple(logits.shape))\n    return (lse - picked).mean()",
        ),
    },
}

# The example class. A student missing here does not submit this lesson.
STUDENTS = {
    "alice_perfect": ALL_OK,
    "bob_blank": {},
    "carol_partial": {CE: CE_OK, SCHED: SCHED_OK},
    "dave_l2_adam": {
        **ALL_OK,
        **MISTAKES["adamw_weight_decay_in_gradient"]["cells"],
        **MISTAKES["ce_softmax_then_log"]["cells"],
    },
    "erin_unshifted": {
        **ALL_OK,
        **MISTAKES["batch_targets_not_shifted"]["cells"],
        **MISTAKES["checkpoint_without_optimizer"]["cells"],
    },
}

MAX = {
    "cross_entropy": 2,
    "AdamW": 3,
    "lr_cosine_schedule": 1,
    "clip_grad_norm_": 1,
    "get_batch": 2,
    "checkpoint": 2,
}
EXPECTED = {
    "alice_perfect": dict(MAX),
    "bob_blank": {q: 0 for q in MAX},
    "carol_partial": {**{q: 0 for q in MAX}, "cross_entropy": 2, "lr_cosine_schedule": 1},
    "dave_l2_adam": {**MAX, "cross_entropy": 0, "AdamW": 0},
    "erin_unshifted": {**MAX, "get_batch": 0, "checkpoint": 0},
}
