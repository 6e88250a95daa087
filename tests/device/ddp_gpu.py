# SPDX-License-Identifier: MIT
"""PyTorch DDP on two processes sharing GPU 0, for tests/device/gpu-check.sh's second
run: python3 ddp_gpu.py BACKEND OUT trains a small MLP for 30 steps with
DistributedDataParallel on BACKEND (nccl or gloo) from one seed, prints the
median step time, and saves the parameters to OUT. With nccl it also says
which libnccl.so.2 answered (tutti's, preloaded with LD_PRELOAD, must) and the
version torch.cuda.nccl.version() reports. python3 ddp_gpu.py --compare A B
compares two runs' parameters (they must agree to 1e-5, relative)."""
import os
import statistics
import sys
import time

import torch
import torch.distributed as dist
import torch.multiprocessing as mp
from torch.nn.parallel import DistributedDataParallel as DDP

STEPS, WIDTH = 30, 2048


def loaded_nccl():
    with open("/proc/self/maps") as maps:
        for line in maps:
            if "libnccl.so" in line:
                return line.split()[-1]
    return "none"


def rank_main(rank, backend, out, port):
    os.environ.update(MASTER_ADDR="127.0.0.1", MASTER_PORT=str(port))
    torch.cuda.set_device(0)
    dist.init_process_group(backend, rank=rank, world_size=2)
    torch.manual_seed(0)
    model = torch.nn.Sequential(torch.nn.Linear(WIDTH, WIDTH), torch.nn.ReLU(), torch.nn.Linear(WIDTH, 10)).cuda()
    ddp = DDP(model, device_ids=[0])
    opt = torch.optim.SGD(ddp.parameters(), lr=0.01)
    gen = torch.Generator(device="cuda").manual_seed(1 + rank)
    times = []
    for _ in range(STEPS):
        x = torch.randn(64, WIDTH, device="cuda", generator=gen)
        torch.cuda.synchronize()
        start = time.perf_counter()
        opt.zero_grad()
        ddp(x).square().mean().backward()
        opt.step()
        torch.cuda.synchronize()
        times.append(time.perf_counter() - start)
    if rank == 0:
        if backend == "nccl":
            print(f"libnccl: {loaded_nccl()}; torch.cuda.nccl.version() = {torch.cuda.nccl.version()}")
        print(f"{backend}: median step {statistics.median(times[5:]) * 1e3:.2f} ms over {STEPS - 5} steps")
        torch.save({k: v.cpu() for k, v in model.state_dict().items()}, out)
    dist.destroy_process_group()


def compare(a, b):
    pa, pb = torch.load(a), torch.load(b)
    worst = max(((pa[k] - pb[k]).abs().max() / pb[k].abs().max().clamp(min=1e-12)).item() for k in pa)
    print(f"parameters after {STEPS} steps differ by at most {worst:.3g} (relative)")
    return 0 if worst <= 1e-5 else 1


if __name__ == "__main__":
    if len(sys.argv) == 4 and sys.argv[1] == "--compare":
        sys.exit(compare(sys.argv[2], sys.argv[3]))
    if len(sys.argv) != 3 or sys.argv[1] not in ("nccl", "gloo"):
        sys.exit(__doc__)
    mp.spawn(rank_main, args=(sys.argv[1], sys.argv[2], 29500 + os.getpid() % 1000), nprocs=2)
