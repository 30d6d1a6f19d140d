"""DescribeTransactions (key 65): the coordinator's view of transactional ids.

Version 0.  Per id: NOT_COORDINATOR / COORDINATOR_LOAD_IN_PROGRESS,
TRANSACTIONAL_ID_NOT_FOUND for an unknown (or expiring) id, INVALID_REQUEST
for an empty one, else state name, timeout, start time, producer id and epoch
and the partitions of the transaction.
"""
from __future__ import annotations

from kafkapy.security import authz
from kafkapy.handlers._txn import service
from kafkapy.protocol.errors import ErrorCode
from kafkapy.protocol.messages import RESPONSES

API_KEY = 65
MIN_VERSION = 0
MAX_VERSION = 0

_State = RESPONSES[API_KEY].TransactionState
_Topic = _State.TopicData


def handle(ctx, request):
    txns = service(ctx)
    states = []
    for txn_id in request.transactional_ids:
        if not authz.allowed(ctx, authz.DESCRIBE, authz.TRANSACTIONAL_ID, txn_id):
            error, txn = ErrorCode.TRANSACTIONAL_ID_AUTHORIZATION_FAILED, None
        elif txns is None:
            error, txn = ErrorCode.COORDINATOR_NOT_AVAILABLE, None
        else:
            error, txn = txns.coordinator.describe(txn_id)
        if txn is None:
            # Kafka leaves every other field at its zero default.
            states.append(_State(error_code=error, transactional_id=txn_id, transaction_state="",
                                 transaction_timeout_ms=0, transaction_start_time_ms=0,
                                 producer_id=0, producer_epoch=0, topics=[]))
            continue
        by_topic: dict[str, list[int]] = {}
        for topic, index in sorted(txn.partitions):
            by_topic.setdefault(topic, []).append(index)
        states.append(_State(error_code=0, transactional_id=txn_id,
                             transaction_state=txn.state.display_name,
                             transaction_timeout_ms=txn.timeout_ms,
                             transaction_start_time_ms=txn.start_ms,
                             producer_id=txn.producer_id, producer_epoch=txn.producer_epoch,
                             topics=[_Topic(topic=t, partitions=p) for t, p in by_topic.items()]))
    return ctx.response(throttle_time_ms=0, transaction_states=states)
