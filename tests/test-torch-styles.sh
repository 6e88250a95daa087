#!/bin/sh
# SPDX-License-Identifier: MIT
# The parallelism styles on tutti against a one-process reference, beside
# gloo (tests/python/torch_styles.py): DDP with every hook torch ships that
# runs on CPU, ZeRO, pipelines, MoE all-to-all, and on torch 2.x FSDP1/2,
# tensor and sequence parallel, torch.distributed.pipelining, functional
# collectives eager and compiled, compiled DDP. Two ranks, then 2-D
# FSDP x TP on four. Fails unless tutti matches the reference in every case
# this torch has. Skips (77) when tutti.torch cannot be imported.
. "${TT_SRCDIR:-.}/tests/python-env.sh"
tt_torch_backend || exit 77
out=$(mktemp -d /tmp/tutti-styles-XXXXXX)
trap 'rm -rf "$out"' EXIT
styles="$TT_SRCDIR/tests/python/torch_styles.py"
# run N ARGS: both backends on N ranks, then the comparison.
run() {
    n=$1
    shift
    for b in gloo tutti; do
        "$TT_BUILDDIR/tutti-run" -n "$n" "$PYTHON" "$styles" --backend "$b" --json "$out/$b-$n.json" "$@" ||
            { echo "torch_styles.py --backend $b on $n ranks did not finish"; return 1; }
    done
    "$PYTHON" "$styles" --compare "$out/gloo-$n.json" "$out/tutti-$n.json"
}
run 2 || exit 1
# 2-D FSDP x TP needs torch 2.x's DeviceMesh: torch 1.x has no 4-rank case.
if "$PYTHON" -c 'import sys, torch; sys.exit(torch.__version__ < "2")'; then
    run 4 -k '2-D' || exit 1
fi
