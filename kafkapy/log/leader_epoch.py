"""Leader epoch cache of one partition, persisted as ``leader-epoch-checkpoint``.

On disk: the checkpoint format (see ``checkpoint.py``) with ``<epoch>
<start offset>`` lines.  Invariant: entries strictly increase in both epoch and
start offset; each is the first offset written under that epoch.  Answers
OffsetForLeaderEpoch (``end_offset_for``).

A new epoch is written to the file at once but not fsynced (as Kafka since
KAFKA-15046): log recovery rebuilds the entries from the batches' leader epochs,
and ``flush()`` (the log's flush) makes the file durable.  Truncations are fsynced
at once, since recovery could not undo a stale entry.

Batches (``write_behind()``, used by the replica manager around one LeaderAndIsr): an
assign made inside the block that only appends an entry is not written on the event
loop; at the end of the block the files of all such caches are written (unsynced, as
above) by one task on a background thread, so becoming leader of 10,000 new partitions
costs the loop no file creation.  Safe for the same reason as the unsynced write: a
kill -9 before the task ran loses only entries that recovery re-derives from the
batches, or that the controller's next LeaderAndIsr assigns again (an empty log has no
batches to misattribute).  The task writes the entries current at its time, under
``_write_lock``, and skips a cache written since (a truncation, a flush); a cache with a
pending write stays ``_unsynced``, so ``flush()`` writes and fsyncs it.  A write that
fails (the log was deleted or moved meanwhile) is dropped: flush() retries it.  The
interpreter waits for the task at exit, so a clean stop writes every file.

Threads: entries change on the event loop only; the file is written from the loop, from
the log flusher's thread (``flush``) and from the write-behind thread, so writes take
``_write_lock``: two writers would share ``leader-epoch-checkpoint.tmp`` and one rename
would find it gone.
"""
from __future__ import annotations

import os
import threading
from concurrent.futures import Future, ThreadPoolExecutor
from contextlib import contextmanager
from typing import Iterator

import structlog

from kafkapy.log.checkpoint import (LEADER_EPOCH_CHECKPOINT, read_leader_epoch_checkpoint,
                                    write_leader_epoch_checkpoint)

UNDEFINED_EPOCH = -1
UNDEFINED_EPOCH_OFFSET = -1

_log = structlog.get_logger("kafkapy.log.leader_epoch")

# ``batch``: the caches assigned inside this thread's current ``write_behind()`` block
# (per thread: the brokers of one test process may run on several event loops).
_local = threading.local()
_writer: ThreadPoolExecutor | None = None
_writer_guard = threading.Lock()


@contextmanager
def write_behind() -> Iterator[None]:
    """Defer the file writes of appending assigns made inside the block to one background
    task started when it ends (see the module doc).  Nested blocks join the outer one."""
    if getattr(_local, "batch", None) is not None:
        yield
        return
    _local.batch = []
    try:
        yield
    finally:
        batch, _local.batch = _local.batch, None
        if batch:
            _submit(batch)


def _submit(batch: "list[LeaderEpochCache]") -> Future:
    global _writer
    with _writer_guard:
        if _writer is None:
            _writer = ThreadPoolExecutor(max_workers=1,
                                         thread_name_prefix="leader-epoch-writer")
        return _writer.submit(_write_all, batch)


def _write_all(batch: "list[LeaderEpochCache]") -> None:
    for cache in batch:
        cache._write_behind()


def wait_for_writes() -> None:
    """Block until every write-behind task submitted so far has run (tests, shutdown)."""
    with _writer_guard:
        writer = _writer
    if writer is not None:
        writer.submit(lambda: None).result()


class LeaderEpochCache:
    def __init__(self, dir_path: str | None) -> None:
        self.path = os.path.join(dir_path, LEADER_EPOCH_CHECKPOINT) if dir_path else None
        self.entries: list[tuple[int, int]] = (
            read_leader_epoch_checkpoint(self.path) if self.path else [])
        self._unsynced = False
        self._pending = False       # a write-behind task still has to write the file
        self._write_lock = threading.Lock()

    @property
    def latest_epoch(self) -> int | None:
        return self.entries[-1][0] if self.entries else None

    def _persist(self, fsync: bool = True) -> None:
        if self.path is not None:
            with self._write_lock:
                write_leader_epoch_checkpoint(self.path, list(self.entries), fsync)
                self._unsynced = not fsync
                self._pending = False

    def _write_behind(self) -> None:
        """The background task's write: the current entries, unsynced, unless written
        since it was queued."""
        with self._write_lock:
            if not self._pending or self.path is None:
                return
            try:
                write_leader_epoch_checkpoint(self.path, list(self.entries), False)
            except OSError as err:      # deleted or moved meanwhile: flush() retries
                _log.debug("deferred leader epoch checkpoint write failed",
                           path=self.path, error=str(err))
            self._pending = False

    def drop_pending(self) -> None:
        """The log is about to be deleted: a queued write-behind must not recreate the
        file in a dir being removed (waits for a write in progress)."""
        with self._write_lock:
            self._pending = False

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
        batch = getattr(_local, "batch", None)
        if not truncated and batch is not None and self.path is not None:
            # Under the lock: a concurrent flush() either wrote these entries already or
            # leaves the flags for the write-behind task.
            with self._write_lock:
                queued, self._pending, self._unsynced = self._pending, True, True
            if not queued:
                batch.append(self)
            return True
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
