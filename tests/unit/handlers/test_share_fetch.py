"""ShareFetch (78) and ShareAcknowledge (79) over a real in-process broker's socket: the
request-level refusals, session errors and epochs, what a running session answers, the
acknowledgement checks (RENEW only from v2), IsRenewAck, the session limit's wait, leader
hints, the answer's AcquisitionLockTimeoutMs, and the session's end with its connection."""
from __future__ import annotations

import asyncio
import uuid

import pytest

from kafkapy.network.client import BrokerConnection
from kafkapy.protocol.errors import ErrorCode
from kafkapy.protocol.messages import REQUESTS
from kafkapy.protocol.share_group_apis import ShareAcknowledgeRequest, ShareFetchRequest
from kafkapy.records.batch import iter_headers
from kafkapy.records.record import build_batch, decode_records
from kafkapy.share.session import SHARE_SESSION_LIMIT_REACHED, ShareSessionKey
from kafkapy.testing import MockClock, broker

GROUP = "g"
TOPIC = "t"
_Fetch = ShareFetchRequest[1]
_Ack = ShareAcknowledgeRequest[1]


def share_fetch(topic_id, partitions=(0,), *, epoch=0, member="m1", version=1, acks=None,
                forgotten=(), max_wait_ms=0, max_records=500, **extra):
    """A ShareFetch; ``acks``: {partition: [(first, last, [types])]}."""
    R = ShareFetchRequest[version]
    acks = acks or {}
    listed = sorted(set(partitions) | set(acks))
    topics = [R.FetchTopic(topic_id=topic_id, partitions=[
        R.FetchTopic.FetchPartition(partition_index=p, acknowledgement_batches=[
            R.FetchTopic.FetchPartition.AcknowledgementBatch(
                first_offset=a, last_offset=b, acknowledge_types=list(types))
            for a, b, types in acks.get(p, ())]) for p in listed])] if listed else []
    forgotten_data = [R.ForgottenTopic(topic_id=topic_id, partitions=list(forgotten))] \
        if forgotten else []
    return R(group_id=GROUP, member_id=member, share_session_epoch=epoch,
             max_wait_ms=max_wait_ms, min_bytes=1, max_bytes=1 << 20, max_records=max_records,
             batch_size=max_records, topics=topics, forgotten_topics_data=forgotten_data,
             **extra)


def share_ack(topic_id, acks, *, epoch, member="m1", version=1, **extra):
    R = ShareAcknowledgeRequest[version]
    return R(group_id=GROUP, member_id=member, share_session_epoch=epoch, topics=[
        R.AcknowledgeTopic(topic_id=topic_id, partitions=[
            R.AcknowledgeTopic.AcknowledgePartition(partition_index=p, acknowledgement_batches=[
                R.AcknowledgeTopic.AcknowledgePartition.AcknowledgementBatch(
                    first_offset=a, last_offset=b, acknowledge_types=list(types))
                for a, b, types in batches]) for p, batches in acks.items()])], **extra)


def partitions(response) -> dict[int, object]:
    return {p.partition_index: p for t in response.responses for p in t.partitions}


def acquired(partition) -> list[tuple[int, int, int]]:
    return [(a.first_offset, a.last_offset, a.delivery_count) for a in partition.acquired_records]


def offsets(partition) -> list[int]:
    data = partition.records
    return [r.offset for h in iter_headers(data) for r in decode_records(data, h.position)]


class Node:
    def __init__(self, b, conn: BrokerConnection) -> None:
        self.b = b
        self.conn = conn
        self.topic_id = b.server.cache.topic(TOPIC).topic_id

    async def send(self, request):
        return await self.conn.send(request)

    async def produce(self, *values: bytes, partition: int = 0) -> None:
        P = REQUESTS[0]
        now = self.b.server.clock.time_ms()
        batch = build_batch([(b"k", v, [], now) for v in values])
        r = await self.send(P(version=9, transactional_id=None, acks=-1, timeout_ms=5000,
                              topic_data=[P.TopicProduceData(name=TOPIC, partition_data=[
                                  P.TopicProduceData.PartitionProduceData(
                                      index=partition, records=batch)])]))
        assert r.responses[0].partition_responses[0].error_code == 0

    async def fetch_until_loaded(self, request):
        """The share partitions load on first use: ask again until they answer records."""
        for _ in range(100):
            response = await self.send(request)
            answered = partitions(response).values()
            if response.error_code or any(p.acquired_records for p in answered):
                return response
            await asyncio.sleep(0.01)
            request.share_session_epoch = 0
        return response


@pytest.fixture
async def node():
    async with broker(clock=MockClock(), settings={"group.share.max.share.sessions": "2"}) as b:
        await b.create_topic(TOPIC, 2)
        n = Node(b, BrokerConnection(client_id="share-test"))
        await n.conn.connect(b.host, b.port)
        for p in (0, 1):
            assert await b.server.share_persister.initialize(
                GROUP, n.topic_id, p, state_epoch=0, start_offset=0) == 0
        yield n
        n.conn.close()


async def test_records_are_fetched_acknowledged_and_redelivered(node):
    await node.produce(b"a", b"b", b"c")
    first = await node.fetch_until_loaded(share_fetch(node.topic_id))
    assert first.error_code == 0 and first.acquisition_lock_timeout_ms == 30000
    p0 = partitions(first)[0]
    assert acquired(p0) == [(0, 2, 1)] and offsets(p0) == [0, 1, 2]
    response = await node.send(share_fetch(node.topic_id, (), epoch=1,
                                           acks={0: [(0, 2, [1, 2, 1])]}))
    assert response.error_code == 0
    answered = partitions(response)
    assert answered[0].acknowledge_error_code == 0
    assert acquired(answered[0]) == [(1, 1, 2)]        # released, then fetched again


async def test_session_errors_are_the_whole_answer(node):
    missing = await node.send(share_fetch(node.topic_id, epoch=3, member="nobody"))
    assert (missing.error_code, missing.responses, missing.acquisition_lock_timeout_ms) == \
        (ErrorCode.SHARE_SESSION_NOT_FOUND, [], 0)
    await node.send(share_fetch(node.topic_id))
    wrong = await node.send(share_fetch(node.topic_id, epoch=5))
    assert wrong.error_code == ErrorCode.INVALID_SHARE_SESSION_EPOCH
    opening = await node.send(share_fetch(node.topic_id, epoch=0, acks={0: [(0, 0, [1])]}))
    assert opening.error_code == ErrorCode.INVALID_REQUEST
    ack0 = await node.send(share_ack(node.topic_id, {0: [(0, 0, [1])]}, epoch=0))
    assert ack0.error_code == ErrorCode.INVALID_SHARE_SESSION_EPOCH


async def test_a_running_session_answers_only_partitions_with_news(node):
    await node.produce(b"a", partition=1)
    first = await node.fetch_until_loaded(share_fetch(node.topic_id, (0, 1)))
    assert sorted(partitions(first)) == [0, 1]
    again = await node.send(share_fetch(node.topic_id, (), epoch=1))
    assert partitions(again) == {}
    await node.produce(b"b", partition=0)
    news = await node.send(share_fetch(node.topic_id, (), epoch=2, max_wait_ms=1000))
    assert sorted(partitions(news)) == [0]
    forgot = await node.send(share_fetch(node.topic_id, (), epoch=3, forgotten=(0,)))
    assert forgot.error_code == 0
    await node.produce(b"c", partition=0)
    quiet = await node.send(share_fetch(node.topic_id, (), epoch=4))
    assert partitions(quiet) == {}


async def test_unknown_topic_ids_and_malformed_acknowledgements(node):
    await node.produce(b"a", b"b")
    await node.fetch_until_loaded(share_fetch(node.topic_id))
    stranger = uuid.uuid4()
    unknown = await node.send(share_fetch(stranger, epoch=0, member="m2"))
    assert partitions(unknown)[0].error_code == ErrorCode.UNKNOWN_TOPIC_ID
    bad = await node.send(share_ack(node.topic_id, {0: [(1, 0, [1])]}, epoch=1))
    assert partitions(bad)[0].error_code == ErrorCode.INVALID_REQUEST
    renew_v1 = await node.send(share_ack(node.topic_id, {0: [(0, 1, [4])]}, epoch=2))
    assert partitions(renew_v1)[0].error_code == ErrorCode.INVALID_REQUEST
    renew_v2 = await node.send(share_ack(node.topic_id, {0: [(0, 1, [4])]}, epoch=3,
                                         version=2, is_renew_ack=True))
    assert partitions(renew_v2)[0].error_code == 0
    assert renew_v2.acquisition_lock_timeout_ms == 30000
    other = await node.send(share_ack(node.topic_id, {0: [(0, 0, [1])]}, epoch=4, member="m3"))
    assert other.error_code == ErrorCode.SHARE_SESSION_NOT_FOUND


async def test_a_renew_only_share_fetch_reads_nothing(node):
    await node.produce(b"a")
    await node.fetch_until_loaded(share_fetch(node.topic_id))
    await node.produce(b"b")
    renewed = await node.send(share_fetch(node.topic_id, (), epoch=1, version=2,
                                          acks={0: [(0, 0, [4])]}, is_renew_ack=True,
                                          max_wait_ms=1000))
    [p0] = partitions(renewed).values()
    assert p0.acknowledge_error_code == 0 and p0.acquired_records == []


async def test_the_final_epoch_closes_the_session_and_releases(node):
    await node.produce(b"a")
    await node.fetch_until_loaded(share_fetch(node.topic_id))
    closed = await node.send(share_fetch(node.topic_id, (), epoch=-1))
    assert closed.error_code == 0
    gone = await node.send(share_fetch(node.topic_id, (), epoch=2))
    assert gone.error_code == ErrorCode.SHARE_SESSION_NOT_FOUND
    other = await node.send(share_fetch(node.topic_id, member="m2", max_wait_ms=5000))
    assert acquired(partitions(other)[0]) == [(0, 0, 1)]


async def test_share_acknowledge_final_epoch_acknowledges_then_closes(node):
    await node.produce(b"a", b"b")
    await node.fetch_until_loaded(share_fetch(node.topic_id))
    done = await node.send(share_ack(node.topic_id, {0: [(0, 0, [1])]}, epoch=-1))
    assert partitions(done)[0].error_code == 0
    again = await node.send(share_ack(node.topic_id, {0: [(1, 1, [1])]}, epoch=-1))
    assert again.error_code == ErrorCode.SHARE_SESSION_NOT_FOUND
    other = await node.send(share_fetch(node.topic_id, member="m2", max_wait_ms=5000))
    assert acquired(partitions(other)[0]) == [(1, 1, 1)]


async def _connection(b) -> BrokerConnection:
    conn = BrokerConnection(client_id="share-test-2")
    await conn.connect(b.host, b.port)
    return conn


async def _until_no_session(node, member: str) -> None:
    sessions = node.b.server.share_partitions.sessions
    for _ in range(500):
        if sessions.get(ShareSessionKey(GROUP, member)) is None:
            return
        await asyncio.sleep(0.01)
    raise AssertionError("the session outlived its connection")


async def test_closing_the_connection_closes_the_session_and_releases_at_once(node):
    """The clock never moves: the records come back without their lock running out,
    and the other member gets them at delivery count 1 (the delivery taken back)."""
    await node.produce(b"a", b"b", b"c")
    first = await node.fetch_until_loaded(share_fetch(node.topic_id))
    assert acquired(partitions(first)[0]) == [(0, 2, 1)]
    node.conn.close()
    await _until_no_session(node, "m1")
    other = await _connection(node.b)
    try:
        taken = await other.send(share_fetch(node.topic_id, member="m2", max_wait_ms=5000))
        assert acquired(partitions(taken)[0]) == [(0, 2, 1)]
        assert offsets(partitions(taken)[0]) == [0, 1, 2]
    finally:
        other.close()


async def test_a_session_opened_again_elsewhere_ends_with_its_new_connection(node):
    await node.produce(b"a")
    await node.fetch_until_loaded(share_fetch(node.topic_id))
    moved = await _connection(node.b)
    try:
        reopened = await moved.send(share_fetch(node.topic_id, (), max_wait_ms=0))
        assert reopened.error_code == 0
        node.conn.close()                       # the first connection: no longer the session's
        await asyncio.sleep(0.2)
        assert (await moved.send(share_fetch(node.topic_id, (), epoch=1))).error_code == 0
    finally:
        moved.close()
    await _until_no_session(node, "m1")


async def test_the_session_limit_answers_after_max_wait(node):
    await node.send(share_fetch(node.topic_id, member="m1"))
    await node.send(share_fetch(node.topic_id, member="m2"))
    third = asyncio.ensure_future(node.send(share_fetch(node.topic_id, member="m3",
                                                        max_wait_ms=700)))
    await asyncio.sleep(0.05)
    assert not third.done()
    await node.b.advance(700)
    assert (await asyncio.wait_for(third, 5)).error_code == SHARE_SESSION_LIMIT_REACHED


async def test_a_partition_led_elsewhere_names_its_leader(node):
    server = node.b.server
    rm = server.replica_manager
    rm.partitions.pop((TOPIC, 1))           # as if another broker led it
    response = await node.send(share_fetch(node.topic_id, (1,), member="m3"))
    p1 = partitions(response)[1]
    assert p1.error_code == ErrorCode.NOT_LEADER_OR_FOLLOWER
    assert (p1.current_leader.leader_id, p1.current_leader.leader_epoch) == (0, 0)
    assert [e.node_id for e in response.node_endpoints] == [0]


async def test_share_groups_off_answers_unsupported_version():
    async with broker(settings={"group.coordinator.rebalance.protocols": "classic,consumer"}) as b:
        await b.create_topic(TOPIC, 1)
        conn = BrokerConnection(client_id="share-test")
        await conn.connect(b.host, b.port)
        topic_id = b.server.cache.topic(TOPIC).topic_id
        assert (await conn.send(share_fetch(topic_id))).error_code == ErrorCode.UNSUPPORTED_VERSION
        assert (await conn.send(share_ack(topic_id, {0: [(0, 0, [1])]}, epoch=1))).error_code \
            == ErrorCode.UNSUPPORTED_VERSION
        conn.close()
