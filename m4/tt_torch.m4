# SPDX-License-Identifier: MIT
# TT_TORCH_PROBE: the PyTorch backend's C++ half (python/tutti/torch/csrc/)
# builds against the headers of the torch that the Python suites' interpreter
# ($tt_python) imports, as torch's own C++ extensions do: torch's include
# folders beside its package, pybind11, Python's headers, and the flags that
# make this module's pybind11 share torch's (the C++ ABI, pybind11's ABI
# tags). Sets TORCH_CXXFLAGS, TORCH_LIBS and tt_torch_version, and
# tt_have_torch=yes once a program including them compiles and links.
# Sanitizer builds leave it out: the interpreter that loads it is not
# instrumented.
AC_DEFUN([TT_TORCH_PROBE], [
  tt_sanitized=no
  for tt_s in "$enable_asan" "$enable_ubsan" "$enable_tsan" "$enable_fuzz"; do
    AS_IF([test "x$tt_s" = xyes], [tt_sanitized=yes])
  done
  AS_IF([test "x$tt_sanitized" = xyes && test "x$with_torch" != xyes],
    [tt_why_torch="not built with sanitizers (the interpreter that loads it is not instrumented)"],
    [test -z "$tt_python"], [tt_why_torch="no python3"],
    [_TT_TORCH_ASK])
])

AC_DEFUN([_TT_TORCH_ASK], [
  AC_MSG_CHECKING([the torch $tt_python imports, for the PyTorch backend])
  tt_torch_out=`"$tt_python" "$srcdir/python/torch_flags.py" 2>/dev/null`
  AS_IF([test -z "$tt_torch_out"], [
    AC_MSG_RESULT([none])
    tt_why_torch="$tt_python cannot import torch"
  ], [
    tt_torch_version=`echo "$tt_torch_out" | sed -n 1p`
    TORCH_CXXFLAGS=`echo "$tt_torch_out" | sed -n 2p`
    tt_torch_libdir=`echo "$tt_torch_out" | sed -n 3p`
    TORCH_LIBS="$tt_torch_libdir -ltorch_python -ltorch -ltorch_cpu -lc10"
    AC_MSG_RESULT([$tt_torch_version])
    AC_LANG_PUSH([C++])
    tt_save_CXXFLAGS=$CXXFLAGS
    tt_save_LIBS=$LIBS
    CXXFLAGS="$CXXFLAGS -std=c++17 $TORCH_CXXFLAGS"
    LIBS="$tt_torch_libdir -lc10 $LIBS"
    AC_MSG_CHECKING([whether a program with torch's and pybind11's headers compiles and links])
    AC_COMPILE_IFELSE([AC_LANG_PROGRAM([[#include <torch/version.h>
#include <torch/csrc/distributed/c10d/Types.hpp>
#include <pybind11/pybind11.h>]], [[return TORCH_VERSION_MAJOR == 0;]])],
      [AC_LINK_IFELSE([AC_LANG_PROGRAM([[#include <c10/core/Device.h>]], [[return c10::Device("cpu").is_cpu() ? 0 : 1;]])],
        [tt_have_torch=yes],
        [tt_why_torch="torch's libraries do not link ($tt_torch_libdir -lc10)"])],
      [tt_why_torch="torch $tt_torch_version's C++ headers (libtorch-dev), pybind11's or Python's are not found"])
    AC_MSG_RESULT([$tt_have_torch])
    CXXFLAGS=$tt_save_CXXFLAGS
    LIBS=$tt_save_LIBS
    AC_LANG_POP([C++])
  ])
  AC_SUBST([TORCH_CXXFLAGS])
  AC_SUBST([TORCH_LIBS])
])
