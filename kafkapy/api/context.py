"""The context a handler gets for one request, and the error that closes its connection.

The listener (``kafkapy.network.connection``) makes one ``RequestContext`` per request it
dispatches and calls the API's handler with it; a handler answers through
``ctx.response(...)``, or raises ``CloseConnection`` to close the connection without an
answer.  Neither side knows the other: both know only this module.

A handler whose state lives as long as the client's connection (a share session) learns of
its end with ``ctx.on_close(callback)``: the listener runs each callback registered on a
connection once, on the event loop, when that connection is lost or closed (soon after
the call if it already was); the function ``on_close`` answers cancels it.  A context
made without a connection (requests built in-process, tests) never closes.
"""
from __future__ import annotations

from collections.abc import Callable
from typing import Protocol

from kafkapy.api.principal import PLAINTEXT_SESSION, Session


class Connection(Protocol):
    """What a context needs of the connection its request came on (the listener's)."""

    def on_close(self, callback: Callable[[], object]) -> Callable[[], None]: ...

    def throttle(self, throttle_ms: int) -> None: ...


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
                 "connection_auth", "size", "received", "timer", "_connection")

    def __init__(self, services, api_key: int, api_version: int, correlation_id: int,
                 client_id: str | None, peer: str, response_cls: type,
                 zero_copy: bool = False, listener: str | None = None,
                 session: Session = PLAINTEXT_SESSION, connection_auth=None,
                 connection: Connection | None = None, size: int = 0,
                 received: float = 0.0) -> None:
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
        self.size = size            # the request's bytes (header and body), Kafka's sizeInBytes
        # When the listener took the request's frame (time.monotonic(); 0.0 when made
        # in-process): the start of its handling, as the request metrics time it.
        self.received = received
        # Its handling's event-loop time while a request quota is configured, else None
        # (kafkapy.api.request_timer: set by the listener).
        self.timer = None
        self._connection = connection

    def response(self, **fields):
        """A response of this request's API at its version."""
        return self.response_cls(version=self.api_version, **fields)

    def throttle(self, throttle_ms: int) -> None:
        """A quota was exceeded: once this request's answer is sent, read nothing more from
        its connection for ``throttle_ms`` (KIP-219's muted channel)."""
        if self._connection is not None and throttle_ms > 0:
            self._connection.throttle(throttle_ms)

    def on_close(self, callback: Callable[[], object]) -> Callable[[], None]:
        """Run ``callback()`` once when this request's connection is lost or closed (see
        the module docstring); answers the function that cancels it."""
        if self._connection is None:
            return _nothing
        return self._connection.on_close(callback)


def _nothing() -> None:
    """The cancel of a callback that never runs."""


class CloseConnection(Exception):
    """Raised by a handler to close the connection without answering.

    Kafka does this for an acks=0 Produce that failed: the client gets no
    response, so closing the connection is the only way to make it refresh
    its metadata.
    """
