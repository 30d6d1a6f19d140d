"""Record-level batch validation (Kafka's LogValidator).

Batch headers are checked in ``batch.py`` without touching records; ``check_records``
walks every record of a v2 batch in native code (``kafkapy.native``): framing, counts
against offset deltas, decompression, keys on compacted topics, timestamps.

Kafka's answer shape (LogValidator.processRecordErrors): the partition gets
INVALID_RECORD with ``record_errors`` = one (batch index, message) per refused
record, all of them, and the error message "One or more records have been
rejected due to N record errors in total, and only showing the first three
errors at most: [RecordError(batchIndex=i, message='...'), ...]"; nothing of
the batch is stored.  A record that cannot be parsed fails the whole batch
with INVALID_RECORD and no record errors (Kafka's InvalidRecordException from
its record iterator).
"""
from __future__ import annotations

from kafkapy.native import CREATE_TIME, LONG_MAX, Verdict, validate_batch
from kafkapy.protocol.errors import ErrorCode
from kafkapy.records.batch import RecordError

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


def check_records(batch, topic_partition: str, now_ms: int, *, compacted: bool,
                  timestamp_type: str = CREATE_TIME, before_max_ms: int = LONG_MAX,
                  after_max_ms: int = LONG_MAX) -> Verdict:
    """Kafka's LogValidator over every record of one v2 batch (``kafkapy.native``, the
    per-record walk in C): raise ``RecordError`` with Kafka's code, message and
    ``record_errors`` when the batch must not be stored; otherwise the ``Verdict``, whose
    ``max_timestamp`` Kafka writes into the header of a CreateTime batch
    (``batch.set_max_timestamp``)."""
    verdict = validate_batch(batch, topic_partition=topic_partition, now_ms=now_ms,
                             compacted=compacted, timestamp_type=timestamp_type,
                             before_max_ms=before_max_ms, after_max_ms=after_max_ms)
    if not verdict.ok:
        raise RecordError(verdict.error_code, verdict.response_message,
                          record_errors=verdict.record_errors)
    return verdict
