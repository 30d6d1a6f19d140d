"""AllocateProducerIds on the controller (Kafka's processAllocateProducerIds): a block
of producer ids claimed in ``/latest_producer_id_block`` for a Kafka 3.9 broker of a
mixed cluster (kafkapy brokers claim their own, ``kafkapy.metadata.producer_ids``).

Invariants: only a registered broker, asking with its registration's epoch, gets a
block (BROKER_ID_NOT_REGISTERED / STALE_BROKER_EPOCH otherwise); a failed claim raises
(the controller answers UNKNOWN_SERVER_ERROR, and resigns when the store is gone).
"""
from __future__ import annotations

import structlog

from kafkapy.controller.context import ControllerContext
from kafkapy.metadata.paths import ProducerIdBlock
from kafkapy.metadata.producer_ids import new_producer_id_block
from kafkapy.metadata.store import MetadataStore
from kafkapy.protocol.errors import ErrorCode

_log = structlog.get_logger("kafkapy.controller")


def allocate_producer_ids(ctx: ControllerContext, store: MetadataStore, broker_id: int,
                          broker_epoch: int) -> tuple[int, ProducerIdBlock | None]:
    """``(error_code, the new block or None)``."""
    if broker_id not in ctx.live_brokers:
        _log.warning(f"Ignoring AllocateProducerIds due to unknown broker {broker_id}")
        return ErrorCode.BROKER_ID_NOT_REGISTERED, None
    if broker_epoch != ctx.broker_epoch(broker_id):
        _log.warning(f"Ignoring AllocateProducerIds due to stale broker epoch "
                     f"{broker_epoch} for broker {broker_id}")
        return ErrorCode.STALE_BROKER_EPOCH, None
    return ErrorCode.NO_ERROR, new_producer_id_block(store, broker_id)
