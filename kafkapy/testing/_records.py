"""Reading a partition's records straight from the broker's log (no client, no Fetch).

``read_records(log)`` walks the log's batches from its start offset up to its high watermark
(what a consumer with read_uncommitted could see: records of aborted transactions included),
skips control batches (transaction markers),
and decodes every record with ``kafkapy.records``.  Runs on the broker's event loop: the log is
single-owner state.
"""
from __future__ import annotations

from dataclasses import dataclass, field

from kafkapy.records.batch import iter_headers
from kafkapy.records.record import decode_records

_READ_CHUNK = 1 << 20


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
    offset, end = log.log_start_offset, log.high_watermark
    while offset < end:
        chunk = log.read_bytes(offset, _READ_CHUNK, end, True)
        if not chunk:
            break
        for header in iter_headers(chunk):
            offset = header.next_offset
            if header.is_control:
                continue
            out.extend(Record(r.offset, r.timestamp, r.key, r.value, list(r.headers))
                       for r in decode_records(chunk, header.position)
                       if log.log_start_offset <= r.offset < end)
    return out
