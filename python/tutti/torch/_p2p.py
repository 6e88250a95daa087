# SPDX-License-Identifier: MIT
"""isend/irecv held back, then run as one batch in an order that cannot deadlock.

tutti's send and recv block, and a group runs its calls one at a time in
issue order. Two ranks that each isend a large tensor to the other before
they irecv would each wait in the send for a recv queued behind it. torch
1.13 brackets batch_isend_irecv with _start/_end_coalescing, which lets the
batch be ordered; torch 2.x issues a CPU batch as plain isend/irecv calls,
and so does code written for gloo, whose sends progress by themselves. So
every isend/irecv is held and its Work returned at once; the held calls are
queued together when one of their Works is asked about (wait, get_future,
is_completed, ...), when any other call is made on the group, at
_end_coalescing, when the group is destroyed, and at exit. A receive from
any source (peer None) runs after the batch's named calls, so that the
batch's sends are out before it waits.
"""
import math
import threading

import torch

from ._work import Work, cuda_fence


class Held:
    """The point-to-point calls of one group not yet queued, in issue order."""

    def __init__(self, flush):
        self._flush = flush  # the group's: queues what is held
        self._ops = []
        self._lock = threading.Lock()

    def add(self, kind, peer, view, tensors):
        """Holds a "send" or "recv" of view with peer (None: a receive from
        any source); returns its Work."""
        w = Work(tensors, before=self._flush)
        fence = cuda_fence(tensors)  # the tensor is ready when the caller's stream gets here
        with self._lock:
            self._ops.append((kind, peer, view, tensors, w, fence))
        return w

    def take(self):
        """Everything held, which is no longer held."""
        with self._lock:
            ops, self._ops = self._ops, []
        return ops


def order(me, ops):
    """ops in the order this rank runs them.

    Blocking sends cannot all go first. Every rank takes its peers in one
    global order of pairs (lower rank first), the lower rank of a pair sending
    before it receives. The smallest pair not yet done can then always
    proceed, so the batch cannot deadlock; messages between two ranks keep
    their order.
    """
    def key(k):
        kind, peer = ops[k][0], ops[k][1]
        if peer is None:
            return math.inf, math.inf, False, k
        return min(me, peer), max(me, peer), (kind == "recv") == (me < peer), k

    return [ops[k] for k in sorted(range(len(ops)), key=key)]


def runner(comm, ops):
    """The body that runs ops on comm (stream: as the group's _queue gives it)
    and finishes each op's Work with the batch's outcome."""
    ordered = order(comm.rank, ops)

    def run(stream):
        try:
            for kind, peer, view, _, work, _ in ordered:
                if kind == "send":
                    comm.send(view, peer, stream=stream)
                elif peer is None:
                    work._source = recv_any(comm, view, stream)
                else:
                    comm.recv(view, peer, stream=stream)
        except BaseException as e:
            for op in ops:
                op[4]._finish(e)
            raise
        for op in ops:
            op[4]._finish(None)

    return run


def recv_any(comm, view, stream):
    """Receives from any source into view; returns the sender. tutti takes
    host memory there, so a CUDA tensor is received through a host copy."""
    if not view.is_cuda:
        return comm.recv_any(view)
    host = torch.empty(view.shape, dtype=view.dtype)
    source = comm.recv_any(host)
    with torch.cuda.stream(stream):
        view.copy_(host)
    return source


def tensors_of(ops):
    return [t for op in ops for t in op[3]]


def fences_of(ops):
    """The CUDA events recorded when ops were issued (None for CPU tensors)."""
    return [op[5] for op in ops]
