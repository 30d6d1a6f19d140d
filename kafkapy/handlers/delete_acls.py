"""DeleteAcls (key 31): remove the ACL bindings matching filters.

Versions 0-3 (Kafka 3.9).  With no authorizer every filter is answered
SECURITY_DISABLED, "No Authorizer is configured.", with no matching ACLs, one result
per filter in request order.  With the AclAuthorizer the request needs ALTER on CLUSTER
(else every filter CLUSTER_AUTHORIZATION_FAILED); each filter lists the bindings it
removed (a binding matched by several filters counts for the first).
"""
from __future__ import annotations

from kafkapy.handlers.common import NO_AUTHORIZER
from kafkapy.protocol.errors import ErrorCode
from kafkapy.protocol.messages import RESPONSES
from kafkapy.security import acls as A
from kafkapy.security import authz

API_KEY = 31
MIN_VERSION = 0
MAX_VERSION = 3

_Result = RESPONSES[API_KEY].DeleteAclsFilterResult
_Matching = _Result.DeleteAclsMatchingAcl


def handle(ctx, request):
    authorizer = ctx.services.authorizer
    if authorizer is None:
        return _all(ctx, request, ErrorCode.SECURITY_DISABLED, NO_AUTHORIZER)
    if not authz.cluster(ctx, A.ALTER):
        return _all(ctx, request, ErrorCode.CLUSTER_AUTHORIZATION_FAILED, None)
    filters = [A.AclFilter(f.resource_type_filter, f.resource_name_filter,
                           f.pattern_type_filter if f.pattern_type_filter is not None else A.LITERAL,
                           f.principal_filter, f.host_filter, f.operation, f.permission_type)
               for f in request.filters]
    deleted = authorizer.delete_acls(filters)
    return ctx.response(throttle_time_ms=0, filter_results=[
        _Result(error_code=0, error_message=None, matching_acls=[
            _Matching(error_code=code, error_message=message,
                      resource_type=b.pattern.resource_type, resource_name=b.pattern.name,
                      pattern_type=b.pattern.pattern_type, principal=b.entry.principal,
                      host=b.entry.host, operation=b.entry.operation,
                      permission_type=b.entry.permission)
            for b, code, message in bindings])
        for bindings in deleted])


def _all(ctx, request, code, message):
    return ctx.response(throttle_time_ms=0, filter_results=[
        _Result(error_code=code, error_message=message, matching_acls=[]) for _ in request.filters])
