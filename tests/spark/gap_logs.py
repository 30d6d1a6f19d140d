"""Partition logs with offset gaps, written the way Kafka leaves them on disk.

Spark's Kafka source treats an offset that is missing from a poll as data
loss unless the broker reports it as Kafka does. Gaps come from:
- compaction: records removed from inside a batch (the batch keeps its base
  offset and lastOffsetDelta, so the consumer's position moves past the
  removed tail), whole batches removed (the next batch starts later), and
  empty batches the cleaner keeps for idempotent producers' state;
- transaction markers: a control batch takes one offset that the consumer
  never returns; with read_committed, aborted records are skipped too;
- a log start offset above 0 (retention, DeleteRecords).

The test writes these layouts itself rather than waiting on the log cleaner
and the transaction coordinator, so every gap is exactly where the harness
expects it: the broker is stopped, the batches are
appended to the partition's log with ``Log.append_as_follower`` (a replica's
path: offsets kept as written), the offset checkpoints are set, and the
broker is started again. The batches are encoded here, independently of
kafkapy's record builder.

Every record's timestamp is ``BASE_TS + offset * 1000`` (control records too).
"""
from __future__ import annotations

import os
import struct
from dataclasses import dataclass, field

import crc32c

BASE_TS = 1_767_225_600_000  # 2026-01-01T00:00:00Z
CONTROL_ABORT, CONTROL_COMMIT = 0, 1


def ts(offset: int) -> int:
    return BASE_TS + offset * 1000


def value_of(offset: int) -> bytes:
    return f"v{offset}".encode()


def _varint(value: int, out: bytearray) -> None:
    v = (value << 1) ^ (value >> 63)
    while v & ~0x7F:
        out.append((v & 0x7F) | 0x80)
        v >>= 7
    out.append(v)


def _record(offset_delta: int, ts_delta: int, key: bytes | None, value: bytes | None,
            headers: list[tuple[str, bytes]]) -> bytes:
    body = bytearray([0])
    _varint(ts_delta, body)
    _varint(offset_delta, body)
    for blob in (key, value):
        if blob is None:
            _varint(-1, body)
        else:
            _varint(len(blob), body)
            body += blob
    _varint(len(headers), body)
    for hk, hv in headers:
        kb = hk.encode()
        _varint(len(kb), body)
        body += kb
        _varint(len(hv), body)
        body += hv
    out = bytearray()
    _varint(len(body), out)
    return bytes(out + body)


@dataclass
class Batch:
    base: int
    last_delta: int
    present: list[int]                 # offset deltas of the records kept
    producer_id: int = -1
    producer_epoch: int = -1
    base_sequence: int = -1
    transactional: bool = False
    control: int | None = None         # CONTROL_ABORT / CONTROL_COMMIT for a marker

    @property
    def offsets(self) -> list[int]:
        return [self.base + d for d in self.present]

    def encode(self, leader_epoch: int) -> bytes:
        base_ts = ts(self.base)
        max_ts = ts(self.base + self.last_delta)
        if self.control is not None:
            records = _record(0, 0, struct.pack(">hh", 0, self.control),
                              struct.pack(">hi", 0, 0), [])
            count = 1
        else:
            records = b"".join(
                _record(d, ts(self.base + d) - base_ts, b"k%d" % (self.base + d),
                        value_of(self.base + d), [("h", b"%d" % (self.base + d))])
                for d in self.present)
            count = len(self.present)
        attributes = (0x10 if self.transactional or self.control is not None else 0) | (
            0x20 if self.control is not None else 0)
        tail = struct.pack(">hiqqqhii", attributes, self.last_delta, base_ts, max_ts,
                           self.producer_id, self.producer_epoch, self.base_sequence,
                           count) + records
        crc = crc32c.crc32c(tail)
        length = 4 + 1 + 4 + len(tail)  # leader epoch, magic, crc, rest
        return struct.pack(">qiibI", self.base, length, leader_epoch, 2, crc) + tail


@dataclass
class PartitionLayout:
    topic: str
    partition: int
    batches: list[Batch]
    log_start: int = 0
    aborted_producers: set[int] = field(default_factory=set)  # producer ids whose txn aborted

    @property
    def high_watermark(self) -> int:
        last = self.batches[-1]
        return last.base + last.last_delta + 1

    def all_record_offsets(self) -> list[int]:
        """Every record in the log, control records included (what ListOffsets sees)."""
        return sorted(o for b in self.batches for o in b.offsets)

    def visible(self, read_committed: bool) -> list[int]:
        """Offsets a consumer returns: no control records; no aborted ones with read_committed."""
        out = []
        open_txn: dict[int, list[int]] = {}
        for b in self.batches:
            if b.control is not None:
                txn = open_txn.pop(b.producer_id, [])
                if b.control == CONTROL_COMMIT or not read_committed:
                    out += txn
                continue
            if b.transactional:
                open_txn.setdefault(b.producer_id, []).extend(b.offsets)
            else:
                out += b.offsets
        return sorted(out)

    def offset_for_timestamp(self, target: int) -> int:
        for o in self.all_record_offsets():
            if ts(o) >= target:
                return o
        return -1


def spark_gap_layouts(topic: str, trunc_topic: str) -> list[PartitionLayout]:
    return [
        # Compaction: removed records inside a batch (head, middle and tail),
        # a run of removed batches (11..14), and a batch whose tail is gone.
        PartitionLayout(topic, 0, [
            Batch(0, 4, [0, 1, 2, 3, 4]),
            Batch(5, 5, [1, 3]),
            Batch(15, 2, [0, 1, 2]),
            Batch(18, 4, [0, 1]),
        ]),
        # Transactions: committed, aborted, plain records between them, and a
        # commit marker as the last offset of the log.
        PartitionLayout(topic, 1, [
            Batch(0, 2, [0, 1, 2]),
            Batch(3, 2, [0, 1, 2], 1000, 0, 0, transactional=True),
            Batch(6, 0, [0], 1000, 0, -1, control=CONTROL_COMMIT),
            Batch(7, 1, [0, 1], 1001, 0, 0, transactional=True),
            Batch(9, 0, [0], 1001, 0, -1, control=CONTROL_ABORT),
            Batch(10, 1, [0, 1]),
            Batch(12, 0, [0], 1000, 0, 3, transactional=True),
            Batch(13, 0, [0], 1000, 0, -1, control=CONTROL_COMMIT),
        ], aborted_producers={1001}),
        # An empty batch kept by the cleaner for an idempotent producer, and
        # an idempotent batch compacted down to one record in the middle.
        PartitionLayout(topic, 2, [
            Batch(0, 1, [0, 1]),
            Batch(2, 1, [], 1002, 0, 0),
            Batch(4, 1, [0, 1]),
            Batch(6, 3, [2], 1003, 0, 0),
        ]),
        # Log start offset 100: offsets below it are out of range.
        PartitionLayout(trunc_topic, 0, [Batch(100, 49, list(range(50)))], log_start=100),
    ]


def write_layouts(log_dir: str, layouts: list[PartitionLayout]) -> None:
    """Append each layout to its (empty) partition log; the broker must be stopped."""
    from kafkapy.log.checkpoint import (LOG_START_OFFSET_CHECKPOINT,
                                        RECOVERY_POINT_CHECKPOINT,
                                        REPLICATION_OFFSET_CHECKPOINT,
                                        read_leader_epoch_checkpoint,
                                        read_offset_checkpoint, write_offset_checkpoint)
    from kafkapy.log.log import Log
    from kafkapy.records.batch import read_header

    ends: dict[tuple[str, int], int] = {}
    starts: dict[tuple[str, int], int] = {}
    for layout in layouts:
        path = os.path.join(log_dir, f"{layout.topic}-{layout.partition}")
        epochs = read_leader_epoch_checkpoint(os.path.join(path, "leader-epoch-checkpoint"))
        leader_epoch = epochs[-1][0] if epochs else 0
        log = Log.load(path)
        try:
            assert log.log_end_offset == 0, f"{path} is not empty"
            if layout.log_start:
                log.truncate_fully_and_start_at(layout.log_start)
            for batch in layout.batches:
                data = batch.encode(leader_epoch)
                log.append_as_follower(data, read_header(data))
            log.flush()
            ends[(layout.topic, layout.partition)] = log.log_end_offset
            starts[(layout.topic, layout.partition)] = layout.log_start
        finally:
            log.close()
    for name, values in ((REPLICATION_OFFSET_CHECKPOINT, ends),
                         (RECOVERY_POINT_CHECKPOINT, ends),
                         (LOG_START_OFFSET_CHECKPOINT, starts)):
        path = os.path.join(log_dir, name)
        current = read_offset_checkpoint(path)
        current.update(values)
        write_offset_checkpoint(path, current)


def spec_lines(layouts: list[PartitionLayout]) -> list[str]:
    """The harness's expectations, one tab-separated line each (see SparkCallSequence.java)."""
    lines = []
    for lay in layouts:
        tp = f"{lay.topic}\t{lay.partition}"
        lines.append(f"range\t{tp}\t{lay.log_start}\t{lay.high_watermark}")
        for level, committed in (("read_uncommitted", False), ("read_committed", True)):
            offsets = ",".join(map(str, lay.visible(committed)))
            lines.append(f"visible\t{tp}\t{level}\t{offsets}")
        for o in range(max(0, lay.log_start - 1), lay.high_watermark + 1):
            for target in (ts(o) - 500, ts(o)):
                lines.append(f"tsq\t{tp}\t{target}\t{lay.offset_for_timestamp(target)}")
    return lines
