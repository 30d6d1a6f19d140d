"""AdminManager on a real EmbeddedStore and MetadataCache: the znodes it writes, its checks
(Kafka's messages), and the waits on the cache (DelayedCreatePartitions / DelayedDeleteTopics)."""
from __future__ import annotations

import asyncio

import pytest

from kafkapy.metadata import paths
from kafkapy.metadata.topics import parse_topic_id
from kafkapy.protocol.errors import ErrorCode as E
from kafkapy.protocol.errors import KafkaError
from tests.support.admin_broker import Broker, um


@pytest.fixture
def broker(tmp_path):
    b = Broker(tmp_path)
    yield b
    b.store.close()


def stored_assignment(broker, name):
    data, _ = broker.store.get(paths.topic_path(name))
    return paths.decode_topic_assignment(data, name)


# -- creation ----------------------------------------------------------------------------
def test_create_topic_writes_config_then_assignment(broker):
    topic = broker.admin.create_topic("t", 4, 2, configs={"retention.ms": "1000"})
    assert len(topic.partitions) == 4
    assert all(len(p.replicas) == 2 and p.leader == -1 for p in topic.partitions.values())
    stored = stored_assignment(broker, "t")
    assert stored.partitions == {i: p.replicas for i, p in topic.partitions.items()}
    assert parse_topic_id(stored.topic_id) == topic.topic_id
    data, _ = broker.store.get(paths.topic_config_path("t"))
    assert paths.decode_entity_config(data) == {"retention.ms": "1000"}
    assert "t" not in broker.cache.topics          # the controller's job, not admin's
    assert not broker.store.exists(paths.topic_partitions_path("t"))


def test_create_topic_validate_only_writes_nothing(broker):
    topic = broker.admin.create_topic("t", 2, 3, validate_only=True)
    assert len(topic.partitions) == 2
    assert not broker.store.exists(paths.topic_path("t"))
    assert not broker.store.exists(paths.topic_config_path("t"))


@pytest.mark.parametrize("name, partitions, rf, assignments, configs, code, message", [
    ("bad name", 1, 1, None, None, E.INVALID_TOPIC_EXCEPTION,
     "Topic name is invalid: 'bad name' contains one or more characters other than ASCII "
     "alphanumerics, '.', '_' and '-'"),
    ("t", 1, 4, None, None, E.INVALID_REPLICATION_FACTOR,
     "Replication factor: 4 larger than available brokers: 3."),
    ("t", 0, 1, None, None, E.INVALID_PARTITIONS, "Number of partitions must be larger than 0."),
    ("t", -1, -1, {0: [0, 1], 1: [0]}, None, E.INVALID_REPLICA_ASSIGNMENT,
     "All partitions should have the same number of replicas"),
    ("t", -1, -1, {0: [0, 0]}, None, E.INVALID_REPLICA_ASSIGNMENT,
     "Duplicate replica assignment found: HashMap(0 -> ArrayBuffer(0, 0))"),
    ("t", -1, -1, {1: [0]}, None, E.INVALID_REPLICA_ASSIGNMENT,
     "partitions should be a consecutive 0-based integer sequence"),
    ("t", 1, 1, None, {"no.such.key": "1"}, E.INVALID_CONFIG, None),
])
def test_create_topic_errors(broker, name, partitions, rf, assignments, configs, code, message):
    with pytest.raises(KafkaError) as e:
        broker.admin.create_topic(name, partitions, rf, assignments, configs)
    assert e.value.code == code
    if message is not None:
        assert e.value.message == message
    assert broker.store.get_children(paths.BROKER_TOPICS) == []


def test_create_topic_exists_in_store_or_cache_and_collisions(broker):
    broker.admin.create_topic("a.b", 1, 1)
    with pytest.raises(KafkaError) as e:
        broker.admin.create_topic("a.b", 1, 1)
    assert (e.value.code, e.value.message) == (E.TOPIC_ALREADY_EXISTS, "Topic 'a.b' already exists.")
    with pytest.raises(KafkaError) as e:   # only in the store: the cache does not know it yet
        broker.admin.create_topic("a_b", 1, 1)
    assert (e.value.code, e.value.message) == (
        E.INVALID_TOPIC_EXCEPTION, "Topic 'a_b' collides with existing topics: a.b")


def test_manual_assignment_may_name_unknown_brokers(broker):
    topic = broker.admin.create_topic("t", -1, -1, {0: [7], 1: [0]})
    assert stored_assignment(broker, "t").partitions == {0: [7], 1: [0]}
    assert topic.partitions[0].replicas == [7]


def test_rack_aware_creation_and_missing_rack(tmp_path):
    b = Broker(tmp_path, brokers=(0, 1, 2, 3), racks={0: "a", 1: "a", 2: "b", 3: "b"})
    topic = b.admin.create_topic("t", 8, 2)
    for p in topic.partitions.values():
        assert {b.cache.brokers[r].rack for r in p.replicas} == {"a", "b"}
    b.store.close()
    b2 = Broker(tmp_path / "2", brokers=(0, 1), racks={0: "a"})
    with pytest.raises(KafkaError) as e:
        b2.admin.create_topic("t", 1, 1)
    assert (e.value.code, e.value.message) == (E.UNKNOWN, None)
    with pytest.raises(KafkaError) as e:   # create partitions: Kafka's Enforced check
        b2.admin.create_topic("u", -1, -1, {0: [0]})
        b2.admin.create_partitions("u", 2)
    assert (e.value.code, e.value.message) == (E.UNKNOWN, None)
    b2.store.close()


# -- partitions ----------------------------------------------------------------------------
def test_create_partitions_keeps_topic_id_and_continues_from_partition_0_leader(broker):
    broker.admin.create_topic("t", -1, -1, {0: [1, 2], 1: [2, 0]})
    before = stored_assignment(broker, "t")
    combined = broker.admin.create_partitions("t", 5)
    after = stored_assignment(broker, "t")
    assert after.topic_id == before.topic_id
    assert after.partitions == combined
    # Kafka: start index = the position of partition 0's first replica (broker 1), shift too.
    assert combined == {0: [1, 2], 1: [2, 0], 2: [0, 2], 3: [1, 2], 4: [2, 0]}


def test_create_partitions_manual_and_validate_only(broker):
    broker.admin.create_topic("t", 1, 2)
    combined = broker.admin.create_partitions("t", 3, [[0, 1], [2, 0]], validate_only=True)
    assert {k: combined[k] for k in (1, 2)} == {1: [0, 1], 2: [2, 0]}
    assert len(stored_assignment(broker, "t").partitions) == 1
    broker.admin.create_partitions("t", 3, [[0, 1], [2, 0]])
    assert stored_assignment(broker, "t").partitions[2] == [2, 0]


@pytest.mark.parametrize("count, assignments, code, message", [
    (1, None, E.INVALID_PARTITIONS, "Topic already has 2 partitions."),
    (1 - 1, None, E.INVALID_PARTITIONS,
     "Topic currently has 2 partitions, which is higher than the requested 0."),
    (3, [[5, 0]], E.INVALID_REPLICA_ASSIGNMENT, "Unknown broker(s) in replica assignment: 5."),
    (4, [[0, 1]], E.INVALID_REPLICA_ASSIGNMENT,
     "Increasing the number of partitions by 2 but 1 assignments provided."),
    (3, [[]], E.INVALID_REPLICA_ASSIGNMENT,
     "Cannot have replication factor of 0 for partition id 2."),
    (3, [[1, 1]], E.INVALID_REPLICA_ASSIGNMENT,
     "Duplicate brokers not allowed in replica assignment: 1, 1 for partition id 2."),
    (4, [[1], [0, 1, 2]], E.INVALID_REPLICA_ASSIGNMENT,
     "Inconsistent replication factor between partitions, partition 0 has 2 while partitions "
     "[2, 3] have replication factors [1, 3], respectively."),
])
def test_create_partitions_errors(broker, count, assignments, code, message):
    broker.admin.create_topic("t", -1, -1, {0: [0, 1], 1: [1, 2]})
    if count == 1 and assignments is None:
        count = 2
    with pytest.raises(KafkaError) as e:
        broker.admin.create_partitions("t", count, assignments)
    assert (e.value.code, e.value.message) == (code, message)
    assert len(stored_assignment(broker, "t").partitions) == 2


def test_create_partitions_unknown_topic_and_reassignment(broker):
    with pytest.raises(KafkaError) as e:
        broker.admin.create_partitions("nope", 2)
    assert (e.value.code, e.value.message) == (E.UNKNOWN_TOPIC_OR_PARTITION,
                                               "The topic 'nope' does not exist.")
    broker.store.create(paths.topic_path("r"), paths.encode_topic_assignment(
        {0: [0, 1]}, None, adding_replicas={0: [1]}), makepath=True)
    with pytest.raises(KafkaError) as e:
        broker.admin.create_partitions("r", 2)
    assert (e.value.code, e.value.message) == (
        E.REASSIGNMENT_IN_PROGRESS, "A partition reassignment is in progress for the topic 'r'.")


@pytest.mark.parametrize("name", ["fuz\x00", ".."])
def test_create_partitions_of_a_name_no_znode_can_hold(broker, name):
    # ZooKeeper's client refuses the path (IllegalArgumentException): Kafka's
    # UNKNOWN_SERVER_ERROR without a message, not a failed handler
    with pytest.raises(KafkaError) as e:
        broker.admin.create_partitions(name, 2)
    assert (e.value.code, e.value.message) == (E.UNKNOWN, None)     # UNKNOWN_SERVER_ERROR


# -- deletion and configs ------------------------------------------------------------------
def test_delete_topic_marks_it_once(broker):
    broker.admin.create_topic("t", 1, 1)
    broker.admin.delete_topic("t")
    broker.admin.delete_topic("t")     # already marked: fine, as Kafka
    assert broker.store.get_children(paths.ADMIN_DELETE_TOPICS) == ["t"]
    assert broker.store.exists(paths.topic_path("t"))     # the controller deletes it
    assert broker.admin.is_queued_for_deletion("t")
    with pytest.raises(KafkaError) as e:
        broker.admin.delete_topic("nope")
    assert (e.value.code, e.value.message) == (E.UNKNOWN_TOPIC_OR_PARTITION,
                                               "Topic `nope` to delete does not exist")


async def test_alter_topic_configs_writes_config_and_notification(broker):
    broker.admin.create_topic("t", 1, 1, configs={"retention.ms": "5"})
    broker.topic_configs.start()
    assert broker.topic_configs.overrides("t") == {"retention.ms": "5"}
    broker.admin.alter_topic_configs("t", {"segment.bytes": "1048576"})
    assert broker.admin.stored_topic_configs("t") == {"segment.bytes": "1048576"}
    [change] = broker.store.get_children(paths.CONFIG_CHANGES)
    data, _ = broker.store.get(f"{paths.CONFIG_CHANGES}/{change}")
    assert paths.decode_config_change(data) == "topics/t"
    assert broker.topic_configs.overrides("t") == {"segment.bytes": "1048576"}
    with pytest.raises(KafkaError) as e:
        broker.admin.alter_topic_configs("t", {"segment.bytes": "x"})
    assert e.value.code == E.INVALID_CONFIG
    with pytest.raises(KafkaError) as e:
        broker.admin.alter_topic_configs("nope", {})
    assert (e.value.code, e.value.message) == (E.UNKNOWN_TOPIC_OR_PARTITION,
                                               "Topic 'nope' does not exist.")


# -- waits ---------------------------------------------------------------------------------
async def test_wait_for_topics_resolves_on_update_metadata(broker):
    wait = asyncio.ensure_future(broker.admin.wait_for_topics({"t": 2}, 5000))
    await asyncio.sleep(0)
    broker.cache.apply_update_metadata(um("t", [(0, 1, [1])]))
    await asyncio.sleep(0)
    assert not wait.done()                  # partition 1 not there yet
    broker.cache.apply_update_metadata(um("t", [(0, 1, [1]), (1, -1, [2])]))
    await asyncio.sleep(0)
    assert not wait.done()                  # partition 1 without a leader
    broker.cache.apply_update_metadata(um("t", [(1, 2, [2])]))
    assert await asyncio.wait_for(wait, 30) == []


async def test_wait_for_topics_times_out_and_zero_timeout(broker):
    broker.cache.apply_update_metadata(um("ready", [(0, 0, [0])]))
    assert await broker.admin.wait_for_topics({"ready": 1, "late": 1}, 0) == ["late"]
    assert await broker.admin.wait_for_topics(["ready", "late"], 50) == ["late"]
    assert await broker.admin.wait_for_topics(["ready"], 50) == []
    assert broker.admin._waiters == []


async def test_wait_for_deletion(broker):
    broker.cache.apply_update_metadata(um("t", [(0, 0, [0])]))
    wait = asyncio.ensure_future(broker.admin.wait_for_deletion(["t", "gone"], 5000))
    await asyncio.sleep(0)
    assert not wait.done()
    broker.cache.apply_update_metadata(um("t", [(0, -2, [0])]))
    assert await asyncio.wait_for(wait, 30) == []
    broker.cache.apply_update_metadata(um("u", [(0, 0, [0])]))
    assert await broker.admin.wait_for_deletion(["u"], 30) == ["u"]


def test_create_topic_checks_in_kafkas_order(broker):
    def code(*args, **kw):
        with pytest.raises(KafkaError) as e:
            broker.admin.create_topic(*args, **kw)
        return e.value.code, e.value.message
    # The assignment before the name (ZkAdminManager computes it first) ...
    assert code("bad name", 1, 9) == (E.INVALID_REPLICATION_FACTOR,
                                      "Replication factor: 9 larger than available brokers: 3.")
    # ... the name before the configs ...
    assert code("bad name", 1, 1, configs={"no.such.key": "1"})[0] == E.INVALID_TOPIC_EXCEPTION
    # ... null configs (all named) before the assignment.
    assert code("t", 1, 9, configs={"a": None, "b": None}) == (
        E.INVALID_CONFIG, "Null value not supported for topic configs: a,b")
    broker.cache.apply_update_metadata(um("known", [(0, 0, [0])]))
    assert code("known", 1, 9) == (E.TOPIC_ALREADY_EXISTS, "Topic 'known' already exists.")


def test_internal_topic_refused_while_too_few_brokers_are_alive(tmp_path):
    """Kafka 3.9: the configured replication factor, not capped; FindCoordinator then
    answers COORDINATOR_NOT_AVAILABLE (the coordinators turn the error into it)."""
    from kafkapy.coordinator.internal_topic import ensure_internal_topic
    b = Broker(tmp_path, brokers=(0,))
    compact = {"cleanup.policy": "compact"}
    with pytest.raises(KafkaError) as e:
        ensure_internal_topic(b.cache, b.admin, "__consumer_offsets", 50, 3, compact)
    assert (e.value.code, e.value.message) == (
        E.INVALID_REPLICATION_FACTOR, "Replication factor: 3 larger than available brokers: 1.")
    assert not b.store.exists(paths.topic_path("__consumer_offsets"))
    ensure_internal_topic(b.cache, b.admin, "__consumer_offsets", 50, 1, compact)
    assert len(stored_assignment(b, "__consumer_offsets").partitions) == 50
    ensure_internal_topic(b.cache, b.admin, "__consumer_offsets", 50, 1, {})   # written already
    b.store.close()


def test_creation_racing_another_brokers_answers_topic_already_exists(broker, monkeypatch):
    """Two brokers auto-creating ``__consumer_offsets`` at once (each for its first
    FindCoordinator) both find no znode; the one that writes second gets
    TOPIC_ALREADY_EXISTS, which ensure_internal_topic takes as done, not a failed handler."""
    from kafkapy.coordinator.internal_topic import ensure_internal_topic
    store_exists = broker.store.exists
    other = {"done": False}

    def exists(path, *args, **kw):
        if path == paths.topic_config_path("__consumer_offsets") and not other["done"]:
            other["done"] = True            # the other broker writes both znodes now
            broker.store.create(path, paths.encode_entity_config({}), makepath=True)
            broker.store.create(paths.topic_path("__consumer_offsets"),
                                paths.encode_topic_assignment({0: [1]}, "AAAAAAAAAAAAAAAAAAAAAA"),
                                makepath=True)
            return False
        return store_exists(path, *args, **kw)
    monkeypatch.setattr(broker.store, "exists", exists)
    with pytest.raises(KafkaError) as e:
        broker.admin.create_topic("__consumer_offsets", 1, 1, configs={"cleanup.policy": "compact"})
    assert e.value.code == E.TOPIC_ALREADY_EXISTS
    data, _ = broker.store.get(paths.topic_config_path("__consumer_offsets"))
    assert paths.decode_entity_config(data) == {"cleanup.policy": "compact"}
    ensure_internal_topic(broker.cache, broker.admin, "__consumer_offsets", 1, 1, {})
