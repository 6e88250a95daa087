#!/bin/sh
# SPDX-License-Identifier: MIT
# Regenerates configure and the Makefile templates from a git checkout.
set -e
cd "$(dirname "$0")"
mkdir -p build-aux
autoreconf --install --force --warnings=all,no-portability
# The TAP driver the test suites report through.
cp -f "$(automake --print-libdir)/tap-driver.sh" build-aux/
