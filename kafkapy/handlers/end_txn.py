"""EndTxn (key 26): commit or abort the producer's transaction.

Versions 0-5.  The coordinator writes PrepareCommit/PrepareAbort, answers,
then writes the markers and CompleteCommit/CompleteAbort.  PRODUCER_FENCED is
INVALID_PRODUCER_EPOCH below v2.  v5 is transactions v2 (a client sends it only
while ``transaction.version`` 2 is finalized): the coordinator bumps the epoch for
the markers and answers the producer id and epoch the client goes on with
(``TransactionCoordinator.end_txn_v2``; -1/-1 with an error).
"""
from __future__ import annotations

from kafkapy.security import authz
from kafkapy.coordinator.transaction.service import fenced_for_version
from kafkapy.handlers._txn import service
from kafkapy.protocol.errors import ErrorCode
from kafkapy.replication.acks import then

API_KEY = 26
MIN_VERSION = 0
MAX_VERSION = 5
FIRST_V2 = 5


def handle(ctx, request):
    txns = service(ctx)
    v2 = ctx.api_version >= FIRST_V2
    if txns is None or not authz.allowed(
            ctx, authz.WRITE, authz.TRANSACTIONAL_ID, request.transactional_id):
        answer = (ErrorCode.TRANSACTIONAL_ID_AUTHORIZATION_FAILED, -1, -1)
    elif v2:
        answer = txns.coordinator.end_txn_v2(request.transactional_id, request.producer_id,
                                             request.producer_epoch, bool(request.committed))
    else:
        answer = then(txns.coordinator.end_txn(request.transactional_id, request.producer_id,
                                               request.producer_epoch,
                                               bool(request.committed)),
                      lambda code: (code, -1, -1))
    # Answered once PrepareCommit/PrepareAbort is durable (a future while it replicates).
    return then(answer, lambda result: _response(ctx, *result))


def _response(ctx, error: int, producer_id: int, epoch: int):
    extra = {"producer_id": producer_id, "producer_epoch": epoch} \
        if ctx.api_version >= FIRST_V2 else {}
    return ctx.response(throttle_time_ms=0,
                        error_code=fenced_for_version(error, ctx.api_version, 2), **extra)
