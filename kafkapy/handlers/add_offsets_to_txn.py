"""AddOffsetsToTxn (key 25): make a group's ``__consumer_offsets`` partition part of
the transaction, so that the offsets sent with TxnOffsetCommit commit or abort with it.

Versions 0-4.  The partition is the group's coordinator partition
(``abs(java_string_hash(group)) % offsets.topic.num.partitions``); errors as
for AddPartitionsToTxn (PRODUCER_FENCED is INVALID_PRODUCER_EPOCH below v2).
"""
from __future__ import annotations

from kafkapy.security import authz
from kafkapy.coordinator.transaction.service import fenced_for_version
from kafkapy.handlers._txn import service
from kafkapy.protocol.errors import ErrorCode
from kafkapy.replication.acks import then

API_KEY = 25
MIN_VERSION = 0
MAX_VERSION = 4


def handle(ctx, request):
    txns = service(ctx)
    if txns is None or not authz.allowed(
            ctx, authz.WRITE, authz.TRANSACTIONAL_ID, request.transactional_id):
        error = ErrorCode.TRANSACTIONAL_ID_AUTHORIZATION_FAILED
    elif not authz.allowed(ctx, authz.READ, authz.GROUP, request.group_id):
        error = ErrorCode.GROUP_AUTHORIZATION_FAILED
    else:
        error = txns.coordinator.add_offsets(request.transactional_id, request.producer_id,
                                             request.producer_epoch, request.group_id)
    # Answered once the new state is durable (a future while it replicates).
    return then(error, lambda code: ctx.response(
        throttle_time_ms=0, error_code=fenced_for_version(code, ctx.api_version, 2)))
