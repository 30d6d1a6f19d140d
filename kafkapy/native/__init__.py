"""Validate one v2 record batch the way Kafka 3.9's LogValidator does, before it is stored.

``validate_batch`` answers a ``Verdict``; it never raises for bad input.  The per-record
walk (framing of every record, keys, timestamps, offset deltas) runs in the C extension
``_batchcheck`` built by ``setup.py``; without it the identical pure-Python walk in
``reference.py`` runs instead and a warning is logged once.  Decompression is one call
per batch in ``codecs.py``.

What is checked, in Kafka's order, with the code Kafka 3.9 answers (measured against a
real 3.9 broker; the response carries a message only when ``record_errors`` is set):

1. size and magic: fewer than 61 bytes -> CORRUPT_MESSAGE; a batchLength that does not
   span the buffer -> CORRUPT_MESSAGE; magic other than 2 -> INVALID_RECORD; codec id
   above 4 -> UNSUPPORTED_COMPRESSION_TYPE.  (CRC and max.message.bytes are checked by
   ``kafkapy.records.batch`` and are not repeated here.)
2. ``from_client`` batches (LogValidator.validateBatch): lastOffsetDelta >= 0, count > 0,
   count == lastOffsetDelta + 1, not a control batch, a producer id has a sequence
   -> INVALID_RECORD.  This stops the "count far beyond the offsets" poison before any
   record is read.
3. decompression: a payload that is not of its codec, or is cut short -> Kafka answers
   UNKNOWN_SERVER_ERROR (its KafkaException "Failed to decompress record stream").
4. every record's framing (DefaultRecord.readFrom) and no bytes after the last record
   -> INVALID_RECORD; an over-long length varint in an uncompressed batch ->
   UNKNOWN_SERVER_ERROR, as in Kafka.  Stricter than Kafka (whose compressed in-place
   path skips it): a compressed record's length must match its fields too.
5. per record (validateKey, validateTimestamp): no key on a compacted topic ->
   INVALID_RECORD; a CreateTime topic's record timestamp outside
   [now - message.timestamp.before.max.ms, now + message.timestamp.after.max.ms], or a
   LogAppendTime batch sent to a LogAppendTime topic -> INVALID_TIMESTAMP.  All refused
   records are listed in ``record_errors`` (batch index, message); INVALID_TIMESTAMP
   wins over INVALID_RECORD when both occur (processRecordErrors).
6. only with ``refuse_reader_hazards`` (off by default: Kafka accepts these): a record
   attributes byte with its high bit set, or a header key that is not UTF-8 ->
   INVALID_RECORD with record_errors.  Both are legal v2 bytes, but kafka-python's
   parser raises CorruptRecordError on them, so one producer would poison the partition
   for those readers.

Invariants: a Verdict with ``ok`` False means nothing of the batch may be stored; the
batch bytes are never modified; work is linear in the (uncompressed) batch size
whatever the header claims.
"""
from __future__ import annotations

import logging
import struct
from dataclasses import dataclass, field

from kafkapy.native import codecs, reference

try:
    from kafkapy.native._batchcheck import find_at_or_after as _native_find
    from kafkapy.native._batchcheck import walk as _native_walk
except ImportError:  # the extension is optional (setup.py); the fallback is slower
    _native_walk = _native_find = None

__all__ = ["Verdict", "validate_batch", "find_timestamp", "NATIVE", "CREATE_TIME",
           "LOG_APPEND_TIME"]

NATIVE = _native_walk is not None
CREATE_TIME = "CreateTime"
LOG_APPEND_TIME = "LogAppendTime"
LONG_MAX = (1 << 63) - 1
DEFAULT_MAX_UNCOMPRESSED = 256 * 1024 * 1024

UNKNOWN_SERVER_ERROR = -1
CORRUPT_MESSAGE = 2
INVALID_TIMESTAMP = 32
UNSUPPORTED_COMPRESSION_TYPE = 76
INVALID_RECORD = 87

_HEADER = struct.Struct(">qiibIhiqqqhii")
_HEADER_SIZE = 61
_ATTR_TIMESTAMP_TYPE = 0x08
_ATTR_CONTROL = 0x20
_TIMESTAMP_TYPES = (CREATE_TIME, LOG_APPEND_TIME)
_TIMESTAMP_KINDS = (reference.OUT_OF_RANGE, reference.LOG_APPEND_TYPE)
_log = logging.getLogger(__name__)
_warned = False


@dataclass(slots=True)
class Verdict:
    """The answer for one batch.

    ``max_timestamp`` / ``max_timestamp_index``: the largest record timestamp and the
    batch index of the first record with it (-1, -1 if none); the offset Kafka reports
    as offsetOfMaxTimestamp is the assigned base offset + ``max_timestamp_index``.
    ``offsets_in_order``: every record's offsetDelta equals its index.  Kafka stores an
    uncompressed batch whatever its deltas; a compressed one with deltas off it rebuilds
    (and 3.9 answered UNKNOWN_SERVER_ERROR for an lz4 batch with deltas 9..0): not
    refused here, the append path decides.
    """

    ok: bool
    error_code: int = 0
    error_message: str | None = None
    record_errors: list[tuple[int, str]] = field(default_factory=list)
    records_count: int = 0
    max_timestamp: int = -1
    max_timestamp_index: int = -1
    offsets_in_order: bool = True

    @property
    def response_message(self) -> str | None:
        """What Kafka puts in the partition's error_message: only record-level refusals."""
        return self.error_message if self.record_errors else None


def validate_batch(batch, *, topic_partition: str, now_ms: int, compacted: bool = False,
                   timestamp_type: str = CREATE_TIME, before_max_ms: int = LONG_MAX,
                   after_max_ms: int = LONG_MAX, from_client: bool = True,
                   max_uncompressed_bytes: int = DEFAULT_MAX_UNCOMPRESSED,
                   refuse_reader_hazards: bool = False) -> Verdict:
    """Check exactly one v2 batch (bytes-like, 12 + batchLength bytes); see the module doc.

    ``topic_partition`` is "topic-partition" as Kafka prints it in messages;
    ``timestamp_type``, ``before_max_ms``, ``after_max_ms`` are the topic's
    message.timestamp.type / .before.max.ms / .after.max.ms; ``from_client`` is False
    for the broker's own writes (transaction markers, coordinators), which may be
    control batches and are not held to the client offset/sequence rules;
    ``refuse_reader_hazards`` adds check 6 of the module docstring.
    """
    if timestamp_type not in _TIMESTAMP_TYPES:
        raise ValueError(f"message.timestamp.type must be CreateTime or LogAppendTime, "
                         f"not {timestamp_type!r}")
    mv = memoryview(batch).cast("B") if not isinstance(batch, bytes) else batch
    if len(mv) < _HEADER_SIZE:
        return _refuse(CORRUPT_MESSAGE, f"Record batch is corrupt (the size {len(mv)} is "
                                        f"smaller than the minimum allowed overhead 61)")
    (base_offset, length, _epoch, magic, _crc, attributes, lod, base_ts, max_ts, pid, _pe,
     base_seq, count) = _HEADER.unpack_from(mv, 0)
    problem = _header_problem(len(mv), length, magic, attributes & 7)
    if problem is None and from_client:
        problem = _client_problem(base_offset, lod, count, attributes, pid, base_seq,
                                  topic_partition)
    if problem is None and not from_client and count < 0:
        problem = (INVALID_RECORD, f"Found invalid record count {count} in magic v2 batch")
    if problem is not None:
        return _refuse(*problem)
    if count == 0:
        return Verdict(True)
    data = mv[_HEADER_SIZE:]
    codec = attributes & 7
    if codec:
        try:
            data = codecs.decompress(codec, data, max_uncompressed_bytes)
        except codecs.CodecError as exc:
            return _refuse(UNKNOWN_SERVER_ERROR, f"Failed to decompress record stream: {exc}")
    log_append_batch = bool(attributes & _ATTR_TIMESTAMP_TYPE)
    walked = _walk()(data, count, base_offset, base_ts, log_append_batch, max_ts, compacted,
                     timestamp_type == CREATE_TIME, now_ms, before_max_ms, after_max_ms,
                     bool(codec), refuse_reader_hazards)
    return _verdict(walked, count, topic_partition, now_ms, before_max_ms, after_max_ms)


def find_timestamp(batch, target: int,
                   max_uncompressed_bytes: int = DEFAULT_MAX_UNCOMPRESSED) -> tuple[int, int] | None:
    """(offset, timestamp) of the first record of a stored v2 batch whose timestamp is at or
    after ``target``, or None: ListOffsets by time, one C pass over the records."""
    mv = memoryview(batch).cast("B") if not isinstance(batch, bytes) else batch
    (base_offset, _length, _epoch, _magic, _crc, attributes, _lod, base_ts, max_ts, _pid,
     _pe, _seq, count) = _HEADER.unpack_from(mv, 0)
    if max_ts < target or count <= 0:
        return None
    data = mv[_HEADER_SIZE:]
    if attributes & 7:
        try:
            data = codecs.decompress(attributes & 7, data, max_uncompressed_bytes)
        except codecs.CodecError:
            return None
    find = _native_find or reference.find_at_or_after
    found = find(data, count, base_ts, bool(attributes & _ATTR_TIMESTAMP_TYPE), max_ts, target)
    return None if found is None else (base_offset + found[0], found[1])


def _refuse(code: int, message: str, record_errors=None) -> Verdict:
    return Verdict(False, code, message, record_errors or [])


def _header_problem(size: int, length: int, magic: int, codec: int):
    if length + 12 != size:
        return CORRUPT_MESSAGE, f"Record batch length {length} + 12 does not match the " \
                                f"{size} bytes given"
    if magic != 2:
        return INVALID_RECORD, f"Batch magic {magic} is not the same as the first batch's " \
                               f"magic byte 2"
    if codec > 4:
        return UNSUPPORTED_COMPRESSION_TYPE, f"Unknown compression type id: {codec}"
    return None


def _client_problem(base_offset: int, lod: int, count: int, attributes: int, pid: int,
                    base_seq: int, tp: str):
    """LogValidator.validateBatch for a client's v2 batch."""
    last = base_offset + lod
    if lod < 0:  # lastOffset - baseOffset + 1 <= 0
        return INVALID_RECORD, f"Batch has an invalid offset range: [{base_offset}, {last}] " \
                               f"in topic partition {tp}"
    if count <= 0:
        return INVALID_RECORD, f"Invalid reported count for record batch: {count} in topic " \
                               f"partition {tp}"
    if lod + 1 != count:
        return INVALID_RECORD, f"Inconsistent batch offset range [{base_offset}, {last}] and " \
                               f"count of records {count} in topic partition {tp}"
    if attributes & _ATTR_CONTROL:
        return INVALID_RECORD, f"Clients are not allowed to write control records in topic " \
                               f"partition {tp}"
    if pid >= 0 and base_seq < 0:
        return INVALID_RECORD, f"Invalid sequence number {base_seq} in record batch with " \
                               f"producerId {pid} in topic partition {tp}"
    return None


def _walk():
    """The C walk, or the Python one with a single warning that validation is slow."""
    global _warned
    if _native_walk is not None:
        return _native_walk
    if not _warned:
        _warned = True
        _log.warning("kafkapy.native._batchcheck is not built: record batches are validated "
                     "in pure Python, which is slow (reinstall with a C compiler: "
                     "pip install -e .)")
    return reference.walk


def _verdict(walked, count: int, tp: str, now: int, before: int, after: int) -> Verdict:
    failure, max_ts, max_index, in_order, errors = walked
    if failure is not None:
        return _refuse(*failure)
    if not errors:
        return Verdict(True, records_count=count, max_timestamp=max_ts,
                       max_timestamp_index=max_index, offsets_in_order=in_order)
    record_errors = [(e[0], _message(e, tp, now, before, after)) for e in errors]
    if any(e[1] in _TIMESTAMP_KINDS for e in errors):
        return _refuse(INVALID_TIMESTAMP, "One or more records have been rejected due to "
                                          "invalid timestamp", record_errors)
    shown = ", ".join(f"RecordError(batchIndex={i}, message='{m}')"
                      for i, m in record_errors[:3])
    return _refuse(INVALID_RECORD, f"One or more records have been rejected due to "
                                   f"{len(record_errors)} record errors in total, and only "
                                   f"showing the first three errors at most: [{shown}]",
                   record_errors)


def _message(error, tp: str, now: int, before: int, after: int) -> str:
    _index, kind, ts, offset, key_size, value_size = error
    if kind == reference.KEYLESS:
        return f"Compacted topic cannot accept message without key in topic partition {tp}"
    if kind == reference.HIGH_ATTRIBUTES:
        return "Record attributes byte has its high bit set, which some consumers " \
               "(kafka-python) cannot parse"
    if kind == reference.HEADER_KEY_NOT_UTF8:
        return "Record header key is not valid UTF-8, which some consumers (kafka-python) " \
               "cannot parse"
    if kind == reference.OUT_OF_RANGE:
        low, high = reference.wrap64(now - before), reference.wrap64(now + after)
        return f"Timestamp {ts} of message with offset {offset} is out of range. The " \
               f"timestamp should be within [{low}, {high}]"
    record = f"DefaultRecord(offset={offset}, timestamp={ts}, key={max(key_size, 0)} bytes, " \
             f"value={max(value_size, 0)} bytes)"
    return f"Invalid timestamp type in message {record}. Producer should not set timestamp " \
           f"type to LogAppendTime."
