"""get_batch: the helper `batches` (windows drawn from a numpy array, an np.memmap or a tensor with
seeded generators), the hints of its classic mistakes, its cases and its judge."""

from __future__ import annotations

import math
import os
import tempfile

import numpy as np
import torch

from .._core import LINE, Case, call, got_expected, graded, helper, hint_line, let, ref
from .._judge import CheckFailure, expect_tensor
from ..i18n import N_, msg
from ._shared import import_before_cases

# ---------------------------------------------------------------------------------------------
# get_batch


# a device every torch has, on a CPU-only machine too: a batch left on the CPU shows
OTHER_DEVICE = torch.device("meta")


def _device_of(t) -> str:
    return str(t.device) if isinstance(t, torch.Tensor) else type(t).__name__[:40]


# the memmap whose reading is measured: a whole-array conversion makes a new array of at least half
# its bytes (its uint16 ids copied; int64 ones are four times that), a batch's windows a few hundred
READ_TOKENS = 1 << 17
READ_BATCH, READ_CONTEXT = 4, 8


def _read_observer(lo, hi):
    """A dispatch mode that records the largest tensor an op makes outside [lo, hi), the memory of the
    memmap itself (torch.from_numpy of it copies nothing)."""
    from torch.utils._python_dispatch import TorchDispatchMode
    from torch.utils._pytree import tree_leaves

    class Largest(TorchDispatchMode):
        def __init__(self):
            super().__init__()
            self.largest = [0, ""]

        def __torch_dispatch__(self, func, types, args=(), kwargs=None):
            out = func(*args, **(kwargs or {}))
            for t in tree_leaves(out):
                if not isinstance(t, torch.Tensor) or t.numel() <= self.largest[0]:
                    continue
                try:
                    ptr = t.untyped_storage().data_ptr()
                except Exception:  # noqa: BLE001 - a tensor without a storage holds no ids
                    continue
                if not lo <= ptr < hi:
                    name = str(getattr(func, "overloadpacket", func).__name__).lstrip("_")
                    self.largest = [int(t.numel()), name[:40]]
            return out

    return Largest()


def _what_it_reads(fn, folder):
    """get_batch on an np.memmap of READ_TOKENS uint16 ids: [the peak of new Python and numpy memory
    (tracemalloc) in bytes, the elements of the largest tensor an op made outside the file's memory,
    that op's name]; None when the call raised (the other calls judge that)."""
    import tracemalloc

    path = os.path.join(folder, "large.bin")
    np.arange(READ_TOKENS, dtype=np.uint16).tofile(path)
    held = np.memmap(path, dtype=np.uint16, mode="r")
    lo = held.__array_interface__["data"][0]
    observer = _read_observer(lo, lo + held.nbytes)
    tracing = tracemalloc.is_tracing()
    try:
        with observer:  # once unmeasured: what a first call imports or caches is not what it reads
            fn(held, READ_BATCH, READ_CONTEXT, generator=torch.Generator().manual_seed(0))
        observer = _read_observer(lo, lo + held.nbytes)
        if not tracing:
            tracemalloc.start()
        tracemalloc.reset_peak()
        base = tracemalloc.get_traced_memory()[0]
        with observer:
            fn(held, READ_BATCH, READ_CONTEXT, generator=torch.Generator().manual_seed(1))
        peak = tracemalloc.get_traced_memory()[1] - base
    except Exception:  # noqa: BLE001 - an error here is judged by the calls before
        return None
    finally:
        if not tracing and tracemalloc.is_tracing():
            tracemalloc.stop()
        del held
    return [int(peak), observer.largest[0], observer.largest[1]]


def batches(fn, data, kind, batch_size, context_length, seed, coverage):
    """get_batch on `data` held as `kind` ("numpy": uint16, "memmap": a uint16 np.memmap, "tensor":
    int32): the batch of one seed twice, of another seed once, then `coverage` windows in one batch,
    then one batch with device=OTHER_DEVICE, then (a memmap only) one batch from a large memmap to see
    what it reads. Returns the eight tensors, then the devices of the last x and y and the error that
    call raised (text, or None), then what the large memmap's batch read (`_what_it_reads`, None
    for another kind); or, when one of the first four calls raised, its error (text) and the windows
    it asked for."""
    arr = np.asarray(data, dtype=np.uint16)  # a list: the data stays on the CPU, whatever the device
    folder = None
    if kind == "memmap":
        folder = tempfile.mkdtemp()
        path = os.path.join(folder, "tokens.bin")
        mm = np.memmap(path, dtype=np.uint16, mode="w+", shape=arr.shape)
        mm[:] = arr
        mm.flush()
        del mm
        held = np.memmap(path, dtype=np.uint16, mode="r")
    elif kind == "numpy":
        held = arr
    else:
        held = torch.tensor(
            data, dtype=torch.int32
        )  # ids saved by torch at 32 bits: the batch is still int64
    results = []
    try:
        for s, n in ((seed, batch_size), (seed, batch_size), (seed + 1, batch_size), (seed + 2, coverage)):
            try:
                kw = {"device": "cpu"} if n == coverage else {}
                x, y = fn(held, n, context_length, generator=torch.Generator().manual_seed(s), **kw)
            except NotImplementedError:
                raise
            except Exception as exc:  # noqa: BLE001 - a fact to judge (a window past the end, most often)
                return f"{type(exc).__name__}: {exc}"[:300], n
            results += [x, y]
        try:
            x, y = fn(
                held,
                batch_size,
                context_length,
                generator=torch.Generator().manual_seed(seed),
                device=OTHER_DEVICE,
            )
        except Exception as exc:  # noqa: BLE001 - NotImplementedError too: an op the meta device lacks
            return results + [None, None, f"{type(exc).__name__}: {exc}"[:300], None]
        read = _what_it_reads(fn, folder) if kind == "memmap" else None
        return results + [_device_of(x), _device_of(y), None, read]
    finally:
        if folder is not None:
            del held
            for name in os.listdir(folder):
                os.remove(os.path.join(folder, name))
            os.rmdir(folder)


_BATCH_HINTS = {
    "overrun": N_(
        "a window overruns the array: a start s needs s + context_length + 1 <= len(data) (y reaches one "
        "token further than x), so draw s from 0 to len(data) - context_length - 1, "
        "torch.randint(0, len(data) - context_length, ...)"
    ),
    "last_start": N_(
        "the last valid start, len(data) - context_length - 1, is never drawn: torch.randint's high is "
        "exclusive, high = len(data) - context_length"
    ),
    "first_start": N_(
        "the first start, 0, is never drawn: starts go from 0 to len(data) - context_length - 1"
    ),
    "not_shifted": N_(
        "the targets are not shifted: y = data[s + 1 : s + 1 + context_length], one token after x"
    ),
    "other_window": N_(
        "x and y come from different windows: draw one start s per row, x = data[s : s + context_length], "
        "y = data[s + 1 : s + 1 + context_length]"
    ),
    "generator": N_(
        "the batch does not come from the generator: draw the starts with torch.randint(..., "
        "generator=generator), so the same seed gives the same batch"
    ),
    "not_uniform": N_(
        "the starts are not uniform over every valid start: torch.randint(0, len(data) - context_length, ...)"
    ),
    "whole_array": N_(
        "the whole array is converted before the windows are cut (torch.as_tensor(data), "
        "np.asarray(data).astype(...), data.tolist()): from an np.memmap that reads the whole file, at every "
        "batch. Index the numpy array with numpy indices first, data[idx] with idx of shape (batch_size, "
        "context_length + 1), and convert only that small result"
    ),
    "device_ignored": N_(
        "the device argument is ignored: the batch stays on the CPU. Return x and y on device, "
        'x.to(device) (a training loop on a GPU passes device="cuda")'
    ),
}


def _batch_cases(hidden):
    import_before_cases()
    # (len(data) - context_length: the number of valid starts, context_length, batch size, kind, offset)
    specs = [(6, 5, 4, "numpy", 1000), (9, 8, 6, "memmap", 3), (5, 3, 3, "tensor", 60000)]
    if hidden:
        specs = [(8, 4, 5, "numpy", 200), (4, 16, 3, "memmap", 7), (11, 6, 7, "tensor", 40000)]
    cases = []
    for i, (n_starts, ctx, bsz, kind, offset) in enumerate(specs):
        n = n_starts + ctx
        data = torch.arange(offset, offset + 3 * n, 3, dtype=torch.int64)  # the value says the position
        coverage = 300 * n_starts
        seed = 12400 + 11 * i + (500 if hidden else 0)
        label = msg(
            "{call}, data = {data}, {n} tokens, {starts} valid starts; generator seeds {s1}, {s2}, {s3} "
            "({windows} windows); then {device}",
            call=f"get_batch(data, batch_size={bsz}, context_length={ctx})",
            data="np.ndarray(uint16)"
            if kind == "numpy"
            else "np.memmap(uint16)"
            if kind == "memmap"
            else "torch.Tensor(int32)",
            n=n,
            starts=n_starts,
            s1=seed,
            s2=seed + 1,
            s3=seed + 2,
            windows=coverage,
            device=f"device={OTHER_DEVICE!r}",
        )
        steps = [
            let("data", data.tolist()),
            call(
                "r",
                helper("training.batches"),
                graded("get_batch"),
                ref("data"),
                kind,
                bsz,
                ctx,
                seed,
                coverage,
            ),
        ]
        facts = dict(data=data, n=n, ctx=ctx, bsz=bsz, coverage=coverage, offset=offset)
        cases.append(Case(label, steps, ["r"], facts=facts, size=n))
    return cases


def _window_problem(x, y, f):
    """Checks one batch (x, y); raises with the hint of what is wrong."""
    ctx, n, offset = f["ctx"], f["n"], f["offset"]
    for what, t in (("x", x), ("y", y)):
        t = expect_tensor(t, what)
        if t.dtype != torch.int64:
            raise CheckFailure(
                msg("{what} should be a LongTensor (int64) of token ids.", what=what)
                + got_expected(t.dtype, "torch.int64")
                + hint_line(msg("convert the window to torch.long (token files are often uint16)"))
            )
        if tuple(t.shape[1:]) != (ctx,) or t.dim() != 2:
            raise CheckFailure(
                msg("{what} has the wrong shape.", what=what)
                + got_expected(tuple(t.shape), f"(batch_size, {ctx})")
            )
    pos_x = (x - offset) / 3
    pos_y = (y - offset) / 3
    steps = torch.arange(ctx)
    starts = pos_x[:, 0]
    if not torch.equal(pos_x, starts[:, None] + steps):
        raise CheckFailure(
            msg("a row of x is not a window of consecutive tokens of data.")
            + got_expected(f"x[0] = {x[0].tolist()}", msg("data[s : s + context_length] for a start s"))
            + hint_line(msg("slice one window per row, x[b] = data[s_b : s_b + context_length]"))
        )
    if torch.equal(pos_y, pos_x):
        raise CheckFailure(
            msg("y is the same as x.")
            + got_expected(
                f"y[0] = {y[0].tolist()}",
                msg("{values} (the next token at each position)", values=str((x[0] + 3).tolist())),
            )
            + hint_line(_BATCH_HINTS["not_shifted"]),
            hint=_BATCH_HINTS["not_shifted"],
        )
    if not torch.equal(pos_y, starts[:, None] + 1 + steps):
        hint = (
            _BATCH_HINTS["other_window"]
            if torch.equal(pos_y, pos_y[:, :1] + steps)
            else _BATCH_HINTS["not_shifted"]
        )
        raise CheckFailure(
            msg("y is not x shifted by one token.")
            + got_expected(f"x[0] = {x[0].tolist()}, y[0] = {y[0].tolist()}", f"y[0] = {(x[0] + 3).tolist()}")
            + hint_line(hint),
            hint=hint,
        )
    if starts.min() < 0 or starts.max() > n - ctx - 1:
        raise CheckFailure(
            msg("a window overruns the array.") + hint_line(_BATCH_HINTS["overrun"]),
            hint=_BATCH_HINTS["overrun"],
        )
    return starts.long()


def _batch_judge(case, out):
    f = case.facts
    r = out["r"]
    if isinstance(r, (tuple, list)) and len(r) == 2 and isinstance(r[0], str):
        error, n = r
        overrun = ("out of bounds", "index", "stack expects", "same shape", "size")
        hint = _BATCH_HINTS["overrun"] if any(w in error for w in overrun) else ""
        default = msg("x = data[s : s + context_length], y = data[s + 1 : s + 1 + context_length]")
        raise CheckFailure(
            msg(
                "get_batch raised {error} drawing {n} windows from {tokens} tokens.",
                error=error,
                n=n,
                tokens=f["n"],
            )
            + hint_line(hint or default),
            hint=hint or None,
        )
    if not isinstance(r, (tuple, list)) or len(r) != 12:
        raise CheckFailure(msg("get_batch should return a pair (x, y)"))
    x1, y1, x2, y2, x3, y3, xb, yb, x_device, y_device, device_error, read = r
    for x, y in ((x1, y1), (xb, yb)):
        _window_problem(x, y, f)
    if x1.shape[0] != f["bsz"]:
        raise CheckFailure(
            msg("x has {rows} rows.", rows=x1.shape[0])
            + got_expected(x1.shape[0], f"batch_size = {f['bsz']}")
        )
    if not (torch.equal(x1, x2) and torch.equal(y1, y2)) or torch.equal(x1, x3):
        seen = msg(
            "x[:, 0] = {first} and {second} (same seed), {third} (next seed)",
            first=str(x1[:, 0].tolist()),
            second=str(x2[:, 0].tolist()),
            third=str(x3[:, 0].tolist()),
        )
        raise CheckFailure(
            msg(
                "two generators seeded alike give different batches, or differently seeded ones the same batch."
            )
            + LINE
            + msg("got:      {got}", got=seen)
            + hint_line(_BATCH_HINTS["generator"]),
            hint=_BATCH_HINTS["generator"],
        )
    starts = _window_problem(xb, yb, f)
    n_starts = f["n"] - f["ctx"]
    counts = torch.bincount(starts, minlength=n_starts)
    expected = f["coverage"] / n_starts
    sd = math.sqrt(f["coverage"] * (1 / n_starts) * (1 - 1 / n_starts))
    if counts[-1] == 0 or counts[0] == 0 or (counts - expected).abs().max() > 6 * sd:
        hint = (
            _BATCH_HINTS["last_start"]
            if counts[-1] == 0
            else _BATCH_HINTS["first_start"]
            if counts[0] == 0
            else _BATCH_HINTS["not_uniform"]
        )
        raise CheckFailure(
            msg(
                "the starts of {windows} windows are not spread evenly over the {starts} valid starts.",
                windows=f["coverage"],
                starts=n_starts,
            )
            + got_expected(
                msg("counts {counts}", counts=str(counts.tolist())),
                msg("about {each} each (starts 0 to {last})", each=f"{expected:.0f}", last=n_starts - 1),
            )
            + hint_line(hint),
            hint=hint,
        )
    want = str(OTHER_DEVICE)
    if device_error is not None:
        raise CheckFailure(
            msg("get_batch raised an error with device={device}.", device=repr(OTHER_DEVICE))
            + got_expected(device_error, f"x.device = {want!r}, y.device = {want!r}")
            + hint_line(
                msg(
                    "build the batch where data is, then move x and y to device (x.to(device)); draw the "
                    "starts on the CPU, where the generator is"
                )
            )
        )
    if (x_device, y_device) != (want, want):
        hint = _BATCH_HINTS["device_ignored"] if (x_device, y_device) == ("cpu", "cpu") else None
        raise CheckFailure(
            msg("get_batch did not return the batch on the device it was given.")
            + got_expected(
                f"x.device = {x_device!r}, y.device = {y_device!r}",
                f"x.device = {want!r}, y.device = {want!r}",
            )
            + (hint_line(hint) if hint else ""),
            hint=hint,
        )
    _judge_reading(read)


def _judge_reading(read):
    """Fail a batch from the large memmap that made a new array of half the file or more."""
    if not (isinstance(read, (tuple, list)) and len(read) == 3):
        return
    peak, largest, op = read
    if isinstance(largest, int) and largest >= READ_TOKENS // 2:
        made = msg("a tensor of {n} elements (made by {op})", n=largest, op=str(op)[:40])
    elif isinstance(peak, int) and peak >= READ_TOKENS:
        made = msg("{n} bytes of new numpy or Python memory", n=peak)
    else:
        return
    hint = _BATCH_HINTS["whole_array"]
    raise CheckFailure(
        msg(
            "get_batch converted the whole array: for {b} windows of {t} tokens from an np.memmap of {n} "
            "uint16 tokens ({bytes} bytes), it made more than half the file's size.",
            b=READ_BATCH,
            t=READ_CONTEXT,
            n=READ_TOKENS,
            bytes=2 * READ_TOKENS,
        )
        + got_expected(made, msg("only the windows: about {n} token ids", n=READ_BATCH * (READ_CONTEXT + 1)))
        + hint_line(hint),
        hint=hint,
    )
