"""Groups as ``kafkapy-consumer-groups`` describes them, fetched the way Kafka's admin client
fetches them (its DescribeConsumerGroupsHandler, 3.9 and 4.x alike).

``describe(admin, group_ids, timeout_ms)`` finds each group's coordinator (FindCoordinator
v4, every group in one request) and asks it ConsumerGroupDescribe (key 69, v1 when the
broker has it, else v0).  A group the coordinator answers GROUP_ID_NOT_FOUND (it is not a
consumer-protocol group) and every group of a broker without the API are asked again with
DescribeGroups: classic groups.  COORDINATOR_LOAD_IN_PROGRESS, COORDINATOR_NOT_AVAILABLE and
NOT_COORDINATOR are retried (the coordinator looked up again) until ``timeout_ms``; any
other error fails the command with the Java exception Kafka's tool prints.

The result, ``Group``, is what Kafka's ``ConsumerGroupDescription`` holds: type, state,
assignor (``partitionAssignor``), coordinator, and for consumer groups the group epoch and
the target assignment epoch; each ``Member`` its id, instance id, client id, host, current
assignment and, for consumer groups, target assignment, member epoch and whether it speaks
the consumer protocol (``upgraded``: MemberType 1 -> True, 0 -> False, -1 or v0 -> None).

Invariant: a member's partitions are in the iteration order of the ``java.util.HashSet`` the
admin client keeps them in (its tools print rows in orders derived from it): a set filled
one by one for ConsumerGroupDescribe (``Collectors.toSet``), a set copied from the decoded
assignment for DescribeGroups (``new HashSet<>(list)``, sized for the list up front).  A
group the broker does not know is a classic group in state ``Dead`` with no members, as
DescribeGroups v0-5 answers it.
"""
from __future__ import annotations

import struct
import time
from dataclasses import dataclass

import kafka.errors
from kafka.protocol.admin import DescribeGroupsRequest
from kafka.protocol.consumer.metadata import ConsumerProtocolAssignment
from kafka.protocol.metadata import FindCoordinatorRequest
from kafka.structs import TopicPartition

from kafkapy.cli import _common as common
from kafkapy.cli._common import CommandError
from kafkapy.jvm import hash_set_capacity, java_hash_order, topic_partition_hash
from kafkapy.protocol.consumer_group_apis import ConsumerGroupDescribeRequest

CONSUMER, CLASSIC = "consumer", "classic"
_NONE = 0
_COORDINATOR_LOAD_IN_PROGRESS, _COORDINATOR_NOT_AVAILABLE, _NOT_COORDINATOR = 14, 15, 16
_UNSUPPORTED_VERSION = 35
_GROUP_ID_NOT_FOUND = 69
_RETRIABLE = (_COORDINATOR_LOAD_IN_PROGRESS, _COORDINATOR_NOT_AVAILABLE, _NOT_COORDINATOR)
_MEMBER_TYPES = {0: False, 1: True}
_RETRY_BACKOFF_S = 0.1


@dataclass(frozen=True)
class Coordinator:
    node_id: int
    host: str
    port: int

    def text(self) -> str:
        """As Kafka's tool prints it: ``host:port  (id)``."""
        return f"{self.host}:{self.port}  ({self.node_id})"


@dataclass(frozen=True)
class Member:
    member_id: str
    instance_id: str | None
    client_id: str
    host: str
    assignment: tuple[TopicPartition, ...]        # Java HashSet order
    target: tuple[TopicPartition, ...] | None = None
    member_epoch: int | None = None
    upgraded: bool | None = None


@dataclass(frozen=True)
class Group:
    group_id: str
    group_type: str                               # CONSUMER or CLASSIC
    state: str
    assignor: str
    coordinator: Coordinator | None
    members: tuple[Member, ...] = ()
    group_epoch: int | None = None
    target_assignment_epoch: int | None = None


def describe(admin, group_ids: list[str], timeout_ms: int) -> dict[str, Group]:
    """Every group of ``group_ids`` described (see the module docstring)."""
    deadline = time.monotonic() + timeout_ms / 1000
    pending, classic, found = list(dict.fromkeys(group_ids)), set(), {}
    while pending:
        retry = []
        for coordinator, groups in _by_coordinator(admin, pending, deadline).items():
            consumer_ids = [g for g in groups if g not in classic]
            if consumer_ids and _has_consumer_describe(admin):
                done, back, redo = _consumer_describe(admin, coordinator, consumer_ids)
                found.update(done)
                classic.update(back)
                retry += redo
            else:
                classic.update(consumer_ids)
            asked = [g for g in groups if g in classic and g not in found]
            done, redo = _classic_describe(admin, coordinator, asked)
            found.update(done)
            retry += redo
        pending = retry
        if pending:
            _wait_or_fail(deadline, pending)
    return found


def java_hash_set(items, capacity: int = 16) -> list:
    """``items`` (distinct) in the iteration order of a ``java.util.HashSet`` of
    TopicPartitions made with ``capacity`` buckets and filled in order."""
    return java_hash_order(items, topic_partition_hash, capacity)


# -- coordinators -----------------------------------------------------------------------------

def _by_coordinator(admin, group_ids: list[str], deadline: float) -> dict[Coordinator, list[str]]:
    """FindCoordinator (v4, all keys at once) until every group has a coordinator."""
    wanted, found = list(group_ids), {}
    while True:
        response = common.send(admin, FindCoordinatorRequest(key_type=0, coordinator_keys=wanted,
                                                             min_version=4))
        missing = []
        for c in response.coordinators:
            if c.error_code == _NONE:
                found.setdefault(Coordinator(c.node_id, c.host, c.port), []).append(c.key)
            elif c.error_code in _RETRIABLE:
                missing.append(c.key)
            else:
                raise CommandError(common.java_exception_text(c.error_code, c.error_message))
        if not missing:
            return found
        wanted = missing
        _wait_or_fail(deadline, missing)


def _wait_or_fail(deadline: float, groups: list[str]) -> None:
    if time.monotonic() >= deadline:
        raise CommandError("org.apache.kafka.common.errors.TimeoutException: Timed out waiting "
                           "for the coordinator of " + ", ".join(groups))
    time.sleep(_RETRY_BACKOFF_S)


def _has_consumer_describe(admin) -> bool:
    """Whether the brokers (as kafka-python's ApiVersions saw them) offer ConsumerGroupDescribe."""
    try:
        admin._manager.broker_version_data.api_version(ConsumerGroupDescribeRequest)
    except kafka.errors.IncompatibleBrokerVersion:
        return False
    return True


# -- ConsumerGroupDescribe ------------------------------------------------------------------

def _consumer_describe(admin, coordinator: Coordinator, group_ids: list[str]):
    """(described groups, groups to ask with DescribeGroups, groups to retry)."""
    request = ConsumerGroupDescribeRequest(group_ids=group_ids, include_authorized_operations=False)
    response = common.send(admin, request, coordinator.node_id)
    done, classic, retry = {}, [], []
    for g in response.groups:
        if g.error_code == _NONE:
            done[g.group_id] = _consumer_group(g, coordinator)
        elif g.error_code in (_GROUP_ID_NOT_FOUND, _UNSUPPORTED_VERSION):
            classic.append(g.group_id)
        elif g.error_code in _RETRIABLE:
            retry.append(g.group_id)
        else:
            raise CommandError(common.java_exception_text(g.error_code, g.error_message))
    return done, classic, retry


def _consumer_group(g, coordinator: Coordinator) -> Group:
    members = tuple(Member(
        member_id=m.member_id, instance_id=m.instance_id, client_id=m.client_id,
        host=m.client_host, assignment=_consumer_set(m.assignment),
        target=_consumer_set(m.target_assignment), member_epoch=m.member_epoch,
        upgraded=_MEMBER_TYPES.get(getattr(m, "member_type", -1)))
        for m in g.members)
    return Group(g.group_id, CONSUMER, g.group_state, g.assignor_name, coordinator, members,
                 g.group_epoch, g.assignment_epoch)


def _consumer_set(assignment) -> tuple[TopicPartition, ...]:
    return tuple(java_hash_set(TopicPartition(t.topic_name, p)
                               for t in assignment.topic_partitions for p in t.partitions))


# -- DescribeGroups -----------------------------------------------------------------------------

def _classic_describe(admin, coordinator: Coordinator, group_ids: list[str]):
    """(described groups, groups to retry)."""
    if not group_ids:
        return {}, []
    request = DescribeGroupsRequest(groups=group_ids, include_authorized_operations=False)
    response = common.send(admin, request, coordinator.node_id)
    done, retry = {}, []
    for g in response.groups:
        if g.error_code in _RETRIABLE:
            retry.append(g.group_id)
        elif g.error_code == _GROUP_ID_NOT_FOUND:
            done[g.group_id] = Group(g.group_id, CLASSIC, "Dead", "", coordinator)
        elif g.error_code:
            raise CommandError(common.java_exception_text(g.error_code, g.error_message))
        else:
            done[g.group_id] = _classic_group(g, coordinator)
    return done, retry


def _classic_group(g, coordinator: Coordinator) -> Group:
    if g.protocol_type not in (CONSUMER, ""):
        raise CommandError(f"java.lang.IllegalArgumentException: GroupId {g.group_id} is "
                           f"not a consumer group ({g.protocol_type}).")
    members = tuple(Member(m.member_id, m.group_instance_id, m.client_id, m.client_host,
                           _classic_set(m.member_assignment))
                    for m in g.members)
    return Group(g.group_id, CLASSIC, g.group_state, g.protocol_data or "", coordinator, members)


def _classic_set(assignment: bytes | None) -> tuple[TopicPartition, ...]:
    """The partitions of a member's ConsumerProtocol assignment, in the order of the
    HashSet Kafka's admin client copies them into."""
    if not assignment:
        return ()
    try:
        decoded = ConsumerProtocolAssignment.decode(assignment)
    except (ValueError, struct.error):
        return ()
    listed = [TopicPartition(t.topic, p) for t in decoded.assigned_partitions for p in t.partitions]
    return tuple(java_hash_set(listed, hash_set_capacity(len(listed))))
