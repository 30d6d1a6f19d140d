"""AlterPartition (key 56): a partition leader asks the controller to change its ISR.

Versions 0-3 (Kafka 3.9, ZooKeeper mode: v0-1 name topics, v2+ by topic id, v3
carries each new ISR member's broker epoch).  Served by the active controller on
its event queue (``KafkaController.alter_partition``, Kafka's processAlterPartition);
a broker that is not the active controller answers NOT_CONTROLLER at the top level
with no topics, as Kafka's KafkaApis.handleAlterPartitionRequest does, so the
leader looks the controller up again and resends.
"""
from __future__ import annotations

from kafkapy.security import authz
from kafkapy.protocol.errors import ErrorCode

API_KEY = 56
MIN_VERSION = 0
MAX_VERSION = 3


async def handle(ctx, request):
    if not authz.cluster(ctx, authz.CLUSTER_ACTION):
        return ctx.response(throttle_time_ms=0, error_code=ErrorCode.CLUSTER_AUTHORIZATION_FAILED, topics=[])
    controller = ctx.services.controller
    if not controller.is_active:
        return ctx.response(throttle_time_ms=0, error_code=ErrorCode.NOT_CONTROLLER, topics=[])
    return await controller.alter_partition(request, ctx.api_version)
