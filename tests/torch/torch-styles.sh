#!/bin/sh
# SPDX-License-Identifier: MIT
# The parallelism styles on tutti against a one-process reference, beside
# gloo (tests/torch/torch_styles.py): DDP with every hook torch ships that
# runs on CPU, ZeRO, pipelines, MoE all-to-all, and on torch 2.x FSDP1/2,
# tensor and sequence parallel, torch.distributed.pipelining, functional
# collectives eager and compiled, compiled DDP. Two ranks, then 2-D
# FSDP x TP on four. Fails unless tutti matches the reference in every case
# this torch has. Skips (77) when tutti.torch cannot be imported.
# Not part of make check (it takes minutes): .ci/torch2 and .ci/run call it.
# A case that runs past TT_STYLES_CASE_LIMIT seconds (default 120) is
# reported as hung and the run goes on after it, so that the suite always
# ends. gloo, only the comparison, gets TT_STYLES_GLOO_LIMIT (default 50):
# on torch 2.6 its PowerSGD case hangs and its 1F1B pipeline waits out its
# group's time-out (half the case limit), which at tutti's limit cost CI
# three minutes of waiting.
. "${TT_SRCDIR:-.}/tests/lib/python-env.sh"
tt_torch_backend || exit $?
out=$(mktemp -d /tmp/tutti-styles-XXXXXX)
trap 'rm -rf "$out"' EXIT
styles="$TT_SRCDIR/tests/torch/torch_styles.py"
limit=${TT_STYLES_CASE_LIMIT:-120}
gloo_limit=${TT_STYLES_GLOO_LIMIT:-50}
# run N ARGS: both backends on N ranks, then the comparison. A run that
# ended on a hung case is resumed after it, at most once per case.
run() {
    n=$1
    shift
    for b in gloo tutti; do
        json="$out/$b-$n.json"
        case_limit=$limit
        [ "$b" != gloo ] || case_limit=$gloo_limit
        tries=0
        until "$PYTHON" -c 'import json, sys; sys.exit(not json.load(open(sys.argv[1]))["done"])' "$json" 2>/dev/null; do
            tries=$((tries + 1))
            [ "$tries" -le 60 ] || { echo "torch_styles.py --backend $b on $n ranks did not finish"; return 1; }
            "$TT_BUILDDIR/tutti-run" -n "$n" "$PYTHON" "$styles" --backend "$b" --json "$json" \
                --case-limit "$case_limit" --resume "$@" ||
                [ -s "$json" ] || { echo "torch_styles.py --backend $b on $n ranks ended before its first case"; return 1; }
        done
    done
    "$PYTHON" "$styles" --compare "$out/gloo-$n.json" "$out/tutti-$n.json"
}
run 2 || exit 1
# 2-D FSDP x TP needs torch 2.x's DeviceMesh: torch 1.x has no 4-rank case.
if "$PYTHON" -c 'import sys, torch; sys.exit(torch.__version__ < "2")'; then
    run 4 -k '2-D' || exit 1
fi
