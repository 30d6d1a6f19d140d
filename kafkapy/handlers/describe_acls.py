"""DescribeAcls (key 29): list the ACLs matching a filter.

Versions 1-3 (Kafka 3.9 maximum, 4.0 minimum).  kafkapy has no authorizer --
start-up refuses a non-empty authorizer.class.name -- so, like Kafka with the
default empty authorizer.class.name, the answer is SECURITY_DISABLED with
"No Authorizer is configured." and no resources.  Admin tools then report
that ACLs are disabled instead of that the API is missing.
"""
from __future__ import annotations

from kafkapy.handlers.common import NO_AUTHORIZER
from kafkapy.protocol.errors import ErrorCode

API_KEY = 29
MIN_VERSION = 1
MAX_VERSION = 3


def handle(ctx, request):
    return ctx.response(throttle_time_ms=0, error_code=ErrorCode.SECURITY_DISABLED,
                        error_message=NO_AUTHORIZER, resources=[])
