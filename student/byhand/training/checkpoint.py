"""checkpoint (save_checkpoint and load_checkpoint): the helper `resume` (train, checkpoint, keep
going, then load into a fresh model and optimizer and train again), the hints of the classic
mistakes, its cases and its judge."""

from __future__ import annotations

import io
import os
import tempfile

import torch

from .._core import Case, call, got_expected, graded, helper, hint_line
from .._judge import CheckFailure, assert_close, diagnose
from ..i18n import N_, msg
from ._shared import F64, import_before_cases

# ---------------------------------------------------------------------------------------------
# save_checkpoint / load_checkpoint


def _train(model, opt, xs, ys, t0, t1):
    losses = []
    for t in range(t0, t1):
        i = t % xs.shape[0]
        loss = ((model(xs[i]) - ys[i]) ** 2).mean()
        opt.zero_grad()
        loss.backward()
        opt.step()
        losses.append(float(loss.detach()))
    return losses


def _setup(seed, d_in, d_out, init_seed):
    g = torch.Generator().manual_seed(seed)
    xs = torch.randn(7, 4, d_in, generator=g)
    ys = torch.randn(7, 4, d_out, generator=g)
    torch.manual_seed(init_seed)
    model = torch.nn.Sequential(torch.nn.Linear(d_in, 16), torch.nn.Tanh(), torch.nn.Linear(16, d_out))
    opt = torch.optim.AdamW(model.parameters(), lr=0.02, weight_decay=0.1, foreach=False)
    return model, opt, xs, ys


_UNPICKLED: list = []  # filled when a planted object is rebuilt: code the checkpoint named ran


def _rebuilt():
    _UNPICKLED.append(True)
    return "rebuilt"


class _Planted:
    """An object of the check's own class: unpickling it calls `_rebuilt`, a function the file names.
    torch.load(..., weights_only=True) refuses it; weights_only=False runs it."""

    def __reduce__(self):
        return (_rebuilt, ())


def _planted(save, load, kind, seed, d_in, d_out, folder):
    """A checkpoint written by the student's save_checkpoint with a planted object among the
    optimizer's param_groups (which optimizer.state_dict() saves), loaded by load_checkpoint:
    "ran" (the planted code ran), "refused" (load raised and nothing ran), "loaded" (neither: the
    object did not reach the file) or "not saved" (save raised)."""
    model, opt, xs, ys = _setup(seed, d_in, d_out, seed)
    _train(model, opt, xs, ys, 0, 1)
    opt.param_groups[0]["planted"] = _Planted()
    path = os.path.join(folder, "planted.pt")
    buf = io.BytesIO()
    try:
        save(model, opt, 1, buf if kind == "file" else path)
    except Exception:  # noqa: BLE001 - a save that cannot write the object: nothing to judge here
        return "not saved"
    _UNPICKLED.clear()  # a save that deep-copies the state rebuilds the object once: not a load
    buf.seek(0)
    model2, opt2, _, _ = _setup(seed, d_in, d_out, seed + 1)
    try:
        load(buf if kind == "file" else path, model2, opt2)
        refused = False
    except Exception:  # noqa: BLE001 - refusing is the right answer
        refused = True
    ran = bool(_UNPICKLED)
    _UNPICKLED.clear()
    return "ran" if ran else "refused" if refused else "loaded"


def resume(save, load, kind, seed, k, n, d_in, d_out, reload_optimizer=True):
    """Train k steps, save_checkpoint, train n more; a fresh model and optimizer (other weights),
    load_checkpoint, train n steps from the iteration it returns; then a checkpoint with a planted
    object (`_planted`). Returns (the iteration, the n losses after loading, the n losses of the run
    that never stopped, whether the weights were restored, whether the optimizer's state was
    restored, what loading the planted checkpoint did)."""
    model, opt, xs, ys = _setup(seed, d_in, d_out, seed)
    _train(model, opt, xs, ys, 0, k)
    folder = tempfile.mkdtemp()
    path = os.path.join(folder, "ckpt.pt")
    try:
        buf = io.BytesIO()
        save(model, opt, k, buf if kind == "file" else path)
        weights = {name: t.clone() for name, t in model.state_dict().items()}
        steps_seen = [float(s["step"]) for s in opt.state_dict()["state"].values()]
        straight = _train(model, opt, xs, ys, k, k + n)
        model2, opt2, _, _ = _setup(seed, d_in, d_out, seed + 1)
        if kind == "file":
            buf.seek(0)
        it = load(buf if kind == "file" else path, model2, opt2)
        restored = all(torch.equal(weights[name], t) for name, t in model2.state_dict().items())
        state_back = [float(s["step"]) for s in opt2.state_dict()["state"].values()] == steps_seen
        start = int(it) if isinstance(it, (int, torch.Tensor)) and not isinstance(it, bool) else k
        resumed = _train(model2, opt2, xs, ys, start, start + n)
        planted = _planted(save, load, kind, seed, d_in, d_out, folder)
    finally:
        for name in os.listdir(folder):
            os.remove(os.path.join(folder, name))
        os.rmdir(folder)
    iteration = int(it) if isinstance(it, (int, torch.Tensor)) and not isinstance(it, bool) else repr(it)[:80]
    return iteration, resumed, straight, restored, state_back, planted


_CKPT_HINTS = {
    "no_optimizer": N_(
        "the checkpoint does not restore the optimizer's state: save optimizer.state_dict() beside "
        "model.state_dict() and load it back with optimizer.load_state_dict(...) (AdamW's moments and step "
        "count are half of what training has learned)"
    ),
    "no_model": N_(
        "the model's weights were not restored: load_checkpoint must call model.load_state_dict(...) with "
        "the saved model.state_dict()"
    ),
    "iteration": N_("load_checkpoint should return the iteration that save_checkpoint saved"),
    "iteration_plus_one": N_(
        "load_checkpoint returned one more than the saved iteration: return the iteration exactly as "
        "save_checkpoint saved it; the training loop decides where to go on from it"
    ),
    "unpickled": N_(
        "torch.load with weights_only=False (the default before torch 2.6) unpickles anything, and "
        "unpickling runs code the file names: a checkpoint from elsewhere could do anything. Load with "
        "torch.load(src, weights_only=True): tensors, numbers, strings and containers only"
    ),
}


def _ckpt_cases(hidden):
    import_before_cases()
    specs = [(5, 4, 3, 2, "file"), (9, 6, 4, 3, "path")]
    if hidden:
        specs = [(12, 5, 5, 1, "path"), (3, 7, 2, 4, "file")]
    cases = []
    for i, (k, n, d_in, d_out, kind) in enumerate(specs):
        seed = 12500 + 7 * i + (500 if hidden else 0)
        label = msg(
            "{model} and torch.optim.AdamW, {k} steps, {save}, {n} more steps; a fresh model and optimizer, "
            "load_checkpoint, {n} steps; then load_checkpoint of a checkpoint with an object of another "
            "class planted in it",
            model=f"nn.Sequential(Linear({d_in}, 16), Tanh(), Linear(16, {d_out}))",
            k=k,
            save=f"save_checkpoint(..., {'io.BytesIO()' if kind == 'file' else repr('ckpt.pt')})",
            n=n,
        )
        steps = [
            call(
                "r",
                helper("training.resume"),
                graded("save_checkpoint"),
                graded("load_checkpoint"),
                kind,
                seed,
                k,
                n,
                d_in,
                d_out,
            )  # fmt: skip
        ]
        cases.append(
            Case(label, steps, ["r"], facts=dict(seed=seed, k=k, n=n, d_in=d_in, d_out=d_out), size=k)
        )
    return cases


def _ckpt_judge(case, out):
    f = case.facts
    r = out["r"]
    if not isinstance(r, (tuple, list)) or len(r) != 6:
        raise CheckFailure(msg("the grader could not run the checkpoint round trip (no results came back)"))
    it, resumed, straight, restored, state_back, planted = r
    if it != f["k"]:
        hint = _CKPT_HINTS["iteration_plus_one"] if it == f["k"] + 1 else _CKPT_HINTS["iteration"]
        raise CheckFailure(
            msg("load_checkpoint did not return the iteration saved.")
            + got_expected(repr(it), str(f["k"]))
            + hint_line(hint),
            hint=hint,
        )
    model, opt, xs, ys = _setup(f["seed"], f["d_in"], f["d_out"], f["seed"])
    expected = torch.tensor(_train(model, opt, xs, ys, 0, f["k"] + f["n"])[f["k"] :], dtype=F64)
    got = torch.tensor([float(v) for v in resumed], dtype=F64)
    hint = ""
    if not restored:
        hint = _CKPT_HINTS["no_model"]
    elif not state_back:
        hint = _CKPT_HINTS["no_optimizer"]
    else:
        fresh = _setup(f["seed"], f["d_in"], f["d_out"], f["seed"])
        _train(*fresh[:1], fresh[1], fresh[2], fresh[3], 0, f["k"])
        m, _, _, _ = fresh
        opt2 = torch.optim.AdamW(m.parameters(), lr=0.02, weight_decay=0.1, foreach=False)
        lost = torch.tensor(_train(m, opt2, fresh[2], fresh[3], f["k"], f["k"] + f["n"]), dtype=F64)
        hint = diagnose(got, [(_CKPT_HINTS["no_optimizer"], lambda: lost)], rtol=1e-5, atol=1e-7)
    assert_close(
        got,
        expected,
        msg("the {n} losses after load_checkpoint", n=f["n"]),
        hint or msg("save and restore the model's and the optimizer's state_dict() and the iteration"),
        rtol=1e-5,
        atol=1e-7,
    )
    if [float(v) for v in resumed] != [float(v) for v in straight]:
        raise CheckFailure(
            msg(
                "training resumed from the checkpoint is close to, but not exactly, the run that never stopped."
            )
            + got_expected(str([float(v) for v in resumed]), str([float(v) for v in straight]))
            + hint_line(
                msg(
                    "save the state_dicts as they are (no conversion to another dtype), so the resumed run "
                    "repeats the uninterrupted one bit for bit"
                )
            )
        )
    if planted == "ran":
        raise CheckFailure(
            msg(
                "load_checkpoint rebuilt an object of a class the checkpoint named: the check planted one "
                "(of its own class) in the optimizer's param_groups, and loading ran its code."
            )
            + got_expected(
                N_("loaded, and the planted object's code ran"),
                N_("refused: torch.load(src, weights_only=True) raises UnpicklingError"),
            )
            + hint_line(_CKPT_HINTS["unpickled"]),
            hint=_CKPT_HINTS["unpickled"],
        )
