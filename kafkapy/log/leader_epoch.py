"""Leader epoch cache of one partition, persisted as ``leader-epoch-checkpoint``.

On disk: the checkpoint format (see ``checkpoint.py``) with ``<epoch>
<start offset>`` lines.  Invariant: entries strictly increase in both epoch and
start offset; each is the first offset written under that epoch.  Answers
OffsetForLeaderEpoch (``end_offset_for``).

A new epoch is written to the file at once but not fsynced (as Kafka since
KAFKA-15046): log recovery rebuilds the entries from the batches' leader epochs,
and ``flush()`` (the log's flush) makes the file durable.  Truncations are fsynced
at once, since recovery could not undo a stale entry.

Threads: entries change on the event loop only; the file is written from the loop and
from the log flusher's thread (``flush``), so writes take ``_write_lock``: two writers
would share ``leader-epoch-checkpoint.tmp`` and one rename would find it gone.
"""
from __future__ import annotations

import os
import threading

from kafkapy.log.checkpoint import (LEADER_EPOCH_CHECKPOINT, read_leader_epoch_checkpoint,
                                    write_leader_epoch_checkpoint)

UNDEFINED_EPOCH = -1
UNDEFINED_EPOCH_OFFSET = -1


class LeaderEpochCache:
    def __init__(self, dir_path: str | None) -> None:
        self.path = os.path.join(dir_path, LEADER_EPOCH_CHECKPOINT) if dir_path else None
        self.entries: list[tuple[int, int]] = (
            read_leader_epoch_checkpoint(self.path) if self.path else [])
        self._unsynced = False
        self._write_lock = threading.Lock()

    @property
    def latest_epoch(self) -> int | None:
        return self.entries[-1][0] if self.entries else None

    def _persist(self, fsync: bool = True) -> None:
        if self.path is not None:
            with self._write_lock:
                write_leader_epoch_checkpoint(self.path, list(self.entries), fsync)
                self._unsynced = not fsync

    def assign(self, epoch: int, start_offset: int) -> bool:
        """Record that ``epoch`` starts at ``start_offset``; True if the cache changed."""
        if epoch < 0:
            return False
        if self.entries:
            last_epoch, last_start = self.entries[-1]
            if last_epoch == epoch and start_offset >= last_start:
                return False
        kept = [(e, o) for e, o in self.entries if e < epoch and o < start_offset]
        truncated = len(kept) < len(self.entries)
        self.entries = kept + [(epoch, start_offset)]
        self._persist(fsync=truncated)
        return True

    def truncate_from_end(self, end_offset: int) -> None:
        """Drop entries starting at or after ``end_offset`` (log truncated there)."""
        kept = [(e, o) for e, o in self.entries if o < end_offset]
        if kept != self.entries:
            self.entries = kept
            self._persist()

    def truncate_from_start(self, start_offset: int) -> None:
        """Log start moved: the entry covering it now starts there."""
        if not self.entries:
            return
        kept = [(e, o) for e, o in self.entries if o > start_offset]
        floor = [(e, o) for e, o in self.entries if o <= start_offset]
        if floor:
            kept.insert(0, (floor[-1][0], start_offset))
        if kept != self.entries:
            self.entries = kept
            self._persist()

    def end_offset_for(self, requested_epoch: int, log_end_offset: int) -> tuple[int, int]:
        """Kafka's LeaderEpochFileCache.endOffsetFor: (epoch, end offset)."""
        if requested_epoch == UNDEFINED_EPOCH or not self.entries:
            return UNDEFINED_EPOCH, UNDEFINED_EPOCH_OFFSET
        if self.entries[-1][0] == requested_epoch:
            return requested_epoch, log_end_offset
        higher = next(((e, o) for e, o in self.entries if e > requested_epoch), None)
        if higher is None:
            return UNDEFINED_EPOCH, UNDEFINED_EPOCH_OFFSET
        floor = [(e, o) for e, o in self.entries if e <= requested_epoch]
        if not floor:
            return requested_epoch, higher[1]
        return floor[-1][0], higher[1]

    def flush(self) -> None:
        """Make the file durable if an assign left it unsynced."""
        if self._unsynced:
            self._persist()
