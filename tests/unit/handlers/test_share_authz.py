"""ShareFetch and ShareAcknowledge authorization, as KafkaApis checks it: READ on the group
first (the whole answer GROUP_AUTHORIZATION_FAILED), then READ on each topic (the
partitions of a refused topic answer TOPIC_AUTHORIZATION_FAILED, for the fetch and for
their acknowledgements; nothing of them is read or acknowledged)."""
from __future__ import annotations

import uuid
from types import SimpleNamespace

from kafkapy.handlers import share_acknowledge, share_fetch
from kafkapy.protocol.errors import ErrorCode
from kafkapy.protocol.share_group_apis import ShareAcknowledgeRequest, ShareFetchRequest
from kafkapy.security import acls as A
from kafkapy.share import session as sessions
from tests.support.services import context, services

TOPIC_ID = uuid.uuid4()


class _Authorizer:
    """Allows exactly the (operation, resource type, name) triples given."""

    def __init__(self, *allowed) -> None:
        self.allowed = set(allowed)

    def authorize(self, session, operation, resource_type, name) -> bool:
        return (operation, resource_type, name) in self.allowed


class _Manager:
    """The share-partition leader's session side; nothing may be read or acknowledged."""

    def __init__(self) -> None:
        self.sessions = sessions.ShareSessionCache(10)
        self.touched: list = []

    def new_context(self, group, member, epoch, partitions, forgotten, acks):
        return sessions.new_context(self.sessions, group, member, epoch, partitions, forgotten,
                                    acks, 0)

    def acknowledge_session_update(self, group, member, epoch):
        sessions.acknowledge_session_update(self.sessions, group, member, epoch, 0)

    def fetch_messages(self, *args):
        self.touched.append(("fetch", args))
        raise AssertionError("a refused partition was read")

    def acknowledge(self, *args):
        self.touched.append(("acknowledge", args))
        raise AssertionError("a refused partition was acknowledged")

    def release_session(self, group, member):
        return self.sessions.remove(sessions.ShareSessionKey(group, member)) is not None

    def record_lock_duration_ms(self, group):
        return 30000


def _ctx(api_key: int, version: int, *allowed):
    cache = SimpleNamespace(topic_name=lambda tid: "t" if tid == TOPIC_ID else None,
                            partition=lambda topic, index: object())
    manager = _Manager()
    parts = services(authorizer=_Authorizer(*allowed), share_partitions=manager, cache=cache)
    return context(parts, api_key, version), manager


def _fetch(epoch: int = 0, acks: bool = False):
    R = ShareFetchRequest[1]
    batches = [R.FetchTopic.FetchPartition.AcknowledgementBatch(
        first_offset=0, last_offset=0, acknowledge_types=[1])] if acks else []
    return R(group_id="g", member_id="m", share_session_epoch=epoch, max_wait_ms=0, min_bytes=1,
             max_bytes=1024, max_records=10, batch_size=10, forgotten_topics_data=[],
             topics=[R.FetchTopic(topic_id=TOPIC_ID, partitions=[R.FetchTopic.FetchPartition(
                 partition_index=0, acknowledgement_batches=batches)])])


def _ack(epoch: int):
    R = ShareAcknowledgeRequest[1]
    part = R.AcknowledgeTopic.AcknowledgePartition
    return R(group_id="g", member_id="m", share_session_epoch=epoch, topics=[
        R.AcknowledgeTopic(topic_id=TOPIC_ID, partitions=[part(
            partition_index=0, acknowledgement_batches=[part.AcknowledgementBatch(
                first_offset=0, last_offset=0, acknowledge_types=[1])])])])


async def test_without_read_on_the_group_nothing_else_is_looked_at():
    ctx, manager = _ctx(78, 1, (A.READ, A.TOPIC, "t"))
    response = await share_fetch.handle(ctx, _fetch())
    assert (response.error_code, response.responses) == (ErrorCode.GROUP_AUTHORIZATION_FAILED, [])
    assert len(manager.sessions) == 0
    ctx, _ = _ctx(79, 1, (A.READ, A.TOPIC, "t"))
    response = await share_acknowledge.handle(ctx, _ack(1))
    assert response.error_code == ErrorCode.GROUP_AUTHORIZATION_FAILED


async def test_a_refused_topic_is_neither_read_nor_acknowledged():
    ctx, manager = _ctx(78, 1, (A.READ, A.GROUP, "g"))
    opened = await share_fetch.handle(ctx, _fetch())
    [topic] = opened.responses
    assert [(p.partition_index, p.error_code) for p in topic.partitions] == \
        [(0, ErrorCode.TOPIC_AUTHORIZATION_FAILED)]
    acked = await share_fetch.handle(ctx, _fetch(epoch=1, acks=True))
    [topic] = acked.responses
    assert [(p.error_code, p.acknowledge_error_code) for p in topic.partitions] == \
        [(ErrorCode.TOPIC_AUTHORIZATION_FAILED, ErrorCode.TOPIC_AUTHORIZATION_FAILED)]
    ctx_ack = context(ctx.services, 79, 1)
    response = await share_acknowledge.handle(ctx_ack, _ack(2))
    [topic] = response.responses
    assert [p.error_code for p in topic.partitions] == [ErrorCode.TOPIC_AUTHORIZATION_FAILED]
    assert manager.touched == []
