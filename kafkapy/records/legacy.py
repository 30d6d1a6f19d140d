"""Magic 0/1 message sets (Produce v0-2) and their up-conversion to one v2 batch.

Kafka 3.x stores only magic 2; a leader that receives an old message set
checks it and rebuilds it as one v2 batch before the offsets are assigned
(UnifiedLog.analyzeAndValidateRecords, then LogValidator
convertAndAssignOffsetsNonCompressed / validateMessagesAndAssignOffsetsCompressed).
This module does the same; it is only reached by old producers, so it decodes
every message in Python.

Message layout (big-endian; Kafka's LegacyRecord):

    0 offset int64   8 messageSize int32   12 crc uint32 (CRC-32 of bytes 16..end)
    16 magic int8    17 attributes int8    [18 timestamp int64, magic 1 only]
    then key (int32 length, -1 = null, bytes) and value (likewise)

attributes: bits 0-2 codec (1 gzip, 2 snappy, 3 lz4), bit 3 LogAppendTime
(magic 1).  A compressed message is a wrapper whose value is a compressed
message set of inner messages (magic 1: inner offsets relative, the wrapper
carries the last absolute one).  Magic 0 LZ4 wrappers carry Kafka 0.8's wrong
frame-header checksum, which is ignored here as Kafka ignores it.

Kafka's rules kept here, in its order: every outer message is checked for size
(MESSAGE_TOO_LARGE) and CRC (CORRUPT_MESSAGE) first; then all must share the
first one's magic (INVALID_RECORD); a compressed set must be a single wrapper
(INVALID_RECORD); a bad inner CRC is CORRUPT_MESSAGE.  Then each record is
checked as LogValidator.validateRecord does: an inner message with another
magic or a codec of their own, or a keyless record of a compacted topic
(INVALID_RECORD), else its timestamp: out of the topic's
message.timestamp.before/after.max.ms range, or LogAppendTime sent to a
LogAppendTime topic (INVALID_TIMESTAMP); then Kafka's MemoryRecordsBuilder
refuses a negative timestamp other than -1 (IllegalArgumentException, answered
UNKNOWN_SERVER_ERROR) and nothing is stored.  Their order differs by shape, as
in Kafka: in an uncompressed set each message is a batch of its own, checked and
appended in turn, so the first message with any problem decides (its record
error reported with index 0); in a compressed set every record is checked first
(all record errors listed, INVALID_TIMESTAMP winning), and only then are
negative timestamps refused.

The v2 batch gets the records' keys, values and timestamps (-1 for magic 0;
the wrapper's for a LogAppendTime magic-1 wrapper; a timestamp delta wraps as a
Java long, so [-1, Long.MAX_VALUE] is stored as such), no headers, no producer
id, and the topic's codec (the source codec under compression.type=producer).
"""
from __future__ import annotations

import struct
import zlib
from typing import NamedTuple

from kafkapy.native import CREATE_TIME, LOG_APPEND_TIME, LONG_MAX, validate_batch
from kafkapy.protocol.errors import ErrorCode
from kafkapy.records.batch import LOG_OVERHEAD, RecordError, check_stored_batch, next_entry_size
from kafkapy.records.record import build_batch, decompress
from kafkapy.records.validation import keyless_error, raise_record_errors

_HEAD = struct.Struct(">qiIbb")  # offset, messageSize, crc, magic, attributes
_INT32 = struct.Struct(">i")
_INT64 = struct.Struct(">q")
_MAGIC_AT = 16
_ATTR_CODEC = 0x07
_ATTR_LOG_APPEND_TIME = 0x08
_CODEC_LZ4 = 3
_CODEC_ZSTD = 4
_INVALID_TIMESTAMP = "One or more records have been rejected due to invalid timestamp"

TARGET_CODECS = {"uncompressed": 0, "gzip": 1, "snappy": 2, "lz4": 3, "zstd": 4}


class Message(NamedTuple):
    offset: int
    magic: int
    attributes: int
    timestamp: int
    key: bytes | None
    value: bytes | None
    crc: int
    crc_ok: bool


def first_magic(buf) -> int | None:
    """Magic of the first whole entry by Kafka's iteration rules; None if there is none."""
    mv = buf if isinstance(buf, memoryview) else memoryview(buf)
    if not next_entry_size(mv, 0, len(mv)):
        return None
    return mv[_MAGIC_AT]


def parse_message(mv, pos: int, size: int) -> Message:
    """Decode the legacy message of ``size`` bytes (log overhead included) at ``pos``."""
    end = pos + size
    offset, _, crc, magic, attributes = _HEAD.unpack_from(mv, pos)
    p = pos + 18
    timestamp = -1
    if magic == 1:
        timestamp = _INT64.unpack_from(mv, p)[0] if p + 8 <= end else _malformed(size)
        p += 8
    key, p = _read_bytes(mv, p, end)
    value, p = _read_bytes(mv, p, end)
    crc_ok = zlib.crc32(mv[pos + _MAGIC_AT:end]) == crc
    return Message(offset, magic, attributes, timestamp, key, value, crc, crc_ok)


def _read_bytes(mv, p: int, end: int) -> tuple[bytes | None, int]:
    if p + 4 > end:
        _malformed(end - p)
    n = _INT32.unpack_from(mv, p)[0]
    p += 4
    if n < 0:
        return None, p
    if p + n > end:
        _malformed(n)
    return bytes(mv[p:p + n]), p + n


def _malformed(size: int):
    raise RecordError(ErrorCode.CORRUPT_MESSAGE,
                      f"Record is corrupt (a field of {size} bytes runs past the message)")


def up_convert(buf, max_message_bytes: int, compression_type: str, compacted: bool,
               topic_partition: str, *, now_ms: int = 0, timestamp_type: str = CREATE_TIME,
               before_max_ms: int = LONG_MAX, after_max_ms: int = LONG_MAX) -> bytes:
    """Check a magic 0/1 message set and return it as one v2 batch (base offset 0).

    ``now_ms`` and the topic's message.timestamp.type / .before.max.ms / .after.max.ms
    are for the timestamp checks.  Raises ``RecordError`` with what Kafka answers.
    """
    mv = buf if isinstance(buf, memoryview) else memoryview(buf)
    outer = _outer_messages(mv, max_message_bytes)
    magic = outer[0].magic
    for m in outer:
        if m.magic != magic:
            raise RecordError(ErrorCode.INVALID_RECORD,
                              f"Batch magic {m.magic} is not the same as the first batch's magic "
                              f"byte {magic} in topic partition {topic_partition}")
    codecs = [m.attributes & _ATTR_CODEC for m in outer]
    source = next((c for c in reversed(codecs) if c), 0)
    if source and len(outer) > 1:
        raise RecordError(ErrorCode.INVALID_RECORD,
                          "Compressed outer record has more than one batch")
    if source:
        wrapper = outer[0]
        messages = _inner_messages(wrapper)
        log_append = bool(wrapper.magic == 1 and wrapper.attributes & _ATTR_LOG_APPEND_TIME)
        records = [(m.key, m.value, (), wrapper.timestamp if log_append else m.timestamp)
                   for m in messages]
        errors = _inner_errors(wrapper, messages, compacted, topic_partition)
        log_append_batches = [log_append] * len(messages)
    else:
        records = [(m.key, m.value, (), m.timestamp) for m in outer]
        errors = {i: keyless_error(i, topic_partition)[1]
                  for i, m in enumerate(outer) if compacted and m.key is None}
        log_append_batches = [bool(m.magic == 1 and m.attributes & _ATTR_LOG_APPEND_TIME)
                              for m in outer]
    target = TARGET_CODECS.get(compression_type, source)
    batch = build_batch(records, compression=target)
    timestamp_errors = _timestamp_errors(batch, log_append_batches, topic_partition, now_ms,
                                         timestamp_type, before_max_ms, after_max_ms)
    if source:
        _refuse_wrapper(records, errors, timestamp_errors)
    else:
        _refuse_first_message(records, errors, timestamp_errors)
    return batch


def _timestamp_errors(batch: bytes, log_append_batches: list[bool], topic_partition: str,
                      now_ms: int, timestamp_type: str, before_max_ms: int,
                      after_max_ms: int) -> dict[int, str]:
    """Kafka's validateTimestamp per record: out of the topic's range (CreateTime, the
    native walk over the converted batch), or sent as LogAppendTime to a LogAppendTime
    topic; by record index."""
    verdict = validate_batch(batch, topic_partition=topic_partition, now_ms=now_ms,
                             timestamp_type=timestamp_type, before_max_ms=before_max_ms,
                             after_max_ms=after_max_ms)
    if not verdict.ok and not verdict.record_errors:  # our own batch always frames
        raise RecordError(verdict.error_code, verdict.error_message)
    errors = dict(verdict.record_errors)
    if timestamp_type == LOG_APPEND_TIME:
        for index, log_append in enumerate(log_append_batches):
            if log_append:
                errors[index] = ("Invalid timestamp type in message with batch index "
                                 f"{index}. Producer should not set timestamp type to "
                                 "LogAppendTime.")
    return errors


def _refuse_first_message(records: list[tuple], errors: dict[int, str],
                          timestamp_errors: dict[int, str]) -> None:
    """An uncompressed set: each message is a batch of its own, checked (key, then
    timestamp) and appended to Kafka's MemoryRecordsBuilder in turn, so the first
    message with a problem decides, reported as batch index 0; the builder refuses a
    negative timestamp other than -1 (IllegalArgumentException: UNKNOWN_SERVER_ERROR)."""
    for index, record in enumerate(records):
        if index in errors:
            raise_record_errors([(0, errors[index])])
        if index in timestamp_errors:
            raise RecordError(ErrorCode.INVALID_TIMESTAMP, _INVALID_TIMESTAMP,
                              record_errors=[(0, timestamp_errors[index])])
        _check_appendable(record[3])


def _refuse_wrapper(records: list[tuple], errors: dict[int, str],
                    timestamp_errors: dict[int, str]) -> None:
    """A compressed set: every inner record is checked first (a record's own problem
    wins over its timestamp; INVALID_TIMESTAMP wins over INVALID_RECORD, Kafka's
    processRecordErrors); then the records go to MemoryRecordsBuilder, which refuses
    a negative timestamp other than -1."""
    listed = dict(timestamp_errors)
    listed.update(errors)
    if listed:
        record_errors = sorted(listed.items())
        if any(index not in errors for index in timestamp_errors):
            raise RecordError(ErrorCode.INVALID_TIMESTAMP, _INVALID_TIMESTAMP,
                              record_errors=record_errors)
        raise_record_errors(record_errors)
    for record in records:
        _check_appendable(record[3])


def _check_appendable(timestamp: int) -> None:
    if timestamp < 0 and timestamp != -1:
        raise RecordError(ErrorCode.UNKNOWN, f"Invalid negative timestamp {timestamp}")


def _outer_messages(mv, max_message_bytes: int) -> list[Message]:
    """Kafka's analyzeAndValidateRecords over the outer messages: size, then CRC."""
    n = len(mv)
    out = []
    pos = 0
    while size := next_entry_size(mv, pos, n):
        if size > max_message_bytes:
            raise RecordError(ErrorCode.MESSAGE_TOO_LARGE,
                              f"The record batch size {size} bytes exceeds the maximum "
                              f"allowed {max_message_bytes} (max.message.bytes)")
        if mv[pos + _MAGIC_AT] == 2:
            # A v2 batch among old messages: checked as one, refused below for its magic.
            check_stored_batch(mv, pos, size, max_message_bytes)
            out.append(Message(0, 2, 0, -1, None, None, 0, True))
            pos += size
            continue
        message = parse_message(mv, pos, size)
        if not message.crc_ok:
            raise RecordError(ErrorCode.CORRUPT_MESSAGE,
                              f"Record is corrupt (stored crc = {message.crc})")
        out.append(message)
        pos += size
    return out


def _inner_messages(wrapper: Message) -> list[Message]:
    """Decompress a wrapper and read its inner messages (Kafka's DeepRecordsIterator)."""
    codec = wrapper.attributes & _ATTR_CODEC
    if codec >= _CODEC_ZSTD:
        raise RecordError(ErrorCode.INVALID_RECORD,
                          f"Invalid wrapper compressionType found in legacy deep record "
                          f"iterator {wrapper.magic}")
    if wrapper.value is None:
        raise RecordError(ErrorCode.INVALID_RECORD, "Found invalid compressed record set with "
                                                    f"null value (magic = {wrapper.magic})")
    payload = wrapper.value
    if codec == _CODEC_LZ4 and wrapper.magic == 0:
        payload = fix_lz4_header_checksum(payload)
    inner = memoryview(decompress(codec, payload))
    messages = []
    pos = 0
    while size := _inner_size(inner, pos):
        messages.append(parse_message(inner, pos, size))
        pos += size
    if not messages:
        raise RecordError(ErrorCode.INVALID_RECORD,
                          "Found invalid compressed record set with no inner records")
    _check_wrapper_offset(wrapper, messages)
    return messages


def _inner_size(mv, pos: int) -> int:
    """Size of the inner message at ``pos`` (Kafka's DataLogInputStream); 0 at the end."""
    if len(mv) - pos < LOG_OVERHEAD:
        return 0
    length = _INT32.unpack_from(mv, pos + 8)[0]
    if length < 14:
        raise RecordError(ErrorCode.CORRUPT_MESSAGE,
                          f"Record size {length} is less than the minimum record overhead (14)")
    size = LOG_OVERHEAD + length
    return size if pos + size <= len(mv) else 0


def _check_wrapper_offset(wrapper: Message, messages: list[Message]) -> None:
    last_inner = messages[-1].offset
    if wrapper.magic == 1 and wrapper.offset != 0 and wrapper.offset < last_inner:
        raise RecordError(ErrorCode.INVALID_RECORD,
                          f"Found invalid wrapper offset in compressed v1 message set, wrapper "
                          f"offset '{wrapper.offset}' is less than the last inner message offset "
                          f"'{last_inner}' and it is not zero.")


def _inner_errors(wrapper: Message, messages: list[Message], compacted: bool,
                  topic_partition: str) -> dict[int, str]:
    """LogValidator's per-record checks but the timestamp's, by record index (a bad inner
    CRC fails the whole set at once)."""
    errors = {}
    for index, m in enumerate(messages):
        if m.attributes & _ATTR_CODEC:
            errors[index] = ("Compressed outer record should not have an inner record with a "
                             "compression attribute set")
        elif m.magic != wrapper.magic:
            errors[index] = (f"Record's magic does not match outer magic {wrapper.magic} in "
                             f"topic partition {topic_partition}")
        elif not m.crc_ok:
            raise RecordError(ErrorCode.CORRUPT_MESSAGE,
                              f"Record is corrupt (stored crc = {m.crc}) in topic partition "
                              f"{topic_partition}")
        elif compacted and m.key is None:
            errors[index] = keyless_error(index, topic_partition)[1]
    return errors


# ---------------------------------------------------------------- LZ4 (magic 0)

_P1, _P2, _P3, _P4, _P5 = 2654435761, 2246822519, 3266489917, 668265263, 374761393
_M32 = 0xFFFFFFFF


def _rotl(x: int, r: int) -> int:
    return ((x << r) | (x >> (32 - r))) & _M32


def xxh32_short(data: bytes, seed: int = 0) -> int:
    """XXH32 of fewer than 16 bytes (an LZ4 frame descriptor is at most 15)."""
    if len(data) >= 16:
        raise ValueError("xxh32_short takes fewer than 16 bytes")
    h = (seed + _P5 + len(data)) & _M32
    i = 0
    while i + 4 <= len(data):
        lane = int.from_bytes(data[i:i + 4], "little")
        h = (_rotl((h + lane * _P3) & _M32, 17) * _P4) & _M32
        i += 4
    for b in data[i:]:
        h = (_rotl((h + b * _P5) & _M32, 11) * _P1) & _M32
    h ^= h >> 15
    h = (h * _P2) & _M32
    h ^= h >> 13
    h = (h * _P3) & _M32
    return h ^ (h >> 16)


def fix_lz4_header_checksum(frame: bytes) -> bytes:
    """Rewrite the header checksum byte of an LZ4 frame to the standard one.

    Kafka 0.8-0.9 computed it over the magic number too; Kafka reads magic 0
    wrappers without checking it, the lz4 library always checks it.
    """
    if len(frame) < 7:
        return frame
    flags = frame[4]
    end = 6 + (8 if flags & 0x08 else 0) + (4 if flags & 0x01 else 0)
    if len(frame) <= end:
        return frame
    checksum = (xxh32_short(bytes(frame[4:end])) >> 8) & 0xFF
    return bytes(frame[:end]) + bytes([checksum]) + bytes(frame[end + 1:])
