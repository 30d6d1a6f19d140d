"""Record-level encoding of v2 batches: building and decoding (NOT the hot path).

Used by tests, for control batches (transaction markers), by ListOffsets to
pin the exact record offset inside one batch, by the compactor, and by the old
formats' conversions (``legacy``, ``down_convert``).  Appending and serving v2
batches never call into this module.

Record layout inside a batch (zig-zag varints, Kafka's DefaultRecord):
    length varint | attributes int8 | timestampDelta varlong | offsetDelta varint |
    keyLength varint | key | valueLength varint | value | headerCount varint |
    headers: (keyLength varint, key, valueLength varint, value)*
Varints are written and read exactly as Java's ByteUtils does (see below): the
one place in kafkapy that reads record varints outside the native validator.
With compression, everything after recordsCount is one compressed block:
gzip stream, snappy (xerial-framed or raw block), LZ4 frame, zstd frame.
"""
from __future__ import annotations

import gzip
import struct
import zlib
from typing import NamedTuple, Sequence

import lz4.block
import lz4.frame
import snappy
import zstandard

from kafkapy.native import codecs
from kafkapy.protocol.errors import ErrorCode
from kafkapy.records.batch import (ATTR_CONTROL, ATTR_TIMESTAMP_TYPE, ATTR_TRANSACTIONAL,
                                   COMPRESSION_GZIP, COMPRESSION_LZ4, COMPRESSION_NONE,
                                   COMPRESSION_SNAPPY, COMPRESSION_ZSTD, CRC_START,
                                   HEADER_SIZE, HEADER_STRUCT, LOG_OVERHEAD, RecordError,
                                   crc32c, read_header)

Header = tuple[str, bytes | None]


class Record(NamedTuple):
    offset: int
    timestamp: int
    key: bytes | None
    value: bytes | None
    headers: list[Header]


# ---------------------------------------------------------------- varints
#
# As Java's ByteUtils writes and reads them.  A value is written from a Java long: the
# Python int wraps to 64 bits first (a timestamp delta of 2^63 is Long.MIN_VALUE, written
# in 10 bytes), so the bytes equal writeVarlong's, and writeVarint's for an int.  An int
# (readVarint) takes at most 5 bytes and a long (readVarlong) at most 10; the bits beyond
# 32 / 64 are dropped; a last byte with its high bit set is Java's IllegalArgumentException
# ("Varint is too long ...").

_M32 = (1 << 32) - 1
_M64 = (1 << 64) - 1


def wrap64(value: int) -> int:
    """``value`` as a Java long (two's complement, 64 bits)."""
    value &= _M64
    return value - (1 << 64) if value >> 63 else value


def encode_varint(value: int, out: bytearray) -> None:
    """Append a zig-zag varint/varlong (Java's ByteUtils.writeVarlong of ``value`` as a long)."""
    v = wrap64(value)
    v = ((v << 1) ^ (v >> 63)) & _M64
    while v >= 0x80:
        out.append((v & 0x7F) | 0x80)
        v >>= 7
    out.append(v)


def _unsigned(buf, pos: int, end: int, max_bytes: int) -> tuple[int, int]:
    """The raw 7-bit groups of at most ``max_bytes`` bytes; (value, position after)."""
    raw = shift = 0
    for _ in range(max_bytes):
        if pos >= end:
            raise RecordError(ErrorCode.CORRUPT_MESSAGE, "varint runs past the end")
        b = buf[pos]
        pos += 1
        raw |= (b & 0x7F) << shift
        shift += 7
        if not b & 0x80:
            return raw, pos
    if max_bytes == 5:
        raise RecordError(ErrorCode.CORRUPT_MESSAGE,
                          "Varint is too long, the most significant bit in the 5th byte is set, "
                          f"converted value: {raw & _M32:x}")
    raise RecordError(ErrorCode.CORRUPT_MESSAGE,
                      "Varlong is too long, most significant bit in the 10th byte is set, "
                      f"converted value: {raw & _M64:x}")


def decode_varint(buf, pos: int, end: int | None = None) -> tuple[int, int]:
    """Read a zig-zag int varint at ``pos`` as Java's ByteUtils.readVarint (bytes up to
    ``end``, default the end of ``buf``); returns (value, new_pos)."""
    raw, pos = _unsigned(buf, pos, len(buf) if end is None else end, 5)
    raw &= _M32
    return (raw >> 1) ^ -(raw & 1), pos


def decode_varlong(buf, pos: int, end: int | None = None) -> tuple[int, int]:
    """Read a zig-zag long varint at ``pos`` as Java's ByteUtils.readVarlong (bytes up to
    ``end``, default the end of ``buf``); returns (value, new_pos)."""
    raw, pos = _unsigned(buf, pos, len(buf) if end is None else end, 10)
    raw &= _M64
    return (raw >> 1) ^ -(raw & 1), pos


# ---------------------------------------------------------------- codecs

_XERIAL_MAGIC = b"\x82SNAPPY\x00"


def compress(codec: int, data: bytes) -> bytes:
    if codec == COMPRESSION_NONE:
        return bytes(data)
    if codec == COMPRESSION_GZIP:
        return _gzip(data)
    if codec == COMPRESSION_SNAPPY:
        out = bytearray(_XERIAL_MAGIC)
        out += struct.pack(">ii", 1, 1)
        for i in range(0, len(data), 32 * 1024):
            block = snappy.compress(bytes(data[i:i + 32 * 1024]))
            out += struct.pack(">i", len(block))
            out += block
        return bytes(out)
    if codec == COMPRESSION_LZ4:
        return _lz4(data)
    if codec == COMPRESSION_ZSTD:
        return zstandard.ZstdCompressor().compress(bytes(data))
    raise RecordError(ErrorCode.UNSUPPORTED_COMPRESSION_TYPE, f"unknown codec {codec}")


# Java's GZIPOutputStream header: no flags, mtime 0, no extra flags, OS unknown (255).
_GZIP_HEADER = b"\x1f\x8b\x08\x00\x00\x00\x00\x00\x00\xff"


def _gzip(data) -> bytes:
    """A gzip stream as Kafka (Java, default level 6) writes it, so batches are byte-identical."""
    deflate = zlib.compressobj(6, zlib.DEFLATED, -15)
    body = deflate.compress(bytes(data)) + deflate.flush()
    return _GZIP_HEADER + body + struct.pack("<II", zlib.crc32(data), len(data) & 0xFFFFFFFF)


# KafkaLZ4BlockOutputStream's frame header: independent blocks, no checksums, 64 KB blocks.
_LZ4_HEADER = bytes.fromhex("04224d18604082")
_LZ4_BLOCK = 64 * 1024
_LZ4_UNCOMPRESSED = 0x80000000


def _lz4(data) -> bytes:
    """An LZ4 frame as Kafka 3.8+ writes it (LZ4HC level 9; a block that does not
    shrink is stored uncompressed), so batches are byte-identical."""
    out = bytearray(_LZ4_HEADER)
    data = bytes(data)
    for i in range(0, len(data), _LZ4_BLOCK):
        block = data[i:i + _LZ4_BLOCK]
        packed = lz4.block.compress(block, mode="high_compression", compression=9,
                                    store_size=False)
        if len(packed) >= len(block):
            out += struct.pack("<I", len(block) | _LZ4_UNCOMPRESSED) + block
        else:
            out += struct.pack("<I", len(packed)) + packed
    out += b"\x00\x00\x00\x00"
    return bytes(out)


_NO_LIMIT = 1 << 62   # stored batches were size-checked when they were appended


def decompress(codec: int, data) -> bytes:
    data = bytes(data)
    try:
        if codec == COMPRESSION_NONE:
            return data
        if codec == COMPRESSION_GZIP:
            return gzip.decompress(data)
        if codec == COMPRESSION_SNAPPY:  # raw or xerial-framed: the validator's reader
            return codecs.decompress(codec, data, _NO_LIMIT)
        if codec == COMPRESSION_LZ4:
            return lz4.frame.decompress(data)
        if codec == COMPRESSION_ZSTD:
            return zstandard.ZstdDecompressor().decompressobj().decompress(data)
    except RecordError:
        raise
    except Exception as e:  # codec libraries raise assorted types
        raise RecordError(ErrorCode.CORRUPT_MESSAGE, f"cannot decompress: {e}") from e
    raise RecordError(ErrorCode.UNSUPPORTED_COMPRESSION_TYPE, f"unknown codec {codec}")


# ---------------------------------------------------------------- build

def _encode_record(out: bytearray, offset_delta: int, timestamp_delta: int,
                   key: bytes | None, value: bytes | None, headers: Sequence[Header]) -> None:
    body = bytearray(b"\x00")  # attributes
    encode_varint(timestamp_delta, body)
    encode_varint(offset_delta, body)
    for blob in (key, value):
        if blob is None:
            encode_varint(-1, body)
        else:
            encode_varint(len(blob), body)
            body += blob
    encode_varint(len(headers), body)
    for hkey, hval in headers:
        kb = hkey.encode() if isinstance(hkey, str) else bytes(hkey)
        encode_varint(len(kb), body)
        body += kb
        if hval is None:
            encode_varint(-1, body)
        else:
            encode_varint(len(hval), body)
            body += hval
    encode_varint(len(body), out)
    out += body


def build_batch(records: Sequence[tuple], base_offset: int = 0, compression: int = 0,
                producer_id: int = -1, producer_epoch: int = -1, base_sequence: int = -1,
                is_transactional: bool = False, is_control: bool = False,
                partition_leader_epoch: int = -1, timestamp_type: int = 0) -> bytes:
    """Encode one v2 batch from ``(key, value, headers, timestamp)`` tuples."""
    if not records:
        raise ValueError("a batch needs at least one record")
    timestamps = [r[3] for r in records]
    base_ts = timestamps[0]
    max_ts = max(timestamps)
    body = bytearray()
    for i, (key, value, headers, ts) in enumerate(records):
        _encode_record(body, i, ts - base_ts, key, value, headers or ())
    payload = compress(compression, bytes(body))
    attributes = compression & 7
    if timestamp_type:
        attributes |= ATTR_TIMESTAMP_TYPE
    if is_transactional:
        attributes |= ATTR_TRANSACTIONAL
    if is_control:
        attributes |= ATTR_CONTROL
    total = HEADER_SIZE + len(payload)
    buf = bytearray(total)
    HEADER_STRUCT.pack_into(buf, 0, base_offset, total - LOG_OVERHEAD, partition_leader_epoch,
                            2, 0, attributes, len(records) - 1, base_ts, max_ts, producer_id,
                            producer_epoch, base_sequence, len(records))
    buf[HEADER_SIZE:] = payload
    struct.pack_into(">I", buf, 17, crc32c(memoryview(buf)[CRC_START:]))
    return bytes(buf)


CONTROL_ABORT = 0
CONTROL_COMMIT = 1


def build_control_batch(control_type: int, coordinator_epoch: int, producer_id: int,
                        producer_epoch: int, timestamp: int, base_offset: int = 0,
                        partition_leader_epoch: int = -1) -> bytes:
    """A transaction marker batch (ABORT=0 / COMMIT=1), as the coordinator writes it."""
    key = struct.pack(">hh", 0, control_type)
    value = struct.pack(">hi", 0, coordinator_epoch)
    return build_batch([(key, value, (), timestamp)], base_offset=base_offset,
                       producer_id=producer_id, producer_epoch=producer_epoch,
                       base_sequence=-1, is_transactional=True, is_control=True,
                       partition_leader_epoch=partition_leader_epoch)


# ---------------------------------------------------------------- decode

def _read_blob(buf, pos: int) -> tuple[bytes | None, int]:
    n, pos = decode_varint(buf, pos)
    if n < 0:
        return None, pos
    if pos + n > len(buf):
        raise RecordError(ErrorCode.CORRUPT_MESSAGE, "record field runs past the end")
    return bytes(buf[pos:pos + n]), pos + n


def decode_records(batch_bytes, pos: int = 0) -> list[Record]:
    """Decode every record of the v2 batch at ``pos`` (CRC not checked here); timestamps
    and offsets are Java's sums (base + delta, wrapping at 64 bits)."""
    mv = memoryview(batch_bytes)
    h = read_header(mv, pos)
    if h.magic != 2:
        raise RecordError(ErrorCode.UNSUPPORTED_FOR_MESSAGE_FORMAT, f"magic {h.magic}")
    end = pos + h.size
    if end > len(mv):
        raise RecordError(ErrorCode.CORRUPT_MESSAGE, "batch runs past the end of the buffer")
    data = decompress(h.compression, mv[pos + HEADER_SIZE:end])
    log_append = h.timestamp_type == 1
    out: list[Record] = []
    p = 0
    for _ in range(h.records_count):
        length, p = decode_varint(data, p)
        start = p
        p += 1  # attributes
        ts_delta, p = decode_varlong(data, p)
        off_delta, p = decode_varint(data, p)
        key, p = _read_blob(data, p)
        value, p = _read_blob(data, p)
        nh, p = decode_varint(data, p)
        if nh < 0:
            raise RecordError(ErrorCode.CORRUPT_MESSAGE, f"negative header count {nh}")
        headers: list[Header] = []
        for _h in range(nh):
            hk, p = _read_blob(data, p)
            if hk is None:
                raise RecordError(ErrorCode.CORRUPT_MESSAGE, "null header key")
            hv, p = _read_blob(data, p)
            headers.append((hk.decode("utf-8", "replace"), hv))
        if p - start != length:
            raise RecordError(ErrorCode.CORRUPT_MESSAGE,
                              f"record length {length} but {p - start} bytes read")
        ts = h.max_timestamp if log_append else wrap64(h.base_timestamp + ts_delta)
        out.append(Record(wrap64(h.base_offset + off_delta), ts, key, value, headers))
    return out
