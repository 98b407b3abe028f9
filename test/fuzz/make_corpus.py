#!/usr/bin/env python3
"""Writes the seed inputs of test/fuzz/corpus/<target>/ (well-formed records
of each wire format, for the fuzzers to start from) and the regression inputs
of test/fuzz/regressions/<target>/ (inputs that reached a hole fixed in
issue 31; each must now run clean). Run from anywhere; rewrites the files.
The layouts: src/btl/tcp/wire.h, src/btl/sm/layout.h, src/pml/wire.h,
src/launcher/wire.hpp."""
import os
import struct

HERE = os.path.dirname(os.path.abspath(__file__))


def write(kind, target, name, data):
    d = os.path.join(HERE, kind, target)
    os.makedirs(d, exist_ok=True)
    with open(os.path.join(d, name), "wb") as f:
        f.write(data)


# ---- btl/tcp: mode byte, then a stream (handshake, frames) or a card ----
def hello(kind=1, frm=1, to=0, link=0, job=0x1234, token=b"\x11" * 16):
    return struct.pack("<IHHIiiIQ", 0x41584853, 1, kind, 36, frm, to, link, job) + token


def frame(am_id, payload, flags=0):
    pad = (-len(payload)) % 8
    return struct.pack("<IBBH", len(payload), am_id, flags, 0xA7C5) + payload + b"\0" * pad


def card(entries, token=b"\x22" * 16):
    b = struct.pack("<IHH", 0x41584354, 1, len(entries)) + token
    for addr, mask, port, lo, speed in entries:
        b += struct.pack("<IIHBBI", addr, mask, port, lo, 0, speed)
    return b


write("corpus", "tcp_wire", "hello", b"\x00" + hello())
write("corpus", "tcp_wire", "hello-frames", b"\x00" + hello(2) + frame(1, b"x" * 40) + frame(7, b"y" * 13) +
      frame(0, b"", 1))
write("corpus", "tcp_wire", "partial", b"\x20" + hello()[:20])
write("corpus", "tcp_wire", "garbage", b"\x00GET / HTTP/1.0\r\n\r\n")
write("corpus", "tcp_wire", "card", b"\x01" + card([(0x0100007F, 0xFF, 0x3412, 1, 0),
                                                   (0x0A00000A, 0xFFFF, 0x3512, 0, 10000)]))
write("corpus", "tcp_wire", "card-empty", b"\x01" + card([]))

# ---- btl/sm: rings, our index, then the segment ----
LINE = 64
HEADER = 64           # sizeof(SegmentHeader)
DESCRIPTORS = 32 * 64  # kCopyDescriptors x sizeof(CopyDescriptor)
VALID = 1 << 63


def record(am_id, length):
    return struct.pack("<Q", VALID | am_id << 32 | length)


def segment(nrings, capacity, magic=0x41584F4E534D3032, pid=4242, lengths=(1, 24, 100), bells=b"", step=8):
    h = struct.pack("<QIIQiiQQI", magic, nrings, step, capacity, pid, 0, 0x636D612070726F62, 0x7FFF0000, 0)
    h = h.ljust(HEADER, b"\0")
    doorbells = bytearray((nrings + LINE - 1) // LINE * LINE)
    doorbells[:len(bells)] = bells
    body = bytearray(DESCRIPTORS)
    for r in range(nrings):
        ring = bytearray(LINE + capacity)
        at = LINE
        for n in lengths:
            ring[at:at + 8] = record(1, n)
            at += (8 + n + step - 1) // step * step
            if at + 8 > len(ring):
                break
        body += ring
    return h + bytes(doorbells) + bytes(body)


write("corpus", "sm_segment", "two-rings", bytes([2, 1]) + segment(2, 1024, bells=b"\1\1"))
write("corpus", "sm_segment", "three-rings", bytes([3, 0]) + segment(3, 1024, lengths=(8, 8, 8, 200)))
write("corpus", "sm_segment", "unpacked", bytes([2, 0]) + segment(2, 1024, lengths=(8, 8, 200), step=64))
write("corpus", "sm_segment", "name", b"/axon.axon.123.9abc.sm.0.00112233445566778899aabbccddeeff")
# Holes fixed in issue 31 (for the slot rings btl/sm had then: a header with
# no slots, rings past the end of the mapping, a slot claiming more bytes
# than it holds), in the byte rings' terms: a ring size of 0, rings past the
# end, a record claiming more bytes than its ring holds.
write("regressions", "sm_segment", "zero-slots", bytes([2, 1]) + segment(2, 0))
write("regressions", "sm_segment", "rings-past-end", bytes([2, 1]) + segment(2, 1024)[:-200])
write("regressions", "sm_segment", "huge-slot-length", bytes([2, 1]) + segment(2, 1024, lengths=(0x7FFFFFF0,)))
write("regressions", "sm_segment", "name-with-slash", b"/axon.axon.123.9abc.sm/../../etc/passwd")


# ---- pml: the am id, then the message ----
def match(context=1, source=1, tag=7, seq=0, length=0):
    return struct.pack("<IiiIQ", context, source, tag, seq, length)


write("corpus", "pml_headers", "eager", bytes([1]) + match(length=5) + b"hello")
write("corpus", "pml_headers", "eager-sync", bytes([2]) + match(length=3) + struct.pack("<Q", 99) + b"abc")
write("corpus", "pml_headers", "rts", bytes([3]) + match(length=1 << 20) +
      struct.pack("<QQQBB6x", 1, 0x7F0000, 5, 0, 2) + struct.pack("<QQ", 65536, 6))
write("corpus", "pml_headers", "rts-device", bytes([10]) + match(length=1 << 20) +
      struct.pack("<QQQBB6x", 1, 0x7F0000, 5, 0, 0) + bytes([1]) + b"\0" * 7 + b"\x33" * 96)
write("corpus", "pml_headers", "frag", bytes([7]) + struct.pack("<QQ", 0x55, 4096) + b"z" * 64)
write("corpus", "pml_headers", "fin", bytes([4]) + struct.pack("<QQ", 1, 2))
write("corpus", "pml_headers", "cancel", bytes([8]) + struct.pack("<QIiII", 1, 1, 1, 0, 0))
write("corpus", "pml_headers", "cts-put", bytes([11]) + struct.pack("<QQQQQ", 1, 2, 3, 4, 5))
write("corpus", "pml_headers", "seg-ack", bytes([13]) + struct.pack("<QQQQ", 1, 2, 3, 4))
# Holes fixed in issue 31: a fragment shorter than its header (its length
# less the header's wrapped around), a sender's rank of 2^31-1 (the matching
# table grew to it), a short RTS.
write("regressions", "pml_headers", "short-frag", bytes([7]) + b"\1\2\3\4")
write("regressions", "pml_headers", "huge-source", bytes([1]) + match(source=0x7FFFFFFF))
write("regressions", "pml_headers", "negative-source", bytes([3]) + match(source=-5) + b"\0" * 32)
write("regressions", "pml_headers", "short-rts", bytes([3]) + match() + b"\0" * 8)


# ---- launcher: mode byte; odd: frames on a channel; even: Reader ops ----
def lframe(t, payload):
    return struct.pack("<IB", len(payload) + 1, t) + payload


def lstr(s):
    return struct.pack("<I", len(s)) + s


write("corpus", "launcher_wire", "frames", b"\x01" + lframe(1, struct.pack("<I", 0x41584E31) + lstr(b"node1")) +
      lframe(7, struct.pack("<ii", 0, 1) + lstr(b"output\n")) + lframe(11, b""))
write("corpus", "launcher_wire", "huge-length", b"\x01" + struct.pack("<IB", 0x40000001, 2))
write("corpus", "launcher_wire", "reader", b"\x00" + bytes([5, 1, 3, 4, 0, 2]) + struct.pack("<I", 7) + lstr(b"key") +
      struct.pack("<I", 2) + lstr(b"a") + lstr(b"bc") + b"\x09" + struct.pack("<i", -1))
write("corpus", "launcher_wire", "reader-many", b"\x00" + bytes([3, 4, 4, 3]) + struct.pack("<I", 0xFFFFFFFF) +
      lstr(b"x"))
