"""CreateAcls (key 30): add ACL bindings.

Versions 0-3 (Kafka 3.9).  With no authorizer every creation is answered
SECURITY_DISABLED, "No Authorizer is configured.", one result per creation in request
order, as Kafka does.  With the AclAuthorizer (Kafka's AclApis.handleCreateAcls): the
request needs ALTER on CLUSTER (else every result CLUSTER_AUTHORIZATION_FAILED); a
CLUSTER binding not named ``kafka-cluster`` and an empty resource name are
INVALID_REQUEST; the rest go to the authorizer (``kafkapy.security.authorizer``).
"""
from __future__ import annotations

from kafkapy.handlers.common import NO_AUTHORIZER
from kafkapy.protocol.errors import ErrorCode
from kafkapy.protocol.messages import RESPONSES
from kafkapy.security import acls as A
from kafkapy.security import authz

API_KEY = 30
MIN_VERSION = 0
MAX_VERSION = 3

_Result = RESPONSES[API_KEY].AclCreationResult


def handle(ctx, request):
    authorizer = ctx.services.authorizer
    if authorizer is None:
        return _all(ctx, request, ErrorCode.SECURITY_DISABLED, NO_AUTHORIZER)
    if not authz.cluster(ctx, A.ALTER):
        return _all(ctx, request, ErrorCode.CLUSTER_AUTHORIZATION_FAILED, None)
    results: list = [None] * len(request.creations)
    valid, where = [], []
    for i, c in enumerate(request.creations):
        binding = _binding(c)
        if binding.pattern.resource_type == A.CLUSTER and binding.pattern.name != A.CLUSTER_NAME:
            results[i] = (ErrorCode.INVALID_REQUEST,
                          f"The only valid name for the CLUSTER resource is {A.CLUSTER_NAME}")
        elif not binding.pattern.name:
            results[i] = (ErrorCode.INVALID_REQUEST, "Invalid empty resource name")
        else:
            valid.append(binding)
            where.append(i)
    for i, outcome in zip(where, authorizer.create_acls(valid)):
        results[i] = outcome
    return ctx.response(throttle_time_ms=0, results=[
        # Kafka answers a success with an empty message, not null.
        _Result(error_code=code, error_message="" if message is None and not code else message)
        for code, message in results])


def _all(ctx, request, code, message):
    return ctx.response(throttle_time_ms=0, results=[
        _Result(error_code=code, error_message=message) for _ in request.creations])


def _binding(c) -> A.AclBinding:
    pattern_type = c.resource_pattern_type if c.resource_pattern_type is not None else A.LITERAL
    return A.AclBinding(A.Pattern(c.resource_type, c.resource_name or "", pattern_type),
                        A.AclEntry(c.principal or "", c.host or "", c.operation, c.permission_type))
