#!/bin/sh
# SPDX-License-Identifier: MIT
# make check runs every test through this: a test that hangs fails after
# TT_TEST_LIMIT seconds (default 900) instead of stalling the whole run
# until CI's own limit kills everything and reports nothing. timeout puts
# the test in a process group of its own and signals the whole group, so
# the ranks a test forked go with it.
limit=${TT_TEST_LIMIT:-900}
timeout --kill-after=20 "$limit" "$@"
status=$?
case $status in
124 | 137) echo "FAIL: $* was still running after $limit s (TT_TEST_LIMIT): killed" ;;
esac
exit $status
