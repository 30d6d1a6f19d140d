"""ShareGroupDescribe (key 77): share groups (KIP-932) with their epochs, assignor and
members, each member's subscription and assignment.

Version 1 (version 0 was Kafka 4.0's early access).  As Kafka's KafkaApis:
- while share groups are off (``share_group_heartbeat.share_protocol_enabled``) every
  group is answered UNSUPPORTED_VERSION (the error code alone);
- a group the principal may not DESCRIBE is answered GROUP_AUTHORIZATION_FAILED (the error
  code alone); these come first, then the coordinator's answers for the others, in its
  order (``describe_share_groups``: GROUP_ID_NOT_FOUND for a group that is not a share
  group, NOT_COORDINATOR, INVALID_GROUP_ID for an empty id, ... with their messages);
- ``authorized_operations`` when asked, for the groups without error: the principal's among
  the operations Kafka 4.x supports on a group (as ConsumerGroupDescribe), else INT32_MIN;
- with an authorizer, a group whose members' assignments hold a topic the principal may
  not DESCRIBE is answered TOPIC_AUTHORIZATION_FAILED with Kafka's message and no members.
Assignments name topics by id and name (from the metadata cache); a topic id the cache does
not know (a deleted topic) is left out, as Kafka leaves out a topic missing from its image.
Topics are in topic id order, partitions ascending; subscribed topic names in Kafka's
HashSet order.
"""
from __future__ import annotations

from kafkapy.coordinator.group.share.types import (Assignment, DescribedShareGroup,
                                                  DescribedShareMember)
from kafkapy.handlers._groups import coordinator
from kafkapy.handlers.consumer_group_describe import GROUP_OPERATIONS, UNAUTHORIZED_TOPICS
from kafkapy.handlers.share_group_heartbeat import share_protocol_enabled
from kafkapy.protocol.errors import ErrorCode
from kafkapy.protocol.share_group_apis import ShareGroupDescribeResponse
from kafkapy.security import authz

API_KEY = 77
MIN_VERSION = 1
MAX_VERSION = 1

_Group = ShareGroupDescribeResponse.DescribedGroup
_Member = _Group.Member
_Assignment = _Member.Assignment
_TopicPartitions = _Assignment.TopicPartitions


def handle(ctx, request):
    if not share_protocol_enabled(ctx.services.config):
        return ctx.response(throttle_time_ms=0, groups=[
            _failed(group_id, ErrorCode.UNSUPPORTED_VERSION) for group_id in request.group_ids])
    allowed = authz.filter_allowed(ctx, authz.DESCRIBE, authz.GROUP, request.group_ids)
    groups = [_failed(g, ErrorCode.GROUP_AUTHORIZATION_FAILED)
              for g in request.group_ids if g not in allowed]
    described = coordinator(ctx).describe_share_groups(
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


def _group(ctx, described: DescribedShareGroup, include_ops: bool):
    if described.error:
        return _failed(described.group_id, described.error, described.message)
    names = ctx.services.cache.topic_name
    return _Group(
        group_id=described.group_id, error_code=0, error_message=None,
        group_state=described.state, group_epoch=described.group_epoch,
        assignment_epoch=described.assignment_epoch, assignor_name=described.assignor_name,
        members=[_member(m, names) for m in described.members],
        authorized_operations=(authz.authorized_operations(
            ctx, authz.GROUP, described.group_id, GROUP_OPERATIONS) if include_ops else None))


def _member(m: DescribedShareMember, names):
    return _Member(member_id=m.member_id, rack_id=m.rack_id, member_epoch=m.member_epoch,
                   client_id=m.client_id, client_host=m.client_host,
                   subscribed_topic_names=list(m.subscribed_topic_names),
                   assignment=_assignment(m.assigned, names))


def _assignment(partitions: Assignment, names):
    named = ((topic_id, names(topic_id)) for topic_id in sorted(partitions))
    return _Assignment(topic_partitions=[
        _TopicPartitions(topic_id=topic_id, topic_name=name,
                         partitions=sorted(partitions[topic_id]))
        for topic_id, name in named if name is not None])


def _topics(group) -> set[str]:
    return {tp.topic_name for m in group.members for tp in m.assignment.topic_partitions}


def _hide_unauthorized_topics(ctx, groups: list) -> list:
    """Kafka 4.x: a group showing a topic the principal may not DESCRIBE is answered
    TOPIC_AUTHORIZATION_FAILED, without its members."""
    everywhere = set().union(*(_topics(g) for g in groups))
    allowed = authz.filter_allowed(ctx, authz.DESCRIBE, authz.TOPIC, everywhere)
    return [_failed(g.group_id, ErrorCode.TOPIC_AUTHORIZATION_FAILED, UNAUTHORIZED_TOPICS)
            if _topics(g) - allowed else g for g in groups]
