"""The broker's metadata cache: live brokers, controller, topics, partitions, leaders.

Kafka's ZkMetadataCache.  The only writer is UpdateMetadata handling
(``apply_update_metadata``, called on the event loop by the handler or in-process by
the controller's channel); request handlers read it.  Invariants:

- ``brokers`` holds the live brokers (from the last UpdateMetadata) as reached on the
  inter-broker listener; ``listener_brokers[name]`` the same brokers as reached on
  each listener (Metadata answers a client with the listener it connected on);
- a partition whose UpdateMetadata leader is -2 (LeaderDuringDelete) is removed; a
  topic left without partitions is removed with its id;
- ``generation`` grows with every write (UpdateMetadata, put_*/remove_topic): data
  derived from the cache (Metadata's encoded partition arrays) is valid while it is equal;
- requests reach the cache only through the broker's ``ControllerFence`` (the known
  controller epoch is kept there, not here);
- topic listeners (``add_listener``) run after every change to a topic, with the
  topic's metadata or ``None`` once it is gone; update listeners
  (``add_update_listener``) run after each applied UpdateMetadata.
"""
from __future__ import annotations

import uuid
from dataclasses import dataclass, field
from typing import Callable, Iterable

import structlog

from kafkapy.metadata.leader_and_isr import LEADER_DURING_DELETE
from kafkapy.metadata.topics import is_internal
from kafkapy.protocol.topic_partition import TopicPartition

_log = structlog.get_logger("kafkapy.metadata.cache")

ZERO_UUID = uuid.UUID(int=0)
# Kafka's SecurityProtocol ids: UpdateMetadata v1-2 endpoints carry no listener name, the
# listener is then named after the protocol (ListenerName.forSecurityProtocol).
_PROTOCOL_NAMES = {0: "PLAINTEXT", 1: "SSL", 2: "SASL_PLAINTEXT", 3: "SASL_SSL"}

TopicListener = Callable[[str, "TopicMetadata | None"], None]


@dataclass(frozen=True)
class BrokerEndpoint:
    node_id: int
    host: str
    port: int
    rack: str | None = None


@dataclass
class PartitionState:
    """A partition as the controller's requests state it (Kafka's
    UpdateMetadataPartitionState / LeaderAndIsrPartitionState, what ZkMetadataCache
    keeps): the partition index, its replicas and offline replicas, and the leader/ISR
    fields of ``kafkapy.metadata.leader_and_isr.LeaderAndIsr`` under the requests' names
    (``zk_version`` = the partition epoch).  Not a ``LeaderAndIsr``: it is the request's
    record as this broker received it (lists, as decoded), and a hosted ``Partition``
    works from it, taking its own AlterPartition answers into it (new ISR and partition
    epoch) until the controller's next request replaces it."""
    partition: int
    replicas: list[int]
    leader: int
    leader_epoch: int
    isr: list[int]
    controller_epoch: int = 0
    zk_version: int = 0     # the partition epoch (zk version of its state znode)
    offline_replicas: list[int] = field(default_factory=list)


@dataclass
class TopicMetadata:
    name: str
    topic_id: uuid.UUID
    partitions: dict[int, PartitionState] = field(default_factory=dict)
    configs: dict[str, str] = field(default_factory=dict)

    @property
    def internal(self) -> bool:
        return is_internal(self.name)


class MetadataCache:
    def __init__(self, cluster_id: str, node_id: int,
                 inter_broker_listener: str | None = None, *,
                 topic_overrides: Callable[[str], dict[str, str]] | None = None) -> None:
        """``topic_overrides`` (topic -> its stored config overrides; None: none) fills a
        topic's ``configs`` when the cache first learns of it."""
        self.cluster_id = cluster_id
        self.node_id = node_id
        self.inter_broker_listener = inter_broker_listener
        self.controller_id = -1
        self.generation = 0
        self.brokers: dict[int, BrokerEndpoint] = {}
        self.listener_brokers: dict[str, dict[int, BrokerEndpoint]] = {}
        self.topics: dict[str, TopicMetadata] = {}
        self._by_id: dict[uuid.UUID, str] = {}
        self._topic_overrides = topic_overrides
        self._listeners: list[TopicListener] = []
        self._update_listeners: list[Callable[[], None]] = []

    # -- listeners ---------------------------------------------------------------------
    def add_listener(self, listener: TopicListener) -> None:
        self._listeners.append(listener)

    def add_update_listener(self, listener: Callable[[], None]) -> None:
        self._update_listeners.append(listener)

    def notify_topics(self, names: Iterable[str]) -> None:
        """Run the topic listeners for ``names`` with their current metadata (also used
        after LeaderAndIsr, which changes what this broker hosts, not the cache)."""
        for name in dict.fromkeys(names):
            topic = self.topics.get(name)
            for listener in list(self._listeners):
                try:
                    listener(name, topic)
                except Exception:
                    _log.exception("topic listener failed", topic=name)

    # -- reads ---------------------------------------------------------------------------
    def brokers_for(self, listener: str | None) -> dict[int, BrokerEndpoint]:
        """The live brokers' endpoints on ``listener`` (the default view when unknown)."""
        return self.listener_brokers.get(listener, self.brokers) if listener else self.brokers

    def topic(self, name: str) -> TopicMetadata | None:
        return self.topics.get(name)

    def topic_name(self, topic_id: uuid.UUID | None) -> str | None:
        return self._by_id.get(topic_id) if topic_id is not None else None

    def partition(self, topic: str, partition: int) -> PartitionState | None:
        meta = self.topics.get(topic)
        return meta.partitions.get(partition) if meta else None

    def live_broker_ids(self) -> list[int]:
        return sorted(self.brokers)

    def is_alive(self, broker_id: int) -> bool:
        return broker_id in self.brokers

    # -- writes ----------------------------------------------------------------------------
    def put_broker(self, default: BrokerEndpoint, by_listener: dict[str, BrokerEndpoint]) -> None:
        self.generation += 1
        self.brokers[default.node_id] = default
        for listener, endpoint in by_listener.items():
            self.listener_brokers.setdefault(listener, {})[endpoint.node_id] = endpoint

    def put_topic(self, topic: TopicMetadata) -> None:
        self.generation += 1
        self.topics[topic.name] = topic
        self._by_id[topic.topic_id] = topic.name

    def remove_topic(self, name: str) -> None:
        self.generation += 1
        topic = self.topics.pop(name, None)
        if topic is not None:
            self._by_id.pop(topic.topic_id, None)

    def apply_update_metadata(self, request) -> list[TopicPartition]:
        """Apply an UpdateMetadata request (any version, already fenced); returns the
        partitions it deleted, as Kafka's ZkMetadataCache.updateMetadata."""
        self.controller_id = request.controller_id if request.controller_id >= 0 else -1
        self._set_live_brokers(request)
        changed: dict[str, None] = {}
        deleted: dict[TopicPartition, None] = {}
        for name, topic_id, state in _partition_states(request):
            if state.leader == LEADER_DURING_DELETE:
                self._remove_partition(name, state.partition)
                deleted[(name, state.partition)] = None
            else:
                self._put_partition(name, state)
                if topic_id is not None:
                    self._set_topic_id(name, topic_id)
                deleted.pop((name, state.partition), None)
            changed[name] = None
        self.generation += 1
        self.notify_topics(changed)
        for listener in list(self._update_listeners):
            try:
                listener()
            except Exception:
                _log.exception("metadata update listener failed")
        return list(deleted)

    def _set_live_brokers(self, request) -> None:
        version = request.version
        brokers: dict[int, BrokerEndpoint] = {}
        by_listener: dict[str, dict[int, BrokerEndpoint]] = {}
        for broker in request.live_brokers:
            rack = broker.rack if version >= 2 else None
            if version == 0:
                endpoints = [("PLAINTEXT", broker.v0_host, broker.v0_port)]
            else:
                endpoints = [(ep.listener if version >= 3 and ep.listener
                              else _PROTOCOL_NAMES.get(ep.security_protocol, "PLAINTEXT"),
                              ep.host, ep.port) for ep in broker.endpoints]
            for listener, host, port in endpoints:
                by_listener.setdefault(listener, {})[broker.id] = BrokerEndpoint(
                    broker.id, host, port, rack)
            default = (by_listener.get(self.inter_broker_listener, {}).get(broker.id)
                       if self.inter_broker_listener else None)
            if default is None and endpoints:
                listener = endpoints[0][0]
                default = by_listener[listener][broker.id]
            if default is not None:
                brokers[broker.id] = default
        self.brokers = brokers
        self.listener_brokers = by_listener

    def _set_topic_id(self, name: str, topic_id: uuid.UUID) -> None:
        """The request's id replaces the topic's; a zero id means none (Kafka drops the
        id from its map, which Metadata then answers as zero)."""
        topic = self.topics.get(name)
        if topic is None or topic.topic_id == topic_id:
            return
        self._by_id.pop(topic.topic_id, None)
        topic.topic_id = topic_id
        if topic_id != ZERO_UUID:
            self._by_id[topic_id] = name

    def _put_partition(self, name: str, state: PartitionState) -> None:
        topic = self.topics.get(name)
        if topic is None:
            overrides = self._topic_overrides
            configs = dict(overrides(name) or {}) if overrides is not None else {}
            topic = TopicMetadata(name=name, topic_id=ZERO_UUID, configs=configs)
            self.topics[name] = topic
        topic.partitions[state.partition] = state

    def _remove_partition(self, name: str, index: int) -> None:
        topic = self.topics.get(name)
        if topic is not None:
            topic.partitions.pop(index, None)
            if not topic.partitions:
                self.remove_topic(name)


def _partition_states(request):
    """(topic name, topic id or None, PartitionState) of every partition in the request."""
    version = request.version
    if version < 5:
        for p in request.ungrouped_partition_states:
            yield p.topic_name, None, _state(p, version)
        return
    for topic in request.topic_states:
        topic_id = topic.topic_id if version >= 7 else None
        for p in topic.partition_states:
            yield topic.topic_name, topic_id, _state(p, version)


def _state(p, version: int) -> PartitionState:
    return PartitionState(
        partition=p.partition_index, replicas=list(p.replicas), leader=p.leader,
        leader_epoch=p.leader_epoch, isr=list(p.isr), controller_epoch=p.controller_epoch,
        zk_version=p.zk_version,
        offline_replicas=list(p.offline_replicas or []) if version >= 4 else [])
