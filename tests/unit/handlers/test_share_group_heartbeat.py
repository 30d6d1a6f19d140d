"""ShareGroupHeartbeat (76): KafkaApis' checks (share groups on, READ on the group, DESCRIBE
on subscribed topics) before the coordinator, the request decoded into a
``ShareHeartbeatRequest`` (nulls kept), and answers from a real coordinator encoded and
read back by Kafka 4.3's own classes (``tests/support/wire_oracle``)."""
from __future__ import annotations

import uuid
from types import SimpleNamespace

import pytest

from kafkapy.config import BrokerConfig
from kafkapy.coordinator.group.share.types import HeartbeatResult, ShareHeartbeatRequest
from kafkapy.handlers import api_versions, build_registry
from kafkapy.handlers import share_group_heartbeat as handler
from kafkapy.protocol.errors import ErrorCode
from kafkapy.protocol.messages import REQUESTS
from kafkapy.security import acls as A
from tests.support.services import context, services
from tests.support.share_group import ShareHarness
from tests.support.wire_oracle import decoded, kafka_uuid


class FakeCoordinator:
    def __init__(self, result: HeartbeatResult = HeartbeatResult()) -> None:
        self.result = result
        self.asked: list[ShareHeartbeatRequest] = []

    async def share_heartbeat(self, request: ShareHeartbeatRequest) -> HeartbeatResult:
        self.asked.append(request)
        return self.result


class Authorizer:
    """Allows exactly the (operation, resource type, name) triples given."""

    def __init__(self, *allowed) -> None:
        self.allowed = set(allowed)

    def authorize(self, session, operation, resource_type, name) -> bool:
        return (operation, resource_type, name) in self.allowed


class _Groups:
    def __init__(self, coordinator) -> None:
        self.coordinator = coordinator


def _request(**fields):
    """A request as the listener decodes it off the wire (v1)."""
    cls = REQUESTS[76]
    values = dict(group_id="g", member_id="m1", member_epoch=0, rack_id=None,
                  subscribed_topic_names=["foo"])
    values.update(fields)
    return cls.decode(bytes(cls(version=1, **values).encode(version=1)), version=1)


async def _call(request, coordinator=None, *, authorizer=None, protocols: str | None = None):
    props = {"broker.id": "0"}
    if protocols is not None:
        props["group.coordinator.rebalance.protocols"] = protocols
    coordinator = coordinator or FakeCoordinator()
    parts = services(groups=_Groups(coordinator), authorizer=authorizer,
                     config=BrokerConfig.from_properties(props))
    ctx = context(parts, 76, 1, client_id="client-1", peer="10.1.2.3:4567")
    return coordinator, await handler.handle(ctx, request)


def _body(response) -> bytes:
    return bytes(response.encode(version=1))


async def test_a_join_is_handed_over_with_its_nulls():
    fake, _ = await _call(_request(rack_id="r1"))
    assert fake.asked == [ShareHeartbeatRequest(
        group_id="g", member_id="m1", member_epoch=0, client_id="client-1",
        client_host="/10.1.2.3", rack_id="r1", subscribed_topic_names=("foo",))]
    fake, _ = await _call(_request(member_epoch=4, subscribed_topic_names=None))
    assert fake.asked[0].subscribed_topic_names is None and fake.asked[0].rack_id is None


async def test_a_real_coordinators_answers_read_back_in_kafkas_classes(tmp_path):
    h = ShareHarness(tmp_path)
    topic = h.topics.create("foo", 2)
    _, joined = await _call(_request(), h.coordinator)
    await h.settle()
    _, second = await _call(_request(member_epoch=1, subscribed_topic_names=None), h.coordinator)
    _, fenced = await _call(_request(member_epoch=9, subscribed_topic_names=None), h.coordinator)
    first, assigned, refused = decoded([("ShareGroupHeartbeatResponse", 1, _body(r))
                                        for r in (joined, second, fenced)])
    assert first == {"throttleTimeMs": 0, "errorCode": 0, "errorMessage": None,
                     "memberId": "m1", "memberEpoch": 1, "heartbeatIntervalMs": 5000,
                     "assignment": {"topicPartitions": []}}
    assert assigned["memberEpoch"] == 2
    assert assigned["assignment"] == {"topicPartitions": [
        {"topicId": kafka_uuid(topic), "partitions": [0, 1]}]}
    assert (refused["errorCode"], refused["memberId"], refused["assignment"]) == (
        ErrorCode.FENCED_MEMBER_EPOCH, None, None)
    assert refused["errorMessage"].startswith("The share group member has a greater member epoch")


async def test_an_unchanged_assignment_is_null():
    result = HeartbeatResult(member_id="m1", member_epoch=3, heartbeat_interval_ms=5000)
    _, response = await _call(_request(member_epoch=3), FakeCoordinator(result))
    assert response.assignment is None
    many = {uuid.UUID(int=2): frozenset({3, 1}), uuid.UUID(int=1): frozenset({0})}
    _, response = await _call(_request(), FakeCoordinator(HeartbeatResult(assignment=many)))
    assert [(t.topic_id, t.partitions) for t in response.assignment.topic_partitions] == [
        (uuid.UUID(int=1), [0]), (uuid.UUID(int=2), [1, 3])]


# -- KafkaApis' checks ----------------------------------------------------------------------------
async def test_without_share_groups_the_api_is_unsupported():
    fake, response = await _call(_request(), protocols="classic,consumer")
    assert fake.asked == []
    [seen] = decoded([("ShareGroupHeartbeatResponse", 1, _body(response))])
    assert seen == {"throttleTimeMs": 0, "errorCode": ErrorCode.UNSUPPORTED_VERSION,
                    "errorMessage": None, "memberId": None, "memberEpoch": 0,
                    "heartbeatIntervalMs": 0, "assignment": None}


async def test_read_on_the_group_is_needed():
    denied = Authorizer((A.DESCRIBE, A.TOPIC, "foo"))
    fake, response = await _call(_request(), authorizer=denied)
    assert (response.error_code, fake.asked) == (ErrorCode.GROUP_AUTHORIZATION_FAILED, [])
    allowed = Authorizer((A.READ, A.GROUP, "g"), (A.DESCRIBE, A.TOPIC, "foo"))
    fake, response = await _call(_request(), authorizer=allowed)
    assert response.error_code == 0 and len(fake.asked) == 1


@pytest.mark.parametrize("names,error", [
    (["foo", "bar"], ErrorCode.TOPIC_AUTHORIZATION_FAILED),
    (["foo"], 0), ([], 0), (None, 0)])
async def test_every_subscribed_topic_must_be_describable(names, error):
    authorizer = Authorizer((A.READ, A.GROUP, "g"), (A.DESCRIBE, A.TOPIC, "foo"))
    fake, response = await _call(_request(member_epoch=2, subscribed_topic_names=names),
                                 authorizer=authorizer)
    assert response.error_code == error
    assert len(fake.asked) == (0 if error else 1)


# -- ApiVersions: the share group APIs and share.version only with share groups on ---------------
def _api_versions(protocols: str):
    parts = services(apis=build_registry(), features=None, config=BrokerConfig.from_properties(
        {"broker.id": "0", "group.coordinator.rebalance.protocols": protocols}))
    answer = api_versions.handle(context(parts, 18, 4), SimpleNamespace(
        client_software_name="t", client_software_version="1"))
    answer.with_header(correlation_id=1)
    [seen] = decoded([("ApiVersionsResponse", 4, answer.encode()[8:])])
    return seen


def test_api_versions_follow_the_share_protocol():
    on, off = _api_versions("classic,consumer,share"), _api_versions("classic,consumer")
    share_apis = {76, 77, 78, 79}
    assert share_apis <= {a["apiKey"] for a in on["apiKeys"]}
    assert not share_apis & {a["apiKey"] for a in off["apiKeys"]}
    assert {"apiKey": 76, "minVersion": 1, "maxVersion": 1} in on["apiKeys"]
    assert {"name": "share.version", "maxVersionLevel": 1, "minVersionLevel": 1} in \
        on["finalizedFeatures"]
    assert [f["name"] for f in off["finalizedFeatures"]] == ["group.version"]
    for answer in (on, off):       # supported either way, as by a Kafka 4.2 broker
        assert {"name": "share.version", "minVersion": 0, "maxVersion": 1} in \
            answer["supportedFeatures"]
