"""DeleteAcls (key 31): remove the ACL bindings matching filters.

Versions 0-3 (Kafka 3.9).  With no authorizer (see
describe_acls) every filter is answered SECURITY_DISABLED, "No Authorizer is
configured.", with no matching ACLs, one result per filter in request order.
"""
from __future__ import annotations

from kafkapy.handlers.common import NO_AUTHORIZER
from kafkapy.protocol.errors import ErrorCode
from kafkapy.protocol.messages import RESPONSES

API_KEY = 31
MIN_VERSION = 0
MAX_VERSION = 3

_Result = RESPONSES[API_KEY].DeleteAclsFilterResult


def handle(ctx, request):
    return ctx.response(throttle_time_ms=0, filter_results=[
        _Result(error_code=ErrorCode.SECURITY_DISABLED, error_message=NO_AUTHORIZER, matching_acls=[])
        for _ in request.filters])
