"""The wire: how a case's inputs and an answer's outputs travel between the grader and the
student's kernel as JSON (tensors as dtype, shape and base64 bytes; no pickle), strict on the way in
(`decode`), and `Unsupported`, an output that is none of those.
"""

from __future__ import annotations

import base64
import math
from dataclasses import dataclass
from typing import Any

import numpy as np
import torch

from ..i18n import msg

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
