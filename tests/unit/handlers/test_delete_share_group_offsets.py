"""DeleteShareGroupOffsets (92): share groups off and DELETE on the group refuse the whole
request; topics the principal may not READ are refused first (no topic id), the others
go to the coordinator, whose group-level answer replaces everything; read back by Kafka
4.3's own classes."""
from __future__ import annotations

import asyncio
import uuid

from kafkapy.config import BrokerConfig
from kafkapy.coordinator.group.share_admin_ops import DeletedTopic, DeleteResult
from kafkapy.handlers import delete_share_group_offsets as handler
from kafkapy.protocol.errors import ErrorCode
from kafkapy.protocol.share_group_apis import DeleteShareGroupOffsetsRequest
from kafkapy.security import acls as A
from tests.support.services import context, services
from tests.support.wire_oracle import decoded, kafka_uuid

FOO = uuid.UUID(int=0xF00)
_Topic = DeleteShareGroupOffsetsRequest.DeleteShareGroupOffsetsRequestTopic


class FakeCoordinator:
    def __init__(self, result: DeleteResult | None = None) -> None:
        self.result = result
        self.asked: list[tuple] = []

    async def delete_share_group_offsets(self, group_id, topics):
        self.asked.append((group_id, list(topics)))
        if self.result is not None:
            return self.result
        return DeleteResult(topics=tuple(DeletedTopic(t, FOO) for t in topics))


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
    fake = FakeCoordinator(result)
    parts = services(groups=_Groups(fake), authorizer=authorizer,
                     config=BrokerConfig.from_properties(props))
    request = DeleteShareGroupOffsetsRequest(version=0, group_id="g", topics=[
        _Topic(topic_name=t) for t in topics])
    response = asyncio.run(handler.handle(context(parts, 92, 0), request))
    return fake, response


def test_denied_topics_come_first_then_the_coordinators_answer():
    authorizer = Authorizer((A.DELETE, A.GROUP, "g"), (A.READ, A.TOPIC, "foo"))
    fake, response = _call(["foo", "secret"], authorizer=authorizer)
    assert fake.asked == [("g", ["foo"])]
    [seen] = decoded([("DeleteShareGroupOffsetsResponse", 0, bytes(response.encode(version=0)))])
    assert (seen["errorCode"], seen["errorMessage"]) == (0, None)
    assert [(t["topicName"], t["topicId"], t["errorCode"], t["errorMessage"])
            for t in seen["responses"]] == [
        ("secret", kafka_uuid(uuid.UUID(int=0)), ErrorCode.TOPIC_AUTHORIZATION_FAILED,
         "Topic authorization failed."),
        ("foo", kafka_uuid(FOO), 0, None)]


def test_a_group_level_answer_replaces_everything():
    authorizer = Authorizer((A.DELETE, A.GROUP, "g"))
    fake, response = _call(["secret"], authorizer=authorizer, result=DeleteResult(
        ErrorCode.GROUP_ID_NOT_FOUND, "Group g not found."))
    assert fake.asked == [("g", [])]
    assert (response.error_code, response.error_message, response.responses) == (
        ErrorCode.GROUP_ID_NOT_FOUND, "Group g not found.", [])


def test_share_groups_off_and_no_delete_on_the_group_refuse_the_request():
    fake, response = _call(["foo"], protocols="classic,consumer")
    assert (response.error_code, response.error_message) == (
        ErrorCode.UNSUPPORTED_VERSION, "The version of API is not supported.")
    fake, response = _call(["foo"], authorizer=Authorizer((A.READ, A.GROUP, "g")))
    assert (response.error_code, response.error_message) == (
        ErrorCode.GROUP_AUTHORIZATION_FAILED, "Group authorization failed.")
    assert fake.asked == []
