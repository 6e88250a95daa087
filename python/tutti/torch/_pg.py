# SPDX-License-Identifier: MIT
"""ProcessGroupTutti: torch.distributed's collectives on a tutti communicator.

A Python subclass of torch's ProcessGroup (torch's pybind trampolines route
C++ callers such as DDP to these methods too). Each call is checked and
planned on the caller's thread, then queued on the group's worker thread,
which runs the tutti calls in issue order; the caller gets a Work at once.
CUDA tensors are handled as torch's NCCL backend does: the worker waits for
an event recorded on the caller's current stream, runs tutti on a side
stream of the group, and the Work finishes when that stream has.
"""
import atexit
import datetime
import threading
import weakref

import torch
import torch.distributed as dist

import tutti

from . import _monitor, _ops, _p2p, _sparse
from ._work import Work, Worker, completed, cuda_fence

_UID_KEY = "tutti/unique_id"
_count = 0
_count_lock = threading.Lock()
_GROUPS = weakref.WeakSet()


@atexit.register
def _flush_groups():
    # An isend nobody waited on still goes out (before the workers stop:
    # atexit runs this first, having registered it after them).
    for pg in list(_GROUPS):
        pg._flush()


def _one(tensors, call):
    if len(tensors) != 1:
        raise ValueError(f"tutti: {call} takes one tensor per process, got {len(tensors)}")
    return tensors[0]


def _rendezvous(store, rank, size, timeout):
    """Builds the group's communicator: rank 0 makes the id, the store hands it on."""
    if rank == 0:
        uid = tutti.get_unique_id()
        store.set(_UID_KEY, bytes(uid))
    else:
        uid = tutti.UniqueId(store.get(_UID_KEY))
    return tutti.Communicator(size, rank, uid, timeout=timeout)


class ProcessGroupTutti(dist.ProcessGroup):
    """The "tutti" backend's process group. Made by torch through
    ``dist.init_process_group("tutti")`` and ``dist.new_group(..., backend="tutti")``
    once ``tutti.torch`` is imported; ``.comm`` is its tutti.Communicator."""

    def __init__(self, store, rank, size, timeout=datetime.timedelta(minutes=30), comm=None):
        super().__init__(rank, size)
        global _count
        # comm: a communicator made already (a shrink's or a grow's, see _elastic.py)
        self.comm = comm if comm is not None else _rendezvous(store, rank, size, timeout)
        with _count_lock:
            _count += 1
            name = f"tutti-pg{_count}-r{rank}"
        self._worker = Worker(name)
        self._streams = {}
        self._held = _p2p.Held(self._flush)  # isend/irecv not yet queued
        self._group_name = ""
        self._store, self._timeout, self._monitored = store, timeout, 0  # for monitored_barrier
        _GROUPS.add(self)

    # identity
    def getBackendName(self):
        return "tutti"

    def name(self):
        return "tutti"

    # torch 2.x names each group; functional collectives find it by name. The
    # C++ base keeps the name in its backends, and this group has none.
    def _set_group_name(self, name):
        self._group_name = name

    @property
    def group_name(self):
        return self._group_name

    def __repr__(self):
        return f"<ProcessGroupTutti rank {self.rank()} of {self.size()}>"

    # queueing
    def _side_stream(self, dev):
        if dev not in self._streams:
            self._streams[dev] = torch.cuda.Stream(dev)
        return self._streams[dev]

    def _submit(self, tensors, outputs, body, single=False):
        """Queues body(stream) on the worker after the held point-to-point
        calls; stream is None for CPU tensors."""
        self._flush()
        return self._queue(tensors, outputs, body, single)

    def _flush(self):
        """Queues the held isend/irecv calls as one batch; returns its Work, or None."""
        ops = self._held.take()
        if not ops:
            return None
        if self.comm is None:  # issued after the group was destroyed: fail them, never leave them waiting
            err = RuntimeError("tutti: isend/irecv on a destroyed process group")
            for op in ops:
                op[4]._finish(err)
            return completed([], err)
        return self._queue(_p2p.tensors_of(ops), [], _p2p.runner(self.comm, ops), fences=_p2p.fences_of(ops))

    def _queue(self, tensors, outputs, body, single=False, fences=None):
        """Queues body(stream) as it is. fences: CUDA events the call waits
        for, recorded when it was issued (held calls); by default one on the
        current stream now."""
        fences = [f for f in (fences if fences is not None else [cuda_fence(tensors)]) if f is not None]
        side = None
        if fences:
            side = self._side_stream(fences[0][0])
            for t in tensors:
                if t.is_cuda:
                    t.record_stream(side)

        def run():
            if not fences:
                body(None)
                return
            with torch.cuda.device(fences[0][0]):
                for _, ev in fences:
                    side.wait_event(ev)
                body(side)
                done = torch.cuda.Event()
                done.record(side)
                done.synchronize()

        return self._worker.submit(run, Work(outputs, single))

    def _reduce_into(self, plan, stream, root=None):
        """Runs one planned reduction: all-reduce, or reduce to root."""
        c = self.comm
        if plan.bitwise is not None:
            gathered = _ops.gather_all(c, plan.arg, stream)
            if root is None or root == c.rank:
                plan.arg.copy_(_ops.fold(plan.bitwise, gathered))
        elif root is None:
            c.allreduce(plan.arg, plan.op, stream=stream)
        else:
            c.reduce(plan.arg, root, plan.op, stream=stream)
        plan.finish()

    # collectives
    def allreduce(self, tensors, opts=None):
        op = opts.reduceOp if opts is not None else dist.ReduceOp.SUM
        if any(t.is_sparse for t in tensors):
            return self._submit(tensors, tensors, lambda s: [_sparse.allreduce(self.comm, t, op, s) for t in tensors])
        plans = [_ops.plan(t, op) for t in tensors]
        return self._submit(tensors, tensors, lambda s: [self._reduce_into(p, s) for p in plans])

    def allreduce_coalesced(self, tensors, opts=None):
        return self.allreduce(tensors, opts)

    def broadcast(self, tensors, opts=None):
        root = opts.rootRank if opts is not None else 0
        t = _one(tensors, "broadcast")
        v = _ops.data_view(t)

        def body(s):
            self.comm.broadcast(v, root, stream=s)
            if v.data_ptr() != t.data_ptr():
                t.copy_(v.view(t.dtype) if not t.is_complex() else torch.view_as_complex(v))

        return self._submit(tensors, tensors, body)

    def reduce(self, tensors, opts=None):
        t = _one(tensors, "reduce")
        p = _ops.plan(t, opts.reduceOp)
        return self._submit(tensors, tensors, lambda s: self._reduce_into(p, s, opts.rootRank))

    def _allgather_base(self, output, input, opts=None):
        if output.numel() != input.numel() * self.size():
            raise ValueError(f"tutti: all_gather_into_tensor output has {output.numel()} elements, want "
                             f"{input.numel() * self.size()}")
        if not output.is_contiguous():
            raise ValueError("tutti: all_gather_into_tensor needs a contiguous output")
        i, o = _ops.data_view(input), _ops.data_view(output)
        return self._submit([input, output], [output], lambda s: self.comm.allgather(i, out=o, stream=s))

    all_gather_single = allgather_into_tensor = _allgather_base

    def allgather(self, output_lists, inputs, opts=None):
        t = _one(inputs, "all_gather")
        outs = _one(output_lists, "all_gather")
        if len(outs) != self.size() or any(o.numel() != t.numel() for o in outs):
            raise ValueError(f"tutti: all_gather needs {self.size()} outputs of {t.numel()} elements each")
        i = _ops.data_view(t)

        def body(s):
            gathered = self.comm.allgather(i, stream=s)
            for r, o in enumerate(outs):
                o.copy_(gathered[r].view(o.shape) if not o.is_complex() else torch.view_as_complex(gathered[r]))

        return self._submit([t, *outs], output_lists, body)

    def _all_of(self, works, outputs):
        """A Work that finishes after works (queued before it), failing as the first of them that failed."""
        return self._submit([], outputs, lambda s: [w.wait() for w in works])

    def allgather_coalesced(self, output_lists, inputs, opts=None):
        """output_lists[q][i] gets rank q's inputs[i]: one all-gather of the inputs laid end to end."""
        p = self.size()
        if len(output_lists) != p or any(len(outs) != len(inputs) for outs in output_lists) or any(
                o.numel() != i.numel() or o.dtype != i.dtype for outs in output_lists for o, i in zip(outs, inputs)):
            raise ValueError(f"tutti: all_gather_coalesced needs {p} output lists (one per rank), each of "
                             f"{len(inputs)} tensors of the inputs' sizes and dtypes")
        views = [_ops.data_view(t).reshape(-1) for t in inputs]
        sizes = [v.numel() for v in views]
        flat = torch.cat(views) if views else torch.empty(0)

        def body(s):
            gathered = self.comm.allgather(flat, stream=s)
            for q, outs in enumerate(output_lists):
                at = 0
                for o, n in zip(outs, sizes):
                    _ops.copy_into(o, gathered[q, at:at + n])
                    at += n

        return self._submit([*inputs, *[o for outs in output_lists for o in outs]], output_lists, body)

    def allgather_into_tensor_coalesced(self, outputs, inputs, opts=None):
        return self._all_of([self._allgather_base(o, i, opts) for o, i in zip(outputs, inputs)], outputs)

    all_gather_single_coalesced = allgather_into_tensor_coalesced

    def _reduce_scatter_base(self, output, input, opts=None):
        if input.numel() != output.numel() * self.size():
            raise ValueError(f"tutti: reduce_scatter_tensor input has {input.numel()} elements, want "
                             f"{output.numel() * self.size()}")
        op = opts.reduceOp if opts is not None else dist.ReduceOp.SUM
        pin, pout = _ops.plan(input, op), _ops.plan(output, op)
        n = output.numel()

        def body(s):
            if pin.bitwise is not None:
                gathered = _ops.gather_all(self.comm, pin.arg, s)
                mine = _ops.fold(pin.bitwise, gathered).reshape(-1)[self.rank() * n:(self.rank() + 1) * n]
                pout.arg.copy_(mine.view(pout.arg.shape))
            else:
                self.comm.reduce_scatter(pin.arg, pin.op, out=pout.arg, stream=s)
            pout.finish()

        return self._submit([input, output], [output], body)

    reduce_scatter_single = reduce_scatter_tensor = _reduce_scatter_base

    def reduce_scatter_tensor_coalesced(self, outputs, inputs, opts=None):
        return self._all_of([self._reduce_scatter_base(o, i, opts) for o, i in zip(outputs, inputs)], outputs)

    reduce_scatter_single_coalesced = reduce_scatter_tensor_coalesced

    def reduce_scatter(self, outputs, input_lists, opts=None):
        out = _one(outputs, "reduce_scatter")
        ins = _one(input_lists, "reduce_scatter")
        if len(ins) != self.size():
            raise ValueError(f"tutti: reduce_scatter needs {self.size()} inputs, got {len(ins)}")
        flat = torch.cat([i.reshape(-1) for i in ins])
        return self._reduce_scatter_base(out, flat, opts)

    def alltoall_base(self, output, input, output_split_sizes, input_split_sizes, opts=None):
        p = self.size()
        if not output_split_sizes and not input_split_sizes:
            if input.numel() % p or output.numel() != input.numel():
                raise ValueError(f"tutti: all_to_all_single needs equal input and output sizes divisible by {p}")
            i, o = _ops.data_view(input), _ops.data_view(output)
            return self._submit([input, output], [output], lambda s: self._alltoall_even(i, o, output, s))
        row = input[0].numel() if input.dim() > 0 and input.shape[0] else 1
        ins = [n * row for n in (input_split_sizes or [input.shape[0] // p] * p)]
        outs = [n * row for n in (output_split_sizes or [output.shape[0] // p] * p)]
        if len(ins) != p or len(outs) != p or sum(ins) != input.numel() or sum(outs) != output.numel():
            raise ValueError(f"tutti: all_to_all_single split sizes must have {p} entries that add up to the "
                             "first dimension of input and output")
        i, o = _ops.data_view(input).reshape(-1), _ops.data_view(output).reshape(-1)
        return self._submit([input, output], [output], lambda s: self._alltoall_uneven(i, o, output, ins, outs, s))

    all_to_all_single = alltoall_base

    def _alltoall_even(self, i, o, output, stream):
        self.comm.alltoall(i, out=o, stream=stream)
        if o.data_ptr() != output.data_ptr():
            output.copy_(o.view(output.shape))

    def _alltoall_uneven(self, i, o, output, ins, outs, stream):
        """Uneven blocks (element counts ins, outs): each padded to the largest any rank has."""
        p = self.size()
        biggest = torch.tensor([max(ins + outs)], dtype=torch.int64)
        self.comm.allreduce(biggest, tutti.MAX)  # every rank must pad alike
        block = int(biggest)
        send = torch.zeros(p * block, dtype=i.dtype, device=i.device)
        at = 0
        for r, n in enumerate(ins):
            send[r * block:r * block + n] = i[at:at + n]
            at += n
        recv = self.comm.alltoall(send, out=torch.empty_like(send), stream=stream)
        at = 0
        for r, n in enumerate(outs):
            o[at:at + n] = recv[r * block:r * block + n]
            at += n
        if o.data_ptr() != output.data_ptr():
            output.copy_(o.view(output.shape))

    def alltoall(self, outputs, inputs, opts=None):
        p = self.size()
        if len(outputs) != p or len(inputs) != p:
            raise ValueError(f"tutti: all_to_all takes {p} inputs and {p} outputs")
        ins, outs = [t.numel() for t in inputs], [t.numel() for t in outputs]
        i = _ops.data_view(torch.cat([t.reshape(-1) for t in inputs]))
        flat = torch.empty(sum(outs), dtype=outputs[0].dtype, device=outputs[0].device)
        o = _ops.data_view(flat)

        def body(s):
            # Always padded: one rank's blocks may all be equal while a peer's are not.
            self._alltoall_uneven(i, o, flat, ins, outs, s)
            at = 0
            for t, n in zip(outputs, outs):
                t.copy_(flat[at:at + n].view(t.shape))
                at += n

        return self._submit([*inputs, *outputs], outputs, body)

    def barrier(self, opts=None):
        return self._submit([], [], lambda s: self.comm.barrier())

    def monitored_barrier(self, timeout=None, wait_all_ranks=False):
        """Raises on rank 0 naming the rank that did not arrive within timeout
        (every such rank with wait_all_ranks), as gloo does (_monitor)."""
        if timeout is None:
            timeout = self._timeout
        self._monitored += 1
        _monitor.monitored_barrier(self._store, self.rank(), self.size(), self._monitored, timeout, wait_all_ranks)

    def gather(self, output_lists, inputs, opts):
        t = _one(inputs, "gather")
        root, me = opts.rootRank, self.rank()
        outs = output_lists[0] if me == root else []
        if me == root and (len(outs) != self.size() or any(o.numel() != t.numel() for o in outs)):
            raise ValueError(f"tutti: gather needs {self.size()} outputs of {t.numel()} elements on the root")
        v = _ops.data_view(t)

        def body(s):
            if me != root:
                self.comm.send(v, root, stream=s)
                return
            for r, o in enumerate(outs):
                dst = _ops.data_view(o)
                if r == me:
                    dst.copy_(v.view(dst.shape))
                else:
                    self.comm.recv(dst, r, stream=s)
                if dst.data_ptr() != o.data_ptr():
                    o.copy_(dst.view(o.dtype) if not o.is_complex() else torch.view_as_complex(dst))

        return self._submit([t, *outs], output_lists, body)

    def scatter(self, outputs, input_lists, opts):
        t = _one(outputs, "scatter")
        root, me = opts.rootRank, self.rank()
        ins = input_lists[0] if me == root else []
        if me == root and (len(ins) != self.size() or any(i.numel() != t.numel() for i in ins)):
            raise ValueError(f"tutti: scatter needs {self.size()} inputs of {t.numel()} elements on the root")
        dst = _ops.data_view(t)

        def body(s):
            if me == root:
                for r, i in enumerate(ins):
                    src = _ops.data_view(i)
                    if r == me:
                        dst.copy_(src.view(dst.shape))
                    else:
                        self.comm.send(src, r, stream=s)
            else:
                self.comm.recv(dst, root, stream=s)
            if dst.data_ptr() != t.data_ptr():
                t.copy_(dst.view(t.dtype) if not t.is_complex() else torch.view_as_complex(dst))

        return self._submit([t, *ins], outputs, body)

    # point to point: held, then run in batches (_p2p)
    def send(self, tensors, dst, tag=0):
        return self._held.add("send", dst, _ops.data_view(_one(tensors, "send")), tensors)

    def recv(self, tensors, src, tag=0):
        t = _one(tensors, "recv")
        if not t.is_contiguous():
            raise ValueError("tutti: recv needs a contiguous tensor")
        return self._held.add("recv", src, _ops.data_view(t), tensors)

    def recv_anysource(self, tensors, tag=0):
        """Held as a recv is; its Work's source_rank() names the sender once it finished."""
        t = _one(tensors, "recv")
        if not t.is_contiguous():
            raise ValueError("tutti: recv needs a contiguous tensor")
        return self._held.add("recv", None, _ops.data_view(t), tensors)

    # torch 1.13's batch_isend_irecv, and torch 2.x's on CUDA tensors, bracket
    # the batch with these: it is exactly what was issued in between.
    def _start_coalescing(self, device=None):
        self._flush()

    def _end_coalescing(self, arg=None):
        return self._flush() or completed([])

    def _destroy(self):
        self._flush()
        self._worker.shutdown()
        if self.comm is not None:
            self.comm.destroy()
            self.comm = None
