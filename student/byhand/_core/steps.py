"""The step language of a case (`ref`, `let`, `new`, `call`, `calling`, `seed`, `graded`, `helper`)
and `run_steps`, which runs a case's steps where the student's code lives and sends back only wire
data: the outputs, or what went wrong (the error, the line of the student's code that raised it,
a module whose structure does not fit: see structure.py). `_RAISED` (the last error a student's
code raised, for a self-check's full traceback) lives here and only here.
"""

from __future__ import annotations

import importlib
from typing import Any

import torch

from .structure import _forward_of, _missing_forward, _shared_problem, _state_problem
from .wire import _DTYPE_NAMES, _DTYPES, Unsupported, decode, encode

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
    mod = importlib.import_module(f"..{module}", __package__)
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
        moved = [_to_device(v, device) for v in value]
        if all(m is v for m, v in zip(moved, value)):
            return value  # nothing moved: the caller's own list, so a change made to it in place shows
        return type(value)(moved)
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

    first = found = None
    tb = exc.__traceback__
    while tb is not None:
        if tb.tb_frame.f_globals is namespace:
            first = first or tb
            found = tb
        tb = tb.tb_next
    if found is None:
        return None

    def where(frame_tb) -> dict:
        code, line = frame_tb.tb_frame.f_code, frame_tb.tb_lineno
        cell = code.co_filename
        try:  # IPython keeps which execution each cell's code name came from
            number = get_ipython().compile._filename_map.get(cell)  # noqa: F821 - IPython's builtin
            if number is not None:
                cell = f"Cell In[{number}]"
        except Exception:  # noqa: BLE001 - plain Python, or another IPython: the file name it has
            pass
        text = linecache.getline(code.co_filename, line, frame_tb.tb_frame.f_globals).strip()
        return {"cell": cell[:200], "line": int(line), "code": text[:200]}

    at = where(found)
    if first.tb_frame.f_code.co_filename != found.tb_frame.f_code.co_filename:
        # raised in another cell's code (an earlier answer) that this answer called: say where from
        at["from"] = where(first)
    return at


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
