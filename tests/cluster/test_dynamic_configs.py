"""Dynamic broker configs across the cluster, as Kafka 3.9's ZooKeeper mode keeps them.

A config set for broker 2 and one for the cluster default (<default>), both with tools
bootstrapped at broker 1 (Kafka's kafka-configs.sh and kafkapy-configs), are stored in
``/config/brokers/2`` and ``/config/brokers/<default>`` with ``/config/changes``
notifications; every broker follows the notifications, describes what concerns it
(DescribeConfigs of itself and of the default resource) and applies it: a per-broker
``message.max.bytes`` refuses larger records on the partition broker 2 leads only, a
default one on every broker's partitions, and deleting it lifts the limit everywhere.
A raw AlterConfigs for broker 2 sent to broker 1 is refused as Kafka refuses it.
Turning unclean.leader.election.enable on for the cluster default elects an offline
partition's out-of-ISR replica at once.

The cluster's cleaners get a small dedupe buffer: a message.max.bytes change restarts
Kafka's log cleaner (LogCleaner reconfigures on it), and with the reference brokers' small
heaps the default 128 MiB buffer allocated again ran them out of memory, which kills
Kafka's /config/changes thread for good.
"""
from __future__ import annotations

import pytest
from kafka import KafkaProducer
from kafka.errors import MessageSizeTooLargeError

from tests.support.cluster_clients import (create_topic, kafkapy_tool, leader_and_isr,
                                  offline_partition, request)
from tests.support.cluster import FAILOVER_S, kafka_tool, running_cluster, wait_for
from tests.support.zookeeper_server import zookeeper_server  # noqa: F401  (fixture)

BROKER, DEFAULT_SOURCE, BROKER_SOURCE = 4, 3, 2
INVALID_REQUEST = 42
LIMIT = 3000
BIG = 6000


def _configs(c, tool: str, *args: str):
    bootstrap = ("--bootstrap-server", c.bootstrap(1))
    if tool == "kafka":
        result = kafka_tool("kafka-configs.sh", *bootstrap, *args)
    else:
        result = kafkapy_tool("kafkapy-configs", *bootstrap, *args)
    assert result.returncode == 0, result.stdout + result.stderr
    return result.stdout.splitlines()


def _described(c, node: int, name: str, keys=None) -> dict[str, tuple[str | None, int]]:
    """Broker ``node``'s DescribeConfigs of BROKER ``name``: {key: (value, source)}."""
    response = request(c, node, 32, 1, resources=[(BROKER, name, keys)], include_synonyms=False)
    result = response.results[0]
    assert result.error_code == 0, result
    return {e.name: (e.value, e.config_source) for e in result.configs}


def _accepts(producer: KafkaProducer, topic: str, partition: int, size: int) -> bool:
    try:
        producer.send(topic, b"x" * size, partition=partition).get(timeout=30)
        return True
    except MessageSizeTooLargeError:
        return False


@pytest.fixture(scope="module")
def shared_cluster(tmp_path_factory, zookeeper_server):  # noqa: F811
    yield from running_cluster(tmp_path_factory.mktemp("cluster"), zookeeper_server,
                               {"log.cleaner.dedupe.buffer.size": str(2 * 1024 * 1024)})


@pytest.fixture
def producer(shared_cluster):
    c = shared_cluster
    p = KafkaProducer(bootstrap_servers=c.bootstrap(1), max_request_size=4_000_000, retries=0,
                      acks="all", linger_ms=0)
    yield p
    p.close(timeout=5)


@pytest.fixture
def spread(shared_cluster, unique):
    """A topic whose partition i is led by broker i + 1 (one replica each)."""
    c = shared_cluster
    topic = unique("dyn")
    create_topic(c.bootstrap(1), topic, assignment={0: [1], 1: [2], 2: [3]})
    c.wait_topic(topic, 3)
    return topic


def _limited(producer, topic: str) -> list[int]:
    """The partitions (leaders 1, 2, 3) that refuse a BIG record."""
    return [p for p in range(3) if not _accepts(producer, topic, p, BIG)]


def test_per_broker_config_on_broker_2_through_broker_1(shared_cluster, producer, spread):
    c = shared_cluster
    assert all(_accepts(producer, spread, p, BIG) for p in range(3))
    lines = _configs(c, "kafka", "--entity-type", "brokers", "--entity-name", "2", "--alter",
                     "--add-config", f"message.max.bytes={LIMIT},leader.replication.throttled.rate=1048576")
    assert lines == ["Completed updating config for broker 2."]
    assert c.znode_json("/config/brokers/2") == {"version": 1, "config": {
        "message.max.bytes": str(LIMIT), "leader.replication.throttled.rate": "1048576"}}
    notes = [c.znode_json(f"/config/changes/{n}") for n in c.zk.get_children("/config/changes")]
    assert {"version": 2, "entity_path": "brokers/2"} in notes

    wait_for(lambda: _limited(producer, spread) == [1], 30, "only broker 2 refuses big records")
    keys = ["message.max.bytes", "leader.replication.throttled.rate"]
    assert _described(c, 2, "2", keys) == {
        "message.max.bytes": (str(LIMIT), BROKER_SOURCE),
        "leader.replication.throttled.rate": ("1048576", BROKER_SOURCE)}
    for node in (1, 3):
        assert _described(c, node, str(node), keys) == {"message.max.bytes": ("1048588", 5)}

    # Broker 1 refuses to change broker 2's config itself, as Kafka's ZooKeeper mode does.
    response = request(c, 1, 33, 1, resources=[(BROKER, "2", [("message.max.bytes", "1")])],
                       validate_only=False)
    assert (response.responses[0].error_code, response.responses[0].error_message) == (
        INVALID_REQUEST, "Unexpected broker id, expected 1, but received 2")

    lines = _configs(c, "kafkapy", "--entity-type", "brokers", "--entity-name", "2", "--alter",
                     "--delete-config", "message.max.bytes,leader.replication.throttled.rate")
    assert lines == ["Completed updating config for broker 2."]
    wait_for(lambda: _limited(producer, spread) == [], 30, "no broker refuses big records")
    assert _described(c, 2, "2", keys) == {"message.max.bytes": ("1048588", 5)}


def test_cluster_default_through_broker_1(shared_cluster, producer, spread):
    c = shared_cluster
    lines = _configs(c, "kafkapy", "--entity-type", "brokers", "--entity-default", "--alter",
                     "--add-config", f"message.max.bytes={LIMIT},log.cleaner.backoff.ms=16000")
    assert lines == ["Completed updating default config for brokers in the cluster."]
    assert c.znode_json("/config/brokers/<default>")["config"] == {
        "message.max.bytes": str(LIMIT), "log.cleaner.backoff.ms": "16000"}

    wait_for(lambda: _limited(producer, spread) == [0, 1, 2], 30, "every broker refuses big records")
    for node in (1, 2, 3):
        wait_for(lambda: _described(c, node, "") == {
            "message.max.bytes": (str(LIMIT), DEFAULT_SOURCE),
            "log.cleaner.backoff.ms": ("16000", DEFAULT_SOURCE)}, 30,
            f"broker {node} describes the default")
        assert _described(c, node, str(node), ["log.cleaner.backoff.ms"]) == {
            "log.cleaner.backoff.ms": ("16000", DEFAULT_SOURCE)}
    described = _configs(c, "kafka", "--entity-type", "brokers", "--entity-default", "--describe")
    assert described[0] == "Default configs for brokers in the cluster are:"
    assert sorted(described[1:]) == [
        "  log.cleaner.backoff.ms=16000 sensitive=false "
        "synonyms={DYNAMIC_DEFAULT_BROKER_CONFIG:log.cleaner.backoff.ms=16000}",
        f"  message.max.bytes={LIMIT} sensitive=false "
        f"synonyms={{DYNAMIC_DEFAULT_BROKER_CONFIG:message.max.bytes={LIMIT}}}"]

    # A per-broker value wins over the default on that broker only.
    _configs(c, "kafka", "--entity-type", "brokers", "--entity-name", "3", "--alter",
             "--add-config", f"message.max.bytes={2 * BIG}")
    wait_for(lambda: _limited(producer, spread) == [0, 1], 30, "broker 3's own value wins")

    _configs(c, "kafka", "--entity-type", "brokers", "--entity-name", "3", "--alter",
             "--delete-config", "message.max.bytes")
    _configs(c, "kafka", "--entity-type", "brokers", "--entity-default", "--alter",
             "--delete-config", "message.max.bytes,log.cleaner.backoff.ms")
    wait_for(lambda: _limited(producer, spread) == [], 30, "no broker refuses big records")
    for node in (1, 2, 3):
        wait_for(lambda: _described(c, node, "") == {}, 30, f"broker {node}: default cleared")


def test_default_unclean_election_elects_an_offline_partition(cluster, unique):
    """Kafka's DynamicLogConfig: turning unclean.leader.election.enable on for the cluster
    default makes the active controller retry offline partitions at once
    (enableDefaultUncleanLeaderElection), with no broker change needed."""
    c = cluster
    controller = c.controller_id()
    topic = unique("unclean-default")
    a, b = offline_partition(c, topic)

    def state():
        return leader_and_isr(c, topic)

    result = kafkapy_tool("kafkapy-configs", "--bootstrap-server", c.bootstrap(controller),
                          "--entity-type", "brokers", "--entity-default", "--alter",
                          "--add-config", "unclean.leader.election.enable=true")
    assert result.returncode == 0, result.stdout + result.stderr
    wait_for(lambda: state() == (b, [b]), FAILOVER_S,
             lambda: f"unclean election of {b} after the default changed: {state()}\n{c.summary()}")
