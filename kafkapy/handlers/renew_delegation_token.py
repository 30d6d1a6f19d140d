"""RenewDelegationToken (key 39, v0-2): push a token's expiry out by a period.

Kafka's handleRenewTokenRequest in ZooKeeper mode: DELEGATION_TOKEN_REQUEST_NOT_ALLOWED
on a connection that may not ask (``handlers._tokens.allowed``), else the token manager's
answer (``DelegationTokenManager.renew``): DELEGATION_TOKEN_AUTH_DISABLED,
DELEGATION_TOKEN_NOT_FOUND for an unknown HMAC, DELEGATION_TOKEN_OWNER_MISMATCH unless the
requester is the owner or a renewer, DELEGATION_TOKEN_EXPIRED; the new expiry is
min(max timestamp, now + period), a negative period meaning
``delegation.token.expiry.time.ms``.  Errors carry expiry -1.
"""
from __future__ import annotations

from kafkapy.handlers import _tokens
from kafkapy.protocol.delegation_token_apis import RenewDelegationTokenRequest  # noqa: F401

API_KEY = 39
MIN_VERSION = 0
MAX_VERSION = 2


def handle(ctx, request):
    tokens = ctx.services.delegation_tokens
    return _tokens.expiry_answer(ctx, lambda principal: tokens.renew(
        principal, bytes(request.hmac), request.renew_period_ms))
