"""AlterUserScramCredentials (key 51, v0): add, replace or remove users' SCRAM credentials.

Kafka's ZooKeeper mode: only the active controller changes them (elsewhere every user
named in the request gets NOT_CONTROLLER, sorted by name); the checks, per-user errors
and znode writes are ZkAdminManager.alterUserScramCredentials
(``kafkapy.security.sasl.credentials.alter``): UNACCEPTABLE_CREDENTIAL for an empty
name or iterations outside 4096..16384, UNSUPPORTED_SASL_MECHANISM for an unknown
mechanism, DUPLICATE_RESOURCE for a user/mechanism pair given twice,
RESOURCE_NOT_FOUND for deleting a credential that does not exist.  The client sends the
salted password (never the password); the broker derives stored and server keys.
"""
from __future__ import annotations

from kafkapy.controller.controller import NOT_CONTROLLER_MESSAGE
from kafkapy.protocol.errors import ErrorCode
from kafkapy.security import authz
from kafkapy.security.sasl import credentials

API_KEY = 51
MIN_VERSION = 0
MAX_VERSION = 0

def handle(ctx, request):
    upsertions = [(u.name, u.mechanism, u.iterations, u.salt, u.salted_password)
                  for u in request.upsertions]
    deletions = [(d.name, d.mechanism) for d in request.deletions]
    if not authz.cluster(ctx, authz.ALTER):
        users = sorted({u[0] for u in upsertions} | {d[0] for d in deletions})
        return ctx.response(throttle_time_ms=0, results=[
            (user, ErrorCode.CLUSTER_AUTHORIZATION_FAILED, None) for user in users])
    if not ctx.services.controller.is_active:
        users = sorted({u[0] for u in upsertions} | {d[0] for d in deletions})
        return ctx.response(throttle_time_ms=0, results=[
            (user, ErrorCode.NOT_CONTROLLER, NOT_CONTROLLER_MESSAGE) for user in users])
    results = credentials.alter(ctx.services.store, ctx.services.scram_credentials, upsertions,
                                deletions)
    return ctx.response(throttle_time_ms=0, results=results)
