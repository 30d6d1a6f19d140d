"""Helpers shared by the group-coordinator handlers (not an API module itself), and what
the handlers of the two protocols with server-side assignment (ConsumerGroupHeartbeat and
ShareGroupHeartbeat) do alike: whether a protocol is served, KafkaApis' checks of a
heartbeat, and the heartbeat's answer.
"""
from __future__ import annotations

import asyncio

from kafkapy.protocol.errors import ErrorCode
from kafkapy.security import authz


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


def heartbeat_refused(ctx, request, enabled: bool) -> int:
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


def heartbeat_response(ctx, result, assignment_cls):
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
