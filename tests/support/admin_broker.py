"""An admin harness: the parts a broker's AdminManager and TopicConfigs work with, over a
real metadata store (Broker; the handler tests put them in a ``Services``), and
UpdateMetadata helpers (um)."""
from __future__ import annotations

import uuid

from kafkapy.admin.manager import AdminManager
from kafkapy.clock import MockClock
from kafkapy.config.broker import BrokerConfig
from kafkapy.config.topic_configs import TopicConfigs
from kafkapy.metadata import paths
from kafkapy.metadata.cache import BrokerEndpoint, MetadataCache
from kafkapy.metadata.embedded import EmbeddedStore
from kafkapy.protocol.inter_broker import UpdateMetadataRequest as UM
from kafkapy.server import reapply_topic_config


TS = 1_700_000_000_000


class Broker:
    """What the server's Broker hands AdminManager and TopicConfigs."""

    def __init__(self, tmp_path, brokers=(0, 1, 2), racks=None, store=None):
        self.node_id = 0
        self.clock = MockClock(TS)
        self.store = store or EmbeddedStore(tmp_path / "metadata.json", clock=self.clock,
                                            fsync=False)
        paths.ensure_base_paths(self.store)
        self.cache = MetadataCache("cluster", 0, "PLAINTEXT")
        for b in brokers:
            endpoint = BrokerEndpoint(b, "127.0.0.1", 9000 + b, (racks or {}).get(b))
            self.cache.put_broker(endpoint, {"PLAINTEXT": endpoint})
        self.replica_manager = None
        self.controller = None
        self.config = BrokerConfig.from_properties({"broker.id": "0"})
        self.topic_configs = TopicConfigs(self.store, self.cache, self.clock)
        self.topic_configs.add_listener(lambda name, _overrides: reapply_topic_config(
            self.replica_manager, name, self.topic_config))
        self.admin = AdminManager(self.store, self.cache, self.config, self.topic_configs)

    def topic_config(self, name):
        return dict(self.topic_configs.overrides(name))


def um(topic, partitions, *, brokers=(0, 1, 2), topic_id=uuid.UUID(int=7)):
    """UpdateMetadata v8: ``partitions`` = [(index, leader, replicas)] (leader -2: deleted)."""
    states = [UM.UpdateMetadataPartitionState(
        topic_name=topic, partition_index=i, controller_epoch=1, leader=leader, leader_epoch=0,
        isr=list(replicas), zk_version=0, replicas=list(replicas), offline_replicas=[])
        for i, leader, replicas in partitions]
    live = [UM.UpdateMetadataBroker(id=b, v0_host="", v0_port=0, rack=None, endpoints=[
        UM.UpdateMetadataBroker.UpdateMetadataEndpoint(
            port=9000 + b, host="127.0.0.1", listener="PLAINTEXT", security_protocol=0)])
        for b in brokers]
    return UM(version=8, controller_id=0, controller_epoch=1, broker_epoch=-1,
              is_k_raft_controller=False, type=0, topic_states=[UM.UpdateMetadataTopicState(
                  topic_name=topic, topic_id=topic_id, partition_states=states)],
              live_brokers=live)
