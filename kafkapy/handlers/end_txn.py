"""EndTxn (key 26): commit or abort the producer's transaction.

Versions 0-4 (v5 belongs to transactions v2, whose feature is not
advertised).  The coordinator writes PrepareCommit/PrepareAbort, answers,
then writes the markers and CompleteCommit/CompleteAbort.  PRODUCER_FENCED is
INVALID_PRODUCER_EPOCH below v2.
"""
from __future__ import annotations

from kafkapy.security import authz
from kafkapy.coordinator.transaction.service import fenced_for_version
from kafkapy.handlers._txn import service
from kafkapy.protocol.errors import ErrorCode
from kafkapy.replication.acks import then

API_KEY = 26
MIN_VERSION = 0
MAX_VERSION = 4


def handle(ctx, request):
    txns = service(ctx)
    if txns is None or not authz.allowed(
            ctx, authz.WRITE, authz.TRANSACTIONAL_ID, request.transactional_id):
        error = ErrorCode.TRANSACTIONAL_ID_AUTHORIZATION_FAILED
    else:
        error = txns.coordinator.end_txn(request.transactional_id, request.producer_id,
                                         request.producer_epoch, bool(request.committed))
    # Answered once PrepareCommit/PrepareAbort is durable (a future while it replicates).
    return then(error, lambda code: ctx.response(
        throttle_time_ms=0, error_code=fenced_for_version(code, ctx.api_version, 2)))
