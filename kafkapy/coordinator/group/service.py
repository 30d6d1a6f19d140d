"""The group coordinator inside a broker: its store, internal topic and loading (deadlines on
the broker's timing wheel).

``GroupService`` creates ``__consumer_offsets`` on first use (compacted,
offsets.topic.num.partitions partitions, offsets.topic.replication.factor
capped by the live brokers, segment.bytes = offsets.topic.segment.bytes),
follows that topic through the metadata cache's listeners (loading a partition
when the cache names this broker its leader and the replica manager hosts it as
leader, unloading when either stops: LeaderAndIsr making it a follower, StopReplica,
UpdateMetadata), drops the offsets of deleted topics (and their share groups' share
partitions), and answers which broker coordinates a group.  Loading reads the log off the event loop, then installs
the result on the loop; an empty partition is installed at once.
"""
from __future__ import annotations

import asyncio
from typing import TYPE_CHECKING

import structlog

from kafkapy.coordinator.group.consumer.settings import ConsumerSettings
from kafkapy.coordinator.group.consumer.types import TopicMetadata as ConsumerTopic
from kafkapy.coordinator.group.consumer_ops import GroupTimeouts
from kafkapy.coordinator.group.coordinator import GroupCoordinator, GroupSettings
from kafkapy.coordinator.group.persistence import GroupStore, Loaded, load_partition
from kafkapy.coordinator.group.share.settings import ShareSettings
from kafkapy.coordinator.group.share_ops import ShareTimeouts
from kafkapy.coordinator.group.timers import Deadlines
from kafkapy.coordinator.internal_topic import (PartitionLoads, coordinator_node,
                                                ensure_internal_topic, replicated)
from kafkapy.metadata.topics import OFFSETS_TOPIC
from kafkapy.protocol.errors import ErrorCode, KafkaError

if TYPE_CHECKING:   # annotations only
    from kafkapy.admin.manager import AdminManager
    from kafkapy.clock import Clock
    from kafkapy.config.broker import BrokerConfig
    from kafkapy.coordinator.share.persister import Persister
    from kafkapy.metadata.cache import MetadataCache
    from kafkapy.purgatory import Timer
    from kafkapy.replication.replica_manager import ReplicaManager

_log = structlog.get_logger("kafkapy.coordinator.group")


class CacheTopics:
    """The metadata cache as the consumer group assignors see it: a topic's id, its
    partition count and the racks of each partition's replicas (none when no live
    broker has a rack)."""

    def __init__(self, cache: MetadataCache) -> None:
        self._cache = cache

    def topic(self, name: str) -> ConsumerTopic | None:
        meta = self._cache.topic(name)
        if meta is None or not meta.partitions:
            return None
        brokers = self._cache.brokers
        racks = {index: frozenset(r for r in (brokers[b].rack for b in state.replicas
                                              if b in brokers) if r)
                 for index, state in meta.partitions.items()}
        if not any(racks.values()):
            racks = {}
        return ConsumerTopic(meta.topic_id, name, len(meta.partitions), racks)

    def names(self):
        return self._cache.topics.keys()


class GroupService:
    def __init__(self, *, config: BrokerConfig, clock: Clock, node_id: int,
                 cache: MetadataCache, admin: AdminManager, replica_manager: ReplicaManager,
                 timer: Timer, timeouts: GroupTimeouts | None = None,
                 share_timeouts: ShareTimeouts | None = None,
                 persister: Persister | None = None) -> None:
        """``timer``: the broker's one timing wheel (session and rebalance deadlines);
        ``admin`` creates ``__consumer_offsets``; ``replica_manager`` hosts its
        partitions and waits for their high watermark; ``timeouts``, ``share_timeouts``:
        each consumer and share group's session timeout and heartbeat interval (its group
        configs); ``persister``: the share coordinator's, which keeps share partitions'
        state."""
        self._config = config
        self._node_id = node_id
        self._cache = cache
        self._admin = admin
        self._replicas = replica_manager
        self._loop = asyncio.get_running_loop()
        self._clock = clock
        self.settings = GroupSettings.from_config(config)
        timeout_ms = config["offsets.commit.timeout.ms"]
        # offsets.commit.required.acks (deprecated, default -1): other values skip the
        # min ISR check and the wait, as Kafka's appendRecords does for them.
        durable = config["offsets.commit.required.acks"] == -1
        store = GroupStore(replica_manager, clock, config["offsets.topic.compression.codec"],
                           replicate=(lambda key, result: replicated(
                               replica_manager, key, result, timeout_ms)) if durable else None)
        self.coordinator = GroupCoordinator(
            self.settings, clock, Deadlines(timer), store,
            consumer=ConsumerSettings.from_config(config), topics=CacheTopics(cache),
            timeouts=timeouts, share=ShareSettings.from_config(config),
            share_timeouts=share_timeouts, persister=persister)
        self._loads = PartitionLoads(self._loop, OFFSETS_TOPIC)

    def start(self) -> None:
        self._cache.add_listener(self._on_topic_change)
        topic = self._cache.topic(OFFSETS_TOPIC)
        if topic is not None:
            self._on_topic_change(OFFSETS_TOPIC, topic)
        self.coordinator.start_offset_expiry()

    def shutdown(self) -> None:
        self._loads.cancel()
        self.coordinator.shutdown()

    # -- the internal topic ------------------------------------------------------------
    def ensure_topic(self) -> None:
        """Create ``__consumer_offsets`` if it does not exist yet."""
        config = self._config
        ensure_internal_topic(self._cache, self._admin, OFFSETS_TOPIC,
                              self.settings.num_partitions,
                              config["offsets.topic.replication.factor"],
                              {"cleanup.policy": "compact",
                               "segment.bytes": str(config["offsets.topic.segment.bytes"]),
                               "compression.type": "producer"})

    def coordinator_node(self, group_id: str):
        """(error, node) where node is the BrokerEndpoint leading the group's partition."""
        try:
            self.ensure_topic()
        except KafkaError:
            return ErrorCode.COORDINATOR_NOT_AVAILABLE, None
        return coordinator_node(self._cache, self._replicas, OFFSETS_TOPIC,
                                self.coordinator.partition_for(group_id))

    # -- following leadership ------------------------------------------------------------
    def _on_topic_change(self, name: str, topic) -> None:
        if name != OFFSETS_TOPIC:
            if topic is None:  # deleted: its offsets go, as Kafka's handleDeletedPartitions
                self.coordinator.handle_deleted_topic(name)
                self.coordinator.share_topic_deleted(name)
            self.coordinator.consumer_topics_changed({name})
            self.coordinator.share_topics_changed({name})
            return
        coordinator = self.coordinator
        led = set()
        if topic is not None:
            # Led by the cache's view and hosted as leader here (LeaderAndIsr came first).
            replicas = self._replicas
            led = {i for i, s in topic.partitions.items()
                   if s.leader == self._node_id and replicas.is_leader(OFFSETS_TOPIC, i)}
        for index in range(self.settings.num_partitions):
            known = coordinator.serves(index)
            if index in led and not known:
                self._load(index)
            elif index not in led and known:
                coordinator.unload(index)

    def _load(self, index: int) -> None:
        partition = self._replicas.partitions.get((OFFSETS_TOPIC, index))
        if partition is None or partition.log.offline:   # its dir was offline at start-up
            return
        self.coordinator.begin_loading(index)

        def finish(loaded: Loaded) -> None:
            if self.coordinator.serves(index):
                self.coordinator.finish_loading(index, loaded)

        now = self._clock.time_ms()
        self._loads.start(index, partition.log, lambda log: load_partition(log, now), finish,
                          Loaded())
