"""OffsetForLeaderEpoch (key 23): where a leader epoch ends in this leader's log.

Versions 0-4 (Kafka 3.9; librdkafka sends v2; v0 answers no leader epoch).
Consumers use it to validate their position after a leader change (KIP-320):
the answer for epoch E is the largest epoch <= E in the leader-epoch cache and
the start offset of the next higher epoch, or the log end offset when E is
the latest epoch (Kafka's LeaderEpochFileCache.endOffsetFor).  An epoch the
cache cannot place -- unknown epoch -1, no epoch at or above E -- answers
epoch -1 / offset -1 with no error, as Kafka does.  current_leader_epoch
fences stale clients (FENCED_LEADER_EPOCH / UNKNOWN_LEADER_EPOCH); a
partition this broker does not lead gets NOT_LEADER_OR_FOLLOWER, an unknown
one UNKNOWN_TOPIC_OR_PARTITION.  v3 adds replica_id (-1 consumer); v4 is
the flexible encoding.
"""
from __future__ import annotations

from kafkapy.security import authz
from kafkapy.protocol.errors import ErrorCode, KafkaError
from kafkapy.protocol.messages import RESPONSES

API_KEY = 23
MIN_VERSION = 0
MAX_VERSION = 4

_R = RESPONSES[API_KEY]
_Topic = _R.OffsetForLeaderTopicResult
_Partition = _Topic.EpochEndOffset


def handle(ctx, request):
    replicas = ctx.services.replica_manager
    topics = []
    allowed = None
    if ctx.services.authorizer is not None:
        # Kafka: a follower needs CLUSTER_ACTION, a client DESCRIBE on each topic.
        names = [t.topic for t in request.topics]
        follower = ctx.api_version >= 3 and request.replica_id >= 0
        allowed = ((set(names) if authz.cluster(ctx, authz.CLUSTER_ACTION) else set()) if follower
                   else authz.filter_allowed(ctx, authz.DESCRIBE, authz.TOPIC, names))
    for topic in request.topics:
        if allowed is not None and topic.topic not in allowed:
            topics.append(_Topic(topic=topic.topic, partitions=[
                _Partition(error_code=ErrorCode.TOPIC_AUTHORIZATION_FAILED, partition=p.partition,
                           leader_epoch=-1, end_offset=-1) for p in topic.partitions]))
            continue
        parts = [_end_offset(replicas, topic.topic, p) for p in topic.partitions]
        topics.append(_Topic(topic=topic.topic, partitions=parts))
    return ctx.response(throttle_time_ms=0, topics=topics)


def _end_offset(replicas, topic: str, p):
    try:
        partition = replicas.leader_partition(topic, p.partition, p.current_leader_epoch)
    except KafkaError as err:
        return _Partition(error_code=err.code, partition=p.partition, leader_epoch=-1, end_offset=-1)
    log = partition.log
    epoch, end = log.leader_epoch_cache.end_offset_for(p.leader_epoch, log.log_end_offset)
    return _Partition(error_code=0, partition=p.partition, leader_epoch=epoch, end_offset=end)
