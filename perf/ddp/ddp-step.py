#!/usr/bin/env python3
# SPDX-License-Identifier: MIT
"""The DDP training step as a trainer runs it, tutti against gloo in one job.

    tutti-run -n 2 python3 perf/ddp/ddp-step.py --model mlp --batch 2       # both backends, step by step
    python3 perf/ddp/ddp-step.py --single --model mlp --batch 2             # one process, no DDP

Plain DistributedDataParallel: default buckets, overlap of the all-reduces
with the backward pass on, no communication hook, no barrier, one torch
thread per rank. The default group is tutti and gloo a second group of the
same job; each backend trains its own copy of the model (same seed), and the
two take turns step by step, so load from elsewhere falls on both alike.
--single times the same step in one process without DDP: the step a
perfectly scaling job would take (scaling efficiency = that step / the DDP
step). A step is forward, backward and the optimizer's step; its time is
rank 0's, its CPU time the process's (every thread) averaged over ranks.
Prints one JSON line (perf/ddp/ddp-bench gathers them).

Two references can take turns with the backends (--backends
tutti,gloo,no-comm,sum-only): DDP over the default group whose
communication hook returns each bucket as it is (no-comm: every cost of
torch's DDP, no all-reduce), and one whose hook only adds the second half
of each bucket into the first in place (sum-only, 2 ranks: the arithmetic
of a rank's share of a 2-rank all-reduce, reading the bucket once and
writing half of it, with nothing sent or received). No backend can make a
step shorter than sum-only's: it still has to do that sum and bring the
peer's half and the result across. Their gradients are not reduced, so
their models drift apart; only their time is read.
"""
import argparse
import datetime
import json
import os
import resource
import statistics
import sys
import time

import torch
import torch.distributed as dist

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), os.pardir, os.pardir, "python"))

CLASSES = 16


def parse():
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--model", choices=["mlp", "transformer"], default="mlp")
    ap.add_argument("--batch", type=int, default=2, help="samples (mlp) or sequences (transformer) per rank")
    ap.add_argument("--steps", type=int, default=30, help="timed steps per backend")
    ap.add_argument("--warmup", type=int, default=5)
    ap.add_argument("--bucket-view", action="store_true", help="DDP's gradient_as_bucket_view=True")
    ap.add_argument("--zero-grad", choices=["none", "zero"], default="none",
                    help="zero_grad(set_to_none=True), torch 2's default, or zeroing in place, 1.13's")
    ap.add_argument("--backends", default="tutti,gloo", help="comma list, in turn step by step")
    ap.add_argument("--single", action="store_true", help="one process, no DDP: the reference step")
    ap.add_argument("--check-hooks", action="store_true",
                    help="fail unless each reference's hook saw buckets in every step")
    ap.add_argument("--profile", help="write a torch profiler trace of tutti's steps here (rank 0)")
    return ap.parse_args()


def mlp():
    # 1024-4608-2304-4608-16: 26.0M parameters
    return torch.nn.Sequential(torch.nn.Linear(1024, 4608), torch.nn.ReLU(), torch.nn.Linear(4608, 2304),
                               torch.nn.ReLU(), torch.nn.Linear(2304, 4608), torch.nn.ReLU(),
                               torch.nn.Linear(4608, CLASSES))


class Encoder(torch.nn.Module):
    """8 layers of d_model 512, 8 heads, feed-forward 2048 (25.3M parameters) over 8-token sequences."""

    SEQ, FEATURES = 8, 64

    def __init__(self):
        super().__init__()
        self.embed = torch.nn.Linear(self.FEATURES, 512)
        layer = torch.nn.TransformerEncoderLayer(512, 8, 2048, dropout=0.0, batch_first=True)
        self.encoder = torch.nn.TransformerEncoder(layer, 8)
        self.head = torch.nn.Linear(512, CLASSES)

    def forward(self, x):
        return self.head(self.encoder(self.embed(x)).mean(dim=1))


def make_model(name):
    torch.manual_seed(1)
    return mlp() if name == "mlp" else Encoder()


def batch_of(name, n, gen):
    shape = (n, 1024) if name == "mlp" else (n, Encoder.SEQ, Encoder.FEATURES)
    return torch.randn(*shape, generator=gen), torch.randint(0, CLASSES, (n,), generator=gen)


def cpu_seconds():
    ru = resource.getrusage(resource.RUSAGE_SELF)
    return ru.ru_utime + ru.ru_stime


def done(tensor):
    fut = torch.futures.Future()
    fut.set_result(tensor)
    return fut


CALLS = {"no-comm": 0, "sum-only": 0}  # buckets each reference's hook saw (--check-hooks)


def no_comm(_, bucket):
    CALLS["no-comm"] += 1
    return done(bucket.buffer())


def sum_only(_, bucket):
    CALLS["sum-only"] += 1
    b = bucket.buffer()
    half = b.numel() // 2
    b[:half].add_(b[half:2 * half])
    return done(b)


REFERENCES = {"no-comm": no_comm, "sum-only": sum_only}


class Trainer:
    """One model (DDP over group, or bare), its optimizer and its records."""

    def __init__(self, args, group=None, rank=0, reference=None):
        self.reference = reference
        self.buckets = []  # buckets a reference's hook saw, step by step
        self.model = make_model(args.model)
        self.net = self.model
        if not args.single:
            self.net = torch.nn.parallel.DistributedDataParallel(self.model, process_group=group,
                                                                 gradient_as_bucket_view=args.bucket_view)
            if reference:
                self.net.register_comm_hook(None, REFERENCES[reference])
        self.opt = torch.optim.SGD(self.net.parameters(), lr=0.01, momentum=0.9)
        self.gen = torch.Generator().manual_seed(1000 + rank)
        self.lossf = torch.nn.CrossEntropyLoss()
        self.step_s, self.cpu_s = [], []

    def step(self, args, record):
        x, y = batch_of(args.model, args.batch, self.gen)
        calls = CALLS.get(self.reference, 0)
        c0, t0 = cpu_seconds(), time.perf_counter()
        loss = self.lossf(self.net(x), y)
        self.opt.zero_grad(set_to_none=args.zero_grad == "none")
        loss.backward()
        self.opt.step()
        t1, c1 = time.perf_counter(), cpu_seconds()
        if self.reference:
            self.buckets.append(CALLS[self.reference] - calls)
        if record:
            self.step_s.append(t1 - t0)
            self.cpu_s.append(c1 - c0)


def single(args):
    torch.set_num_threads(1)
    t = Trainer(args)
    for i in range(args.warmup + args.steps):
        t.step(args, i >= args.warmup)
    params = sum(p.numel() for p in t.model.parameters())
    print(json.dumps({"kind": "single", "model": args.model, "batch": args.batch, "params": params,
                      "step_ms": 1e3 * statistics.median(t.step_s), "cpu_ms": 1e3 * statistics.median(t.cpu_s)}))


def profiled(args, trainer):
    """Ten steps of the first backend under torch's profiler, written as a Chrome trace."""
    from torch.profiler import ProfilerActivity, profile

    with profile(activities=[ProfilerActivity.CPU], with_stack=False) as prof:
        for _ in range(10):
            trainer.step(args, False)
    if dist.get_rank() == 0:
        prof.export_chrome_trace(args.profile)
        print(prof.key_averages().table(sort_by="cpu_time_total", row_limit=25), file=sys.stderr)


def main():
    args = parse()
    if args.single:
        single(args)
        return
    import tutti.torch  # noqa: F401  (registers the backend)

    backends = args.backends.split(",")
    dist.init_process_group(backends[0], timeout=datetime.timedelta(minutes=10))
    torch.set_num_threads(1)
    rank, size = dist.get_rank(), dist.get_world_size()
    if "sum-only" in backends and size != 2:
        sys.exit("ddp-step: sum-only models a 2-rank all-reduce's sum (run it on 2 ranks)")
    groups = {backends[0]: None}
    for b in backends[1:]:
        groups[b] = None if b in REFERENCES else dist.new_group(backend=b)
    trainers = {b: Trainer(args, groups[b], rank, b if b in REFERENCES else None) for b in backends}
    if args.profile:
        profiled(args, trainers[backends[0]])
    for i in range(args.warmup + args.steps):
        for b in backends:
            trainers[b].step(args, i >= args.warmup)
    if args.check_hooks:
        seen = {b: trainers[b].buckets for b in backends if b in REFERENCES}
        if any(not n or min(n) < 1 for n in seen.values()):
            sys.exit(f"ddp-step: the references' hooks saw {seen} buckets, step by step")
    out = {"kind": "ddp", "model": args.model, "batch": args.batch, "ranks": size,
           "bucket_view": args.bucket_view, "params": sum(p.numel() for p in trainers[backends[0]].model.parameters()),
           "backends": {}}
    for b in backends:
        t = trainers[b]
        cpu = torch.tensor([statistics.median(t.cpu_s)], dtype=torch.float64)
        dist.all_reduce(cpu)  # over the default group: every rank's, then the mean
        out["backends"][b] = {"step_ms": 1e3 * statistics.median(t.step_s),
                              "cpu_ms": 1e3 * cpu.item() / size,
                              "steps_ms": [round(1e3 * s, 2) for s in t.step_s]}
    if rank == 0:
        print(json.dumps(out))
    dist.destroy_process_group()


if __name__ == "__main__":
    main()
