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
import json
import math
import traceback
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

import numpy as np
import torch

from . import i18n

# ---------------------------------------------------------------------------------------------
# Failures


class CheckFailure(AssertionError):
    """A wrong answer. The message says what is wrong, got vs expected, and a hint."""


class NotDone(CheckFailure):
    """The exercise is still the blank stub (raises NotImplementedError)."""


class AnswerError(CheckFailure):
    """The answer raised an exception other than NotImplementedError."""


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

    def __repr__(self):
        return f"<a {self.type_name}>"


# ---------------------------------------------------------------------------------------------
# Steps: what runs where the student's code lives


def ref(name: str, attr: str | None = None) -> dict:
    """A reference to a value bound by an earlier step (optionally one of its attributes)."""
    return {"ref": name, "attr": attr} if attr else {"ref": name}


def let(out: str, value: Any) -> dict:
    return {"op": "let", "out": out, "value": encode(value)}


def new(out: str, cls: str, *args, state: dict | None = None, dtype=None, **kwargs) -> dict:
    """Instantiate `cls` (a graded class name, or a dotted `torch.` path), move it to `dtype`,
    then load `state` (a dict of tensors)."""
    return {
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


def seed(value: int) -> dict:
    return {"op": "seed", "seed": int(value)}


def _arg(value: Any) -> Any:
    if isinstance(value, dict) and "ref" in value:
        return value
    return {"value": encode(value)}


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


def run_steps(steps: list, outputs: list, namespace: dict, device=None) -> dict:
    """Run a case's steps against `namespace` (the student's globals). Returns wire data:
    {"outputs": {name: value}} or {"error": ..., "not_implemented": bool, "step": i}.

    Inputs are built on `device` (None: where they are decoded, the CPU), modules the steps create
    are moved there, and a module is always called with its inputs on the device its parameters
    live on. Results come back through the wire, on the CPU."""
    env: dict[str, Any] = {}

    def resolve(a, target=None):
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
                    with torch.no_grad():
                        obj.load_state_dict({k: decode(v) for k, v in step["state"].items()})
                if device is not None and isinstance(obj, torch.nn.Module):
                    obj = obj.to(device)
                env[step["out"]] = obj
            elif op == "call":
                fn = step["fn"]
                if isinstance(fn, str):
                    if fn not in namespace:
                        raise NameError(f"name '{fn}' is not defined: run the cell that defines it")
                    fn = namespace[fn]
                else:
                    fn = resolve(fn)
                target = module_device(fn)  # a module gets its inputs where its parameters are
                env[step["out"]] = fn(
                    *[resolve(a, target) for a in step["args"]],
                    **{k: resolve(v, target) for k, v in step["kwargs"].items()},
                )
            else:
                raise ValueError(f"unknown step {op!r}")
        except NotImplementedError:
            return {"error": "NotImplementedError", "not_implemented": True, "step": i}
        except Exception as exc:  # the student's code raised: report it, never crash the runner
            tb = traceback.extract_tb(exc.__traceback__)
            where = f" (line {tb[-1].lineno})" if tb else ""
            return {
                "error": f"{type(exc).__name__}: {exc}{where}"[:2000],
                "not_implemented": False,
                "step": i,
            }
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
# Cases, questions and judging


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


@i18n.localized
def judge_result(question: Question, case: Case, result: dict) -> None:
    """Turn one wire result into a verdict (raises CheckFailure/NotDone/AnswerError)."""
    if "error" in result:
        if result.get("not_implemented"):
            raise NotDone(
                f"{question.name}: not done yet. It still raises NotImplementedError: "
                f"replace the stub in its answer cell with your code."
            )
        raise AnswerError(f"{question.name} raised {result['error']}\n  on input: {case.label}")
    outputs = {}
    for name in case.outputs:
        if name not in result.get("outputs", {}):
            raise CheckFailure(f"{question.name}: no value came back for {name}")
        outputs[name] = decode(result["outputs"][name])
    try:
        question.judge(case, outputs)
    except CheckFailure as exc:
        raise type(exc)(f"{exc}\n  on input: {case.label}") from None


def ordered_cases(question: Question, hidden: bool) -> list:
    cases = list(question.cases(False))
    if hidden:
        cases += list(question.cases(True))
    return sorted(cases, key=lambda c: c.size)


def check(questions: dict, name: str, namespace: dict, hidden: bool = False, device=None) -> None:
    """Self-check one question inside the student's kernel. Prints a one-line success, raises a
    CheckFailure with a hint otherwise. `device` (e.g. "cuda"): build the inputs there."""
    question = questions[name]
    cases = ordered_cases(question, hidden)
    for case in cases:
        result = json.loads(json.dumps(run_steps(case.steps, case.outputs, namespace, device)))
        judge_result(question, case, result)
    kind = "cases, hidden ones included," if hidden else "visible cases"
    print(i18n.localize(f"{name}: all {len(cases)} {kind} pass."))


# ---------------------------------------------------------------------------------------------
# Judge helpers: comparisons that say got vs expected


def _fmt(t: torch.Tensor, limit: int = 6) -> str:
    flat = t.detach().reshape(-1)
    body = ", ".join(f"{v:.4g}" if t.dtype.is_floating_point else str(v) for v in flat[:limit].tolist())
    more = ", ..." if flat.numel() > limit else ""
    return f"[{body}{more}]"


def expect_tensor(got: Any, what: str, shape=None, dtype=None) -> torch.Tensor:
    if not isinstance(got, torch.Tensor):
        raise CheckFailure(f"{what} should be a tensor, got {got!r}")
    if shape is not None and tuple(got.shape) != tuple(shape):
        raise CheckFailure(
            f"{what} has the wrong shape.\n  got:      {tuple(got.shape)}\n  expected: {tuple(shape)}"
        )
    if dtype is not None and got.dtype != dtype:
        raise CheckFailure(f"{what} has the wrong dtype.\n  got:      {got.dtype}\n  expected: {dtype}")
    return got


def expect_dtype(got: torch.Tensor, dtype, what: str) -> None:
    """Graded functions keep their input's dtype (float32 in, float32 out)."""
    if got.dtype != dtype:
        raise CheckFailure(
            f"{what} should keep the input dtype.\n  got:      {got.dtype}\n  expected: {dtype}"
        )


def close(got: torch.Tensor, expected: torch.Tensor, rtol=None, atol=None) -> bool:
    if got.shape != expected.shape:
        return False
    if got.dtype == torch.bool or expected.dtype == torch.bool:
        return bool(torch.equal(got.to(torch.bool), expected.to(torch.bool)))
    if rtol is None:
        rtol, atol = (1e-4, 1e-5) if expected.dtype != torch.float64 else (1e-7, 1e-9)
    g, e = got.to(torch.float64), expected.to(torch.float64)
    if torch.isnan(g).any() != torch.isnan(e).any():
        return False
    return bool(torch.allclose(g, e, rtol=rtol, atol=atol, equal_nan=True))


def assert_close(got: Any, expected: torch.Tensor, what: str, hint: str = "", rtol=None, atol=None):
    got = expect_tensor(got, what, shape=expected.shape)
    if close(got, expected, rtol, atol):
        return
    g, e = got.detach().to(torch.float64), expected.detach().to(torch.float64)
    if got.dtype == torch.bool or expected.dtype == torch.bool:
        idx = (g != e).nonzero()[0].tolist()
        detail = f"first difference at index {tuple(idx)}"
    else:
        diff = (g - e).abs().nan_to_num(nan=float("inf"))
        flat = int(diff.reshape(-1).argmax())
        idx = np.unravel_index(flat, tuple(diff.shape)) if diff.dim() else ()
        detail = (
            f"largest difference {float(diff.reshape(-1)[flat]):.3g} at index "
            f"{tuple(int(i) for i in idx)}: got {float(g.reshape(-1)[flat]):.6g}, "
            f"expected {float(e.reshape(-1)[flat]):.6g}"
        )
    msg = (
        f"{what} is not what it should be.\n  got:      {_fmt(got)}\n  expected: {_fmt(expected)}\n  {detail}"
    )
    if hint:
        msg += f"\n  hint: {hint}"
    raise CheckFailure(msg)


def diagnose(got: torch.Tensor, mistakes: list) -> str:
    """The hint of the first known mistake whose output `got` matches, or "".
    `mistakes` is a list of (hint, function computing that mistake's output)."""
    for hint, compute in mistakes:
        try:
            wrong = compute()
        except Exception:
            continue
        if isinstance(wrong, torch.Tensor) and close(got, wrong, rtol=1e-3, atol=1e-4):
            return hint
    return ""


def rand(*shape, dtype=torch.float32, mean=0.0, std=1.0, generator=None) -> torch.Tensor:
    """Random test input with a non-zero mean and a std far from 1 when asked."""
    return (torch.randn(*shape, dtype=torch.float64, generator=generator) * std + mean).to(dtype)


def gen(seed: int) -> torch.Generator:
    return torch.Generator().manual_seed(seed)
