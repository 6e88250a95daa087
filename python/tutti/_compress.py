# SPDX-License-Identifier: MIT
"""Compression settings and error-feedback state for Communicator.allreduce_compressed."""
import collections
import ctypes

from . import _lib
from ._errors import check

lib = _lib.lib

# tutti_compress_kind_t and tutti_rounding_t by name, from the library.
KINDS = _lib.enum_values(lib.tutti_compress_kind_name, "unknown")
ROUNDING = _lib.enum_values(lib.tutti_rounding_name, "unknown")

CompressStats = collections.namedtuple("CompressStats", "bytes_sent dense_bytes_sent k_sent fell_back")
CompressStats.__doc__ = """What a rank's last compressed all-reduce did: bytes it put on the wire,
what the dense ring all-reduce would have sent, top-k pairs sent, and whether it
fell back to the dense all-reduce (compression would have sent more)."""


class Compression:
    """How to compress (tutti_compress_t); see tutti_compression(3).

    Args:
        kind: "topk" (the k largest |g + e| as index/value pairs), "int8",
            "int4" (two-phase quantizers with per-block scales), "sign" (1 bit
            per element times a per-block scale) or "none" (dense).
        density: top-k: fraction of elements kept when k is 0.
        k: top-k: elements kept per rank (0: from density).
        sampled: top-k: pick the threshold from a sample (about k sent).
        block: quantizers: elements per scale (0: one per rank's chunk).
        rounding: "nearest" or "stochastic" (int8/int4).
        seed: for stochastic rounding and sampling.
        error_feedback: False drops what compression loses (experiments only).
    """

    def __init__(self, kind="topk", density=0.01, k=0, sampled=False, block=0, rounding="nearest", seed=0,
                 error_feedback=True):
        if kind not in KINDS:
            raise ValueError(f"compression kind {kind!r}: expected one of {', '.join(KINDS)}")
        if rounding not in ROUNDING:
            raise ValueError(f"rounding {rounding!r}: expected nearest or stochastic")
        if not 0 < density <= 1:
            raise ValueError(f"density {density} is not in (0, 1]")
        self.kind, self.density, self.k, self.sampled = kind, float(density), int(k), bool(sampled)
        self.block, self.rounding, self.seed = int(block), rounding, int(seed)
        self.error_feedback = bool(error_feedback)

    def _struct(self):
        return _lib.CompressStruct(kind=KINDS[self.kind], density=self.density, k=self.k, sampled=int(self.sampled),
                                   block=self.block, rounding=ROUNDING[self.rounding], seed=self.seed,
                                   no_error_feedback=int(not self.error_feedback))

    def __repr__(self):
        return (f"Compression({self.kind!r}, density={self.density}, k={self.k}, sampled={self.sampled}, "
                f"block={self.block}, rounding={self.rounding!r}, error_feedback={self.error_feedback})")


class ErrorFeedback:
    """Error-feedback state for one tensor (tutti_ef_state_t): what compression
    has yet to send, kept between calls. One per tensor (or DDP bucket), for
    tensors of ``count`` elements on a communicator of ``nranks`` ranks."""

    def __init__(self, count, nranks):
        self.count, self.nranks = int(count), int(nranks)
        h = ctypes.c_void_p()
        check(lib.tutti_ef_create(ctypes.byref(h), self.count, self.nranks), None, "tutti_ef_create")
        self._h = h.value

    def _live(self):
        if self._h is None:
            raise ValueError("the error-feedback state was closed")
        return self._h

    def reset(self):
        """Zeroes the errors (after a change of model or learning-rate schedule)."""
        check(lib.tutti_ef_reset(self._live()), None, "tutti_ef_reset")

    def regroup(self, nranks, op=0):
        """Carries the state over to a communicator of ``nranks`` ranks, after
        a shrink or a grow (tutti_ef_regroup): what this rank has yet to send
        is kept, and so is the error of its chunk of the two-phase schemes
        (folded into it; ``op`` is the all-reduce's, SUM or AVG)."""
        check(lib.tutti_ef_regroup(self._live(), int(nranks), int(op)), None, "tutti_ef_regroup")
        self.nranks = int(nranks)

    def errors(self):
        """Copies of the errors as lists of floats: (worker, server); server is
        this rank's chunk for the two-phase schemes, [] until one ran."""
        w, s = ctypes.POINTER(ctypes.c_float)(), ctypes.POINTER(ctypes.c_float)()
        wn, sn = ctypes.c_size_t(), ctypes.c_size_t()
        check(lib.tutti_ef_errors(self._live(), ctypes.byref(w), ctypes.byref(wn), ctypes.byref(s),
                                  ctypes.byref(sn)), None, "tutti_ef_errors")
        return (w[: wn.value] if w else []), (s[: sn.value] if s else [])

    def close(self):
        """Frees the state (also done when it is garbage-collected)."""
        if self._h is not None:
            h, self._h = self._h, None
            lib.tutti_ef_destroy(h)

    def __del__(self):
        try:
            self.close()
        except Exception:
            pass
