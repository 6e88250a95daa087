# SPDX-License-Identifier: MIT
"""One rank of the Python API test, run under tutti-run: every collective on
numpy arrays, torch CPU tensors (when torch is installed) and plain buffers,
every dtype and op, split, compression with its error feedback, and errors
raised as TuttiError with tutti's text. Exits non-zero naming what failed."""
import array
import sys

import numpy as np

import tutti

comm = tutti.Communicator.from_env(timeout=30)
r, p = comm.rank, comm.size
try:
    import torch
except ImportError:
    torch = None


def expect(cond, what):
    if not cond:
        sys.exit(f"rank {r}: {what}")


def values(dtype, rank, n, op):
    """Small exact values: every op's result is exact in every dtype."""
    if op == tutti.PROD:
        return ((np.arange(n) + rank) % 2 + 1).astype(dtype)
    return ((np.arange(n) * 3 + rank * 7) % 23).astype(dtype)


def reduce_ref(dtype, n, op):
    stack = np.stack([values(dtype, q, n, op).astype(np.float64) for q in range(p)])
    out = {tutti.SUM: stack.sum(0), tutti.PROD: stack.prod(0), tutti.MIN: stack.min(0),
           tutti.MAX: stack.max(0), tutti.AVG: np.trunc(stack.sum(0) / p)
           if np.dtype(dtype).kind in "iu" else stack.sum(0) / p}[op]
    return out.astype(dtype)


DTYPES = ["int8", "uint8", "int32", "uint32", "int64", "uint64", "float16", "float32", "float64"]
for dt in DTYPES:
    for op in tutti.Op:
        n = 37
        x = values(dt, r, n, op)
        got = comm.allreduce(x.copy(), op)
        want = reduce_ref(dt, n, op)
        if op == tutti.AVG and np.dtype(dt).kind == "f":
            expect(np.allclose(got, want, rtol=1e-3), f"allreduce {dt} {op.name}: {got[:4]} want {want[:4]}")
        else:
            expect(np.array_equal(got, want), f"allreduce {dt} {op.name}: {got[:4]} want {want[:4]}")
        out = np.empty_like(x)
        comm.allreduce(x, op, out=out)
        expect(np.array_equal(out, got), f"out-of-place allreduce {dt} {op.name} differs from in-place")

# Every other collective, on numpy, then on torch CPU tensors and a buffer.
def collectives(make, as_np):
    n = 5
    mine = make(np.arange(n, dtype=np.float32) + 100 * r)
    ag = comm.allgather(mine)
    expect(np.array_equal(as_np(ag).reshape(p, n), np.stack([np.arange(n) + 100 * q for q in range(p)])),
           f"allgather gave {as_np(ag)}")
    rs_in = make(np.tile(np.arange(p * 2, dtype=np.float32), 1) + r)
    rs = comm.reduce_scatter(rs_in, tutti.SUM)
    want = np.arange(p * 2, dtype=np.float32)[2 * r:2 * r + 2] * p + sum(range(p))
    expect(np.array_equal(as_np(rs), want), f"reduce_scatter gave {as_np(rs)} want {want}")
    for root in range(p):
        b = make(np.full(n, float(r), np.float32))
        comm.broadcast(b, root)
        expect(np.all(as_np(b) == root), f"broadcast from {root} gave {as_np(b)}")
        red = make(np.full(n, float(r + 1), np.float32))
        comm.reduce(red, root, tutti.MAX)
        if r == root:
            expect(np.all(as_np(red) == p), f"reduce to {root} gave {as_np(red)}")
    a2a = make(np.arange(p * 3, dtype=np.float32) + 1000 * r)
    comm.alltoall(a2a)
    want = np.concatenate([np.arange(3 * r, 3 * r + 3) + 1000 * q for q in range(p)]).astype(np.float32)
    expect(np.array_equal(as_np(a2a), want), f"alltoall gave {as_np(a2a)} want {want}")
    if p > 1:  # a ring of send/recv, even ranks sending first
        buf = make(np.full(n, float(r), np.float32))
        got = make(np.zeros(n, np.float32))
        right, left = (r + 1) % p, (r - 1) % p
        if r % 2 == 0:
            comm.send(buf, right)
            comm.recv(got, left)
        else:
            comm.recv(got, left)
            comm.send(buf, right)
        expect(np.all(as_np(got) == left), f"recv from {left} gave {as_np(got)}")
        # rank 0 receives one message from every other rank, from any source
        if r == 0:
            senders = set()
            for _ in range(p - 1):
                src = comm.recv_any(got)
                expect(np.all(as_np(got) == src) and src not in senders and 0 < src < p,
                       f"recv_any named rank {src} and gave {as_np(got)}")
                senders.add(src)
        else:
            comm.send(buf, 0)
    comm.barrier()


collectives(lambda a: a, lambda a: a)
if torch is not None:
    collectives(torch.from_numpy, lambda t: t.numpy())
    bf = torch.tensor([1.5, -2.25, 3.0], dtype=torch.bfloat16) * (r + 1)
    comm.allreduce(bf)
    expect(torch.equal(bf, torch.tensor([1.5, -2.25, 3.0], dtype=torch.bfloat16) * (p * (p + 1) // 2)),
           f"bf16 allreduce gave {bf}")
    try:
        comm.allreduce(torch.ones(4, 4).t())
        expect(False, "a non-contiguous tensor was accepted")
    except ValueError as e:
        expect("contiguous" in str(e), f"non-contiguous error says {e}")
buf = array.array("i", [r] * 4)
comm.allreduce(buf)
expect(list(buf) == [sum(range(p))] * 4, f"array.array allreduce gave {list(buf)}")
ba = bytearray(b"tutti!" if r == p - 1 else b"xxxxxx")
comm.broadcast(ba, p - 1)
expect(bytes(ba) == b"tutti!", f"bytearray broadcast gave {bytes(ba)}")

# Split: even and odd ranks, each ranked in reverse.
half = comm.split(r % 2, key=-r)
members = [q for q in range(p) if q % 2 == r % 2][::-1]
expect(half.size == len(members) and half.rank == members.index(r), f"split gave rank {half.rank} of {half.size}")
got = half.allgather(np.array([r], np.int32))
expect(list(got.reshape(-1)) == members, f"split members {list(got.reshape(-1))} want {members}")
# Shared: the same split over this communicator's connections; calls on the
# two alternate.
twin = comm.split(r % 2, key=-r, share=True)
for c, m in ((twin, members), (comm, list(range(p))), (twin, members)):
    s = c.allreduce(np.array([r], np.int64))
    expect(int(s[0]) == sum(m), f"shared split: sum {int(s[0])} want {sum(m)}")
# tutti_comm_id: one name per communicator, alike on its ranks (the twin is r % 2's).
names = comm.allgather(np.array([comm.id, twin.id], np.uint64)).reshape(-1, 2)
alike = all(names[q, 0] == names[0, 0] and (names[q, 1] == names[r, 1]) == (q % 2 == r % 2) for q in range(p))
expect(alike and names[r, 0] != names[r, 1], f"tutti_comm_id: {names.tolist()}")
twin.destroy()
none = comm.split(None if r == 0 else 0)
expect((none is None) == (r == 0), "split with no color returned a communicator")
if none is not None:
    expect(none.size == p - 1, f"split without rank 0 has {none.size} ranks")
    none.destroy()
half.destroy()

# Compression: top-k keeps what it does not send in the worker error, so the
# result plus every rank's error is the dense sum; density 1 is exact.
n = 4096
g = np.random.default_rng(r).standard_normal(n).astype(np.float32)
dense = comm.allreduce(g.copy())
ef = comm.error_feedback(n)
out = comm.allreduce_compressed(g.copy(), tutti.Compression("topk", density=0.05), ef)
stats = comm.last_compress_stats()
expect(p == 1 or 0 < stats.bytes_sent < stats.dense_bytes_sent, f"top-k sent {stats}")
worker, _ = ef.errors()
expect(len(worker) == n and np.count_nonzero(np.asarray(worker)) > n // 2, "top-k kept no error")
errsum = comm.allreduce(np.asarray(worker, np.float32))
expect(np.allclose(out + errsum, dense, atol=1e-4), "top-k result plus the errors is not the dense sum")
ef.reset()
expect(not np.any(np.asarray(ef.errors()[0])), "reset left errors behind")
exact = comm.allreduce_compressed(g.copy(), tutti.Compression("topk", density=1.0), ef)
expect(np.allclose(exact, dense, atol=1e-5), "top-k with density 1 differs from the dense sum")
q = comm.allreduce_compressed(g.copy(), tutti.Compression("int8"), comm.error_feedback(n), op=tutti.AVG)
expect(np.allclose(q, dense / p, atol=0.05), "int8 average is far from the dense average")
try:
    comm.allreduce_compressed(g.copy(), tutti.Compression("sign"), comm.error_feedback(n + 1))
    expect(False, "error feedback of the wrong size was accepted")
except ValueError:
    pass

# Errors: bad arguments name themselves; a mismatch fails on every rank.
try:
    comm.broadcast(np.zeros(3, np.float32), root=p)
    expect(False, "root out of range was accepted")
except tutti.TuttiError as e:
    expect(e.name == "TUTTI_ERR_INVALID_ARG" and "root" in e.detail, f"bad root raised {e}")
try:
    comm.allreduce(np.zeros(3, np.int16))
    expect(False, "int16 was accepted")
except TypeError as e:
    expect("int16" in str(e), f"int16 error says {e}")
if p > 1:
    try:
        comm.allreduce(np.zeros(8 if r == 0 else 9, np.float32))
        expect(False, "ranks with different counts both succeeded")
    except tutti.TuttiError as e:
        expect(e.name in ("TUTTI_ERR_MISMATCH", "TUTTI_ERR_PEER_FAILED", "TUTTI_ERR_ABORTED") and e.detail,
               f"mismatch raised {e}")
    comm.abort()
    expect("destroyed" in repr(comm), "abort left the communicator open")
else:
    comm.destroy()
# A unique id survives pickling and is 128 bytes.
import pickle

uid = tutti.get_unique_id()
expect(len(bytes(pickle.loads(pickle.dumps(uid)))) == 128, "unique id did not round-trip")
solo = tutti.Communicator(1, 0, uid)
expect(solo.size == 1 and solo.allreduce(np.ones(2))[0] == 1, "a one-rank communicator from an id failed")
solo.destroy()
