"""ElectLeaders through stock admin clients (confluent-kafka and kafka-python).

A healthy partition needs no election; an unknown one is reported; a request for
every partition leaves out the healthy ones, as Kafka's broker does.  The
unclean election is tested on a partition whose recorded leader and ISR are a
broker that never comes back (its state written into the metadata store while
the broker is down): the preferred replica is then not available, an unclean
election makes this broker leader with the next leader epoch, and the partition
takes records again.
"""
from __future__ import annotations

import contextlib
import subprocess
import sys
from pathlib import Path

import pytest
from confluent_kafka import KafkaError, TopicPartition
from confluent_kafka.admin import AdminClient, NewTopic
from kafka.admin import KafkaAdminClient

from kafkapy.metadata import paths
from kafkapy.metadata.embedded import EmbeddedStore
from kafkapy.protocol.messages import REQUESTS
from tests.support.client_common import produce_values, read_values
from tests.support.wire import WireClient

try:  # confluent-kafka >= 2.4
    from confluent_kafka import ElectionType
except ImportError:  # pragma: no cover - older wheels
    from confluent_kafka.admin import ElectionType

ELECTION_NOT_NEEDED = 84
PREFERRED_LEADER_NOT_AVAILABLE = 80
UNKNOWN_TOPIC_OR_PARTITION = 3
INVALID_REQUEST = 42


def _create(admin: AdminClient, topic: str, partitions: int = 1) -> None:
    admin.create_topics([NewTopic(topic, partitions, 1)])[topic].result(30)


def _elect(admin: AdminClient, election, partitions) -> dict:
    """{(topic, partition): error code or 0} from confluent-kafka's elect_leaders."""
    result = admin.elect_leaders(election, partitions).result(30)
    return {(tp.topic, tp.partition): (err.code() if err is not None else 0)
            for tp, err in result.items()}


def test_healthy_partitions_need_no_election(broker):
    admin = AdminClient({"bootstrap.servers": broker.bootstrap})
    _create(admin, "elect-healthy", 2)
    got = _elect(admin, ElectionType.PREFERRED, [TopicPartition("elect-healthy", 0),
                                                 TopicPartition("elect-healthy", 1),
                                                 TopicPartition("elect-healthy", 7)])
    assert got == {("elect-healthy", 0): ELECTION_NOT_NEEDED,
                   ("elect-healthy", 1): ELECTION_NOT_NEEDED,
                   ("elect-healthy", 7): UNKNOWN_TOPIC_OR_PARTITION}
    got = _elect(admin, ElectionType.UNCLEAN, [TopicPartition("elect-healthy", 0)])
    assert got == {("elect-healthy", 0): ELECTION_NOT_NEEDED}
    # Every partition: the ones needing no election are left out of the answer.
    assert _elect(admin, ElectionType.PREFERRED, None) == {}


def test_kafka_python_elect_leaders(broker):
    admin = AdminClient({"bootstrap.servers": broker.bootstrap})
    _create(admin, "elect-kp")
    client = KafkaAdminClient(bootstrap_servers=broker.bootstrap)
    try:
        response = client.elect_leaders(0, {"elect-kp": [0]})
        assert response.error_code == 0
        [(topic, codes)] = [(r.topic, [(p.partition_id, p.error_code) for p in r.partition_result])
                            for r in response.replica_election_results]
        assert (topic, codes) == ("elect-kp", [(0, ELECTION_NOT_NEEDED)])
    finally:
        client.close()


def _partition_meta(admin: AdminClient, topic: str):
    return admin.list_topics(topic, timeout=30).topics[topic].partitions[0]


@contextlib.contextmanager
def _store_while_stopped(broker):
    """The broker's metadata store, opened while the broker is stopped (it holds the
    store's lock while running); the broker starts again afterwards."""
    broker.stop()
    store = EmbeddedStore(broker.log_dir / "kafkapy-metadata.json")
    try:
        yield store
    finally:
        store.close()
        broker.start()


def _orphan_partition(broker, topic: str, dead_broker: int) -> int:
    """Record ``dead_broker`` as the partition's only leader and ISR member, as after
    that broker's loss; returns the recorded leader epoch."""
    path = paths.partition_state_path(topic, 0)
    with _store_while_stopped(broker) as store:
        data, _ = store.get(path)
        epoch = paths.decode_partition_state(data).leader_epoch + 1
        store.set(path, paths.encode_partition_state(dead_broker, epoch, [dead_broker], 1))
    return epoch


def test_unclean_election_brings_back_a_partition_whose_leader_is_gone(fresh_broker):
    admin = AdminClient({"bootstrap.servers": fresh_broker.bootstrap})
    topic = "elect-orphan"
    _create(admin, topic)
    produce_values(fresh_broker.bootstrap, topic, [b"before-0", b"before-1"])
    epoch = _orphan_partition(fresh_broker, topic, dead_broker=5)
    admin = AdminClient({"bootstrap.servers": fresh_broker.bootstrap})

    meta = _partition_meta(admin, topic)
    assert meta.leader == -1 and meta.error.code() == KafkaError.LEADER_NOT_AVAILABLE
    tp = TopicPartition(topic, 0)
    # The preferred replica (this broker) is not in the ISR: no clean election.
    not_available = {(topic, 0): PREFERRED_LEADER_NOT_AVAILABLE}
    assert _elect(admin, ElectionType.PREFERRED, [tp]) == not_available
    # A request for every partition reports this one: it needed an election.
    assert _elect(admin, ElectionType.PREFERRED, None) == not_available

    # The unclean election through the Kafka-shaped tool (kafka-python underneath).
    tool = subprocess.run(
        [str(Path(sys.executable).parent / "kafkapy-leader-election"), "--bootstrap-server",
         fresh_broker.bootstrap, "--election-type", "unclean", "--topic", topic,
         "--partition", "0"], capture_output=True, text=True, timeout=120)
    assert (tool.returncode, tool.stdout) == (
        0, f"Successfully completed leader election (UNCLEAN) for partitions {topic}-0\n"
    ), tool.stderr
    meta = _partition_meta(admin, topic)
    assert meta.leader == 0 and meta.isrs == [0] and meta.error is None
    assert _elect(admin, ElectionType.UNCLEAN, [tp]) == {(topic, 0): ELECTION_NOT_NEEDED}

    produce_values(fresh_broker.bootstrap, topic, [b"after-0"])
    assert read_values(fresh_broker.bootstrap, topic, 3) == [b"before-0", b"before-1", b"after-0"]

    # The new leadership is durable, with the next leader epoch (read while the broker
    # is stopped; it serves the partition again after starting).
    store_state = _stored_state(fresh_broker, topic)
    assert (store_state.leader, store_state.leader_epoch, store_state.isr) == (0, epoch + 1, (0,))
    assert _partition_meta(AdminClient({"bootstrap.servers": fresh_broker.bootstrap}),
                           topic).leader == 0


def _stored_state(broker, topic: str):
    with _store_while_stopped(broker) as store:
        data, _ = store.get(paths.partition_state_path(topic, 0))
    return paths.decode_partition_state(data)


@pytest.mark.parametrize("version", [0, 1, 2])
def test_wire_versions_and_bad_election_type(broker, version):
    """v0 (no election type: preferred) through v2 answer alike; an unknown
    election type is refused with INVALID_REQUEST on every named partition."""
    topic = f"elect-wire-{version}"
    _create(AdminClient({"bootstrap.servers": broker.bootstrap}), topic)
    topics = [REQUESTS[43].TopicPartitions(topic=topic, partitions=[0])]
    client = WireClient(broker.bootstrap)
    try:
        typed = {"election_type": 0} if version >= 1 else {}
        resp = client.request(43, version, topic_partitions=topics, timeout_ms=10000, **typed)
        [result] = resp.replica_election_results
        assert [(p.partition_id, p.error_code) for p in result.partition_result] == [
            (0, ELECTION_NOT_NEEDED)]
        if version >= 1:
            bad = client.request(43, version, election_type=7, topic_partitions=topics,
                                 timeout_ms=10000)
            assert bad.error_code == INVALID_REQUEST
            assert [p.error_code for p in bad.replica_election_results[0].partition_result] == [
                INVALID_REQUEST]
    finally:
        client.close()
