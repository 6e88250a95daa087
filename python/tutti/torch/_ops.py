# SPDX-License-Identifier: MIT
"""torch reduce ops and dtypes in tutti's terms.

tutti reduces sum, prod, min, max and avg on int8, uint8, int32, uint32,
int64, uint64, fp16, bf16, fp32, fp64 and fp8 (e4m3, e5m2). The rest of what torch has is
brought to that: bool as uint8 (sum and bor are max, prod and band are min,
as in torch's NCCL backend), int16/uint16 widened to int32 and narrowed back,
complex viewed as pairs of reals (sum and avg), bitwise and/or/xor on
integers by gathering every rank's tensor and reducing locally. PREMUL_SUM
is refused: its factor lives in a C++ field that a Python backend cannot read.
"""
import functools

import torch
import torch.distributed as dist

import tutti

R = dist.ReduceOp
_PLAIN = [(R.SUM, tutti.SUM), (R.PRODUCT, tutti.PROD), (R.MIN, tutti.MIN), (R.MAX, tutti.MAX), (R.AVG, tutti.AVG)]
_BITWISE = [(R.BAND, torch.bitwise_and), (R.BOR, torch.bitwise_or), (R.BXOR, torch.bitwise_xor)]
_WIDEN = {torch.int16: torch.int32}
if hasattr(torch, "uint16"):
    _WIDEN[torch.uint16] = torch.int32


def _name(op):
    for n in ("SUM", "PRODUCT", "MIN", "MAX", "AVG", "BAND", "BOR", "BXOR", "PREMUL_SUM"):
        if op == getattr(R, n):
            return n
    return str(op)


class Plan:
    """How to reduce one tensor: ``arg`` is what tutti reads and writes (a
    view of the tensor, or a copy that ``finish`` writes back), ``op`` a tutti
    op, or ``bitwise`` a torch function to fold gathered tensors with."""

    def __init__(self, tensor, base, arg, op=None, bitwise=None):
        self.tensor, self.base, self.arg, self.op, self.bitwise = tensor, base, arg, op, bitwise

    def finish(self):
        """Writes the result back where tutti worked on a copy."""
        if self.arg.dtype != self.base.dtype and self.arg.data_ptr() != self.base.data_ptr():
            self.tensor.copy_(self.arg)  # widened: narrow back
        elif self.base is not self.tensor:
            self.tensor.copy_(self.base)  # was not contiguous


def plan(tensor, op):
    """Plans the reduction of tensor by the torch ReduceOp op; raises for what cannot be done."""
    name = _name(op)
    if name == "PREMUL_SUM":
        raise ValueError("tutti: ReduceOp.PREMUL_SUM is not supported by a Python backend (torch keeps its "
                         "factor where Python cannot read it); multiply the tensor, then reduce with SUM")
    bitwise = next((f for o, f in _BITWISE if op == o), None)
    top = next((t for o, t in _PLAIN if op == o), None)
    if bitwise is None and top is None:
        raise ValueError(f"tutti: unknown reduce op {op}")
    dt = tensor.dtype
    base = tensor if tensor.is_contiguous() else tensor.contiguous()
    if bitwise is not None:
        if dt.is_floating_point or dt.is_complex:
            raise TypeError(f"tutti: ReduceOp.{name} needs an integer or bool tensor, not {dt}")
        return Plan(tensor, base, base, bitwise=bitwise)
    if dt == torch.bool:
        if name == "AVG":
            raise TypeError("tutti: ReduceOp.AVG is not defined for bool tensors")
        top = tutti.MAX if name in ("SUM", "MAX") else tutti.MIN
        return Plan(tensor, base, base.view(torch.uint8), top)
    if dt.is_complex:
        if name not in ("SUM", "AVG"):
            raise TypeError(f"tutti: ReduceOp.{name} is not defined for complex tensors (SUM and AVG are)")
        return Plan(tensor, base, torch.view_as_real(base), top)
    if dt in _WIDEN:
        return Plan(tensor, base, base.to(_WIDEN[dt]), top)
    return Plan(tensor, base, base, top)


def data_view(tensor):
    """A contiguous tensor of a type tutti has with the same bytes, for calls that only move data."""
    t = tensor if tensor.is_contiguous() else tensor.contiguous()
    size = t.element_size()
    if t.dtype.is_complex:
        return torch.view_as_real(t)
    if size == 1:
        return t.view(torch.uint8)
    if t.dtype in _WIDEN:
        return t.view(torch.float16)  # any 2-byte type: the bytes are only moved
    return t


def copy_into(tensor, flat):
    """Writes flat, elements of data_view(tensor)'s type end to end, into tensor (of any layout)."""
    if tensor.is_complex():
        tensor.copy_(torch.view_as_complex(flat.view(*tensor.shape, 2)))
    else:
        tensor.copy_(flat.view(tensor.dtype).view(tensor.shape))


def fold(bitwise, gathered):
    """Reduces the leading dimension of gathered with a bitwise torch function."""
    return functools.reduce(bitwise, gathered.unbind(0))


def gather_all(comm, tensor, stream):
    """Every rank's tensor, stacked on a new first dimension, in tensor's dtype."""
    v = data_view(tensor)
    return comm.allgather(v, stream=stream).view(tensor.dtype)
