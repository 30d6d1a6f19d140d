"""The broker's metadata cache: brokers, topics, partitions, leaders.

Single owner: only the controller path (on the event loop) changes it; request
handlers read it.  Partition state mirrors the ZooKeeper
``/brokers/topics/<t>/partitions/<p>/state`` payload.
"""
from __future__ import annotations

import uuid
from dataclasses import dataclass, field

from kafkapy.metadata.topics import is_internal


@dataclass(frozen=True)
class BrokerEndpoint:
    node_id: int
    host: str
    port: int
    rack: str | None = None


@dataclass
class PartitionState:
    partition: int
    replicas: list[int]
    leader: int
    leader_epoch: int
    isr: list[int]
    controller_epoch: int = 0


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
    def __init__(self, cluster_id: str, node_id: int) -> None:
        self.cluster_id = cluster_id
        self.node_id = node_id
        self.controller_id = -1
        # The brokers as reached through the inter-broker listener (the default view) and
        # through each listener: Metadata answers a client with the addresses of the
        # listener it connected to, as Kafka does.
        self.brokers: dict[int, BrokerEndpoint] = {}
        self.listener_brokers: dict[str, dict[int, BrokerEndpoint]] = {}
        self.topics: dict[str, TopicMetadata] = {}
        self._by_id: dict[uuid.UUID, str] = {}

    def brokers_for(self, listener: str | None) -> dict[int, BrokerEndpoint]:
        """The brokers' endpoints on ``listener`` (the default view when unknown)."""
        return self.listener_brokers.get(listener, self.brokers) if listener else self.brokers

    def put_broker(self, default: BrokerEndpoint, by_listener: dict[str, BrokerEndpoint]) -> None:
        self.brokers[default.node_id] = default
        for listener, endpoint in by_listener.items():
            self.listener_brokers.setdefault(listener, {})[endpoint.node_id] = endpoint

    def put_topic(self, topic: TopicMetadata) -> None:
        self.topics[topic.name] = topic
        self._by_id[topic.topic_id] = topic.name

    def remove_topic(self, name: str) -> None:
        topic = self.topics.pop(name, None)
        if topic is not None:
            self._by_id.pop(topic.topic_id, None)

    def topic(self, name: str) -> TopicMetadata | None:
        return self.topics.get(name)

    def topic_name(self, topic_id: uuid.UUID | None) -> str | None:
        return self._by_id.get(topic_id) if topic_id is not None else None

    def partition(self, topic: str, partition: int) -> PartitionState | None:
        meta = self.topics.get(topic)
        return meta.partitions.get(partition) if meta else None

    def live_broker_ids(self) -> list[int]:
        return sorted(self.brokers)
