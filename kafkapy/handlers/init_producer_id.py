"""InitProducerId (key 22): producer ids for idempotent producers.

Versions 0-5.  Without a transactional id the broker hands out a fresh
producer id with epoch 0 each time (as Kafka does, also when the client names
its current id and epoch to bump after an error: a new id resets the
sequences).  Ids come from blocks claimed in the metadata store, so they are
never reused across restarts.  Transactional ids are served by the
transaction coordinator once it exists; until then they are refused with
TRANSACTIONAL_ID_AUTHORIZATION_FAILED, a fatal error with a clear name.
"""
from __future__ import annotations

from kafkapy.security import authz
from kafkapy.protocol.errors import ErrorCode

API_KEY = 22
MIN_VERSION = 0
MAX_VERSION = 5


def handle(ctx, request):
    services = ctx.services
    if services.authorizer is not None:
        if request.transactional_id is not None:
            if not authz.allowed(ctx, authz.WRITE, authz.TRANSACTIONAL_ID, request.transactional_id):
                return _refused(ctx, ErrorCode.TRANSACTIONAL_ID_AUTHORIZATION_FAILED)
        elif not (authz.cluster(ctx, authz.IDEMPOTENT_WRITE)
                  or authz.allowed_by_type(ctx, authz.WRITE, authz.TOPIC)):
            return _refused(ctx, ErrorCode.CLUSTER_AUTHORIZATION_FAILED)
    if request.transactional_id is not None:
        if services.txn_coordinator is not None:
            return services.txn_coordinator.init_producer_id(ctx, request)
        return ctx.response(throttle_time_ms=0,
                            error_code=ErrorCode.TRANSACTIONAL_ID_AUTHORIZATION_FAILED,
                            producer_id=-1, producer_epoch=-1)
    producer_id = services.producer_ids.next_id()
    return ctx.response(throttle_time_ms=0, error_code=0, producer_id=producer_id,
                        producer_epoch=0)


def _refused(ctx, error: int):
    return ctx.response(throttle_time_ms=0, error_code=error, producer_id=-1, producer_epoch=-1)
