#!/usr/bin/env python3
# SPDX-License-Identifier: MIT
"""The Gloo side of perf/compare/compare: PyTorch's CPU backend (torch.distributed
with gloo over TCP loopback), timed as tutti-perf times tutti: warm-up,
barrier, mean over iterations, slowest rank; the whole buffer as the size and
the same busbw factors; cpu_us is the processor time each rank spends per call
(every thread of the process), the mean over ranks, as tutti-perf --cpu. Gloo in PyTorch 1.13 has no reduce_scatter, so only
allreduce and allgather are measured.

usage: gloo-bench.py -n RANKS -C allreduce|allgather -b SIZE -e SIZE -f F
                     [--iters N] [--warmup N]      (CSV on stdout)
"""
import argparse
import os
import resource
import socket
import sys
import time

import torch
import torch.distributed as dist
import torch.multiprocessing as mp


def parse_size(text):
    scale = {"K": 1 << 10, "M": 1 << 20, "G": 1 << 30}
    return int(float(text[:-1]) * scale[text[-1].upper()]) if text[-1].upper() in scale else int(text)


def sizes(lo, hi, factor):
    size = lo
    while size <= hi:
        yield size
        size *= factor


def cpu_seconds():
    ru = resource.getrusage(resource.RUSAGE_SELF)
    return ru.ru_utime + ru.ru_stime


def worker(rank, args, port, queue):
    os.environ["MASTER_ADDR"] = "127.0.0.1"
    os.environ["MASTER_PORT"] = str(port)
    torch.set_num_threads(1)
    dist.init_process_group("gloo", rank=rank, world_size=args.n)
    p = args.n
    for size in sizes(args.b, args.e, args.f):
        count = size // 4
        if args.C == "allgather":
            count -= count % p
        if count == 0:  # less than one element per rank: nothing to time
            continue
        send = torch.ones(count if args.C == "allreduce" else count // p, dtype=torch.float32)
        outs = [torch.empty(count // p, dtype=torch.float32) for _ in range(p)]

        def once():
            if args.C == "allreduce":
                dist.all_reduce(send)
            else:
                dist.all_gather(outs, send)

        for _ in range(args.warmup):
            once()
        dist.barrier()
        c0, t0 = cpu_seconds(), time.perf_counter()
        for _ in range(args.iters):
            once()
        local = torch.tensor([(time.perf_counter() - t0) / max(args.iters, 1) * 1e6], dtype=torch.float64)
        cpu = torch.tensor([(cpu_seconds() - c0) / max(args.iters, 1) * 1e6], dtype=torch.float64)
        dist.all_reduce(local, op=dist.ReduceOp.MAX)
        dist.all_reduce(cpu)
        if rank == 0:
            us = local.item()
            used = count * 4
            algbw = used / (us * 1e-6) / 1e9 if us > 0 else 0.0
            factor = 2.0 * (p - 1) / p if args.C == "allreduce" else (p - 1) / p
            queue.put(f"{args.C},{used},{count},{us:.3f},{algbw:.4f},{algbw * factor:.4f},{cpu.item() / p:.3f}")
    dist.destroy_process_group()


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("-n", type=int, required=True)
    # reduce_scatter, all-reduce and the like too, as the C tools take them.
    ap.add_argument("-C", type=lambda s: s.lower().replace("_", "").replace("-", ""),
                    choices=["allreduce", "allgather"], default="allreduce")
    ap.add_argument("-b", type=parse_size, default=8)
    ap.add_argument("-e", type=parse_size, default=64 << 20)
    ap.add_argument("-f", type=int, default=2)
    ap.add_argument("--iters", type=int, default=20)
    ap.add_argument("--warmup", type=int, default=5)
    args = ap.parse_args()
    with socket.socket() as s:  # a free port for the rendezvous
        s.bind(("127.0.0.1", 0))
        port = s.getsockname()[1]
    ctx = mp.get_context("spawn")
    queue = ctx.Queue()
    procs = [ctx.Process(target=worker, args=(r, args, port, queue)) for r in range(args.n)]
    for proc in procs:
        proc.start()
    print("collective,size,count,time_us,algbw,busbw,cpu_us", flush=True)
    # Rows arrive as rank 0 measures; stop once every worker has ended.
    while any(proc.is_alive() for proc in procs) or not queue.empty():
        try:
            print(queue.get(timeout=1), flush=True)
        except Exception:  # queue.Empty: nothing yet
            pass
    for proc in procs:
        proc.join()
    failed = [r for r, proc in enumerate(procs) if proc.exitcode != 0]
    if failed:
        print(f"gloo-bench: ranks {failed} failed", file=sys.stderr)
    return 1 if failed else 0


if __name__ == "__main__":
    sys.exit(main())
