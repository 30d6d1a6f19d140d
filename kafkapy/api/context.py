"""The context a handler gets for one request, and the error that closes its connection.

The listener (``kafkapy.network.connection``) makes one ``RequestContext`` per request it
dispatches and calls the API's handler with it; a handler answers through
``ctx.response(...)``, or raises ``CloseConnection`` to close the connection without an
answer.  Neither side knows the other: both know only this module.
"""
from __future__ import annotations

from kafkapy.api.principal import PLAINTEXT_SESSION, Session


class RequestContext:
    """One request: who sent it, at which version, and what serves it.

    ``services`` is what the broker hands its listeners for the handlers (the handlers'
    ``Services``: the components a handler may call); this layer only carries it.

    ``session`` is the connection's principal, address and listener; ``connection_auth``
    is set only for SaslHandshake / SaslAuthenticate while a SASL connection authenticates
    (the gate's ``ConnectionAuth``, ``kafkapy.security.gate``), else None.
    """

    __slots__ = ("services", "api_key", "api_version", "correlation_id", "client_id",
                 "peer", "response_cls", "zero_copy", "listener", "session",
                 "connection_auth")

    def __init__(self, services, api_key: int, api_version: int, correlation_id: int,
                 client_id: str | None, peer: str, response_cls: type,
                 zero_copy: bool = False, listener: str | None = None,
                 session: Session = PLAINTEXT_SESSION, connection_auth=None) -> None:
        self.services = services
        self.api_key = api_key
        self.api_version = api_version
        self.correlation_id = correlation_id
        self.client_id = client_id
        self.peer = peer
        self.response_cls = response_cls
        self.zero_copy = zero_copy  # records may be sent from files with sendfile
        self.listener = listener    # the listener name the request arrived on
        self.session = session
        self.connection_auth = connection_auth

    def response(self, **fields):
        """A response of this request's API at its version."""
        return self.response_cls(version=self.api_version, **fields)


class CloseConnection(Exception):
    """Raised by a handler to close the connection without answering.

    Kafka does this for an acks=0 Produce that failed: the client gets no
    response, so closing the connection is the only way to make it refresh
    its metadata.
    """
