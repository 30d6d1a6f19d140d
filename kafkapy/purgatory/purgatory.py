"""Purgatory: delayed operations watched by key and timed out by a Timer.

An operation waits on one or more watch keys (any hashable, e.g. ``(topic,
partition)``).  ``check_and_complete(key)`` is called when something changes for
``key`` and tries to complete the operations watching it; the timer forces
completion of whatever is left when its delay runs out.

Invariants:
- ``try_complete_else_watch`` follows Kafka's order: try (unless the caller has just
  found the operation incomplete, ``tried``); watch on each key; try again (unless the
  operation's ``try_again_when_watched`` is false: its try has no side effects, so on one
  event loop the second try could only repeat the first); only then add to the timer.
  An operation with no keys (a Fetch or a Produce that names no partitions) has nothing
  that could complete it early, so it completes at once: Kafka's replica manager answers
  such requests without waiting.
- Completed operations leave the watcher list of the key being checked at once, and
  the lists of the other keys lazily: when the number of watched operations exceeds
  the number still delayed by more than ``purge_interval_requests``, every list is
  purged (Kafka's reaper does this check; here it runs inline, no thread).
- A key whose watcher list becomes empty is forgotten.
- ``num_delayed`` counts this purgatory's operations in the timer (the timer may be
  shared); ``expirations`` counts operations completed by their deadline.
"""
from __future__ import annotations

from typing import Hashable, Iterable

from kafkapy.purgatory.delayed_operation import DelayedOperation
from kafkapy.purgatory.timer import Timer


class Purgatory:
    """Watchers by key plus a timer; see the module docstring."""

    def __init__(self, name: str, timer: Timer, purge_interval_requests: int = 1000) -> None:
        self.name = name
        self._timer = timer
        self._purge_interval = purge_interval_requests
        # key -> operations watching it; a dict as an insertion-ordered set with O(1) removal.
        self._watchers: dict[Hashable, dict[DelayedOperation, None]] = {}
        self._estimated_watched = 0
        self._num_delayed = 0
        self.expirations = 0
        self.purges = 0
        self._shut_down = False

    @property
    def num_delayed(self) -> int:
        """Operations of this purgatory waiting in the timer."""
        return self._num_delayed

    @property
    def watched_count(self) -> int:
        """Entries over all watcher lists (an operation counts once per key)."""
        return sum(len(ops) for ops in self._watchers.values())

    @property
    def key_count(self) -> int:
        """Keys that currently have a watcher list."""
        return len(self._watchers)

    def watched(self, key: Hashable) -> int:
        """Entries in ``key``'s watcher list, completed-but-unpurged ones included."""
        ops = self._watchers.get(key)
        return len(ops) if ops else 0

    def try_complete_else_watch(self, op: DelayedOperation, keys: Iterable[Hashable],
                                tried: bool = False) -> bool:
        """Complete ``op`` now if it can; otherwise watch it on ``keys`` and time it.
        True when completed by this call.  ``tried``: the caller has just seen that the
        op cannot complete (a fetch that read too little), and nothing has run since, so
        the first try is skipped: it could only say the same."""
        keys = list(keys)
        if not keys:
            op.force_complete()
            return True
        if not tried and op.try_complete():
            return True
        if self._shut_down:
            return False
        # Kafka re-checks is_completed between keys because other threads may complete
        # the op meanwhile; on one loop nothing can run between these lines.
        for key in keys:
            self._watchers.setdefault(key, {})[op] = None
        self._estimated_watched += 1
        # Second try, as Kafka.  Single-threaded it only matters if the first try had
        # side effects that changed the answer; it keeps Kafka's order.
        if op.try_again_when_watched and op.try_complete():
            return True
        if not op.is_completed:
            op._purgatory = self
            self._num_delayed += 1
            self._timer.add(op)
        self._maybe_purge()
        return False

    def check_and_complete(self, key: Hashable) -> int:
        """Try to complete the operations watching ``key``; return how many completed."""
        ops = self._watchers.get(key)
        if not ops:
            return 0
        completed = 0
        # Iterate over a snapshot: completions may re-enter and watch or check again.
        for op in list(ops):
            if op.is_completed:
                ops.pop(op, None)
            elif op.try_complete():
                ops.pop(op, None)
                completed += 1
        if not ops and self._watchers.get(key) is ops:
            del self._watchers[key]
        return completed

    def purge_completed(self) -> int:
        """Drop completed operations from every watcher list; return entries removed."""
        removed = 0
        for key, ops in list(self._watchers.items()):
            done = [op for op in ops if op.is_completed]
            for op in done:
                del ops[op]
            removed += len(done)
            if not ops:
                del self._watchers[key]
        self._estimated_watched = self._num_delayed
        self.purges += 1
        return removed

    def shutdown(self) -> None:
        """Unschedule pending operations without completing them and forget all keys."""
        self._shut_down = True
        for ops in self._watchers.values():
            for op in ops:
                if not op.is_completed:
                    op.cancel()
                    op._purgatory = None
        self._watchers.clear()
        self._num_delayed = 0

    def _maybe_purge(self) -> None:
        if self._estimated_watched - self._num_delayed > self._purge_interval:
            self.purge_completed()

    def _delayed_done(self, op: DelayedOperation) -> None:
        self._num_delayed -= 1

    def _expired(self, op: DelayedOperation) -> None:
        self.expirations += 1
