#!/bin/sh
# SPDX-License-Identifier: MIT
# tutti-run's default binding: with every CPU taken by a busy loop, the
# ranks are left to the scheduler (each may run on every CPU tutti-run may
# use), while --bind core still pins each rank to one CPU.
set -u
B=${TT_BUILDDIR:-.}
mine=$(sed -n 's/^Cpus_allowed_list:[[:space:]]*//p' /proc/self/status)
[ -n "$mine" ] || { echo "SKIP: /proc/self/status gives no Cpus_allowed_list"; exit 77; }
cpus=$(nproc)
WORK=$(mktemp -d)
busy=""
trap 'kill $busy 2>/dev/null; rm -rf "$WORK"' EXIT INT TERM
for _ in $(seq "$cpus"); do
    sh -c 'while :; do :; done' &
    busy="$busy $!"
done
sleep 0.3
show='sed -n "s/^Cpus_allowed_list:[[:space:]]*//p" /proc/self/status > "$0.$TUTTI_RANK"'
"$B/tutti-run" -n 2 sh -c "$show" "$WORK/auto" || { echo "FAIL: tutti-run -n 2 sh"; exit 1; }
for r in 0 1; do
    got=$(cat "$WORK/auto.$r")
    [ "$got" = "$mine" ] || { echo "FAIL: on busy CPUs rank $r was bound to $got (tutti-run may use $mine)"; exit 1; }
done
echo "busy CPUs: both ranks may run on $mine"
"$B/tutti-run" -n 2 --bind core sh -c "$show" "$WORK/core" || { echo "FAIL: tutti-run --bind core"; exit 1; }
for r in 0 1; do
    got=$(cat "$WORK/core.$r")
    case "$got" in
    *[,-]*) echo "FAIL: --bind core left rank $r on $got"; exit 1 ;;
    esac
done
echo "--bind core: ranks on CPU $(cat "$WORK/core.0") and $(cat "$WORK/core.1")"
