#!/bin/sh
# SPDX-License-Identifier: MIT
# tutti-run --tag-output forwards every rank's output whatever their
# number: 1030 ranks each write more than a pipe holds before they can all
# go on (a barrier at a FIFO that opens once every rank has written), so a
# rank whose pipe is not read holds the job up; every byte and every line
# must come out, behind its rank. The two pipes a rank need descriptors:
# below a low soft limit tutti-run raises it, and no rank inherits the
# others' pipes; where the hard limit is too low it stops at once, naming
# the limit and the fix.
set -u
B=${TT_BUILDDIR:-.}
N=1030
BYTES=70000 # more than a pipe's 64 KiB
WORK=$(mktemp -d)
waiter=""
trap 'kill $waiter 2>/dev/null; rm -rf "$WORK"' EXIT INT TERM
fail() {
    echo "FAIL: $*"
    exit 1
}

mkfifo "$WORK/go" || fail "mkfifo"
exec 3<>"$WORK/go" # held open here: a rank opening the FIFO never waits for a writer
# The barrier: once every rank has written its bytes (and said so), one
# line each; 30 s without one more rank getting through is a stall.
(
    last=0 still=0
    while :; do
        got=$(ls "$WORK" | grep -c '^r\.')
        [ "$got" -ge $N ] && break
        if [ "$got" = $last ]; then still=$((still + 1)); else still=0 last=$got; fi
        [ $still -ge 60 ] && { echo "$got" >"$WORK/stalled"; break; }
        sleep 0.5
    done
    yes go | head -n $N >&3
) &
waiter=$!
rank='printf "%0'$BYTES'd\n" 0; echo "err $TUTTI_RANK" >&2
: >"$0/r.$TUTTI_RANK"; read go <"$0/go"; echo "done $TUTTI_RANK"'
start=$(date +%s)
timeout 400 "$B/tutti-run" -n $N -t sh -c "$rank" "$WORK" >"$WORK/out" 2>"$WORK/err"
rc=$?
[ -e "$WORK/stalled" ] && fail "only $(cat "$WORK/stalled") of $N ranks got their $BYTES bytes out: the others' pipes were not read"
[ $rc = 0 ] || fail "tutti-run -n $N -t exited $rc: $(grep -v '^\[' "$WORK/err" | head -n 3)"
done=$(grep -c '^\[[0-9]*\] done [0-9]*$' "$WORK/out")
errs=$(grep -c '^\[[0-9]*\] err [0-9]*$' "$WORK/err")
[ "$done" = $N ] && [ "$errs" = $N ] || fail "$done of $N ranks' last stdout lines and $errs of their stderr lines"
# Every rank's line comes back behind its own prefix, cut at 4 KiB, whole.
awk -v n=$N -v bytes=$BYTES '
    /^\[[0-9]+\] 0+$/ { r = substr($1, 2, length($1) - 2); got[r] += length($2) }
    /^\[[0-9]+\] done [0-9]+$/ { r = substr($1, 2, length($1) - 2); if ($3 != r) bad++ }
    END {
        for (r = 0; r < n; r++)
            if (got[r] != bytes) { printf "rank %d: %d bytes of %d\n", r, got[r], bytes; exit 1 }
        if (bad) { printf "%d lines behind another rank'\''s prefix\n", bad; exit 1 }
    }' "$WORK/out" || fail "--tag-output lost or mixed up output"
echo "$N ranks, $BYTES bytes each before a barrier: all forwarded in $(($(date +%s) - start)) s"

# A soft limit below the 2N + 16 descriptors that 100 ranks need: raised.
hard=$(ulimit -Hn)
if [ "$hard" = unlimited ] || [ "$hard" -ge 216 ]; then
    (ulimit -Sn 128 && "$B/tutti-run" -n 100 -t sh -c 'ls /proc/self/fd | wc -l') >"$WORK/fds" 2>&1 ||
        fail "with ulimit -Sn 128 (hard $hard), tutti-run -n 100 -t: $(grep -v '^\[' "$WORK/fds" | head -n 1)"
    most=$(sed -n 's/^\[[0-9]*\] //p' "$WORK/fds" | sort -n | tail -n 1)
    [ "$(wc -l <"$WORK/fds")" = 100 ] && [ "$most" -le 16 ] ||
        fail "with ulimit -Sn 128: $(wc -l <"$WORK/fds") ranks answered, one holds $most descriptors"
    echo "soft limit 128: raised for 100 ranks; no rank holds more than $most descriptors"
else
    echo "hard descriptor limit $hard: the raised soft limit is not tried"
fi

# A hard limit too low: stopped at once, with the limit and the fix named,
# unless this process may raise its hard limit (CAP_SYS_RESOURCE), as tutti-run then does.
(
    ulimit -n 64 || exit 3
    if (ulimit -Hn 4096) 2>/dev/null; then
        "$B/tutti-run" -n 100 -t true >"$WORK/low" 2>&1 || exit 1
        exit 2
    fi
    timeout 2 "$B/tutti-run" -n 100 -t true >"$WORK/low" 2>&1 && exit 1
    exit 0
)
case $? in
0) grep -q "limit is 64 (hard limit 64).*ulimit -n 216" "$WORK/low" ||
    fail "hard limit 64, 100 ranks: $(head -n 1 "$WORK/low")"
    echo "hard limit 64: $(head -c 150 "$WORK/low")..." ;;
2) echo "hard limit 64: raised (this process may raise its hard limit)" ;;
3) echo "ulimit -n 64 refused: the low hard limit is not tried" ;;
*) fail "hard limit 64, 100 ranks: $(head -n 2 "$WORK/low")" ;;
esac
