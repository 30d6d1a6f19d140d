"""ConsumerGroupHeartbeat (68): KafkaApis' checks (protocol enabled, READ on the group,
DESCRIBE on subscribed topics) before the coordinator, the request decoded into a
``HeartbeatRequest`` (nulls kept), the ``HeartbeatResult`` encoded at v0 and v1 and read
back by Kafka 4.3's own classes (``tests/support/wire_oracle``)."""
from __future__ import annotations

import uuid

import pytest

from kafkapy.config import BrokerConfig
from kafkapy.coordinator.group.consumer.types import HeartbeatRequest, HeartbeatResult
from kafkapy.handlers import consumer_group_heartbeat as handler
from kafkapy.protocol.errors import ErrorCode
from kafkapy.protocol.messages import REQUESTS
from kafkapy.security import acls as A
from tests.support.services import context, services
from tests.support.wire_oracle import decoded, kafka_uuid

FOO, BAR = uuid.UUID(int=0xF00), uuid.UUID(int=0xBA2)
_Owned = REQUESTS[68].TopicPartitions


class FakeCoordinator:
    """Answers every heartbeat with ``result`` and keeps what it was asked."""

    def __init__(self, result: HeartbeatResult) -> None:
        self.result = result
        self.asked: list[HeartbeatRequest] = []

    async def consumer_heartbeat(self, request: HeartbeatRequest) -> HeartbeatResult:
        self.asked.append(request)
        return self.result


class Authorizer:
    """Allows exactly the (operation, resource type, name) triples given."""

    def __init__(self, *allowed) -> None:
        self.allowed = set(allowed)

    def authorize(self, session, operation, resource_type, name) -> bool:
        return (operation, resource_type, name) in self.allowed


def _request(version: int, **fields):
    """A request as the listener decodes it off the wire."""
    cls = REQUESTS[68]
    values = dict(group_id="g", member_id="m1", member_epoch=0, instance_id=None, rack_id=None,
                  rebalance_timeout_ms=300000, subscribed_topic_names=["foo"],
                  server_assignor=None, topic_partitions=[])
    if version >= 1:
        values["subscribed_topic_regex"] = None
    values.update(fields)
    return cls.decode(bytes(cls(version=version, **values).encode(version=version)),
                      version=version)


async def _call(version: int, request, result=HeartbeatResult(), *, authorizer=None,
                protocols: str | None = None):
    props = {"broker.id": "0"}
    if protocols is not None:
        props["group.coordinator.rebalance.protocols"] = protocols
    fake = FakeCoordinator(result)
    parts = services(groups=_Groups(fake), authorizer=authorizer,
                     config=BrokerConfig.from_properties(props))
    ctx = context(parts, 68, version, client_id="client-1", peer="10.1.2.3:4567")
    response = await handler.handle(ctx, request)
    return fake, response


class _Groups:
    def __init__(self, coordinator) -> None:
        self.coordinator = coordinator


def _body(response) -> bytes:
    return bytes(response.encode(version=response.API_VERSION))


# -- decoding -------------------------------------------------------------------------------
@pytest.mark.parametrize("version", [0, 1])
async def test_a_join_is_handed_over_with_its_nulls(version):
    fake, _ = await _call(version, _request(version))
    assert fake.asked == [HeartbeatRequest(
        group_id="g", member_id="m1", member_epoch=0, client_id="client-1",
        client_host="/10.1.2.3", version=version, rebalance_timeout_ms=300000,
        subscribed_topic_names=("foo",), owned={})]


async def test_owned_partitions_and_every_field_are_decoded():
    request = _request(1, instance_id="i1", rack_id="r1", server_assignor="range",
                       subscribed_topic_regex="fo.*", member_epoch=7, rebalance_timeout_ms=-1,
                       topic_partitions=[_Owned(topic_id=FOO, partitions=[2, 0]),
                                         _Owned(topic_id=BAR, partitions=[1])])
    fake, _ = await _call(1, request)
    [asked] = fake.asked
    assert (asked.instance_id, asked.rack_id, asked.server_assignor, asked.member_epoch,
            asked.rebalance_timeout_ms, asked.subscribed_topic_regex) == (
        "i1", "r1", "range", 7, -1, "fo.*")
    assert asked.owned == {FOO: frozenset({0, 2}), BAR: frozenset({1})}


async def test_a_topic_listed_without_partitions_is_kept():
    """So a join listing one is refused as Kafka refuses it (owned must be empty)."""
    request = _request(1, member_epoch=0, topic_partitions=[_Owned(topic_id=FOO, partitions=[])])
    fake, _ = await _call(1, request)
    [asked] = fake.asked
    assert asked.owned == {FOO: frozenset()}


async def test_nulls_mean_unchanged():
    request = _request(1, member_epoch=3, subscribed_topic_names=None, topic_partitions=None)
    fake, _ = await _call(1, request)
    [asked] = fake.asked
    assert asked.subscribed_topic_names is None and asked.owned is None
    assert asked.subscribed_topic_regex is None and asked.server_assignor is None


# -- encoding, read back by Kafka's client classes --------------------------------------------
@pytest.mark.parametrize("version", [0, 1])
async def test_an_assignment_reads_back_in_kafkas_classes(version):
    result = HeartbeatResult(member_id="m1", member_epoch=5, heartbeat_interval_ms=5000,
                             assignment={BAR: frozenset({3, 1}), FOO: frozenset({0})})
    _, response = await _call(version, _request(version), result)
    [seen] = decoded([("ConsumerGroupHeartbeatResponse", version, _body(response))])
    assert seen == {
        "throttleTimeMs": 0, "errorCode": 0, "errorMessage": None, "memberId": "m1",
        "memberEpoch": 5, "heartbeatIntervalMs": 5000,
        "assignment": {"topicPartitions": [
            {"topicId": kafka_uuid(t), "partitions": p}
            for t, p in sorted([(FOO, [0]), (BAR, [1, 3])])]}}


async def test_no_assignment_is_null_and_an_empty_one_is_empty():
    unchanged = HeartbeatResult(member_id="m1", member_epoch=5, heartbeat_interval_ms=5000)
    emptied = HeartbeatResult(member_id="m1", member_epoch=6, heartbeat_interval_ms=5000,
                              assignment={})
    bodies = [("ConsumerGroupHeartbeatResponse", 1,
               _body((await _call(1, _request(1), r))[1])) for r in (unchanged, emptied)]
    first, second = decoded(bodies)
    assert first["assignment"] is None
    assert second["assignment"] == {"topicPartitions": []}


async def test_the_coordinators_error_and_message_are_answered():
    result = HeartbeatResult(error=ErrorCode.FENCED_MEMBER_EPOCH,
                             message="The consumer group member has a smaller member epoch (3) "
                                     "than the one known by the group coordinator (5).")
    _, response = await _call(0, _request(0, member_epoch=3), result)
    [seen] = decoded([("ConsumerGroupHeartbeatResponse", 0, _body(response))])
    assert (seen["errorCode"], seen["errorMessage"], seen["memberId"], seen["assignment"]) == (
        ErrorCode.FENCED_MEMBER_EPOCH, result.message, None, None)


# -- KafkaApis' checks ----------------------------------------------------------------------------
async def test_without_the_consumer_protocol_the_api_is_unsupported():
    fake, response = await _call(1, _request(1), protocols="classic")
    assert fake.asked == []
    [seen] = decoded([("ConsumerGroupHeartbeatResponse", 1, _body(response))])
    assert seen == {"throttleTimeMs": 0, "errorCode": ErrorCode.UNSUPPORTED_VERSION,
                    "errorMessage": None, "memberId": None, "memberEpoch": 0,
                    "heartbeatIntervalMs": 0, "assignment": None}


async def test_read_on_the_group_is_needed():
    denied = Authorizer((A.DESCRIBE, A.TOPIC, "foo"))
    fake, response = await _call(1, _request(1), authorizer=denied)
    assert (response.error_code, fake.asked) == (ErrorCode.GROUP_AUTHORIZATION_FAILED, [])
    allowed = Authorizer((A.READ, A.GROUP, "g"), (A.DESCRIBE, A.TOPIC, "foo"))
    fake, response = await _call(1, _request(1), authorizer=allowed)
    assert response.error_code == 0 and len(fake.asked) == 1


async def test_every_subscribed_topic_must_be_describable():
    authorizer = Authorizer((A.READ, A.GROUP, "g"), (A.DESCRIBE, A.TOPIC, "foo"))
    request = _request(1, subscribed_topic_names=["foo", "secret", "foo"])
    fake, response = await _call(1, request, authorizer=authorizer)
    assert (response.error_code, response.error_message, fake.asked) == (
        ErrorCode.TOPIC_AUTHORIZATION_FAILED, None, [])
    # a regex or an unchanged (null) subscription is not checked here
    for request in (_request(1, subscribed_topic_names=None, member_epoch=2),
                    _request(1, subscribed_topic_names=[], subscribed_topic_regex="sec.*")):
        fake, response = await _call(1, request, authorizer=authorizer)
        assert response.error_code == 0 and len(fake.asked) == 1
