#!/usr/bin/env python3
# SPDX-License-Identifier: MIT
"""DDP training on generated data with tutti and gloo in one job.

    tutti-run -n 4 python3 perf/ddp/ddp-train.py --backend tutti  # the quick start: tutti, about a minute
    tutti-run -n 4 python3 perf/ddp/ddp-train.py                  # tutti and gloo
    tutti-run -n 4 python3 perf/ddp/ddp-train.py --full           # 26M parameters, + top-k and int8
    torchrun --nproc-per-node 4 perf/ddp/ddp-train.py             # torch 2.x launcher (Debian 13: README)

Every configuration trains the same model from the same seed on the same
data: a 4-layer MLP learning which of 16 Gaussian clusters an input comes
from (2.1M parameters and 100 steps by default, so that 4 ranks finish in
about a minute on 2 cores; --full: 26.0M parameters, 200 steps, and the
compressed runs). Rank 0 prints its loss as it goes. Gradients are
averaged by a DDP communication hook that runs each bucket's all-reduce and
waits for it, timing it after a barrier of the same group (not timed): the
step then does no computation while communicating and no rank waits for a
peer still computing, so "comm" is the time the all-reduces took and nothing
else.
The compression configurations run tutti.torch.compression_hook the same way
and count the bytes it sent. The configurations take turns step by step
(each its own model, optimizer and data stream, all from the same seeds), so
load from other work on the machine falls on all of them alike. Rank 0 prints a table and writes JSON (--json)
for perf/ddp/ddp-plot.py.
"""
import argparse
import datetime
import hashlib
import json
import os
import sys
import time

import torch
import torch.distributed as dist

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), os.pardir, os.pardir, "python"))
import tutti.torch  # noqa: E402  (registers the backend)

from torch.futures import Future  # noqa: E402


def parse():
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--backend", default="both", choices=["tutti", "gloo", "both"],
                    help="both: tutti as the default group and gloo in a second group, in one job")
    ap.add_argument("--full", action="store_true",
                    help="the full comparison: --width 4608 (26.0M parameters), --steps 200, --compress topk,int8")
    ap.add_argument("--compress", help="comma list of tutti compression kinds to run after the dense runs "
                    "(default none, with --full topk,int8); topk keeps --density")
    ap.add_argument("--density", type=float, default=0.01)
    ap.add_argument("--steps", type=int, help="default 100, with --full 200")
    ap.add_argument("--batch", type=int, default=8, help="samples per rank per step")
    ap.add_argument("--width", type=int, help="hidden width (default 1024: 2.1M parameters; --full 4608: 26.0M)")
    ap.add_argument("--lr", type=float, default=0.02)
    ap.add_argument("--bucket-mb", type=float, default=25.0, help="DDP bucket_cap_mb")
    ap.add_argument("--seed", type=int, default=1)
    ap.add_argument("--json", help="write every curve and timing here (rank 0)")
    args = ap.parse_args()
    for name, quick, full in (("steps", 100, 200), ("width", 1024, 4608), ("compress", "", "topk,int8")):
        if getattr(args, name) is None:
            setattr(args, name, full if args.full else quick)
    return args


CLASSES = 16


def model_for(width, seed):
    torch.manual_seed(seed)
    return torch.nn.Sequential(
        torch.nn.Linear(1024, width), torch.nn.ReLU(),
        torch.nn.Linear(width, width // 2), torch.nn.ReLU(),
        torch.nn.Linear(width // 2, width), torch.nn.ReLU(),
        torch.nn.Linear(width, CLASSES))


class Data:
    """Gaussian clusters: class c's inputs scatter around a fixed random centre; each rank its own stream."""

    def __init__(self, rank, batch, seed):
        g = torch.Generator().manual_seed(seed)
        self.centres = 0.25 * torch.randn(CLASSES, 1024, generator=g)
        self.gen = torch.Generator().manual_seed(seed * 1000 + rank)
        self.batch = batch

    def next(self):
        y = torch.randint(0, CLASSES, (self.batch,), generator=self.gen)
        return self.centres[y] + torch.randn(self.batch, 1024, generator=self.gen), y


class Timer:
    """Per-step sums of the time the hook spent communicating."""

    def __init__(self):
        self.comm = 0.0

    def run(self, fn):
        t0 = time.perf_counter()
        out = fn()
        self.comm += time.perf_counter() - t0
        return out


def dense_hook(group, timer):
    size = dist.get_world_size(group)

    def hook(_state, bucket):
        tensor = bucket.buffer() if hasattr(bucket, "buffer") else bucket.get_tensor()
        tensor.div_(size)
        dist.barrier(group=group)  # not timed: a peer still in backward is not communication
        timer.run(lambda: dist.all_reduce(tensor, group=group, async_op=True).wait())
        fut = Future()
        fut.set_result(tensor)
        return fut

    return hook


def compressed_hook(state, timer):
    def hook(_state, bucket):
        dist.barrier()
        fut = tutti.torch.compression_hook(state, bucket)
        timer.run(fut.wait)
        return fut

    return hook


class Run:
    """One configuration: its own model (same seed as the others), optimizer, data stream and records."""

    def __init__(self, name, group, hook_of, args, rank):
        self.model = model_for(args.width, args.seed)
        self.group = group
        self.ddp = torch.nn.parallel.DistributedDataParallel(self.model, process_group=group,
                                                             bucket_cap_mb=args.bucket_mb)
        self.timer = Timer()
        self.state = hook_of(self.ddp, self.timer)
        self.opt = torch.optim.SGD(self.ddp.parameters(), lr=args.lr, momentum=0.9)
        self.data = Data(rank, args.batch, args.seed)
        self.rec = {"name": name, "loss": [], "comm_s": [], "step_s": [], "bytes": []}

    def step(self, lossf):
        x, y = self.data.next()
        t0 = time.perf_counter()
        self.timer.comm = 0.0
        loss = lossf(self.ddp(x), y)
        self.opt.zero_grad(set_to_none=True)
        loss.backward()
        self.opt.step()
        rec = self.rec
        rec["step_s"].append(time.perf_counter() - t0)
        rec["comm_s"].append(self.timer.comm)
        rec["loss"].append(loss.item())
        rec["bytes"].append(self.state.bytes_sent if self.state is not None else None)

    def finish(self):
        rec = self.rec
        if self.state is not None:
            rec["dense_bytes"] = self.state.dense_bytes
        # The curve is the mean over ranks; the parameters' hash shows bitwise equality.
        losses = torch.tensor(rec["loss"], dtype=torch.float64)
        dist.all_reduce(losses, group=self.group)
        rec["mean_loss"] = (losses / dist.get_world_size(self.group)).tolist()
        flat = torch.cat([p.detach().reshape(-1) for p in self.model.parameters()])
        rec["params_hash"] = hashlib.sha256(flat.numpy().tobytes()).hexdigest()[:16]
        rec["params"] = sum(p.numel() for p in self.model.parameters())
        return rec


def median(xs):
    s = sorted(xs)
    return s[len(s) // 2]


def main():
    args = parse()
    backend = "gloo" if args.backend == "gloo" else "tutti"
    dist.init_process_group(backend, timeout=datetime.timedelta(minutes=10))
    rank, size = dist.get_rank(), dist.get_world_size()
    torch.set_num_threads(1)
    runs = []
    if args.backend in ("tutti", "both"):
        runs.append(("tutti", None, lambda ddp, t: ddp.register_comm_hook(None, dense_hook(None, t))))
    if args.backend in ("gloo", "both"):
        gloo = None if args.backend == "gloo" else dist.new_group(backend="gloo")
        runs.append(("gloo", gloo, lambda ddp, t, g=gloo: ddp.register_comm_hook(None, dense_hook(g, t))))
    if args.backend in ("tutti", "both"):
        for kind in filter(None, args.compress.split(",")):
            def hook_of(ddp, t, kind=kind):
                state = tutti.torch.CompressionState(kind, density=args.density)
                ddp.register_comm_hook(None, compressed_hook(state, t))
                return state
            runs.append((f"tutti+{kind}" + (f"({args.density:g})" if kind == "topk" else ""), None, hook_of))
    # The configurations take turns step by step, so a machine busy with
    # other work slows them alike and their ratios stay comparable.
    if rank == 0:
        print(f"# {size} ranks training {', '.join(name for name, _, _ in runs)} for {args.steps} steps; "
              f"rank 0's loss every {max(1, args.steps // 10)} steps", flush=True)
    runs = [Run(name, group, hook_of, args, rank) for name, group, hook_of in runs]
    lossf = torch.nn.CrossEntropyLoss()
    t0 = time.perf_counter()
    for i in range(args.steps):
        for run in runs:
            run.step(lossf)
        if rank == 0 and ((i + 1) % max(1, args.steps // 10) == 0 or i == 0):
            print(f"step {i + 1:>4}/{args.steps}  " + "  ".join(f"{run.rec['name']} loss {run.rec['loss'][-1]:.4f}"
                  for run in runs) + f"  ({time.perf_counter() - t0:.0f} s)", flush=True)
    results = [run.finish() for run in runs]
    if rank != 0:
        dist.destroy_process_group()
        return
    skip = min(10, args.steps // 4)  # warm-up steps left out of the medians
    print(f"# {size} ranks, {results[0]['params'] / 1e6:.1f}M parameters, {args.steps} steps, batch {args.batch} "
          f"per rank, TUTTI_DETERMINISTIC={os.environ.get('TUTTI_DETERMINISTIC', '0')}")
    print(f"{'run':<18} {'comm ms/step':>12} {'step ms':>9} {'first loss':>10} {'final loss':>10} "
          f"{'MB sent/step':>12} {'params sha256':>16}")
    for rec in results:
        comm, step = median(rec["comm_s"][skip:]) * 1e3, median(rec["step_s"][skip:]) * 1e3
        sent = rec["bytes"][-1]
        mb = f"{sent / 1e6:.2f}" if sent is not None else \
            f"{2 * (size - 1) / size * rec['params'] * 4 / 1e6:.2f}*"
        print(f"{rec['name']:<18} {comm:>12.1f} {step:>9.1f} {rec['mean_loss'][0]:>10.4f} "
              f"{rec['mean_loss'][-1]:>10.4f} {mb:>12} {rec['params_hash']:>16}")
    names = [r["name"] for r in results]
    if "tutti" in names and "gloo" in names:
        a, b = results[names.index("tutti")], results[names.index("gloo")]
        diff = max(abs(x - y) / max(abs(y), 1e-12) for x, y in zip(a["mean_loss"], b["mean_loss"]))
        ratio = median(b["comm_s"][skip:]) / median(a["comm_s"][skip:])
        print(f"# loss curves tutti vs gloo: max relative difference {diff:.3g}; "
              f"identical parameters: {a['params_hash'] == b['params_hash']}")
        print(f"# gloo all-reduce time / tutti all-reduce time per step (medians): {ratio:.2f}x")
    print("# * the dense ring all-reduce's bytes per rank per step")
    if args.json:
        with open(args.json, "w") as f:
            json.dump({"ranks": size, "steps": args.steps, "batch": args.batch, "width": args.width,
                       "deterministic": os.environ.get("TUTTI_DETERMINISTIC", "0"), "runs": results}, f)
    dist.destroy_process_group()


if __name__ == "__main__":
    main()
