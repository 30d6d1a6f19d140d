"""What the share coordinator's handlers (InitializeShareGroupState,
ReadShareGroupState, WriteShareGroupState, DeleteShareGroupState,
ReadShareGroupStateSummary) share (not an API module itself).

As Kafka's KafkaApis and ShareCoordinatorService:
- the principal needs CLUSTER_ACTION on the cluster (these are inter-broker RPCs); else
  every partition is answered CLUSTER_AUTHORIZATION_FAILED with Kafka's message;
- a request without topics, with a topic without partitions, or with an empty group id
  is answered with no results;
- each partition is one call into the share coordinator, all of them concurrently; the
  answer lists the topics and partitions in the request's order.
"""
from __future__ import annotations

import asyncio
import uuid
from collections.abc import Awaitable, Callable
from typing import Any

from kafkapy.coordinator.share.state import ShareKey
from kafkapy.protocol.errors import ErrorCode
from kafkapy.security import authz

CLUSTER_AUTHORIZATION_FAILED_MESSAGE = "Cluster authorization failed."
#: Kafka's Uuid.ZERO_UUID, which kafka-python decodes as None: a topic id like any other
#: here (no topic has it, so it is answered as an unknown partition would be).
ZERO_UUID = uuid.UUID(int=0)


def _refused(ctx, request, topic_cls, partition_result: Callable[..., Any]):
    """The response when the principal may not CLUSTER_ACTION, else None.
    ``topic_cls``: the response's per-topic result class; ``partition_result(partition,
    error_code, error_message)`` builds one partition's entry."""
    if authz.cluster(ctx, authz.CLUSTER_ACTION):
        return None
    return ctx.response(results=[
        topic_cls(topic_id=topic.topic_id, partitions=[
            partition_result(p.partition, ErrorCode.CLUSTER_AUTHORIZATION_FAILED,
                             CLUSTER_AUTHORIZATION_FAILED_MESSAGE) for p in topic.partitions])
        for topic in request.topics])


def _empty(request) -> bool:
    """Kafka's ShareCoordinatorService answers these with no results."""
    return (not request.topics or any(not t.partitions for t in request.topics)
            or not request.group_id)


async def answered(ctx, request, topic_cls, error_result: Callable[..., Any],
                   call: Callable[[Any, ShareKey, Any], Awaitable[Any]],
                   result: Callable[[Any, Any], Any]):
    """A share-state request answered: ``_refused``, then ``_empty``, then
    ``call(coordinator, key, partition data)`` per partition (``_per_partition``)."""
    refusal = _refused(ctx, request, topic_cls, error_result)
    if refusal is not None:
        return refusal
    if _empty(request):
        return ctx.response(results=[])
    coordinator = ctx.services.share_coordinator.coordinator
    return await _per_partition(ctx, request, topic_cls,
                               lambda key, p: call(coordinator, key, p), result)


async def _per_partition(ctx, request, topic_cls,
                        call: Callable[[ShareKey, Any], Awaitable[Any]],
                        result: Callable[[Any, Any], Any]):
    """``call(key, partition data)`` for every partition, concurrently; the response of
    ``result(partition data, answer)`` per partition, in the request's order."""
    keys = [(topic, p) for topic in request.topics for p in topic.partitions]
    answers = await asyncio.gather(*(
        call(ShareKey(request.group_id, topic.topic_id or ZERO_UUID, p.partition), p)
        for topic, p in keys))
    by_partition = iter(answers)
    return ctx.response(results=[
        topic_cls(topic_id=topic.topic_id,
                  partitions=[result(p, next(by_partition)) for p in topic.partitions])
        for topic in request.topics])
