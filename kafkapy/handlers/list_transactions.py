"""ListTransactions (key 66): the transactional ids this broker coordinates.

Versions 0-1 (v1 adds ``duration_filter``: only transactions running at least
that long).  Filters: state names (unknown names are echoed in
``unknown_state_filters`` and match nothing) and producer ids; empty filters
match everything.
"""
from __future__ import annotations

from kafkapy.security import authz
from kafkapy.coordinator.transaction.state import TxnState
from kafkapy.handlers._txn import service
from kafkapy.protocol.errors import ErrorCode
from kafkapy.protocol.messages import RESPONSES

API_KEY = 66
MIN_VERSION = 0
MAX_VERSION = 1

_State = RESPONSES[API_KEY].TransactionState


def handle(ctx, request):
    txns = service(ctx)
    if txns is None:
        return ctx.response(throttle_time_ms=0, error_code=ErrorCode.COORDINATOR_NOT_AVAILABLE,
                            unknown_state_filters=[], transaction_states=[])
    known, unknown = set(), []
    for name in request.state_filters or []:
        state = TxnState.from_name(name)
        if state is None:
            unknown.append(name)
        else:
            known.add(state)
    if unknown and not known:
        return ctx.response(throttle_time_ms=0, error_code=0, unknown_state_filters=unknown,
                            transaction_states=[])
    duration = request.duration_filter if ctx.api_version >= 1 else -1
    error, found = txns.coordinator.list(known, set(request.producer_id_filters or []),
                                         duration if duration is not None else -1)
    if ctx.services.authorizer is not None:
        allowed = authz.filter_allowed(ctx, authz.DESCRIBE, authz.TRANSACTIONAL_ID,
                                       [t.transactional_id for t in found])
        found = [t for t in found if t.transactional_id in allowed]
    return ctx.response(throttle_time_ms=0, error_code=error, unknown_state_filters=unknown,
                        transaction_states=[
                            _State(transactional_id=t.transactional_id, producer_id=t.producer_id,
                                   transaction_state=t.state.display_name) for t in found])
