"""Incremental fetch sessions (KIP-227) over real sockets, as Kafka 3.9's FetchSessionCache.

Raw Fetch v12 requests (topics by name) and v13 (by id) against a real broker:
session creation on a full fetch with epoch 0, incremental fetches that carry only
partitions with news, forgotten partitions, the session errors (70, 71, 106), closing
by epoch -1 or by forgetting everything, Kafka's shard layout of session ids, and a
full cache.  kafka-python's consumer (which uses sessions) reads through them too.
"""
from __future__ import annotations

import pytest
from kafka import KafkaConsumer, TopicPartition
from kafka.admin import KafkaAdminClient, NewTopic

from kafkapy.protocol.errors import ErrorCode
from kafkapy.protocol.messages import REQUESTS
from kafkapy.records.record import build_batch
from tests.support.broker_process import BrokerProcess
from tests.support.wire import WireClient

Fetch = REQUESTS[1]
Produce = REQUESTS[0]
Metadata = REQUESTS[3]
TOPIC = "sessions"
SHARD_RANGE = 0x7FFFFFFF // 8
TS = 1_800_000_000_000


def create_topic(bootstrap: str, topic: str, partitions: int = 1) -> None:
    admin = KafkaAdminClient(bootstrap_servers=bootstrap)
    admin.create_topics([NewTopic(topic, partitions, 1)])
    admin.close()


@pytest.fixture
def client(broker, request):
    """A connection, and a topic ``TOPIC`` of this test's own: 3 partitions of 3 records."""
    global TOPIC
    TOPIC = request.node.name.removeprefix("test_")[:60]
    create_topic(broker.bootstrap, TOPIC, 3)
    c = WireClient(broker.bootstrap)
    for p in range(3):
        produce(c, p, 3)
    yield c
    c.close()


def produce(c: WireClient, partition: int, n: int, topic: str | None = None) -> None:
    topic = topic or TOPIC
    batch = build_batch([(b"k", b"v%d" % i, [], TS + i) for i in range(n)])
    r = c.request(0, 9, transactional_id=None, acks=-1, timeout_ms=5000, topic_data=[
        Produce.TopicProduceData(name=topic, partition_data=[
            Produce.TopicProduceData.PartitionProduceData(index=partition, records=batch)])])
    assert r.responses[0].partition_responses[0].error_code == 0


def fetch(c: WireClient, session_id: int, epoch: int, parts=(), forgotten=(), version=12,
          topic_id=None, **extra):
    """(error, session id, [(partition, error, high watermark, record bytes)])."""
    partitions = [Fetch.FetchTopic.FetchPartition(partition=p, fetch_offset=o,
                                                  partition_max_bytes=1 << 20)
                  for p, o in parts]
    by = {"topic_id": topic_id} if version >= 13 else {"topic": TOPIC}
    topics = [Fetch.FetchTopic(partitions=partitions, **by)] if parts else []
    gone = [Fetch.ForgottenTopic(partitions=list(forgotten), **by)] if forgotten else []
    fields = dict(replica_id=-1, max_wait_ms=0, min_bytes=1, max_bytes=1 << 20,
                  isolation_level=0, session_id=session_id, session_epoch=epoch, topics=topics,
                  forgotten_topics_data=gone, rack_id="")
    fields.update(extra)
    r = c.request(1, version, **fields)
    answered = [(p.partition_index, p.error_code, p.high_watermark, len(p.records or b""))
                for t in r.responses for p in t.partitions]
    return r.error_code, r.session_id, answered


def indexes(answered) -> list[int]:
    return [p for p, *_ in answered]


ALL = [(0, 0), (1, 0), (2, 0)]


def test_full_fetch_with_epoch_0_creates_a_session_and_epoch_minus_1_does_not(client):
    error, session, answered = fetch(client, 0, 0, ALL)
    assert (error, indexes(answered)) == (0, [0, 1, 2])
    assert session != 0
    error, sessionless, _ = fetch(client, 0, -1, ALL)
    assert (error, sessionless) == (0, 0)


def test_incremental_fetches_carry_only_news(client):
    _, session, _ = fetch(client, 0, 0, ALL)
    # Epoch 1: the cached high watermarks match, but the records are news again.
    assert indexes(fetch(client, session, 1)[2]) == [0, 1, 2]
    _, _, answered = fetch(client, session, 2, [(0, 3), (1, 3), (2, 3)])
    assert answered == []  # everyone at the end: nothing new
    produce(client, 1, 2)
    error, same, answered = fetch(client, session, 3)
    assert (error, same) == (0, session)
    assert [(p, hw) for p, _, hw, _ in answered] == [(1, 5)]
    assert fetch(client, session, 4, [(1, 5)])[2] == []


def test_partitions_with_records_move_to_the_end(client):
    _, session, _ = fetch(client, 0, 0, [(0, 0), (1, 0), (2, 3)])
    assert indexes(fetch(client, session, 1)[2]) == [0, 1]
    # 0 and 1 returned records, so they went behind 2, in that order.
    produce(client, 2, 1)
    assert indexes(fetch(client, session, 2)[2]) == [2, 0, 1]


def test_forgotten_partitions_leave_and_new_ones_join(client):
    _, session, _ = fetch(client, 0, 0, ALL)
    _, _, answered = fetch(client, session, 1, forgotten=[0, 1])
    assert indexes(answered) == [2]
    _, _, answered = fetch(client, session, 2, [(0, 0), (7, 0)])
    assert [(p, e) for p, e, *_ in answered] == [
        (2, 0), (0, 0), (7, ErrorCode.UNKNOWN_TOPIC_OR_PARTITION)]
    # Errored partitions are sent every time; 2 (at its end) has no news.  As in
    # Kafka, partitions that cannot be read (7) come after those read.
    assert indexes(fetch(client, session, 3, [(2, 3), (0, 99)])[2]) == [0, 7]


def test_session_errors(client):
    _, session, _ = fetch(client, 0, 0, ALL)
    assert fetch(client, 0, 3, ALL) == (ErrorCode.FETCH_SESSION_ID_NOT_FOUND, 0, [])
    assert fetch(client, session ^ 1, 1) == (ErrorCode.FETCH_SESSION_ID_NOT_FOUND, 0, [])
    assert fetch(client, session, 5) == (ErrorCode.INVALID_FETCH_SESSION_EPOCH, 0, [])
    assert fetch(client, session, 1)[0] == 0
    assert fetch(client, session, 1) == (ErrorCode.INVALID_FETCH_SESSION_EPOCH, 0, [])
    # A session made with names cannot go on by ids.
    assert fetch(client, session, 2, version=13) == (ErrorCode.FETCH_SESSION_TOPIC_ID_ERROR,
                                                     0, [])


def test_sessions_close(client):
    _, session, _ = fetch(client, 0, 0, ALL)
    assert fetch(client, session, -1, [(0, 0)])[:2] == (0, 0)
    assert fetch(client, session, 1)[0] == ErrorCode.FETCH_SESSION_ID_NOT_FOUND
    _, session, _ = fetch(client, 0, 0, ALL)
    error, after, answered = fetch(client, session, 1, forgotten=[0, 1, 2])
    assert (error, after, answered) == (0, 0, [])
    assert fetch(client, session, 2)[0] == ErrorCode.FETCH_SESSION_ID_NOT_FOUND
    _, session, _ = fetch(client, 0, 0, ALL)
    _, renewed, _ = fetch(client, session, 0, [(0, 0)])
    assert renewed not in (0, session)
    assert fetch(client, session, 1)[0] == ErrorCode.FETCH_SESSION_ID_NOT_FOUND


def test_sessions_by_topic_id(client):
    r = client.request(3, 12, topics=[Metadata.MetadataRequestTopic(name=TOPIC)],
                       allow_auto_topic_creation=False, include_topic_authorized_operations=False)
    topic_id = r.topics[0].topic_id
    _, session, answered = fetch(client, 0, 0, ALL, version=13, topic_id=topic_id)
    assert session != 0 and indexes(answered) == [0, 1, 2]
    _, _, answered = fetch(client, session, 1, [(0, 99)], version=13, topic_id=topic_id)
    assert [(p, e) for p, e, *_ in answered] == [(0, ErrorCode.OFFSET_OUT_OF_RANGE), (1, 0),
                                                 (2, 0)]


def test_session_ids_follow_kafkas_shards(tmp_path):
    broker = BrokerProcess(tmp_path / "logs").start()
    c = WireClient(broker.bootstrap)
    try:
        create_topic(broker.bootstrap, "shards")
        ids = [_full(c, "shards") for _ in range(9)]
        shards = [i // SHARD_RANGE for i in ids]
        assert all(i > 0 for i in ids)
        assert [(s - shards[0]) % 8 for s in shards] == [n % 8 for n in range(9)]
    finally:
        c.close()
        broker.stop()


def _full(c: WireClient, topic: str) -> int:
    r = c.request(1, 12, replica_id=-1, max_wait_ms=0, min_bytes=1, max_bytes=1 << 20,
                  isolation_level=0, session_id=0, session_epoch=0, topics=[
                      Fetch.FetchTopic(topic=topic, partitions=[Fetch.FetchTopic.FetchPartition(
                          partition=0, fetch_offset=0, partition_max_bytes=1 << 20)])],
                  forgotten_topics_data=[], rack_id="")
    return r.session_id


def test_a_full_cache_creates_no_session(tmp_path):
    # 8 slots: one per shard; a young consumer session may not be evicted.
    broker = BrokerProcess(tmp_path / "logs", overrides={
        "max.incremental.fetch.session.cache.slots": "8"}).start()
    c = WireClient(broker.bootstrap)
    try:
        create_topic(broker.bootstrap, "full")
        ids = [_full(c, "full") for _ in range(10)]
        assert all(i != 0 for i in ids[:8]) and ids[8:] == [0, 0]
    finally:
        c.close()
        broker.stop()


def test_kafka_python_consumer_reads_through_sessions(broker, client):
    consumer = KafkaConsumer(bootstrap_servers=broker.bootstrap, enable_auto_commit=False,
                             fetch_max_wait_ms=100, consumer_timeout_ms=3000)
    parts = [TopicPartition(TOPIC, p) for p in range(3)]
    consumer.assign(parts)
    consumer.seek_to_beginning()
    before = {tp: n for tp, n in consumer.end_offsets(parts).items()}
    got = {tp: [] for tp in parts}
    for record in consumer:
        got[TopicPartition(record.topic, record.partition)].append(record.offset)
    consumer.close()
    assert got == {tp: list(range(before[tp])) for tp in parts}
