"""AlterReplicaLogDirs (key 34): move replicas between the log dirs of this broker.

Versions 0-2 (Kafka 3.9; v0 = v1, v2 flexible).  As Kafka's
KafkaApis.handleAlterReplicaLogDirsRequest: the request's (dir, topic, partition)
entries become one destination per partition (a partition named twice keeps the
last dir), answered per partition by ``services.alter_log_dirs.alter``
(``kafkapy.replication.alter_log_dirs``: LOG_DIR_NOT_FOUND, KAFKA_STORAGE_ERROR,
REPLICA_NOT_AVAILABLE, UNKNOWN_TOPIC_OR_PARTITION, INVALID_TOPIC_EXCEPTION or NONE)
and grouped by topic.  The answer comes when the move has *started*; it completes in
the background (DescribeLogDirs shows the future replica and its lag meanwhile).
Needs ALTER on CLUSTER (always granted without an authorizer), else every partition is
answered CLUSTER_AUTHORIZATION_FAILED.
"""
from __future__ import annotations

from kafkapy.protocol.errors import ErrorCode
from kafkapy.protocol.topic_partition import TopicPartition
from kafkapy.security import authz
from kafkapy.protocol.messages import RESPONSES

API_KEY = 34
MIN_VERSION = 0
MAX_VERSION = 2

_R = RESPONSES[API_KEY]
_Topic = _R.AlterReplicaLogDirTopicResult
_Partition = _Topic.AlterReplicaLogDirPartitionResult


def handle(ctx, request):
    wanted: dict[TopicPartition, str] = {}
    for entry in request.dirs or ():
        for topic in entry.topics or ():
            for index in topic.partitions or ():
                wanted[(topic.name, int(index))] = entry.path
    if not authz.cluster(ctx, authz.ALTER):
        errors = dict.fromkeys(wanted, ErrorCode.CLUSTER_AUTHORIZATION_FAILED)
    else:
        errors = ctx.services.alter_log_dirs.alter(wanted)
    by_topic: dict[str, list] = {}
    for (topic, index), code in errors.items():
        by_topic.setdefault(topic, []).append(
            _Partition(partition_index=index, error_code=int(code)))
    return ctx.response(throttle_time_ms=0, results=[
        _Topic(topic_name=t, partitions=parts) for t, parts in by_topic.items()])
