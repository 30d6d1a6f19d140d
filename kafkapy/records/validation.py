"""Record-level batch validation (Kafka's LogValidator, the part done so far).

Batch headers are checked in ``batch.py`` without touching records; this
module walks the records of a v2 batch, which costs Python work per record,
so it is only called where Kafka's rule needs it: a compacted topic refuses
records without a key.

Kafka's answer shape (LogValidator.processRecordErrors): the partition gets
INVALID_RECORD with ``record_errors`` = one (batch index, message) per refused
record, all of them, and the error message "One or more records have been
rejected due to N record errors in total, and only showing the first three
errors at most: [RecordError(batchIndex=i, message='...'), ...]"; nothing of
the batch is stored.  A record that cannot be parsed fails the whole batch
with INVALID_RECORD and no record errors (Kafka's InvalidRecordException from
its record iterator).

Record layout inside a v2 batch (zig-zag varints, RECORDS.md):
    length | attributes int8 | timestampDelta | offsetDelta | keyLength | key |
    valueLength | value | headerCount | (keyLength, key, valueLength, value)*
"""
from __future__ import annotations

from kafkapy.protocol.errors import ErrorCode
from kafkapy.records.batch import COMPRESSION_NONE, HEADER_SIZE, BatchHeader, RecordError
from kafkapy.records.record import decompress

RecordErrorEntry = tuple[int, str]  # (batch index, message)


def keyless_error(index: int, topic_partition: str) -> RecordErrorEntry:
    return index, f"Compacted topic cannot accept message without key in topic partition " \
                  f"{topic_partition}"


def raise_record_errors(errors: list[RecordErrorEntry]) -> None:
    """Fail the batch as Kafka's processRecordErrors does (INVALID_RECORD)."""
    shown = ", ".join(f"RecordError(batchIndex={i}, message='{m}')" for i, m in errors[:3])
    raise RecordError(ErrorCode.INVALID_RECORD,
                      f"One or more records have been rejected due to {len(errors)} record "
                      f"errors in total, and only showing the first three errors at most: "
                      f"[{shown}]", record_errors=errors)


def check_keys(buf, header: BatchHeader, topic_partition: str) -> None:
    """Compacted topic: every record of the v2 batch at ``header`` must have a key."""
    start = header.position + HEADER_SIZE
    end = header.position + header.size
    if header.compression == COMPRESSION_NONE:
        data = buf[start:end]
    else:
        data = decompress(header.compression, buf[start:end])
    keyless = _keyless_indexes(memoryview(data), header.records_count)
    if keyless:
        raise_record_errors([keyless_error(i, topic_partition) for i in keyless])


def _invalid(message: str) -> RecordError:
    return RecordError(ErrorCode.INVALID_RECORD, message)


def _varint(data, pos: int, end: int) -> tuple[int, int]:
    """A zig-zag varint (at most 5 bytes for an int, 10 for a long) ending before ``end``."""
    result = shift = 0
    while True:
        if pos >= end:
            raise _invalid("Incorrect declared batch size, premature EOF reached")
        b = data[pos]
        pos += 1
        result |= (b & 0x7F) << shift
        if not b & 0x80:
            return (result >> 1) ^ -(result & 1), pos
        shift += 7
        if shift > 63:
            raise _invalid("Found invalid record structure")


def _skip_blob(data, pos: int, end: int) -> tuple[int, int]:
    """Skip a varint-length-prefixed field; returns (length, new position)."""
    n, pos = _varint(data, pos, end)
    if n > 0:
        pos += n
        if pos > end:
            raise _invalid("Found invalid record structure")
    return n, pos


def _keyless_indexes(data, count: int) -> list[int]:
    """Indexes of the records without a key; checks the structure as Kafka's iterator does."""
    keyless = []
    pos = 0
    total = len(data)
    for index in range(count):
        length, pos = _varint(data, pos, total)
        end = pos + length
        if length < 0 or end > total:
            raise _invalid(f"Invalid record size: expected {length} bytes in record payload, "
                           f"but instead the buffer has only {total - pos} remaining bytes.")
        p = pos + 1  # attributes
        _, p = _varint(data, p, end)  # timestamp delta
        _, p = _varint(data, p, end)  # offset delta
        key_length, p = _skip_blob(data, p, end)
        if key_length < 0:
            keyless.append(index)
        _, p = _skip_blob(data, p, end)
        p = _skip_headers(data, p, end)
        if p != end:
            raise _invalid(f"Invalid record size: expected to read {length} bytes in record "
                           f"payload, but instead read {p - pos}")
        pos = end
    if pos != total:
        raise _invalid("Incorrect declared batch size, records still remaining in file")
    return keyless


def _skip_headers(data, p: int, end: int) -> int:
    count, p = _varint(data, p, end)
    if count < 0:
        raise _invalid(f"Found invalid number of record headers {count}")
    for _ in range(count):
        key_length, p = _skip_blob(data, p, end)
        if key_length < 0:
            raise _invalid(f"Invalid negative header key size {key_length}")
        _, p = _skip_blob(data, p, end)
    return p
