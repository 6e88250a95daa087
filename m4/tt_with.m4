# SPDX-License-Identifier: MIT
# TT_OPTIONAL_DEP(name, description, debian-packages, probe)
# Declares --with-name=yes|no|auto (auto by default). The probe runs unless the
# user said no; it sets tt_have_<name>=yes only once a test program using the
# dependency has compiled and linked, and otherwise leaves in tt_why_<name>
# what was missing ("mpi.h not found"). An explicit yes that the probe cannot
# satisfy stops configure and names the Debian packages to install, so a
# requested feature is never silently dropped. tt_note_<name> is what the
# summary prints after "no".
AC_DEFUN([TT_OPTIONAL_DEP], [
  AC_ARG_WITH([$1],
    [AS_HELP_STRING([--with-$1=yes|no|auto], [$2 (default: auto)])],
    [], [with_$1=auto])
  AS_CASE([$with_$1],
    [yes|no|auto], [],
    [AC_MSG_ERROR([--with-$1 takes yes, no or auto, not '$with_$1'])])
  tt_have_$1=no
  tt_why_$1="not found"
  AS_IF([test "x$with_$1" != xno], [$4])
  AS_IF([test "x$with_$1" = xyes && test "x$tt_have_$1" != xyes],
    [AC_MSG_ERROR([--with-$1=yes was given but $2 cannot be used: $tt_why_$1; install $3 and run configure again])])
  AS_IF([test "x$tt_have_$1" = xyes], [tt_note_$1=""],
    [test "x$with_$1" = xno], [tt_note_$1=" (--without-$1)"],
    [tt_note_$1=" ($tt_why_$1; install $3)"])
])

# TT_LINK_PROBE(name, header, function, cflags, libs, [body])
# Compiles a program that includes header and uses function (body, or a
# use of its address the compiler cannot drop), then links it, with the
# cflags and libs the build itself will use. A header that does not compile
# and a function that does not link are told apart: tt_have_<name>=yes, or
# tt_why_<name> is "HEADER not found" or "FUNCTION does not link with 'LIBS'".
AC_DEFUN([TT_LINK_PROBE], [
  tt_save_CFLAGS=$CFLAGS
  tt_save_LIBS=$LIBS
  CFLAGS="$CFLAGS $4"
  LIBS="$5 $LIBS"
  AC_MSG_CHECKING([whether a program using $3 from $2 compiles and links])
  AC_COMPILE_IFELSE([AC_LANG_PROGRAM([[#include <$2>]], [m4_default([$6], [[void *volatile tt_p = (void *)&$3; return tt_p == 0;]])])],
    [AC_LINK_IFELSE([AC_LANG_PROGRAM([[#include <$2>]], [m4_default([$6], [[void *volatile tt_p = (void *)&$3; return tt_p == 0;]])])],
      [tt_have_$1=yes],
      [tt_why_$1="$3 does not link with '$5'"])],
    [tt_why_$1="$2 not found"])
  AC_MSG_RESULT([$tt_have_$1])
  CFLAGS=$tt_save_CFLAGS
  LIBS=$tt_save_LIBS
])
