# SPDX-License-Identifier: MIT
"""Packaging for the tutti Python package (setuptools only, so it builds offline).

`pip install ./python` after `make` in the repository also installs a copy of
the freshly built libtutti.so.0 inside the package, and the PyTorch
backend's compiled module that make built beside it (for the torch
configure found); without the library, the package loads libtutti.so.0
from the dynamic loader's path (make install) or from TUTTI_LIBRARY.
"""
import ctypes
import os
import re
import shutil

from setuptools import setup
from setuptools.command.build_py import build_py

HERE = os.path.dirname(os.path.abspath(__file__))
BUILT = os.path.join(HERE, os.pardir, ".libs", "libtutti.so.0")


def _version():
    """The package's version is the library's, whose one source is AC_INIT in
    configure.ac: asked of the library being packaged, else read there."""
    built = os.environ.get("TUTTI_LIBRARY") or BUILT
    if os.path.exists(built):
        v = [ctypes.c_int() for _ in range(3)]
        ctypes.CDLL(built).tutti_get_version(*[ctypes.byref(x) for x in v])
        return "%d.%d.%d" % tuple(x.value for x in v)
    try:
        with open(os.path.join(HERE, os.pardir, "configure.ac")) as f:
            return re.search(r"AC_INIT\(\[tutti\], \[([^]]+)\]", f.read()).group(1)
    except (OSError, AttributeError):
        raise SystemExit("tutti: no built libtutti.so.0 (make, or set TUTTI_LIBRARY) and no configure.ac "
                         "beside python/ to take the version from")


def _torch_module(built):
    """The backend's module make built: in the build tree of the library."""
    tree = os.path.dirname(os.path.dirname(os.path.realpath(built)))
    for path in (os.path.join(tree, "python", "tutti", "torch", ".libs", "_tutti_c10d.so"),
                 os.path.join(HERE, "tutti", "torch", ".libs", "_tutti_c10d.so")):
        if os.path.exists(path):
            return path
    return None


class BuildWithLibrary(build_py):
    def run(self):
        super().run()
        built = os.environ.get("TUTTI_LIBRARY") or BUILT
        if os.path.exists(built):
            dest = os.path.join(self.build_lib, "tutti", "_libs")
            os.makedirs(dest, exist_ok=True)
            shutil.copy2(os.path.realpath(built), os.path.join(dest, "libtutti.so.0"))
            module = _torch_module(built)
            if module:
                shutil.copy2(module, os.path.join(self.build_lib, "tutti", "torch", "_tutti_c10d.so"))


setup(
    name="tutti",
    version=_version(),
    description="Collective communication for host and CUDA buffers, and a PyTorch backend",
    license="MIT",
    packages=["tutti", "tutti.torch"],
    python_requires=">=3.8",
    extras_require={"torch": ["torch>=1.13"]},
    cmdclass={"build_py": BuildWithLibrary},
)
