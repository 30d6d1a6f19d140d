"""ControlledShutdown (key 7): a broker asks the controller to move leadership off it.

Versions 0-3 (Kafka 3.9, ZooKeeper mode).  Served by the active controller: the
controller moves the broker's leaderships away (KafkaController.doControlledShutdown)
and answers the partitions the broker still leads (``remaining_partitions``).  A
broker that is not the active controller answers STALE_CONTROLLER_EPOCH, as Kafka
does (its ControllerMovedException).  Before the controller acts, the broker's
``ControllerFence`` checks the request against the metadata store: a broker that is
not registered -> BROKER_NOT_AVAILABLE; a broker epoch that is not its registration's
czxid (also -1, and v0-1, which carry none) -> STALE_BROKER_EPOCH, so a forged request
cannot move leaderships off a live broker.  The controller's own checks (stale broker
epoch, unknown broker) come back as its error code.
"""
from __future__ import annotations

from kafkapy.security import authz
from kafkapy.protocol.errors import ErrorCode
from kafkapy.protocol.inter_broker import ControlledShutdownResponse

API_KEY = 7
MIN_VERSION = 0
MAX_VERSION = 3

_Remaining = ControlledShutdownResponse.RemainingPartition


async def handle(ctx, request):
    if not authz.cluster(ctx, authz.CLUSTER_ACTION):
        return ctx.response(error_code=ErrorCode.CLUSTER_AUTHORIZATION_FAILED, remaining_partitions=[])
    controller = ctx.services.controller
    if not controller.is_active:
        return ctx.response(error_code=ErrorCode.STALE_CONTROLLER_EPOCH, remaining_partitions=[])
    error = await ctx.services.controller_fence.check_controlled_shutdown(request, ctx.peer)
    if error:
        return ctx.response(error_code=error, remaining_partitions=[])
    error, remaining = await controller.controlled_shutdown(request.broker_id,
                                                            request.broker_epoch)
    return ctx.response(error_code=error, remaining_partitions=[] if error else [
        _Remaining(topic_name=topic, partition_index=index) for topic, index in remaining])
