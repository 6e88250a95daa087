# SPDX-License-Identifier: MIT
"""A DDP communication hook running tutti's compressed all-reduce per bucket.

It works whatever DDP's process group is: on a tutti group it queues on that
group's own communicator and worker; on any other (gloo, nccl) it builds a
tutti communicator over the same ranks once, handing the rendezvous id
through that group, and runs on a worker of its own.
"""
import threading

import torch
import torch.distributed as dist

import tutti

from ._elastic import carried_state, params_key
from ._pg import ProcessGroupTutti
from ._work import Work, Worker

_FLOATS = (torch.float32, torch.float16, torch.bfloat16)


class CompressionState:
    """What compression_hook needs between calls: the settings, the error
    feedback of each bucket, and counters.

    Args:
        kind, density, k, sampled, block, rounding, seed: as tutti.Compression.
        process_group: DDP's group (None: the default group).
        start_step: steps (backward passes) run dense before compressing, as
            PowerSGD's start iteration; the error feedback starts with the first
            compressed step.

    After each step: ``bytes_sent`` and ``dense_bytes`` hold what this rank
    sent in that step and what the dense ring all-reduce would have sent;
    ``total_bytes_sent`` and ``total_dense_bytes`` add up every step.
    """

    def __init__(self, kind="topk", density=0.01, k=0, sampled=False, block=0, rounding="nearest", seed=0,
                 process_group=None, start_step=0):
        self.compression = tutti.Compression(kind, density=density, k=k, sampled=sampled, block=block,
                                             rounding=rounding, seed=seed)
        self.process_group = process_group
        self.start_step = int(start_step)
        self.step = 0
        self.bytes_sent = self.dense_bytes = 0
        self.total_bytes_sent = self.total_dense_bytes = 0
        self._feedback = {}
        self._carried = None  # after a regroup: states to hand to the buckets holding their parameters
        self._carry_until = 0
        self._comm = None
        self._worker = None
        self._lock = threading.Lock()

    def _setup(self):
        """The communicator and worker to run on (built on first use)."""
        if self._comm is not None:
            return
        group = self.process_group or dist.distributed_c10d._get_default_group()
        if isinstance(group, ProcessGroupTutti):
            self._comm, self._worker = group.comm, group._worker
            return
        rank, size = dist.get_rank(group), dist.get_world_size(group)
        raw = torch.zeros(tutti._lib.UNIQUE_ID_BYTES, dtype=torch.uint8)
        if rank == 0:
            raw.copy_(torch.frombuffer(bytearray(bytes(tutti.get_unique_id())), dtype=torch.uint8))
        on = raw.to("cuda" if dist.get_backend(group) == "nccl" else "cpu")
        global_rank = getattr(dist, "get_global_rank", None) or dist.distributed_c10d._get_global_rank
        dist.broadcast(on, global_rank(group, 0), group=group)
        uid = tutti.UniqueId(on.cpu().numpy().tobytes())
        self._comm = tutti.Communicator(size, rank, uid)
        self._worker = Worker(f"tutti-hook-r{rank}")

    def _state_for(self, index, count, bucket):
        if self._carried is not None and self.step <= self._carry_until:
            return carried_state(self, index, count, bucket)  # just regrouped (_elastic.py)
        self._carried = None
        ef = self._feedback.get(index)
        if ef is None or ef.count != count:  # DDP rebuilds its buckets after the first step
            ef = self._comm.error_feedback(count)
            ef.key = params_key(bucket)
            self._feedback[index] = ef
        return ef

    def reset(self):
        """Zeroes every bucket's error feedback."""
        for ef in self._feedback.values():
            ef.reset()


def _bucket_tensor(bucket):
    return bucket.buffer() if hasattr(bucket, "buffer") else bucket.get_tensor()


def compression_hook(state, bucket):
    """DDP comm hook: averages the bucket's gradients with tutti's compressed
    all-reduce (``ddp.register_comm_hook(CompressionState(...), compression_hook)``).

    Buckets that are not fp32/fp16/bf16, and every bucket before
    ``state.start_step``, are averaged densely by tutti. Returns a future
    holding the averaged bucket, completed off the Python thread.
    """
    state._setup()
    tensor = _bucket_tensor(bucket)
    index = bucket.index()
    if index == 0:
        state.step += 1
        state.bytes_sent = state.dense_bytes = 0
    compress = state.step > state.start_step and tensor.dtype in _FLOATS
    ef = state._state_for(index, tensor.numel(), bucket) if compress else None
    comm = state._comm
    stream = None
    if tensor.is_cuda:
        torch.cuda.current_stream(tensor.device).synchronize()  # the gradients are ready
        stream = torch.cuda.default_stream(tensor.device)

    def body():
        if compress:
            comm.allreduce_compressed(tensor, state.compression, ef, tutti.AVG, stream=stream)
            stats = comm.last_compress_stats()
            sent, dense = stats.bytes_sent, stats.dense_bytes_sent
        else:
            comm.allreduce(tensor, tutti.AVG, stream=stream)
            p, n = comm.size, tensor.numel() * tensor.element_size()
            sent = dense = 2 * (p - 1) * n // p if p > 1 else 0
        if stream is not None:
            stream.synchronize()  # device calls are only queued; the future means done
        with state._lock:
            state.bytes_sent += sent
            state.dense_bytes += dense
            state.total_bytes_sent += sent
            state.total_dense_bytes += dense

    work = state._worker.submit(body, Work([tensor], single=True))
    return work.get_future()
