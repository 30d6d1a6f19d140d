"""Helpers shared by the group-coordinator handlers (not an API module itself), and what
the handlers of the two protocols with server-side assignment do alike: whether a protocol
is served, KafkaApis' checks of a heartbeat (ConsumerGroupHeartbeat, ShareGroupHeartbeat)
and its answer, and a describe (ConsumerGroupDescribe, ShareGroupDescribe).
"""
from __future__ import annotations

import asyncio
from typing import Awaitable, Callable

from kafkapy.coordinator.group.consumer.types import HeartbeatResult
from kafkapy.protocol.errors import ErrorCode
from kafkapy.security import authz

#: AclEntry.supportedOperations(GROUP) in Kafka 4.x: READ 3, DELETE 6, DESCRIBE 8,
#: DESCRIBE_CONFIGS 10, ALTER_CONFIGS 11 (group configs can be described and altered).
GROUP_OPERATIONS = frozenset({3, 6, 8, 10, 11})
UNAUTHORIZED_TOPICS = ("The group has described topic(s) that the client is not authorized "
                       "to describe.")


def coordinator(ctx):
    return ctx.services.groups.coordinator


def client_host(ctx) -> str:
    """Kafka reports a member's host as ``InetAddress.toString``: ``/127.0.0.1``."""
    host = ctx.peer.rsplit(":", 1)[0] if ctx.peer and ctx.peer != "?" else ""
    return "/" + host


def callback_future():
    """A future and a callback that completes it once (later calls are ignored)."""
    future = asyncio.get_running_loop().create_future()

    def respond(result) -> None:
        if not future.done():
            future.set_result(result)
    return future, respond


def protocol_enabled(config, protocol: str) -> bool:
    """Whether ``group.coordinator.rebalance.protocols`` lists ``protocol``."""
    return any(p.strip().lower() == protocol
               for p in config["group.coordinator.rebalance.protocols"])


async def heartbeat(ctx, request, *, enabled: bool, assignment_cls,
                    beat: Callable[[], Awaitable[HeartbeatResult]]):
    """A ConsumerGroupHeartbeat or ShareGroupHeartbeat answer: KafkaApis' checks, each
    answered with the error code alone, then the coordinator's ``beat()``; encoded with
    the response's ``assignment_cls``."""
    refused = _heartbeat_refused(ctx, request, enabled)
    result = HeartbeatResult(error=refused) if refused else await beat()
    return _heartbeat_response(ctx, result, assignment_cls)


def _heartbeat_refused(ctx, request, enabled: bool) -> int:
    """KafkaApis' checks of a heartbeat, in its order (the protocol served, READ on the
    group, DESCRIBE on every subscribed topic name when a non-empty list is sent): the
    error code, or 0."""
    if not enabled:
        return ErrorCode.UNSUPPORTED_VERSION
    if not authz.allowed(ctx, authz.READ, authz.GROUP, request.group_id):
        return ErrorCode.GROUP_AUTHORIZATION_FAILED
    names = request.subscribed_topic_names
    if names and len(authz.filter_allowed(ctx, authz.DESCRIBE, authz.TOPIC, names)) < len(
            set(names)):
        return ErrorCode.TOPIC_AUTHORIZATION_FAILED
    return 0


def _heartbeat_response(ctx, result: HeartbeatResult, assignment_cls):
    """The heartbeat's answer from a ``HeartbeatResult``: the assignment null when the result
    has none (unchanged), else one ``assignment_cls`` entry per topic id (in topic id order)
    with its partitions ascending."""
    given = result.assignment
    topic_partitions = assignment_cls.TopicPartitions
    return ctx.response(
        throttle_time_ms=0, error_code=result.error, error_message=result.message,
        member_id=result.member_id, member_epoch=result.member_epoch,
        heartbeat_interval_ms=result.heartbeat_interval_ms,
        assignment=None if given is None else assignment_cls(topic_partitions=[
            topic_partitions(topic_id=topic_id, partitions=sorted(given[topic_id]))
            for topic_id in sorted(given)]))


def describe_groups(ctx, request, *, enabled: bool, describe, group_cls, member,
                    assignment_fields: tuple[str, ...]):
    """A ConsumerGroupDescribe or ShareGroupDescribe answer, as Kafka's KafkaApis gives it:
    every group UNSUPPORTED_VERSION while the protocol is not served (``enabled``); else the
    groups the principal may not DESCRIBE GROUP_AUTHORIZATION_FAILED first, then
    ``describe(group ids)``'s answers in its order (each ``member(described member, topic
    name of id)`` a response member; ``authorized_operations`` when asked, for the groups
    without error); with an authorizer, a group whose members' assignments (the member
    fields ``assignment_fields``) hold a topic the principal may not DESCRIBE answered
    TOPIC_AUTHORIZATION_FAILED with Kafka's message and no members.  ``group_cls``: the
    response's DescribedGroup."""
    if not enabled:
        return ctx.response(throttle_time_ms=0, groups=[
            _failed(group_cls, g, ErrorCode.UNSUPPORTED_VERSION) for g in request.group_ids])
    allowed = authz.filter_allowed(ctx, authz.DESCRIBE, authz.GROUP, request.group_ids)
    groups = [_failed(group_cls, g, ErrorCode.GROUP_AUTHORIZATION_FAILED)
              for g in request.group_ids if g not in allowed]
    include_ops = bool(request.include_authorized_operations)
    groups += [_described(ctx, group_cls, d, member, include_ops)
               for d in describe([g for g in request.group_ids if g in allowed])]
    if ctx.services.authorizer is not None:
        groups = _hide_unauthorized_topics(ctx, group_cls, groups, assignment_fields)
    return ctx.response(throttle_time_ms=0, groups=groups)


def named_assignment(assignment_cls, partitions, names):
    """An ``Assignment`` (topic id -> partitions) as a describe response's
    ``assignment_cls``: topics in topic id order with their names, partitions ascending; a
    topic id without a name (``names``: the metadata cache's; a deleted topic) left out,
    as Kafka leaves out a topic missing from its image."""
    named = ((topic_id, names(topic_id)) for topic_id in sorted(partitions))
    return assignment_cls(topic_partitions=[
        assignment_cls.TopicPartitions(topic_id=topic_id, topic_name=name,
                                       partitions=sorted(partitions[topic_id]))
        for topic_id, name in named if name is not None])


def _failed(group_cls, group_id: str, error: int, message: str | None = None):
    return group_cls(group_id=group_id, error_code=error, error_message=message,
                     group_state="", group_epoch=0, assignment_epoch=0, assignor_name="",
                     members=[], authorized_operations=None)


def _described(ctx, group_cls, described, member, include_ops: bool):
    if described.error:
        return _failed(group_cls, described.group_id, described.error, described.message)
    names = ctx.services.cache.topic_name
    return group_cls(
        group_id=described.group_id, error_code=0, error_message=None,
        group_state=described.state, group_epoch=described.group_epoch,
        assignment_epoch=described.assignment_epoch, assignor_name=described.assignor_name,
        members=[member(m, names) for m in described.members],
        authorized_operations=(authz.authorized_operations(
            ctx, authz.GROUP, described.group_id, GROUP_OPERATIONS) if include_ops else None))


def _hide_unauthorized_topics(ctx, group_cls, groups: list,
                              assignment_fields: tuple[str, ...]) -> list:
    def topics(group) -> set[str]:
        return {tp.topic_name for m in group.members for field in assignment_fields
                for tp in getattr(m, field).topic_partitions}
    everywhere = set().union(*(topics(g) for g in groups))
    allowed = authz.filter_allowed(ctx, authz.DESCRIBE, authz.TOPIC, everywhere)
    return [_failed(group_cls, g.group_id, ErrorCode.TOPIC_AUTHORIZATION_FAILED,
                    UNAUTHORIZED_TOPICS)
            if topics(g) - allowed else g for g in groups]
