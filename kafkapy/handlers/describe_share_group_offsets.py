"""DescribeShareGroupOffsets (key 90): each share group's start offset per partition, from
the share coordinator's state summary, and (v1) the partition's lag.

Versions 0-1.  Per group, as Kafka's KafkaApis (the groups answered concurrently, in the
request's order):
- UNSUPPORTED_VERSION while share groups are off, GROUP_AUTHORIZATION_FAILED without
  DESCRIBE on the group: the error code alone (no message);
- ``Topics`` null: every partition whose share state the group initialized
  (``describe_share_group_offsets(group, None, ...)``), topics the principal may not
  DESCRIBE left out;
- ``Topics`` empty: the group with no topics, the coordinator not asked;
- else the topics the principal may DESCRIBE go to the coordinator, the others follow its
  answer with TOPIC_AUTHORIZATION_FAILED per partition (start offset -1, topic id zero).
A group-level error carries its topics as the coordinator left them (none).  Lag is the
partition's end offset (its high watermark, as Kafka's ListOffsets LATEST with
READ_UNCOMMITTED) minus the start offset minus the delivered records the share
coordinator counts: ``LeaderEndOffsets`` reads a partition this broker leads from its
replica manager and asks another leader with ListOffsets; a partition whose end cannot be
had is answered with that error.  Version 0 has no Lag field (it is not written).
"""
from __future__ import annotations

import asyncio
from collections.abc import Mapping, Sequence

import structlog
from kafka.protocol.consumer import ListOffsetsRequest

from kafkapy.coordinator.group.share_admin_ops import GroupStartOffsets, TopicStartOffsets
from kafkapy.handlers._groups import coordinator
from kafkapy.handlers.share_group_heartbeat import share_protocol_enabled
from kafkapy.network.client import BrokerConnection
from kafkapy.protocol.errors import ErrorCode, KafkaError
from kafkapy.protocol.share_group_apis import DescribeShareGroupOffsetsResponse
from kafkapy.protocol.topic_partition import TopicPartition
from kafkapy.security import authz

API_KEY = 90
MIN_VERSION = 0
MAX_VERSION = 1

_Group = DescribeShareGroupOffsetsResponse.DescribeShareGroupOffsetsResponseGroup
_Topic = _Group.DescribeShareGroupOffsetsResponseTopic
_Partition = _Topic.DescribeShareGroupOffsetsResponsePartition
_LATEST = -1
_ListOffsets = ListOffsetsRequest[4]     # every kafkapy broker answers it
_TIMEOUT_S = 30.0
_log = structlog.get_logger("kafkapy.handlers.describe_share_group_offsets")


async def handle(ctx, request):
    groups = await asyncio.gather(*(_group(ctx, g) for g in request.groups))
    return ctx.response(throttle_time_ms=0, groups=[_encoded(ctx, g) for g in groups])


async def _group(ctx, asked) -> GroupStartOffsets:
    group_id = asked.group_id
    if not share_protocol_enabled(ctx.services.config):
        return GroupStartOffsets(group_id, ErrorCode.UNSUPPORTED_VERSION)
    if not authz.allowed(ctx, authz.DESCRIBE, authz.GROUP, group_id):
        return GroupStartOffsets(group_id, ErrorCode.GROUP_AUTHORIZATION_FAILED)
    ends = LeaderEndOffsets(ctx)
    if asked.topics is None:
        described = await coordinator(ctx).describe_share_group_offsets(group_id, None, ends)
        return _only_described_topics(ctx, described)
    if not asked.topics:
        return GroupStartOffsets(group_id)
    allowed = authz.filter_allowed(ctx, authz.DESCRIBE, authz.TOPIC,
                                   [t.topic_name for t in asked.topics])
    topics = [(t.topic_name, list(t.partitions)) for t in asked.topics if t.topic_name in allowed]
    described = await coordinator(ctx).describe_share_group_offsets(group_id, topics, ends)
    if described.error:
        return described
    denied = tuple(TopicStartOffsets.failed(t.topic_name, t.partitions,
                                            ErrorCode.TOPIC_AUTHORIZATION_FAILED)
                   for t in asked.topics if t.topic_name not in allowed)
    return GroupStartOffsets(group_id, topics=described.topics + denied)


def _only_described_topics(ctx, described: GroupStartOffsets) -> GroupStartOffsets:
    allowed = authz.filter_allowed(ctx, authz.DESCRIBE, authz.TOPIC,
                                   [t.name for t in described.topics])
    return GroupStartOffsets(described.group_id, described.error, described.message,
                             tuple(t for t in described.topics if t.name in allowed))


def _encoded(ctx, g: GroupStartOffsets):
    with_lag = ctx.api_version >= 1
    topics = [_Topic(topic_name=t.name, topic_id=t.topic_id, partitions=[
        _Partition(partition_index=p.partition, start_offset=p.start_offset,
                   leader_epoch=p.leader_epoch, error_code=p.error,
                   error_message=p.message, **({"lag": p.lag} if with_lag else {}))
        for p in t.partitions]) for t in g.topics]
    return _Group(group_id=g.group_id, topics=topics, error_code=g.error,
                  error_message=g.message)


class LeaderEndOffsets:
    """Partitions' end offsets (high watermarks) from their leaders: this broker's replica
    manager, else one ListOffsets (LATEST, READ_UNCOMMITTED) per other leader."""

    def __init__(self, ctx) -> None:
        self._services = ctx.services

    async def latest_offsets(self, partitions: Sequence[TopicPartition]
                             ) -> Mapping[TopicPartition, tuple[int, int]]:
        found, remote = {}, {}
        for tp in partitions:
            state = self._services.cache.partition(tp.topic, tp.partition)
            if state is None or state.leader < 0:
                found[tp] = (ErrorCode.LEADER_NOT_AVAILABLE, -1)
            elif state.leader == self._services.node_id:
                found[tp] = self._local(tp)
            else:
                remote.setdefault(state.leader, []).append(tp)
        answers = await asyncio.gather(*(self._remote(node, tps) for node, tps in remote.items()))
        for answer in answers:
            found.update(answer)
        return found

    def _local(self, tp: TopicPartition) -> tuple[int, int]:
        try:
            partition = self._services.replica_manager.leader_partition(tp.topic, tp.partition)
        except KafkaError as err:
            return err.code, -1
        return 0, partition.high_watermark

    async def _remote(self, node_id: int, partitions: list[TopicPartition]):
        endpoint = self._services.cache.brokers.get(node_id)
        failed = {tp: (ErrorCode.LEADER_NOT_AVAILABLE, -1) for tp in partitions}
        if endpoint is None:
            return failed
        by_topic: dict[str, list[int]] = {}
        for tp in partitions:
            by_topic.setdefault(tp.topic, []).append(tp.partition)
        request = _ListOffsets(replica_id=-1, isolation_level=0, topics=[
            _ListOffsets.ListOffsetsTopic(name=topic, partitions=[
                _ListOffsets.ListOffsetsTopic.ListOffsetsPartition(
                    partition_index=p, current_leader_epoch=-1, timestamp=_LATEST)
                for p in parts]) for topic, parts in by_topic.items()])
        conn = BrokerConnection(client_id=f"broker-{self._services.node_id}-share-lag",
                                request_timeout_s=_TIMEOUT_S, links=self._services.links)
        try:
            await conn.connect(endpoint.host, endpoint.port, _TIMEOUT_S)
            response = await conn.send(request)
        except (ConnectionError, asyncio.TimeoutError, OSError) as err:
            _log.debug("end offsets unavailable", broker=node_id, error=str(err))
            return {tp: (ErrorCode.NETWORK_EXCEPTION, -1) for tp in partitions}
        finally:
            conn.close()
        answered = {TopicPartition(t.name, p.partition_index): (p.error_code, p.offset)
                    for t in response.topics for p in t.partitions}
        return {tp: answered.get(tp, (ErrorCode.UNKNOWN_TOPIC_OR_PARTITION, -1))
                for tp in partitions}
