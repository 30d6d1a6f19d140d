"""Down-conversion of stored v2 record batches to magic 0/1 message sets (Fetch v0-v3).

Fetch v0-v1 read magic 0 and v2-v3 magic 1; the log holds magic 2 only, so such a
fetch always converts, as Kafka 3.9 does (KafkaApis, RecordsUtil.downConvert,
LazyDownConversionRecords).  This is off the hot path: records are decoded.

Per batch (RecordsUtil.downConvert):
- control batches (transaction markers) are dropped;
- a zstd batch cannot be converted (UNSUPPORTED_COMPRESSION_TYPE);
- an uncompressed batch keeps only records at or after the fetch offset, one
  message each; a compressed batch keeps all its records in one wrapper message
  compressed with the same codec, whose offset is the last inner offset (inner
  offsets absolute in magic 0, relative to the first record in magic 1);
- headers are dropped; with LOG_APPEND_TIME every message carries the batch's
  max timestamp and the timestamp-type attribute bit (magic 1).

Records are read as Java reads them (DefaultRecord): a timestamp is ``baseTimestamp +
timestampDelta`` and an offset ``baseOffset + offsetDelta``, wrapping at 64 bits; an int
varint takes at most 5 bytes and a long one 10, the bits beyond 32/64 dropped (the readers
of ``record``).  Kafka's MemoryRecordsBuilder then refuses (IllegalArgumentException) a
negative timestamp other than -1 and an offset not above the previous one in the batch,
so such a stored batch (the validator takes them: Java's arithmetic wraps there too)
cannot be converted: ``DownConversionError``.  In the first chunk Kafka answers the whole
Fetch with UNKNOWN_SERVER_ERROR in every partition; in a later chunk it is already
sending the answer and closes the connection (``after_first_chunk``).  Stored bytes that
do not decode (only a damaged log) fail the same way, as CORRUPT_MESSAGE.

Message (magic 0/1): offset int64 | size int32 | crc uint32 (CRC-32 of the rest) |
magic int8 | attributes int8 (codec in bits 0-2, timestamp type bit 3) |
[timestamp int64, magic 1] | key bytes32 | value bytes32.

The answer's size (LazyDownConversionRecords): the larger of the stored bytes and
the first non-empty converted batch.  Converted chunks (the first batch, then
groups of up to 128 KiB of stored batches, starting one batch after the first
stored one, as Kafka iterates) are cut at that size, and any room left is filled
with overflow bytes -- offset -1 and a length beyond the end -- that clients
ignore as a partial message.  A zstd batch met after the first chunk ends the
conversion there (overflow bytes follow).  Stored bytes with no convertible batch
give 12 overflow bytes, so a client sees there was something it cannot read.

Compression mirrors Kafka's streams: gzip at level 6 with Java's header, snappy
xerial-framed in 32 KiB blocks, LZ4 frames of independent 64 KiB blocks without
content size or checksum (magic 0 with Kafka's historical header checksum, taken
over the frame magic too).
"""
from __future__ import annotations

import struct
import zlib
from typing import NamedTuple

import lz4.block

from kafkapy.protocol.errors import ErrorCode, KafkaError
from kafkapy.records.batch import (COMPRESSION_GZIP, COMPRESSION_LZ4, COMPRESSION_NONE,
                                   COMPRESSION_SNAPPY, COMPRESSION_ZSTD, HEADER_SIZE,
                                   BatchHeader, RecordError, iter_headers)
from kafkapy.records.record import compress, decode_varint, decode_varlong, decompress, wrap64

MAGIC_V0 = 0
MAGIC_V1 = 1
MAX_READ_SIZE = 128 * 1024  # LazyDownConversionRecordsSend.MAX_READ_SIZE
_MIN_OVERFLOW_LENGTH = 12  # Records.LOG_OVERHEAD
_RECORD_BATCH_OVERHEAD = 61
_ATTR_LOG_APPEND_TIME = 0x08
_LOG_APPEND_TIME = 1
_NO_TIMESTAMP = -1
_LZ4_MAGIC = struct.pack("<I", 0x184D2204)
_LZ4_FLG = 0x60  # version 01, independent blocks, no checksums, no content size
_LZ4_BD = 0x40  # 64 KiB blocks
_LZ4_BLOCK = 64 * 1024
_LZ4_INCOMPRESSIBLE = 0x80000000
# Java's GZIPOutputStream header (JDK 16+: no mtime, no flags, OS 255 "unknown").
_GZIP_HEADER = bytes([0x1F, 0x8B, 8, 0, 0, 0, 0, 0, 0, 0xFF])


class DownConversionError(KafkaError):
    """A stored batch Kafka's down-conversion throws on (see the module docstring).

    ``after_first_chunk``: False when the first converted chunk failed (Kafka answers the
    Fetch with ``code`` in every partition), True when a later one did (Kafka closes the
    connection part-way through the answer).
    """

    def __init__(self, code: int, message: str, after_first_chunk: bool = False) -> None:
        super().__init__(code, message)
        self.after_first_chunk = after_first_chunk


class _Record(NamedTuple):
    offset: int
    timestamp: int
    key: bytes | None
    value: bytes | None


def magic_for_fetch_version(version: int) -> int | None:
    """The message format a Fetch version reads, when it is older than v2."""
    if version <= 1:
        return MAGIC_V0
    if version <= 3:
        return MAGIC_V1
    return None


def down_convert(data: bytes, to_magic: int, first_offset: int) -> bytes:
    """Kafka's lazily down-converted records for ``data`` (stored batches), as sent.

    Raises KafkaError(UNSUPPORTED_COMPRESSION_TYPE) when the first batch to convert is
    zstd, DownConversionError when a batch cannot be converted.
    """
    batches = list(iter_headers(data))
    first = b""
    for header in batches:
        first = _convert_group(data, [header], to_magic, first_offset)
        if first:
            break
    if not first:
        return _overflow(_MIN_OVERFLOW_LENGTH) if batches else b""
    size = max(len(data), len(first))
    out = bytearray(first)
    # Kafka resumes its batch iterator one batch after the start, whichever batch
    # gave the first chunk (usually the same one).
    for group in _groups(batches[1:]):
        if len(out) >= size:
            break
        try:
            out += _convert_group(data, group, to_magic, first_offset)
        except DownConversionError as err:
            raise DownConversionError(err.code, err.message, after_first_chunk=True) from None
        except KafkaError:
            break  # a zstd batch: the rest becomes overflow bytes
    del out[size:]
    return bytes(out) + _overflow(size - len(out))


def _groups(batches: list[BatchHeader]):
    """Stored batches in runs of up to MAX_READ_SIZE bytes (at least one each)."""
    i = 0
    while i < len(batches):
        group = [batches[i]]
        total = batches[i].size
        i += 1
        while i < len(batches) and total + batches[i].size <= MAX_READ_SIZE:
            total += batches[i].size
            group.append(batches[i])
            i += 1
        yield group


def _overflow(remaining: int) -> bytes:
    """Filler that clients read as a message running past the end of the answer."""
    out = bytearray()
    while remaining > 0:
        length = max(_MIN_OVERFLOW_LENGTH, min(remaining + 1, MAX_READ_SIZE))
        chunk = struct.pack(">qi", -1, max(remaining + 1, _RECORD_BATCH_OVERHEAD))
        chunk = (chunk + bytes(length - len(chunk)))[:min(length, remaining)]
        out += chunk
        remaining -= len(chunk)
    return bytes(out)


def _convert_group(data: bytes, group: list[BatchHeader], to_magic: int,
                   first_offset: int) -> bytes:
    """RecordsUtil.downConvert over some batches: every batch is read (a zstd one raises
    KafkaError) before any is converted (a refused one raises DownConversionError)."""
    kept: list[tuple[BatchHeader, list[_Record] | None]] = []
    for header in group:
        if header.is_control:
            continue
        if header.compression == COMPRESSION_ZSTD:
            raise KafkaError(ErrorCode.UNSUPPORTED_COMPRESSION_TYPE,
                             "Down-conversion of zstandard-compressed batches is not supported")
        if header.magic <= to_magic:
            kept.append((header, None))
            continue
        records = [r for r in _records(data, header)
                   if header.compression != COMPRESSION_NONE or r.offset >= first_offset]
        if records:
            kept.append((header, records))
    return b"".join(data[h.position:h.position + h.size] if records is None
                    else _convert_batch(h, records, to_magic) for h, records in kept)


def _convert_batch(header: BatchHeader, records: list[_Record], to_magic: int) -> bytes:
    _check_appendable(records)
    codec = header.compression
    log_append = header.timestamp_type == _LOG_APPEND_TIME
    attributes = _ATTR_LOG_APPEND_TIME if log_append and to_magic > MAGIC_V0 else 0
    timestamps = [r.timestamp for r in records]
    if codec == COMPRESSION_NONE:
        return b"".join(_message(to_magic, r.offset, ts, r.key, r.value, attributes)
                        for r, ts in zip(records, timestamps))
    return _wrapper(records, timestamps, to_magic, codec, attributes,
                    header.max_timestamp if log_append else _max_timestamp(timestamps, to_magic))


def _check_appendable(records: list[_Record]) -> None:
    """MemoryRecordsBuilder.appendWithOffset's refusals, in its order."""
    last = None
    for r in records:
        if last is not None and r.offset <= last:
            raise DownConversionError(ErrorCode.UNKNOWN,
                                      f"Illegal offset {r.offset} following previous offset "
                                      f"{last} (Offsets must increase monotonically).")
        if r.timestamp < 0 and r.timestamp != _NO_TIMESTAMP:
            raise DownConversionError(ErrorCode.UNKNOWN,
                                      f"Invalid negative timestamp {r.timestamp}")
        last = r.offset


def _records(data: bytes, header: BatchHeader) -> list[_Record]:
    """The batch's records as Kafka's DefaultRecordBatch iterator reads them (headers
    skipped); a timestamp is the batch's max one under LOG_APPEND_TIME."""
    start = header.position + HEADER_SIZE
    try:
        payload = decompress(header.compression,
                             memoryview(data)[start:header.position + header.size])
    except RecordError as err:
        raise DownConversionError(ErrorCode.CORRUPT_MESSAGE, err.message or str(err)) from None
    try:
        return _parse(payload, header)
    except RecordError:  # a varint too long or running past its record
        raise _corrupt() from None


def _parse(payload: bytes, header: BatchHeader) -> list[_Record]:
    log_append = header.timestamp_type == _LOG_APPEND_TIME
    out = []
    p, n = 0, len(payload)
    for _ in range(header.records_count):
        length, p = decode_varint(payload, p, n)
        end = p + length
        if length <= 0 or end > n:
            raise _corrupt()
        p += 1  # attributes
        ts_delta, p = decode_varlong(payload, p, end)
        offset_delta, p = decode_varint(payload, p, end)
        key, p = _blob(payload, p, end)
        value, p = _blob(payload, p, end)
        count, p = decode_varint(payload, p, end)
        if count < 0:
            raise _corrupt()
        for _h in range(count):
            key_size, p = decode_varint(payload, p, end)
            if key_size < 0 or key_size > end - p:
                raise _corrupt()
            _, p = _blob(payload, p + key_size, end)
        if p != end:
            raise _corrupt()
        timestamp = header.max_timestamp if log_append else wrap64(
            header.base_timestamp + ts_delta)
        out.append(_Record(wrap64(header.base_offset + offset_delta), timestamp, key, value))
    return out


def _corrupt() -> DownConversionError:
    return DownConversionError(ErrorCode.CORRUPT_MESSAGE, "Found invalid record structure")


def _blob(buf, p: int, end: int) -> tuple[bytes | None, int]:
    size, p = decode_varint(buf, p, end)
    if size < 0:
        return None, p
    if size > end - p:
        raise _corrupt()
    return bytes(buf[p:p + size]), p + size


def _max_timestamp(timestamps: list[int], magic: int) -> int:
    # MemoryRecordsBuilder tracks it from -1, and only for magic 1.
    return max([_NO_TIMESTAMP] + timestamps) if magic > MAGIC_V0 else _NO_TIMESTAMP


def _wrapper(records: list[_Record], timestamps: list[int], magic: int, codec: int,
             attributes: int, wrapper_timestamp: int) -> bytes:
    """One compressed message holding the batch's records as inner messages."""
    base = records[0].offset
    inner = b"".join(
        _message(magic, r.offset - base if magic > MAGIC_V0 else r.offset, ts, r.key,
                 r.value, attributes)
        for r, ts in zip(records, timestamps))
    payload = _compress(codec, magic, inner)
    return _message(magic, records[-1].offset, wrapper_timestamp, None, payload,
                    attributes | codec)


def _message(magic: int, offset: int, timestamp: int, key: bytes | None,
             value: bytes | None, attributes: int) -> bytes:
    body = bytearray(struct.pack(">bb", magic, attributes))
    if magic > MAGIC_V0:
        body += struct.pack(">q", timestamp)
    for blob in (key, value):
        if blob is None:
            body += struct.pack(">i", -1)
        else:
            body += struct.pack(">i", len(blob))
            body += blob
    return struct.pack(">qiI", offset, 4 + len(body), zlib.crc32(body)) + bytes(body)


def _compress(codec: int, magic: int, data: bytes) -> bytes:
    if codec == COMPRESSION_GZIP:
        deflater = zlib.compressobj(6, zlib.DEFLATED, -15, 8)
        body = deflater.compress(data) + deflater.flush()
        return _GZIP_HEADER + body + struct.pack("<II", zlib.crc32(data), len(data) & 0xFFFFFFFF)
    if codec == COMPRESSION_LZ4:
        return _lz4_frame(data, broken_checksum=magic == MAGIC_V0)
    if codec == COMPRESSION_SNAPPY:
        return compress(COMPRESSION_SNAPPY, data)
    raise KafkaError(ErrorCode.UNSUPPORTED_COMPRESSION_TYPE, f"codec {codec}")


def _lz4_frame(data: bytes, broken_checksum: bool) -> bytes:
    descriptor = bytes([_LZ4_FLG, _LZ4_BD])
    hashed = _LZ4_MAGIC + descriptor if broken_checksum else descriptor
    out = bytearray(_LZ4_MAGIC + descriptor + bytes([(_xxh32(hashed) >> 8) & 0xFF]))
    for start in range(0, len(data), _LZ4_BLOCK):
        block = data[start:start + _LZ4_BLOCK]
        packed = lz4.block.compress(block, store_size=False)
        if len(packed) >= len(block):
            out += struct.pack("<I", len(block) | _LZ4_INCOMPRESSIBLE) + block
        else:
            out += struct.pack("<I", len(packed)) + packed
    out += struct.pack("<I", 0)  # end mark
    return bytes(out)


_P1, _P2, _P3, _P4, _P5 = 2654435761, 2246822519, 3266489917, 668265263, 374761393
_M32 = 0xFFFFFFFF


def _rotl(x: int, r: int) -> int:
    return ((x << r) | (x >> (32 - r))) & _M32


def _xxh32(data: bytes) -> int:
    """XXH32 with seed 0 of fewer than 16 bytes (an LZ4 frame descriptor)."""
    assert len(data) < 16
    h = (_P5 + len(data)) & _M32
    i = 0
    while i + 4 <= len(data):
        h = (h + struct.unpack_from("<I", data, i)[0] * _P3) & _M32
        h = (_rotl(h, 17) * _P4) & _M32
        i += 4
    for b in data[i:]:
        h = (h + b * _P5) & _M32
        h = (_rotl(h, 11) * _P1) & _M32
    h ^= h >> 15
    h = (h * _P2) & _M32
    h ^= h >> 13
    h = (h * _P3) & _M32
    return h ^ (h >> 16)
