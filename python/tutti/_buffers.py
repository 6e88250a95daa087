# SPDX-License-Identifier: MIT
"""What a C call needs from an array: its address, element count, tutti
dtype, whether it lives on a GPU and on which stream it is ordered.

Accepted: torch tensors (CPU and CUDA), numpy arrays, objects with
``__cuda_array_interface__`` (CuPy, Numba) and writable buffer-protocol
objects (bytearray, array.array, memoryview). Arrays must be contiguous:
tutti reads and writes them as one run of elements.
"""
import sys

from . import _lib

# numpy's and torch's names for tutti's dtypes where they differ from tutti's
# own (tutti_dtype_name); the values come from the library.
_NUMPY_NAMES = {"fp16": "float16", "bf16": "bfloat16", "fp32": "float32", "fp64": "float64",
                "fp8e4m3": "float8_e4m3fn", "fp8e5m2": "float8_e5m2"}  # torch's fp8 names (ml_dtypes': the same)
# tutti_dtype_t values by numpy/torch dtype name.
DTYPES = {_NUMPY_NAMES.get(name, name): value
          for name, value in _lib.enum_values(_lib.lib.tutti_dtype_name, "unknown").items()}
_TYPESTR = {"i1": "int8", "u1": "uint8", "i4": "int32", "u4": "uint32", "i8": "int64", "u8": "uint64",
            "f2": "float16", "f4": "float32", "f8": "float64"}
_FORMATS = {"b": "int8", "B": "uint8", "i": "int32", "I": "uint32", "q": "int64", "Q": "uint64",
            "e": "float16", "f": "float32", "d": "float64"}


class Buffer:
    """One argument of a collective, resolved to what the C API takes."""

    __slots__ = ("obj", "ptr", "count", "dtype", "device", "stream")

    def __init__(self, obj, ptr, count, dtype, device, stream):
        self.obj, self.ptr, self.count, self.dtype = obj, ptr, count, dtype
        self.device, self.stream = device, stream


def _dtype(name, what):
    if name not in DTYPES:
        raise TypeError(f"{what}: tutti has no {name} type (it has {', '.join(DTYPES)})")
    return DTYPES[name]


def _torch_buffer(t, what, writable):
    if not t.is_contiguous():
        raise ValueError(f"{what}: the tensor must be contiguous (call .contiguous())")
    name = str(t.dtype).replace("torch.", "")
    if t.is_cuda:
        import torch

        stream = torch.cuda.current_stream(t.device).cuda_stream
        return Buffer(t, t.data_ptr(), t.numel(), _dtype(name, what), True, stream)
    if t.device.type != "cpu":
        raise TypeError(f"{what}: tensors on {t.device.type} are not supported (CPU and CUDA are)")
    return Buffer(t, t.data_ptr(), t.numel(), _dtype(name, what), False, None)


def _cai_buffer(obj, what, writable):
    cai = obj.__cuda_array_interface__
    shape, strides = tuple(cai["shape"]), cai.get("strides")
    typestr = cai["typestr"]
    itemsize = int(typestr[2:])
    count = 1
    for n in shape:
        count *= n
    if strides is not None:
        want, step = [], itemsize
        for n in reversed(shape):
            want.append(step)
            step *= n
        if tuple(reversed(want)) != tuple(strides) and count > 1:
            raise ValueError(f"{what}: the device array must be C-contiguous")
    ptr, readonly = cai["data"]
    if writable and readonly:
        raise ValueError(f"{what}: the device array is read-only")
    name = _TYPESTR.get(typestr[1:], typestr)
    return Buffer(obj, ptr, count, _dtype(name, what), True, cai.get("stream"))


def _numpy_buffer(a, what, writable):
    if not a.flags.c_contiguous:
        raise ValueError(f"{what}: the array must be C-contiguous (numpy.ascontiguousarray)")
    if writable and not a.flags.writeable:
        raise ValueError(f"{what}: the array is read-only")
    return Buffer(a, a.ctypes.data, a.size, _dtype(a.dtype.name, what), False, None)


def _memoryview_buffer(obj, what, writable):
    import ctypes

    mv = memoryview(obj)
    if not mv.c_contiguous:
        raise ValueError(f"{what}: the buffer must be contiguous")
    if mv.readonly:
        raise ValueError(f"{what}: tutti needs a writable buffer (bytes are read-only; use bytearray)")
    fmt = mv.format.lstrip("@=<")
    name = _FORMATS.get(fmt)
    if name is None and fmt in ("l", "L"):
        name = ("int" if fmt == "l" else "uint") + str(8 * mv.itemsize)
    raw = mv.cast("B")
    ptr = ctypes.addressof((ctypes.c_char * max(len(raw), 1)).from_buffer(raw)) if len(raw) else 0
    return Buffer((obj, mv, raw), ptr, mv.nbytes // mv.itemsize, _dtype(name or fmt, what), False, None)


def as_buffer(obj, what, writable=False):
    """Resolves obj; what names the argument in error messages."""
    torch = sys.modules.get("torch")
    if torch is not None and isinstance(obj, torch.Tensor):
        return _torch_buffer(obj, what, writable)
    if hasattr(obj, "__cuda_array_interface__"):
        return _cai_buffer(obj, what, writable)
    np = sys.modules.get("numpy")
    if np is not None and isinstance(obj, np.ndarray):
        return _numpy_buffer(obj, what, writable)
    try:
        return _memoryview_buffer(obj, what, writable)
    except TypeError as e:
        if "tutti" in str(e):
            raise
        raise TypeError(f"{what}: expected a torch tensor, numpy array, CUDA array or writable buffer, "
                        f"got {type(obj).__name__}") from None


def empty_like(obj, shape):
    """A new array of obj's kind, dtype and device with the given shape."""
    torch = sys.modules.get("torch")
    if torch is not None and isinstance(obj, torch.Tensor):
        return torch.empty(shape, dtype=obj.dtype, device=obj.device)
    np = sys.modules.get("numpy")
    if np is not None and isinstance(obj, np.ndarray):
        return np.empty(shape, dtype=obj.dtype)
    cupy = sys.modules.get("cupy")
    if cupy is not None and isinstance(obj, cupy.ndarray):
        return cupy.empty(shape, dtype=obj.dtype)
    raise TypeError(f"pass out=: tutti cannot allocate an output like a {type(obj).__name__}")


def shape_of(obj):
    shape = getattr(obj, "shape", None)
    return tuple(shape) if shape is not None else (memoryview(obj).nbytes // memoryview(obj).itemsize,)
