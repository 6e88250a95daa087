#!/bin/sh
# SPDX-License-Identifier: MIT
# The chaos test (tests/stress/chaos.c) from make check: 200 random schedules of
# kill -9, SIGSTOP and busy ranks through collectives, revoke, shrink and
# grow, every membership, result and communicator checked. A seed from the
# clock each run (printed, to replay: tests/stress/chaos -n 1 -s SEED -v);
# TT_CHAOS_SCHEDULES sets how many (2000 for a long run by hand).
cd "${TT_BUILDDIR:-.}" || exit 1
exec ./tests/stress/chaos -n "${TT_CHAOS_SCHEDULES:-200}"
