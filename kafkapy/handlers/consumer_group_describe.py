"""ConsumerGroupDescribe (key 69): consumer groups (KIP-848) with their epochs, assignor and
members, each member's current and target assignment.

Versions 0-1 (v1 adds each member's ``MemberType``: 0 classic, 1 consumer).  As Kafka's
KafkaApis:
- while ``group.coordinator.rebalance.protocols`` does not list ``consumer`` every group is
  answered UNSUPPORTED_VERSION (the error code alone);
- a group the principal may not DESCRIBE is answered GROUP_AUTHORIZATION_FAILED (the error
  code alone); these come first, then the coordinator's answers for the others, in its
  order (``describe_consumer_groups``: GROUP_ID_NOT_FOUND for a group that is not a
  consumer group, NOT_COORDINATOR, ... with their messages);
- ``authorized_operations`` when asked, for the groups without error: the principal's among
  the operations Kafka 4.x supports on a group (READ, DELETE, DESCRIBE, DESCRIBE_CONFIGS,
  ALTER_CONFIGS; all of them without an authorizer), else INT32_MIN;
- with an authorizer, a group whose members' assignments (current or target) hold a topic
  the principal may not DESCRIBE is answered TOPIC_AUTHORIZATION_FAILED with Kafka's message
  and no members.
Assignments name topics by id and name (from the metadata cache); a topic id the cache does
not know (a deleted topic) is left out, as Kafka leaves out a topic missing from its image.
Topics are in topic id order, partitions ascending.
"""
from __future__ import annotations

from kafkapy.coordinator.group.consumer.types import Assignment, DescribedGroup, DescribedMember
from kafkapy.handlers._groups import coordinator
from kafkapy.handlers.consumer_group_heartbeat import consumer_protocol_enabled
from kafkapy.protocol.consumer_group_apis import ConsumerGroupDescribeResponse
from kafkapy.protocol.errors import ErrorCode
from kafkapy.security import authz

API_KEY = 69
MIN_VERSION = 0
MAX_VERSION = 1

#: AclEntry.supportedOperations(GROUP) in Kafka 4.x: READ 3, DELETE 6, DESCRIBE 8,
#: DESCRIBE_CONFIGS 10, ALTER_CONFIGS 11 (group configs can be described and altered).
GROUP_OPERATIONS = frozenset({3, 6, 8, 10, 11})
UNAUTHORIZED_TOPICS = "The group has described topic(s) that the client is not authorized to describe."

_Group = ConsumerGroupDescribeResponse.DescribedGroup
_Member = _Group.Member
_Assignment = _Member.Assignment
_TopicPartitions = _Assignment.TopicPartitions


def handle(ctx, request):
    if not consumer_protocol_enabled(ctx.services.config):
        return ctx.response(throttle_time_ms=0, groups=[
            _failed(group_id, ErrorCode.UNSUPPORTED_VERSION) for group_id in request.group_ids])
    allowed = authz.filter_allowed(ctx, authz.DESCRIBE, authz.GROUP, request.group_ids)
    groups = [_failed(g, ErrorCode.GROUP_AUTHORIZATION_FAILED)
              for g in request.group_ids if g not in allowed]
    described = coordinator(ctx).describe_consumer_groups(
        [g for g in request.group_ids if g in allowed])
    include_ops = bool(request.include_authorized_operations)
    groups += [_group(ctx, d, include_ops) for d in described]
    if ctx.services.authorizer is not None:
        groups = _hide_unauthorized_topics(ctx, groups)
    return ctx.response(throttle_time_ms=0, groups=groups)


def _failed(group_id: str, error: int, message: str | None = None):
    return _Group(group_id=group_id, error_code=error, error_message=message, group_state="",
                  group_epoch=0, assignment_epoch=0, assignor_name="", members=[],
                  authorized_operations=None)


def _group(ctx, described: DescribedGroup, include_ops: bool):
    if described.error:
        return _failed(described.group_id, described.error, described.message)
    names = ctx.services.cache.topic_name
    return _Group(
        group_id=described.group_id, error_code=0, error_message=None,
        group_state=described.state, group_epoch=described.group_epoch,
        assignment_epoch=described.assignment_epoch, assignor_name=described.assignor_name,
        members=[_member(m, names, ctx.api_version) for m in described.members],
        authorized_operations=(authz.authorized_operations(
            ctx, authz.GROUP, described.group_id, GROUP_OPERATIONS) if include_ops else None))


def _member(m: DescribedMember, names, version: int):
    fields = dict(member_id=m.member_id, instance_id=m.instance_id, rack_id=m.rack_id,
                  member_epoch=m.member_epoch, client_id=m.client_id, client_host=m.client_host,
                  subscribed_topic_names=list(m.subscribed_topic_names),
                  subscribed_topic_regex=m.subscribed_topic_regex,
                  assignment=_assignment(m.assigned, names),
                  target_assignment=_assignment(m.target, names))
    if version >= 1:
        fields["member_type"] = m.member_type
    return _Member(**fields)


def _assignment(partitions: Assignment, names):
    named = ((topic_id, names(topic_id)) for topic_id in sorted(partitions))
    return _Assignment(topic_partitions=[
        _TopicPartitions(topic_id=topic_id, topic_name=name,
                         partitions=sorted(partitions[topic_id]))
        for topic_id, name in named if name is not None])


def _topics(group) -> set[str]:
    return {tp.topic_name for m in group.members
            for a in (m.assignment, m.target_assignment) for tp in a.topic_partitions}


def _hide_unauthorized_topics(ctx, groups: list) -> list:
    """Kafka 4.x: a group showing a topic the principal may not DESCRIBE is answered
    TOPIC_AUTHORIZATION_FAILED, without its members."""
    everywhere = set().union(*(_topics(g) for g in groups))
    allowed = authz.filter_allowed(ctx, authz.DESCRIBE, authz.TOPIC, everywhere)
    return [_failed(g.group_id, ErrorCode.TOPIC_AUTHORIZATION_FAILED, UNAUTHORIZED_TOPICS)
            if _topics(g) - allowed else g for g in groups]
