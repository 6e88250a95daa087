# SPDX-License-Identifier: MIT
"""Loads libtutti.so.0 through ctypes and declares the C API's signatures.

ctypes releases the GIL around every foreign call, so a collective blocking in
one thread never stalls the interpreter's other threads.
"""
import ctypes
import os
from pathlib import Path

# The values of tutti.h's macros (not enums, so the library cannot be asked
# for them); tests/python/abi_values.py checks them against the header.
UNIQUE_ID_BYTES = 128
PARAM_TIMEOUT_MS = 1 << 0
PARAM_NODE_ID = 1 << 1
SPLIT_NOCOLOR = -1
SHRINK_ABORT = 0x1
SHRINK_DEAD = 0x2
SHRINK_SHARE = 0x4
SPLIT_SHARE = 0x1


class UniqueIdStruct(ctypes.Structure):
    _fields_ = [("internal", ctypes.c_ubyte * UNIQUE_ID_BYTES)]


class CommParams(ctypes.Structure):
    _fields_ = [
        ("field_mask", ctypes.c_uint64),
        ("timeout_ms", ctypes.c_int64),
        ("node_id", ctypes.c_int),
    ]


class CompressStruct(ctypes.Structure):
    _fields_ = [
        ("kind", ctypes.c_int),
        ("density", ctypes.c_double),
        ("k", ctypes.c_size_t),
        ("sampled", ctypes.c_int),
        ("block", ctypes.c_size_t),
        ("rounding", ctypes.c_int),
        ("seed", ctypes.c_uint64),
        ("no_error_feedback", ctypes.c_int),
    ]


class CompressStats(ctypes.Structure):
    _fields_ = [
        ("bytes_sent", ctypes.c_uint64),
        ("dense_bytes_sent", ctypes.c_uint64),
        ("k_sent", ctypes.c_uint64),
        ("fell_back", ctypes.c_int),
    ]


def _candidates():
    """Where libtutti may be, most specific first."""
    env = os.environ.get("TUTTI_LIBRARY")
    if env:
        yield env
    here = Path(__file__).resolve().parent
    yield str(here / "_libs" / "libtutti.so.0")  # copied in by pip install after make
    yield str(here.parent.parent / ".libs" / "libtutti.so.0")  # python/ inside a built tree
    yield "libtutti.so.0"  # make install, LD_LIBRARY_PATH


def _load():
    tried = []
    for path in _candidates():
        if os.sep in path and not os.path.exists(path):
            tried.append(f"{path} (absent)")
            continue
        try:
            return ctypes.CDLL(path), path
        except OSError as e:
            tried.append(f"{path} ({e})")
    raise ImportError(
        "tutti: cannot load libtutti.so.0; build tutti (make) and use python/ from that tree, "
        "pip install ./python after make, make install, or set TUTTI_LIBRARY to the library's path. Tried: "
        + "; ".join(tried)
    )


lib, path = _load()

_c = ctypes
_comm = _c.c_void_p
_st = _c.c_int
_SIGNATURES = {
    "tutti_strerror": (_c.c_char_p, [_st]),
    "tutti_status_name": (_c.c_char_p, [_st]),
    "tutti_get_version": (_c.c_int, [_c.POINTER(_c.c_int)] * 3),
    "tutti_dtype_size": (_c.c_size_t, [_c.c_int]),
    "tutti_dtype_name": (_c.c_char_p, [_c.c_int]),
    "tutti_op_name": (_c.c_char_p, [_c.c_int]),
    "tutti_compress_kind_name": (_c.c_char_p, [_c.c_int]),
    "tutti_rounding_name": (_c.c_char_p, [_c.c_int]),
    "tutti_get_unique_id": (_st, [_c.POINTER(UniqueIdStruct)]),
    "tutti_comm_init": (_st, [_c.POINTER(_comm), _c.c_int, _c.c_int, _c.POINTER(UniqueIdStruct),
                              _c.POINTER(CommParams)]),
    "tutti_comm_init_env": (_st, [_c.POINTER(_comm), _c.POINTER(CommParams)]),
    "tutti_comm_split": (_st, [_comm, _c.c_int, _c.c_int, _c.POINTER(_comm)]),
    "tutti_comm_split_flags": (_st, [_comm, _c.c_int, _c.c_int, _c.c_uint, _c.POINTER(_comm)]),
    "tutti_comm_revoke": (_st, [_comm]),
    "tutti_comm_shrink": (_st, [_comm, _c.POINTER(_c.c_int), _c.c_int, _c.c_uint, _c.POINTER(_comm)]),
    "tutti_comm_grow": (_st, [_comm, _c.c_int, _c.POINTER(UniqueIdStruct), _c.POINTER(_comm)]),
    "tutti_comm_destroy": (_st, [_comm]),
    "tutti_comm_abort": (_st, [_comm]),
    "tutti_comm_rank": (_st, [_comm, _c.POINTER(_c.c_int)]),
    "tutti_comm_size": (_st, [_comm, _c.POINTER(_c.c_int)]),
    "tutti_comm_id": (_st, [_comm, _c.POINTER(_c.c_uint64)]),
    "tutti_comm_last_error": (_c.c_char_p, [_comm]),
    "tutti_allreduce": (_st, [_c.c_void_p, _c.c_void_p, _c.c_size_t, _c.c_int, _c.c_int, _comm, _c.c_void_p]),
    "tutti_reduce_scatter": (_st, [_c.c_void_p, _c.c_void_p, _c.c_size_t, _c.c_int, _c.c_int, _comm,
                                   _c.c_void_p]),
    "tutti_allgather": (_st, [_c.c_void_p, _c.c_void_p, _c.c_size_t, _c.c_int, _comm, _c.c_void_p]),
    "tutti_broadcast": (_st, [_c.c_void_p, _c.c_void_p, _c.c_size_t, _c.c_int, _c.c_int, _comm, _c.c_void_p]),
    "tutti_reduce": (_st, [_c.c_void_p, _c.c_void_p, _c.c_size_t, _c.c_int, _c.c_int, _c.c_int, _comm,
                           _c.c_void_p]),
    "tutti_alltoall": (_st, [_c.c_void_p, _c.c_void_p, _c.c_size_t, _c.c_int, _comm, _c.c_void_p]),
    "tutti_barrier": (_st, [_comm, _c.c_void_p]),
    "tutti_send": (_st, [_c.c_void_p, _c.c_size_t, _c.c_int, _c.c_int, _comm, _c.c_void_p]),
    "tutti_recv": (_st, [_c.c_void_p, _c.c_size_t, _c.c_int, _c.c_int, _comm, _c.c_void_p]),
    "tutti_recv_any": (_st, [_c.c_void_p, _c.c_size_t, _c.c_int, _c.POINTER(_c.c_int), _comm, _c.c_void_p]),
    "tutti_ef_create": (_st, [_c.POINTER(_c.c_void_p), _c.c_size_t, _c.c_int]),
    "tutti_ef_reset": (_st, [_c.c_void_p]),
    "tutti_ef_destroy": (_st, [_c.c_void_p]),
    "tutti_ef_regroup": (_st, [_c.c_void_p, _c.c_int, _c.c_int]),
    "tutti_ef_errors": (_st, [_c.c_void_p, _c.POINTER(_c.POINTER(_c.c_float)), _c.POINTER(_c.c_size_t),
                              _c.POINTER(_c.POINTER(_c.c_float)), _c.POINTER(_c.c_size_t)]),
    "tutti_allreduce_compressed": (_st, [_c.c_void_p, _c.c_void_p, _c.c_size_t, _c.c_int, _c.c_int,
                                         _c.POINTER(CompressStruct), _c.c_void_p, _comm, _c.c_void_p]),
    "tutti_compress_last_stats": (_st, [_comm, _c.POINTER(CompressStats)]),
}
for _name, (_res, _args) in _SIGNATURES.items():
    _fn = getattr(lib, _name)
    _fn.restype = _res
    _fn.argtypes = _args


def enum_values(name_of, unknown, limit=256):
    """{name: value} of a tutti enum, read from the library's name function
    (tutti_dtype_name and its kin), so no value is copied here."""
    values = {}
    for v in range(limit):
        name = name_of(v).decode()
        if name != unknown:
            values[name] = v
    return values


STATUS_NAMES = {v: k for k, v in enum_values(lib.tutti_status_name, "TUTTI_ERR_UNKNOWN").items()}


def last_error(comm):
    """tutti_comm_last_error as text; comm None reads this thread's last failure."""
    return lib.tutti_comm_last_error(comm).decode(errors="replace")
