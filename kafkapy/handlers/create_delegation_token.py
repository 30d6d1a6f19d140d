"""CreateDelegationToken (key 38, v0-3): a new token for the requester or, v3, an owner.

Kafka's KafkaApis.handleCreateTokenRequest in ZooKeeper mode, checked in this order:
DELEGATION_TOKEN_REQUEST_NOT_ALLOWED on a connection that may not ask
(``handlers._tokens.allowed``); DELEGATION_TOKEN_AUTHORIZATION_FAILED when the owner is
another principal and the requester lacks CREATE_TOKENS on that USER resource
(``User:<name>``); INVALID_PRINCIPAL_TYPE for a renewer that is not a ``User``; then the
token manager (``kafkapy.security.delegation_tokens``: DELEGATION_TOKEN_AUTH_DISABLED
without a secret key).  An error answer carries the owner and requester, -1 timestamps,
an empty id and HMAC.  The owner defaults to the requester when v3's name is null/empty.
"""
from __future__ import annotations

from kafkapy.api.principal import USER_TYPE, KafkaPrincipal
from kafkapy.handlers import _tokens
from kafkapy.protocol.delegation_token_apis import CreateDelegationTokenRequest  # noqa: F401
from kafkapy.protocol.errors import ErrorCode
from kafkapy.security import acls as A
from kafkapy.security import authz
from kafkapy.security.delegation_tokens import CreateResult

API_KEY = 38
MIN_VERSION = 0
MAX_VERSION = 3


def handle(ctx, request):
    requester = _tokens.principal(ctx)
    owner_name = getattr(request, "owner_principal_name", None)
    owner = (requester if not owner_name
             else KafkaPrincipal(request.owner_principal_type, owner_name))
    renewers = [KafkaPrincipal(r.principal_type, r.principal_name) for r in request.renewers]
    if not _tokens.allowed(ctx):
        result = CreateResult(int(ErrorCode.DELEGATION_TOKEN_REQUEST_NOT_ALLOWED), owner, requester)
    elif owner != requester and not authz.allowed(ctx, A.CREATE_TOKENS, A.USER, str(owner)):
        result = CreateResult(int(ErrorCode.DELEGATION_TOKEN_AUTHORIZATION_FAILED), owner, requester)
    elif any(r.principal_type != USER_TYPE for r in renewers):
        result = CreateResult(int(ErrorCode.INVALID_PRINCIPAL_TYPE), owner, requester)
    else:
        result = ctx.services.delegation_tokens.create(owner, requester, renewers,
                                                       request.max_lifetime_ms)
    return ctx.response(
        error_code=result.error, principal_type=result.owner.principal_type,
        principal_name=result.owner.name,
        token_requester_principal_type=result.requester.principal_type,
        token_requester_principal_name=result.requester.name,
        issue_timestamp_ms=result.issue_timestamp, expiry_timestamp_ms=result.expiry_timestamp,
        max_timestamp_ms=result.max_timestamp, token_id=result.token_id, hmac=result.hmac,
        throttle_time_ms=0)
