"""CreateAcls (key 30): add ACL bindings.

Versions 0-3 (Kafka 3.9).  With no authorizer (see
describe_acls) every creation is answered SECURITY_DISABLED, "No Authorizer
is configured.", one result per creation in request order, as Kafka does.
"""
from __future__ import annotations

from kafkapy.handlers.common import NO_AUTHORIZER
from kafkapy.protocol.errors import ErrorCode
from kafkapy.protocol.messages import RESPONSES

API_KEY = 30
MIN_VERSION = 0
MAX_VERSION = 3

_Result = RESPONSES[API_KEY].AclCreationResult


def handle(ctx, request):
    return ctx.response(throttle_time_ms=0, results=[
        _Result(error_code=ErrorCode.SECURITY_DISABLED, error_message=NO_AUTHORIZER)
        for _ in request.creations])
