"""The share coordinator (Kafka's ShareCoordinatorService over its shards): the keys of
every ``__share_group_state`` partition this broker leads and has loaded.

A key ``ShareKey(group, topic id, partition)`` lives in partition
``Utils.abs("<group>:<topic id>:<partition>".hashCode()) % num_partitions``
(``partition_for``; the topic id as Kafka's Uuid text).  Each served partition is a
``ShareStateShard`` (``state.py``), or loading (``begin_loading`` .. ``finish_loading``).

One operation: the partition not served here answers NOT_COORDINATOR, a loading one
COORDINATOR_LOAD_IN_PROGRESS; else the shard decides; its records are appended as one
batch through ``store.append`` (acks=-1: the min ISR check, the append, the wait for the
high watermark, ``share.coordinator.write.timeout.ms``), replayed into the shard as
soon as the local append succeeded (as Kafka's runtime replays at append), and the
answer is given once the batch is replicated.  An operation that writes nothing answers
once the partition's last write is replicated (Kafka's write operations complete at
the committed offset).  Append errors are answered as Kafka's
CoordinatorOperationExceptionHelper maps them: NOT_LEADER_OR_FOLLOWER and
KAFKA_STORAGE_ERROR as NOT_COORDINATOR; UNKNOWN_TOPIC_OR_PARTITION, NOT_ENOUGH_REPLICAS
(also after append) and REQUEST_TIMED_OUT as COORDINATOR_NOT_AVAILABLE; too-large
writes as UNKNOWN_SERVER_ERROR.

Background work (``service.py`` runs it on the broker's timer), appended the same way:
``snapshot_cold_partitions`` and ``cleanup_deleted_topics``; ``redundant_offsets`` says how
far each partition's log may be pruned.

Single owner: the event loop; no locks.  Decisions and replays are synchronous, so the
shard always equals the replay of this broker's log of the partition.
"""
from __future__ import annotations

import asyncio
import functools
import uuid
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from typing import Any, Protocol

from kafkapy.coordinator.share import records
from kafkapy.coordinator.share.persister import (
    UNKNOWN_DELIVERY_COMPLETE_COUNT,
    ShareState,
    StateBatch,
)
from kafkapy.coordinator.share.state import Decision, ShareKey, ShareStateShard
from kafkapy.jvm import string_hash, utils_abs
from kafkapy.protocol.errors import ErrorCode as E
from kafkapy.protocol.errors import error_name
from kafkapy.replication.acks import is_pending

UNKNOWN_SERVER_ERROR = -1
_TO_NOT_COORDINATOR = {E.NOT_LEADER_OR_FOLLOWER, E.KAFKA_STORAGE_ERROR}
_TO_NOT_AVAILABLE = {E.UNKNOWN_TOPIC_OR_PARTITION, E.NOT_ENOUGH_REPLICAS,
                     E.NOT_ENOUGH_REPLICAS_AFTER_APPEND, E.REQUEST_TIMED_OUT}
_TO_UNKNOWN = {E.MESSAGE_TOO_LARGE, E.RECORD_LIST_TOO_LARGE, E.INVALID_FETCH_SIZE}

_NOT_SERVED = "This is not the correct coordinator."
_LOADING = "The coordinator is loading and hence can't process requests."

#: (error code, message): what initialize, write and delete answer.
Answer = tuple[int, str | None]


class StateStore(Protocol):
    """Appends to this broker's ``__share_group_state`` partitions."""

    def append(self, index: int, entries: list[tuple[bytes, bytes | None]]) -> tuple[int, Any]:
        """One batch of (key, value) with acks=-1: (its base offset in the local log, -1
        when it was not appended; its final error code or a future of it)."""


@dataclass(frozen=True, slots=True)
class ShareSettings:
    """The ``share.coordinator.*`` settings the coordinator reads."""

    num_partitions: int = 50
    replication_factor: int = 3
    min_isr: int = 2
    segment_bytes: int = 100 * 1024 * 1024
    updates_per_snapshot: int = 500
    write_timeout_ms: int = 5000
    compression: int = 0        # codec id (0 none)
    prune_interval_ms: int = 300000
    cold_snapshot_interval_ms: int = 300000

    @classmethod
    def from_config(cls, config) -> ShareSettings:
        p = "share.coordinator."
        return cls(num_partitions=config[p + "state.topic.num.partitions"],
                   replication_factor=config[p + "state.topic.replication.factor"],
                   min_isr=config[p + "state.topic.min.isr"],
                   segment_bytes=config[p + "state.topic.segment.bytes"],
                   updates_per_snapshot=config[p + "snapshot.update.records.per.snapshot"],
                   write_timeout_ms=config[p + "write.timeout.ms"],
                   compression=config[p + "state.topic.compression.codec"],
                   prune_interval_ms=config[p + "state.topic.prune.interval.ms"],
                   cold_snapshot_interval_ms=config[p + "cold.partition.snapshot.interval.ms"])


@functools.lru_cache(maxsize=16384)
def partition_for(key: ShareKey, num_partitions: int) -> int:
    """The ``__share_group_state`` partition of ``key`` (Kafka's partitionFor: the
    coordinator key's Java String.hashCode, Utils.abs, modulo the partition count).
    Remembered for the keys used most recently: every write routes its key twice, and
    the hash walks the key's characters in Python."""
    return utils_abs(string_hash(key.coordinator_key())) % num_partitions


def client_error(code: int) -> int:
    """An append's error as the coordinator answers it."""
    if code in _TO_NOT_COORDINATOR:
        return E.NOT_COORDINATOR
    if code in _TO_NOT_AVAILABLE:
        return E.COORDINATOR_NOT_AVAILABLE
    if code in _TO_UNKNOWN:
        return UNKNOWN_SERVER_ERROR
    return code


class _Served:
    """One partition served here: its shard once loaded, the last write's pending wait."""

    def __init__(self) -> None:
        self.shard: ShareStateShard | None = None
        self.last_write: asyncio.Future | None = None


class ShareCoordinator:
    """See the module docstring.  ``partition_exists(topic id, partition)``: the metadata
    cache's view, which every operation checks (UNKNOWN_TOPIC_OR_PARTITION)."""

    def __init__(self, settings: ShareSettings, clock, store: StateStore,
                 partition_exists: Callable[[uuid.UUID, int], bool]) -> None:
        self.settings = settings
        self._clock = clock
        self._store = store
        self._partition_exists = partition_exists
        self._served: dict[int, _Served] = {}

    # -- partitions --------------------------------------------------------------------
    def partition_for(self, key: ShareKey) -> int:
        return partition_for(key, self.settings.num_partitions)

    def new_shard(self) -> ShareStateShard:
        """An empty shard with this coordinator's settings (what a load replays into)."""
        return ShareStateShard(updates_per_snapshot=self.settings.updates_per_snapshot,
                               time_ms=self._clock.time_ms,
                               partition_exists=self._partition_exists)

    def serves(self, index: int) -> bool:
        """Loaded or loading here."""
        return index in self._served

    def loaded(self, index: int) -> bool:
        served = self._served.get(index)
        return served is not None and served.shard is not None

    def begin_loading(self, index: int) -> object:
        """The partition is loading from now on; the token ``finish_loading`` needs."""
        served = self._served[index] = _Served()
        return served

    def finish_loading(self, index: int, shard: ShareStateShard, token: object = None) -> bool:
        """Install a loaded shard, unless the partition was unloaded (or unloaded and
        loaded again: ``token`` names the load) meanwhile; whether it was installed."""
        served = self._served.get(index)
        if served is None or served.shard is not None or token not in (None, served):
            return False
        served.shard = shard
        return True

    def unload(self, index: int) -> None:
        self._served.pop(index, None)

    def unload_all(self) -> None:
        self._served.clear()

    def shard(self, index: int) -> ShareStateShard | None:
        served = self._served.get(index)
        return None if served is None else served.shard

    # -- operations --------------------------------------------------------------------
    async def initialize(self, key: ShareKey, *, state_epoch: int, start_offset: int) -> Answer:
        return await self._run(key, lambda shard: shard.initialize(
            key, state_epoch=state_epoch, start_offset=start_offset))

    async def write(self, key: ShareKey, *, state_epoch: int, leader_epoch: int,
                    start_offset: int, batches: Sequence[StateBatch],
                    delivery_complete_count: int = UNKNOWN_DELIVERY_COMPLETE_COUNT) -> Answer:
        return await self._run(key, lambda shard: shard.write(
            key, state_epoch=state_epoch, leader_epoch=leader_epoch,
            start_offset=start_offset, batches=batches,
            delivery_complete_count=delivery_complete_count))

    async def delete(self, key: ShareKey) -> Answer:
        return await self._run(key, lambda shard: shard.delete(key))

    async def read(self, key: ShareKey, *, leader_epoch: int) -> ShareState:
        return _as_state(await self._run(
            key, lambda shard: shard.read(key, leader_epoch=leader_epoch)))

    async def read_summary(self, key: ShareKey) -> ShareState:
        return _as_state(await self._run(key, lambda shard: Decision(shard.read_summary(key))))

    async def _run(self, key: ShareKey, decide: Callable[[ShareStateShard], Decision]):
        index = self.partition_for(key)
        served = self._served.get(index)
        if served is None:
            return E.NOT_COORDINATOR, _NOT_SERVED
        if served.shard is None:
            return E.COORDINATOR_LOAD_IN_PROGRESS, _LOADING
        decision = decide(served.shard)
        error = _error_of(decision.answer)
        if error or not decision.records:
            if not error and served.last_write is not None:
                await asyncio.shield(served.last_write)
            return _answer(decision)
        code = await self._append(index, served, decision)
        if code:
            return client_error(code), f"Unable to write share group state: {error_name(code)}."
        return _answer(decision)

    async def _append(self, index: int, served: _Served, decision: Decision) -> int:
        return await self._append_records(index, served, decision.records)

    async def _append_records(self, index: int, served: _Served, to_write) -> int:
        entries = [records.encode(record) for record in to_write]
        base_offset, result = self._store.append(index, entries)
        if base_offset >= 0 and served.shard is not None:
            # Appended locally: the shard follows the local log at once.
            for delta, record in enumerate(to_write):
                served.shard.replay(record, base_offset + delta)
        if not is_pending(result):
            return result
        served.last_write = result
        try:
            return await asyncio.shield(result)
        finally:
            if served.last_write is result:
                served.last_write = None

    # -- background work (Kafka's ShareCoordinatorService timers) -----------------------
    async def snapshot_cold_partitions(self, interval_ms: int) -> int:
        """A new snapshot of the idle keys of every loaded partition (``cold_snapshots``);
        the number of records written."""
        return await self._each_shard(lambda shard: shard.cold_snapshots(interval_ms))

    async def cleanup_deleted_topics(self, topic_ids: set[uuid.UUID]) -> int:
        """Tombstones for every key of the deleted topics; the number written."""
        if not topic_ids:
            return 0
        return await self._each_shard(lambda shard: shard.deleted_topic_tombstones(topic_ids))

    def redundant_offsets(self) -> dict[int, int]:
        """Each loaded partition's last redundant offset, where it has one."""
        out = {}
        for index, served in self._served.items():
            offset = served.shard.last_redundant_offset() if served.shard else None
            if offset is not None:
                out[index] = offset
        return out

    async def _each_shard(self, make) -> int:
        written = 0
        for index, served in list(self._served.items()):
            to_write = make(served.shard) if served.shard is not None else []
            if to_write and await self._append_records(index, served, to_write) == 0:
                written += len(to_write)
        return written


def _as_state(answer) -> ShareState:
    if isinstance(answer, ShareState):
        return answer
    code, message = answer
    return ShareState(code, message=message)


def _error_of(answer) -> int:
    return answer.error if isinstance(answer, ShareState) else answer


def _answer(decision: Decision):
    answer = decision.answer
    if isinstance(answer, ShareState):
        return answer
    return answer, decision.message
