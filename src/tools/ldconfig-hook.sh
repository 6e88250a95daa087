#!/bin/sh
# SPDX-License-Identifier: MIT
# Run by `make install` after libtutti.so.0 is installed into LIBDIR: the
# loader finds it there only if LIBDIR is among the directories ldconfig
# scans and its cache has been refreshed. As root, installing into the live
# system, this refreshes the cache; otherwise it says what is needed.
# Nothing is done or said for a staged install (DESTDIR set).
# usage: ldconfig-hook.sh LIBDIR
libdir=$1
[ -z "${DESTDIR:-}" ] || exit 0
ldconfig=$(command -v ldconfig || echo /sbin/ldconfig)
[ -x "$ldconfig" ] || {
    echo "tutti: no ldconfig found; programs linked with -ltutti may need LD_LIBRARY_PATH=$libdir"
    exit 0
}
want=$(readlink -f "$libdir")
searched=0
for dir in $("$ldconfig" -N -v 2>/dev/null | sed -n 's|^\(/[^:]*\):.*|\1|p'); do
    [ "$(readlink -f "$dir")" = "$want" ] && searched=1
done
if [ "$searched" = 0 ]; then
    echo "tutti: the loader does not search $libdir: programs linked with -ltutti need"
    echo "tutti: LD_LIBRARY_PATH=$libdir or -Wl,-rpath,$libdir, or, as root, $libdir added"
    echo "tutti: to a file in /etc/ld.so.conf.d/ and ldconfig run once."
elif [ "$(id -u)" -eq 0 ]; then
    "$ldconfig" && echo "tutti: ran ldconfig, so the loader finds libtutti.so.0 in $libdir"
else
    echo "tutti: run 'sudo ldconfig' once, so the loader finds libtutti.so.0 in $libdir"
fi
