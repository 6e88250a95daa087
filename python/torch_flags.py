# SPDX-License-Identifier: MIT
"""Prints what configure needs to build the PyTorch backend's C++ half
against the torch this interpreter imports, as torch's own C++ extensions
are built: torch's version; the compiler flags (torch's include folders
beside its package, Python's headers, the C++ ABI and pybind11's ABI tags,
so that this module's pybind11 shares torch's types); the libraries."""
import os
import sysconfig

import torch

top = os.path.dirname(torch.__file__)
include = [os.path.join(top, "include"), os.path.join(top, "include", "torch", "csrc", "api", "include"),
           sysconfig.get_paths()["include"]]
c = torch._C
flags = ["-isystem " + p for p in include] + ["-D_GLIBCXX_USE_CXX11_ABI=%d" % int(c._GLIBCXX_USE_CXX11_ABI)]
for key in ("COMPILER_TYPE", "STDLIB", "BUILD_ABI"):
    value = getattr(c, "_PYBIND11_" + key, None)
    if value:
        flags.append("-DTT_PYBIND11_%s=%s" % (key, value))  # module.cpp makes it pybind11's string
print(torch.__version__)
print(" ".join(flags))
print("-L" + os.path.join(top, "lib"))
