"""DescribeAcls (key 29): list the ACLs matching a filter.

Versions 0-3 (Kafka 3.9).  With no authorizer (the default empty
authorizer.class.name) the answer is SECURITY_DISABLED with "No Authorizer is configured
on the broker" and no resources, as Kafka's; admin tools then report that ACLs are
disabled instead of that the API is missing.  With the AclAuthorizer the request needs
DESCRIBE on CLUSTER (else CLUSTER_AUTHORIZATION_FAILED); the matching bindings are
grouped by resource pattern.
"""
from __future__ import annotations

from kafkapy.protocol.errors import ErrorCode
from kafkapy.protocol.messages import RESPONSES
from kafkapy.security import acls as A
from kafkapy.security import authz

API_KEY = 29
MIN_VERSION = 0
MAX_VERSION = 3

# DescribeAcls words it differently from CreateAcls / DeleteAcls (Kafka's AclApis).
_NO_AUTHORIZER = "No Authorizer is configured on the broker"
_Resource = RESPONSES[API_KEY].DescribeAclsResource
_Acl = _Resource.AclDescription


def handle(ctx, request):
    authorizer = ctx.services.authorizer
    if authorizer is None:
        return ctx.response(throttle_time_ms=0, error_code=ErrorCode.SECURITY_DISABLED,
                            error_message=_NO_AUTHORIZER, resources=[])
    if not authz.cluster(ctx, A.DESCRIBE):
        return ctx.response(throttle_time_ms=0, error_code=ErrorCode.CLUSTER_AUTHORIZATION_FAILED,
                            error_message=None, resources=[])
    pattern_type = request.pattern_type_filter if request.pattern_type_filter is not None else A.LITERAL
    flt = A.AclFilter(request.resource_type_filter, request.resource_name_filter, pattern_type,
                      request.principal_filter, request.host_filter, request.operation,
                      request.permission_type)
    grouped: dict[A.Pattern, list] = {}
    for binding in authorizer.acls(flt):
        grouped.setdefault(binding.pattern, []).append(binding.entry)
    resources = [_Resource(resource_type=p.resource_type, resource_name=p.name, pattern_type=p.pattern_type,
                           acls=[_Acl(principal=e.principal, host=e.host, operation=e.operation,
                                      permission_type=e.permission) for e in entries])
                 for p, entries in grouped.items()]
    return ctx.response(throttle_time_ms=0, error_code=0, error_message="", resources=resources)
