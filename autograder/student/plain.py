"""Plain data across the kernel boundary, without pickle.

What a hidden test observes in the student's kernel reaches the grader as bytes the
grader parses, never as a program it runs: a JSON header (numbers, strings, lists, and
tagged objects for tuples, dicts, dtypes, devices, complex numbers and tensors) followed
by the tensors' raw bytes, as in safetensors. Loading checks every tag, dtype, shape and
offset and raises ``ValueError`` on anything else: a forged file is a failed test, and no
byte of it can execute. The same code runs both ways in one process for the in-process
grading of tests and reports (``autograder.hidden.runner.roundtrip``).
"""

import json
import math
import struct

import torch

MAGIC = b"AG-PLAIN-1\n"
MAX_DEPTH = 64
DTYPES = {str(d).removeprefix("torch."): d for d in (
    torch.float16, torch.bfloat16, torch.float32, torch.float64, torch.complex64,
    torch.complex128, torch.uint8, torch.int8, torch.int16, torch.int32, torch.int64,
    torch.bool)}
DTYPE_NAMES = {d: name for name, d in DTYPES.items()}
SINGLE_TAGS = ("u", "d", "T", "dtype", "device", "c", "size")


def dumps(value):
    """``value`` (None, bools, numbers, strings, lists, tuples, dicts, dense tensors,
    dtypes, devices, ``torch.Size``) as bytes; ``TypeError`` for anything else."""
    tensors, blobs = [], []
    header = json.dumps({"value": _encode(value, tensors, blobs, 0), "tensors": tensors},
                        separators=(",", ":")).encode()
    return MAGIC + struct.pack("<Q", len(header)) + header + b"".join(blobs)


def _encode(value, tensors, blobs, depth):
    if depth > MAX_DEPTH:
        raise TypeError("datos demasiado anidados")
    kind = type(value)
    # Subclasses of the built-in types (a numpy float, an OrderedDict, a named tuple) are
    # read through the built-in type's own methods: none of their overrides runs.
    if value is None or kind in (bool, int, str):
        return value
    if isinstance(value, bool):
        return bool.__bool__(value)
    if isinstance(value, (int, str)):
        return int.__int__(value) if isinstance(value, int) else str.__str__(value)
    if isinstance(value, float):
        value = float.__float__(value)
        return value if math.isfinite(value) else {"c": [value, None]}
    if isinstance(value, complex):
        return {"c": [complex.__getattribute__(value, "real"),
                      complex.__getattribute__(value, "imag")]}
    if kind is torch.Size:
        return {"size": [int(n) for n in value]}
    if isinstance(value, list):
        return [_encode(v, tensors, blobs, depth + 1) for v in list.__iter__(value)]
    if isinstance(value, tuple):
        return {"u": [_encode(v, tensors, blobs, depth + 1) for v in tuple.__iter__(value)]}
    if isinstance(value, dict):
        return {"d": [[_encode(k, tensors, blobs, depth + 1), _encode(v, tensors, blobs, depth + 1)]
                      for k, v in dict.items(value)]}
    if kind is torch.dtype:
        return {"dtype": DTYPE_NAMES[value]} if value in DTYPE_NAMES else _refuse(value)
    if kind is torch.device:
        return {"device": str(value)}
    if kind in (torch.Tensor, torch.nn.Parameter):
        return {"T": _encode_tensor(value, tensors, blobs)}
    return _refuse(value)


def _refuse(value):
    raise TypeError(f"no es un dato plano: {type(value).__name__}")


def _encode_tensor(tensor, tensors, blobs):
    if tensor.layout != torch.strided or tensor.dtype not in DTYPE_NAMES:
        _refuse(tensor)
    flat = tensor.detach().to("cpu").contiguous().reshape(-1)
    data = flat.view(torch.uint8).numpy().tobytes() if flat.numel() else b""
    offset = sum(len(b) for b in blobs)
    blobs.append(data)
    tensors.append({"dtype": DTYPE_NAMES[tensor.dtype], "shape": list(tensor.shape),
                    "offset": offset, "nbytes": len(data), "device": str(tensor.device),
                    "requires_grad": bool(tensor.requires_grad)})
    return len(tensors) - 1


def loads(raw):
    """The value ``dumps`` wrote; ``ValueError`` for bytes it could not have written."""
    raw = bytes(raw)
    if not raw.startswith(MAGIC) or len(raw) < len(MAGIC) + 8:
        raise ValueError("no son datos planos del curso")
    start = len(MAGIC) + 8
    (length,) = struct.unpack("<Q", raw[len(MAGIC):start])
    if length > len(raw) - start:
        raise ValueError("cabecera truncada")
    try:
        header = json.loads(raw[start:start + length].decode())
    except (UnicodeDecodeError, json.JSONDecodeError, RecursionError) as error:
        raise ValueError(f"cabecera ilegible: {error}") from None
    if type(header) is not dict or set(header) != {"value", "tensors"} or type(
            header["tensors"]) is not list:
        raise ValueError("cabecera sin la forma esperada")
    blob = memoryview(raw)[start + length:]
    tensors = [_decode_tensor(spec, blob) for spec in header["tensors"]]
    return _decode(header["value"], tensors, 0)


def _decode(value, tensors, depth):
    if depth > MAX_DEPTH:
        raise ValueError("datos demasiado anidados")
    kind = type(value)
    if value is None or kind in (bool, int, float, str):
        return value
    if kind is list:
        return [_decode(v, tensors, depth + 1) for v in value]
    if kind is not dict or len(value) != 1 or next(iter(value)) not in SINGLE_TAGS:
        raise ValueError("etiqueta desconocida")
    tag, body = next(iter(value.items()))
    if tag == "u" and type(body) is list:
        return tuple(_decode(v, tensors, depth + 1) for v in body)
    if tag == "d" and type(body) is list and all(type(p) is list and len(p) == 2 for p in body):
        result = {}
        for key, item in body:
            key = _decode(key, tensors, depth + 1)
            try:
                result[key] = _decode(item, tensors, depth + 1)
            except TypeError:  # an unhashable key
                raise ValueError("clave no válida") from None
        return result
    if tag == "T" and type(body) is int and 0 <= body < len(tensors):
        return tensors[body]
    if tag == "dtype" and body in DTYPES:
        return DTYPES[body]
    if tag == "device" and type(body) is str:
        try:
            return torch.device(body)
        except RuntimeError:
            raise ValueError("dispositivo no válido") from None
    if tag == "size" and type(body) is list and all(type(n) is int and n >= 0 for n in body):
        return torch.Size(body)
    if tag == "c" and type(body) is list and len(body) == 2 and type(body[0]) is float:
        if body[1] is None:
            return body[0]  # nan, inf or -inf
        if type(body[1]) in (int, float):
            return complex(body[0], body[1])
    raise ValueError(f"valor no válido con la etiqueta {tag!r}")


def _decode_tensor(spec, blob):
    if type(spec) is not dict or set(spec) != {"dtype", "shape", "offset", "nbytes", "device",
                                               "requires_grad"}:
        raise ValueError("tensor sin la forma esperada")
    dtype, shape = DTYPES.get(spec["dtype"]), spec["shape"]
    offset, nbytes = spec["offset"], spec["nbytes"]
    if dtype is None or type(shape) is not list or not all(
            type(n) is int and n >= 0 for n in shape) or type(offset) is not int or type(
            nbytes) is not int or type(spec["requires_grad"]) is not bool or type(
            spec["device"]) is not str:
        raise ValueError("tensor sin la forma esperada")
    itemsize = torch.empty((), dtype=dtype).element_size()
    if offset < 0 or nbytes != math.prod(shape) * itemsize or offset + nbytes > len(blob):
        raise ValueError("tensor fuera de los datos")
    if nbytes == 0:
        tensor = torch.empty(shape, dtype=dtype)
    else:
        tensor = torch.frombuffer(bytearray(blob[offset:offset + nbytes]), dtype=dtype)
        tensor = tensor.reshape(shape)
    if spec["device"] != "cpu":
        try:
            tensor = tensor.to(spec["device"])
        except (RuntimeError, AssertionError):
            pass  # a device this process cannot use: the values are what matter
    if spec["requires_grad"] and (dtype.is_floating_point or dtype.is_complex):
        tensor.requires_grad_(True)
    return tensor
