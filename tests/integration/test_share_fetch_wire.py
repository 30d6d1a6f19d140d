"""ShareFetch and ShareAcknowledge over a real broker process's socket, raw requests: a
produced topic's records acquired, acknowledged, released and redelivered with the next
delivery count, redelivered after their acquisition lock expired, rejected into the
group's dead-letter topic with the ``__dlq.errors.*`` headers, and released when the
session closes.  The share state is initialized as the group coordinator would
(InitializeShareGroupState to the share coordinator); the group's dead-letter topic is a
group config (IncrementalAlterConfigs on the GROUP resource)."""
from __future__ import annotations

import time

import pytest

from kafkapy.metadata.topics import topic_id_text
from kafkapy.protocol.messages import REQUESTS
from kafkapy.protocol.share_group_apis import (InitializeShareGroupStateRequest,
                                               ShareAcknowledgeRequest, ShareFetchRequest)
from kafkapy.records.batch import iter_headers
from kafkapy.records.record import build_batch, decode_records
from tests.support.broker_process import BrokerProcess
from tests.support.request_fields import fields
from tests.support.wire import WireClient, until

GROUP = "wire-share"
TOPIC = "orders"
DLQ = "dlq.orders"
LOCK_MS = 1000
GROUP_RESOURCE = 32
SHARE_KEY_TYPE = 2
ACCEPT, RELEASE, REJECT = 1, 2, 3
Fetch = ShareFetchRequest[1]
Ack = ShareAcknowledgeRequest[1]


@pytest.fixture(scope="module")
def wire(tmp_path_factory):
    broker = BrokerProcess(tmp_path_factory.mktemp("share-fetch") / "logs", overrides={
        "offsets.topic.num.partitions": "1", "offsets.topic.replication.factor": "1",
        "share.coordinator.state.topic.num.partitions": "1",
        "share.coordinator.state.topic.replication.factor": "1",
        "share.coordinator.state.topic.min.isr": "1",
        "group.share.min.record.lock.duration.ms": "1000",
        "group.share.record.lock.duration.ms": str(LOCK_MS)}).start()
    client = WireClient(broker.bootstrap, timeout=30)
    for name, configs in ((TOPIC, []), (DLQ, [dict(name="errors.deadletterqueue.group.enable",
                                                   value="true")])):
        created = client.request(19, 7, **fields(19, topics=[dict(
            name=name, num_partitions=1, replication_factor=1, assignments=[],
            configs=configs)], timeout_ms=10000, validate_only=False))
        assert created.topics[0].error_code == 0
    altered = client.request(44, 1, **fields(44, resources=[dict(
        resource_type=GROUP_RESOURCE, resource_name=GROUP, configs=[dict(
            name="errors.deadletterqueue.topic.name", config_operation=0, value=DLQ)])],
        validate_only=False))
    assert [r.error_code for r in altered.responses] == [0]
    yield client
    client.close()
    broker.stop()


def topic_id(client: WireClient, name: str):
    metadata = until(lambda: client.request(3, 12, topics=[REQUESTS[3].MetadataRequestTopic(
        topic_id=None, name=name)], allow_auto_topic_creation=False,
        include_topic_authorized_operations=False),
        lambda r: r.topics[0].error_code == 0, timeout=30)
    return metadata.topics[0].topic_id


def produce(client: WireClient, *values: bytes) -> None:
    P = REQUESTS[0]
    batch = build_batch([(b"key-" + v, v, [("origin", b"test")], int(time.time() * 1000))
                         for v in values])
    r = client.request(0, 9, transactional_id=None, acks=-1, timeout_ms=5000, topic_data=[
        P.TopicProduceData(name=TOPIC, partition_data=[
            P.TopicProduceData.PartitionProduceData(index=0, records=batch)])])
    assert r.responses[0].partition_responses[0].error_code == 0


def initialize(client: WireClient, tid) -> None:
    """What the group coordinator does before assigning the partition: the share state
    at start offset 0, through the share coordinator (this broker)."""
    key = f"{GROUP}:{topic_id_text(tid)}:0"
    found = until(lambda: client.request(10, 6, key_type=SHARE_KEY_TYPE, coordinator_keys=[key]),
                  lambda r: r.coordinators[0].error_code == 0, timeout=30)
    assert found.coordinators[0].error_code == 0
    R = InitializeShareGroupStateRequest[0]
    request = dict(group_id=GROUP, topics=[R.InitializeStateData(topic_id=tid, partitions=[
        R.InitializeStateData.PartitionData(partition=0, state_epoch=1, start_offset=0)])])
    answer = until(lambda: client.request(83, 0, **request),
                   lambda r: r.results[0].partitions[0].error_code == 0, timeout=30)
    assert answer.results[0].partitions[0].error_code == 0


def share_fetch(client: WireClient, tid, epoch: int, member: str, *, partitions=(0,),
                acks=(), max_wait_ms=0):
    topics = []
    if partitions or acks:
        topics = [Fetch.FetchTopic(topic_id=tid, partitions=[Fetch.FetchTopic.FetchPartition(
            partition_index=0, acknowledgement_batches=[
                Fetch.FetchTopic.FetchPartition.AcknowledgementBatch(
                    first_offset=a, last_offset=b, acknowledge_types=list(t))
                for a, b, t in acks])])]
    return client.request(78, 1, group_id=GROUP, member_id=member, share_session_epoch=epoch,
                          max_wait_ms=max_wait_ms, min_bytes=1, max_bytes=1 << 20,
                          max_records=100, batch_size=100, topics=topics,
                          forgotten_topics_data=[])


def share_ack(client: WireClient, tid, epoch: int, member: str, acks):
    partition = Ack.AcknowledgeTopic.AcknowledgePartition
    return client.request(79, 1, group_id=GROUP, member_id=member, share_session_epoch=epoch,
                          topics=[Ack.AcknowledgeTopic(topic_id=tid, partitions=[partition(
                              partition_index=0, acknowledgement_batches=[
                                  partition.AcknowledgementBatch(
                                      first_offset=a, last_offset=b, acknowledge_types=list(t))
                                  for a, b, t in acks])])])


def answer(response):
    [topic] = response.responses
    [partition] = topic.partitions
    return partition


def acquired(partition) -> list[tuple[int, int, int]]:
    return [(a.first_offset, a.last_offset, a.delivery_count) for a in partition.acquired_records]


def records(data: bytes):
    return [r for h in iter_headers(data) for r in decode_records(data, h.position)]


def dead_letters(client: WireClient) -> list:
    F = REQUESTS[1]
    r = client.request(1, 11, replica_id=-1, max_wait_ms=0, min_bytes=0, max_bytes=1 << 20,
                       isolation_level=0, session_id=0, session_epoch=-1, topics=[
                           F.FetchTopic(topic=DLQ, partitions=[F.FetchTopic.FetchPartition(
                               partition=0, current_leader_epoch=-1, fetch_offset=0,
                               last_fetched_epoch=-1, log_start_offset=-1,
                               partition_max_bytes=1 << 20)])],
                       forgotten_topics_data=[], rack_id="")
    return records(bytes(r.responses[0].partitions[0].records or b""))


def test_acquire_acknowledge_release_expire_reject_and_close(wire):
    tid = topic_id(wire, TOPIC)
    produce(wire, b"r0", b"r1", b"r2", b"r3")
    initialize(wire, tid)
    # The share partition loads its state on first use: the first answers may be empty.
    first = until(lambda: share_fetch(wire, tid, 0, "m1", max_wait_ms=500),
                  lambda r: r.error_code or answer(r).acquired_records, timeout=30)
    assert first.error_code == 0 and first.acquisition_lock_timeout_ms == LOCK_MS
    p = answer(first)
    assert acquired(p) == [(0, 3, 1)]
    assert [(r.offset, r.key, r.value) for r in records(p.records)] == [
        (0, b"key-r0", b"r0"), (1, b"key-r1", b"r1"), (2, b"key-r2", b"r2"),
        (3, b"key-r3", b"r3")]

    # ShareAcknowledge: accept 0, release 1, reject 2 (dead letter); 3 stays acquired.
    acked = share_ack(wire, tid, 1, "m1", [(0, 2, [ACCEPT, RELEASE, REJECT])])
    assert acked.error_code == 0 and answer(acked).error_code == 0

    # The released record comes back with delivery count 2 (the session remembers 0).
    again = share_fetch(wire, tid, 2, "m1", partitions=(), max_wait_ms=2000)
    assert acquired(answer(again)) == [(1, 1, 2)]

    # Nobody acknowledges: both locks expire and both records come back.
    time.sleep(LOCK_MS / 1000 + 0.3)
    expired = share_fetch(wire, tid, 3, "m1", partitions=(), max_wait_ms=3000)
    assert acquired(answer(expired)) == [(1, 1, 3), (3, 3, 2)]

    # The rejected record reached the dead-letter topic with its headers.
    [letter] = until(lambda: dead_letters(wire), lambda found: len(found) == 1, timeout=10)
    assert (letter.key, letter.value) == (b"key-r2", b"r2")
    headers = dict(letter.headers)
    assert headers["origin"] == b"test"
    assert {k: v for k, v in headers.items() if k.startswith("__dlq.")} == {
        "__dlq.errors.topic": TOPIC.encode(), "__dlq.errors.partition": b"0",
        "__dlq.errors.offset": b"2", "__dlq.errors.group": GROUP.encode(),
        "__dlq.errors.delivery.count": b"1", "__dlq.errors.reason": b"rejected"}

    # Closing the session (epoch -1, acknowledging 3) releases 1 for another member.
    closed = share_fetch(wire, tid, -1, "m1", partitions=(), acks=[(3, 3, [ACCEPT])])
    assert closed.error_code == 0 and answer(closed).acknowledge_error_code == 0
    other = share_fetch(wire, tid, 0, "m2", max_wait_ms=2000)
    assert acquired(answer(other)) == [(1, 1, 3)]
    assert share_fetch(wire, tid, 1, "m2", partitions=(), acks=[(1, 1, [ACCEPT])]).error_code == 0
