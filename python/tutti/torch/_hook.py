# SPDX-License-Identifier: MIT
"""A DDP communication hook running tutti's compressed all-reduce per bucket.

It works whatever DDP's process group is: on a tutti group it is queued
on that group's own thread, after the group's other calls; on any other
(gloo, nccl) it builds a tutti group over the same ranks once, handing the
rendezvous id through that group, and runs there. The future it returns
is the call's, so a failure (a rank died) reaches DDP's backward as a
RuntimeError naming it.
"""
import torch
import torch.distributed as dist

import tutti

from ._elastic import carried_state, params_key
from ._pg import backend_of, ProcessGroupTutti

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
        self._works = []  # this step's calls, whose stats say what they sent
        self._before = (0, 0)  # what the steps before it sent, and the dense all-reduce would have
        self._feedback = {}
        self._carried = None  # after a regroup: states to hand to the buckets holding their parameters
        self._carry_until = 0
        self._backend = None  # the tutti group the buckets go through
        self._own = False  # whether it is this state's own (over a group of another backend)

    def _sums(self):
        stats = [w.compress_stats() for w in self._works]
        return sum(s[0] for s in stats), sum(s[1] for s in stats)

    def _next_step(self):
        sent, dense = self._sums()
        self._before = (self._before[0] + sent, self._before[1] + dense)
        self._works = []
        self.step += 1

    @property
    def bytes_sent(self):
        return self._sums()[0]

    @property
    def dense_bytes(self):
        return self._sums()[1]

    @property
    def total_bytes_sent(self):
        return self._before[0] + self.bytes_sent

    @property
    def total_dense_bytes(self):
        return self._before[1] + self.dense_bytes

    def _setup(self):
        """The tutti group to run on (found or built on first use)."""
        if self._backend is not None:
            return
        group = self.process_group or dist.distributed_c10d._get_default_group()
        self._backend = backend_of(group)
        if self._backend is not None:
            return
        rank, size = dist.get_rank(group), dist.get_world_size(group)
        raw = torch.zeros(tutti._lib.UNIQUE_ID_BYTES, dtype=torch.uint8)
        if rank == 0:
            raw.copy_(torch.frombuffer(bytearray(bytes(tutti.get_unique_id())), dtype=torch.uint8))
        on = raw.to("cuda" if dist.get_backend(group) == "nccl" else "cpu")
        global_rank = getattr(dist, "get_global_rank", None) or dist.distributed_c10d._get_global_rank
        dist.broadcast(on, global_rank(group, 0), group=group)
        comm = tutti.Communicator(size, rank, tutti.UniqueId(on.cpu().numpy().tobytes()))
        self._backend = ProcessGroupTutti(None, rank, size, dist.default_pg_timeout, comm._give())
        self._own = True

    def _state_for(self, index, count, bucket):
        if self._carried is not None and self.step <= self._carry_until:
            return carried_state(self, index, count, bucket)  # just regrouped (_elastic.py)
        self._carried = None
        ef = self._feedback.get(index)
        if ef is None or ef.count != count:  # DDP rebuilds its buckets after the first step
            ef = tutti.ErrorFeedback(count, self._backend.size())
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
    holding the averaged bucket, or the call's error.
    """
    state._setup()
    tensor = _bucket_tensor(bucket)
    index = bucket.index()
    if index == 0:
        state._next_step()
    compress = state.step > state.start_step and tensor.dtype in _FLOATS
    ef = state._state_for(index, tensor.numel(), bucket) if compress else None
    how = state.compression._struct()
    work = state._backend._allreduce_compressed(tensor, {f: getattr(how, f) for f, _ in how._fields_},
                                                ef._live() if ef is not None else 0, compress)
    state._works.append(work)
    # The bucket as DDP takes a Python hook's result; a failure (a rank
    # died) is the call's own error, which DDP's backward raises.
    return work._bucket_future()
