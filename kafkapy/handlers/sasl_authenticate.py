"""SaslAuthenticate (key 36, v0-2): one SASL token from the client, one back.

Before authentication the gate hands this request here with ``ctx.connection_auth`` (the
gate's ``ConnectionAuth``, ``kafkapy.security.gate``), whose ``server`` is the mechanism
server SaslHandshake began.  The token goes to ``server.evaluate``; a failure is answered
SASL_AUTHENTICATION_FAILED with the mechanism's message (Kafka's words) and the connection
closes after the answer (``connection_auth.failed``).  When the exchange completes, the
connection becomes authenticated as the user (``connection_auth.authenticated``), which
gives the ``session_lifetime_ms`` to answer: the listener's ``connections.max.reauth.ms``
(per mechanism: ``listener.name.<l>.<mechanism>.connections.max.reauth.ms``), 0 when
unset; with a delegation token (SCRAM ``tokenauth=true``) at most the time left until the
token's expiry, and the principal is the token's owner, marked token-authenticated.  A
SaslAuthenticate without a handshake first is Kafka's IllegalSaslStateException: the
connection is closed without an answer.

Without ``connection_auth`` (PLAINTEXT/SSL listener, or already authenticated): Kafka's
KafkaApis answer, ILLEGAL_SASL_STATE "SaslAuthenticate request received after successful
authentication".
"""
from __future__ import annotations

from kafkapy.api.context import CloseConnection
from kafkapy.protocol.errors import ErrorCode
from kafkapy.security.sasl import SaslAuthenticationError

API_KEY = 36
MIN_VERSION = 0
MAX_VERSION = 2

_AFTER_AUTH = "SaslAuthenticate request received after successful authentication"
_GENERIC = "Authentication failed during authentication due to"
_GENERIC_REAUTH = "Authentication failed during re-authentication due to"


def handle(ctx, request):
    auth = getattr(ctx, "connection_auth", None)
    if auth is None:
        return ctx.response(error_code=ErrorCode.ILLEGAL_SASL_STATE, error_message=_AFTER_AUTH,
                            auth_bytes=b"", session_lifetime_ms=0)
    server = getattr(auth, "server", None)
    if server is None:
        auth.failed()
        raise CloseConnection()
    try:
        token = server.evaluate(bytes(request.auth_bytes))
        lifetime = 0
        if server.complete:
            # raises when a re-authentication names another user (Kafka's
            # ensurePrincipalUnchanged)
            lifetime = auth.authenticated(server.principal_name,
                                          getattr(server, "token_authenticated", False),
                                          getattr(server, "credential_left_ms", None))
    except SaslAuthenticationError as err:
        message = err.message
        if getattr(auth, "reauthenticating", False):
            # Kafka's generic text names what failed: "... during re-authentication ..."
            message = message.replace(_GENERIC, _GENERIC_REAUTH, 1)
        auth.failed()
        return ctx.response(error_code=ErrorCode.SASL_AUTHENTICATION_FAILED,
                            error_message=message, auth_bytes=b"", session_lifetime_ms=0)
    return ctx.response(error_code=0, error_message=None,
                        auth_bytes=token or b"", session_lifetime_ms=lifetime)
