"""DelayedShareFetch: a ShareFetch that waits for records it can acquire (Kafka's
DelayedShareFetch), and the timer tasks of the share-partition leader.

A ShareFetch that finds nothing to acquire (or fewer than ``min_bytes``) waits in the
share fetch purgatory, watched on two keys per partition (Kafka's
DelayedShareFetchGroupKey and DelayedShareFetchPartitionKey):

- ``partition_key(topic, index)``: the partition's appends, high watermark moves and
  leadership changes (the replica manager's append listeners);
- ``group_key(group, topic, index)``: the share partition's own events (records released,
  locks expired, a backoff ended, its state loaded, it was dropped).

The operation knows nothing of logs or share partitions: ``try_read()`` answers what to
complete with (the reads made) or None to keep waiting, and ``complete(reads)`` answers
the fetch (``reads`` None: at the deadline, read again).  A ``try_read`` that raises
completes the operation (its ``complete`` then reads again and answers every partition,
an error if it fails again), so an append listener never sees the exception.
"""
from __future__ import annotations

from collections.abc import Callable
from typing import Any

import structlog

from kafkapy.purgatory.delayed_operation import DelayedOperation
from kafkapy.purgatory.timer import TimerTask

_log = structlog.get_logger("kafkapy.share.delayed")


def partition_key(topic: str, index: int) -> tuple[str, int]:
    """The key of a topic partition's log events (the replica manager's listeners)."""
    return (topic, index)


def group_key(group_id: str, topic: str, index: int) -> tuple[str, str, int]:
    """The key of one share partition's events."""
    return (group_id, topic, index)


class DelayedShareFetch(DelayedOperation):
    """Completes once ``try_read`` finds something to answer, or at ``max_wait_ms``."""

    __slots__ = ("_try_read", "_complete", "_reads")

    def __init__(self, max_wait_ms: int, try_read: Callable[[], Any | None],
                 complete: Callable[[Any | None], None]) -> None:
        super().__init__(max_wait_ms)
        self._try_read = try_read
        self._complete = complete
        self._reads: Any | None = None

    def try_complete(self) -> bool:
        try:
            reads = self._try_read()
        except Exception:   # never into the caller (an append listener): answer instead
            _log.exception("share fetch check failed")
            reads = None
        else:
            if reads is None:
                return False
        self._reads = reads
        return self.force_complete()

    def on_complete(self) -> None:
        reads, self._reads = self._reads, None
        self._complete(reads)

    def on_expiration(self) -> None:
        pass    # the purgatory counts expirations; on_complete answered


class CallbackTask(TimerTask):
    """A timer task that calls ``callback`` (lock expiry of one share partition, the wait
    of a fetch refused for the session limit)."""

    __slots__ = ("_callback",)

    def __init__(self, delay_ms: int, callback: Callable[[], None]) -> None:
        super().__init__(delay_ms)
        self._callback = callback

    def run(self) -> None:
        self._callback()
