"""Plain data across the kernel boundary (``autograder.student.plain``): what goes in comes
out, and bytes it could not have written (a pickle above all) are refused, never run."""

import io
import math
import pickle
import struct
from collections import OrderedDict, namedtuple

import pytest
import torch

from autograder.student import plain

Pair = namedtuple("Pair", "a b")


def _same(a, b):
    if isinstance(a, torch.Tensor):
        return (type(b) is torch.Tensor and a.dtype == b.dtype and a.shape == b.shape
                and a.requires_grad == b.requires_grad and torch.equal(a.detach(), b.detach()))
    if isinstance(a, float) and math.isnan(a):
        return isinstance(b, float) and math.isnan(b)
    if isinstance(a, (list, tuple)):
        return type(b) is (tuple if isinstance(a, tuple) and type(a) is not torch.Size
                           else type(a) if type(a) is torch.Size else list) and len(a) == len(
            b) and all(_same(x, y) for x, y in zip(a, b))
    if isinstance(a, dict):
        return type(b) is dict and list(a) == list(b) and all(_same(a[k], b[k]) for k in a)
    return type(a) is type(b) and a == b


VALUES = {
    "numbers": [0, -1, 2**80, 1.5, -0.0, float("nan"), float("inf"), -math.inf, 1 + 2j],
    "flags": [True, False, None], "text": ["", "ñ€", "\ud800"],
    "containers": {"t": (1, (2, [3])), 4: "int key", (1, 2): "tuple key", None: {}},
    "dtypes": [torch.float16, torch.bfloat16, torch.bool], "device": torch.device("cpu"),
    "size": torch.Size([2, 3]),
    "tensors": [torch.randn(3, 4)[:, 1], torch.tensor(True), torch.ones(2, dtype=torch.bfloat16),
                torch.empty(0, 3), torch.tensor(3.0, requires_grad=True), torch.arange(5),
                torch.randn(2, dtype=torch.complex64), torch.zeros(2, 2, dtype=torch.int8)],
}


def test_what_goes_in_comes_out():
    assert _same(VALUES, plain.loads(plain.dumps(VALUES)))


def test_subclasses_of_builtin_types_come_out_as_the_builtin_type():
    back = plain.loads(plain.dumps([OrderedDict(x=1), Pair(1, 2), torch.nn.Parameter(
        torch.ones(2))]))
    assert type(back[0]) is dict and type(back[1]) is tuple and back[1] == (1, 2)
    assert type(back[2]) is torch.Tensor and back[2].requires_grad


class _Lying(torch.Tensor):
    pass


@pytest.mark.parametrize("value", [object(), {1, 2}, b"bytes", torch.ones(2).as_subclass(_Lying),
                                   torch.ones(2).to_sparse()],
                         ids=["object", "set", "bytes", "subclass", "sparse"])
def test_anything_else_cannot_be_written(value):
    with pytest.raises(TypeError):
        plain.dumps({"x": value})


def _forged(header, blob=b""):
    text = header.encode() if isinstance(header, str) else header
    return plain.MAGIC + struct.pack("<Q", len(text)) + text + blob


class _Runs:
    def __reduce__(self):
        return (print, ("ejecutado",))


@pytest.mark.parametrize("raw", [
    b"", pickle.dumps(_Runs()), plain.MAGIC, plain.MAGIC + b"\xff" * 8,
    _forged("{"), _forged('{"value": 1}'), _forged('{"value": {"x": 1}, "tensors": []}'),
    _forged('{"value": {"T": 0}, "tensors": []}'),
    _forged('{"value": {"T": 0}, "tensors": [{"dtype": "float32", "shape": [4], "offset": 0,'
            ' "nbytes": 16, "device": "cpu", "requires_grad": false}]}', b"\0" * 8),
    _forged('{"value": {"T": 0}, "tensors": [{"dtype": "object", "shape": [1], "offset": 0,'
            ' "nbytes": 8, "device": "cpu", "requires_grad": false}]}', b"\0" * 8),
    _forged('{"value": {"d": [[[1], 2]]}, "tensors": []}'),
    _forged('{"value": {"dtype": "__import__"}, "tensors": []}'),
    _forged("[" * 100000 + "]" * 100000),
], ids=lambda raw: f"{len(raw)}B")
def test_bytes_it_could_not_have_written_are_refused(raw, capsys):
    with pytest.raises(ValueError):
        plain.loads(raw)
    assert "ejecutado" not in capsys.readouterr().out


def test_the_grader_and_the_in_process_runner_cross_the_same_way():
    """``roundtrip`` (tests, reports) is what the kernel writes and the grader parses."""
    from autograder.hidden.runner import roundtrip

    assert _same(VALUES, roundtrip(VALUES))
    with pytest.raises(Exception):  # noqa: B017 - torch.load would have read it
        torch.load(io.BytesIO(plain.dumps(VALUES)), weights_only=True)
