"""AllocateProducerIds (key 67): a broker asks the controller for a block of producer ids.

Version 0 (Kafka 3.9, ZooKeeper mode).  A Kafka 3.9 broker at
``inter.broker.protocol.version`` >= 3.0 takes its producer ids this way
(RPCProducerIdManager) instead of writing ``/latest_producer_id_block`` itself, so
in a mixed cluster a kafkapy controller serves it.  As Kafka's
KafkaApis.handleAllocateProducerIdsRequest: a broker that is not the active controller
answers NOT_CONTROLLER; the controller answers on its event queue
(``KafkaController.allocate_producer_ids``, Kafka's processAllocateProducerIds):
BROKER_ID_NOT_REGISTERED for a broker it does not know, STALE_BROKER_EPOCH for any
other epoch than the registration's, UNKNOWN_SERVER_ERROR when no block could be
claimed, else the block claimed for the asking broker
(``metadata.producer_ids.new_producer_id_block``).  On an error the range is
``0``/``0``, as Kafka's response defaults.
"""
from __future__ import annotations

from kafkapy.security import authz
from kafkapy.protocol.errors import ErrorCode
from kafkapy.protocol.inter_broker import AllocateProducerIdsRequest  # noqa: F401 (registers 67)

API_KEY = 67
MIN_VERSION = 0
MAX_VERSION = 0


async def handle(ctx, request):
    if not authz.cluster(ctx, authz.CLUSTER_ACTION):
        return _answer(ctx, ErrorCode.CLUSTER_AUTHORIZATION_FAILED, None)
    controller = ctx.services.controller
    if controller is None or not controller.is_active:
        return _answer(ctx, ErrorCode.NOT_CONTROLLER, None)
    code, block = await controller.allocate_producer_ids(request.broker_id,
                                                         request.broker_epoch)
    return _answer(ctx, code, block)


def _answer(ctx, code: int, block):
    if code != ErrorCode.NO_ERROR or block is None:
        return ctx.response(throttle_time_ms=0, error_code=int(code),
                            producer_id_start=0, producer_id_len=0)
    return ctx.response(throttle_time_ms=0, error_code=0,
                        producer_id_start=block.block_start, producer_id_len=block.size)
