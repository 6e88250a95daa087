# SPDX-License-Identifier: MIT
"""One rank of the backend's contract with torch's Work and Future, run
under tutti-run (tests/torch/test-torch-contract.sh): what trainers do with Works
and Futures that a backend with one thread per group, completing futures
there, gets wrong.

- A Future's callback that issues a collective and waits for it (torch's
  PowerSGD hook does) completes: callbacks never run on the thread that
  must run that collective.
- Errors reach wait(), Future.wait() and the callbacks chained with then().
- torch 2.x: _coalescing_manager(device=..., async_ops=True) around
  all_reduce: the Work torch waits on is done only when the collectives are.
- An isend held on a subgroup, then a collective on the world group before
  the isend is waited on (a pipeline stage, then the loss all-reduce).

Every case has its deadline: a hang fails the test with the stacks.
Arguments name the cases to run (default: all). Exits non-zero naming
what failed."""
import datetime
import faulthandler
import inspect
import sys

import torch
import torch.distributed as dist

import tutti.torch  # noqa: F401  (registers the backend)

faulthandler.dump_traceback_later(120, exit=True)  # a hang fails the test, with every thread's stack
dist.init_process_group("tutti", timeout=datetime.timedelta(seconds=20))
r, p = dist.get_rank(), dist.get_world_size()
CASES = []


def case(fn):
    CASES.append(fn)
    return fn


def expect(cond, what):
    if not cond:
        sys.exit(f"rank {r}: {what}")


@case
def callback_issues_a_collective():
    """Each callback all-reduces what it got and waits for that, by its
    Future and by its Work, three deep."""
    def again(fut):
        return dist.all_reduce(fut.value()[0], async_op=True).get_future().wait()[0]

    def again_by_work(fut):
        t = fut.value()[0] if isinstance(fut.value(), list) else fut.value()
        w = dist.all_reduce(t, async_op=True)
        w.wait()
        return t

    fut = dist.all_reduce(torch.ones(1000), async_op=True).get_future()
    got = fut.then(again).then(again_by_work).wait()
    expect(torch.all(got == p ** 3), f"three all-reduces chained in callbacks gave {got[:3]}, want {p ** 3}")


@case
def callback_waits_for_an_earlier_work():
    """A callback of one call waits on the Work of a call issued after it."""
    t1, t2 = torch.ones(10), torch.full((1 << 20,), 2.0)
    w1 = dist.all_reduce(t1, async_op=True)
    w2 = dist.all_reduce(t2, async_op=True)
    got = w1.get_future().then(lambda f: (w2.wait(), float(t2[0]))[1]).wait()
    expect(got == 2 * p, f"a callback waiting on a later Work saw {got}")


@case
def errors_reach_futures_and_callbacks():
    """A failed collective (ranks disagree on the count) fails wait(), the
    Future, and the Future of a callback chained to it; the group then
    refuses further calls, saying why."""
    g = dist.new_group(backend="tutti")
    w = dist.all_reduce(torch.ones(5 + r), group=g, async_op=True)
    chained = w.get_future().then(lambda f: f.value())
    for what, wait in (("wait()", w.wait), ("Future.wait()", w.get_future().wait), ("then()", chained.wait)):
        try:
            wait()
            expect(False, f"{what} of a mismatched all_reduce succeeded")
        except RuntimeError as e:
            expect("TUTTI_ERR_MISMATCH" in str(e) or "TUTTI_ERR_PEER_FAILED" in str(e), f"{what} raised {e}")
    expect(w.is_completed() and not w.is_success(), "the failed Work says it succeeded")


@case
def coalesced_all_reduce_is_done_when_waited():
    """torch 2.x: the Work _coalescing_manager waits on (with a device) is
    the backend's end-of-coalescing Work; it must be done only once the
    all-reduces issued inside are, large enough to still be running."""
    if "async_ops" not in inspect.signature(dist.distributed_c10d._coalescing_manager).parameters:
        return "torch 1.x has no async coalescing manager"
    ts = [torch.full((1 << 21,), float(r + k)) for k in range(4)]
    with dist.distributed_c10d._coalescing_manager(device=torch.device("cpu"), async_ops=True) as cm:
        for t in ts:
            dist.all_reduce(t)
    cm.wait()
    for k, t in enumerate(ts):
        want = sum(q + k for q in range(p))
        expect(torch.all(t == want), f"after cm.wait(), tensor {k} holds {t[0]} (and {t[-1]}), want {want}")
    return None


@case
def held_isend_on_a_subgroup_then_world_all_reduce():
    """Rank 0 isends on a subgroup, then all-reduces on the world before it
    waits; rank 1 receives, then all-reduces."""
    pp = dist.new_group([0, 1])
    act, loss = torch.empty(1 << 20), torch.ones(1)
    if r == 0:
        w = dist.isend(torch.full((1 << 20,), 3.0), 1, group=pp)
        dist.all_reduce(loss)
        w.wait()
    else:
        if r == 1:
            dist.recv(act, 0, group=pp)
            expect(torch.all(act == 3), f"the subgroup's recv got {act[:3]}")
        dist.all_reduce(loss)
    expect(loss.item() == p, f"the world all_reduce gave {loss}")


for fn in CASES:
    if sys.argv[1:] and fn.__name__ not in sys.argv[1:]:  # only the cases named, when some are
        continue
    why = fn()
    dist.barrier()
    if r == 0:
        print(f"{fn.__name__}: {'skipped, ' + why if why else 'passed'}")
