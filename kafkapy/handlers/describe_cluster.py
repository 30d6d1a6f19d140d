"""DescribeCluster (key 60): cluster id, controller and brokers (Admin describeCluster).

Versions 0-1 (Kafka 3.9).  v1 adds endpoint_type: 1 = brokers (what clients
ask for); 2 = controllers, which a broker does not serve ->
MISMATCHED_ENDPOINT_TYPE; any other type -> UNSUPPORTED_ENDPOINT_TYPE.  Both
errors come back, as in Kafka's AuthHelper, in an otherwise default response
(endpoint type 1, empty cluster id, controller -1, no brokers).  Authorized
operations, when asked for, are the principal's on the cluster (the full set without
an authorizer).  Brokers
and controller come from the metadata cache (the controller's UpdateMetadata):
the live brokers on the client's listener.
"""
from __future__ import annotations

from kafkapy.security import authz
from kafkapy.handlers.common import CLUSTER_OPERATIONS
from kafkapy.protocol.errors import ErrorCode
from kafkapy.protocol.messages import RESPONSES

API_KEY = 60
MIN_VERSION = 0
MAX_VERSION = 1

_R = RESPONSES[API_KEY]
_Broker = _R.DescribeClusterBroker
BROKERS_ENDPOINT, CONTROLLERS_ENDPOINT = 1, 2


def handle(ctx, request):
    cache = ctx.services.cache
    endpoint = request.endpoint_type if ctx.api_version >= 1 else BROKERS_ENDPOINT
    if endpoint not in (BROKERS_ENDPOINT, CONTROLLERS_ENDPOINT):
        return _error(ctx, ErrorCode.UNSUPPORTED_ENDPOINT_TYPE,
                      f"Unsupported endpoint type {endpoint}")
    if endpoint != BROKERS_ENDPOINT:
        return _error(ctx, ErrorCode.MISMATCHED_ENDPOINT_TYPE,
                      "The request was sent to an endpoint of type BROKER, "
                      "but we wanted an endpoint of type CONTROLLER")
    brokers = sorted(cache.brokers_for(ctx.listener).values(), key=lambda b: b.node_id)
    # The controller the last UpdateMetadata named (-1 before any), alive or not, as Kafka.
    controller = cache.controller_id
    return ctx.response(
        throttle_time_ms=0, error_code=0, error_message=None, endpoint_type=BROKERS_ENDPOINT,
        cluster_id=cache.cluster_id, controller_id=controller,
        brokers=[_Broker(broker_id=b.node_id, host=b.host, port=b.port, rack=b.rack)
                 for b in brokers],
        authorized_operations=(
            authz.authorized_operations(ctx, authz.CLUSTER, "kafka-cluster", CLUSTER_OPERATIONS)
            if request.include_cluster_authorized_operations
            else None))


def _error(ctx, code: int, message: str):
    return ctx.response(throttle_time_ms=0, error_code=code, error_message=message,
                        endpoint_type=BROKERS_ENDPOINT, cluster_id="", controller_id=-1,
                        brokers=[], authorized_operations=None)
