"""Dynamic broker config changes travel as Kafka's do: AdminManager writes
/config/brokers/<entity> plus a /config/changes notification ``brokers/<entity>``, and
every broker's notification follower (TopicConfigs) hands it to ``dynamic_config.reload``;
the writing broker applies its own change at once.  Two brokers on one real store."""
from __future__ import annotations

import asyncio

import pytest

from kafkapy.admin.manager import AdminManager
from kafkapy.clock import MockClock
from kafkapy.config.broker import BrokerConfig
from kafkapy.config.dynamic import DynamicBrokerConfig
from kafkapy.config.topic_configs import TopicConfigs
from kafkapy.log.manager import LogManager
from kafkapy.metadata import paths
from kafkapy.metadata.cache import MetadataCache
from kafkapy.metadata.embedded import EmbeddedStore
from kafkapy.server import log_config_listener
from tests.support.admin_broker import TS
from tests.support.topic_configs import FakeReplicaManager


class Broker:
    """What the dynamic config path uses of the server's Broker."""

    def __init__(self, store, node_id: int, clock, log_dir) -> None:
        self.node_id = node_id
        self.clock = clock
        self.store = store
        self.config = BrokerConfig.from_properties({"broker.id": str(node_id)})
        self.cache = MetadataCache("cluster", node_id, "PLAINTEXT")
        self.controller = None
        self.replica_manager = FakeReplicaManager([("t", 0)])
        self.log_manager = LogManager([str(log_dir)], clock, self.config.topic_defaults)
        self.dynamic_config = DynamicBrokerConfig(self.config, store, node_id)
        self.dynamic_config.add_listener(log_config_listener(
            self.config, self.replica_manager, self.topic_config))
        self.topic_configs = TopicConfigs(store, self.cache, clock,
                                          dynamic_config=self.dynamic_config)
        self.admin = AdminManager(store, self.cache, self.config, self.topic_configs,
                                  dynamic_config=self.dynamic_config)

    def topic_config(self, name):
        return dict(self.config.topic_defaults())


@pytest.fixture
def brokers(tmp_path):
    clock = MockClock(TS)
    store = EmbeddedStore(tmp_path / "metadata.json", clock=clock, fsync=False)
    paths.ensure_base_paths(store)
    pair = [Broker(store, n, clock, tmp_path / f"logs-{n}") for n in (0, 1)]
    yield pair
    for b in pair:
        b.topic_configs.stop()
    store.close()


async def _settle():
    for _ in range(5):
        await asyncio.sleep(0)


async def test_change_written_notified_and_applied_everywhere(brokers):
    zero, one = brokers
    for b in brokers:
        b.dynamic_config.load()
        b.topic_configs.start()
    zero.admin.alter_broker_configs(paths.DEFAULT_ENTITY, {"log.retention.ms": "5000"})
    zero.admin.alter_broker_configs("0", {"leader.replication.throttled.rate": "100"})
    assert zero.config["leader.replication.throttled.rate"] == 100      # at once, here
    children = zero.store.get_children(paths.CONFIG_CHANGES)
    notes = [paths.decode_config_change(zero.store.get(f"{paths.CONFIG_CHANGES}/{c}")[0])
             for c in sorted(children)]
    assert notes == ["brokers/<default>", "brokers/0"]
    assert paths.decode_entity_config(zero.store.get("/config/brokers/0")[0]) == {
        "leader.replication.throttled.rate": "100"}
    one.topic_configs.process_changes()
    await _settle()
    for b in brokers:
        assert b.config.log_retention_ms == 5000
        assert b.config.topic_defaults()["retention.ms"] == 5000
        assert b.log_manager.default_topic_config["retention.ms"] == 5000
        assert b.replica_manager.partitions[("t", 0)].log.configs[-1]["retention.ms"] == 5000
    # Broker 0's own layer is not broker 1's.
    assert one.config["leader.replication.throttled.rate"] == 2 ** 63 - 1


async def test_layers_loaded_at_start(brokers):
    zero, one = brokers
    zero.admin.alter_broker_configs("1", {"follower.replication.throttled.rate": "7"})
    one.dynamic_config.load()
    assert one.config["follower.replication.throttled.rate"] == 7
