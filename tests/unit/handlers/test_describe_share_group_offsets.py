"""DescribeShareGroupOffsets (90): the checks KafkaApis makes per group (share groups off,
DESCRIBE on the group and on each topic), what goes to the coordinator (null topics: every
initialized partition; none: nothing), the denied topics after its answer, v0 without the
lag, both versions read back by Kafka 4.3's own classes (``tests/support/wire_oracle``), and
the end offsets read from this broker's replica manager."""
from __future__ import annotations

import asyncio
import uuid

from kafka.protocol.consumer import ListOffsetsResponse

from kafkapy.config import BrokerConfig
from kafkapy.coordinator.group.share_admin_ops import (GroupStartOffsets, PartitionStartOffset,
                                                       TopicStartOffsets)
from kafkapy.handlers import describe_share_group_offsets as handler
from kafkapy.metadata.cache import BrokerEndpoint, MetadataCache, PartitionState, TopicMetadata
from kafkapy.protocol.errors import ErrorCode, KafkaError
from kafkapy.protocol.share_group_apis import DescribeShareGroupOffsetsRequest
from kafkapy.protocol.topic_partition import TopicPartition
from kafkapy.security import acls as A
from tests.support.fake_broker_server import FakeBrokerServer
from tests.support.services import context, services
from tests.support.wire_oracle import decoded, kafka_uuid

FOO, SECRET = uuid.UUID(int=0xF00), uuid.UUID(int=0x5EC)
_Group = DescribeShareGroupOffsetsRequest.DescribeShareGroupOffsetsRequestGroup
_Topic = _Group.DescribeShareGroupOffsetsRequestTopic


class FakeCoordinator:
    def __init__(self) -> None:
        self.asked: list[tuple] = []

    async def describe_share_group_offsets(self, group_id, topics, end_offsets):
        self.asked.append((group_id, topics))
        if group_id == "elsewhere":
            return GroupStartOffsets(group_id, ErrorCode.NOT_COORDINATOR, "not here")
        if topics is None:
            topics = [("foo", [0]), ("secret", [0])]
        return GroupStartOffsets(group_id, topics=tuple(
            TopicStartOffsets(name, FOO if name == "foo" else SECRET, tuple(
                PartitionStartOffset(p, 10 + p, 3, 5) for p in parts))
            for name, parts in topics))


class Authorizer:
    def __init__(self, *allowed) -> None:
        self.allowed = set(allowed)

    def authorize(self, session, operation, resource_type, name) -> bool:
        return (operation, resource_type, name) in self.allowed


class _Groups:
    def __init__(self, coordinator) -> None:
        self.coordinator = coordinator


def _call(version: int, groups, *, authorizer=None, protocols=None):
    props = {"broker.id": "0"}
    if protocols is not None:
        props["group.coordinator.rebalance.protocols"] = protocols
    fake = FakeCoordinator()
    parts = services(groups=_Groups(fake), authorizer=authorizer,
                     config=BrokerConfig.from_properties(props))
    request = DescribeShareGroupOffsetsRequest(version=version, groups=groups)
    response = asyncio.run(handler.handle(context(parts, 90, version), request))
    return fake, response


def _group(group_id: str, topics=None):
    return _Group(group_id=group_id, topics=None if topics is None else [
        _Topic(topic_name=name, partitions=parts) for name, parts in topics])


def _read(version: int, response) -> list[dict]:
    [seen] = decoded([("DescribeShareGroupOffsetsResponse", version,
                       bytes(response.encode(version=version)))])
    return seen["groups"]


def test_share_groups_off_answer_unsupported_version_without_asking():
    fake, response = _call(1, [_group("g")], protocols="classic,consumer")
    assert fake.asked == []
    [g] = response.groups
    assert (g.group_id, g.error_code, g.error_message, g.topics) == (
        "g", ErrorCode.UNSUPPORTED_VERSION, None, [])


def test_named_topics_are_asked_and_denied_ones_follow_the_answer():
    authorizer = Authorizer((A.DESCRIBE, A.GROUP, "g"), (A.DESCRIBE, A.TOPIC, "foo"))
    fake, response = _call(1, [_group("g", [("secret", [1, 0]), ("foo", [0, 2])]),
                               _group("hidden", [("foo", [0])])], authorizer=authorizer)
    assert fake.asked == [("g", [("foo", [0, 2])])]
    g, hidden = _read(1, response)
    assert [t["topicName"] for t in g["topics"]] == ["foo", "secret"]
    foo, secret = g["topics"]
    assert foo["topicId"] == kafka_uuid(FOO)
    assert [(p["partitionIndex"], p["startOffset"], p["leaderEpoch"], p["lag"], p["errorCode"])
            for p in foo["partitions"]] == [(0, 10, 3, 5, 0), (2, 12, 3, 5, 0)]
    assert secret["topicId"] == kafka_uuid(uuid.UUID(int=0))
    assert [(p["partitionIndex"], p["startOffset"], p["leaderEpoch"], p["lag"], p["errorCode"],
             p["errorMessage"]) for p in secret["partitions"]] == [
        (1, -1, 0, -1, ErrorCode.TOPIC_AUTHORIZATION_FAILED, "Topic authorization failed."),
        (0, -1, 0, -1, ErrorCode.TOPIC_AUTHORIZATION_FAILED, "Topic authorization failed.")]
    assert (hidden["groupId"], hidden["errorCode"], hidden["errorMessage"], hidden["topics"]) == (
        "hidden", ErrorCode.GROUP_AUTHORIZATION_FAILED, None, [])


def test_null_topics_ask_for_everything_and_hide_what_may_not_be_described():
    authorizer = Authorizer((A.DESCRIBE, A.GROUP, "g"), (A.DESCRIBE, A.TOPIC, "foo"))
    fake, response = _call(1, [_group("g")], authorizer=authorizer)
    assert fake.asked == [("g", None)]
    [g] = response.groups
    assert [t.topic_name for t in g.topics] == ["foo"]


def test_no_topics_answer_the_group_without_asking():
    fake, response = _call(1, [_group("g", [])])
    assert fake.asked == []
    [g] = response.groups
    assert (g.error_code, g.topics) == (0, [])


def test_a_group_error_keeps_its_message_and_drops_the_denied_topics():
    authorizer = Authorizer((A.DESCRIBE, A.GROUP, "elsewhere"))
    _, response = _call(1, [_group("elsewhere", [("secret", [0])])], authorizer=authorizer)
    [g] = response.groups
    assert (g.error_code, g.error_message, g.topics) == (ErrorCode.NOT_COORDINATOR, "not here", [])


def test_version_0_has_no_lag():
    _, response = _call(0, [_group("g", [("foo", [1])])])
    [g] = _read(0, response)
    [p] = g["topics"][0]["partitions"]
    assert "lag" not in p
    assert (p["startOffset"], p["leaderEpoch"]) == (11, 3)


# -- end offsets ---------------------------------------------------------------------------

class _Partition:
    high_watermark = 42


class _Replicas:
    def leader_partition(self, topic, index, current_leader_epoch=-1):
        if index == 1:
            raise KafkaError(ErrorCode.NOT_LEADER_OR_FOLLOWER)
        return _Partition()


def test_end_offsets_of_partitions_led_here_are_their_high_watermarks():
    cache = MetadataCache("cluster", 0, "PLAINTEXT")
    cache.put_topic(TopicMetadata("foo", FOO, {
        0: PartitionState(0, [0], 0, 1, [0]), 1: PartitionState(1, [0], 0, 1, [0]),
        2: PartitionState(2, [0], -1, 1, [0])}))
    parts = services(cache=cache, replica_manager=_Replicas())
    ends = handler.LeaderEndOffsets(context(parts, 90, 1))
    asked = [TopicPartition("foo", p) for p in (0, 1, 2)] + [TopicPartition("gone", 0)]
    found = asyncio.run(ends.latest_offsets(asked))
    assert found == {TopicPartition("foo", 0): (0, 42),
                     TopicPartition("foo", 1): (ErrorCode.NOT_LEADER_OR_FOLLOWER, -1),
                     TopicPartition("foo", 2): (ErrorCode.LEADER_NOT_AVAILABLE, -1),
                     TopicPartition("gone", 0): (ErrorCode.LEADER_NOT_AVAILABLE, -1)}


async def test_end_offsets_of_partitions_led_elsewhere_come_from_their_leader():
    def respond(request):
        cls = ListOffsetsResponse[request.API_VERSION]
        topic = cls.ListOffsetsTopicResponse
        return cls(throttle_time_ms=0, topics=[topic(name=t.name, partitions=[
            topic.ListOffsetsPartitionResponse(
                partition_index=p.partition_index, error_code=0, timestamp=-1,
                offset=70 + p.partition_index, leader_epoch=2)
            for p in t.partitions if p.partition_index != 2]) for t in request.topics])
    leader = await FakeBrokerServer(respond=respond).start()
    try:
        cache = MetadataCache("cluster", 0, "PLAINTEXT")
        cache.put_broker(BrokerEndpoint(1, "127.0.0.1", leader.port), {})
        cache.put_topic(TopicMetadata("foo", FOO, {
            p: PartitionState(p, [1], 1, 1, [1]) for p in range(3)}))
        ends = handler.LeaderEndOffsets(context(services(cache=cache), 90, 1))
        found = await ends.latest_offsets([TopicPartition("foo", p) for p in range(3)])
    finally:
        await leader.stop()
    assert found == {TopicPartition("foo", 0): (0, 70), TopicPartition("foo", 1): (0, 71),
                     TopicPartition("foo", 2): (ErrorCode.UNKNOWN_TOPIC_OR_PARTITION, -1)}
    [request] = leader.requests
    assert (request.API_VERSION, request.replica_id, request.isolation_level) == (4, -1, 0)
    assert [(p.partition_index, p.timestamp) for t in request.topics for p in t.partitions] == [
        (0, -1), (1, -1), (2, -1)]
