# SPDX-License-Identifier: MIT
"""all_reduce of sparse COO tensors, SUM only, as gloo has it.

Every rank's indices and values are gathered, each padded to the largest
count any rank has (all-gather takes equal sizes), then added by coalescing
them, and the sum is written back into the caller's tensor.
"""
import torch
import torch.distributed as dist

from . import _ops


def allreduce(comm, tensor, op, stream):
    """tensor (sparse COO) = the sum over ranks of tensor."""
    if op != dist.ReduceOp.SUM:
        raise ValueError("tutti: all_reduce of a sparse tensor takes ReduceOp.SUM only")
    mine = tensor.coalesce()
    indices, values = mine.indices(), mine.values()
    n = indices.shape[1]
    counts = _ops.gather_all(comm, torch.tensor([n], device=indices.device), stream).reshape(-1).tolist()
    most = max(counts)
    pad_i = indices.new_zeros((indices.shape[0], most))
    pad_v = values.new_zeros((most,) + tuple(values.shape[1:]))
    pad_i[:, :n], pad_v[:n] = indices, values
    every_i, every_v = _ops.gather_all(comm, pad_i, stream), _ops.gather_all(comm, pad_v, stream)
    total = torch.sparse_coo_tensor(torch.cat([every_i[q][:, :c] for q, c in enumerate(counts)], 1),
                                    torch.cat([every_v[q][:c] for q, c in enumerate(counts)]), mine.shape)
    tensor.copy_(total.coalesce())
