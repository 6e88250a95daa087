# SPDX-License-Identifier: MIT
# TT_OPTIONAL_DEP(name, description, probe)
# Declares --with-name=yes|no|auto (auto by default). The probe runs unless the
# user said no and must set tt_have_<name> to yes or no. An explicit yes that the
# probe cannot satisfy stops configure, so a requested feature is never silently
# dropped.
AC_DEFUN([TT_OPTIONAL_DEP], [
  AC_ARG_WITH([$1],
    [AS_HELP_STRING([--with-$1=yes|no|auto], [$2 (default: auto)])],
    [], [with_$1=auto])
  AS_CASE([$with_$1],
    [yes|no|auto], [],
    [AC_MSG_ERROR([--with-$1 takes yes, no or auto, not '$with_$1'])])
  tt_have_$1=no
  AS_IF([test "x$with_$1" != xno], [$3])
  AS_IF([test "x$with_$1" = xyes && test "x$tt_have_$1" != xyes],
    [AC_MSG_ERROR([--with-$1=yes was given but $2 was not found])])
])
