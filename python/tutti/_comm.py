# SPDX-License-Identifier: MIT
"""tutti.Communicator: a group of ranks and every collective on it."""
import ctypes
import enum
import threading

from . import _lib
from ._buffers import as_buffer, empty_like, shape_of
from ._errors import TuttiError, check

lib = _lib.lib


Op = enum.IntEnum("Op", {name.upper(): value
                         for name, value in _lib.enum_values(lib.tutti_op_name, "unknown").items()})
Op.__doc__ = """Reduction operators (tutti_op_t), named and numbered by the library. AVG
divides the sum by the number of ranks (truncating for integers); fp16/bf16
are reduced in fp32."""


class UniqueId:
    """The 128-byte rendezvous token of tutti_get_unique_id().

    Make it on the process that will be rank 0 (``tutti.get_unique_id()``),
    send ``bytes(uid)`` to the others by any means, and rebuild it there with
    ``UniqueId(data)``. The maker's process serves the rendezvous, so it must
    be rank 0 and stay alive until every rank joined.
    """

    __slots__ = ("_raw",)

    def __init__(self, data):
        data = bytes(data)
        if len(data) != _lib.UNIQUE_ID_BYTES:
            raise ValueError(f"a tutti unique id is {_lib.UNIQUE_ID_BYTES} bytes, not {len(data)}")
        self._raw = data

    def __bytes__(self):
        return self._raw

    def __reduce__(self):
        return (UniqueId, (self._raw,))

    def _struct(self):
        s = _lib.UniqueIdStruct()
        ctypes.memmove(s.internal, self._raw, len(self._raw))
        return s


def get_unique_id():
    """Creates a rendezvous id (tutti_get_unique_id); call it on rank 0 only."""
    s = _lib.UniqueIdStruct()
    check(lib.tutti_get_unique_id(ctypes.byref(s)), None, "tutti_get_unique_id")
    return UniqueId(bytes(s.internal))


def _params(timeout, node_id):
    p = _lib.CommParams()
    if timeout is not None:
        seconds = timeout.total_seconds() if hasattr(timeout, "total_seconds") else float(timeout)
        if seconds <= 0:
            raise ValueError(f"timeout must be > 0 seconds, not {seconds}")
        p.field_mask |= _lib.PARAM_TIMEOUT_MS
        p.timeout_ms = max(1, int(seconds * 1000))
    if node_id is not None:
        p.field_mask |= _lib.PARAM_NODE_ID
        p.node_id = int(node_id)
    return p


def _stream(stream, *bufs):
    """The cudaStream_t to pass: the caller's, else that of the first device buffer, else NULL."""
    if stream is None:
        for b in bufs:
            if b is not None and b.device:
                return b.stream
        return None
    for attr in ("cuda_stream", "ptr"):  # torch.cuda.Stream, cupy.cuda.Stream
        if hasattr(stream, attr):
            return int(getattr(stream, attr))
    return int(stream)


def _same_type(a, b, call):
    if a.dtype != b.dtype:
        raise TypeError(f"{call}: input and output have different dtypes")


class Communicator:
    """A tutti communicator (tutti_comm_t).

    Create it from the launcher's environment with ``Communicator.from_env()``
    (tutti-run, torchrun, mpirun/srun with PMIx, srun) or from a unique id with
    ``Communicator(nranks, rank, uid)``. Every rank must call the collectives
    in the same order with the same counts, dtypes, ops and roots; a rank that
    does not makes the call fail with TUTTI_ERR_MISMATCH instead of hanging.

    Collectives take torch tensors (CPU or CUDA), numpy arrays, CUDA array
    objects (CuPy) or writable buffers, contiguous. With host memory a call
    blocks until done; with CUDA memory it is queued on ``stream`` (default:
    torch's current stream for a torch tensor, the array's own stream for
    ``__cuda_array_interface__``, else the default stream) and returns.
    ``out=`` names the output; without it, operations that keep the size
    work in place and the others return a new array of the input's kind.
    Failures raise :class:`TuttiError` carrying tutti_comm_last_error().

    ``destroy()`` is collective (every rank calls it); ``abort()`` is not.
    Used as a context manager, the communicator is destroyed on normal exit
    and aborted when an exception leaves the block. Calls from several
    threads on one communicator are serialised by a lock.
    """

    def __init__(self, nranks, rank, unique_id, timeout=None, node_id=None):
        handle = ctypes.c_void_p()
        uid = unique_id if isinstance(unique_id, UniqueId) else UniqueId(unique_id)
        s = uid._struct()
        p = _params(timeout, node_id)
        check(lib.tutti_comm_init(ctypes.byref(handle), int(nranks), int(rank), ctypes.byref(s),
                                  ctypes.byref(p)), None, "tutti_comm_init")
        self._adopt(handle.value)

    @classmethod
    def from_env(cls, timeout=None, node_id=None):
        """Joins the communicator the launcher's environment describes (tutti_comm_init_env)."""
        handle = ctypes.c_void_p()
        p = _params(timeout, node_id)
        check(lib.tutti_comm_init_env(ctypes.byref(handle), ctypes.byref(p)), None, "tutti_comm_init_env")
        self = cls.__new__(cls)
        self._adopt(handle.value)
        return self

    def _adopt(self, handle):
        self._h = handle
        self._owner = None
        self._lock = threading.Lock()
        r, n = ctypes.c_int(), ctypes.c_int()
        lib.tutti_comm_rank(handle, ctypes.byref(r))
        lib.tutti_comm_size(handle, ctypes.byref(n))
        self.rank, self.size = r.value, n.value

    @property
    def handle(self):
        """The tutti_comm_t as an int, for C extensions."""
        return self._live()

    @property
    def id(self):
        """This communicator's name (tutti_comm_id): 64 bits, the same on every
        rank from the moment it holds the communicator, no exchange needed."""
        out = ctypes.c_uint64()
        check(lib.tutti_comm_id(self._live(), ctypes.byref(out)), self._h, "tutti_comm_id")
        return out.value

    @property
    def last_error(self):
        """What the last failing call on this communicator went wrong with ('' if none)."""
        return _lib.last_error(self._h)

    def _live(self):
        if self._h is None:
            raise ValueError("the communicator was destroyed or aborted")
        return self._h

    def _call(self, name, *args):
        """Runs a collective: args are those before the communicator, then the stream."""
        fn = getattr(lib, name)
        with self._lock:
            check(fn(*args[:-1], self._live(), args[-1]), self._h, name)

    @classmethod
    def _borrow(cls, handle):
        """A Communicator over a handle that a process group owns: calls go
        through, destroy() and abort() are the group's to make."""
        self = cls.__new__(cls)
        self._adopt(handle)
        self._owner = "its process group (tutti.torch.shrink, grow or the process's exit end it)"
        return self

    def _give(self):
        """The handle, which belongs to the caller from now on (a process
        group); this object no longer uses it."""
        self._refuse_if_borrowed("give away")
        h, self._h = self._live(), None
        return h

    def _refuse_if_borrowed(self, what):
        if self._owner is not None:
            raise ValueError(f"cannot {what} this communicator: it belongs to {self._owner}")

    def destroy(self):
        """Frees the communicator; collective, call it on every rank."""
        self._refuse_if_borrowed("destroy")
        h, self._h = self._live(), None
        check(lib.tutti_comm_destroy(h), None, "tutti_comm_destroy")

    def abort(self):
        """Frees the communicator at once, without the peers (after an error)."""
        self._refuse_if_borrowed("abort")
        if self._h is not None:
            h, self._h = self._h, None
            lib.tutti_comm_abort(h)

    def __enter__(self):
        return self

    def __exit__(self, kind, value, tb):
        if self._h is None:
            return
        if kind is None:
            self.destroy()
        else:
            self.abort()

    def __repr__(self):
        state = "" if self._h is not None else ", destroyed"
        return f"<tutti.Communicator rank {self.rank} of {self.size}{state}>"

    def split(self, color, key=0, share=False):
        """Splits into one communicator per color (tutti_comm_split; MPI_Comm_split).

        Collective. Ranks with the same color >= 0 join one communicator,
        ranked by key then by rank here; color None or negative joins none
        and returns None. The children keep this communicator's timeout.
        ``share``: the children take this communicator's connections
        (TUTTI_SPLIT_SHARE); calls on it and on them must then never overlap.
        """
        color = _lib.SPLIT_NOCOLOR if color is None or color < 0 else int(color)
        flags = _lib.SPLIT_SHARE if share else 0
        child = ctypes.c_void_p()
        with self._lock:
            check(lib.tutti_comm_split_flags(self._live(), color, int(key), flags, ctypes.byref(child)), self._h,
                  "tutti_comm_split")
        if not child.value:
            return None
        return self._child(child.value)

    def _child(self, handle):
        new = Communicator.__new__(Communicator)
        new._adopt(handle)
        return new

    def revoke(self):
        """Revokes the communicator (tutti_comm_revoke): every call on it, on
        every rank, in progress or later, raises TuttiError
        TUTTI_ERR_REVOKED at once. It stays usable for shrink(), destroy()
        and abort(). Not collective; may run on another thread while a call
        waits (it does not take the lock those calls hold)."""
        check(lib.tutti_comm_revoke(self._live()), self._h, "tutti_comm_revoke")

    def shrink(self, exclude=(), dead=True, abort=False, share=False):
        """A communicator of the ranks that remain (tutti_comm_shrink).

        Every remaining rank calls it with the same ``exclude`` (ranks to
        leave out; they call nothing) and flags. ``dead``: also leave out the
        ranks found dead, before or during the shrink (TUTTI_SHRINK_DEAD).
        ``abort``: revoke this communicator first. ``share``: take this
        communicator's connections, as ``split(share=True)`` (not once it
        is revoked). Ranks keep their order; this communicator is left as
        it was, to be aborted or destroyed."""
        ranks = [int(r) for r in exclude]
        arr = (ctypes.c_int * max(1, len(ranks)))(*ranks)
        flags = (_lib.SHRINK_DEAD if dead else 0) | (_lib.SHRINK_ABORT if abort else 0)
        flags |= _lib.SHRINK_SHARE if share else 0
        child = ctypes.c_void_p()
        check(lib.tutti_comm_shrink(self._live(), arr, len(ranks), flags, ctypes.byref(child)), self._h,
              "tutti_comm_shrink")
        return self._child(child.value)

    def grow(self, nranks, unique_id=None):
        """A communicator of ``nranks`` ranks: this one's ranks keep theirs,
        newcomers take the ones above (tutti_comm_grow). Collective over this
        communicator. Rank 0 passes the id it made with ``get_unique_id()``
        and handed to the newcomers, which join with
        ``Communicator(nranks, rank, uid)``; the others pass None."""
        s = None
        if unique_id is not None:
            uid = unique_id if isinstance(unique_id, UniqueId) else UniqueId(unique_id)
            s = uid._struct()
        child = ctypes.c_void_p()
        with self._lock:
            check(lib.tutti_comm_grow(self._live(), int(nranks), ctypes.byref(s) if s is not None else None,
                                      ctypes.byref(child)), self._h, "tutti_comm_grow")
        return self._child(child.value)

    # Collectives. Each resolves its arguments, then runs the C call.

    def allreduce(self, buf, op=Op.SUM, out=None, stream=None):
        """out[i] = op over ranks of buf[i]; in place without out. Returns out."""
        out = buf if out is None else out
        i, o = as_buffer(buf, "allreduce input"), as_buffer(out, "allreduce output", True)
        _same_type(i, o, "allreduce")
        if o.count != i.count:
            raise ValueError(f"allreduce: output has {o.count} elements, input {i.count}")
        self._call("tutti_allreduce", i.ptr, o.ptr, i.count, i.dtype, int(Op(op)), _stream(stream, i, o))
        return out

    def reduce_scatter(self, buf, op=Op.SUM, out=None, stream=None):
        """Rank r gets block r of op over ranks of buf (size * n elements). Returns out."""
        i = as_buffer(buf, "reduce_scatter input")
        if i.count % self.size:
            raise ValueError(f"reduce_scatter: input has {i.count} elements, not a multiple of {self.size} ranks")
        n = i.count // self.size
        if out is None:
            shape = shape_of(buf)
            out = empty_like(buf, (shape[0] // self.size,) + shape[1:] if shape and shape[0] % self.size == 0
                             else (n,))
        o = as_buffer(out, "reduce_scatter output", True)
        _same_type(i, o, "reduce_scatter")
        if o.count != n:
            raise ValueError(f"reduce_scatter: output has {o.count} elements, want {n}")
        self._call("tutti_reduce_scatter", i.ptr, o.ptr, n, i.dtype, int(Op(op)), _stream(stream, i, o))
        return out

    def allgather(self, buf, out=None, stream=None):
        """Returns out (size * n elements; new of shape (size, *buf.shape)) holding every rank's buf."""
        i = as_buffer(buf, "allgather input")
        if out is None:
            out = empty_like(buf, (self.size,) + shape_of(buf))
        o = as_buffer(out, "allgather output", True)
        _same_type(i, o, "allgather")
        if o.count != i.count * self.size:
            raise ValueError(f"allgather: output has {o.count} elements, want {i.count * self.size}")
        self._call("tutti_allgather", i.ptr, o.ptr, i.count, i.dtype, _stream(stream, i, o))
        return out

    def broadcast(self, buf, root=0, out=None, stream=None):
        """out = root's buf; in place without out. Returns out."""
        out = buf if out is None else out
        i, o = as_buffer(buf, "broadcast input"), as_buffer(out, "broadcast output", True)
        _same_type(i, o, "broadcast")
        if o.count != i.count:
            raise ValueError(f"broadcast: output has {o.count} elements, input {i.count}")
        self._call("tutti_broadcast", i.ptr, o.ptr, i.count, i.dtype, int(root), _stream(stream, i, o))
        return out

    def reduce(self, buf, root=0, op=Op.SUM, out=None, stream=None):
        """On root, out = op over ranks of buf (in place without out); elsewhere out is unused. Returns out."""
        i = as_buffer(buf, "reduce input")
        o = None
        if self.rank == root:
            out = buf if out is None else out
            o = as_buffer(out, "reduce output", True)
            _same_type(i, o, "reduce")
            if o.count != i.count:
                raise ValueError(f"reduce: output has {o.count} elements, input {i.count}")
        self._call("tutti_reduce", i.ptr, o.ptr if o else None, i.count, i.dtype, int(Op(op)), int(root),
                   _stream(stream, i, o))
        return out

    def alltoall(self, buf, out=None, stream=None):
        """Block j of buf goes to rank j, landing in block (this rank) of its out; in place without out."""
        out = buf if out is None else out
        i, o = as_buffer(buf, "alltoall input"), as_buffer(out, "alltoall output", True)
        _same_type(i, o, "alltoall")
        if i.count % self.size or o.count != i.count:
            raise ValueError(f"alltoall: input ({i.count}) and output ({o.count}) must hold the same "
                             f"multiple of {self.size} elements")
        self._call("tutti_alltoall", i.ptr, o.ptr, i.count // self.size, i.dtype, _stream(stream, i, o))
        return out

    def barrier(self, stream=None):
        """Returns once every rank entered the barrier."""
        self._call("tutti_barrier", _stream(stream))

    def send(self, buf, peer, stream=None):
        """Sends buf to peer; returns once the data left buf. Messages to a peer match its recvs in order."""
        i = as_buffer(buf, "send buffer")
        self._call("tutti_send", i.ptr, i.count, i.dtype, int(peer), _stream(stream, i))

    def recv(self, buf, peer, stream=None):
        """Receives into buf from peer. Returns buf."""
        o = as_buffer(buf, "recv buffer", True)
        self._call("tutti_recv", o.ptr, o.count, o.dtype, int(peer), _stream(stream, o))
        return buf

    def recv_any(self, buf):
        """Receives into buf (host memory) the next message any peer sends
        this rank, as recv from that peer would; returns the sender's rank.
        A timeout raises TuttiError (TUTTI_ERR_TIMEOUT) and leaves the
        communicator usable: nothing was received."""
        o = as_buffer(buf, "recv_any buffer", True)
        source = ctypes.c_int(-1)
        with self._lock:
            check(lib.tutti_recv_any(o.ptr, o.count, o.dtype, ctypes.byref(source), self._live(), None), self._h,
                  "tutti_recv_any")
        return source.value

    def allreduce_compressed(self, buf, compression, state=None, op=Op.SUM, out=None, stream=None):
        """Compressed all-reduce (tutti_allreduce_compressed): sum or avg of buf
        over ranks, compressed as ``compression`` (a :class:`tutti.Compression`)
        says, with error feedback kept in ``state`` (a
        :class:`tutti.ErrorFeedback` for buf's size). fp32, fp16 or bf16; in
        place without out. Returns out; ``last_compress_stats()`` tells what it sent."""
        out = buf if out is None else out
        i, o = as_buffer(buf, "allreduce_compressed input"), as_buffer(out, "allreduce_compressed output", True)
        _same_type(i, o, "allreduce_compressed")
        if o.count != i.count:
            raise ValueError(f"allreduce_compressed: output has {o.count} elements, input {i.count}")
        how = compression._struct()
        ef = state._live() if state is not None else None
        if state is not None and (state.count != i.count or state.nranks != self.size):
            raise ValueError(f"allreduce_compressed: state is for {state.count} elements on {state.nranks} "
                             f"ranks, the call has {i.count} on {self.size}")
        with self._lock:
            check(lib.tutti_allreduce_compressed(i.ptr, o.ptr, i.count, i.dtype, int(Op(op)), ctypes.byref(how),
                                                 ef, self._live(), _stream(stream, i, o)),
                  self._h, "tutti_allreduce_compressed")
        return out

    def last_compress_stats(self):
        """What this rank's last compressed all-reduce did: a CompressStats."""
        from ._compress import CompressStats

        s = _lib.CompressStats()
        with self._lock:
            check(lib.tutti_compress_last_stats(self._live(), ctypes.byref(s)), self._h,
                  "tutti_compress_last_stats")
        return CompressStats(s.bytes_sent, s.dense_bytes_sent, s.k_sent, bool(s.fell_back))

    def error_feedback(self, count):
        """A new ErrorFeedback for tensors of count elements on this communicator."""
        from ._compress import ErrorFeedback

        return ErrorFeedback(count, self.size)


__all__ = ["Communicator", "Op", "UniqueId", "get_unique_id", "TuttiError"]
