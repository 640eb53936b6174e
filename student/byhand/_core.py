"""The machinery every lesson's checks share.

A check is a list of *cases*. A case is data, not code: a few steps that build inputs, call the
student's graded names and collect the results ("the wire"), plus grader-side facts a *judge* uses
to decide. The same case runs two ways:

* self-check, inside the student's kernel: `check(...)` runs the steps there and judges there;
* trusted verdict, at grading: the grader sends the steps as JSON to the sandboxed kernel, gets the
  results back as plain numbers (dtype, shape, bytes: no pickle), and judges in its own process.

So whatever a submission does to torch, numpy or IPython inside its kernel can change only its own
answers, never a comparison.
"""

from __future__ import annotations

import base64
import hashlib
import importlib
import json
import math
import os
import re
import types
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

import numpy as np
import torch

from . import _depends, i18n  # BYHAND-DEPENDS: _depends
from .i18n import N_, msg

# ---------------------------------------------------------------------------------------------
# Failures


class CheckFailure(AssertionError):
    """A wrong answer. The message says what is wrong, got vs expected, and a hint.

    `hint` is the name of the mistake, for the grader's class report: given as `hint=`, or else the
    message's `hint:` line (the message format is this module's own).
    """

    # What a failure on a later case may add to the first one ("also, on ..."), whose mistake may
    # explain it too: a `fact` about the answer (an attribute or parameter it lacks) always; a hint
    # whose probe `separates` its mistake from the others (the output matched that mistake's) when the
    # first failure names no such mistake, or when it is the first mistake and one more
    separates = False
    fact = False
    # the name the short traceback shows before the message: a catalogue id, so a Chinese notebook
    # reads its own words there, not the English class name
    shown_as = N_("CheckFailure")

    def __init__(self, message: str = "", hint: str | None = None):
        super().__init__(message)
        self._hint = hint

    @property
    def hint(self) -> str:
        return self._hint if self._hint is not None else _hint_of(i18n.message_of(self))

    def with_text(self, message: str) -> CheckFailure:
        """The same failure (same class, same hint) with `message` as its text."""
        failure = type(self)(message, hint=self._hint)
        failure.separates, failure.fact = self.separates, self.fact
        return failure

    @property
    def _render_traceback_(self):
        """IPython asks an exception for this to render it (`InteractiveShell.showtraceback`, the
        `traceback` of the kernel's error message every front end shows): the message alone, with no
        frame of this package. With the full traceback asked for (`check(..., traceback=True)`,
        `byhand.verbose(True)` or BYHAND_TRACEBACK=1) there is no such attribute, and IPython renders
        its own full traceback. Plain Python never asks: it prints the whole traceback."""
        if _VERBOSE[0] or getattr(self, "full_traceback", False):
            raise AttributeError("_render_traceback_")
        return self._short_traceback

    def _short_traceback(self) -> list:
        head, _, rest = str(self).partition("\n")
        name = i18n.localize(self.shown_as) + _RESET + i18n.localize(_NAME_SEPARATOR)
        lines = [f"{_RED}{name}{head}"] + (rest.split("\n") if rest else [])
        return lines + [_DIM + i18n.localize(FULL_TRACEBACK) + _RESET]


# How a check's failure is shown in a notebook: the message only, unless the whole traceback is asked for
_VERBOSE = [os.environ.get("BYHAND_TRACEBACK", "").strip() not in ("", "0")]
FULL_TRACEBACK = N_("(the whole traceback: check(..., traceback=True))")
_NAME_SEPARATOR = N_(": ")  # between the failure's name and its message
_RED, _DIM, _RESET = "\x1b[0;31m", "\x1b[2m", "\x1b[0m"  # the colours of IPython's own tracebacks


def verbose(on: bool | None = None) -> bool:
    """Show the whole traceback of every failed check from now on (`on=True`), or the message only
    (`on=False`, the default, or BYHAND_TRACEBACK=1 in the environment); the current setting."""
    if on is not None:
        _VERBOSE[0] = bool(on)
    return _VERBOSE[0]


class NotDone(CheckFailure):
    """The exercise is still the blank stub (raises NotImplementedError)."""

    shown_as = N_("NotDone")


class AnswerError(CheckFailure):
    """The answer raised an exception other than NotImplementedError."""

    shown_as = N_("AnswerError")


# ---------------------------------------------------------------------------------------------
# The wire: JSON values, tensors as dtype/shape/base64 bytes

_DTYPES = {
    "float32": torch.float32,
    "float64": torch.float64,
    "float16": torch.float16,
    "bfloat16": torch.bfloat16,
    "int64": torch.int64,
    "int32": torch.int32,
    "int16": torch.int16,
    "int8": torch.int8,
    "uint8": torch.uint8,
    "bool": torch.bool,
}
_DTYPE_NAMES = {v: k for k, v in _DTYPES.items()}
MAX_WIRE_ELEMENTS = 2_000_000  # a forged or runaway output cannot make the grader allocate more


def encode(value: Any) -> Any:
    """A Python value -> JSON-able data. Tensors go through raw bytes, so a tensor subclass that
    overrides comparisons or printing cannot change what is sent."""
    if isinstance(value, torch.Tensor):
        t = torch.Tensor.detach(value)
        t = torch.Tensor.cpu(t)
        t = torch.Tensor.contiguous(torch.Tensor.clone(t)).as_subclass(torch.Tensor)
        name = _DTYPE_NAMES.get(t.dtype)
        if name is None:
            return {"__unsupported__": f"tensor of dtype {t.dtype}"}
        if name == "bfloat16":
            raw = t.view(torch.int16).numpy().tobytes()
        else:
            raw = t.numpy().tobytes()
        return {"__tensor__": name, "shape": list(t.shape), "data": base64.b64encode(raw).decode()}
    if isinstance(value, (bool, int, str)) or value is None:
        return value
    if isinstance(value, float):
        return value if math.isfinite(value) else {"__float__": repr(value)}
    if isinstance(value, (tuple, list)):
        return {"__seq__": [encode(v) for v in value], "kind": type(value).__name__}
    if isinstance(value, np.ndarray):
        return encode(torch.from_numpy(np.array(value)))
    if isinstance(value, np.generic):
        return encode(value.item())
    return {"__unsupported__": type(value).__name__}


def decode(data: Any) -> Any:
    """JSON-able data -> plain values. Strict: anything malformed raises ValueError."""
    if isinstance(data, (bool, int, float, str)) or data is None:
        return data
    if isinstance(data, dict):
        if "__tensor__" in data:
            dtype = _DTYPES[data["__tensor__"]]
            shape = [int(s) for s in data["shape"]]
            n = math.prod(shape)
            if n > MAX_WIRE_ELEMENTS or any(s < 0 for s in shape):
                raise ValueError(f"tensor of shape {shape} is too large to judge")
            raw = base64.b64decode(data["data"])
            np_dtype = np.int16 if dtype == torch.bfloat16 else torch.empty(0, dtype=dtype).numpy().dtype
            arr = np.frombuffer(raw, dtype=np_dtype)
            if arr.size != n:
                raise ValueError("tensor bytes do not match its shape")
            t = torch.from_numpy(arr.copy()).reshape(shape)
            return t.view(torch.bfloat16) if dtype == torch.bfloat16 else t
        if "__seq__" in data:
            items = [decode(v) for v in data["__seq__"]]
            return tuple(items) if data.get("kind") == "tuple" else items
        if "__float__" in data:
            return float(data["__float__"])
        if "__unsupported__" in data:
            return Unsupported(str(data["__unsupported__"]))
    raise ValueError(f"malformed wire value: {str(data)[:80]}")


@dataclass(frozen=True)
class Unsupported:
    """An output that is not a tensor, number, string or sequence of them."""

    type_name: str

    def __repr__(self):  # shown in a "got:" line: its words from the catalogue, the type's name data
        name = self.type_name
        if name.startswith("tensor of dtype "):
            return msg("<a tensor of dtype {dtype}>", dtype=name[len("tensor of dtype ") :])
        if name.startswith("missing attribute (") and name.endswith(")"):
            return msg("<a missing attribute ({error})>", error=name[len("missing attribute (") : -1])
        return msg("<a {type}>", type=name)


# ---------------------------------------------------------------------------------------------
# Steps: what runs where the student's code lives


def ref(name: str, attr: str | None = None) -> dict:
    """A reference to a value bound by an earlier step (optionally one of its attributes)."""
    return {"ref": name, "attr": attr} if attr else {"ref": name}


def let(out: str, value: Any) -> dict:
    return {"op": "let", "out": out, "value": encode(value)}


def new(
    out: str, cls: str, *args, state: dict | None = None, dtype=None, shared_ok: bool = False, **kwargs
) -> dict:
    """Instantiate `cls` (a graded class name, or a dotted `torch.` path), move it to `dtype`,
    then load `state` (a dict of tensors). `shared_ok`: parameters meant to be one object (tied
    weights) are judged by the case, not reported as a module shared by mistake."""
    return {
        "shared_ok": shared_ok,
        "op": "new",
        "out": out,
        "cls": cls,
        "args": [_arg(a) for a in args],
        "kwargs": {k: _arg(v) for k, v in kwargs.items()},
        "dtype": None if dtype is None else _DTYPE_NAMES[dtype],
        "state": None if state is None else {k: encode(v) for k, v in state.items()},
    }


def call(out: str, fn: str | dict, *args, **kwargs) -> dict:
    """Call a graded name (a string) or a bound value (`ref(...)`, e.g. a module) with arguments."""
    return {
        "op": "call",
        "out": out,
        "fn": fn,
        "args": [_arg(a) for a in args],
        "kwargs": {k: _arg(v) for k, v in kwargs.items()},
    }


def calling(out: str, fn: str | dict, inputs: dict, *args, **kwargs) -> list:
    """The usual steps of a case: bind each of `inputs` (name: value) in turn, then call `fn` with
    `args` and those inputs by reference, in that order, and `kwargs`; its result is `out`."""
    return [let(name, value) for name, value in inputs.items()] + [
        call(out, fn, *args, *map(ref, inputs), **kwargs)
    ]


def seed(value: int) -> dict:
    return {"op": "seed", "seed": int(value)}


def graded(name: str) -> dict:
    """A graded name of the student's namespace passed as an argument (e.g. a class to a helper)."""
    return {"graded": name}


def helper(name: str) -> dict:
    """A check module's helper as the `fn` of a `call`: `helper("backward.run_function")`. It runs
    where the student's code lives (it may need autograd there); only the plain results it returns
    travel back, and the judge trusts nothing else about it. Each module lists its `HELPERS`."""
    return {"helper": name}


def _helper(name: str):
    module, attr = name.rsplit(".", 1)
    mod = importlib.import_module(f"{__package__}.{module}")
    if attr not in getattr(mod, "HELPERS", ()):
        raise ValueError(f"{name} is not a helper of {mod.__name__}")
    return getattr(mod, attr)


def _arg(value: Any) -> Any:
    if isinstance(value, dict) and ("ref" in value or "graded" in value):
        return value
    return {"value": encode(value)}


def _graded(name: str, namespace: dict):
    if name not in namespace:
        raise NameError(f"name '{name}' is not defined: run the cell that defines it")
    return namespace[name]


def _lookup_class(name: str, namespace: dict):
    if name.startswith("torch."):
        obj = torch
        for part in name.split(".")[1:]:
            obj = getattr(obj, part)
        return obj
    if name not in namespace:
        raise NameError(f"name '{name}' is not defined: run the cell that defines it")
    return namespace[name]


def _to_device(value: Any, device) -> Any:
    """Tensors in `value` (and in its lists and tuples) moved to `device`; None leaves them."""
    if device is None:
        return value
    if isinstance(value, torch.Tensor):
        return value.to(device)
    if isinstance(value, (list, tuple)):
        return type(value)(_to_device(v, device) for v in value)
    return value


def module_device(module: Any):
    """The device a module's parameters (or buffers) live on; None for a module with neither, or
    for anything that is not a module."""
    if not isinstance(module, torch.nn.Module):
        return None
    for t in module.parameters():
        return t.device
    for t in module.buffers():
        return t.device
    return None


def _failed(step: int, error: str, not_implemented: bool = False, **facts) -> dict:
    """What `run_steps` sends back when step `step` could not run: the error, whether the answer
    is still a stub, and the facts the judge names it by (`structure`, `no_forward`)."""
    return {"error": error, "not_implemented": not_implemented, "step": step, **facts}


def _student_line(exc: BaseException, namespace: dict) -> dict | None:
    """Where in the student's own code `exc` was raised: the last frame of its traceback that runs
    code of the notebook (its globals are the notebook's), as {"cell", "line", "code"}; None when
    the error came from no such frame. "cell" is IPython's name for it ("Cell In[3]"), else the file."""
    import linecache

    found = None
    tb = exc.__traceback__
    while tb is not None:
        if tb.tb_frame.f_globals is namespace:
            found = tb
        tb = tb.tb_next
    if found is None:
        return None
    code, line = found.tb_frame.f_code, found.tb_lineno
    cell = code.co_filename
    try:  # IPython keeps which execution each cell's code name came from
        number = get_ipython().compile._filename_map.get(cell)  # noqa: F821 - IPython's builtin
        if number is not None:
            cell = f"Cell In[{number}]"
    except Exception:  # noqa: BLE001 - plain Python, or another IPython: the file name it has
        pass
    text = linecache.getline(code.co_filename, line, found.tb_frame.f_globals).strip()
    return {"cell": cell[:200], "line": int(line), "code": text[:200]}


_RAISED: list = [None]  # the last exception a student's code raised in `run_steps`


def run_steps(steps: list, outputs: list, namespace: dict, device=None) -> dict:
    """Run a case's steps against `namespace` (the student's globals). Returns wire data:
    {"outputs": {name: value}} or {"error": ..., "not_implemented": bool, "step": i}.

    Inputs are built on `device` (None: where they are decoded, the CPU), modules the steps create
    are moved there, and a module is always called with its inputs on the device its parameters
    live on. Results come back through the wire, on the CPU."""
    env: dict[str, Any] = {}

    def resolve(a, target=None):
        if "graded" in a:
            return _graded(a["graded"], namespace)
        if "ref" in a:
            v = env[a["ref"]]
            for part in (a.get("attr") or "").split("."):
                if part:
                    v = getattr(v, part)
            return _to_device(v, target)
        return _to_device(decode(a["value"]), target or device)

    for i, step in enumerate(steps):
        op = step["op"]
        try:
            if op == "let":
                env[step["out"]] = _to_device(decode(step["value"]), device)
            elif op == "seed":
                torch.manual_seed(step["seed"])
            elif op == "new":
                cls = _lookup_class(step["cls"], namespace)
                obj = cls(
                    *[resolve(a) for a in step["args"]], **{k: resolve(v) for k, v in step["kwargs"].items()}
                )
                if step.get("dtype"):
                    obj = obj.to(_DTYPES[step["dtype"]])
                if step["state"] is not None:
                    state = {k: decode(v) for k, v in step["state"].items()}
                    problem = _state_problem(obj, state)
                    if problem is None:
                        with torch.no_grad():  # not strict: buffers the case does not name keep their values
                            obj.load_state_dict(state, strict=False)
                        problem = None if step.get("shared_ok") else _shared_problem(obj, state)
                    if problem is not None:
                        return _failed(i, "structure", structure=problem)
                if device is not None and isinstance(obj, torch.nn.Module):
                    obj = obj.to(device)
                env[step["out"]] = obj
            elif op == "call":
                fn = step["fn"]
                if isinstance(fn, str):
                    fn = _graded(fn, namespace)
                elif "helper" in fn:
                    fn = _helper(fn["helper"])
                else:
                    fn = resolve(fn)
                missing = _forward_of(fn)
                if missing is not None:
                    return _failed(i, "no forward", no_forward=missing)
                target = module_device(fn)  # a module gets its inputs where its parameters are
                env[step["out"]] = fn(
                    *[resolve(a, target) for a in step["args"]],
                    **{k: resolve(v, target) for k, v in step["kwargs"].items()},
                )
            else:
                raise ValueError(f"unknown step {op!r}")
        except NotImplementedError as exc:
            missing = _missing_forward(exc)
            if missing is not None:
                return _failed(i, "NotImplementedError", no_forward=missing)
            return _failed(i, "NotImplementedError", not_implemented=True)
        except Exception as exc:  # the student's code raised: report it, never crash the runner
            missing = _missing_forward(exc) if isinstance(exc, TypeError) else None
            if missing is not None:
                return _failed(i, "no forward", no_forward=missing)
            _RAISED[0] = exc  # for a self-check's full traceback (check(..., traceback=True))
            return _failed(i, f"{type(exc).__name__}: {exc}"[:2000], at=_student_line(exc, namespace))
    result = {}
    for name in outputs:
        value = env.get(name.split(".")[0])
        try:
            for part in name.split(".")[1:]:
                value = getattr(value, part)
        except AttributeError as exc:
            value = Unsupported(f"missing attribute ({exc})")
        result[name] = value if isinstance(value, Unsupported) else encode(value)
        if isinstance(result[name], Unsupported):
            result[name] = {"__unsupported__": result[name].type_name}
    return {"outputs": result}


# ---------------------------------------------------------------------------------------------
# What a module *is*: probes of its structure, run where the module lives (they only shape a hint;
# the verdict is the grader's either way)

_MAX_NAMES = 12


def _names(items) -> list:
    return [str(n)[:80] for n in list(items)[:_MAX_NAMES]]


def _attr_kind(value) -> str:
    """How an attribute that should hold registered state is held instead."""
    if isinstance(value, torch.nn.Parameter):
        return "parameter"
    if isinstance(value, torch.nn.Module):
        return "module"
    if isinstance(value, torch.Tensor):
        return "tensor"
    if isinstance(value, (list, tuple)) and any(isinstance(v, torch.nn.Module) for v in value):
        return "list of modules"
    if isinstance(value, (list, tuple)) and any(isinstance(v, torch.Tensor) for v in value):
        return "list of tensors"
    if isinstance(value, dict) and any(isinstance(v, torch.nn.Module) for v in value.values()):
        return "dict of modules"
    if value is None:
        return "missing"
    return type(value).__name__[:40]


def _state_problem(module, state: dict):
    """None when `module` has exactly the state dict keys the grader sends; else what differs and,
    for each top-level name, how the module holds it (plain tensor, Python list of modules, ...)."""
    if not isinstance(module, torch.nn.Module):
        return None
    have = set(module.state_dict().keys())
    own_buffers = {name for name, _ in module.named_buffers()}  # a causal mask the answer keeps itself
    missing, extra = sorted(set(state) - have), sorted(have - set(state) - own_buffers)
    if not missing and not extra:
        return None
    attrs = {}
    for key in missing:
        path, owner, prefix = key.split("."), module, []
        for part in path[:-1]:  # follow the registered submodules as far as they go
            sub = getattr(owner, "_modules", {}).get(part)
            if sub is None:
                break
            owner, prefix = sub, prefix + [part]
        name = path[len(prefix)]  # the first name on the path that is not a registered module
        attrs[".".join(prefix + [name])[:80]] = _attr_kind(getattr(owner, name, None))
        if len(attrs) >= _MAX_NAMES:
            break
    for prefix, sub in list(module.named_modules())[:200]:  # state held where nn.Module cannot see it
        for name, value in list(vars(sub).items())[:200]:
            kind = _attr_kind(value)
            if not name.startswith("_") and kind in (
                "tensor",
                "list of modules",
                "list of tensors",
                "dict of modules",
            ):
                attrs.setdefault(f"{prefix}.{name}" if prefix else name, kind)
    return {
        "cls": type(module).__name__[:80],
        "missing": _names(missing),
        "extra": _names(extra),
        "attrs": attrs,
    }


def _shared_problem(module, state: dict):
    """After load_state_dict: None when every loaded tensor is still there; else the groups of names
    that are one and the same parameter (one module used for several), so later keys overwrote earlier."""
    if not isinstance(module, torch.nn.Module):
        return None
    now = module.state_dict()
    lost = [k for k, v in state.items() if k in now and not torch.equal(now[k], v.to(now[k].dtype))]
    if not lost:
        return None
    groups: dict = {}
    for name, p in module.named_parameters(remove_duplicate=False):
        groups.setdefault(id(p), []).append(name)
    shared = [_names(g) for g in groups.values() if len(g) > 1][:_MAX_NAMES]
    return {"cls": type(module).__name__[:80], "lost": _names(lost), "shared": shared}


def _forward_of(obj):
    """When `obj` is a module of the student's own class that defines no forward (so calling it runs
    nn.Module's, which raises): its class name and the methods it does define; else None."""
    if not isinstance(obj, torch.nn.Module) or type(obj).forward is not torch.nn.Module.forward:
        return None
    if type(obj).__module__.startswith("torch"):  # nn.ModuleList and friends have no forward on purpose
        return None
    own = [
        n
        for klass in type(obj).__mro__
        if klass not in torch.nn.Module.__mro__
        for n, v in vars(klass).items()
        if callable(v) and not n.startswith("__")
    ]
    return {"cls": type(obj).__name__[:80], "methods": _names(own)}


def _missing_forward(exc: BaseException):
    """The module without a forward behind `exc`, if any: one whose call ran nn.Module's own forward,
    or a submodule of a module on the traceback (a nested call)."""
    tb, seen = exc.__traceback__, 0
    while tb is not None:
        owner = tb.tb_frame.f_locals.get("self")
        if isinstance(owner, torch.nn.Module):
            for sub in owner.modules():
                found = _forward_of(sub)
                seen += 1
                if found is not None:
                    return found
                if seen > 2000:
                    return None
        tb = tb.tb_next
    return None


def structure_message(name: str, problem: dict) -> str:
    """Words for a module whose structure the grader's state dict does not fit."""
    cls = str(problem.get("cls", name))
    if problem.get("shared") is not None:
        groups = problem.get("shared") or []
        shown = "; ".join(" = ".join(g[:3]) + (" = ..." if len(g) > 3 else "") for g in groups[:3])
        head = msg(
            "{name}: the weights loaded into {cls} did not stay: {lost} came back different.",
            name=name,
            cls=cls,
            lost=", ".join(problem.get("lost", [])[:3]),
        ) + got_expected(
            msg(
                "one parameter object under several names ({names})", names=shown or msg("shared parameters")
            ),
            msg("a separate module, with its own parameters, for each of them"),
        )
        alias = _aliased_attributes(groups)
        if alias is not None:  # two attributes of one module hold one object: self.w_k = self.w_q
            first, other = alias
            return head + hint_line(
                msg(
                    "self.{first} and self.{other} are one and the same module: each needs its own, "
                    "self.{other} = nn.Linear(...) as for self.{first}, not self.{other} = self.{first}",
                    first=first,
                    other=other,
                )
            )
        return head + hint_line(
            msg(
                "one module is shared by every block ([block] * n, or the same object appended n "
                "times): build a new one per block, nn.ModuleList([Block(...) for _ in range(n)])"
            )
        )
    attrs = problem.get("attrs", {}) or {}
    missing = problem.get("missing", []) or []
    extra = problem.get("extra", []) or []
    by_kind: dict = {}
    for attr, kind in attrs.items():
        by_kind.setdefault(kind, []).append(f"self.{attr}")
    why = []
    for kind, names in by_kind.items():
        shown = ", ".join(names[:4]) + (", ..." if len(names) > 4 else "")
        many = len(names) > 1
        if kind == "tensor":
            if many:
                why.append(
                    msg(
                        "{shown} are plain tensors, not registered: wrap each in nn.Parameter(...) (or use nn.Linear)",
                        shown=shown,
                    )
                )
            else:
                why.append(
                    msg(
                        "{shown} is a plain tensor, not registered: wrap each in nn.Parameter(...) (or use nn.Linear)",
                        shown=shown,
                    )
                )
        elif kind == "list of modules":
            if many:
                why.append(
                    msg(
                        "{shown} are Python lists of modules: nn.Module does not register (or move, or save) "
                        "modules inside it, so their parameters are not in state_dict(); use nn.ModuleList(...)",
                        shown=shown,
                    )
                )
            else:
                why.append(
                    msg(
                        "{shown} is a Python list of modules: nn.Module does not register (or move, or save) "
                        "modules inside it, so their parameters are not in state_dict(); use nn.ModuleList(...)",
                        shown=shown,
                    )
                )
        elif kind == "dict of modules":
            if many:
                why.append(
                    msg(
                        "{shown} are Python dicts of modules: nn.Module does not register (or move, or save) "
                        "modules inside it, so their parameters are not in state_dict(); use nn.ModuleDict(...)",
                        shown=shown,
                    )
                )
            else:
                why.append(
                    msg(
                        "{shown} is a Python dict of modules: nn.Module does not register (or move, or save) "
                        "modules inside it, so their parameters are not in state_dict(); use nn.ModuleDict(...)",
                        shown=shown,
                    )
                )
        elif kind == "list of tensors":
            why.append(
                msg("{shown}: a Python list of tensors is not registered; use nn.ParameterList", shown=shown)
            )
        elif kind == "missing":
            if many:
                why.append(msg("there is no {shown}: the exercise names them", shown=shown))
            else:
                why.append(msg("there is no {shown}: the exercise names it", shown=shown))
        elif kind not in ("parameter", "module"):
            if many:
                why.append(
                    msg(
                        "{shown} are a {kind}, not a registered nn.Module or nn.Parameter",
                        shown=shown,
                        kind=kind,
                    )
                )
            else:
                why.append(
                    msg(
                        "{shown} is a {kind}, not a registered nn.Module or nn.Parameter",
                        shown=shown,
                        kind=kind,
                    )
                )
    if not why and extra:
        why.append(
            msg(
                "it has parameters the exercise does not name: the check loads the listed ones and has no "
                "values for the others, so keep exactly the listed parameters (a constant such as a causal mask "
                "may be a buffer, register_buffer)"
            )
        )
    if not why:
        why.append(msg("name the submodules and parameters exactly as the exercise says"))
    lacks, more = ", ".join(missing[:4]), ", ".join(extra[:4])
    if missing and extra:
        got = msg("state_dict() without {lacks}, with extra {more}", lacks=lacks, more=more)
        expected = msg("the keys {lacks} registered in the module, and no {more}", lacks=lacks, more=more)
    elif missing:
        got = msg("state_dict() without {lacks}", lacks=lacks)
        expected = msg("the keys {lacks} registered in the module", lacks=lacks)
    else:  # what it has too many of, said as such: not as keys it should register
        got = msg("state_dict() with extra keys {more}", more=more)
        expected = msg("only the keys the exercise names, without {more}", more=more)
    return (
        msg(
            "{name}: {cls}'s parameters are not the ones the exercise names, so its state_dict does not fit.",
            name=name,
            cls=cls,
        )
        + got_expected(got, expected)
        + hint_line(i18n.join(WHY_SEPARATOR, why))
    )


# between two reasons in a structure message's hint
WHY_SEPARATOR = N_("; ")


def _aliased_attributes(groups: list):
    """When the shared parameters are two differently named attributes of one module (w_q.weight and
    w_k.weight: `self.w_k = self.w_q`), not the same block repeated at several indices (layers.0.x and
    layers.1.x): the two attribute paths; else None."""
    for group in groups:
        paths = [str(n).rsplit(".", 1)[0] for n in group if "." in str(n)]
        if len(paths) < 2:
            continue
        a, b = paths[0], paths[1]
        if any(part.isdigit() for part in set(a.split(".")) ^ set(b.split("."))):
            continue  # the names differ by an index: blocks of a list
        return a, b
    return None


def no_forward_message(name: str, info: dict) -> str:
    import difflib

    cls = str(info.get("cls", name))
    methods = [str(m) for m in info.get("methods", [])]
    close = difflib.get_close_matches("forward", methods, n=1, cutoff=0.6)
    if close:
        hint = msg("`{method}` looks like a misspelling of `forward`: rename it", method=close[0])
    else:
        hint = msg("define forward(self, ...): nn.Module calls it when you call the module")
    return (
        msg(
            "{name}: {cls} has no method named forward, so calling it runs nn.Module's own forward, which "
            "raises NotImplementedError.",
            name=name,
            cls=cls,
        )
        + got_expected(
            msg("methods {methods}", methods=", ".join(methods)) if methods else msg("methods (none)"),
            msg("a method named forward"),
        )
        + hint_line(hint)
    )


# ---------------------------------------------------------------------------------------------
# Cases, questions and judging


# what a shape error says (torch's and Python's messages), for a case's `raised_hint`
SHAPE_ERRORS = ("unpack", "shape", "size", "dimension", "Expected", "expand", "outer", "index", "match")


@dataclass
class Case:
    """One input for one question. `steps`/`outputs` travel to the kernel; `facts` stay here."""

    label: str  # e.g. "q (2, 3, 5, 8) float32, mask=causal": shown on failure
    steps: list
    outputs: list
    facts: dict = field(default_factory=dict)
    size: int = 0  # smaller cases are judged first: the first failure is the smallest

    def wire(self) -> dict:
        return {"steps": self.steps, "outputs": self.outputs}


@dataclass
class Question:
    """A graded question: its cases (visible and hidden) and the judge that decides each one."""

    name: str
    cases: Callable[[bool], list]  # cases(hidden) -> list[Case]
    judge: Callable[[Case, dict], None]  # raises CheckFailure
    needs: tuple = ()  # the graded names it calls


def judge_result(question: Question, case: Case, result: dict) -> None:
    """Turn one wire result into a verdict (raises CheckFailure/NotDone/AnswerError). In English:
    `judge_all` reads the hints of later failures from this text, and translates only its verdict."""
    if "error" in result:
        if isinstance(result.get("no_forward"), dict):
            failure = CheckFailure(no_forward_message(question.name, result["no_forward"]))
            failure.fact = True
            raise failure
        if isinstance(result.get("structure"), dict):
            failure = CheckFailure(
                structure_message(question.name, result["structure"]) + on_input(case.label)
            )
            failure.fact = True
            raise failure
        if result.get("not_implemented"):
            raise NotDone(
                msg(
                    "{name}: not done yet. It still raises NotImplementedError: "
                    "replace the stub in its answer cell with your code.",
                    name=question.name,
                )
            )
        # a case whose inputs are the likely cause of a shape error (per-sequence positions, a 2-D x)
        # names them: `raised_hint` = (hint, words one of which the error says)
        hint, words = case.facts.get("raised_hint") or ("", ())
        hint = hint if any(w in str(result["error"]) for w in words) else ""
        raise AnswerError(
            answer_error_message(question.name, result, case.label) + (hint_line(hint) if hint else "")
        )
    outputs = {}
    for name in case.outputs:
        if name not in result.get("outputs", {}):
            raise CheckFailure(
                msg("{name}: no value came back for {output}", name=question.name, output=name)
            )
        outputs[name] = decode(result["outputs"][name])
    try:
        question.judge(case, outputs)
    except CheckFailure as exc:
        raise exc.with_text(i18n.message_of(exc) + on_input(case.label)) from None


# PyTorch errors students' code raises often, and what each means in one line (English here; the
# message catalogues translate it): (pattern over "Type: message", explanation with its groups)
KNOWN_ERRORS = [
    (
        r"RuntimeError: The expanded size of the tensor \((?P<want>-?\d+)\) must match the existing size "
        r"\((?P<have>\d+)\) at non-singleton dimension (?P<dim>\d+)",
        N_(
            "expand can only stretch a dimension of size 1: dimension {dim} has size {have}, "
            "and expand asked for {want}"
        ),
    ),
    (
        r"RuntimeError: expand\(.*\): the number of sizes provided \((?P<n>\d+)\) must be greater or "
        r"equal to the number of dimensions in the tensor \((?P<d>\d+)\)",
        N_("expand needs a size for each of the tensor's {d} dimensions (-1 keeps a size), not {n}"),
    ),
    (
        r"RuntimeError: shape '(?P<shape>\[[^\]]*\])' is invalid for input of size (?P<n>\d+)",
        N_("the shape {shape} given to view/reshape does not hold the tensor's {n} elements"),
    ),
    (
        r"RuntimeError: view size is not compatible with input tensor's size and stride",
        N_(
            "view needs a contiguous tensor (a transpose or permute makes one that is not): use "
            ".reshape(...), or .contiguous().view(...)"
        ),
    ),
    (
        r"RuntimeError: mat1 and mat2 shapes cannot be multiplied \((?P<a>\d+)x(?P<b>\d+) and "
        r"(?P<c>\d+)x(?P<d>\d+)\)",
        N_(
            "a matrix product needs the left matrix's last size to equal the right one's first: {b} against {c}"
        ),
    ),
    (
        r"RuntimeError: Expected size for first two dimensions of batch2 tensor to be: "
        r"(?P<want>\[[^\]]*\]) but got: (?P<got>\[[^\]]*\])",
        N_(
            "a batched matrix product needs the inner sizes to agree: the right tensor's first two "
            "sizes are {got}, and the left one asks for {want}"
        ),
    ),
    (
        r"RuntimeError: The size of tensor a \((?P<a>\d+)\) must match the size of tensor b "
        r"\((?P<b>\d+)\) at non-singleton dimension (?P<dim>\d+)",
        N_(
            "the two tensors do not broadcast: dimension {dim} has size {a} in one and {b} in the other, "
            "and neither is 1"
        ),
    ),
    (
        r"RuntimeError: function (?P<fn>\w+) returned an incorrect number of gradients "
        r"\(expected (?P<want>\d+), got (?P<got>\d+)\)",
        N_(
            "backward must return one gradient for each input of forward, None for an input that needs "
            "none: {want} of them, not {got}"
        ),
    ),
    (
        r"RuntimeError: a leaf Variable that requires grad is being used in an in-place operation",
        N_(
            "an in-place operation (+=, x[...] = ..., .add_()) changed a parameter or another tensor made "
            "with requires_grad=True: compute a new tensor (x = x + y), or change it under torch.no_grad()"
        ),
    ),
    (
        r"RuntimeError: one of the variables needed for gradient computation has been modified by an "
        r"inplace operation",
        N_(
            "an in-place operation (+=, x[...] = ..., .add_()) changed a tensor autograd had saved for "
            "backward: use the out-of-place form (x = x + y, not x += y)"
        ),
    ),
]


def explain_error(error: str) -> str:
    """What a PyTorch error (its "Type: message" text) means, in one English line; "" when it is not
    one of KNOWN_ERRORS."""
    for pattern, explanation in KNOWN_ERRORS:
        m = re.match(pattern, error)
        if m:
            return msg(explanation, **m.groupdict())
    return ""


def answer_error_message(name: str, result: dict, label: str) -> i18n.Msg:
    """The message of an answer that raised: what the error means when it is a known one, the error
    itself, the line of the student's code that raised it, and the input."""
    error = str(result.get("error", ""))
    at = result.get("at")
    where = ""
    if isinstance(at, dict) and isinstance(at.get("line"), int):
        code = str(at.get("code") or "")[:200]
        cell = str(at.get("cell", ""))[:200]
        if code:
            where = LINE + msg(
                "in your code: {cell}, line {line}: {code}", cell=cell, line=at["line"], code=code
            )
        else:
            where = LINE + msg("in your code: {cell}, line {line}", cell=cell, line=at["line"])
    meaning = explain_error(error)
    if meaning:
        head = msg("{name} raised an error: {meaning}", name=name, meaning=meaning)
        return head + LINE + msg("the error: {error}", error=error) + where + on_input(label)
    line = re.fullmatch(r"(.*) \(line (\d+)\)", error, re.S)
    if line:  # the line the answer's own error names, said apart from its text (quoted as code)
        raised = msg(
            "{name} raised {error} (line {line})", name=name, error=line.group(1), line=int(line.group(2))
        )
    else:
        raised = msg("{name} raised {error}", name=name, error=error)
    return raised + where + on_input(label)


def _hint_of(text: str) -> str:
    """The hint of a message: the field of its `hint_line`, else its `hint: ` line's text."""
    if isinstance(text, i18n.Msg):
        for part in text.parts or (text,):
            if isinstance(part, i18n.Msg) and part.msgid == HINT:
                return part.fields["hint"]
    for line in text.splitlines():
        if line.strip().startswith("hint: "):
            return line.strip()[len("hint: ") :]
    return ""


# the frames of a failure's lines under its first: each on its own line, indented by two spaces
LINE = "\n  "
HINT = N_("hint: {hint}")


def hint_line(hint: str) -> i18n.Msg:
    """A failure's `hint:` line (with the newline before it); `hint` a `Msg`, or data."""
    return LINE + msg(HINT, hint=hint)


def on_input(label: str) -> i18n.Msg:
    """The `on input:` line that ends a failure's message (with the newline before it)."""
    return LINE + msg("on input: {label}", label=label)


def got_expected(got, expected) -> i18n.Msg:
    """The `got:` and `expected:` lines (each with the newline before it); a value a `Msg` or data."""
    return LINE + msg("got:      {got}", got=got) + LINE + msg("expected: {expected}", expected=expected)


@i18n.localized
def judge_all(question: Question, pairs) -> None:
    """Judge (case, result) pairs in order (smallest first). Raise the first failure; when later cases
    show other mistakes (a mask bug shows only on masked inputs), name those too.

    The judging is in English and only the finished verdict is translated (the decorator), exactly
    as the grader judges in English and translates the message it writes: so the self-check and the
    grade give the same lines, the "also, on ..." ones included, in any language."""
    first, extra = None, []
    for case, result in pairs:
        try:
            judge_result(question, case, result)
        except (NotDone, AnswerError):
            if first is None:
                raise
        except CheckFailure as exc:
            if first is None:
                first = exc
                continue
            hint = exc.hint
            repeated = hint == first.hint or hint in str(first)
            # a fact, or a separating probe's hint (after a first failure that names no mistake), or
            # the first mistake and one more ("two mistakes at once: <the first>; and ..."): else the
            # first mistake may be all this failure shows (see CheckFailure.separates)
            known = first.separates or first.fact
            separates = exc.fact or (exc.separates and (not known or bool(first.hint) and first.hint in hint))
            if hint and separates and not repeated and hint not in [h for h, _ in extra]:
                extra.append((hint, case.label))
            if len(extra) >= 2:
                break
        except Exception:  # noqa: BLE001 - a malformed later result never hides the first failure
            if first is None:
                raise
    if first is not None:
        if extra:
            also = i18n.join(
                "", (LINE + msg("also, on {label}: {hint}", label=label, hint=hint) for hint, label in extra)
            )
            raise first.with_text(i18n.message_of(first) + also) from None
        raise first


def ordered_cases(question: Question, hidden: bool) -> list:
    cases = list(question.cases(False))
    if hidden:
        cases += list(question.cases(True))
    return sorted(cases, key=lambda c: c.size)


# At grading (the grader's first request to the kernel calls `record_results()`) every case's result
# is kept, under a digest of its question and inputs: the grader's probe after the last cell then
# asks for what the lesson's test cells computed (`recorded`) instead of sending the same inputs to
# call the student's code on them again. Never in a learner's kernel, where an answer fixed after
# its check must be run again. (A submission that turns it off only makes the probe call its code.)
_RECORDED: dict = {}
_RECORDING = [False]


def record_results() -> None:
    _RECORDING[0] = True


def case_digest(name: str, wire: dict) -> str:
    """The name of one case of question `name` (the same in the grader and in the kernel)."""
    return hashlib.sha256((name + "\0" + json.dumps(wire, sort_keys=True)).encode()).hexdigest()


def _identities(namespace: dict) -> dict:
    """The object behind each function and class name of `namespace` (a recorded result is used
    only while the names the checks look up still name the same objects)."""
    return {k: id(v) for k, v in namespace.items() if isinstance(v, (types.FunctionType, type))}


def run_case(name: str, wire: dict, namespace: dict, device=None, reuse: bool = False) -> str:
    """One case of question `name` run against `namespace`: its wire result as JSON text. At
    grading it is recorded, and with `reuse` a result recorded under the same names is returned
    instead (a test cell's hidden check repeats its visible cases)."""
    digest = None
    if device is None and _RECORDING[0]:
        digest = case_digest(name, wire)
        entry = _RECORDED.get(digest)
        if reuse and isinstance(entry, tuple) and entry[1] == _identities(namespace):
            return entry[0]
    with _depends.in_place(name, namespace):  # BYHAND-DEPENDS: failing earlier answers -> references
        text = json.dumps(run_steps(wire["steps"], wire["outputs"], namespace, device))
    if digest is not None:
        _RECORDED[digest] = (text, _identities(namespace))
    return text


def recorded(name: str, digests: list, namespace: dict, names: list) -> str:
    """The recorded results of these cases of `name` as a JSON list; null for a case not recorded,
    or recorded when one of `names` (the names its checks look up) named another object than it
    does now (redefined after its test cell: the probe then calls what is there now)."""
    now = {n: id(namespace[n]) if n in namespace else None for n in names}
    out = []
    for digest in digests:
        entry = _RECORDED.get(digest)
        ok = isinstance(entry, tuple) and len(entry) == 2 and isinstance(entry[0], str)
        ok = ok and isinstance(entry[1], dict) and all(entry[1].get(n) == i for n, i in now.items())
        out.append(entry[0] if ok else "null")
    return "[" + ",".join(out) + "]"


class OutdatedChecks(LookupError):
    """A notebook asks for a question this version of the checks does not know."""


def check(
    questions: dict, name: str, namespace: dict, hidden: bool = False, device=None, traceback: bool = False
) -> None:
    """Self-check one question inside the student's kernel. Prints a one-line success, raises a
    CheckFailure with a hint otherwise: IPython shows its message alone, or with `traceback` the whole
    traceback, that of the student's own error included. `device` (e.g. "cuda"): build the inputs there."""
    if name not in questions:  # a notebook newer than this package: say so, not KeyError
        from . import __version__

        raise OutdatedChecks(
            i18n.localize(
                msg(
                    "{name}: this exercise is newer than your byhand checks (version {version}): update "
                    "them (pip install -U with the course's install line) and restart the kernel",
                    name=name,
                    version=__version__,
                )
            )
        )
    question = questions[name]
    cases = ordered_cases(question, hidden)

    def results():
        for case in cases:
            yield case, json.loads(run_case(name, case.wire(), namespace, device, reuse=True))

    _RAISED[0] = None
    replaced = _depends.note(_depends.replaced(name, namespace))  # BYHAND-DEPENDS: the one line
    try:
        judge_all(question, results())
    except CheckFailure as exc:
        if replaced:  # BYHAND-DEPENDS
            exc = exc.with_text(i18n.message_of(exc) + LINE + i18n.localize(replaced))  # BYHAND-DEPENDS
        raised, _RAISED[0] = _RAISED[0], None
        if traceback or _VERBOSE[0]:
            exc.full_traceback = True
            if isinstance(exc, AnswerError) and raised is not None:
                raise exc from raised  # where the student's code raised, then this check
        if replaced:  # BYHAND-DEPENDS: the failure with the line
            raise exc from None
        raise
    if hidden:
        done = msg("{name}: all {n} cases, hidden ones included, pass.", name=name, n=len(cases))
    else:
        done = msg("{name}: all {n} visible cases pass.", name=name, n=len(cases))
    print(i18n.localize(done + (LINE + replaced if replaced else "")))  # BYHAND-DEPENDS: + the line


def by_name(*questions: Question) -> dict:
    """A check module's `QUESTIONS`: its questions by name, in lesson order."""
    return {q.name: q for q in questions}


def lesson_check(questions: dict, example: str, devices: bool = True) -> Callable:
    """A check module's `check(name, namespace, hidden=False, device=None)`, what its lesson's test
    cells call (`example`: a question its docstring shows). `devices=False`: a module whose cases
    are built on the CPU only, whose `check` takes no `device`."""
    usage = f'Self-check: `check("{example}", globals())`.'
    usage += "\n    `traceback=True`: a failure shows the whole traceback, not only its message."
    if devices:

        def lesson_check(
            name: str, namespace: dict, hidden: bool = False, device=None, traceback: bool = False
        ) -> None:
            check(questions, name, namespace, hidden, device, traceback)

        usage += '\n    `device` (e.g. "cuda"): the inputs are built there.'
    else:

        def lesson_check(name: str, namespace: dict, hidden: bool = False, traceback: bool = False) -> None:
            check(questions, name, namespace, hidden, traceback=traceback)

    lesson_check.__name__ = lesson_check.__qualname__ = "check"
    lesson_check.__doc__ = usage
    return lesson_check


# ---------------------------------------------------------------------------------------------
# What an autograd.Function keeps for backward: recorded by the helpers that run in the student's
# kernel (backward.run_function, flash_attention.run_function), which report it as plain rows


def _tensors_in(value, depth=0):
    if isinstance(value, torch.Tensor):
        yield value
    elif depth < 2 and isinstance(value, (tuple, list)):
        for v in value:
            yield from _tensors_in(v, depth + 1)
    elif depth < 2 and isinstance(value, dict):
        for v in value.values():
            yield from _tensors_in(v, depth + 1)


def apply_recording(apply: Callable, *args) -> tuple:
    """Call `apply(*args)` and collect what it keeps for backward: (its result, the result's
    grad_fn, [(how, tensor)]) with how "saved" (by save_for_backward), "inner" (saved by an op
    inside forward, i.e. a graph built there) or "ctx" (an attribute of ctx)."""
    packed: list = []

    def pack(t):
        packed.append(t)
        return t

    with torch.autograd.graph.saved_tensors_hooks(pack, lambda t: t):
        out = apply(*args)
    node = getattr(out, "grad_fn", None)
    try:  # what save_for_backward holds; whatever was packed before it, ops inside forward saved
        n_saved = len(node.saved_tensors)
    except Exception:  # noqa: BLE001 - not a custom Function's node, or nothing saved
        n_saved = 0
    kept = [("saved" if i >= len(packed) - n_saved else "inner", t) for i, t in enumerate(packed)]
    for value in list(getattr(node, "__dict__", {}).values()):
        kept += [("ctx", t) for t in _tensors_in(value)]
    return out, node, kept


def backward_error(out: Any, grad: torch.Tensor) -> str | None:
    """`out.backward(grad)`; what went wrong as text (a fact to judge), None when it ran. A stub's
    NotImplementedError goes on up: the exercise is not done."""
    try:
        if not isinstance(out, torch.Tensor):
            raise TypeError(f"apply returned {type(out).__name__}, not a tensor")
        out.backward(grad)
    except NotImplementedError:
        raise
    except Exception as exc:  # the answer's backward failed: a fact to judge, not a crash
        return f"{type(exc).__name__}: {exc}"[:500]
    return None


def rand(*shape, dtype=torch.float32, mean=0.0, std=1.0, generator=None) -> torch.Tensor:
    """Random test input with a non-zero mean and a std far from 1 when asked."""
    return (torch.randn(*shape, dtype=torch.float64, generator=generator) * std + mean).to(dtype)


def gen(seed: int) -> torch.Generator:
    return torch.Generator().manual_seed(seed)


def random_mask(kind: str | None, lead: tuple, lq: int, lk: int, generator: torch.Generator):
    """An attention mask (True = may attend) of `kind`: None (no mask), "causal" (Lq, Lk),
    "random" (..., Lq, Lk) with key 0 always allowed, "dead_row" the same with query 1 allowed no
    key, "broadcast" (Lq, Lk) shared by the leading dims, key 0 always allowed."""
    if kind == "causal":
        return torch.tril(torch.ones(lq, lk, dtype=torch.bool))
    if kind in ("random", "dead_row"):
        mask = torch.rand(*lead, lq, lk, generator=generator) > 0.4
        mask[..., 0] = True
        if kind == "dead_row":
            mask[..., 1, :] = False  # a query with no allowed key
        return mask
    if kind == "broadcast":
        mask = torch.rand(lq, lk, generator=generator) > 0.3
        mask[:, 0] = True
        return mask
    return None
