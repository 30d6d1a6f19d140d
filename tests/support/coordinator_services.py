"""The group and transaction services' collaborators, real, for one broker in a tmp dir.

An embedded metadata store, a metadata cache with this broker alive, the admin manager
that writes topics there, a log manager and a replica manager with both purgatories on
one timing wheel driven by a mock clock (the futures of waiting writes belong to
``loop``), and the producer id blocks.  No controller:
``lead`` plays its LeaderAndIsr (the cache learns the topic, the replica manager leads
it, the topic listeners hear of it)."""
from __future__ import annotations

import uuid

from kafkapy.admin.manager import AdminManager
from kafkapy.clock import MockClock
from kafkapy.config.broker import BrokerConfig
from kafkapy.config.topic_configs import TopicConfigs
from kafkapy.log.manager import LogManager
from kafkapy.metadata import paths
from kafkapy.metadata.cache import BrokerEndpoint, MetadataCache, PartitionState, TopicMetadata
from kafkapy.metadata.embedded import EmbeddedStore
from kafkapy.metadata.producer_ids import ProducerIdManager
from kafkapy.purgatory import Purgatory, Timer
from kafkapy.replication.replica_manager import PartitionChange, ReplicaManager

TS = 1_700_000_000_000
NODE = 0

#: Small internal topics on one broker.
SETTINGS = {
    "broker.id": str(NODE),
    "offsets.topic.num.partitions": "2",
    "offsets.topic.replication.factor": "1",
    "transaction.state.log.num.partitions": "2",
    "transaction.state.log.replication.factor": "1",
    "transaction.state.log.min.isr": "1",
}


class Node:
    """What ``server.Broker`` hands the coordinator services, and nothing more."""

    def __init__(self, tmp_path, loop, **settings: str) -> None:
        self.clock = MockClock(TS)
        self.node_id = NODE
        self.config = BrokerConfig.from_properties({**SETTINGS, **settings})
        self.store = EmbeddedStore(tmp_path / "metadata.json", clock=self.clock, fsync=False)
        paths.ensure_base_paths(self.store)
        self.endpoint = BrokerEndpoint(NODE, "127.0.0.1", 9092)
        self.cache = MetadataCache("cluster", NODE, "PLAINTEXT")
        self.cache.put_broker(self.endpoint, {"PLAINTEXT": self.endpoint})
        topic_configs = TopicConfigs(self.store, self.cache, self.clock)
        self.admin = AdminManager(self.store, self.cache, self.config, topic_configs)
        self.logs = LogManager([str(tmp_path / "logs")], self.clock, {})
        self.logs.load("cluster", NODE)
        self.timer = Timer(None, self.clock)     # run by ``advance``, not by the loop
        # Set by a test once it made one; the replica manager asks through a callable,
        # as it does on a broker.
        self.txn_coordinator = None
        self.replica_manager = ReplicaManager(
            self.logs, NODE, lambda name: {}, cache=self.cache, config=self.config,
            clock=self.clock, txn_coordinator=lambda: self.txn_coordinator)
        self.replica_manager.attach_purgatories(
            Purgatory("Fetch", self.timer), Purgatory("Produce", self.timer), loop)
        self.producer_ids = ProducerIdManager(self.store, NODE)

    def collaborators(self) -> dict:
        """The keyword arguments both services take from the broker."""
        return dict(config=self.config, clock=self.clock, node_id=self.node_id,
                    cache=self.cache, admin=self.admin, replica_manager=self.replica_manager,
                    timer=self.timer)

    def lead(self, topic: str, partitions=(0,), replicas=(NODE,), isr=None) -> None:
        """The controller's LeaderAndIsr for ``topic``: led here, at epoch 0."""
        states = {i: PartitionState(i, list(replicas), NODE, 0,
                                    list(replicas if isr is None else isr), controller_epoch=1)
                  for i in partitions}
        topic_id = uuid.uuid5(uuid.NAMESPACE_DNS, topic)
        self.cache.put_topic(TopicMetadata(topic, topic_id, states))
        errors = self.replica_manager.become_leader_or_follower(
            1, 1, [PartitionChange(topic, topic_id, s, True) for s in states.values()])
        assert set(errors.values()) == {0}, errors
        self.cache.notify_topics([topic])

    def advance(self, ms: int) -> None:
        self.clock.advance(ms)
        self.timer.advance_clock()

    def close(self) -> None:
        self.timer.close()
        self.logs.shutdown()
        self.store.close()
