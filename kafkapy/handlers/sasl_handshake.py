"""SaslHandshake (key 17, v0-1): the client names its SASL mechanism.

On a SASL listener before authentication the connection's gate hands this request here with
``ctx.connection_auth`` set (the gate's ``ConnectionAuth``).  An enabled mechanism kafkapy
can serve starts a mechanism server (``connection_auth.begin``) and is answered NONE with
the listener's enabled mechanisms; any other gets UNSUPPORTED_SASL_MECHANISM with that list,
and the connection is closed after the answer (``connection_auth.failed``), as Kafka's
SaslServerAuthenticator does.  v0 means the tokens that follow come unframed by Kafka's
request header (the gate reads the version itself); v1 sends them in SaslAuthenticate.

Without ``connection_auth`` (a PLAINTEXT or SSL listener, or a connection already
authenticated) Kafka's KafkaApis answers ILLEGAL_SASL_STATE with no mechanisms.
"""
from __future__ import annotations

from kafkapy.protocol.errors import ErrorCode
from kafkapy.security.sasl import enabled_mechanisms
from kafkapy.security.sasl.server import server_for

API_KEY = 17
MIN_VERSION = 0
MAX_VERSION = 1


def handle(ctx, request):
    auth = getattr(ctx, "connection_auth", None)
    if auth is None:
        return ctx.response(error_code=ErrorCode.ILLEGAL_SASL_STATE, mechanisms=[])
    services = ctx.services
    mechanisms = enabled_mechanisms(services.config, ctx.listener)
    server = server_for(request.mechanism, services.config, services.scram_credentials,
                        ctx.listener, services.delegation_tokens)
    if server is None:
        auth.failed()
        return ctx.response(error_code=ErrorCode.UNSUPPORTED_SASL_MECHANISM,
                            mechanisms=mechanisms)
    auth.begin(server)
    return ctx.response(error_code=0, mechanisms=mechanisms)
