"""DescribeAcls (key 29): list the ACLs matching a filter.

Versions 0-3 (Kafka 3.9).  kafkapy has no authorizer --
start-up refuses a non-empty authorizer.class.name -- so, like Kafka with the
default empty authorizer.class.name, the answer is SECURITY_DISABLED with
"No Authorizer is configured on the broker" and no resources.  Admin tools then report
that ACLs are disabled instead of that the API is missing.
"""
from __future__ import annotations

from kafkapy.protocol.errors import ErrorCode

API_KEY = 29
MIN_VERSION = 0
MAX_VERSION = 3

# DescribeAcls words it differently from CreateAcls / DeleteAcls (Kafka's AclApis).
_NO_AUTHORIZER = "No Authorizer is configured on the broker"


def handle(ctx, request):
    return ctx.response(throttle_time_ms=0, error_code=ErrorCode.SECURITY_DISABLED,
                        error_message=_NO_AUTHORIZER, resources=[])
