#!/usr/bin/env python3
"""Writes fuzz/corpus/records/seed-* from tests/vectors/records: the `records` field of
every partition of every captured Produce request, under each selector (see
tests/fuzz_checks/records.rs), plus the records sections alone behind selector bit 3 and
a small legacy message set behind bit 2, v0 and v1 sets with gzip wrappers (bit 2), and
their inner sets alone for the wrapping mode (bits 2 and 3). Inputs libFuzzer adds are left
alone."""
import glob, gzip, os, struct, zlib

HERE = os.path.dirname(os.path.abspath(__file__))
VEC = os.path.join(HERE, "..", "tests", "vectors", "records", "requests")
OUT = os.path.join(HERE, "corpus", "records")


def uvarint(b, p):
    v = s = 0
    while True:
        x = b[p]; p += 1
        v |= (x & 0x7F) << s
        if x < 0x80:
            return v, p
        s += 7


def fields(frame):
    b = frame[4:]
    p = 0
    version = struct.unpack_from(">h", b, 2)[0]
    flex = version >= 9
    p = 8
    n = struct.unpack_from(">h", b, p)[0]; p += 2 + max(n, 0)
    def tagged(p):
        k, p = uvarint(b, p)
        for _ in range(k):
            _, p = uvarint(b, p); sz, p = uvarint(b, p); p += sz
        return p
    def string(p):
        if flex:
            n, p = uvarint(b, p); n -= 1
        else:
            n = struct.unpack_from(">h", b, p)[0]; p += 2
        return p + max(n, 0)
    def count(p, wide=4):
        if flex:
            n, p = uvarint(b, p); return n - 1, p
        return struct.unpack_from(">i", b, p)[0], p + 4
    if flex:
        p = tagged(p)
    p = string(p); p += 6
    out = []
    nt, p = count(p)
    for _ in range(nt):
        p = string(p)
        np_, p = count(p)
        for _ in range(np_):
            p += 4
            if flex:
                n, p = uvarint(b, p); n -= 1
            else:
                n = struct.unpack_from(">i", b, p)[0]; p += 4
            out.append(b[p:p + n]); p += n
            if flex:
                p = tagged(p)
        if flex:
            p = tagged(p)
    return out


def legacy(offset, magic, attrs, key, value):
    m = bytes([magic, attrs]) + (struct.pack(">q", 1_700_000_000_000) if magic else b"")
    for f in (key, value):
        m += struct.pack(">i", -1) if f is None else struct.pack(">i", len(f)) + f
    return struct.pack(">qi", offset, len(m) + 4) + struct.pack(">I", zlib.crc32(m)) + m


os.makedirs(OUT, exist_ok=True)
for f in glob.glob(os.path.join(OUT, "seed-*")):
    os.remove(f)
for path in sorted(glob.glob(os.path.join(VEC, "*.hex"))):
    name = os.path.basename(path)[:-4]
    if "_many_" in name:
        continue
    frame = bytes.fromhex(open(path).read().strip())
    for i, field in enumerate(fields(frame)):
        sel = i % 4
        open(os.path.join(OUT, f"seed-{name}-p{i}"), "wb").write(bytes([sel]) + field)
        # The records section alone, behind a generated header (codec from the batch).
        codec = field[22] & 7
        open(os.path.join(OUT, f"seed-{name}-p{i}-section"), "wb").write(bytes([8 | (codec << 4) | 3]) + field[61:])
s = legacy(0, 0, 0, b"k", b"v") + legacy(1, 1, 0, None, b"") + legacy(2, 1, 8, b"", None)
open(os.path.join(OUT, "seed-legacy"), "wb").write(bytes([4 | 3]) + s)


def legacy_ts(offset, magic, attrs, ts, key, value):
    m = bytes([magic, attrs]) + (struct.pack(">q", ts) if magic else b"")
    for f in (key, value):
        m += struct.pack(">i", -1) if f is None else struct.pack(">i", len(f)) + f
    return struct.pack(">qi", offset, len(m) + 4) + struct.pack(">I", zlib.crc32(m)) + m


for magic in (0, 1):
    # Inner offsets relative in magic 1, absolute in magic 0; odd records keyed.
    inner = b"".join(
        legacy_ts(i if magic else 100 + i, magic, 0, 1000 + i, b"k%d" % i if i % 2 else None, b"value-%d" % i)
        for i in range(4)
    )
    wrapper = legacy_ts(103, magic, 1 | (8 if magic else 0), 5000, None, gzip.compress(inner, mtime=0))
    field = legacy_ts(1, magic, 0, 7, b"a", b"") + wrapper + legacy_ts(104, magic, 0, 9, None, None)
    for sel in (0x04, 0x07):
        open(os.path.join(OUT, f"seed-legacy-m{magic}-sel{sel:02x}"), "wb").write(bytes([sel]) + field)
    # Bit 3 with bit 2: the check wraps the rest (bit 4 magic 1, bits 5-6 codec, bit 7 log-append time).
    for sel in (0x0C, 0x2C, 0xCC):
        sel |= magic << 4
        open(os.path.join(OUT, f"seed-inner-m{magic}-sel{sel:02x}"), "wb").write(bytes([sel]) + inner)
