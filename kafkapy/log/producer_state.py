"""Per-partition idempotent-producer state (Kafka's ProducerStateManager).

In memory, per producer id: the current epoch, the metadata of its last 5
appended batches (first/last sequence, first/last offset, max timestamp), the
coordinator epoch and the first offset of its ongoing transaction (-1 if none).

Rules (Kafka's ProducerAppendInfo / ProducerStateEntry, client appends):
- a batch whose epoch and sequence range equal one of the cached 5 is a
  duplicate: the broker answers with the original offsets, nothing is written;
- epoch below the current one: INVALID_PRODUCER_EPOCH (47);
- a new epoch (or first sight of the producer id) must start at sequence 0,
  unless the producer's current epoch is unknown (-1: e.g. all of its data was
  removed by retention), in which case any sequence is accepted;
- same epoch: first sequence must be last sequence + 1 (wrapping past 2^31-1
  to 0), else OUT_OF_ORDER_SEQUENCE_NUMBER (45).
Control batches (transaction markers) bump the epoch and end the transaction.

Snapshot file ``<offset:020d>.snapshot`` (Kafka's ProducerStateManager): int16 version
(1), uint32 CRC-32C of everything after the CRC field, int32 count, then per
producer: producerId int64, epoch int16, lastSequence int32, lastOffset int64,
offsetDelta int32, timestamp int64, coordinatorEpoch int32,
currentTxnFirstOffset int64.  Only the last batch of each producer survives a
snapshot (as in Kafka).
"""
from __future__ import annotations

import os
import struct
from collections import deque
from typing import Callable, Iterable, NamedTuple

from kafkapy.log.checkpoint import atomic_write
from kafkapy.protocol.errors import ErrorCode
from kafkapy.records.batch import (INT32_MAX, NO_PRODUCER_EPOCH, NO_SEQUENCE, BatchHeader,
                                   RecordError, crc32c)

NUM_BATCHES_TO_RETAIN = 5
#: ``producer.id.expiration.ms`` default (1 day)
DEFAULT_PRODUCER_ID_EXPIRATION_MS = 86_400_000
SNAPSHOT_SUFFIX = ".snapshot"
SNAPSHOT_VERSION = 1
_SNAP_HEAD = struct.Struct(">hI")
_SNAP_COUNT = struct.Struct(">i")
_SNAP_ENTRY = struct.Struct(">qhiqiqiq")


class BatchMetadata(NamedTuple):
    first_seq: int
    last_seq: int
    first_offset: int
    last_offset: int
    timestamp: int


class DuplicateBatch(NamedTuple):
    """An already-appended batch matching the incoming one."""
    first_offset: int
    last_offset: int
    timestamp: int


def in_sequence(last_seq: int, next_seq: int) -> bool:
    return next_seq == last_seq + 1 or (next_seq == 0 and last_seq == INT32_MAX)


class ProducerEntry:
    __slots__ = ("producer_id", "epoch", "batches", "coordinator_epoch",
                 "current_txn_first_offset", "last_timestamp")

    def __init__(self, producer_id: int, epoch: int = NO_PRODUCER_EPOCH) -> None:
        self.producer_id = producer_id
        self.epoch = epoch
        self.batches: deque[BatchMetadata] = deque(maxlen=NUM_BATCHES_TO_RETAIN)
        self.coordinator_epoch = -1
        self.current_txn_first_offset = -1
        self.last_timestamp = -1

    @property
    def last_seq(self) -> int:
        return self.batches[-1].last_seq if self.batches else NO_SEQUENCE

    @property
    def last_offset(self) -> int:
        return self.batches[-1].last_offset if self.batches else -1

    def find_duplicate(self, epoch: int, first_seq: int, last_seq: int) -> BatchMetadata | None:
        if epoch != self.epoch:
            return None
        for b in self.batches:
            if b.first_seq == first_seq and b.last_seq == last_seq:
                return b
        return None

    def __repr__(self) -> str:
        return (f"ProducerEntry(pid={self.producer_id}, epoch={self.epoch}, "
                f"batches={list(self.batches)}, txn_first={self.current_txn_first_offset})")


class ProducerStateManagerConfig:
    """Kafka's ProducerStateManagerConfig: one per broker, shared by the
    ``ProducerStateManager`` of every partition and read at use time, so a dynamic
    change of ``producer.id.expiration.ms`` applies to every partition at once
    (``source`` is the value or a callable returning the effective value)."""

    def __init__(self, source: int | Callable[[], int] = DEFAULT_PRODUCER_ID_EXPIRATION_MS
                 ) -> None:
        self._source = source

    @property
    def producer_id_expiration_ms(self) -> int:
        source = self._source
        return int(source() if callable(source) else source)


class ProducerStateManager:
    """Idempotence state of one partition; see the module docstring."""

    def __init__(self, dir_path: str | None = None,
                 producer_id_expiration_ms: int | None = None, *,
                 config: ProducerStateManagerConfig | None = None) -> None:
        self.dir = dir_path
        self.producers: dict[int, ProducerEntry] = {}
        if config is None:
            config = ProducerStateManagerConfig(
                DEFAULT_PRODUCER_ID_EXPIRATION_MS if producer_id_expiration_ms is None
                else producer_id_expiration_ms)
        self.config = config
        self.map_end_offset = 0  # state reflects the log up to (excluding) this offset
        # The offset of the last snapshot written or loaded (or the log start, none being
        # there): as Kafka's lastSnapOffset, no snapshot is taken unless the state moved
        # past it, so an empty or unchanged log gets no new file (a dir stays as Kafka
        # would leave it).
        self.last_snap_offset = 0

    @property
    def producer_id_expiration_ms(self) -> int:
        """How long a producer may stay idle (no open transaction) before it expires."""
        return self.config.producer_id_expiration_ms

    # ---------------------------------------------------------------- queries

    def last_entry(self, producer_id: int) -> ProducerEntry | None:
        return self.producers.get(producer_id)

    def check(self, header: BatchHeader) -> DuplicateBatch | None:
        """Validate a client batch before append.

        Returns the original batch's metadata if this is a duplicate; raises
        ``RecordError`` (47 or 45) if the batch must be rejected.
        """
        pid = header.producer_id
        if pid < 0:
            return None
        entry = self.producers.get(pid)
        epoch = header.producer_epoch
        first_seq = header.base_sequence
        if entry is not None and not header.is_control:
            dup = entry.find_duplicate(epoch, first_seq, header.last_sequence)
            if dup is not None:
                return DuplicateBatch(dup.first_offset, dup.last_offset, dup.timestamp)
        current_epoch = entry.epoch if entry is not None else NO_PRODUCER_EPOCH
        if epoch < current_epoch:
            raise RecordError(ErrorCode.INVALID_PRODUCER_EPOCH,
                              f"Epoch of producer {pid} is {epoch}, which is smaller than "
                              f"the last seen epoch {current_epoch}")
        if header.is_control or first_seq < 0:
            # Markers and coordinator-written batches (transactional offset commits carry
            # no sequence; clients' batches always do) are not sequence-checked.
            return None
        if epoch != current_epoch:
            if first_seq != 0 and current_epoch != NO_PRODUCER_EPOCH:
                raise RecordError(ErrorCode.OUT_OF_ORDER_SEQUENCE_NUMBER,
                                  f"Invalid sequence number for new epoch of producer {pid}: "
                                  f"{epoch} (request epoch), {first_seq} (seq. number), "
                                  f"{current_epoch} (current producer epoch)")
        else:
            last_seq = entry.last_seq if entry is not None else NO_SEQUENCE
            if not (current_epoch == NO_PRODUCER_EPOCH or in_sequence(last_seq, first_seq)):
                raise RecordError(ErrorCode.OUT_OF_ORDER_SEQUENCE_NUMBER,
                                  f"Out of order sequence number for producer {pid}: "
                                  f"{first_seq} (incoming seq. number), {last_seq} "
                                  "(current end sequence number)")
        return None

    # ---------------------------------------------------------------- updates

    def update(self, header: BatchHeader, first_offset: int | None = None) -> None:
        """Record an appended batch (after offsets were assigned).

        ``first_offset`` defaults to the header's base offset.  Also used to
        rebuild state from the log (no validation there, as Kafka's
        replication/recovery origin).
        """
        pid = header.producer_id
        if first_offset is None:
            first_offset = header.base_offset
        last_offset = first_offset + header.last_offset_delta
        if pid >= 0:
            entry = self.producers.get(pid)
            if entry is None:
                entry = self.producers[pid] = ProducerEntry(pid)
            if header.producer_epoch != entry.epoch:
                entry.epoch = header.producer_epoch
                entry.batches.clear()
            entry.last_timestamp = header.max_timestamp
            if header.is_control:
                entry.current_txn_first_offset = -1
            else:
                if header.base_sequence >= 0:
                    entry.batches.append(BatchMetadata(header.base_sequence,
                                                       header.last_sequence, first_offset,
                                                       last_offset, header.max_timestamp))
                if header.is_transactional and entry.current_txn_first_offset < 0:
                    entry.current_txn_first_offset = first_offset
        if last_offset + 1 > self.map_end_offset:
            self.map_end_offset = last_offset + 1

    def rebuild(self, headers: Iterable[BatchHeader]) -> None:
        for h in headers:
            self.update(h)

    def truncate_and_reload(self, log_start_offset: int, log_end_offset: int) -> None:
        """Forget everything (the caller then rebuilds from the log)."""
        self.producers.clear()
        self.map_end_offset = log_start_offset
        self.last_snap_offset = log_start_offset
        if self.dir is not None:
            for off, path in self.list_snapshots():
                if off > log_end_offset:
                    _unlink(path)

    def remove_expired(self, now_ms: int) -> list[int]:
        """Drop producers idle longer than producer.id.expiration.ms (no open txn)."""
        gone = [pid for pid, e in self.producers.items()
                if e.current_txn_first_offset < 0
                and now_ms - e.last_timestamp >= self.producer_id_expiration_ms]
        for pid in gone:
            del self.producers[pid]
        return gone

    def first_unstable_offset(self) -> int | None:
        """The smallest first offset of an ongoing transaction (for the LSO)."""
        offs = [e.current_txn_first_offset for e in self.producers.values()
                if e.current_txn_first_offset >= 0]
        return min(offs) if offs else None

    # ---------------------------------------------------------------- snapshots

    def snapshot_path(self, offset: int) -> str:
        assert self.dir is not None
        return os.path.join(self.dir, f"{offset:020d}{SNAPSHOT_SUFFIX}")

    def list_snapshots(self) -> list[tuple[int, str]]:
        if self.dir is None:
            return []
        out = []
        for name in os.listdir(self.dir):
            if name.endswith(SNAPSHOT_SUFFIX):
                stem = name[:-len(SNAPSHOT_SUFFIX)]
                if stem.isdigit():
                    out.append((int(stem), os.path.join(self.dir, name)))
        out.sort()
        return out

    def take_snapshot(self, fsync: bool = True) -> str | None:
        """Write the state at ``map_end_offset`` (Kafka's layout); returns the path, or
        None when there is nothing new since the last snapshot (Kafka's takeSnapshot)."""
        if self.dir is None or self.map_end_offset <= self.last_snap_offset:
            return None
        body = bytearray(_SNAP_COUNT.pack(0))
        n = 0
        for e in self.producers.values():
            if e.batches:
                last = e.batches[-1]
                last_seq, last_off = last.last_seq, last.last_offset
                delta, ts = last.last_offset - last.first_offset, last.timestamp
            else:
                last_seq, last_off, delta, ts = NO_SEQUENCE, -1, 0, e.last_timestamp
            body += _SNAP_ENTRY.pack(e.producer_id, e.epoch, last_seq, last_off, delta, ts,
                                     e.coordinator_epoch, e.current_txn_first_offset)
            n += 1
        _SNAP_COUNT.pack_into(body, 0, n)
        data = _SNAP_HEAD.pack(SNAPSHOT_VERSION, crc32c(bytes(body))) + bytes(body)
        path = self.snapshot_path(self.map_end_offset)
        atomic_write(path, data, fsync)
        self.last_snap_offset = self.map_end_offset
        return path

    def load_snapshot(self, path: str, offset: int, now_ms: int | None = None) -> None:
        """Replace the state with a snapshot's; raises ValueError if it is corrupt.

        With ``now_ms``, producers expired at that time (idle past producer.id.expiration.ms,
        no open transaction) are not loaded, as Kafka's loadFromSnapshot skips them: a log
        dir written long ago (or by another broker) must not revive producer ids Kafka would
        have forgotten (a retry would be deduplicated here and appended by Kafka)."""
        with open(path, "rb") as f:
            data = f.read()
        if len(data) < _SNAP_HEAD.size + 4:
            raise ValueError(f"snapshot {path} too short")
        version, crc = _SNAP_HEAD.unpack_from(data, 0)
        if version != SNAPSHOT_VERSION:
            raise ValueError(f"snapshot {path}: unknown version {version}")
        body = data[_SNAP_HEAD.size:]
        if crc32c(body) != crc:
            raise ValueError(f"snapshot {path}: CRC mismatch")
        (count,) = _SNAP_COUNT.unpack_from(body, 0)
        if len(body) != 4 + count * _SNAP_ENTRY.size:
            raise ValueError(f"snapshot {path}: size does not match {count} entries")
        producers: dict[int, ProducerEntry] = {}
        for i in range(count):
            (pid, epoch, last_seq, last_off, delta, ts, coord_epoch,
             txn_first) = _SNAP_ENTRY.unpack_from(body, 4 + i * _SNAP_ENTRY.size)
            e = ProducerEntry(pid, epoch)
            if last_off >= 0:
                first_seq = (last_seq - delta) if last_seq >= delta else \
                    (last_seq - delta + INT32_MAX + 1 if last_seq >= 0 else NO_SEQUENCE)
                e.batches.append(BatchMetadata(first_seq, last_seq, last_off - delta, last_off,
                                               ts))
            e.last_timestamp = ts
            e.coordinator_epoch = coord_epoch
            e.current_txn_first_offset = txn_first
            if (now_ms is not None and txn_first < 0
                    and now_ms - ts >= self.producer_id_expiration_ms):
                continue
            producers[pid] = e
        self.producers = producers
        self.map_end_offset = offset
        self.last_snap_offset = offset

    def load_latest_snapshot(self, max_offset: int, now_ms: int | None = None) -> int | None:
        """Load the newest valid snapshot at or below ``max_offset``; its offset or None.
        (``now_ms``: see ``load_snapshot``.)

        Snapshots above ``max_offset`` (e.g. after truncation) and corrupt ones
        are deleted.
        """
        for off, path in reversed(self.list_snapshots()):
            if off > max_offset:
                _unlink(path)
                continue
            try:
                self.load_snapshot(path, off, now_ms)
                return off
            except (ValueError, OSError, struct.error):
                _unlink(path)
        return None

    def delete_snapshots_out_of_range(self, log_start_offset: int, log_end_offset: int) -> None:
        """Kafka's truncateAndReload: snapshots above the log end or AT OR BELOW the log
        start are deleted (the state at the log start is the empty state), so a log dir
        looks the same after a load here as after one by Kafka."""
        for off, path in self.list_snapshots():
            if off > log_end_offset or off <= log_start_offset:
                _unlink(path)

    def remove_stray_snapshots(self, segment_bases: list[int]) -> None:
        """Kafka's removeStraySnapshots (at log load): delete every snapshot whose offset
        is no segment's base offset, except the newest such one when it lies beyond the
        last segment's base offset."""
        bases = set(segment_bases)
        strays = [(off, path) for off, path in self.list_snapshots() if off not in bases]
        keep = strays[-1] if strays and (not bases or strays[-1][0] >= max(bases)) else None
        for off, path in strays:
            if (off, path) != keep:
                _unlink(path)

    def delete_snapshot(self, offset: int) -> None:
        """Delete the snapshot at ``offset`` if there is one (its segment was removed)."""
        if self.dir is not None:
            _unlink(self.snapshot_path(offset))

    def delete_snapshots_below(self, offset: int, keep: int = 2) -> None:
        snaps = self.list_snapshots()
        for off, path in snaps[:-keep] if keep else snaps:
            if off < offset:
                _unlink(path)


def _unlink(path: str) -> None:
    try:
        os.unlink(path)
    except FileNotFoundError:
        pass
