"""AlterPartitionReassignments (key 45): start, replace or cancel partition reassignments.

Version 0 (Kafka 3.9's only version; v1's AllowReplicationFactorChange is Kafka 4's).
As Kafka 3.9's ZooKeeper-mode KafkaApis.handleAlterPartitionReassignmentsRequest: the
request's partitions (one entry per partition, the last one wins) go to the controller
(``services.controller.alter_partition_reassignments``; replicas null = cancel), which
answers as KafkaController.processApiPartitionReassignment:
- not the active controller -> top-level NOT_CONTROLLER with Kafka's message, no topics;
- per partition: INVALID_REPLICA_ASSIGNMENT (empty list, duplicate ids, a negative id,
  an added replica on a broker that is not alive), NO_REASSIGNMENT_IN_PROGRESS (cancel
  with nothing in flight), UNKNOWN_TOPIC_OR_PARTITION (no such partition, or its topic
  is being deleted), UNKNOWN_SERVER_ERROR, else NONE with a null message;
- ALTER on the cluster refused -> CLUSTER_AUTHORIZATION_FAILED at the top level and on
  every partition asked (Kafka's getErrorResponse).
The answer comes once the reassignment is *started* (RS = ORS + TRS written, new
replicas told), not when it completes; ``timeout_ms`` is not used, as in Kafka.
"""
from __future__ import annotations

from kafkapy.security import authz
from kafkapy.protocol.errors import ErrorCode
from kafkapy.protocol.messages import RESPONSES
from kafkapy.protocol.topic_partition import TopicPartition

API_KEY = 45
MIN_VERSION = 0
MAX_VERSION = 0

_R = RESPONSES[API_KEY]
_Topic = _R.ReassignableTopicResponse
_Partition = _Topic.ReassignablePartitionResponse


async def handle(ctx, request):
    wanted: dict[TopicPartition, list[int] | None] = {}
    for topic in request.topics or ():
        for p in topic.partitions or ():
            replicas = None if p.replicas is None else [int(r) for r in p.replicas]
            wanted[(topic.name, p.partition_index)] = replicas
    if not authz.cluster(ctx, authz.ALTER):
        # Kafka's getErrorResponse: every partition asked carries the error too (its admin
        # client counts them and fails on a mismatch)
        return _answer(ctx, wanted, {}, (ErrorCode.CLUSTER_AUTHORIZATION_FAILED,
                                         "Cluster authorization failed."))
    outcome = await ctx.services.controller.alter_partition_reassignments(wanted)
    if isinstance(outcome, tuple) and outcome[0] == ErrorCode.NOT_CONTROLLER:
        code, message = outcome             # the admin client retries on the controller
        return ctx.response(throttle_time_ms=0, error_code=int(code), error_message=message,
                            responses=[])
    if isinstance(outcome, tuple):          # the controller failed: on every partition
        return _answer(ctx, wanted, {}, outcome)
    return _answer(ctx, wanted, outcome, None)


def _answer(ctx, wanted, outcome, top_level):
    """Per partition asked: its outcome, or the top-level error when there is one."""
    by_topic: dict[str, list] = {}
    for (topic, index) in wanted:
        code, message = top_level or outcome.get((topic, index), (ErrorCode.UNKNOWN, None))
        by_topic.setdefault(topic, []).append(_Partition(
            partition_index=index, error_code=int(code), error_message=message))
    code, message = top_level or (ErrorCode.NO_ERROR, "")
    return ctx.response(throttle_time_ms=0, error_code=int(code), error_message=message,
                        responses=[_Topic(name=t, partitions=parts)
                                   for t, parts in by_topic.items()])
