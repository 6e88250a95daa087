# SPDX-License-Identifier: MIT
"""The Python package's view of tutti.h against the header itself: a C
program built here with the compiler prints every enum value, macro and
struct layout the package uses, and each must match what the package read
from the library (enums) or declares (macros, ctypes structures). One
process, no ranks. Usage: abi_values.py CC SRCDIR BUILDDIR."""
import ctypes
import os
import subprocess
import sys
import tempfile

import tutti
from tutti import _buffers, _compress, _lib

cc, srcdir, builddir = sys.argv[1:4]

STRUCTS = {  # ctypes structure: (C type, fields)
    _lib.CommParams: ("tutti_comm_params_t", ["field_mask", "timeout_ms", "node_id"]),
    _lib.CompressStruct: ("tutti_compress_t", ["kind", "density", "k", "sampled", "block", "rounding", "seed",
                                               "no_error_feedback"]),
    _lib.CompressStats: ("tutti_compress_stats_t", ["bytes_sent", "dense_bytes_sent", "k_sent", "fell_back"]),
    _lib.UniqueIdStruct: ("tutti_unique_id_t", ["internal"]),
}
ENUMS = {  # C name prefix: what the package holds, by the library's own names
    "TUTTI_": {**{f"TUTTI_{n.upper()}": v for n, v in tutti.Op.__members__.items()}},
    "TUTTI_COMPRESS_": {f"TUTTI_COMPRESS_{n.upper()}": v for n, v in _compress.KINDS.items()},
    "TUTTI_ROUND_": {f"TUTTI_ROUND_{n.upper()}": v for n, v in _compress.ROUNDING.items()},
}
DTYPE_C_NAMES = {"int8": "INT8", "uint8": "UINT8", "int32": "INT32", "uint32": "UINT32", "int64": "INT64",
                 "uint64": "UINT64", "float16": "FP16", "bfloat16": "BF16", "float32": "FP32", "float64": "FP64",
                 "float8_e4m3fn": "FP8_E4M3", "float8_e5m2": "FP8_E5M2"}

lines = ['#include <stddef.h>', '#include <stdio.h>', '#include "tutti.h"', 'int main(void) {',
         '#define P(name, value, text) printf("%s %d\\n", #name, (int)name);',
         'TUTTI_STATUS_TABLE(P)',
         'printf("TUTTI_NUM_DTYPES %d\\n", (int)TUTTI_NUM_DTYPES);',
         'printf("TUTTI_NUM_OPS %d\\n", (int)TUTTI_NUM_OPS);']
names = ["TUTTI_UNIQUE_ID_BYTES", "TUTTI_PARAM_TIMEOUT_MS", "TUTTI_PARAM_NODE_ID", "TUTTI_SPLIT_NOCOLOR",
         "TUTTI_SHRINK_ABORT", "TUTTI_SHRINK_DEAD", "TUTTI_SHRINK_SHARE", "TUTTI_SPLIT_SHARE"]
names += [f"TUTTI_{c}" for c in DTYPE_C_NAMES.values()]
for held in ENUMS.values():
    names += list(held)
for n in names:
    lines.append(f'printf("%s %lld\\n", "{n}", (long long)({n}));')
for struct, (ctype, fields) in STRUCTS.items():
    lines.append(f'printf("sizeof {ctype} %zu\\n", sizeof({ctype}));')
    for f in fields:
        lines.append(f'printf("offsetof {ctype}.{f} %zu\\n", offsetof({ctype}, {f}));')
lines.append("return 0; }")

with tempfile.TemporaryDirectory() as tmp:
    src, exe = os.path.join(tmp, "abi.c"), os.path.join(tmp, "abi")
    with open(src, "w") as f:
        f.write("\n".join(lines) + "\n")
    subprocess.run(cc.split() + ["-I", os.path.join(srcdir, "src/include"), "-I",
                                 os.path.join(builddir, "src/include"), src, "-o", exe], check=True)
    c = dict(line.rsplit(" ", 1) for line in subprocess.run([exe], check=True, capture_output=True,
                                                            text=True).stdout.splitlines())
c = {k: int(v) for k, v in c.items()}

bad = []


def same(what, held, header):
    if held != header:
        bad.append(f"{what}: the package holds {held}, tutti.h says {header}")


statuses = {k: v for k, v in c.items() if k.startswith("TUTTI_SUCCESS") or k.startswith("TUTTI_ERR_")}
same("status names", _lib.STATUS_NAMES, {v: k for k, v in statuses.items()})
same("dtypes", {n: _buffers.DTYPES.get(n) for n in DTYPE_C_NAMES},
     {n: c[f"TUTTI_{cn}"] for n, cn in DTYPE_C_NAMES.items()})
same("dtype count", len(_buffers.DTYPES), c["TUTTI_NUM_DTYPES"])
same("op count", len(tutti.Op), c["TUTTI_NUM_OPS"])
for held in ENUMS.values():
    for name, value in held.items():
        same(name, value, c[name])
same("TUTTI_UNIQUE_ID_BYTES", _lib.UNIQUE_ID_BYTES, c["TUTTI_UNIQUE_ID_BYTES"])
same("TUTTI_PARAM_TIMEOUT_MS", _lib.PARAM_TIMEOUT_MS, c["TUTTI_PARAM_TIMEOUT_MS"])
same("TUTTI_PARAM_NODE_ID", _lib.PARAM_NODE_ID, c["TUTTI_PARAM_NODE_ID"])
same("TUTTI_SPLIT_NOCOLOR", _lib.SPLIT_NOCOLOR, c["TUTTI_SPLIT_NOCOLOR"])
same("TUTTI_SHRINK_ABORT", _lib.SHRINK_ABORT, c["TUTTI_SHRINK_ABORT"])
same("TUTTI_SHRINK_DEAD", _lib.SHRINK_DEAD, c["TUTTI_SHRINK_DEAD"])
same("TUTTI_SHRINK_SHARE", _lib.SHRINK_SHARE, c["TUTTI_SHRINK_SHARE"])
same("TUTTI_SPLIT_SHARE", _lib.SPLIT_SHARE, c["TUTTI_SPLIT_SHARE"])
for struct, (ctype, fields) in STRUCTS.items():
    same(f"sizeof {ctype}", ctypes.sizeof(struct), c[f"sizeof {ctype}"])
    for f in fields:
        same(f"offset of {ctype}.{f}", getattr(struct, f).offset, c[f"offsetof {ctype}.{f}"])
major, minor, patch = tutti.version()
same("version", tutti.__version__, f"{major}.{minor}.{patch}")

if bad:
    sys.exit("\n".join(bad))
print(f"the package agrees with tutti.h: {len(statuses)} statuses, {len(_buffers.DTYPES)} dtypes, "
      f"{len(tutti.Op)} ops, {len(_compress.KINDS)} compression kinds, {len(STRUCTS)} structures")
