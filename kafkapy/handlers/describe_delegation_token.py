"""DescribeDelegationToken (key 41, v0-3): the tokens the requester may see.

Kafka's handleDescribeTokensRequest: DELEGATION_TOKEN_REQUEST_NOT_ALLOWED on a connection
that may not ask (``handlers._tokens.allowed``), DELEGATION_TOKEN_AUTH_DISABLED without a
secret key, no tokens for an empty (not null) owner list; else every cached token that
``delegation_tokens.filter_token`` lets through: one of the named owners (null: any) is
its owner, requester or a renewer, and the requester is its owner, requester or renewer,
or has DESCRIBE on the DELEGATION_TOKEN (its id) or DESCRIBE_TOKENS on the owner's USER.
"""
from __future__ import annotations

from kafkapy.api.principal import KafkaPrincipal
from kafkapy.handlers import _tokens
from kafkapy.protocol.delegation_token_apis import DescribeDelegationTokenResponse
from kafkapy.protocol.errors import ErrorCode
from kafkapy.security import acls as A
from kafkapy.security import authz
from kafkapy.security.delegation_tokens import filter_token

API_KEY = 41
MIN_VERSION = 0
MAX_VERSION = 3

_Token = DescribeDelegationTokenResponse.DescribedDelegationToken
_Renewer = _Token.DescribedDelegationTokenRenewer


def handle(ctx, request):
    manager = ctx.services.delegation_tokens
    if not _tokens.allowed(ctx):
        return _answer(ctx, ErrorCode.DELEGATION_TOKEN_REQUEST_NOT_ALLOWED, [])
    if not manager.enabled:
        return _answer(ctx, ErrorCode.DELEGATION_TOKEN_AUTH_DISABLED, [])
    if request.owners is not None and not request.owners:
        return _answer(ctx, 0, [])
    owners = (None if request.owners is None
              else [KafkaPrincipal(o.principal_type, o.principal_name) for o in request.owners])
    requester = _tokens.principal(ctx)

    def eligible(token) -> bool:
        return filter_token(
            requester, owners, token,
            lambda token_id: authz.allowed(ctx, A.DESCRIBE, A.DELEGATION_TOKEN, token_id),
            lambda owner: authz.allowed(ctx, A.DESCRIBE_TOKENS, A.USER, str(owner)))
    return _answer(ctx, 0, manager.tokens(eligible))


def _answer(ctx, error: int, tokens):
    described = [_Token(
        principal_type=info.owner.principal_type, principal_name=info.owner.name,
        token_requester_principal_type=info.requester.principal_type,
        token_requester_principal_name=info.requester.name,
        issue_timestamp=info.issue_timestamp, expiry_timestamp=info.expiry_timestamp,
        max_timestamp=info.max_timestamp, token_id=info.token_id, hmac=hmac,
        renewers=[_Renewer(principal_type=r.principal_type, principal_name=r.name)
                  for r in info.renewers]) for info, hmac in tokens]
    return ctx.response(error_code=int(error), tokens=described, throttle_time_ms=0)
