"""What the four delegation token APIs share: Kafka's KafkaApis.allowTokenRequests."""
from __future__ import annotations

from kafkapy.api.principal import ANONYMOUS, PLAINTEXT_SESSION
from kafkapy.protocol.errors import ErrorCode
from kafkapy.security.delegation_tokens import ERROR_TIMESTAMP


def allowed(ctx) -> bool:
    """Tokens are handled only over an authenticated connection: not PLAINTEXT, not SSL
    without a client certificate, not a connection that authenticated with a token."""
    session = getattr(ctx, "session", PLAINTEXT_SESSION)
    protocol = session.security_protocol
    if session.principal.token_authenticated or protocol == "PLAINTEXT":
        return False
    return not (protocol == "SSL" and session.principal == ANONYMOUS)


def principal(ctx):
    return getattr(ctx, "session", PLAINTEXT_SESSION).principal


def expiry_answer(ctx, change):
    """Renew's or Expire's response: ``change(principal)`` gives (error, expiry) when the
    connection may ask, else DELEGATION_TOKEN_REQUEST_NOT_ALLOWED with expiry -1."""
    if allowed(ctx):
        error, expiry = change(principal(ctx))
    else:
        error, expiry = int(ErrorCode.DELEGATION_TOKEN_REQUEST_NOT_ALLOWED), ERROR_TIMESTAMP
    return ctx.response(error_code=error, expiry_timestamp_ms=expiry, throttle_time_ms=0)
