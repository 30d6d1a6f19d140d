"""FindCoordinator (key 10): which broker coordinates a group (or a transactional id).

Versions 0-6; v0-3 ask for one key, v4+ for a batch (``coordinator_keys``).
Key type 0 (group): the leader of partition
``abs(hash(group)) % offsets.topic.num.partitions`` of ``__consumer_offsets``,
which is created here on first use; the leader is the metadata cache's (any broker
of the cluster), answered with its endpoint on the client's listener.  Key type 1 (transaction) answers
COORDINATOR_NOT_AVAILABLE until a transaction coordinator exists; key type 2
(share) is INVALID_REQUEST below v6; from v6 it needs CLUSTER_ACTION on the cluster
(CLUSTER_AUTHORIZATION_FAILED) and a key ``"<group>:<topic id>:<partition>"``
(INVALID_REQUEST otherwise), and names the leader of the key's ``__share_group_state``
partition (created here on first use); other key types are INVALID_REQUEST (at v4+ an error response for every
key, carrying Kafka's message).  Failures answer node -1, host "", port -1.  The
error message is Kafka's: v0-3 carry Errors.message() ("NONE" on success),
v4+ each coordinator's default "".
"""
from __future__ import annotations

from kafkapy.coordinator.share.state import ShareKey
from kafkapy.security import authz
from kafkapy.protocol.errors import ErrorCode
from kafkapy.protocol.messages import RESPONSES

API_KEY = 10
MIN_VERSION = 0
MAX_VERSION = 6

_Coordinator = RESPONSES[API_KEY].Coordinator
_GROUP, _TRANSACTION, _SHARE = 0, 1, 2


def handle(ctx, request):
    key_type = request.key_type if ctx.api_version >= 1 else _GROUP
    if ctx.api_version >= 4 and key_type not in (_GROUP, _TRANSACTION, _SHARE):
        # Kafka cannot even name the type: an error response, every key with the message.
        return ctx.response(throttle_time_ms=0, coordinators=[
            _Coordinator(key=key, node_id=-1, host="", port=-1,
                         error_code=ErrorCode.INVALID_REQUEST,
                         error_message=_message(ErrorCode.INVALID_REQUEST))
            for key in request.coordinator_keys])
    if ctx.api_version >= 4:
        found = [(key, *_find(ctx, key_type, key)) for key in request.coordinator_keys]
        # Kafka leaves each coordinator's message at its default, "", error or not.
        return ctx.response(throttle_time_ms=0, coordinators=[
            _Coordinator(key=key, node_id=node_id, host=host, port=port, error_code=error,
                         error_message="") for key, error, node_id, host, port in found])
    error, node_id, host, port = _find(ctx, key_type, request.key)
    return ctx.response(throttle_time_ms=0, error_code=error, error_message=_message(error),
                        node_id=node_id, host=host, port=port)


def _find(ctx, key_type: int, key: str):
    if ctx.services.authorizer is not None:
        # Kafka: DESCRIBE on the group or transactional id, before looking anything up.
        if key_type == _GROUP and not authz.allowed(ctx, authz.DESCRIBE, authz.GROUP, key or ""):
            return ErrorCode.GROUP_AUTHORIZATION_FAILED, -1, "", -1
        if key_type == _TRANSACTION and not authz.allowed(ctx, authz.DESCRIBE, authz.TRANSACTIONAL_ID, key or ""):
            return ErrorCode.TRANSACTIONAL_ID_AUTHORIZATION_FAILED, -1, "", -1
    if key_type == _GROUP:
        error, node = ctx.services.groups.coordinator_node(key or "")
    elif key_type == _TRANSACTION:
        error, node = _transaction_coordinator(ctx, key)
    elif key_type == _SHARE and ctx.api_version >= 6:
        error, node = _share_coordinator(ctx, key)
    else:
        error, node = ErrorCode.INVALID_REQUEST, None
    if not error and node is not None:
        # The coordinator as reached through the listener the client used; a leader
        # without it is no coordinator for this client (Kafka's getAliveBrokerNode).
        node = ctx.services.cache.brokers_for(ctx.listener).get(node.node_id)
    if error or node is None:
        return error or ErrorCode.COORDINATOR_NOT_AVAILABLE, -1, "", -1
    return 0, node.node_id, node.host, node.port


def _share_coordinator(ctx, key: str):
    """Kafka 4.x: CLUSTER_ACTION on the cluster, then the key as
    ``"<group>:<topic id>:<partition>"`` (INVALID_REQUEST otherwise)."""
    if not authz.cluster(ctx, authz.CLUSTER_ACTION):
        return ErrorCode.CLUSTER_AUTHORIZATION_FAILED, None
    try:
        share_key = ShareKey.parse(key)
    except ValueError:
        return ErrorCode.INVALID_REQUEST, None
    return ctx.services.share_coordinator.coordinator_node(share_key)


def _transaction_coordinator(ctx, key: str):
    coordinator = ctx.services.txn_coordinator
    if coordinator is None:
        return ErrorCode.COORDINATOR_NOT_AVAILABLE, None
    return coordinator.coordinator_node(key)


# Kafka's Errors.message() for what v0-3 can answer: the name for NONE, else the
# exception's default message.
_MESSAGES = {
    0: "NONE",
    ErrorCode.COORDINATOR_LOAD_IN_PROGRESS:
        "The coordinator is loading and hence can't process requests.",
    ErrorCode.COORDINATOR_NOT_AVAILABLE: "The coordinator is not available.",
    ErrorCode.NOT_COORDINATOR: "This is not the correct coordinator.",
    ErrorCode.GROUP_AUTHORIZATION_FAILED: "Group authorization failed.",
    ErrorCode.TRANSACTIONAL_ID_AUTHORIZATION_FAILED: "Transactional Id authorization failed.",
    ErrorCode.CLUSTER_AUTHORIZATION_FAILED: "Cluster authorization failed.",
    ErrorCode.INVALID_REQUEST:
        "This most likely occurs because of a request being malformed by the client library "
        "or the message was sent to an incompatible broker. See the broker logs for more "
        "details.",
}


def _message(error: int) -> str:
    return _MESSAGES.get(error, ErrorCode(error).name)
