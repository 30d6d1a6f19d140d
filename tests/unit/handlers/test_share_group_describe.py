"""ShareGroupDescribe (77): KafkaApis' checks (share groups on, DESCRIBE on each group),
the coordinator's groups encoded with their members, assignments named from the metadata
cache, authorized operations when asked, and a group showing a topic the principal may not
describe refused; read back by Kafka 4.3's own classes."""
from __future__ import annotations

import uuid
from types import SimpleNamespace

from kafkapy.config import BrokerConfig
from kafkapy.coordinator.group.share.types import DescribedGroup, DescribedShareMember
from kafkapy.handlers import describe_groups
from kafkapy.handlers import share_group_describe as handler
from kafkapy.protocol.errors import ErrorCode
from kafkapy.protocol.messages import REQUESTS
from kafkapy.security import acls as A
from tests.support.services import context, services
from tests.support.share_group import ShareHarness
from tests.support.wire_oracle import decoded, kafka_uuid

FOO, GONE = uuid.UUID(int=0xF00), uuid.UUID(int=0x60)
MEMBER = DescribedShareMember("m1", "rack", 4, "client", "/h", ("foo", "bar"),
                              {FOO: frozenset({2, 0}), GONE: frozenset({1})})
GROUP = DescribedGroup("g", 0, None, "Stable", 4, 4, "simple", (MEMBER,))


class FakeCoordinator:
    def __init__(self, *groups: DescribedGroup) -> None:
        self.groups = {g.group_id: g for g in groups}
        self.asked: list[list[str]] = []

    def describe_share_groups(self, group_ids):
        self.asked.append(list(group_ids))
        return [self.groups.get(g, DescribedGroup(g, ErrorCode.GROUP_ID_NOT_FOUND,
                                                   f"Group {g} not found."))
                for g in group_ids]


class Authorizer:
    def __init__(self, *allowed) -> None:
        self.allowed = set(allowed)

    def authorize(self, session, operation, resource_type, name) -> bool:
        return (operation, resource_type, name) in self.allowed


def _request(*group_ids, ops=False):
    cls = REQUESTS[77]
    return cls.decode(bytes(cls(version=1, group_ids=list(group_ids),
                                include_authorized_operations=ops).encode(version=1)), version=1)


def _call(request, coordinator, *, authorizer=None, protocols=None):
    props = {"broker.id": "0"}
    if protocols is not None:
        props["group.coordinator.rebalance.protocols"] = protocols
    cache = SimpleNamespace(topic_name=lambda t: {FOO: "foo"}.get(t))
    parts = services(groups=SimpleNamespace(coordinator=coordinator), authorizer=authorizer,
                     cache=cache, config=BrokerConfig.from_properties(props))
    return handler.handle(context(parts, 77, 1), request)


def _seen(response) -> dict:
    [seen] = decoded([("ShareGroupDescribeResponse", 1, bytes(response.encode(version=1)))])
    return seen


def test_a_group_and_its_members_read_back_in_kafkas_classes():
    seen = _seen(_call(_request("g", "x", ops=True), FakeCoordinator(GROUP)))
    g, x = seen["groups"]
    assert {k: g[k] for k in ("errorCode", "groupId", "groupState", "groupEpoch",
                              "assignmentEpoch", "assignorName")} == {
        "errorCode": 0, "groupId": "g", "groupState": "Stable", "groupEpoch": 4,
        "assignmentEpoch": 4, "assignorName": "simple"}
    assert g["authorizedOperations"] == 0b110101001000      # READ, DELETE, DESCRIBE, *_CONFIGS
    [m] = g["members"]
    assert m == {"memberId": "m1", "rackId": "rack", "memberEpoch": 4, "clientId": "client",
                 "clientHost": "/h", "subscribedTopicNames": ["foo", "bar"],
                 "assignment": {"topicPartitions": [   # a topic the cache does not know: left out
                     {"topicId": kafka_uuid(FOO), "topicName": "foo", "partitions": [0, 2]}]}}
    assert (x["errorCode"], x["errorMessage"], x["members"]) == (
        ErrorCode.GROUP_ID_NOT_FOUND, "Group x not found.", [])


def test_without_share_groups_every_group_is_unsupported():
    fake = FakeCoordinator(GROUP)
    response = _call(_request("g", "h"), fake, protocols="classic")
    assert fake.asked == []
    assert [(g.group_id, g.error_code) for g in response.groups] == [
        ("g", ErrorCode.UNSUPPORTED_VERSION), ("h", ErrorCode.UNSUPPORTED_VERSION)]


def test_describe_on_each_group_and_on_the_assigned_topics():
    fake = FakeCoordinator(GROUP, DescribedGroup("h", 0, None, "Empty", 1, 1, "simple"))
    response = _call(_request("g", "h", "k"), fake, authorizer=Authorizer(
        (A.DESCRIBE, A.GROUP, "g"), (A.DESCRIBE, A.GROUP, "h")))
    assert fake.asked == [["g", "h"]]
    assert [(g.group_id, g.error_code, g.error_message) for g in response.groups] == [
        ("k", ErrorCode.GROUP_AUTHORIZATION_FAILED, None),
        ("g", ErrorCode.TOPIC_AUTHORIZATION_FAILED,
         "The group has described topic(s) that the client is not authorized to describe."),
        ("h", 0, None)]


async def test_a_real_coordinators_group(tmp_path):
    h = ShareHarness(tmp_path)
    h.topics.create("foo", 1)
    result = await h.joined("m1", ["foo"])
    response = _call(_request("g"), h.coordinator)
    [g] = response.groups
    assert (g.error_code, g.group_state, g.group_epoch, [m.member_id for m in g.members]) == (
        0, "Stable", result.member_epoch, ["m1"])


async def test_describe_groups_of_a_share_group_is_not_a_classic_group(tmp_path):
    h = ShareHarness(tmp_path)
    h.topics.create("foo", 1)
    await h.heartbeat("m1", 0, ["foo"])
    parts = services(groups=SimpleNamespace(coordinator=h.coordinator))
    answers = {}
    for version in (5, 6):
        request = SimpleNamespace(groups=["g"], include_authorized_operations=False)
        [g] = describe_groups.handle(context(parts, 15, version), request).groups
        answers[version] = (g.error_code, g.error_message, g.group_state, g.members)
    assert answers == {5: (0, None, "Dead", []),
                       6: (ErrorCode.GROUP_ID_NOT_FOUND, "Group g is not a classic group.",
                           "Dead", [])}
