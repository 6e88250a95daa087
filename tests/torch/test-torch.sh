#!/bin/sh
# SPDX-License-Identifier: MIT
# The PyTorch backend on 2 and 3 ranks under tutti-run (tests/torch/torch_ranks.py),
# on whichever torch $PYTHON has (Debian 12: 1.13; .ci/torch2: 2.6, Debian 13).
# Skips (77) when tutti.torch cannot be imported (no torch, or its C++ half
# was not built: configure says why); fails when configure built it and it
# still does not import (tests/lib/python-env.sh).
. "${TT_SRCDIR:-.}/tests/lib/python-env.sh"
tt_torch_backend || exit $?
for n in 2 3; do
    echo "torch_ranks.py on $n ranks"
    "$TT_BUILDDIR/tutti-run" -n "$n" "$PYTHON" "$TT_SRCDIR/tests/torch/torch_ranks.py" || exit 1
done
# An isend never waited on still reaches its peer when its rank exits.
"$TT_BUILDDIR/tutti-run" -n 2 "$PYTHON" -c '
import datetime, torch, torch.distributed as dist, tutti.torch
dist.init_process_group("tutti", timeout=datetime.timedelta(seconds=20))
if dist.get_rank() == 0:
    dist.isend(torch.full((1 << 20,), 5.0), 1)
else:
    t = torch.empty(1 << 20)
    dist.recv(t, 0)
    assert torch.all(t == 5), t[:3]
    print("an isend left unwaited at exit arrived")
' || exit 1
# A group Python drops while its worker still runs a call is released:
# the worker, freeing the call's tensor, needs the GIL the dropping thread
# holds (without it rank 0 never reaches the barrier, which then times out).
"$TT_BUILDDIR/tutti-run" -n 2 "$PYTHON" -c '
import datetime, time, torch, torch.distributed as dist, tutti.torch
dist.init_process_group("tutti", timeout=datetime.timedelta(seconds=20))
r = dist.get_rank()
store = dist.PrefixStore("dropped", dist.distributed_c10d._get_default_store())
pg = tutti.torch._pg.create(store, r, 2)
if r == 0:
    pg.recv([torch.empty(1 << 16)], 1, 0)  # neither the Work nor the tensor kept
    del pg
    print("a group dropped while its worker ran a recv was released")
else:
    time.sleep(1)
    pg.send([torch.ones(1 << 16)], 0, 0).wait()
dist.barrier()
' || exit 1
# A call on a group that was retired (as shrink and grow retire the old
# one) fails saying so, at once, instead of hanging.
"$TT_BUILDDIR/tutti-run" -n 1 "$PYTHON" -c '
import torch, torch.distributed as dist, tutti.torch
dist.init_process_group("tutti")
pg = tutti.torch._pg.backend_of(None)
pg._retire(destroy=True)
try:
    pg.send([torch.ones(2)], 0, 0).wait()
    raise SystemExit("a send on a destroyed group succeeded")
except RuntimeError as e:
    assert "destroyed" in str(e), e
    print("a send on a destroyed group failed:", e)
' || exit 1
