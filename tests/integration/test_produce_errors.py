"""Produce-level bad input over a real socket: broken CRC, oversize, bad names, old versions,
records that are no log entry, null records.

Each gets Kafka's per-partition error code; the connection and the broker keep
serving (except where Kafka never answers: there the connection is closed).
"""
from __future__ import annotations

import struct

import pytest
from kafka.record.default_records import DefaultRecordBatchBuilder

from kafkapy.protocol.messages import REQUESTS
from tests.support.wire import WireClient, until

Produce = REQUESTS[0]


def _batch(n=3, value=b"v", producer_id=-1, epoch=-1, sequence=-1):
    builder = DefaultRecordBatchBuilder(2, 0, False, producer_id, epoch, sequence, 1 << 20)
    for i in range(n):
        builder.append(i, 1_700_000_000_000 + i, b"k%d" % i, value, [])
    return bytes(builder.build())


def _produce(client, topic, records, version=9, acks=-1, partition=0):
    return client.request(0, version, transactional_id=None, acks=acks, timeout_ms=5000,
                          topic_data=[Produce.TopicProduceData(name=topic, partition_data=[
                              Produce.TopicProduceData.PartitionProduceData(
                                  index=partition, records=records)])])


def _error(response):
    return response.responses[0].partition_responses[0].error_code


@pytest.fixture(scope="module")
def client(broker):
    c = WireClient(broker.bootstrap)
    CreateTopics = REQUESTS[19]
    created = c.request(19, 5, topics=[CreateTopics.CreatableTopic(
        name="errors", num_partitions=1, replication_factor=1, assignments=[],
        configs=[CreateTopics.CreatableTopic.CreatableTopicConfig(
            name="max.message.bytes", value="2000")])], timeout_ms=5000, validate_only=False)
    assert created.topics[0].error_code == 0
    yield c
    c.close()


def test_good_batch_is_appended_at_offset_zero_then_three(client):
    first = _produce(client, "errors", _batch())
    second = _produce(client, "errors", _batch())
    assert _error(first) == 0 and _error(second) == 0
    assert first.responses[0].partition_responses[0].base_offset == 0
    assert second.responses[0].partition_responses[0].base_offset == 3


def test_broken_crc_is_corrupt_message(client):
    data = bytearray(_batch())
    data[-1] ^= 0xFF
    assert _error(_produce(client, "errors", bytes(data))) == 2


def test_batch_over_max_message_bytes_is_message_too_large(client):
    assert _error(_produce(client, "errors", _batch(n=1, value=b"x" * 5000))) == 10


def test_unknown_partition(client):
    assert _error(_produce(client, "errors", _batch(), partition=7)) == 3


def test_produce_v2_with_a_v2_batch_is_accepted_as_kafka_3_9_does(client):
    assert _error(_produce(client, "errors", _batch(), version=2)) == 0


def test_invalid_required_acks(client):
    assert _error(_produce(client, "errors", _batch(), acks=5)) == 21


def test_idempotent_duplicate_gets_original_offset_and_gap_is_rejected(client):
    init = client.request(22, 4, transactional_id=None, transaction_timeout_ms=60000,
                          producer_id=-1, producer_epoch=-1)
    assert init.error_code == 0
    pid = init.producer_id
    first = _produce(client, "errors", _batch(producer_id=pid, epoch=0, sequence=0))
    again = _produce(client, "errors", _batch(producer_id=pid, epoch=0, sequence=0))
    assert _error(first) == 0 and _error(again) == 0
    offset = first.responses[0].partition_responses[0].base_offset
    assert again.responses[0].partition_responses[0].base_offset == offset
    gap = _produce(client, "errors", _batch(producer_id=pid, epoch=0, sequence=10))
    assert _error(gap) == 45


@pytest.mark.parametrize("name,code", [("bad name", 17), ("a" * 250, 17), ("..", 17),
                                       ("ok.name", 0)])
def test_create_topics_name_rules(client, name, code):
    CreateTopics = REQUESTS[19]
    response = client.request(19, 7, topics=[CreateTopics.CreatableTopic(
        name=name, num_partitions=1, replication_factor=1, assignments=[], configs=[])],
        timeout_ms=5000, validate_only=True)
    assert response.topics[0].error_code == code


def test_create_topics_bad_config_is_invalid_config(client):
    CreateTopics = REQUESTS[19]
    response = client.request(19, 7, topics=[CreateTopics.CreatableTopic(
        name="badconfig", num_partitions=1, replication_factor=1, assignments=[],
        configs=[CreateTopics.CreatableTopic.CreatableTopicConfig(
            name="segment.bytes", value="not-a-number")])], timeout_ms=5000,
        validate_only=False)
    assert response.topics[0].error_code == 40
    assert "segment.bytes" in response.topics[0].error_message


def test_replication_factor_above_live_brokers(client):
    CreateTopics = REQUESTS[19]
    response = client.request(19, 7, topics=[CreateTopics.CreatableTopic(
        name="rf3", num_partitions=1, replication_factor=3, assignments=[], configs=[])],
        timeout_ms=5000, validate_only=False)
    assert response.topics[0].error_code == 38


def test_existing_topic_and_partition_growth(client):
    CreateTopics = REQUESTS[19]
    again = client.request(19, 7, topics=[CreateTopics.CreatableTopic(
        name="errors", num_partitions=1, replication_factor=1, assignments=[], configs=[])],
        timeout_ms=5000, validate_only=False)
    assert again.topics[0].error_code == 36
    CreatePartitions = REQUESTS[37]
    shrink = client.request(37, 3, topics=[CreatePartitions.CreatePartitionsTopic(
        name="errors", count=1, assignments=None)], timeout_ms=5000, validate_only=False)
    assert shrink.results[0].error_code == 37
    grow = client.request(37, 3, topics=[CreatePartitions.CreatePartitionsTopic(
        name="errors", count=3, assignments=None)], timeout_ms=5000, validate_only=False)
    assert grow.results[0].error_code == 0
    assert _error(_produce(client, "errors", _batch(), partition=2)) == 0


def test_metadata_for_missing_and_invalid_topics(client):
    Metadata = REQUESTS[3]
    response = client.request(3, 12, topics=[
        Metadata.MetadataRequestTopic(topic_id=None, name="bad name"),
        Metadata.MetadataRequestTopic(topic_id=None, name="__transaction_state")],
        allow_auto_topic_creation=True, include_topic_authorized_operations=False)
    codes = {t.name: t.error_code for t in response.topics}
    # Kafka auto-creates an internal topic asked for with auto-creation allowed, answering
    # LEADER_NOT_AVAILABLE until it has leaders.
    assert codes == {"bad name": 17, "__transaction_state": 5}


def test_bad_config_value_stops_startup_naming_key_and_value(tmp_path):
    from tests.support.broker_process import BrokerProcess
    b = BrokerProcess(tmp_path / "logs", overrides={"log.segment.bytes": "lots"})
    with pytest.raises(RuntimeError) as failure:
        b.start(timeout=20)
    assert "log.segment.bytes" in str(failure.value) and "lots" in str(failure.value)


def test_acks_zero_gets_no_response_and_errors_close_the_connection(broker):
    c = WireClient(broker.bootstrap)
    try:
        correlation, data = c.encode(0, 9, transactional_id=None, acks=0, timeout_ms=5000,
                                     topic_data=[Produce.TopicProduceData(name="errors", partition_data=[
                                         Produce.TopicProduceData.PartitionProduceData(
                                             index=0, records=_batch())])])
        c.send_raw(data)
        versions = c.request(18, 0)  # the next frame read must be this answer, not a produce one
        assert versions.error_code == 0
        correlation, data = c.encode(0, 9, transactional_id=None, acks=0, timeout_ms=5000,
                                     topic_data=[Produce.TopicProduceData(name="errors", partition_data=[
                                         Produce.TopicProduceData.PartitionProduceData(
                                             index=99, records=_batch())])])
        c.send_raw(data)
        assert c.is_closed(), "a failed acks=0 produce closes the connection, as in Kafka"
    finally:
        c.close()


def test_delete_topics_by_name_and_by_id(client, broker):
    CreateTopics, DeleteTopics = REQUESTS[19], REQUESTS[20]
    created = client.request(19, 7, topics=[CreateTopics.CreatableTopic(
        name=name, num_partitions=2, replication_factor=1, assignments=[], configs=[])
        for name in ("doomed-by-name", "doomed-by-id")], timeout_ms=5000, validate_only=False)
    ids = {t.name: t.topic_id for t in created.topics}
    assert all(ids.values())
    by_name = client.request(20, 5, topic_names=["doomed-by-name", "never-existed"],
                             timeout_ms=5000)
    assert {r.name: r.error_code for r in by_name.responses} == {
        "doomed-by-name": 0, "never-existed": 3}
    by_id = client.request(20, 6, topics=[DeleteTopics.DeleteTopicState(
        name=None, topic_id=ids["doomed-by-id"])], timeout_ms=5000)
    assert [(r.name, r.error_code) for r in by_id.responses] == [("doomed-by-id", 0)]
    Metadata = REQUESTS[3]
    meta = client.request(3, 12, topics=[Metadata.MetadataRequestTopic(topic_id=None, name=n)
                                         for n in ids], allow_auto_topic_creation=False,
                          include_topic_authorized_operations=False)
    assert {t.name: t.error_code for t in meta.topics} == {n: 3 for n in ids}
    leftovers = [p.name for p in broker.log_dir.iterdir()
                 if p.name.startswith("doomed") and not p.name.endswith("-delete")]
    assert leftovers == []


def test_list_offsets_earliest_latest_and_duplicate_partitions(client):
    ListOffsets = REQUESTS[2]
    Topic = ListOffsets.ListOffsetsTopic
    Part = Topic.ListOffsetsPartition

    def ask(partitions):
        return client.request(2, 7, replica_id=-1, isolation_level=0, topics=[
            Topic(name="errors", partitions=[Part(partition_index=i, current_leader_epoch=-1,
                                                  timestamp=ts) for i, ts in partitions])])

    earliest = ask([(0, -2)]).topics[0].partitions[0]
    latest = ask([(0, -1)]).topics[0].partitions[0]
    assert (earliest.error_code, earliest.offset) == (0, 0)
    assert latest.error_code == 0 and latest.offset > 0
    doubled = ask([(0, -1), (0, -2)]).topics[0].partitions
    assert [p.error_code for p in doubled] == [42, 42]


def _epoch_end(client, topic, leader_epoch, current_leader_epoch=-1, version=4):
    Request = REQUESTS[23]
    response = client.request(23, version, replica_id=-1, topics=[Request.OffsetForLeaderTopic(
        topic=topic, partitions=[Request.OffsetForLeaderTopic.OffsetForLeaderPartition(
            partition=0, current_leader_epoch=current_leader_epoch, leader_epoch=leader_epoch)])])
    p = response.topics[0].partitions[0]
    return p.error_code, p.leader_epoch, p.end_offset


@pytest.mark.parametrize("version", [2, 3, 4])
def test_offset_for_leader_epoch(client, version):
    """Epoch 0 (the only one) ends at the log end; epochs the cache cannot place
    answer -1/-1; a current epoch ahead of the broker is UNKNOWN_LEADER_EPOCH; unknown topics say so."""
    leo = _produce(client, "errors", _batch()).responses[0].partition_responses[0].base_offset + 3
    assert _epoch_end(client, "errors", 0, version=version) == (0, 0, leo)
    assert _epoch_end(client, "errors", 0, current_leader_epoch=0, version=version) == (0, 0, leo)
    assert _epoch_end(client, "errors", 7, version=version) == (0, -1, -1)
    assert _epoch_end(client, "errors", -1, version=version) == (0, -1, -1)
    assert _epoch_end(client, "errors", 0, current_leader_epoch=1, version=version)[0] == 75  # UNKNOWN_LEADER_EPOCH
    assert _epoch_end(client, "no-such-topic", 0, version=version)[0] == 3  # UNKNOWN_TOPIC_OR_PARTITION


def _latest(client, topic="errors", partition=0) -> int:
    ListOffsets = REQUESTS[2]
    Topic = ListOffsets.ListOffsetsTopic
    response = client.request(2, 7, replica_id=-1, isolation_level=0, topics=[Topic(
        name=topic, partitions=[Topic.ListOffsetsPartition(
            partition_index=partition, current_leader_epoch=-1, timestamp=-1)])])
    return response.topics[0].partitions[0].offset


def _produce_many(client, parts, version=9, transactional_id=None):
    """Produce to [(topic, partition, records)]; {(topic, partition): (code, message)}."""
    by_topic: dict[str, list] = {}
    for topic, partition, records in parts:
        by_topic.setdefault(topic, []).append(Produce.TopicProduceData.PartitionProduceData(
            index=partition, records=records))
    response = client.request(0, version, transactional_id=transactional_id, acks=-1,
                              timeout_ms=5000, topic_data=[
                                  Produce.TopicProduceData(name=t, partition_data=ps)
                                  for t, ps in by_topic.items()])
    return {(t.name, p.index): (p.error_code, getattr(p, "error_message", None))
            for t in response.responses for p in t.partition_responses}


def test_garbage_records_fail_the_whole_request_with_kafkas_message(client):
    """Records that are no log entry (size field below 14, magic above 2) fail every
    partition of the request with CORRUPT_MESSAGE and Kafka's message (v8+), even a good
    batch beside them, which is not appended; the connection keeps serving."""
    before = _latest(client)
    size_zero = bytes(20)
    bad_magic = struct.pack(">qiib", 0, 30, 0, 5) + bytes(25)
    assert _produce_many(client, [("errors", 0, _batch()), ("no-such-topic", 0, size_zero)]) \
        == {("errors", 0): (2, "Record size 0 is less than the minimum record overhead (14)"),
            ("no-such-topic", 0): (2, "Record size 0 is less than the minimum record overhead "
                                      "(14)")}
    assert _produce_many(client, [("errors", 0, bad_magic)], version=11) == {
        ("errors", 0): (2, "Invalid magic found in record: 5")}
    assert _produce_many(client, [("errors", 0, bad_magic)], version=7) == {
        ("errors", 0): (2, None)}
    assert _latest(client) == before
    # Garbage after a whole batch is that partition's own error, without a message.
    assert _produce_many(client, [("errors", 0, _batch() + bytes(12))]) == {
        ("errors", 0): (2, None)}


def test_null_records_are_answered_only_when_their_partition_is_refused(broker):
    """Kafka answers null records of an unknown topic or partition (and appends the other
    partitions); null records it would append never get an answer: kafkapy closes."""
    c = WireClient(broker.bootstrap)
    try:
        assert _produce_many(c, [("errors", 7, None)], version=11) == {("errors", 7): (3, None)}
        answer = _produce_many(c, [("no-such-topic", 0, None), ("errors", 0, _batch())])
        assert answer[("no-such-topic", 0)] == (3, None) and answer[("errors", 0)][0] == 0
        assert c.request(18, 0).error_code == 0
        correlation, data = c.encode(0, 11, transactional_id=None, acks=-1, timeout_ms=5000,
                                     topic_data=[Produce.TopicProduceData(name="errors",
                                                 partition_data=[
                                                     Produce.TopicProduceData.PartitionProduceData(
                                                         index=0, records=None)])])
        c.send_raw(data)
        assert c.is_closed()
    finally:
        c.close()




def _topic_names(client) -> set[str]:
    return {t.name for t in client.request(3, 1, topics=None).topics}


def test_internal_topics_exist_only_once_a_coordinator_is_looked_up(fresh_broker):
    """As Kafka 3.9: InitProducerId and AddOffsetsToTxn create no internal topic (a produce
    to one answers UNKNOWN_TOPIC_OR_PARTITION); FindCoordinator does, and from then on a
    produce to it answers INVALID_TOPIC_EXCEPTION."""
    c = WireClient(fresh_broker.bootstrap)
    CreateTopics = REQUESTS[19]

    def barrier(name):
        # A topic created after the requests above: once the cache has it, it would also
        # have any internal topic those requests had created.
        created = c.request(19, 5, topics=[CreateTopics.CreatableTopic(
            name=name, num_partitions=1, replication_factor=1, assignments=[], configs=[])],
            timeout_ms=5000, validate_only=False)
        assert created.topics[0].error_code == 0
        assert name in until(lambda: _topic_names(c), lambda names: name in names)

    def produce_error(topic):
        return _produce_many(c, [(topic, 0, _batch())])[(topic, 0)][0]

    try:
        init = c.request(22, 4, transactional_id="internal-txn", transaction_timeout_ms=60000,
                         producer_id=-1, producer_epoch=-1)
        assert init.error_code == 16  # NOT_COORDINATOR: no __transaction_state yet
        barrier("after-init-producer-id")
        assert "__transaction_state" not in _topic_names(c)
        assert produce_error("__transaction_state") == 3

        until(lambda: c.request(10, 1, key="internal-txn", key_type=1).error_code,
               lambda code: code == 0)
        assert produce_error("__transaction_state") == 17
        init = until(lambda: c.request(22, 4, transactional_id="internal-txn",
                                        transaction_timeout_ms=60000, producer_id=-1,
                                        producer_epoch=-1),
                      lambda r: r.error_code == 0)
        assert init.error_code == 0
        added = c.request(25, 1, transactional_id="internal-txn", producer_id=init.producer_id,
                          producer_epoch=init.producer_epoch, group_id="internal-group")
        assert added.error_code == 0
        barrier("after-add-offsets")
        assert "__consumer_offsets" not in _topic_names(c)
        assert produce_error("__consumer_offsets") == 3

        until(lambda: c.request(10, 1, key="internal-group", key_type=0).error_code,
               lambda code: code == 0)
        assert produce_error("__consumer_offsets") == 17
        ended = c.request(26, 1, transactional_id="internal-txn", producer_id=init.producer_id,
                          producer_epoch=init.producer_epoch, committed=True)
        assert ended.error_code == 0
    finally:
        c.close()


def test_only_the_admin_client_id_may_write_to_an_internal_topic(fresh_broker):
    """As Kafka: a produce to an internal topic answers INVALID_TOPIC_EXCEPTION unless the
    request's client id is ``__admin_client``."""
    c = WireClient(fresh_broker.bootstrap)
    admin = WireClient(fresh_broker.bootstrap, client_id="__admin_client")
    try:
        until(lambda: c.request(10, 1, key="g", key_type=0).error_code, lambda code: code == 0)
        assert _produce_many(c, [("__consumer_offsets", 0, _batch())])[
            ("__consumer_offsets", 0)][0] == 17
        assert _produce_many(admin, [("__consumer_offsets", 0, _batch())])[
            ("__consumer_offsets", 0)][0] == 0
    finally:
        c.close()
        admin.close()
