"""What the four delegation token APIs share: Kafka's KafkaApis.allowTokenRequests."""
from __future__ import annotations

from kafkapy.api.principal import ANONYMOUS, PLAINTEXT_SESSION


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
