# SPDX-License-Identifier: MIT
"""One rank of the PyTorch backend test, run under tutti-run: every
torch.distributed collective on the "tutti" backend checked against exact
values, every ReduceOp, async Work, new_group, DDP against gloo, the
compression hook on tutti and on gloo groups, and errors raised on wait().
Exits non-zero naming what failed."""
import datetime
import inspect
import sys
import time

import torch
import torch.distributed as dist

import tutti.torch

dist.init_process_group("tutti", timeout=datetime.timedelta(seconds=20))
r, p = dist.get_rank(), dist.get_world_size()
R = dist.ReduceOp


def expect(cond, what):
    if not cond:
        sys.exit(f"rank {r}: {what}")


expect(dist.get_backend() == "tutti", f"backend is {dist.get_backend()}")
gloo = dist.new_group(backend="gloo")

# all_reduce: every op, checked against gloo on the same values where gloo has the op.
ranks = torch.arange(p)
for dtype in (torch.float32, torch.float64, torch.int64, torch.int32, torch.int8, torch.uint8, torch.int16,
              torch.float16, torch.bfloat16, torch.bool):
    for name in ("SUM", "PRODUCT", "MIN", "MAX", "AVG", "BAND", "BOR", "BXOR"):
        op = getattr(R, name)
        base = (torch.arange(6) * 5 + r * 3) % 7 + (1 if name == "PRODUCT" else 0)
        if name == "PRODUCT":
            base = (torch.arange(6) + r) % 2 + 1
        x = base.to(dtype) if dtype != torch.bool else (base % 2 == 1)
        floating = dtype.is_floating_point
        bad = (name in ("BAND", "BOR", "BXOR") and floating) or (name == "AVG" and dtype == torch.bool)
        t = x.clone()
        try:
            dist.all_reduce(t, op)
        except (TypeError, ValueError) as e:
            expect(bad, f"all_reduce {dtype} {name} refused: {e}")
            continue
        expect(not bad, f"all_reduce {dtype} {name} was accepted")
        every = torch.stack([((torch.arange(6) * 5 + q * 3) % 7 if name != "PRODUCT" else (torch.arange(6) + q) % 2 + 1)
                             for q in range(p)])
        if dtype == torch.bool:
            every = every % 2 == 1
            want = {"SUM": every.any(0), "MAX": every.any(0), "BOR": every.any(0), "MIN": every.all(0),
                    "PRODUCT": every.all(0), "BAND": every.all(0),
                    "BXOR": every.sum(0) % 2 == 1}[name]
        else:
            e64 = every.to(torch.float64)
            want = {"SUM": e64.sum(0), "PRODUCT": e64.prod(0), "MIN": e64.min(0).values, "MAX": e64.max(0).values,
                    "AVG": e64.sum(0) / p if floating else torch.div(e64.sum(0), p, rounding_mode="trunc")}.get(name)
            if want is None:
                f = {"BAND": torch.bitwise_and, "BOR": torch.bitwise_or, "BXOR": torch.bitwise_xor}[name]
                want = every[0]
                for q in range(1, p):
                    want = f(want, every[q])
            want = want.to(torch.float64).to(dtype) if dtype not in (torch.int8, torch.uint8, torch.int16) \
                else want.to(torch.int64).to(dtype)
        tol = 1e-2 if dtype in (torch.float16, torch.bfloat16) else 1e-6
        ok = torch.allclose(t.double(), want.double(), rtol=tol) if floating else torch.equal(t, want)
        expect(ok, f"all_reduce {dtype} {name}: {t.tolist()} want {want.tolist()}")
# sparse (COO): rank q holds ones at rows 0..q of a (p, 2) tensor; the sum keeps the sparse layout
sp = torch.sparse_coo_tensor(torch.arange(r + 1).reshape(1, -1), torch.ones(r + 1, 2), (p, 2))
dist.all_reduce(sp)
expect(sp.is_sparse and torch.equal(sp.to_dense(), (p - torch.arange(p)).float().reshape(-1, 1).expand(p, 2)),
       f"sparse all_reduce gave {sp}")
w16 = torch.full((3,), 1000 * (r + 1), dtype=torch.int16)  # past int8: the widening must be to int32
dist.all_reduce(w16)
expect(torch.all(w16 == 1000 * p * (p + 1) // 2), f"int16 all_reduce gave {w16}")
c = torch.tensor([1 + 2j, -3j], dtype=torch.complex64) * (r + 1)
dist.all_reduce(c)
expect(torch.allclose(c, torch.tensor([1 + 2j, -3j]) * (p * (p + 1) / 2)), f"complex all_reduce gave {c}")
# PREMUL_SUM (NCCL's): each rank's tensor times the factor, then the sum;
# the caller's input is read, not scaled, by reduce_scatter_tensor.
pm = torch.full((2,), float(r + 1))
dist.all_reduce(pm, dist._make_nccl_premul_sum(2.0))
expect(torch.all(pm == p * (p + 1)), f"PREMUL_SUM all_reduce gave {pm}")
pm_in, pm_out = torch.ones(2 * p), torch.empty(2)
dist.reduce_scatter_tensor(pm_out, pm_in, op=dist._make_nccl_premul_sum(0.5))
expect(torch.all(pm_out == p / 2) and torch.all(pm_in == 1), f"PREMUL_SUM reduce_scatter gave {pm_out}, {pm_in}")
nc = torch.ones(4, 6)[:, ::2] * (r + 1)  # not contiguous
dist.all_reduce(nc)
expect(torch.all(nc == p * (p + 1) / 2), f"non-contiguous all_reduce gave {nc}")

# broadcast, reduce, gather, scatter from every root
for root in range(p):
    t = torch.full((5,), float(r))
    dist.broadcast(t, root)
    expect(torch.all(t == root), f"broadcast from {root} gave {t}")
    t = torch.full((3,), float(r + 1))
    dist.reduce(t, root, R.SUM)
    if r == root:
        expect(torch.all(t == p * (p + 1) / 2), f"reduce to {root} gave {t}")
    mine = torch.full((2, 2), r, dtype=torch.int32)
    bucket = [torch.zeros(2, 2, dtype=torch.int32) for _ in range(p)] if r == root else None
    dist.gather(mine, bucket, dst=root)
    if r == root:
        expect(all(torch.all(b == q) for q, b in enumerate(bucket)), f"gather to {root} gave {bucket}")
    got = torch.zeros(3)
    parts = [torch.full((3,), 10.0 * q) for q in range(p)] if r == root else None
    dist.scatter(got, parts, src=root)
    expect(torch.all(got == 10 * r), f"scatter from {root} gave {got}")

# gathers, scatters, all-to-all
outs = [torch.empty(3, dtype=torch.float64) for _ in range(p)]
dist.all_gather(outs, torch.full((3,), r, dtype=torch.float64))
expect(all(torch.all(o == q) for q, o in enumerate(outs)), f"all_gather gave {outs}")
flat = torch.empty(p * 2, 2)
dist.all_gather_into_tensor(flat, torch.full((2, 2), float(r)))
expect(torch.equal(flat.view(p, 4), ranks.float().repeat_interleave(4).view(p, 4)), f"into_tensor gave {flat}")
out = torch.empty(2)
dist.reduce_scatter(out, [torch.full((2,), float(q + r)) for q in range(p)])
expect(torch.all(out == r * p + sum(range(p))), f"reduce_scatter gave {out}")
out = torch.empty(3, dtype=torch.int64)
dist.reduce_scatter_tensor(out, torch.arange(3 * p) + r, op=R.MAX)
expect(torch.equal(out, torch.arange(3 * r, 3 * r + 3) + p - 1), f"reduce_scatter_tensor gave {out}")
a2a = torch.empty(2 * p)
dist.all_to_all_single(a2a, torch.arange(2 * p, dtype=torch.float32) + 100 * r)
want = torch.cat([torch.arange(2 * r, 2 * r + 2) + 100 * q for q in range(p)]).float()
expect(torch.equal(a2a, want), f"all_to_all_single gave {a2a} want {want}")
# uneven: rank r sends r + q + 1 rows to rank q (so every rank's largest block differs)
ins, outs = [r + q + 1 for q in range(p)], [q + r + 1 for q in range(p)]
src = torch.cat([torch.full((n, 2), float(r * 10 + q)) for q, n in enumerate(ins)])
dst = torch.empty(sum(outs), 2)
dist.all_to_all_single(dst, src, outs, ins)
want = torch.cat([torch.full((n, 2), float(q * 10 + r)) for q, n in enumerate(outs)])
expect(torch.equal(dst, want), f"uneven all_to_all_single gave {dst.tolist()}")
outl = [torch.empty(q + 1) for q in range(p)]
dist.all_to_all(outl, [torch.full((r + 1,), float(r * 10 + q)) for q in range(p)])
expect(all(torch.all(o == q * 10 + r) for q, o in enumerate(outl)), f"all_to_all gave {outl}")
# all_gather_coalesced: outs[q][i] gets rank q's ins[i]. As many inputs as
# ranks, of one shape, is the case where pairing the wrong indices would
# go unnoticed (a transposed result); then shapes that differ.
for shapes in ([(2,)] * p, [(2, 2), (1,), (0,), (3,)]):
    ins = [torch.full(s, float(10 * r + i)) for i, s in enumerate(shapes)]
    outs = [[torch.full(s, -1.0) for s in shapes] for _ in range(p)]
    dist.all_gather_coalesced(outs, ins)
    expect(all(torch.all(o == 10 * q + i) and o.shape == shapes[i] for q in range(p) for i, o in enumerate(outs[q])),
           f"all_gather_coalesced of {shapes} gave {[[o.tolist() for o in oq] for oq in outs]}")
dist.barrier()

# torch 2.x only (torch 1.13 has neither): collectives coalesced by
# _coalescing_manager, and functional collectives, which find the group by name.
ran = []
if "async_ops" in inspect.signature(dist.distributed_c10d._coalescing_manager).parameters:
    ag, rs, ar = [torch.empty(2 * p) for _ in range(2)], [torch.empty(2) for _ in range(2)], [torch.ones(3)] * 2
    for kind in ("all_gather_into_tensor", "reduce_scatter_tensor", "all_reduce"):
        with dist.distributed_c10d._coalescing_manager(async_ops=True) as cm:
            for k in range(2):
                if kind == "all_gather_into_tensor":
                    dist.all_gather_into_tensor(ag[k], torch.full((2,), float(r + k)))
                elif kind == "reduce_scatter_tensor":
                    dist.reduce_scatter_tensor(rs[k], torch.arange(2 * p, dtype=torch.float32) + k)
                else:
                    dist.all_reduce(ar[k])
        cm.wait()
    expect(all(torch.equal(ag[k], (ranks.float() + k).repeat_interleave(2)) for k in range(2)), f"coalesced "
           f"all_gather_into_tensor gave {ag}")
    expect(all(torch.equal(rs[k], p * (torch.arange(2 * r, 2 * r + 2).float() + k)) for k in range(2)),
           f"coalesced reduce_scatter_tensor gave {rs}")
    expect(torch.all(ar[0] == p * p), f"coalesced all_reduce (one tensor twice) gave {ar[0]}")
    ran.append("_coalescing_manager")
try:
    import torch.distributed._functional_collectives as funcol
except ImportError:
    funcol = None
if funcol is not None:
    t = funcol.all_reduce(torch.full((3,), float(r + 1)), "sum", dist.group.WORLD)
    expect(torch.all(funcol.wait_tensor(t) == p * (p + 1) / 2), f"functional all_reduce gave {t}")
    g = funcol.all_gather_tensor(torch.full((2,), float(r)), 0, dist.group.WORLD)
    expect(torch.equal(funcol.wait_tensor(g), ranks.float().repeat_interleave(2)), f"functional all_gather gave {g}")
    ran.append("functional collectives")
if r == 0:
    print(f"torch {torch.__version__}: also checked {', '.join(ran) or 'nothing version-specific'}")

# point to point: a ring batch large enough that both sends cannot go first
if p > 1:
    big = 1 << 22
    right, left = (r + 1) % p, (r - 1) % p
    send, recv = torch.full((big,), float(r)), torch.empty(big)
    ops = [dist.P2POp(dist.isend, send, right), dist.P2POp(dist.irecv, recv, left)]
    for w in dist.batch_isend_irecv(ops):
        w.wait()
    expect(torch.all(recv == left), f"batch_isend_irecv got {recv[:3]} from {left}")
    small = torch.full((4,), float(r))
    if r == 0:
        dist.send(small, 1)
    elif r == 1:
        dist.recv(small, 0)
        expect(torch.all(small == 0), f"recv gave {small}")
    # Code written for gloo: plain isend then irecv on every rank, the recv
    # waited on first; its wait must let the held send out too.
    send2, recv2 = torch.full((big,), float(r + 10)), torch.empty(big)
    ws = [dist.isend(send2, right), dist.irecv(recv2, left)]
    for w in reversed(ws):
        w.wait()
    expect(torch.all(recv2 == left + 10), f"isend/irecv ring got {recv2[:3]} from {left}")
    # An isend nobody waited on goes out ahead of the group's next call.
    if r == 0:
        w = dist.isend(torch.full((big,), 7.0), 1)
        dist.barrier()
        w.wait()
    elif r == 1:
        got = torch.empty(big)
        dist.recv(got, 0)
        expect(torch.all(got == 7), f"recv of an unwaited isend gave {got[:3]}")
        dist.barrier()
    else:
        dist.barrier()
    # Polling is_completed, as code that overlaps its work does, lets them out too.
    ws = [dist.isend(send, right), dist.irecv(recv2, left)]
    deadline = time.monotonic() + 30
    while not all(w.is_completed() for w in ws) and time.monotonic() < deadline:
        time.sleep(0.01)
    expect(all(w.is_success() for w in ws) and torch.all(recv2 == left), "polled isend/irecv did not finish")

# async: calls return before the peers arrive, run in order, finish on wait
if p > 1:
    if r == 1:
        time.sleep(1.0)
    start = time.monotonic()
    ts = [torch.full((1000,), float(i + r)) for i in range(20)]
    works = [dist.all_reduce(t, async_op=True) for t in ts]
    issued = time.monotonic() - start
    if r == 0:
        expect(issued < 0.5 and not works[-1].is_completed(), f"async all_reduce blocked for {issued:.2f} s")
    for w in reversed(works):
        w.wait()
    expect(all(torch.all(t == p * i + sum(range(p))) for i, t in enumerate(ts)), "async all_reduces gave wrong sums")
    fut = dist.all_reduce(torch.ones(3), async_op=True).get_future()
    expect(torch.all(fut.wait()[0] == p), f"future gave {fut.value()}")

# new_group: members only, non-members get none
low = dist.new_group(list(range(max(1, p - 1))))
odd = dist.new_group([q for q in range(p) if q % 2 == 1] or [0])
if r < max(1, p - 1):
    t = torch.ones(2)
    dist.all_reduce(t, group=low)
    expect(torch.all(t == max(1, p - 1)), f"all_reduce on the low group gave {t}")
    b = torch.full((1,), float(r))
    dist.broadcast(b, 0, group=low)
    expect(b.item() == 0, f"broadcast on the low group gave {b}")
else:
    expect(low == dist.GroupMember.NON_GROUP_MEMBER, "a non-member got the low group")
if r % 2 == 1:
    t = torch.full((1,), float(r))
    dist.all_reduce(t, R.MAX, group=odd)
    expect(t.item() == max(q for q in range(p) if q % 2 == 1), f"odd group max gave {t}")


# monitored_barrier (torch.distributed's is for gloo only; the group's own):
# everyone arrives; then the last rank stays away, and rank 0 names it once
# the timeout passed (ranks 1.. stay away: the first, or all of them with
# wait_all_ranks). Each case on a group of its own: the one that stays away
# has not counted that barrier.
def monitored(group, absent, wait_all=False, timeout=1.0):
    if r in absent:
        return None
    start = time.monotonic()
    try:
        group.monitored_barrier(datetime.timedelta(seconds=timeout), wait_all_ranks=wait_all)
        return None
    except RuntimeError as e:
        took = time.monotonic() - start
        expect(took >= 0.9 * timeout, f"monitored_barrier failed after {took:.2f} s, before its {timeout} s "
               f"timeout: {e}")
        return str(e)


g = dist.new_group(backend="tutti")
expect(monitored(g, []) is None, "monitored_barrier with every rank failed")
if p > 1:
    err = monitored(dist.new_group(backend="tutti"), [p - 1])
    want = f"Rank {p - 1} failed to pass monitoredBarrier in 1000 ms" if r == 0 else \
        f"Rank {r} successfully reached monitoredBarrier, but received errors while waiting for send/recv from rank 0"
    expect(r == p - 1 or (err and want in err and " timeout " in err), f"monitored_barrier without rank {p - 1}: {err}")
if p > 1:  # rank 0 out of time before any rank's turn
    err = monitored(dist.new_group(backend="tutti"), range(1, p), timeout=0)
    expect(r != 0 or (err and "Rank 0 timed out in monitoredBarrier" in err), f"monitored_barrier, 0 s: {err}")
if p > 2:
    for wait_all in (False, True):
        err = monitored(dist.new_group(backend="tutti"), range(1, p), wait_all)
        want = ("Ranks " + ", ".join(map(str, range(1, p))) if wait_all else "Rank 1") + " failed to pass"
        expect(r != 0 or (err and want in err), f"monitored_barrier (wait_all_ranks={wait_all}): {err}")
dist.barrier()

# recv from any source: rank 0 takes one message from every other rank, by
# recv and irecv without src, each naming its sender.
if r == 0:
    seen = []
    for k in range(p - 1):
        t = torch.full((2, 3), -1.0)
        if k % 2:
            w = dist.irecv(t)
            w.wait()
            src = w._source_rank()
        else:
            src = dist.recv(t)
        expect(torch.all(t == src) and src not in seen and 0 < src < p, f"recv from any source: {src} gave {t}")
        seen.append(src)
elif p > 1:
    dist.send(torch.full((2, 3), float(r)), 0)
dist.barrier()  # the sends below to rank 0 would otherwise race the ones above into its any-source receives
try:
    dist.isend(torch.ones(1), (r + 1) % p)._source_rank() if p > 1 else dist.barrier(async_op=True)._source_rank()
    expect(False, "a send's Work named a source")
except RuntimeError as e:
    expect("any source" in str(e), f"a send's source_rank() says {e}")
if p > 1:
    dist.recv(torch.empty(1), (r - 1) % p)
dist.barrier()

# DDP on tutti against DDP on gloo, then the compression hook
def train(group, hook_state=None, steps=6):
    torch.manual_seed(0)
    # Two layers over DDP's 1 MB first bucket, so there are several buckets.
    model = torch.nn.Sequential(torch.nn.Linear(512, 512), torch.nn.Tanh(), torch.nn.Linear(512, 512))
    ddp = torch.nn.parallel.DistributedDataParallel(model, process_group=group, bucket_cap_mb=1)
    if hook_state is not None:
        ddp.register_comm_hook(hook_state, tutti.torch.compression_hook)
    opt = torch.optim.SGD(ddp.parameters(), lr=0.05)
    gen = torch.Generator().manual_seed(100 + r)
    x = torch.randn(16, 512, generator=gen)
    losses = []
    for _ in range(steps):
        loss = (ddp(x) - x).pow(2).mean()
        opt.zero_grad()
        loss.backward()
        opt.step()
        losses.append(loss.item())
    return torch.cat([q.detach().reshape(-1) for q in model.parameters()]), losses


w_tutti, l_tutti = train(None)
w_gloo, _ = train(gloo)
diff = (w_tutti - w_gloo).abs().max().item()
expect(diff < 1e-5 and (p > 2 or diff == 0), f"DDP on tutti and on gloo differ by {diff}")
dense_state = tutti.torch.CompressionState("topk", density=1.0)
w_full, _ = train(None, dense_state)
expect((w_full - w_tutti).abs().max().item() < 1e-5, "top-k with density 1 trained differently from dense")
for group in (None, gloo):
    state = tutti.torch.CompressionState("topk", density=0.05, process_group=group)
    w_c, l_c = train(group, state, steps=12)
    expect(p == 1 or state.bytes_sent * 4 < state.dense_bytes, f"top-k 5% sent {state.bytes_sent} of "
           f"{state.dense_bytes} dense bytes")
    expect(l_c[-1] < l_c[0], f"compressed training did not learn: {l_c}")
    expect(len(state._feedback) >= 2, "error feedback is not kept per bucket")
state = tutti.torch.CompressionState("int8", start_step=2)
train(None, state, steps=3)
expect(state.step == 3 and state.total_bytes_sent < state.total_dense_bytes or p == 1, "int8 hook sent too much")

# Errors: a mismatch fails wait() on every rank with tutti's explanation.
if p > 1:
    w = dist.all_reduce(torch.ones(5 if r == 0 else 6), async_op=True)
    try:
        w.wait()
        expect(False, "ranks with different counts both succeeded")
    except tutti.TuttiError as e:
        expect(e.name in ("TUTTI_ERR_MISMATCH", "TUTTI_ERR_PEER_FAILED") and e.detail, f"mismatch raised {e}")
        held = w.exception()
        expect(w.is_completed() and isinstance(held, tutti.TuttiError) and held.name == e.name,
               f"the failed Work holds {held!r}, not its error")
    try:
        dist.all_reduce(torch.ones(1))
        expect(False, "a failed communicator ran another collective")
    except tutti.TuttiError as e:
        expect(e.name in ("TUTTI_ERR_ABORTED", "TUTTI_ERR_MISMATCH", "TUTTI_ERR_PEER_FAILED"), f"after failure: {e}")
