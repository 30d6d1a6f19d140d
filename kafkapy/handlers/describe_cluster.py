"""DescribeCluster (key 60): cluster id, controller and brokers (Admin describeCluster).

Versions 0-1 (Kafka 3.9).  v1 adds endpoint_type: 1 = brokers (what clients
ask for); 2 = controllers, which a broker does not serve ->
MISMATCHED_ENDPOINT_TYPE.
"""
from __future__ import annotations

from kafkapy.protocol.errors import ErrorCode
from kafkapy.protocol.messages import RESPONSES

API_KEY = 60
MIN_VERSION = 0
MAX_VERSION = 1

_R = RESPONSES[API_KEY]
_Broker = _R.DescribeClusterBroker
BROKERS_ENDPOINT = 1


def handle(ctx, request):
    cache = ctx.broker.cache
    if ctx.api_version >= 1 and request.endpoint_type != BROKERS_ENDPOINT:
        return ctx.response(throttle_time_ms=0, error_code=ErrorCode.MISMATCHED_ENDPOINT_TYPE,
                            error_message="The request was sent to an endpoint of type BROKER, "
                                          "but we wanted an endpoint of type CONTROLLER",
                            endpoint_type=request.endpoint_type, cluster_id=cache.cluster_id,
                            controller_id=-1, brokers=[], authorized_operations=None)
    return ctx.response(
        throttle_time_ms=0, error_code=0, error_message=None, endpoint_type=BROKERS_ENDPOINT,
        cluster_id=cache.cluster_id, controller_id=cache.controller_id,
        brokers=[_Broker(broker_id=b.node_id, host=b.host, port=b.port, rack=b.rack)
                 for b in sorted(cache.brokers.values(), key=lambda b: b.node_id)],
        authorized_operations=None)
