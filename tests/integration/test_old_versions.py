"""Old API versions Kafka 3.9 serves, over a real socket, decoded with kafka-python's classes.

Each newly served version gets the answer a real Kafka 3.9 broker (ZooKeeper mode)
gave to the same request when these tests were written: ListOffsets v0's segment
offsets, OffsetCommit / OffsetFetch v0 kept apart from the group coordinator's
offsets (Kafka keeps them in ZooKeeper), CreateTopics v0-1, DeleteTopics v0,
OffsetForLeaderEpoch v0-1, DescribeConfigs v0, DescribeLogDirs v0, the ACL APIs
v0, WriteTxnMarkers v0 and AddPartitionsToTxn v4-5 (batched, verify-only); and a stock
client, librdkafka, speaking the old versions it uses with an old broker.version.fallback.
"""
from __future__ import annotations

import time

import pytest
from confluent_kafka import Consumer, TopicPartition
from kafka import KafkaProducer

from kafkapy.protocol.errors import ErrorCode
from tests.support.request_fields import fields
from tests.support.wire import WireClient

TOPIC = "old-versions"


@pytest.fixture(scope="module")
def wire(broker):
    client = WireClient(broker.bootstrap)
    created = client.request(19, 0, **fields(19, topics=[dict(
        name=TOPIC, num_partitions=2, replication_factor=1, assignments=[], configs=[])],
        timeout_ms=10000))
    assert created.topics[0].error_code == 0
    producer = KafkaProducer(bootstrap_servers=broker.bootstrap)
    for i in range(3):
        producer.send(TOPIC, b"v%d" % i, partition=0)
    producer.flush()
    producer.close()
    yield client
    client.close()


def _list_offsets_v0(wire, timestamp, max_num=5, partition=0):
    r = wire.request(2, 0, **fields(2, replica_id=-1, topics=[dict(name=TOPIC, partitions=[
        dict(partition_index=partition, timestamp=timestamp, max_num_offsets=max_num)])]))
    p = r.topics[0].partitions[0]
    return p.error_code, list(p.old_style_offsets)


def test_api_versions_advertises_kafka_3_9_minima(wire):
    ranges = {a.api_key: (a.min_version, a.max_version)
              for a in wire.request(18, 0).api_keys}
    assert ranges[2] == (0, 9) and ranges[8] == (0, 9) and ranges[9] == (0, 9)
    assert ranges[19] == (0, 7) and ranges[20] == (0, 6) and ranges[23] == (0, 4)
    assert ranges[24] == (0, 5) and ranges[32] == (0, 4) and ranges[35] == (0, 4)


def test_list_offsets_v0_lists_segment_offsets_newest_first(wire):
    assert _list_offsets_v0(wire, -1) == (0, [3, 0])
    assert _list_offsets_v0(wire, -1, max_num=1) == (0, [3])
    assert _list_offsets_v0(wire, -2) == (0, [0])
    assert _list_offsets_v0(wire, 0) == (0, [])  # nothing was modified that early
    assert _list_offsets_v0(wire, -1, partition=1) == (0, [0])  # empty log


def test_list_offsets_v0_refuses_other_negative_timestamps_and_unknown_partitions(wire):
    assert _list_offsets_v0(wire, -3) == (ErrorCode.UNSUPPORTED_VERSION, [])
    assert _list_offsets_v0(wire, -1, partition=7) == (ErrorCode.UNKNOWN_TOPIC_OR_PARTITION, [])


def _commit(wire, version, group, partitions, **extra):
    r = wire.request(8, version, **fields(8, group_id=group, topics=[
        dict(name=t, partitions=[dict(partition_index=p, committed_offset=o,
                                      committed_metadata=m, **extra)])
        for t, p, o, m in partitions]))
    return [(t.name, p.partition_index, p.error_code) for t in r.topics for p in t.partitions]


def _fetch(wire, version, group, partitions):
    r = wire.request(9, version, **fields(9, group_id=group, topics=[
        dict(name=TOPIC, partition_indexes=partitions)]))
    return [(p.partition_index, p.committed_offset, p.metadata, p.error_code)
            for t in r.topics for p in t.partitions]


def _find_coordinator(wire, key: str, key_type: int = 0) -> None:
    """Ask until the coordinator is ready (the first ask creates its internal topic)."""
    for _ in range(300):
        if wire.request(10, 3, key=key, key_type=key_type).error_code == 0:
            return
        time.sleep(0.1)
    raise AssertionError(f"no coordinator for {key!r}")


def test_offset_commit_v0_and_fetch_v0_use_their_own_store(wire):
    _find_coordinator(wire, "g-v0")
    assert _commit(wire, 0, "g-v0", [(TOPIC, 0, 2, "kept?")]) == [(TOPIC, 0, 0)]
    # v0 keeps no metadata; an offset never committed at v0 is UNKNOWN_TOPIC_OR_PARTITION.
    assert _fetch(wire, 0, "g-v0", [0, 1]) == [
        (0, 2, "", 0), (1, -1, "", ErrorCode.UNKNOWN_TOPIC_OR_PARTITION)]
    # The group coordinator never saw the v0 commit ...
    assert _fetch(wire, 1, "g-v0", [0]) == [(0, -1, "", 0)]
    # ... and a v1 commit (with its explicit commit timestamp) is not seen by v0.
    assert _commit(wire, 1, "g-v0", [(TOPIC, 1, 5, "m")], commit_timestamp=12345) == [
        (TOPIC, 1, 0)]
    assert _fetch(wire, 1, "g-v0", [1]) == [(1, 5, "m", 0)]
    assert _fetch(wire, 0, "g-v0", [1]) == [(1, -1, "", ErrorCode.UNKNOWN_TOPIC_OR_PARTITION)]


def test_offset_commit_v0_answers_refused_partitions_first(wire):
    got = _commit(wire, 0, "g-v0-order", [(TOPIC, 0, 1, None), (TOPIC, 9, 1, None),
                                          ("no-such-topic", 0, 1, None)])
    unknown = ErrorCode.UNKNOWN_TOPIC_OR_PARTITION
    # Kafka's response builder: the refused partition 9 opens the topic's entry.
    assert got == [(TOPIC, 9, unknown), (TOPIC, 0, 0), ("no-such-topic", 0, unknown)]
    assert _commit(wire, 0, "g-v0-order", [(TOPIC, 0, 1, "x" * 5000)]) == [
        (TOPIC, 0, ErrorCode.OFFSET_METADATA_TOO_LARGE)]


def test_offset_commit_and_fetch_v0_with_an_empty_group_id(wire, broker):
    # Kafka's ZooKeeper path /consumers//offsets/... is illegal: UNKNOWN_SERVER_ERROR.
    assert _commit(wire, 0, "", [(TOPIC, 0, 1, None)]) == [(TOPIC, 0, ErrorCode.UNKNOWN)]
    assert _fetch(wire, 0, "", [0]) == [(0, -1, "", ErrorCode.UNKNOWN)]
    # a client's mistake: one warning line, no traceback
    lines = broker.output_path.read_text(errors="replace").splitlines()
    at = max(i for i, line in enumerate(lines) if "v0 offset commit failed" in line)
    assert not lines[at + 1:] or not lines[at + 1].startswith("Traceback"), lines[at:at + 3]


def test_create_topics_v0_v1_and_delete_topics_v0(wire):
    def create(version, name, **extra):
        r = wire.request(19, version, **fields(19, topics=[dict(
            name=name, num_partitions=1, replication_factor=1, assignments=[], configs=[])],
            timeout_ms=10000, **extra))
        return r.topics[0].error_code
    assert create(0, "old-created") == 0
    assert create(1, "old-validated", validate_only=True) == 0
    assert create(1, "old-created", validate_only=True) == ErrorCode.TOPIC_ALREADY_EXISTS
    r = wire.request(20, 0, topic_names=["old-created", "old-validated"], timeout_ms=10000)
    assert [(t.name, t.error_code) for t in r.responses] == [
        ("old-created", 0), ("old-validated", ErrorCode.UNKNOWN_TOPIC_OR_PARTITION)]


def test_offset_for_leader_epoch_v0_and_v1(wire):
    request = fields(23, topics=[dict(topic=TOPIC, partitions=[
        dict(partition=0, leader_epoch=0), dict(partition=5, leader_epoch=0)])])
    r0 = wire.request(23, 0, **request)
    assert [(p.partition, p.error_code, p.end_offset) for p in r0.topics[0].partitions] == [
        (0, 0, 3), (5, ErrorCode.UNKNOWN_TOPIC_OR_PARTITION, -1)]
    r1 = wire.request(23, 1, **request)
    assert (r1.topics[0].partitions[0].leader_epoch, r1.topics[0].partitions[0].end_offset) == (
        0, 3)


def test_describe_configs_v0(wire):
    r = wire.request(32, 0, **fields(32, resources=[dict(
        resource_type=2, resource_name=TOPIC, configuration_keys=["retention.ms"])]))
    [result] = r.results
    assert (result.error_code, result.error_message) == (0, "")
    [entry] = result.configs
    assert (entry.name, entry.value, entry.read_only, entry.is_default) == (
        "retention.ms", "604800000", False, False)


def test_describe_log_dirs_v0(wire):
    r = wire.request(35, 0, **fields(35, topics=[dict(topic=TOPIC, partitions=[0])]))
    [result] = r.results
    assert result.error_code == 0
    [topic] = result.topics
    assert topic.name == TOPIC and [p.partition_index for p in topic.partitions] == [0]
    assert topic.partitions[0].partition_size > 0


def test_acl_apis_v0_say_security_disabled(wire):
    described = wire.request(29, 0, resource_type_filter=2, resource_name_filter=None,
                             principal_filter=None, host_filter=None, operation=1,
                             permission_type=1)
    assert (described.error_code, described.error_message) == (
        ErrorCode.SECURITY_DISABLED, "No Authorizer is configured on the broker")
    created = wire.request(30, 0, **fields(30, creations=[dict(
        resource_type=2, resource_name="t", principal="User:x", host="*", operation=3,
        permission_type=3)]))
    assert created.results[0].error_code == ErrorCode.SECURITY_DISABLED
    deleted = wire.request(31, 0, **fields(31, filters=[dict(
        resource_type_filter=2, resource_name_filter=None, principal_filter=None,
        host_filter=None, operation=1, permission_type=1)]))
    assert deleted.filter_results[0].error_code == ErrorCode.SECURITY_DISABLED


def test_write_txn_markers_v0(wire):
    r = wire.request(27, 0, **fields(27, markers=[dict(
        producer_id=4242, producer_epoch=0, transaction_result=False, coordinator_epoch=0,
        topics=[dict(name=TOPIC, partition_indexes=[1])])]))
    assert [(p.partition_index, p.error_code)
            for p in r.markers[0].topics[0].partitions] == [(1, 0)]


def _verify(wire, version, txn_id, pid, epoch, partitions, verify_only=True):
    r = wire.request(24, version, **fields(24, transactions=[dict(
        transactional_id=txn_id, producer_id=pid, producer_epoch=epoch, verify_only=verify_only,
        topics=[dict(name=t, partitions=ps) for t, ps in partitions])]))
    assert r.error_code == 0
    [result] = r.results_by_transaction
    return {(t.name, p.partition_index): p.partition_error_code
            for t in result.topic_results for p in t.results_by_partition}


@pytest.mark.parametrize("version", [4, 5])
def test_add_partitions_to_txn_batched_verify_only(wire, version):
    txn_id = f"old-versions-txn-{version}"
    _find_coordinator(wire, txn_id, key_type=1)   # creates __transaction_state, as in Kafka
    for _ in range(600):
        init = wire.request(22, 4, transactional_id=txn_id, transaction_timeout_ms=60000,
                            producer_id=-1, producer_epoch=-1)
        if init.error_code not in (ErrorCode.NOT_COORDINATOR,
                                   ErrorCode.COORDINATOR_NOT_AVAILABLE,
                                   ErrorCode.COORDINATOR_LOAD_IN_PROGRESS):
            break
        time.sleep(0.05)
    assert init.error_code == 0
    pid, epoch = init.producer_id, init.producer_epoch
    added = wire.request(24, 3, v3_and_below_transactional_id=txn_id,
                         v3_and_below_producer_id=pid, v3_and_below_producer_epoch=epoch,
                         **fields(24, v3_and_below_topics=[dict(name=TOPIC, partitions=[0])]))
    assert added.results_by_topic_v3_and_below[0].results_by_partition[0].partition_error_code == 0
    both = [(TOPIC, [0, 1])]
    assert _verify(wire, version, txn_id, pid, epoch, both) == {
        (TOPIC, 0): 0, (TOPIC, 1): ErrorCode.TRANSACTION_ABORTABLE}
    assert set(_verify(wire, version, txn_id, pid, epoch + 1, both).values()) == {
        ErrorCode.PRODUCER_FENCED}
    assert set(_verify(wire, version, txn_id, pid + 1, epoch, both).values()) == {
        ErrorCode.INVALID_PRODUCER_ID_MAPPING}
    assert _verify(wire, version, txn_id, pid, epoch, [(TOPIC, [0]), ("no-such", [0])]) == {
        (TOPIC, 0): ErrorCode.OPERATION_NOT_ATTEMPTED,
        ("no-such", 0): ErrorCode.UNKNOWN_TOPIC_OR_PARTITION}
    # Without verify_only a v4+ transaction adds its partitions, as v0-3 do.
    assert _verify(wire, version, txn_id, pid, epoch, [(TOPIC, [1])], verify_only=False) == {
        (TOPIC, 1): 0}
    assert _verify(wire, version, txn_id, pid, epoch, both) == {(TOPIC, 0): 0, (TOPIC, 1): 0}


@pytest.mark.parametrize("fallback", ["0.8.2.2", "0.9.0"])
def test_librdkafka_speaking_old_versions(broker, fallback):
    """librdkafka told the broker is 0.8.2 / 0.9.0 (no ApiVersions) uses ListOffsets v0 to
    find the earliest offset, Fetch v0/v1, OffsetCommit v1/v2 and OffsetFetch v1."""
    topic = f"old-librdkafka-{fallback.replace('.', '-')}"
    producer = KafkaProducer(bootstrap_servers=broker.bootstrap)
    for i in range(5):
        producer.send(topic, b"m%d" % i, partition=0)
    producer.flush()
    producer.close()
    consumer = Consumer({"bootstrap.servers": broker.bootstrap, "group.id": topic,
                         "api.version.request": False, "broker.version.fallback": fallback,
                         "auto.offset.reset": "earliest", "enable.auto.commit": False})
    try:
        consumer.assign([TopicPartition(topic, 0)])
        got = []
        for _ in range(60):  # bounded: one poll of up to a second each
            message = consumer.poll(1.0)
            if message is not None and not message.error():
                got.append(message.value())
            if len(got) == 5:
                break
        assert got == [b"m%d" % i for i in range(5)]
        consumer.commit(offsets=[TopicPartition(topic, 0, 3)], asynchronous=False)
        [committed] = consumer.committed([TopicPartition(topic, 0)], timeout=10)
        assert (committed.offset, committed.error) == (3, None)
    finally:
        consumer.close()
