"""AlterShareGroupOffsets (91): share groups off and READ on the group refuse the whole
request; topics the principal may not READ or the metadata cache does not know are refused
per partition before the coordinator is asked, listed first; a group-level answer of the
coordinator replaces everything; read back by Kafka 4.3's own classes."""
from __future__ import annotations

import asyncio
import uuid

from kafkapy.config import BrokerConfig
from kafkapy.coordinator.group.share_admin_ops import AlteredTopic, AlterResult, PartitionResult
from kafkapy.handlers import alter_share_group_offsets as handler
from kafkapy.metadata.cache import MetadataCache, TopicMetadata
from kafkapy.protocol.errors import ErrorCode
from kafkapy.protocol.share_group_apis import AlterShareGroupOffsetsRequest
from kafkapy.security import acls as A
from tests.support.services import context, services
from tests.support.wire_oracle import decoded, kafka_uuid

FOO, SECRET = uuid.UUID(int=0xF00), uuid.UUID(int=0x5EC)
UNKNOWN = "This server does not host this topic-partition."
_Topic = AlterShareGroupOffsetsRequest.AlterShareGroupOffsetsRequestTopic
_Partition = _Topic.AlterShareGroupOffsetsRequestPartition


class FakeCoordinator:
    def __init__(self, result: AlterResult | None = None) -> None:
        self.result = result
        self.asked: list[tuple] = []

    async def alter_share_group_offsets(self, group_id, topics):
        self.asked.append((group_id, topics))
        if self.result is not None:
            return self.result
        return AlterResult(topics=tuple(
            AlteredTopic(name, FOO, tuple(PartitionResult(p) for p, _ in parts))
            for name, parts in topics))


class Authorizer:
    def __init__(self, *allowed) -> None:
        self.allowed = set(allowed)

    def authorize(self, session, operation, resource_type, name) -> bool:
        return (operation, resource_type, name) in self.allowed


class _Groups:
    def __init__(self, coordinator) -> None:
        self.coordinator = coordinator


def _call(topics, *, authorizer=None, protocols=None, result=None):
    props = {"broker.id": "0"}
    if protocols is not None:
        props["group.coordinator.rebalance.protocols"] = protocols
    cache = MetadataCache("cluster", 0, "PLAINTEXT")
    cache.put_topic(TopicMetadata("foo", FOO))
    cache.put_topic(TopicMetadata("secret", SECRET))
    fake = FakeCoordinator(result)
    parts = services(groups=_Groups(fake), authorizer=authorizer, cache=cache,
                     config=BrokerConfig.from_properties(props))
    request = AlterShareGroupOffsetsRequest(version=0, group_id="g", topics=[
        _Topic(topic_name=name, partitions=[_Partition(partition_index=p, start_offset=o)
                                            for p, o in parts]) for name, parts in topics])
    response = asyncio.run(handler.handle(context(parts, 91, 0), request))
    return fake, response


def _read(response) -> dict:
    [seen] = decoded([("AlterShareGroupOffsetsResponse", 0, bytes(response.encode(version=0)))])
    return seen


def test_refused_topics_come_first_then_the_coordinators_answer():
    authorizer = Authorizer((A.READ, A.GROUP, "g"), (A.READ, A.TOPIC, "foo"),
                            (A.READ, A.TOPIC, "nosuch"))
    fake, response = _call([("foo", [(0, 5)]), ("secret", [(1, 2)]), ("nosuch", [(0, 1)])],
                           authorizer=authorizer)
    assert fake.asked == [("g", [("foo", [(0, 5)])])]
    seen = _read(response)
    assert (seen["errorCode"], seen["errorMessage"]) == (0, None)
    assert [(t["topicName"], t["topicId"], [(p["partitionIndex"], p["errorCode"], p["errorMessage"])
                                           for p in t["partitions"]])
            for t in seen["responses"]] == [
        ("secret", kafka_uuid(SECRET), [(1, ErrorCode.TOPIC_AUTHORIZATION_FAILED,
                                         "Topic authorization failed.")]),
        ("nosuch", kafka_uuid(uuid.UUID(int=0)), [(0, ErrorCode.UNKNOWN_TOPIC_OR_PARTITION,
                                                   UNKNOWN)]),
        ("foo", kafka_uuid(FOO), [(0, 0, None)])]


def test_a_refused_topic_without_partitions_is_not_listed():
    fake, response = _call([("nosuch", []), ("foo", [])])
    assert fake.asked == [("g", [("foo", [])])]
    assert [(t.topic_name, t.partitions) for t in response.responses] == [("foo", [])]


def test_a_topic_refused_and_answered_is_listed_once():
    fake, response = _call([("nosuch", [(0, 1)])], result=AlterResult(topics=(
        AlteredTopic("nosuch", None, (PartitionResult(1),)),)))
    [topic] = response.responses
    assert [(p.partition_index, p.error_code) for p in topic.partitions] == [
        (0, ErrorCode.UNKNOWN_TOPIC_OR_PARTITION), (1, 0)]


def test_a_group_level_answer_replaces_everything():
    fake, response = _call([("nosuch", [(0, 1)])], result=AlterResult(
        ErrorCode.NON_EMPTY_GROUP, "The group is not empty."))
    assert (response.error_code, response.error_message, response.responses) == (
        ErrorCode.NON_EMPTY_GROUP, "The group is not empty.", [])


def test_share_groups_off_and_no_read_on_the_group_refuse_the_request():
    fake, response = _call([("foo", [(0, 1)])], protocols="classic")
    assert (response.error_code, response.error_message) == (
        ErrorCode.UNSUPPORTED_VERSION, "The version of API is not supported.")
    fake, response = _call([("foo", [(0, 1)])], authorizer=Authorizer())
    assert (response.error_code, response.error_message) == (
        ErrorCode.GROUP_AUTHORIZATION_FAILED, "Group authorization failed.")
    assert fake.asked == []
