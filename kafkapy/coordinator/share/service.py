"""The share coordinator inside a broker: ``__share_group_state``, its loading, the store.

``ShareService`` creates ``__share_group_state`` on first use (as Kafka's
ShareCoordinatorService.shareGroupStateTopicConfigs: cleanup.policy=delete,
retention.ms=-1 (the records of a key are superseded, never expired by time),
compression.type=producer, segment.bytes and min.insync.replicas from
``share.coordinator.state.topic.*``; ``share.coordinator.state.topic.num.partitions``
partitions, ``share.coordinator.state.topic.replication.factor`` replicas: with fewer
live brokers the creation fails and FindCoordinator answers COORDINATOR_NOT_AVAILABLE
until enough are up), follows the topic through the metadata cache's listeners (loading
a partition when the cache names this broker its leader and the replica manager hosts it
as leader; unloading when either stops) and answers which broker coordinates a key.

Loading reads the partition's log from its start to its end off the event loop and
replays every ShareSnapshot, ShareUpdate and tombstone in offset order into a new
shard, installed on the loop (an empty log at once).  Appends (``_Store``) are one
batch per operation, CreateTime = now, compressed with
``share.coordinator.state.topic.compression.codec``, through ``Partition.append_internal``
with acks=-1 (min ISR, then the wait for the high watermark up to
``share.coordinator.write.timeout.ms``).
"""
from __future__ import annotations

import asyncio
import uuid
from typing import TYPE_CHECKING

import structlog

from kafkapy.coordinator.group.timers import Deadlines
from kafkapy.coordinator.internal_topic import (PartitionLoads, coordinator_node,
                                                ensure_internal_topic, replicated,
                                                scan_batches)
from kafkapy.coordinator.share import records
from kafkapy.coordinator.share.coordinator import ShareCoordinator, ShareSettings
from kafkapy.coordinator.share.state import ShareKey, ShareStateShard
from kafkapy.metadata.topics import SHARE_GROUP_STATE_TOPIC
from kafkapy.protocol.errors import ErrorCode, KafkaError
from kafkapy.records.record import build_batch, decode_records
from kafkapy.replication import acks

if TYPE_CHECKING:   # annotations only
    from kafkapy.admin.manager import AdminManager
    from kafkapy.clock import Clock
    from kafkapy.config.broker import BrokerConfig
    from kafkapy.metadata.cache import BrokerEndpoint, MetadataCache
    from kafkapy.purgatory import Timer
    from kafkapy.replication.replica_manager import ReplicaManager

_log = structlog.get_logger("kafkapy.coordinator.share")


class _Store:
    """Appends to this broker's ``__share_group_state`` partitions, acks=-1."""

    def __init__(self, replica_manager: ReplicaManager, clock: Clock,
                 settings: ShareSettings) -> None:
        self._replicas = replica_manager
        self._clock = clock
        self._settings = settings

    def append(self, index: int, entries: list[tuple[bytes, bytes | None]]):
        key = (SHARE_GROUP_STATE_TOPIC, index)
        partition = self._replicas.partitions.get(key)
        if partition is None:
            return False, ErrorCode.NOT_LEADER_OR_FOLLOWER
        result = acks.min_isr_error(partition, *key)
        if result is None:
            now = self._clock.time_ms()
            batch = build_batch([(k, v, None, now) for k, v in entries],
                                compression=self._settings.compression)
            result = partition.append_internal(batch)
            if result.error_code == 0:
                self._replicas.appended(key)
        base_offset = result.base_offset if result.error_code == 0 else -1
        return base_offset, replicated(self._replicas, key, result,
                                       self._settings.write_timeout_ms)


def load_partition(log, shard: ShareStateShard) -> ShareStateShard:
    """Replay every record of ``log`` (start to end, control batches skipped) into
    ``shard``; pure, so it runs off the event loop."""
    for chunk, header in scan_batches(log):
        if header.is_control:
            continue
        for record in decode_records(chunk, header.position):
            if record.key is None:
                continue
            decoded = records.decode(record.key, record.value)
            if decoded is not None:
                shard.replay(decoded, record.offset)
    return shard


class ShareService:
    def __init__(self, *, config: BrokerConfig, clock: Clock, node_id: int,
                 cache: MetadataCache, admin: AdminManager,
                 replica_manager: ReplicaManager, timer: Timer | None = None) -> None:
        """``admin`` creates ``__share_group_state``; ``replica_manager`` hosts its
        partitions and waits for their high watermark; ``cache`` names their leaders
        and knows the topics whose share state is kept; ``timer``: the broker's timing
        wheel, which runs the background work (none without one)."""
        self._node_id = node_id
        self._cache = cache
        self._admin = admin
        self._replicas = replica_manager
        self.settings = ShareSettings.from_config(config)
        self.coordinator = ShareCoordinator(self.settings, clock,
                                            _Store(replica_manager, clock, self.settings),
                                            self._partition_exists)
        self._loop = asyncio.get_running_loop()
        self._loads = PartitionLoads(self._loop, SHARE_GROUP_STATE_TOPIC)
        self._deadlines = Deadlines(timer) if timer is not None else None
        self._timers: list = []
        self._jobs: set[asyncio.Task] = set()
        self._topic_ids: dict[str, uuid.UUID] = {}

    def start(self) -> None:
        self._topic_ids = {name: t.topic_id for name, t in self._cache.topics.items()}
        self._cache.add_listener(self._on_topic_change)
        topic = self._cache.topic(SHARE_GROUP_STATE_TOPIC)
        if topic is not None:
            self._on_topic_change(SHARE_GROUP_STATE_TOPIC, topic)
        s = self.settings
        self._every(s.prune_interval_ms, self._prune)
        self._every(s.cold_snapshot_interval_ms, lambda: self.coordinator.snapshot_cold_partitions(
            s.cold_snapshot_interval_ms))

    def shutdown(self) -> None:
        for timer in self._timers:
            timer.cancel()
        for job in self._jobs:
            job.cancel()
        self._loads.cancel()
        self.coordinator.unload_all()

    # -- background work -----------------------------------------------------------------
    def _every(self, interval_ms: int, job) -> None:
        """Run ``job()`` (a coroutine) ``interval_ms`` after start, then that long after
        each run ends (Kafka's timer tasks)."""
        if self._deadlines is None:
            return

        def fire() -> None:
            self._timers.remove(handle)
            self._spawn(job(), lambda: self._every(interval_ms, job))

        handle = self._deadlines.schedule(interval_ms, fire)
        self._timers.append(handle)

    def _spawn(self, coroutine, then=None) -> None:
        task = self._loop.create_task(coroutine)
        self._jobs.add(task)

        def done(finished: asyncio.Task) -> None:
            self._jobs.discard(finished)
            if finished.cancelled():
                return
            if finished.exception() is not None:
                _log.error("share coordinator job failed", exc_info=finished.exception())
            if then is not None:
                then()

        task.add_done_callback(done)

    async def _prune(self) -> None:
        """Kafka's performRecordPruning: each loaded partition's log start moves up to its
        last redundant offset (not past the high watermark)."""
        for index, offset in self.coordinator.redundant_offsets().items():
            partition = self._replicas.partitions.get((SHARE_GROUP_STATE_TOPIC, index))
            if partition is None or not partition.is_leader:
                continue
            log = partition.log
            target = min(offset, log.high_watermark)
            if target > log.log_start_offset:
                log.maybe_increment_log_start_offset(target)

    # -- the internal topic --------------------------------------------------------------
    def ensure_topic(self) -> None:
        """Create ``__share_group_state`` if it does not exist yet."""
        s = self.settings
        ensure_internal_topic(self._cache, self._admin, SHARE_GROUP_STATE_TOPIC,
                              s.num_partitions, s.replication_factor, {
                                  "cleanup.policy": "delete", "retention.ms": "-1",
                                  "compression.type": "producer",
                                  "segment.bytes": str(s.segment_bytes),
                                  "min.insync.replicas": str(s.min_isr)})

    def coordinator_node(self, key: ShareKey) -> tuple[int, BrokerEndpoint | None]:
        """(error, node): the broker leading ``key``'s partition (creating the topic)."""
        try:
            self.ensure_topic()
        except KafkaError:
            return ErrorCode.COORDINATOR_NOT_AVAILABLE, None
        return self.node_of_partition(self.coordinator.partition_for(key))

    def node_of_partition(self, index: int) -> tuple[int, BrokerEndpoint | None]:
        return coordinator_node(self._cache, self._replicas, SHARE_GROUP_STATE_TOPIC, index)

    def _partition_exists(self, topic_id: uuid.UUID, partition: int) -> bool:
        name = self._cache.topic_name(topic_id)
        return name is not None and self._cache.partition(name, partition) is not None

    # -- following leadership ----------------------------------------------------------
    def _on_topic_change(self, name: str, topic) -> None:
        if name != SHARE_GROUP_STATE_TOPIC:
            self._topic_changed(name, topic)
            return
        coordinator = self.coordinator
        led = set()
        if topic is not None:
            # Led by the cache's view and hosted as leader here (LeaderAndIsr came first).
            replicas = self._replicas
            led = {i for i, s in topic.partitions.items()
                   if s.leader == self._node_id
                   and replicas.is_leader(SHARE_GROUP_STATE_TOPIC, i)}
        for index in range(self.settings.num_partitions):
            known = coordinator.serves(index)
            if index in led and not known:
                self._load(index)
            elif index not in led and known:
                coordinator.unload(index)

    def _topic_changed(self, name: str, topic) -> None:
        """A deleted topic's keys get tombstones (Kafka's onTopicsDeleted)."""
        if topic is not None:
            self._topic_ids[name] = topic.topic_id
            return
        topic_id = self._topic_ids.pop(name, None)
        if topic_id is not None:
            self._spawn(self.coordinator.cleanup_deleted_topics({topic_id}))

    def _load(self, index: int) -> None:
        partition = self._replicas.partitions.get((SHARE_GROUP_STATE_TOPIC, index))
        if partition is None or partition.log.offline:   # its dir was offline at start-up
            return
        coordinator = self.coordinator
        token = coordinator.begin_loading(index)
        shard = coordinator.new_shard()

        def finish(loaded: ShareStateShard) -> None:
            if coordinator.finish_loading(index, loaded, token):
                _log.info("loaded share state", partition=index, keys=len(loaded.keys()))

        self._loads.start(index, partition.log, lambda log: load_partition(log, shard),
                          finish, shard)
