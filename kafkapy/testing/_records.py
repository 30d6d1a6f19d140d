"""Reading a partition's records straight from the broker's log (no client, no Fetch).

``read_records(log)`` walks the log's batches from its start offset up to its high watermark
(what a consumer with read_uncommitted could see: records of aborted transactions included),
skips control batches (transaction markers),
and decodes every record with ``kafkapy.records``.  Runs on the broker's event loop: the log is
single-owner state.
"""
from __future__ import annotations

from dataclasses import dataclass, field

from kafkapy.coordinator.internal_topic import scan_batches
from kafkapy.records.record import decode_records


@dataclass(frozen=True)
class Record:
    """One record as stored: headers are (key, value) pairs in order."""
    offset: int
    timestamp: int
    key: bytes | None
    value: bytes | None
    headers: list[tuple[str, bytes | None]] = field(default_factory=list)


def read_records(log) -> list[Record]:
    out: list[Record] = []
    start, end = log.log_start_offset, log.high_watermark
    for chunk, header in scan_batches(log, end):
        if header.is_control:
            continue
        out.extend(Record(r.offset, r.timestamp, r.key, r.value, list(r.headers))
                   for r in decode_records(chunk, header.position)
                   if start <= r.offset < end)
    return out
