#!/bin/sh
# SPDX-License-Identifier: MIT
# Regenerates configure and the Makefile templates from a git checkout.
set -e
cd "$(dirname "$0")"
mkdir -p build-aux
autoreconf --install --force --warnings=all,no-portability
# The drivers the tests report through: TAP for the suites, plain for scripts.
cp -f "$(automake --print-libdir)/tap-driver.sh" "$(automake --print-libdir)/test-driver" build-aux/
