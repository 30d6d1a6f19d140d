"""``InMemoryPersister``: the share persister (``kafkapy.coordinator.share.persister``)
without a broker, for tests of the share-partition leaders and the group coordinator.

It keeps every key's state in a ``ShareStateShard`` (the share coordinator's own state
and rules: fencing, batch combining, snapshots and updates) and replays each decision's
records at once, so its answers are the coordinator's.  ``calls`` records every call
(name, group, topic id, partition, keyword arguments) in order; ``fail_next(name,
code)`` makes the next call of that name answer ``code`` without touching the state;
``known_partitions`` (a set of (topic id, partition)), when given, is the metadata the
coordinator checks (others answer UNKNOWN_TOPIC_OR_PARTITION).

``MemoryStore``: the share coordinator's store (``coordinator.StateStore``) as logs in
memory, for tests of ``ShareCoordinator`` and of the handlers over it.
"""
from __future__ import annotations

import asyncio
import uuid
from collections.abc import Sequence
from typing import Any

from kafkapy.coordinator.share import records
from kafkapy.coordinator.share.persister import ShareState, StateBatch
from kafkapy.coordinator.share.state import (
    Decision,
    ShareGroupOffset,
    ShareKey,
    ShareStateShard,
)


class InMemoryPersister:
    """The Persister protocol over one in-memory ``ShareStateShard``."""

    def __init__(self, *, updates_per_snapshot: int = 500,
                 known_partitions: set[tuple[uuid.UUID, int]] | None = None) -> None:
        self.calls: list[tuple[Any, ...]] = []
        self._failures: dict[str, list[int]] = {}
        self._shard = ShareStateShard(
            updates_per_snapshot=updates_per_snapshot, time_ms=lambda: 0,
            partition_exists=(lambda t, p: True) if known_partitions is None
            else (lambda t, p: (t, p) in known_partitions))

    # -- test controls -------------------------------------------------------------------
    def fail_next(self, name: str, code: int) -> None:
        """The next call of ``name`` ("initialize", "read", ...) answers ``code``."""
        self._failures.setdefault(name, []).append(code)

    def stored(self, group_id: str, topic_id: uuid.UUID, partition: int) -> ShareGroupOffset | None:
        """The key's stored state, or None when never initialized (or deleted)."""
        return self._shard.state(ShareKey(group_id, topic_id, partition))

    # -- Persister -----------------------------------------------------------------------
    async def initialize(self, group_id: str, topic_id: uuid.UUID, partition: int, *,
                         state_epoch: int, start_offset: int) -> int:
        self.calls.append(("initialize", group_id, topic_id, partition,
                           {"state_epoch": state_epoch, "start_offset": start_offset}))
        if failed := self._failure("initialize"):
            return failed
        return self._apply(self._shard.initialize(
            ShareKey(group_id, topic_id, partition), state_epoch=state_epoch,
            start_offset=start_offset))

    async def read(self, group_id: str, topic_id: uuid.UUID, partition: int, *,
                   leader_epoch: int) -> ShareState:
        self.calls.append(("read", group_id, topic_id, partition,
                           {"leader_epoch": leader_epoch}))
        if failed := self._failure("read"):
            return ShareState(failed)
        return self._apply(self._shard.read(
            ShareKey(group_id, topic_id, partition), leader_epoch=leader_epoch))

    async def write(self, group_id: str, topic_id: uuid.UUID, partition: int, *,
                    state_epoch: int, leader_epoch: int, start_offset: int,
                    batches: Sequence[StateBatch], delivery_complete_count: int = -1) -> int:
        self.calls.append(("write", group_id, topic_id, partition,
                           {"state_epoch": state_epoch, "leader_epoch": leader_epoch,
                            "start_offset": start_offset, "batches": tuple(batches),
                            "delivery_complete_count": delivery_complete_count}))
        if failed := self._failure("write"):
            return failed
        return self._apply(self._shard.write(
            ShareKey(group_id, topic_id, partition), state_epoch=state_epoch,
            leader_epoch=leader_epoch, start_offset=start_offset, batches=batches,
            delivery_complete_count=delivery_complete_count))

    async def delete(self, group_id: str, topic_id: uuid.UUID, partition: int) -> int:
        self.calls.append(("delete", group_id, topic_id, partition, {}))
        if failed := self._failure("delete"):
            return failed
        return self._apply(self._shard.delete(ShareKey(group_id, topic_id, partition)))

    async def read_summary(self, group_id: str, topic_id: uuid.UUID, partition: int, *,
                           leader_epoch: int) -> ShareState:
        self.calls.append(("read_summary", group_id, topic_id, partition,
                           {"leader_epoch": leader_epoch}))
        if failed := self._failure("read_summary"):
            return ShareState(failed)
        return self._shard.read_summary(ShareKey(group_id, topic_id, partition))

    # -- helpers -------------------------------------------------------------------------
    def _failure(self, name: str) -> int:
        pending = self._failures.get(name)
        return pending.pop(0) if pending else 0

    def _apply(self, decision: Decision) -> Any:
        for record in decision.records:
            self._shard.replay(record)
        return decision.answer


class MemoryStore:
    """Each partition's log as a list of (key, value); ``hold`` keeps the next appends
    unreplicated until ``release``; ``refuse`` fails the next append with a code (nothing
    appended); ``fail_after_append`` appends the next one and answers it with a code."""

    def __init__(self) -> None:
        self.logs: dict[int, list] = {}
        self.refuse: int = 0
        self.fail_after_append: int = 0
        self.hold = False
        self.pending: list[asyncio.Future] = []

    def append(self, index, entries):
        if self.refuse:
            code, self.refuse = self.refuse, 0
            return -1, code
        log = self.logs.setdefault(index, [])
        base = len(log)
        log.extend(entries)
        if self.fail_after_append:
            code, self.fail_after_append = self.fail_after_append, 0
            return base, code
        if not self.hold:
            return base, 0
        future = asyncio.get_running_loop().create_future()
        self.pending.append(future)
        return base, future

    def release(self, code: int = 0) -> None:
        for future in self.pending:
            future.set_result(code)
        self.pending.clear()

    def decoded(self, index):
        return [records.decode(k, v) for k, v in self.logs.get(index, [])]
