# SPDX-License-Identifier: MIT
"""DDP on tutti survives a rank killed with SIGKILL, as the README says.

    python3 torch_lost_rank.py [--ranks 3] [--hook none|topk]

Starts the ranks itself (tutti-run would stop the job when one dies) around
a torch TCPStore. Each trains a small MLP with DistributedDataParallel over
the "tutti" group: plain (--hook none) or with tutti.torch.compression_hook
(--hook topk). Rank --victim kills itself just before its backward pass at
step --kill-at, so the survivors are inside backward() when it goes. Each
survivor must get a RuntimeError from backward(), tutti's own error naming
the dead rank (not a text torch wrapped or garbled), then
runs the README's recovery block as the README writes it (read from
README.md: shrink, DDP anew, the hook registered), and trains on; the
survivors' parameters must then agree. Exits non-zero naming what failed.
"""
import argparse
import datetime
import faulthandler
import os
import re
import signal
import socket
import subprocess
import sys
import time

HERE = os.path.dirname(os.path.abspath(__file__))
README = os.path.join(HERE, os.pardir, os.pardir, "README.md")


def parse():
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--ranks", type=int, default=3)
    ap.add_argument("--hook", choices=["none", "topk"], default="none")
    ap.add_argument("--victim", type=int, default=1)
    ap.add_argument("--kill-at", type=int, default=3)
    ap.add_argument("--steps", type=int, default=6)
    ap.add_argument("--worker", type=int, help=argparse.SUPPRESS)
    ap.add_argument("--port", type=int, help=argparse.SUPPRESS)
    return ap.parse_args()


def recovery_block():
    """The README's try/except around loss.backward(), as written there."""
    with open(README) as f:
        text = f.read()
    m = re.search(r"\n(try:\n    loss\.backward\(\).*\n(?:    .*\n)*except RuntimeError:.*\n(?:    .*\n)+)", text)
    if not m:
        sys.exit("README.md has no `try: loss.backward()` recovery block")
    return m.group(1)


def tcp_store(port, master):
    import torch.distributed as dist

    timeout = datetime.timedelta(seconds=60)
    try:  # a torch built without libuv (Debian 13's) needs it said (tutti.torch sets USE_LIBUV=0 there)
        return dist.TCPStore("127.0.0.1", port, is_master=master, timeout=timeout,
                             use_libuv=os.environ.get("USE_LIBUV", "1") != "0")
    except TypeError:  # torch before 2.4: no such option
        return dist.TCPStore("127.0.0.1", port, is_master=master, timeout=timeout)


def worker(args):
    import gc

    import torch
    import torch.distributed as dist
    from torch.nn.parallel import DistributedDataParallel

    import tutti.torch

    faulthandler.dump_traceback_later(150, exit=True)  # a hang shows where
    rank = args.worker
    store = tcp_store(args.port, False)
    dist.init_process_group("tutti", store=store, rank=rank, world_size=args.ranks,
                            timeout=datetime.timedelta(seconds=30))
    pg = dist.distributed_c10d._get_default_group()
    torch.manual_seed(0)
    module = torch.nn.Sequential(torch.nn.Linear(64, 256), torch.nn.Tanh(), torch.nn.Linear(256, 64))
    model = DistributedDataParallel(module, process_group=pg, bucket_cap_mb=0.05)  # several buckets
    state = tutti.torch.CompressionState("topk", density=0.25)
    if args.hook == "topk":
        model.register_comm_hook(state, tutti.torch.compression_hook)
    opt = torch.optim.SGD(module.parameters(), lr=0.05)
    block = compile(recovery_block(), "README.md", "exec")
    errors = []
    step = 0
    while step < args.steps:
        x = torch.randn(8, 64, generator=torch.Generator().manual_seed(100 * step + rank))
        opt.zero_grad()
        loss = (model(x) - x).pow(2).mean()
        if rank == args.victim and step == args.kill_at:
            os.kill(os.getpid(), signal.SIGKILL)
        names = dict(loss=_Recorded(loss, errors), pg=pg, state=state, module=module, model=model, gc=gc,
                     tutti=tutti, DistributedDataParallel=DistributedDataParallel)
        exec(block, names)
        if names["pg"] is not pg:  # recovered: the step again, on the survivors
            pg, model = names["pg"], names["model"]
            continue
        opt.step()
        step += 1
    if len(errors) != 1:
        sys.exit(f"rank {rank}: backward() raised {len(errors)} times, want once: {errors}")
    if f"rank {args.victim}" not in errors[0]:
        sys.exit(f"rank {rank}: the error does not name rank {args.victim}: {errors[0]}")
    if not errors[0].startswith("tutti_"):  # the failed call's own text, not one torch wrapped
        sys.exit(f"rank {rank}: backward raised something else than tutti's error: {errors[0]}")
    if pg.size() != args.ranks - 1:
        sys.exit(f"rank {rank}: the group after the shrink has {pg.size()} ranks, want {args.ranks - 1}")
    flat = torch.cat([q.detach().reshape(-1) for q in module.parameters()])
    total = flat.clone()
    pg.allreduce([total]).wait()  # equal parameters sum to size times each
    if (total - pg.size() * flat).abs().max() > 1e-4 * pg.size():
        sys.exit(f"rank {rank}: the survivors' parameters differ after the recovery")
    print(f"rank {rank}: backward raised naming rank {args.victim}; recovered on {pg.size()} ranks: "
          f"{errors[0].splitlines()[0][:160]}", flush=True)
    os._exit(0)  # the spent default group needs no collective teardown


class _Recorded:
    """The loss, as the README's block sees it: what its backward() raises is kept."""

    def __init__(self, loss, errors):
        self.loss, self.errors = loss, errors

    def backward(self):
        try:
            self.loss.backward()
        except RuntimeError as e:
            self.errors.append(str(e))
            raise


def main():
    args = parse()
    if args.worker is not None:
        return worker(args)
    sys.path.insert(0, os.path.join(HERE, os.pardir, os.pardir, "python"))
    import tutti.torch  # noqa: F401  (USE_LIBUV=0 where torch lacks libuv, before the store)

    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        port = s.getsockname()[1]
    store = tcp_store(port, True)
    procs = [subprocess.Popen([sys.executable, __file__, "--worker", str(q), "--port", str(port), "--ranks",
                               str(args.ranks), "--hook", args.hook, "--victim", str(args.victim), "--kill-at",
                               str(args.kill_at), "--steps", str(args.steps)]) for q in range(args.ranks)]
    deadline = time.monotonic() + 180
    while any(p.poll() is None for p in procs) and time.monotonic() < deadline:
        time.sleep(0.2)
    for p in procs:
        if p.poll() is None:
            p.kill()
            p.wait()
    del store
    codes = [p.returncode for p in procs]
    want = [-signal.SIGKILL if q == args.victim else 0 for q in range(args.ranks)]
    if codes != want:
        sys.exit(f"exit statuses {codes}, want {want} (the victim killed, the survivors done)")
    print(f"lost rank ({args.hook} DDP, {args.ranks} ranks): every survivor recovered")


if __name__ == "__main__":
    main()
