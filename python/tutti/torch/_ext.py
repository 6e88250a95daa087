# SPDX-License-Identifier: MIT
"""Loads the backend's compiled half, tutti.torch._tutti_c10d (csrc/).

It is found in this package (pip install ./python after make copies it
in), else in the build tree of the libtutti.so.0 in use (make builds it in
python/tutti/torch/.libs/ there), and must have been built against the
torch being imported: a C++ extension only loads into the torch whose
headers it was compiled with.
"""
import importlib.machinery
import importlib.util
import os

import torch

import tutti

NAME = "_tutti_c10d"


def _candidates():
    here = os.path.dirname(os.path.abspath(__file__))
    yield os.path.join(here, NAME + ".so")
    yield os.path.join(here, ".libs", NAME + ".so")  # a build in the source tree
    lib_dir = os.path.dirname(os.path.realpath(tutti.library_path))
    if os.path.basename(lib_dir) == ".libs":  # a build tree's library: its own build of this
        yield os.path.join(os.path.dirname(lib_dir), "python", "tutti", "torch", ".libs", NAME + ".so")


def _load():
    tried = []
    for path in _candidates():
        if not os.path.exists(path):
            tried.append(f"{path} (absent)")
            continue
        spec = importlib.util.spec_from_file_location(
            f"tutti.torch.{NAME}", path, loader=importlib.machinery.ExtensionFileLoader(f"tutti.torch.{NAME}", path))
        module = importlib.util.module_from_spec(spec)
        try:
            spec.loader.exec_module(module)
        except ImportError as e:
            raise ImportError(f"tutti.torch: {path} does not load into torch {torch.__version__} ({e}); it is built "
                              "against the torch configure found: build tutti again with this torch's headers "
                              "(libtorch-dev), then pip install ./python again") from None
        built = module.TORCH_VERSION
        if built.split(".")[:2] != torch.__version__.split(".")[:2]:
            raise ImportError(f"tutti.torch: {path} was built against torch {built}, this is torch "
                              f"{torch.__version__}: build tutti again with this torch's headers")
        return module
    raise ImportError("tutti.torch: the backend's compiled module is missing: configure found no torch headers "
                      "(install libtorch-dev and pybind11-dev, then ./configure && make; configure's summary says "
                      "why), or pip install ./python ran before make built it. Tried: " + "; ".join(tried))


ext = _load()
