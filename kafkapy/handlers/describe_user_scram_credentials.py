"""DescribeUserScramCredentials (key 50, v0): users' SCRAM mechanisms and iterations.

Any broker answers from ZooKeeper (``/config/users``), as Kafka's
ZkAdminManager.describeUserScramCredentials: no users (null or empty) lists every user
with a credential, sorted; named users are answered in request order, once each, with
RESOURCE_NOT_FOUND for an empty name or a user without credentials and
DUPLICATE_RESOURCE for a name given twice.  See ``kafkapy.security.sasl.credentials``.
"""
from __future__ import annotations

from kafkapy.protocol.errors import ErrorCode
from kafkapy.security import authz
from kafkapy.security.sasl import credentials

API_KEY = 50
MIN_VERSION = 0
MAX_VERSION = 0


def handle(ctx, request):
    users = None if request.users is None else [u.name for u in request.users]
    if not authz.cluster(ctx, authz.DESCRIBE):
        return ctx.response(throttle_time_ms=0, error_code=ErrorCode.CLUSTER_AUTHORIZATION_FAILED,
                            error_message=None, results=[])
    code, message, results = credentials.describe(ctx.services.store, users)
    return ctx.response(
        throttle_time_ms=0, error_code=code, error_message=message,
        results=[(user, err, msg, [(mech, iters) for mech, iters in infos])
                 for user, err, msg, infos in results])
