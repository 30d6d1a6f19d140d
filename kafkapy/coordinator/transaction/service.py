"""The transaction coordinator inside a broker: internal topic, loading, store and markers.

``TransactionService`` creates ``__transaction_state`` on first use
(compacted, transaction.state.log.num.partitions partitions,
transaction.state.log.replication.factor capped by the live brokers,
segment.bytes = transaction.state.log.segment.bytes, min.insync.replicas =
transaction.state.log.min.isr, compression none),
follows it through the metadata cache's listeners (loading a partition when the
cache names this broker its leader and the replica manager hosts it as leader, at
the leader epoch as coordinator epoch; unloading when either stops),
and answers which broker coordinates a transactional id.  Loading reads the
log off the event loop and installs the result on the loop.
Records are appended through ``Partition.append_internal`` (one batch per
state change, CreateTime = now); markers go through ``marker_channel.MarkerChannel``:
written here (``markers.write_markers``) to the partitions this broker leads,
sent as WriteTxnMarkers to the leader of every other partition (whose handler
calls ``write_markers`` on that broker).  ``adder`` (``partition_adder.PartitionAdder``)
is what the replica manager asks before a transactional append: it verifies with this
broker's coordinator and adds a v2 client's partition through the coordinator wherever
it runs.
"""
from __future__ import annotations

import asyncio
from typing import TYPE_CHECKING

import structlog

from kafkapy.coordinator.group.hashing import partition_for
from kafkapy.coordinator.group.timers import Deadlines
from kafkapy.coordinator.internal_topic import (PartitionLoads, coordinator_node,
                                                ensure_internal_topic, replicated,
                                                scan_batches)
from kafkapy.coordinator.transaction.coordinator import TransactionCoordinator, TxnSettings
from kafkapy.coordinator.transaction.marker_channel import MarkerChannel
from kafkapy.coordinator.transaction.markers import write_markers
from kafkapy.coordinator.transaction.partition_adder import PartitionAdder
from kafkapy.metadata.features import TRANSACTION_VERSION
from kafkapy.metadata.topics import OFFSETS_TOPIC, TRANSACTION_STATE_TOPIC
from kafkapy.network.links import Links
from kafkapy.protocol.errors import ErrorCode, KafkaError
from kafkapy.records.record import build_batch, decode_records
from kafkapy.replication import acks

if TYPE_CHECKING:   # annotations only
    from kafkapy.admin.manager import AdminManager
    from kafkapy.clock import Clock
    from kafkapy.config.broker import BrokerConfig
    from kafkapy.coordinator.group.service import GroupService
    from kafkapy.metadata.cache import MetadataCache
    from kafkapy.metadata.features import FinalizedFeatureCache
    from kafkapy.metadata.producer_ids import ProducerIdManager
    from kafkapy.protocol.topic_partition import TopicPartition
    from kafkapy.purgatory import Timer
    from kafkapy.replication.replica_manager import ReplicaManager

_log = structlog.get_logger("kafkapy.coordinator.transaction")


def fenced_for_version(code: int, version: int, first_with_fenced: int) -> int:
    """Kafka answers PRODUCER_FENCED as INVALID_PRODUCER_EPOCH to request versions that
    predate the PRODUCER_FENCED error (KIP-588): InitProducerId here, and the transaction
    handlers."""
    if code == ErrorCode.PRODUCER_FENCED and version < first_with_fenced:
        return ErrorCode.INVALID_PRODUCER_EPOCH
    return code


class _Store:
    """Kafka's appendTransactionToLog append: acks=-1, so the ISR must hold
    min.insync.replicas (NOT_ENOUGH_REPLICAS, nothing written) and the answer -- the
    append's error code, or a future of it -- comes once the high watermark passed the
    record (or at ``timeout_ms``: the transaction timeout, request.timeout.ms for
    tombstones)."""

    def __init__(self, replica_manager: ReplicaManager, clock: Clock,
                 config: BrokerConfig) -> None:
        self._replicas = replica_manager
        self._clock = clock
        self._config = config   # request.timeout.ms, read at each write

    def write(self, index: int, key: bytes, value: bytes | None, timeout_ms: int | None = None):
        tp = (TRANSACTION_STATE_TOPIC, index)
        partition = self._replicas.partitions.get(tp)
        if partition is None:
            return ErrorCode.NOT_LEADER_OR_FOLLOWER
        result = acks.min_isr_error(partition, *tp)
        if result is None:
            batch = build_batch([(key, value, None, self._clock.time_ms())])
            result = partition.append_internal(batch)
            if result.error_code == 0:
                self._replicas.appended(tp)
        if timeout_ms is None:
            timeout_ms = self._config["request.timeout.ms"]
        return replicated(self._replicas, tp, result, timeout_ms)


def _high_watermark_of(replicas: ReplicaManager, key: TopicPartition):
    """The leader's high watermark of ``key``, or the error that ends a marker's wait on it
    (the partition is gone, or not led here any more)."""
    partition = replicas.partitions.get(key)
    if partition is None:
        return ErrorCode.UNKNOWN_TOPIC_OR_PARTITION
    if not partition.is_leader:
        return ErrorCode.NOT_LEADER_OR_FOLLOWER
    return partition.high_watermark


def read_entries(log) -> list[tuple[bytes, bytes | None]]:
    """(key, value) of every data record of ``log`` up to its end offset."""
    out: list = []
    for chunk, header in scan_batches(log):
        if not header.is_control:
            out.extend((r.key, r.value) for r in decode_records(chunk, header.position)
                       if r.key is not None)
    return out


class TransactionService:
    def __init__(self, *, config: BrokerConfig, clock: Clock, node_id: int,
                 cache: MetadataCache, admin: AdminManager, replica_manager: ReplicaManager,
                 timer: Timer, producer_ids: ProducerIdManager,
                 groups: GroupService | None,
                 features: FinalizedFeatureCache | None = None,
                 links: Links | None = None) -> None:
        """``links``: which brokers the markers and verifications reach (None: all).
        ``groups``: this broker's group coordinator (transactional offsets complete
        when their markers land; a group's offsets partition); None: none runs here.
        ``timer``: the broker's one timing wheel (transaction timeouts); ``admin`` creates
        ``__transaction_state``; ``replica_manager`` hosts its partitions and those the
        markers go to; ``producer_ids`` hands out the producer ids; ``features`` holds the
        cluster's finalized transaction.version (the log format, and the version of the
        aborts the coordinator starts itself); None: level 0."""
        self._config = config
        self._clock = clock
        self._node_id = node_id
        self._cache = cache
        self._admin = admin
        self._replicas = replica_manager
        self._groups = groups
        self._loop = asyncio.get_running_loop()
        self.settings = TxnSettings.from_config(config)
        # Hooks called as (producer id, [__consumer_offsets partitions], commit) once markers
        # land there (the group coordinator's pending transactional offsets).
        self.offsets_listeners: list = []
        if groups is not None:
            self.offsets_listeners.append(groups.coordinator.complete_txn_offsets)
        self.markers = MarkerChannel(
            node_id, cache, self.write_markers, clock,
            request_timeout_ms=config["request.timeout.ms"],
            connect_timeout_ms=config["socket.connection.setup.timeout.ms"], links=links,
            high_watermark_of=lambda key: _high_watermark_of(replica_manager, key))
        self.coordinator = TransactionCoordinator(
            self.settings, clock, Deadlines(timer),
            _Store(replica_manager, clock, config),
            self.markers, producer_ids.next_id,
            self._loop.call_soon, self._offsets_partition,
            finalized_tv=lambda: 0 if features is None
            else features.features.get(TRANSACTION_VERSION, 0))
        self._loads = PartitionLoads(self._loop, TRANSACTION_STATE_TOPIC)
        # What the replica manager asks before a transactional append (verification, and
        # the partition a v2 client writes added to its transaction).
        self.adder = PartitionAdder(
            node_id, cache, self.coordinator,
            request_timeout_ms=config["request.timeout.ms"],
            connect_timeout_ms=config["socket.connection.setup.timeout.ms"], links=links)

    def start(self) -> None:
        self._cache.add_listener(self._on_topic_change)
        topic = self._cache.topic(TRANSACTION_STATE_TOPIC)
        if topic is not None:
            self._on_topic_change(TRANSACTION_STATE_TOPIC, topic)

    def shutdown(self) -> None:
        self._loads.cancel()
        self.coordinator.shutdown()
        self.markers.close()
        self.adder.close()

    def write_markers(self, producer_id, epoch, coordinator_epoch, commit, partitions,
                      appended: dict | None = None, transaction_version: int = 0) -> dict:
        """Markers to partitions hosted here (the WriteTxnMarkers handler, and the local
        part of this coordinator's own markers)."""
        replicas = self._replicas
        timeout_ms = self._config["request.timeout.ms"]
        return write_markers(replicas, self._clock, producer_id, epoch, coordinator_epoch,
                             commit, partitions, self.offsets_listeners, appended,
                             replicate=lambda key, result: replicated(replicas, key, result,
                                                                      timeout_ms),
                             transaction_version=transaction_version)

    def init_producer_id(self, ctx, request):
        """InitProducerId with a transactional id (routed here by its handler).

        It creates no ``__transaction_state`` (as Kafka: only FindCoordinator and Metadata
        do); without it the coordinator leads nothing and answers NOT_COORDINATOR."""
        version = ctx.api_version
        expected_pid = request.producer_id if version >= 3 else -1
        expected_epoch = request.producer_epoch if version >= 3 else -1
        answer = self.coordinator.init_producer_id(
            request.transactional_id, request.transaction_timeout_ms, expected_pid,
            expected_epoch)

        def respond(result):
            error, pid, epoch = result
            return ctx.response(throttle_time_ms=0,
                                error_code=fenced_for_version(error, version, 4),
                                producer_id=pid, producer_epoch=epoch)

        # Answered once the new state is durable (a future while it replicates).
        return acks.then(answer, respond)

    # -- the internal topic --------------------------------------------------------------
    def ensure_topic(self) -> None:
        config = self._config
        factor = config["transaction.state.log.replication.factor"]
        ensure_internal_topic(self._cache, self._admin, TRANSACTION_STATE_TOPIC,
                              self.settings.num_partitions, factor, {
                                  "cleanup.policy": "compact", "compression.type": "uncompressed",
                                  "segment.bytes": str(config["transaction.state.log.segment.bytes"]),
                                  # as Kafka: not capped by the factor (the
                                  # effective min ISR is, kafkapy.replication.acks)
                                  "min.insync.replicas": str(
                                      config["transaction.state.log.min.isr"]),
                                  "unclean.leader.election.enable": "false"})

    def coordinator_node(self, transactional_id: str):
        """(error, node) where node is the BrokerEndpoint leading the id's partition."""
        try:
            self.ensure_topic()
        except KafkaError:
            return ErrorCode.COORDINATOR_NOT_AVAILABLE, None
        return coordinator_node(self._cache, self._replicas, TRANSACTION_STATE_TOPIC,
                                self.coordinator.partition_for(transactional_id or ""))

    def _offsets_partition(self, group_id: str) -> tuple[str, int]:
        groups = self._groups
        if groups is not None:
            # No ``__consumer_offsets`` is created here (as Kafka's AddOffsetsToTxn): the
            # group's FindCoordinator does; markers skip a partition the cache lacks.
            return OFFSETS_TOPIC, groups.coordinator.partition_for(group_id)
        return OFFSETS_TOPIC, partition_for(group_id,
                                            self._config["offsets.topic.num.partitions"])

    # -- following leadership ---------------------------------------------------------------
    def _on_topic_change(self, name: str, topic) -> None:
        if name != TRANSACTION_STATE_TOPIC:
            return
        coordinator = self.coordinator
        led = {}
        if topic is not None:
            # Led by the cache's view and hosted as leader here (LeaderAndIsr came first).
            replicas = self._replicas
            led = {i: s.leader_epoch for i, s in topic.partitions.items()
                   if s.leader == self._node_id
                   and replicas.is_leader(TRANSACTION_STATE_TOPIC, i)}
        for index in range(self.settings.num_partitions):
            known = coordinator.serves(index)
            if index in led and not known:
                self._load(index, led[index])
            elif index not in led and known:
                coordinator.unload(index)

    def _load(self, index: int, coordinator_epoch: int) -> None:
        partition = self._replicas.partitions.get((TRANSACTION_STATE_TOPIC, index))
        if partition is None or partition.log.offline:   # its dir was offline at start-up
            return
        self.coordinator.begin_loading(index, coordinator_epoch)

        def finish(entries: list) -> None:
            if self.coordinator.serves(index):
                self.coordinator.finish_loading(index, entries)

        self._loads.start(index, partition.log, read_entries, finish, [])
