#!/usr/bin/env python3
# SPDX-License-Identifier: MIT
"""One gloo rank of perf/scale/scale-bench: torch.distributed's
init_process_group("gloo") from RANK, WORLD_SIZE, MASTER_ADDR and
MASTER_PORT, a first all-reduce of one int, then the same JSON line as
scale-probe.c writes (times, RSS and PSS, descriptors, shared-memory
segments, and the socket bytes counted by a preloaded sockcount.c until the
mark). torch is imported before the clock starts: creation is the
process group and its first collective, as MPI_Init and tutti_comm_init."""
import ctypes
import json
import os
import sys
import time

import torch
import torch.distributed as dist


class SockCount(ctypes.Structure):
    _fields_ = [("sent", ctypes.c_ulonglong), ("received", ctypes.c_ulonglong),
                ("send_calls", ctypes.c_ulonglong), ("recv_calls", ctypes.c_ulonglong)]


def proc_kb(path, name):
    try:
        with open(path) as f:
            for line in f:
                if line.startswith(name + ":"):
                    return int(line.split()[1])
    except OSError:
        pass
    return -1


def shm_segments():
    out = {}
    with open("/proc/self/maps") as f:
        for line in f:
            parts = line.split(None, 5)
            if len(parts) < 6 or not parts[5].strip().startswith(("/dev/shm/", "/memfd:", "/SYSV")):
                continue
            lo, hi = (int(x, 16) for x in parts[0].split("-"))
            out[f"{parts[3]}:{parts[4]}"] = hi - lo
    return out


def main():
    torch.set_num_threads(1)
    start = time.time()
    dist.init_process_group("gloo")
    one = torch.ones(1, dtype=torch.int32)
    dist.all_reduce(one)
    end = time.time()
    rank, nranks = dist.get_rank(), dist.get_world_size()
    try:
        mark = ctypes.CDLL(None).sockcount_mark
        mark.restype = SockCount
        counts, counted = mark(), True
    except AttributeError:
        counts, counted = SockCount(), False
    record = {"system": "gloo", "rank": rank, "nranks": nranks, "host": os.readlink("/proc/self/ns/net"),
              "start": start, "end": end, "rss_kb": proc_kb("/proc/self/status", "VmRSS"),
              "pss_kb": proc_kb("/proc/self/smaps_rollup", "Pss"), "fds": len(os.listdir("/proc/self/fd")) - 1,
              "counted": counted, "sent": counts.sent, "received": counts.received,
              "send_calls": counts.send_calls, "recv_calls": counts.recv_calls, "shm": shm_segments()}
    with open(os.path.join(os.environ.get("SCALE_OUT", "."), f"rank.{rank}.json"), "w") as f:
        f.write(json.dumps(record) + "\n")
    dist.all_reduce(torch.ones(1))  # every rank has written before any leaves
    dist.destroy_process_group()
    return 0 if int(one) == nranks else 1


if __name__ == "__main__":
    sys.exit(main())
