#!/bin/sh
# SPDX-License-Identifier: MIT
# tests/lib/time-limit.sh, which runs every test of make check: a test that
# hangs with a child it started in the background fails past the limit,
# saying so, and leaves no process behind; a test's own status (a skip's 77
# included) passes through unchanged.
S=${TT_SRCDIR:-.}
WORK=$(mktemp -d)
trap 'rm -rf "$WORK"' EXIT INT TERM
fail() {
    echo "FAIL: $*"
    exit 1
}
cat >"$WORK/hang.sh" <<'HANG'
#!/bin/sh
sleep 300 &
echo $! >"$1"
wait
HANG
chmod +x "$WORK/hang.sh"
start=$(date +%s)
out=$(TT_TEST_LIMIT=1 sh "$S/tests/lib/time-limit.sh" "$WORK/hang.sh" "$WORK/pid")
st=$?
[ "$st" -eq 124 ] || fail "a hung test ended with status $st, not 124"
echo "$out" | grep -q "was still running after 1 s (TT_TEST_LIMIT): killed" || fail "no message: $out"
[ $(($(date +%s) - start)) -le 10 ] || fail "the hung test took $(($(date +%s) - start)) s to end"
pid=$(cat "$WORK/pid")
sleep 1
# (a zombie is dead, waiting only for whoever inherited it to reap it)
case $(ps -o stat= -p "$pid" 2>/dev/null) in
"" | Z*) ;;
*) kill "$pid"; fail "the hung test's child $pid was left running" ;;
esac
sh "$S/tests/lib/time-limit.sh" sh -c 'exit 77'
st=$?
[ "$st" -eq 77 ] || fail "a skip's 77 came back as $st"
echo "time-limit: a hung test and its child killed after 1 s, with the reason; statuses pass through"
