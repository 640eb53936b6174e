"""Does the wire format carry every value a check sends back exactly, and refuse what is malformed?"""

import math

import numpy as np
import pytest
import torch
from byhand._core import MAX_WIRE_ELEMENTS, Unsupported, decode, encode

DTYPES = [
    torch.float32,
    torch.float64,
    torch.float16,
    torch.bfloat16,
    torch.int64,
    torch.int32,
    torch.int8,
    torch.uint8,
    torch.bool,
]


@pytest.mark.parametrize("dtype", DTYPES, ids=str)
def test_tensor_round_trip_is_bit_exact(dtype):
    """Does a tensor come back with the same dtype, shape and bits, whatever its memory layout?"""
    g = torch.Generator().manual_seed(0)
    x = (torch.randn(3, 4, 5, generator=g) * 50).to(dtype).transpose(0, 2)  # non-contiguous (5, 4, 3)
    y = decode(encode(x))
    assert y.dtype == dtype and y.shape == x.shape
    assert torch.equal(y, x)


def test_non_finite_values_survive():
    """Do NaN and +-inf come back as themselves, in tensors and as plain floats (JSON has neither)?"""
    t = torch.tensor([float("nan"), float("inf"), -float("inf"), 0.0])
    y = decode(encode(t))
    assert torch.isnan(y[0]) and y[1] == math.inf and y[2] == -math.inf
    assert math.isnan(decode(encode(float("nan")))) and decode(encode(-math.inf)) == -math.inf


def test_sequences_keep_their_kind_and_nesting():
    """Are tuples still tuples and lists still lists, nested, with numpy values turned into plain ones?"""
    value = (1, [2.5, "x", None, True], (torch.zeros(2),), np.float32(3.0), np.arange(3))
    y = decode(encode(value))
    assert isinstance(y, tuple) and isinstance(y[1], list) and isinstance(y[2], tuple)
    assert y[0] == 1 and y[1] == [2.5, "x", None, True] and y[3] == 3.0
    assert torch.equal(y[4], torch.arange(3))


def test_a_lying_tensor_subclass_sends_its_real_bytes():
    """Can a tensor subclass that lies in __eq__, tolist and numpy change what reaches the grader?"""

    class Liar(torch.Tensor):
        def __eq__(self, other):
            return True

        def tolist(self):
            return [0.0]

        def numpy(self, *a, **k):
            return np.zeros(1)

    x = torch.arange(4.0).as_subclass(Liar)
    y = decode(encode(x))
    assert type(y) is torch.Tensor and y.tolist() == [0.0, 1.0, 2.0, 3.0]


def test_unsupported_values_are_named_not_pickled():
    """Is an object the wire cannot carry sent as the name of its type?"""
    assert decode(encode(object())) == Unsupported("object")
    assert decode(encode(torch.zeros(2, dtype=torch.complex64))) == Unsupported(
        "tensor of dtype torch.complex64"
    )


@pytest.mark.parametrize(
    "forged, why",
    [
        ({"__tensor__": "float32", "shape": [MAX_WIRE_ELEMENTS + 1], "data": ""}, "too large"),
        ({"__tensor__": "float32", "shape": [-1, 4], "data": ""}, "too large"),
        ({"__tensor__": "float32", "shape": [3], "data": "AAAAAAAAAAA="}, "do not match"),
        ({"__tensor__": "float32", "shape": [1], "data": "AAAA"}, "multiple of element size"),
        ({"something": 1}, "malformed"),
        ([1, 2], "malformed"),
    ],
)
def test_forged_wire_values_are_refused(forged, why):
    """Does a forged or truncated value raise ValueError instead of allocating or guessing?"""
    with pytest.raises(ValueError, match=why):
        decode(forged)


def test_unknown_dtype_is_refused():
    """Is a dtype name the grader does not know refused?"""
    with pytest.raises((ValueError, KeyError)):
        decode({"__tensor__": "float8", "shape": [1], "data": "AA=="})
