"""FindCoordinator (key 10): which broker coordinates a group (or a transactional id).

Versions 0-6; v0-3 ask for one key, v4+ for a batch (``coordinator_keys``).
Key type 0 (group): the leader of partition
``abs(hash(group)) % offsets.topic.num.partitions`` of ``__consumer_offsets``,
which is created here on first use.  Key type 1 (transaction) answers
COORDINATOR_NOT_AVAILABLE until a transaction coordinator exists; other key
types are INVALID_REQUEST.  Failures answer node -1, host "", port -1.
"""
from __future__ import annotations

from kafkapy.protocol.errors import ErrorCode
from kafkapy.protocol.messages import RESPONSES

API_KEY = 10
MIN_VERSION = 0
MAX_VERSION = 6

_Coordinator = RESPONSES[API_KEY].Coordinator
_GROUP, _TRANSACTION = 0, 1


def handle(ctx, request):
    key_type = request.key_type if ctx.api_version >= 1 else _GROUP
    if ctx.api_version >= 4:
        found = [(key, *_find(ctx, key_type, key)) for key in request.coordinator_keys]
        return ctx.response(throttle_time_ms=0, coordinators=[
            _Coordinator(key=key, node_id=node_id, host=host, port=port, error_code=error,
                         error_message=_message(error)) for key, error, node_id, host, port in found])
    error, node_id, host, port = _find(ctx, key_type, request.key)
    return ctx.response(throttle_time_ms=0, error_code=error, error_message=_message(error),
                        node_id=node_id, host=host, port=port)


def _find(ctx, key_type: int, key: str):
    if key_type == _GROUP:
        error, node = ctx.broker.groups.coordinator_node(key or "")
    elif key_type == _TRANSACTION:
        error, node = _transaction_coordinator(ctx, key)
    else:
        error, node = ErrorCode.INVALID_REQUEST, None
    if error or node is None:
        return error or ErrorCode.COORDINATOR_NOT_AVAILABLE, -1, "", -1
    return 0, node.node_id, node.host, node.port


def _transaction_coordinator(ctx, key: str):
    finder = getattr(ctx.broker.txn_coordinator, "coordinator_node", None)
    if finder is None:
        return ErrorCode.COORDINATOR_NOT_AVAILABLE, None
    return finder(key)


def _message(error: int) -> str | None:
    return ErrorCode(error).name if error else "NONE"
