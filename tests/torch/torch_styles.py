# SPDX-License-Identifier: MIT
"""The ways trainers parallelize, each against a one-process reference.

    tutti-run -n 2 python3 torch_styles.py --backend tutti --json tutti.json [-k PATTERN] [--resume]
    python3 torch_styles.py --compare gloo.json tutti.json

One rank of a run: the default group is --backend's, and every case
trains (or computes) on it a small model the way one parallelism style
does, then compares what it got with the same model trained in this one
process on the whole batch (the reference). A case passes when the
distance to the reference, relative to the reference's own change, is
within the case's tolerance: tight where the style is exact, looser where
it compresses (fp16, PowerSGD, top-k). Cases torch lacks (1.13 has no
FSDP on CPU, no DTensor, no pipelining, no functional collectives) are
skipped, and so are the ones that need more ranks than the run has.
Rank 0 writes {case: "pass ..."|"fail ..."|"error ..."|"skip ..."} to --json
after every case. A case that runs past --case-limit seconds is recorded
as "hang ..." and the run ends (a hung collective cannot be left behind);
--resume then runs the cases the file does not name yet, and "done" says
the run reached the last one (tests/torch/torch-styles.sh loops so).

--compare reads a gloo run and a tutti run of the same torch: it prints
them side by side, and fails unless every case that is not skipped passes
on tutti (gloo's column says where gloo is wrong).

The styles are here (DDP with every hook torch ships that runs on CPU,
ZeRO, a hand-written pipeline, MoE all-to-all) and in torch_styles2.py
(torch 2.x: FSDP1 and FSDP2, tensor and sequence parallel with DTensor,
2-D FSDP x TP, torch.distributed.pipelining, functional collectives eager
and compiled, compiled DDP).
"""
import argparse
import datetime
import faulthandler
import json
import os
import re
import sys
import threading
import time

import torch
import torch.distributed as dist
import torch.nn as nn

CASES = {}
D_IN, D_HID, BATCH, STEPS, LR = 16, 64, 8, 4, 0.1


def case(name, tol=1e-4, ranks=2):
    """Registers fn as case `name`: fn() returns flat tensors (result,
    reference, start), or a string saying why it is skipped; tol: the most
    the result may be off the reference, over the reference's change from
    the start; ranks: the fewest it needs."""
    def register(fn):
        CASES[name] = (fn, tol, ranks)
        return fn

    return register


def rank():
    return dist.get_rank()


def size():
    return dist.get_world_size()


def mlp(seed=0, extra=False):
    torch.manual_seed(seed)
    layers = [nn.Linear(D_IN, D_HID), nn.Tanh(), nn.Linear(D_HID, D_IN)]
    return nn.Sequential(*layers) if not extra else Branchy(layers)


class Branchy(nn.Module):
    """An MLP with a layer that the forward pass never uses (find_unused_parameters)."""

    def __init__(self, layers):
        super().__init__()
        self.body, self.unused = nn.Sequential(*layers), nn.Linear(D_IN, D_IN)

    def forward(self, x):
        return self.body(x)


def data(step, q, n=BATCH):
    g = torch.Generator().manual_seed(1000 * step + q)
    return torch.randn(n, D_IN, generator=g)


def whole(step, n=BATCH):
    return torch.cat([data(step, q, n) for q in range(size())])


def loss_of(out, x):
    return (out - x.flip(1)).pow(2).mean()


def flat(module):
    return torch.cat([p.detach().reshape(-1) for p in module.parameters()])


def reference(steps=STEPS, lr=LR, model=None, batches=None, opt=torch.optim.SGD, n=BATCH):
    """The model trained in this process on every rank's data at once."""
    m = model if model is not None else mlp()
    o = opt(m.parameters(), lr=lr)
    for s in range(steps):
        o.zero_grad()
        xs = batches(s) if batches else [whole(s, n)]
        sum(loss_of(m(x), x) for x in xs).backward()
        o.step()
    return flat(m)


def train_ddp(ddp, steps=STEPS, lr=LR, opt=None, micro=1, n=BATCH):
    o = opt or torch.optim.SGD(ddp.parameters(), lr=lr)
    for s in range(steps):
        o.zero_grad()
        for k in range(micro):
            x = data(s * micro + k, rank()) if micro > 1 else data(s, rank(), n)
            if k < micro - 1:
                with ddp.no_sync():
                    loss_of(ddp(x), x).backward()
            else:
                loss_of(ddp(x), x).backward()
        o.step()
    return flat(ddp.module)


DDP = nn.parallel.DistributedDataParallel


@case("ddp")
def ddp_plain():
    return train_ddp(DDP(mlp(), bucket_cap_mb=0.002)), reference(), flat(mlp())


@case("ddp no_sync")
def ddp_no_sync():
    def batches(s):
        return [torch.cat([data(2 * s + k, q) for q in range(size())]) for k in range(2)]

    return train_ddp(DDP(mlp()), micro=2), reference(batches=batches), flat(mlp())


@case("ddp find_unused_parameters")
def ddp_find_unused():
    return (train_ddp(DDP(mlp(extra=True), find_unused_parameters=True)), reference(model=mlp(extra=True)),
            flat(mlp(extra=True)))


@case("ddp join (uneven inputs)")
def ddp_join():
    from torch.distributed.algorithms.join import Join

    ddp = DDP(mlp())
    o = torch.optim.SGD(ddp.parameters(), lr=LR)
    with Join([ddp]):
        for s in range(STEPS - 1 + rank()):
            o.zero_grad()
            x = data(s, rank())
            loss_of(ddp(x), x).backward()
            o.step()

    def batches(s):  # the ranks still training; the gradient is divided by every rank
        return [data(s, q) for q in range(size()) if s < STEPS - 1 + q]

    m = mlp()
    o = torch.optim.SGD(m.parameters(), lr=LR)
    for s in range(STEPS - 1 + size() - 1):
        o.zero_grad()
        (sum(loss_of(m(x), x) for x in batches(s)) / size()).backward()
        o.step()
    return flat(ddp.module), flat(m), flat(mlp())


def hooked(hook, state=None, steps=STEPS, n=BATCH):
    ddp = DDP(mlp(), bucket_cap_mb=0.002)
    ddp.register_comm_hook(state, hook)
    return train_ddp(ddp, steps=steps, n=n), reference(steps=steps, n=n), flat(mlp())


def _hooks():
    from torch.distributed.algorithms.ddp_comm_hooks import default_hooks as d
    from torch.distributed.algorithms.ddp_comm_hooks import powerSGD_hook as ps

    return d, ps


@case("ddp hook allreduce_hook")
def hook_allreduce():
    return hooked(_hooks()[0].allreduce_hook)


@case("ddp hook fp16_compress_hook", tol=1e-2)
def hook_fp16():
    return hooked(_hooks()[0].fp16_compress_hook)


@case("ddp hook bf16_compress_hook", tol=5e-2)
def hook_bf16():
    if torch.version.cuda is None:  # Debian's torch 1.13 and 2.6: CPU only
        return "bf16_compress_hook wants a torch built with CUDA and NCCL"
    return hooked(_hooks()[0].bf16_compress_hook)


@case("ddp hook fp16_compress_wrapper(allreduce_hook)", tol=1e-2)
def hook_fp16_wrapper():
    d = _hooks()[0]
    return hooked(d.fp16_compress_wrapper(d.allreduce_hook))


def powersgd(hook_name):
    """PowerSGD's callbacks all-reduce its factors and wait for them (a
    collective issued in a callback). One sample a rank: every gradient
    matrix then has rank 2 at most, which a rank-2 approximation gives
    exactly, so the result must be the reference's."""
    ps = _hooks()[1]
    state = ps.PowerSGDState(process_group=None, matrix_approximation_rank=2, start_powerSGD_iter=2)
    return hooked(getattr(ps, hook_name), state, steps=6, n=1)


@case("ddp hook powerSGD_hook (callbacks issue collectives)", tol=1e-3)
def hook_powersgd():
    return powersgd("powerSGD_hook")


@case("ddp hook batched_powerSGD_hook", tol=1e-3)
def hook_batched_powersgd():
    # Debian's torch 1.13 and 2.6 hand the batched hook's 2-D matrix to an
    # orthogonalizer that asserts 3-D, so it fails on every backend; a torch
    # whose orthogonalizer takes 2-D runs the case.
    try:
        _hooks()[1]._orthogonalize(torch.zeros(4, 2))
    except AssertionError:
        return "this torch's batched_powerSGD_hook fails its own assertion (a 2-D matrix for a 3-D one) on any backend"
    return powersgd("batched_powerSGD_hook")


@case("ddp hook post_localSGD_hook")
def hook_post_local_sgd():
    from torch.distributed.algorithms.ddp_comm_hooks import post_localSGD_hook as pl

    # The subgroup is every rank (as new_subgroups makes it on one host, where
    # torch 1.x needs CUDA for that), so it still averages all.
    subgroup = dist.new_group(list(range(size())))
    state = pl.PostLocalSGDState(process_group=None, subgroup=subgroup, start_localSGD_iter=2)
    return hooked(pl.post_localSGD_hook, state)


@case("ddp hook tutti compression_hook (top-k, density 1)")
def hook_tutti_dense():
    import tutti.torch

    return hooked(tutti.torch.compression_hook, tutti.torch.CompressionState("topk", density=1.0))


@case("ddp hook tutti compression_hook (top-k 25%)", tol=0.5)
def hook_tutti_topk():
    import tutti.torch

    return hooked(tutti.torch.compression_hook, tutti.torch.CompressionState("topk", density=0.25), steps=6)


@case("zero-1 (ZeroRedundancyOptimizer)")
def zero1():
    from torch.distributed.optim import ZeroRedundancyOptimizer

    ddp = DDP(mlp())
    o = ZeroRedundancyOptimizer(ddp.parameters(), optimizer_class=torch.optim.Adam, lr=0.01)
    return train_ddp(ddp, opt=o), reference(lr=0.01, opt=torch.optim.Adam), flat(mlp())


@case("pipeline by hand (isend/irecv, 2 stages, 4 micro-batches)")
def pipeline_by_hand():
    """Rank 0 holds the first layer, rank 1 the rest; GPipe: every forward,
    then every backward, activations and their gradients by isend/irecv."""
    full = mlp()
    first, rest = full[0], nn.Sequential(full[1], full[2])
    mine = first if rank() == 0 else rest
    start = flat(mine)
    o = torch.optim.SGD(mine.parameters(), lr=LR)
    micro = 4
    for s in range(STEPS):
        o.zero_grad()
        xs = whole(s).chunk(micro) if rank() in (0, 1) else []
        if rank() == 0:
            outs = [first(x) for x in xs]
            for w in [dist.isend(a.detach(), 1) for a in outs]:
                w.wait()
            grads = [torch.empty_like(a) for a in outs]
            for w in [dist.irecv(g, 1) for g in grads]:
                w.wait()
            for a, g in zip(outs, grads):
                a.backward(g)
        elif rank() == 1:
            ins = [torch.empty(x.shape[0], D_HID) for x in xs]
            for w in [dist.irecv(a, 0) for a in ins]:
                w.wait()
            ins = [a.requires_grad_() for a in ins]
            sum(loss_of(rest(a), x) for a, x in zip(ins, xs)).backward()
            for w in [dist.isend(a.grad, 0) for a in ins]:
                w.wait()
        o.step()
    ref = mlp()
    reference(model=ref, batches=lambda s: list(whole(s).chunk(micro)))
    if rank() > 1:
        return torch.zeros(1), torch.ones(1), torch.zeros(1)
    want = ref[0] if rank() == 0 else nn.Sequential(ref[1], ref[2])
    return flat(mine), flat(want), start


class _AllToAll(torch.autograd.Function):
    """all_to_all_single with uneven splits, and its gradient the way back."""

    @staticmethod
    def forward(ctx, x, send, recv):
        ctx.send, ctx.recv = send, recv
        out = x.new_empty((sum(recv),) + x.shape[1:])
        dist.all_to_all_single(out, x.contiguous(), recv, send)
        return out

    @staticmethod
    def backward(ctx, g):
        out = g.new_empty((sum(ctx.send),) + g.shape[1:])
        dist.all_to_all_single(out, g.contiguous(), ctx.send, ctx.recv)
        return out, None, None


def route(q, step, n=BATCH):
    """Which expert each of rank q's tokens goes to: uneven, and some get none."""
    return [(i * i + q + step) % size() if i % 3 else 0 for i in range(n)]


@case("moe all_to_all (uneven splits, forward and backward)")
def moe():
    torch.manual_seed(5)
    experts = [nn.Linear(D_IN, D_IN) for _ in range(size())]
    ref = [nn.Linear(D_IN, D_IN) for _ in range(size())]
    for e, r in zip(experts, ref):
        r.load_state_dict(e.state_dict())
    mine = experts[rank()]
    start = flat(mine)
    o, o_ref = torch.optim.SGD(mine.parameters(), lr=LR), torch.optim.SGD([p for r in ref for p in r.parameters()],
                                                                          lr=LR)
    for s in range(STEPS):
        x, dest = data(s, rank()), route(rank(), s)
        order = sorted(range(BATCH), key=lambda i: dest[i])
        send = [dest.count(e) for e in range(size())]
        counts = torch.tensor(send)
        got = torch.empty_like(counts)
        dist.all_to_all_single(got, counts)
        tokens = _AllToAll.apply(x[order], send, got.tolist())
        back = _AllToAll.apply(torch.tanh(mine(tokens)), got.tolist(), send)
        y = torch.empty_like(back).index_copy(0, torch.tensor(order), back)
        o.zero_grad()
        loss_of(y, x).backward()
        o.step()
        o_ref.zero_grad()  # every rank's tokens through their experts, here
        total = 0
        for q in range(size()):
            xq, dq = data(s, q), route(q, s)
            yq = torch.stack([torch.tanh(ref[dq[i]](xq[i])) for i in range(BATCH)])
            total = total + loss_of(yq, xq)
        total.backward()
        o_ref.step()
    return flat(mine), flat(ref[rank()]), start


def save(args, results, done):
    if rank() == 0 and args.json:
        with open(args.json + ".tmp", "w") as f:
            json.dump({"torch": torch.__version__, "backend": args.backend, "ranks": size(), "cases": results,
                       "done": done}, f, indent=1)
        os.replace(args.json + ".tmp", args.json)


def deadline(args, results, name):
    """A timer that records name as hung and ends this rank. Ranks other
    than 0 wait a little longer, so that rank 0 is the one to record it."""
    def hung():
        results[name] = f"hang: no result after {args.case_limit} s"
        save(args, results, False)
        print(f"{name}: {results[name]}; the run ends here", flush=True)
        os._exit(3)
    timer = threading.Timer(args.case_limit + (0 if rank() == 0 else 10), hung)
    timer.daemon = True
    timer.start()
    return timer


def run(args):
    faulthandler.dump_traceback_later(args.limit, exit=True)
    # An operation that waits longer fails the group: the case past its
    # limit is reported as hung, the cases after it as not run.
    dist.init_process_group(args.backend, timeout=datetime.timedelta(seconds=args.case_limit / 2))
    if torch.__version__ >= "2":
        # torch_styles2 imports this file by name: that name must be this
        # module, or its cases go to a second copy's CASES and never run.
        sys.modules.setdefault("torch_styles", sys.modules[__name__])
        before = len(CASES)
        import torch_styles2  # noqa: F401  (registers the torch 2.x styles)
        if len(CASES) == before:  # they went elsewhere: the run would pass without them
            raise SystemExit("torch_styles: torch_styles2 registered no case here")
    results, broken = {}, None
    if args.resume and args.json and os.path.exists(args.json):
        results = json.load(open(args.json))["cases"]
    for name, (fn, tol, need) in CASES.items():
        if (args.k and not re.search(args.k, name)) or name in results:
            continue
        start = time.monotonic()
        if broken:
            results[name] = f"error: not run: the group failed in {broken!r}"
            continue
        if size() < need:
            results[name] = f"skip: needs {need} ranks"
            continue
        timer = deadline(args, results, name)
        try:
            got = fn()
            results[name] = "skip: " + got if isinstance(got, str) else judge(got, tol)
        except Exception as e:  # a case that fails must not stop the others
            results[name] = "error: " + " ".join(str(e).split())[:300]
        results[name] += f" ({time.monotonic() - start:.1f} s)"
        if rank() == 0:
            print(f"{name}: {results[name]}", flush=True)
        try:
            dist.barrier()
        except RuntimeError:  # the case left the group failed: the cases after it cannot run
            broken = name
        timer.cancel()
        save(args, results, False)
    save(args, results, True)
    os._exit(0)  # a failed case may have left a group in a state no teardown should wait on


def judge(got, tol):
    """pass/fail: the distance to the reference over the reference's own
    change from the start (result, reference, start), worst over the ranks."""
    result, ref, start = got
    with torch.no_grad():
        err = torch.tensor([(result - ref).norm().item() / max((ref - start).norm().item(), 1e-12)])
    dist.all_reduce(err, dist.ReduceOp.MAX)
    e = err.item()
    return f"{'pass' if e <= tol else 'fail'}: off the reference by {e:.2e} (tolerance {tol:.0e})"


def compare(paths):
    runs = [json.load(open(p)) for p in paths]
    by = {r["backend"]: r for r in runs}
    gloo, tutti = by.get("gloo", {"cases": {}}), by["tutti"]
    print(f"# torch {tutti['torch']}, {tutti['ranks']} ranks: each case against the one-process reference")
    print(f"{'case':58} {'gloo':6} {'tutti':6} tutti's detail")
    bad = []
    for name, t in tutti["cases"].items():
        g = gloo["cases"].get(name, "-")
        print(f"{name[:58]:58} {g.split(':')[0]:6} {t.split(':')[0]:6} {t.split(':', 1)[-1].strip()[:90]}")
        if not t.startswith(("pass", "skip")):
            bad.append(name)
    for name, g in gloo["cases"].items():
        if not g.startswith(("pass", "skip")):
            print(f"gloo: {name}: {g[:200]}")
    if bad:
        sys.exit(f"tutti does not match the reference in: {', '.join(bad)}")


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--backend", default="tutti", choices=["tutti", "gloo"])
    ap.add_argument("--json")
    ap.add_argument("-k", help="only the cases whose name matches this regular expression")
    ap.add_argument("--limit", type=int, default=900, help="seconds before a hang is reported and the run ends")
    ap.add_argument("--case-limit", type=int, default=120, help="seconds one case may take before it is "
                    "recorded as hung and the run ends")
    ap.add_argument("--resume", action="store_true", help="run only the cases --json does not name yet")
    ap.add_argument("--compare", nargs=2, metavar="JSON")
    args = ap.parse_args()
    if args.compare:
        return compare(args.compare)
    # On both backends: the tutti hook cases use it, and it makes env:// start
    # where torch lacks libuv (USE_LIBUV=0).
    import tutti.torch  # noqa: F401  (registers the backend)

    run(args)


if __name__ == "__main__":
    sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
    main()
