#!/usr/bin/python3
# SPDX-License-Identifier: MIT
# Writes the seed corpus of the fuzz targets (tests/fuzz/corpus/TARGET/):
# well-formed inputs of each format, from which the fuzzers mutate. Run it
# from the source tree after a wire format changes, and commit the result.
import os
import re
import struct

HERE = os.path.dirname(os.path.abspath(__file__))
TOP = os.path.dirname(os.path.dirname(HERE))


def put(target, name, data):
    d = os.path.join(HERE, "corpus", target)
    os.makedirs(d, exist_ok=True)
    with open(os.path.join(d, name), "wb") as f:
        f.write(data)


# star frames: magic type reserved rank status len pad seq
STAR = 0x74747378
T = dict(DATA=1, ALL=2, FAIL=3, FAILED=4, LEAVING=5, LEFT=6, DONE=7, QUERY=8, POLL=9, STATE=10, REPORT=11)


def frame(kind, rank=0, status=0, seq=0, payload=b""):
    return struct.pack("<IHHiiIIQ", STAR, T[kind], 0, rank, status, len(payload), 0, seq) + payload


def state(in_call=1, seq=5, coll=0, dtype=8, op=0, kind=1, root=0, count=8, peer=1, rnd=2, nrounds=6):
    return struct.pack("<iiQBBBBiQiiiiiiqQ", in_call, 0, seq, coll, dtype, op, kind, root, count, peer, rnd,
                       nrounds, 1, 1, 0, 3000, seq + 1)


# first byte: nranks = 2 + b % 4, from = (b >> 2) % nranks, member side if b & 0x80
hub2_from1 = bytes([0x04])
member2 = bytes([0x80])
put("star", "hub-data", hub2_from1 + frame("DATA", 1, seq=1, payload=b"x" * 16))
put("star", "hub-fail", hub2_from1 + frame("FAIL", 1, 6, payload=b"allreduce #3: mismatch\0"))
put("star", "hub-leaving", hub2_from1 + frame("LEAVING", 1, seq=41))
put("star", "hub-query", hub2_from1 + frame("QUERY", 1) + frame("STATE", 1, seq=1, payload=state()))
put("star", "member-all", member2 + frame("ALL", 0, seq=1, payload=b"y" * 32))
put("star", "member-news", member2 + frame("FAILED", 1, 4, payload=b"timed out\0") + frame("LEFT", 1, seq=2)
    + frame("DONE", 0, 6, payload=b"ranks disagree\0"))
put("star", "member-poll", member2 + frame("POLL", 0, seq=1) + frame("REPORT", 0, payload=b"who is stuck\0"))

# hello: magic rank nranks channel key[16]
KEY = b"0123456789abcdef"


def hello(rank=1, nranks=4, channel=0, key=KEY):
    return struct.pack("<Iiii", 0x74746831, rank, nranks, channel) + key


put("hello", "good", hello())
put("hello", "two", hello(1) + b"\xff" + hello(2))
put("hello", "wrong-and-good", hello(key=b"x" * 16) + b"\xff" + hello(3) + b"\xff" + b"tth1")
put("hello", "half", hello()[:10])

# tcp: len/37, unit, piece, then header (magic coll dtype op channel root reserved count seq bytes) + payload
def msg_hdr(count, seq, nbytes, coll=0, dtype=0, op=0, root=0):
    return struct.pack("<IBBBBiIQQQ", 0x74747431, coll, dtype, op, 0, root, 0, count, seq, nbytes)


for lb, ub in ((2, 0), (1, 0x12), (0, 0)):
    n = lb * 37
    unit = 1 << (ub % 4)
    put("tcp", "msg-%d-%d" % (lb, ub), bytes([lb, ub, 7]) + msg_hdr(n // unit, 3, n) + bytes(range(256))[:n] * 1)
put("tcp", "wrong-call", bytes([1, 0, 40]) + msg_hdr(37, 4, 37) + b"z" * 37)

# shm: len, reducing, then slots: header (40) offset nbytes seq, body up to 64
def slot(hdr, offset, nbytes, seq, body):
    return hdr + struct.pack("<QQQ", offset, nbytes, seq) + body


# second byte: bit 0 a reducing receive, bit 1 a ring of two slots (else one)
h = msg_hdr(100, 7, 100)
put("shm", "two-slots", bytes([100, 2]) + slot(h, 0, 64, 1, b"a" * 64) + slot(h, 64, 36, 2, b"b" * 36))
put("shm", "reducing", bytes([100, 3]) + slot(h, 0, 64, 1, b"a" * 64) + slot(h, 64, 36, 2, b"b" * 36))
put("shm", "one-slot", bytes([100, 0]) + slot(h, 0, 64, 1, b"a" * 64) + slot(h, 64, 36, 2, b"b" * 36))
put("shm", "empty", bytes([0, 0]) + slot(msg_hdr(0, 7, 0), 0, 0, 1, b""))

# id: magic version key[16] root (len + sockaddr union of 28 bytes)
def sockaddr_in(port, ip=(127, 0, 0, 1)):
    return struct.pack("<I", 16) + struct.pack("<H", 2) + struct.pack(">H", port) + bytes(ip) + b"\0" * 8 + b"\0" * 12


put("id", "ipv4", struct.pack("<II", 0x74746964, 1) + KEY + sockaddr_in(29501))
put("id", "ipv6", struct.pack("<II", 0x74746964, 1) + KEY + struct.pack("<I", 28) + struct.pack("<H", 10)
    + struct.pack(">H", 29501) + b"\0" * 4 + b"\0" * 15 + b"\1" + b"\0" * 4)

put("tuning", "classes", b"# links\nshm 0.5 10 12\ntcp 40 1.2 12 # loopback\nintra shm\ninter tcp\n"
    b"inter_links 2\nwake_us 1.5\n")
put("tuning", "bad", b"nvlink 1 2\n")

put("topo-xml", "small", b'<?xml version="1.0"?><topology><object type="Machine" os_index="0">'
    b'<object type="Package" os_index="0"><object type="Core"><object type="PU" os_index="0"/></object>'
    b'</object></object></topology>')

# config: first byte picks the variable (its index in config_table.h), then the value
names = re.findall(r"X\((\w+),", open(os.path.join(TOP, "src/core/config_table.h")).read())
values = {"TIMEOUT": b"30", "TRANSPORTS": b"shm,tcp", "ALGO": b"ring", "ALGO_ALLREDUCE": b"rabenseifner",
          "SLICE_BYTES": b"64K", "PIPELINE": b"4", "SHM_SLOT_BYTES": b"256KB", "KEY": b"00" * 16,
          "DETERMINISTIC": b"1", "ROOT_ADDR": b"127.0.0.1:29500"}
for name, value in values.items():
    if name in names:
        put("config", name.lower(), bytes([names.index(name)]) + value)
