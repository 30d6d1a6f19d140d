"""ExpireDelegationToken (key 40, v0-2): end a token now or move its expiry earlier.

Kafka's handleExpireTokenRequest in ZooKeeper mode: DELEGATION_TOKEN_REQUEST_NOT_ALLOWED
on a connection that may not ask (``handlers._tokens.allowed``), else the token manager's
answer (``DelegationTokenManager.expire``): DELEGATION_TOKEN_AUTH_DISABLED,
DELEGATION_TOKEN_NOT_FOUND, DELEGATION_TOKEN_OWNER_MISMATCH (owner or renewers only); a
negative period removes the token at once (expiry = now), else DELEGATION_TOKEN_EXPIRED
for an expired token or expiry = min(max timestamp, now + period).  Errors carry -1.
"""
from __future__ import annotations

from kafkapy.handlers import _tokens
from kafkapy.protocol.delegation_token_apis import ExpireDelegationTokenRequest  # noqa: F401

API_KEY = 40
MIN_VERSION = 0
MAX_VERSION = 2


def handle(ctx, request):
    tokens = ctx.services.delegation_tokens
    return _tokens.expiry_answer(ctx, lambda principal: tokens.expire(
        principal, bytes(request.hmac), request.expiry_time_period_ms))
