"""ListPartitionReassignments (key 46): the reassignments in flight.

Version 0 (Kafka 3.9's only version).  As Kafka 3.9's ZooKeeper-mode
KafkaApis.handleListPartitionReassignmentsRequest and
KafkaController.processListPartitionReassignments: the named partitions (topics null:
every partition being reassigned) go to the controller
(``services.controller.list_partition_reassignments``); those being reassigned come back
with their full replica set (RS = TRS then the rest of ORS) and the adding and removing
replicas; partitions not being reassigned, or unknown, are left out silently.  Away from
the active controller: top-level NOT_CONTROLLER with Kafka's message and no topics.
"""
from __future__ import annotations

from kafkapy.protocol.errors import ErrorCode
from kafkapy.security import authz
from kafkapy.protocol.messages import RESPONSES

API_KEY = 46
MIN_VERSION = 0
MAX_VERSION = 0

_R = RESPONSES[API_KEY]
_Topic = _R.OngoingTopicReassignment
_Partition = _Topic.OngoingPartitionReassignment


async def handle(ctx, request):
    partitions = None
    if request.topics is not None:
        partitions = list(dict.fromkeys(
            (t.name, int(p)) for t in request.topics for p in t.partition_indexes or ()))
    if not authz.cluster(ctx, authz.DESCRIBE):
        # Kafka's getErrorResponse echoes the partitions asked, without replicas
        return ctx.response(throttle_time_ms=0, error_code=ErrorCode.CLUSTER_AUTHORIZATION_FAILED,
                            error_message="Cluster authorization failed.", topics=[
                                _Topic(name=t.name, partitions=[
                                    _Partition(partition_index=int(p), replicas=[],
                                               adding_replicas=[], removing_replicas=[])
                                    for p in t.partition_indexes or ()])
                                for t in request.topics or ()])
    outcome = await ctx.services.controller.list_partition_reassignments(partitions)
    if isinstance(outcome, tuple):          # top-level error (NOT_CONTROLLER)
        code, message = outcome
        return ctx.response(throttle_time_ms=0, error_code=int(code), error_message=message,
                            topics=[])
    by_topic: dict[str, list] = {}
    for (topic, index), assignment in outcome.items():
        by_topic.setdefault(topic, []).append(_Partition(
            partition_index=index, replicas=list(assignment.replicas),
            adding_replicas=list(assignment.adding_replicas),
            removing_replicas=list(assignment.removing_replicas)))
    return ctx.response(throttle_time_ms=0, error_code=0, error_message="",
                        topics=[_Topic(name=t, partitions=parts) for t, parts in by_topic.items()])
