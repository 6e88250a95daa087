# SPDX-License-Identifier: MIT
"""Work objects and the thread that runs a process group's calls in order.

torch 1.13 keeps no reference to a Work made in Python once a C++ caller
(DDP's reducer, broadcast_coalesced) holds it, so its Python half would be
collected and a later wait() from C++ would block forever on the C++ base
class. Every Work therefore stays in _LIVE until it finished and someone
took its result (wait() or get_future()); torch 2.x keeps them alive itself,
where this costs nothing.
"""
import atexit
import collections
import datetime
import queue
import threading
import weakref

import torch
import torch.distributed as dist
from torch.futures import Future

_LIVE = collections.OrderedDict()
_LIVE_LOCK = threading.Lock()
# Finished works nobody asked about (an async call whose Work the caller
# dropped); beyond this many, the oldest are let go.
_UNCLAIMED_LIMIT = 4096


def _keep(work):
    with _LIVE_LOCK:
        _LIVE[id(work)] = work
        if len(_LIVE) > 2 * _UNCLAIMED_LIMIT:
            done = [k for k, w in _LIVE.items() if w._done.is_set()]
            for k in done[: len(done) - _UNCLAIMED_LIMIT]:
                del _LIVE[k]


def _release(work):
    with _LIVE_LOCK:
        _LIVE.pop(id(work), None)


class Work(dist.Work):
    """An operation queued on a tutti process group.

    wait() blocks until it ran and raises the TuttiError it failed with;
    get_future() gives a torch Future holding the output tensors (or the
    error); is_completed() and exception() ask without blocking. ``before``,
    when given, is called first by each of them (a held isend/irecv is queued
    then).
    """

    def __init__(self, outputs, single=False, before=None):
        super().__init__()
        self._outputs = outputs
        self._single = single  # the future holds one tensor (DDP comm hooks), not a list
        self._before = before
        self._fut = Future()
        self._done = threading.Event()
        self._exc = None
        self._source = None  # the sender, for a receive from any source
        self._claimed = False
        _keep(self)

    def _finish(self, exc):
        self._exc = exc
        self._done.set()
        if exc is not None:
            self._fut.set_exception(exc)
        else:
            self._fut.set_result(self._outputs[0] if self._single else self._outputs)
        if self._claimed:
            _release(self)

    def _ask(self):
        if self._before is not None:
            self._before()

    def wait(self, timeout=None):
        self._ask()
        seconds = None
        if isinstance(timeout, datetime.timedelta):
            seconds = timeout.total_seconds() or None  # C++'s kNoTimeout arrives as 0
        elif timeout:
            seconds = float(timeout)
        if not self._done.wait(seconds):
            raise RuntimeError(f"tutti: wait timeout after {seconds} s: the operation has not finished")
        self._claimed = True
        _release(self)
        if self._exc is not None:
            raise self._exc
        return True

    def get_future(self):
        self._ask()
        self._claimed = True
        if self._done.is_set():
            _release(self)
        return self._fut

    def is_completed(self):
        self._ask()
        return self._done.is_set()

    def is_success(self):
        self._ask()
        return self._done.is_set() and self._exc is None

    def exception(self):
        self._ask()
        return self._exc

    def result(self):
        self.wait()
        return self._outputs

    def source_rank(self):
        """The rank a receive from any source got its message from, once it finished."""
        if self._source is None:
            raise RuntimeError("tutti: source_rank() names the sender of a receive from any source (recv "
                               "without src), once it finished; this Work is not one, or has not finished")
        return self._source

    _source_rank = source_rank  # what torch.distributed.recv calls

    def synchronize(self):
        self.wait()


_WORKERS = weakref.WeakSet()


@atexit.register
def _stop_workers():
    # A worker thread that touched tensors and is still running when the
    # interpreter exits makes torch 1.13 abort ("terminate called without an
    # active exception"); stopped here, it ends like any thread.
    for w in list(_WORKERS):
        w.shutdown(timeout=10)


class Worker:
    """One thread per process group: its calls run off the Python thread, in
    the order they were issued, as NCCL's stream orders them. Nothing here
    polls: the thread sleeps in the queue between calls and, inside a call,
    in tutti's engine once its peers are late (it releases the GIL in the C
    call); a waiter sleeps on the Work's event."""

    def __init__(self, name):
        self._q = queue.SimpleQueue()
        self._thread = threading.Thread(target=self._loop, name=name, daemon=True)
        self._thread.start()
        _WORKERS.add(self)

    def submit(self, fn, work):
        self._q.put((fn, work))
        return work

    def _loop(self):
        while True:
            item = self._q.get()
            if item is None:
                return
            fn, work = item
            try:
                fn()
            except BaseException as e:  # handed to the waiter, never lost
                work._finish(e)
            else:
                work._finish(None)

    def shutdown(self, timeout=None):
        """Runs what is queued, then stops the thread."""
        if self._thread.is_alive() and self._thread is not threading.current_thread():
            self._q.put(None)
            self._thread.join(timeout)


def completed(outputs, exc=None):
    """A Work that is already finished (nothing to run)."""
    w = Work(outputs)
    w._finish(exc)
    return w


def cuda_fence(tensors):
    """For CUDA tensors: an event recorded on the current stream now, so the
    worker's call starts after the work queued before it; None for CPU."""
    dev = next((t.device for t in tensors if t.is_cuda), None)
    if dev is None:
        return None
    ev = torch.cuda.Event()
    ev.record(torch.cuda.current_stream(dev))
    return dev, ev
