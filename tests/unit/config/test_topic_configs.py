"""TopicConfigs on a real EmbeddedStore: overrides cached from /config/topics, changes
followed through /config/changes (Kafka's ZkConfigManager semantics)."""
from __future__ import annotations

import asyncio
import json
import uuid

import pytest

from kafkapy.metadata import paths
from kafkapy.metadata.cache import PartitionState, TopicMetadata
from kafkapy.metadata.zk_store import ZooKeeperStore
from tests.support.admin_broker import Broker, um
from tests.support.topic_configs import FakeReplicaManager
from tests.support.zookeeper_server import zk_connect, zookeeper_server  # noqa: F401  (fixtures)


@pytest.fixture
def broker(tmp_path):
    b = Broker(tmp_path)
    b.replica_manager = FakeReplicaManager([("t", 0), ("t", 1), ("u", 0)])
    yield b
    b.topic_configs.stop()
    b.store.close()


def write_config(broker, name, configs, notify=True, version=2):
    """What another broker's AlterConfigs writes."""
    path = paths.topic_config_path(name)
    payload = paths.encode_entity_config(configs)
    if broker.store.exists(path):
        broker.store.set(path, payload)
    else:
        broker.store.create(path, payload, makepath=True)
    if notify:
        data = (paths.encode_config_change(f"topics/{name}") if version == 2 else json.dumps(
            {"version": 1, "entity_type": "topics", "entity_name": name}).encode())
        broker.store.create(paths.CONFIG_CHANGE_SEQ_PATH, data, sequence=True, makepath=True)


async def settle():
    for _ in range(3):
        await asyncio.sleep(0)


def test_overrides_read_on_miss_and_missing_not_cached(broker):
    assert broker.topic_configs.overrides("t") == {}
    write_config(broker, "t", {"retention.ms": "7"}, notify=False)
    # Not cached while missing: a topic created later (elsewhere) is read then.
    assert broker.topic_configs.overrides("t") == {"retention.ms": "7"}
    write_config(broker, "t", {"retention.ms": "8"}, notify=False)
    assert broker.topic_configs.overrides("t") == {"retention.ms": "7"}   # cached


async def test_change_notification_applies_to_cache_and_hosted_logs(broker):
    write_config(broker, "t", {"retention.ms": "7"}, notify=False)
    broker.cache.put_topic(TopicMetadata("t", uuid.uuid4(),
                                         {0: PartitionState(0, [0], 0, 0, [0])},
                                         {"retention.ms": "7"}))
    broker.topic_configs.start()
    assert broker.topic_configs.overrides("t") == {"retention.ms": "7"}
    write_config(broker, "t", {"retention.ms": "9", "cleanup.policy": "compact"})
    await settle()
    assert broker.topic_configs.overrides("t") == {"retention.ms": "9", "cleanup.policy": "compact"}
    assert broker.cache.topic("t").configs == {"retention.ms": "9", "cleanup.policy": "compact"}
    logs = broker.replica_manager.partitions
    assert logs[("t", 0)].log.configs[-1] == {"retention.ms": "9", "cleanup.policy": "compact"}
    assert logs[("t", 1)].log.configs == logs[("t", 0)].log.configs
    assert logs[("u", 0)].log.configs == []
    # version 1 notifications too, and each notification is processed once
    write_config(broker, "t", {"retention.ms": "10"}, version=1)
    await settle()
    assert broker.topic_configs.overrides("t") == {"retention.ms": "10"}
    assert len(logs[("t", 0)].log.configs) == 2


async def test_existing_notifications_processed_at_start_and_purged_when_old(broker):
    write_config(broker, "u", {"retention.ms": "1"})
    assert len(broker.store.get_children(paths.CONFIG_CHANGES)) == 1
    broker.topic_configs.start()
    assert broker.replica_manager.partitions[("u", 0)].log.configs == [{"retention.ms": "1"}]
    broker.clock.advance(16 * 60 * 1000)
    write_config(broker, "u", {"retention.ms": "2"})
    await settle()
    children = broker.store.get_children(paths.CONFIG_CHANGES)
    assert len(children) == 1 and children[0].endswith("1")   # the old one purged
    assert broker.topic_configs.overrides("u") == {"retention.ms": "2"}


async def test_deleted_topic_forgotten(broker):
    broker.topic_configs.start()
    write_config(broker, "t", {"retention.ms": "7"}, notify=False)
    broker.cache.apply_update_metadata(um("t", [(0, 0, [0])]))
    assert broker.cache.topic("t").configs == {}     # this fake's cache has no topic_overrides
    assert broker.topic_configs.overrides("t") == {"retention.ms": "7"}
    broker.store.delete(paths.topic_config_path("t"))
    broker.cache.apply_update_metadata(um("t", [(0, -2, [0])]))
    assert broker.topic_configs.overrides("t") == {}


# -- two brokers on a real ZooKeeper ----------------------------------------------------------
class ZkBroker(Broker):
    def __init__(self, connect, tmp_path):
        super().__init__(tmp_path, store=ZooKeeperStore(connect, 6000, 15000))
        self.replica_manager = FakeReplicaManager([("t", 0)])


async def test_a_change_on_one_broker_reaches_another(request, tmp_path):
    connect = request.getfixturevalue("zk_connect")
    one, two = ZkBroker(connect, tmp_path / "1"), ZkBroker(connect, tmp_path / "2")
    try:
        one.admin.create_topic("t", 1, 1, configs={"retention.ms": "5"})
        for b in (one, two):
            b.topic_configs.start()
            assert b.topic_configs.overrides("t") == {"retention.ms": "5"}
        one.admin.alter_topic_configs("t", {"retention.ms": "6"})
        assert one.topic_configs.overrides("t") == {"retention.ms": "6"}   # at once
        for _ in range(1500):
            if two.topic_configs.overrides("t") == {"retention.ms": "6"}:
                break
            await asyncio.sleep(0.02)
        assert two.topic_configs.overrides("t") == {"retention.ms": "6"}
        assert two.replica_manager.partitions[("t", 0)].log.configs[-1] == {"retention.ms": "6"}
    finally:
        for b in (one, two):
            b.topic_configs.stop()
            b.store.close()
