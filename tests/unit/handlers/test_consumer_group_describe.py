"""ConsumerGroupDescribe (69): groups the principal may not DESCRIBE answered first with
GROUP_AUTHORIZATION_FAILED, the coordinator's descriptions with topic names from the
metadata cache, authorized operations when asked, groups showing topics the principal may
not DESCRIBE refused as Kafka 4.x refuses them; v0 and v1 (MemberType) read back by Kafka
4.3's own classes (``tests/support/wire_oracle``)."""
from __future__ import annotations

import uuid

import pytest

from kafkapy.config import BrokerConfig
from kafkapy.coordinator.group.consumer.types import DescribedGroup, DescribedMember
from kafkapy.handlers import consumer_group_describe as handler
from kafkapy.metadata.cache import MetadataCache, TopicMetadata
from kafkapy.protocol.errors import ErrorCode
from kafkapy.protocol.messages import REQUESTS
from kafkapy.security import acls as A
from tests.support.services import context, services
from tests.support.wire_oracle import decoded, kafka_uuid

FOO, SECRET, GONE = uuid.UUID(int=0xF00), uuid.UUID(int=0x5EC), uuid.UUID(int=0x60E)
INT32_MIN = -2**31


class FakeCoordinator:
    def __init__(self, groups: dict[str, DescribedGroup]) -> None:
        self.groups = groups
        self.asked: list[list[str]] = []

    def describe_consumer_groups(self, group_ids: list[str]) -> list[DescribedGroup]:
        self.asked.append(list(group_ids))
        return [self.groups.get(g) or DescribedGroup(g, ErrorCode.GROUP_ID_NOT_FOUND,
                                                     f"Group {g} not found.")
                for g in group_ids]


class Authorizer:
    def __init__(self, *allowed) -> None:
        self.allowed = set(allowed)

    def authorize(self, session, operation, resource_type, name) -> bool:
        return (operation, resource_type, name) in self.allowed


class _Groups:
    def __init__(self, coordinator) -> None:
        self.coordinator = coordinator


def _member(member_id: str, assigned, target, member_type: int = 1) -> DescribedMember:
    return DescribedMember(member_id=member_id, instance_id=None, rack_id="r1", member_epoch=4,
                           client_id="c", client_host="/10.0.0.1",
                           subscribed_topic_names=("foo",), subscribed_topic_regex=None,
                           assigned=assigned, target=target, member_type=member_type)


STABLE = DescribedGroup("g", state="Stable", group_epoch=4, assignment_epoch=4,
                        assignor_name="uniform", members=(
                            _member("m1", {FOO: frozenset({2, 0})}, {FOO: frozenset({0, 1, 2})}),
                            _member("m2", {GONE: frozenset({0})}, {}, member_type=0)))
SECRETIVE = DescribedGroup("s", state="Reconciling", group_epoch=2, assignment_epoch=2,
                           assignor_name="range", members=(
                               _member("m3", {}, {SECRET: frozenset({0})}),))


def _cache() -> MetadataCache:
    cache = MetadataCache("cluster", 0, "PLAINTEXT")
    cache.put_topic(TopicMetadata("foo", FOO))
    cache.put_topic(TopicMetadata("secret", SECRET))
    return cache


def _call(version: int, group_ids, *, include_ops=False, authorizer=None, protocols=None):
    props = {"broker.id": "0"}
    if protocols is not None:
        props["group.coordinator.rebalance.protocols"] = protocols
    fake = FakeCoordinator({"g": STABLE, "s": SECRETIVE})
    parts = services(groups=_Groups(fake), cache=_cache(), authorizer=authorizer,
                     config=BrokerConfig.from_properties(props))
    request = REQUESTS[69](version=version, group_ids=list(group_ids),
                           include_authorized_operations=include_ops)
    response = handler.handle(context(parts, 69, version), request)
    return fake, response


def _read(version: int, response) -> list[dict]:
    [seen] = decoded([("ConsumerGroupDescribeResponse", version,
                       bytes(response.encode(version=version)))])
    return seen["groups"]


def _assignment(*pairs):
    return {"topicPartitions": [{"topicId": kafka_uuid(t), "topicName": n, "partitions": p}
                                for t, n, p in pairs]}


@pytest.mark.parametrize("version", [0, 1])
def test_a_group_reads_back_in_kafkas_classes(version):
    fake, response = _call(version, ["g"])
    assert fake.asked == [["g"]]
    [group] = _read(version, response)
    m1 = {"memberId": "m1", "instanceId": None, "rackId": "r1", "memberEpoch": 4,
          "clientId": "c", "clientHost": "/10.0.0.1", "subscribedTopicNames": ["foo"],
          "subscribedTopicRegex": None,
          "assignment": _assignment((FOO, "foo", [0, 2])),
          "targetAssignment": _assignment((FOO, "foo", [0, 1, 2]))}
    # a topic id the cache does not know (deleted) is left out
    m2 = {**m1, "memberId": "m2", "assignment": _assignment(), "targetAssignment": _assignment()}
    if version >= 1:
        m1["memberType"], m2["memberType"] = 1, 0
    assert group == {"errorCode": 0, "errorMessage": None, "groupId": "g", "groupState": "Stable",
                     "groupEpoch": 4, "assignmentEpoch": 4, "assignorName": "uniform",
                     "members": [m1, m2], "authorizedOperations": INT32_MIN}


def test_errors_and_authorized_operations():
    _, response = _call(1, ["g", "nope"], include_ops=True)
    g, nope = _read(1, response)
    # no authorizer: every operation Kafka 4.x supports on a group
    assert g["authorizedOperations"] == sum(1 << op for op in (3, 6, 8, 10, 11))
    assert nope == {"errorCode": ErrorCode.GROUP_ID_NOT_FOUND, "errorMessage": "Group nope not found.",
                    "groupId": "nope", "groupState": "", "groupEpoch": 0, "assignmentEpoch": 0,
                    "assignorName": "", "members": [], "authorizedOperations": INT32_MIN}


def test_groups_not_describable_come_first_and_are_not_asked_for():
    authorizer = Authorizer((A.DESCRIBE, A.GROUP, "g"), (A.DESCRIBE, A.TOPIC, "foo"),
                            (A.READ, A.GROUP, "g"))
    fake, response = _call(0, ["x", "g", "y"], include_ops=True, authorizer=authorizer)
    assert fake.asked == [["g"]]
    groups = response.groups
    assert [(r.group_id, r.error_code) for r in groups] == [
        ("x", ErrorCode.GROUP_AUTHORIZATION_FAILED), ("y", ErrorCode.GROUP_AUTHORIZATION_FAILED),
        ("g", 0)]
    assert groups[0].error_message is None and groups[0].authorized_operations is None
    assert groups[2].authorized_operations == {A.READ, A.DESCRIBE}


def test_a_group_showing_a_hidden_topic_is_refused():
    authorizer = Authorizer((A.DESCRIBE, A.GROUP, "g"), (A.DESCRIBE, A.GROUP, "s"),
                            (A.DESCRIBE, A.TOPIC, "foo"))
    _, response = _call(1, ["g", "s"], authorizer=authorizer)
    g, s = _read(1, response)
    assert g["errorCode"] == 0 and [m["memberId"] for m in g["members"]] == ["m1", "m2"]
    assert s == {"errorCode": ErrorCode.TOPIC_AUTHORIZATION_FAILED,
                 "errorMessage": "The group has described topic(s) that the client is not "
                                 "authorized to describe.",
                 "groupId": "s", "groupState": "", "groupEpoch": 0, "assignmentEpoch": 0,
                 "assignorName": "", "members": [], "authorizedOperations": INT32_MIN}
    # without an authorizer nothing is hidden
    _, response = _call(1, ["s"])
    assert response.groups[0].error_code == 0


def test_without_the_consumer_protocol_every_group_is_unsupported():
    fake, response = _call(1, ["g", "s"], protocols="classic")
    assert fake.asked == []
    assert [(g["groupId"], g["errorCode"], g["members"]) for g in _read(1, response)] == [
        ("g", ErrorCode.UNSUPPORTED_VERSION, []), ("s", ErrorCode.UNSUPPORTED_VERSION, [])]
