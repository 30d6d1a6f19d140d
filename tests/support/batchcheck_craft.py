"""Hand-made v2 record batches, valid and poisoned, for the batch validator's tests.

Every batch built here has a correct CRC-32C: the poison is in the contents, which is
what checks of the CRC alone would let through.  ``POISON`` names each
kind of poison with the error code Kafka 3.9 answers for it.

Invariant: ``assemble`` never validates anything; it writes whatever it is given.
"""
from __future__ import annotations

import gzip
import struct

import crc32c
import lz4.frame
import snappy
import zstandard

HEADER = struct.Struct(">qiibIhiqqqhii")
NONE, GZIP, SNAPPY, LZ4, ZSTD = range(5)
TS = 1_700_000_000_000
UNKNOWN_SERVER_ERROR, INVALID_TIMESTAMP, INVALID_RECORD = -1, 32, 87


def uvarint(raw: int) -> bytes:
    """Unsigned LEB128 of ``raw`` (no zig-zag): lets tests write over-long varints."""
    out = bytearray()
    while True:
        b = raw & 0x7F
        raw >>= 7
        if raw:
            out.append(b | 0x80)
        else:
            out.append(b)
            return bytes(out)


def varint(value: int) -> bytes:
    """Zig-zag varint as Kafka writes it (64-bit zig-zag covers ints too)."""
    return uvarint((value << 1) ^ (value >> 63))


def blob(data: bytes | None) -> bytes:
    return varint(-1) if data is None else varint(len(data)) + data


def record_body(offset_delta: int = 0, ts_delta: int = 0, key: bytes | None = b"k",
                value: bytes | None = b"v", headers=(), attributes: int = 0) -> bytes:
    out = bytes([attributes]) + varint(ts_delta) + varint(offset_delta) + blob(key) + blob(value)
    out += varint(len(headers))
    for hkey, hval in headers:
        out += blob(hkey) + blob(hval)
    return out


def record(*args, **kwargs) -> bytes:
    body = record_body(*args, **kwargs)
    return varint(len(body)) + body


def records(n: int, key: bytes | None = b"k", value: bytes = b"v", ts_step: int = 1) -> bytes:
    return b"".join(record(i, i * ts_step, key, value) for i in range(n))


def compress(codec: int, data: bytes) -> bytes:
    if codec == GZIP:
        return gzip.compress(data)
    if codec == SNAPPY:
        return snappy.compress(data)
    if codec == LZ4:
        return lz4.frame.compress(data)
    if codec == ZSTD:
        return zstandard.ZstdCompressor().compress(data)
    return data


def xerial(data: bytes, chunk: int = 32) -> bytes:
    """Snappy in the xerial framing Kafka's Java client writes (SnappyOutputStream)."""
    out = b"\x82SNAPPY\x00" + struct.pack(">ii", 1, 1)
    for i in range(0, len(data), chunk):
        part = snappy.compress(data[i:i + chunk])
        out += struct.pack(">i", len(part)) + part
    return out


def assemble(payload: bytes, count: int, last_offset_delta: int | None = None,
             attributes: int = 0, base_ts: int = TS, max_ts: int | None = None,
             producer_id: int = -1, producer_epoch: int = -1, base_sequence: int = -1,
             base_offset: int = 0, magic: int = 2) -> bytes:
    """A batch around ``payload`` (already compressed if the attributes say so)."""
    lod = count - 1 if last_offset_delta is None else last_offset_delta
    total = HEADER.size + len(payload)
    buf = bytearray(total)
    HEADER.pack_into(buf, 0, base_offset, total - 12, -1, magic, 0, attributes, lod, base_ts,
                     base_ts if max_ts is None else max_ts, producer_id, producer_epoch,
                     base_sequence, count)
    buf[HEADER.size:] = payload
    struct.pack_into(">I", buf, 17, crc32c.crc32c(memoryview(buf)[21:]))
    return bytes(buf)


def plain(raw_records: bytes, count: int, codec: int = NONE, **kw) -> bytes:
    """``raw_records`` compressed with ``codec`` and wrapped in a batch."""
    attrs = kw.pop("attributes", 0) | codec
    return assemble(compress(codec, raw_records), count, attributes=attrs, **kw)


def claimed(batch: bytes, max_timestamp: int, attributes: int | None = None) -> bytes:
    """``batch`` whose header claims ``max_timestamp`` (and ``attributes``, bits as given),
    with its CRC-32C recomputed: what a producer may send, whatever its records say."""
    out = bytearray(batch)
    if attributes is not None:
        struct.pack_into(">h", out, 21, attributes)
    struct.pack_into(">q", out, 35, max_timestamp)
    struct.pack_into(">I", out, 17, crc32c.crc32c(memoryview(out)[21:]))
    return bytes(out)


def _poison() -> dict[str, tuple[bytes, bool, int]]:
    """name -> (batch, compacted topic?, Kafka's error code)."""
    ten = records(10)
    gz, l4 = compress(GZIP, ten), compress(LZ4, ten)
    zs, sn = compress(ZSTD, ten), compress(SNAPPY, ten)
    bad_len = varint(50) + record_body(0)  # declares 50 body bytes, has 7
    return {
        "garbage-records": (assemble(b"\xff" * 40, 3), False, UNKNOWN_SERVER_ERROR),
        "count-beyond-offsets": (assemble(ten, 0x7FFFFFFF, last_offset_delta=9), False,
                                 INVALID_RECORD),
        "count-and-offsets-beyond-records": (assemble(ten, 1000), False, INVALID_RECORD),
        "count-below-records": (assemble(ten, 5), False, INVALID_RECORD),
        "zero-count": (assemble(b"", 0, last_offset_delta=0), False, INVALID_RECORD),
        "negative-offset-delta": (assemble(ten, 10, last_offset_delta=-1), False,
                                  INVALID_RECORD),
        "truncated-gzip": (assemble(gz[:len(gz) // 2], 10, attributes=GZIP), False,
                           UNKNOWN_SERVER_ERROR),
        "truncated-lz4": (assemble(l4[:len(l4) // 2], 10, attributes=LZ4), False,
                          UNKNOWN_SERVER_ERROR),
        "truncated-zstd": (assemble(zs[:len(zs) // 2], 10, attributes=ZSTD), False,
                           UNKNOWN_SERVER_ERROR),
        "truncated-snappy": (assemble(sn[:len(sn) // 2], 10, attributes=SNAPPY), False,
                             UNKNOWN_SERVER_ERROR),
        "gzip-flag-on-plain": (assemble(ten, 10, attributes=GZIP), False, UNKNOWN_SERVER_ERROR),
        "snappy-flag-on-plain": (assemble(ten, 10, attributes=SNAPPY), False, UNKNOWN_SERVER_ERROR),
        "lz4-flag-on-plain": (assemble(ten, 10, attributes=LZ4), False, UNKNOWN_SERVER_ERROR),
        "zstd-flag-on-plain": (assemble(ten, 10, attributes=ZSTD), False, UNKNOWN_SERVER_ERROR),
        "gzip-of-garbage-records": (assemble(compress(GZIP, b"\xff" * 40), 3, attributes=GZIP),
                                    False, INVALID_RECORD),
        "lz4-with-trailing-records": (assemble(compress(LZ4, ten + record(10)), 10,
                                               attributes=LZ4), False, INVALID_RECORD),
        "trailing-garbage": (assemble(ten + b"\x00\x01\x02", 10), False, INVALID_RECORD),
        "record-length-too-long": (assemble(bad_len + records(1), 2), False, INVALID_RECORD),
        "record-length-with-slack": (assemble(varint(10) + record_body(0) + b"\x00\x00", 1),
                                     False, INVALID_RECORD),
        "record-length-too-short": (assemble(varint(3) + record_body(0), 1), False,
                                    INVALID_RECORD),
        "negative-record-length": (assemble(varint(-5) + record_body(0), 1), False,
                                   INVALID_RECORD),
        "negative-header-count": (assemble(_with_tail(b"\x00", varint(-2)), 1), False,
                                  INVALID_RECORD),
        "negative-header-key": (assemble(_with_tail(b"\x00", varint(1) + varint(-3)
                                                    + varint(0)), 1), False, INVALID_RECORD),
        "header-count-beyond-record": (assemble(_with_tail(b"\x00", varint(99)), 1), False,
                                       INVALID_RECORD),
        "key-beyond-record": (assemble(_raw_record(b"\x00" + varint(0) + varint(0)
                                                   + varint(200) + b"kk"), 1), False,
                              INVALID_RECORD),
        "huge-length-varint": (assemble(b"\xff" * 6 + b"\x01" + record_body(0), 1), False,
                               UNKNOWN_SERVER_ERROR),
        "huge-length-varint-gzip": (plain(b"\xff" * 6 + b"\x01" + record_body(0), 1, GZIP),
                                    False, INVALID_RECORD),
        "huge-offset-delta-varint": (assemble(_raw_record(b"\x00" + varint(0) + b"\xff" * 5
                                                          + b"\x01" + blob(b"k") + blob(b"v")
                                                          + varint(0)), 1), False,
                                     INVALID_RECORD),
        "huge-timestamp-varint": (assemble(_raw_record(b"\x00" + b"\xff" * 10 + b"\x01"
                                                       + varint(0) + blob(b"k") + blob(b"v")
                                                       + varint(0)), 1), False,
                                  INVALID_RECORD),
        "keyless-on-compacted": (assemble(records(3, key=None), 3), True, INVALID_RECORD),
        "keyless-lz4-on-compacted": (plain(records(3, key=None), 3, LZ4), True, INVALID_RECORD),
        "timestamp-too-old": (assemble(ten, 10, base_ts=1000), False, INVALID_TIMESTAMP),
        "timestamp-in-future": (assemble(ten, 10, base_ts=TS * 3), False, INVALID_TIMESTAMP),
        "log-append-time-no-timestamp": (assemble(ten, 10, attributes=0x08, base_ts=-1,
                                                  max_ts=-1), False, INVALID_TIMESTAMP),
        "control-batch-from-client": (assemble(record(0, 0, b"\x00\x00\x00\x01",
                                                      b"\x00\x00\x00\x00\x00\x00"), 1,
                                               attributes=0x20), False, INVALID_RECORD),
        "producer-id-without-sequence": (assemble(ten, 10, producer_id=7, producer_epoch=0),
                                         False, INVALID_RECORD),
    }


def _with_tail(prefix: bytes, tail: bytes) -> bytes:
    """One record: attributes, deltas 0, key k, value v, then ``tail`` as the headers part."""
    body = prefix + varint(0) + varint(0) + blob(b"k") + blob(b"v") + tail
    return varint(len(body)) + body


def _raw_record(body: bytes) -> bytes:
    return varint(len(body)) + body


POISON = _poison()
