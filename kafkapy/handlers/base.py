"""What every API handler module declares, and the context a handler gets.

A handler module has ``API_KEY``, ``MIN_VERSION``, ``MAX_VERSION`` (the range
advertised in ApiVersions) and ``handle(ctx, request)``, which returns the
response object (a kafka-python message, not yet versioned), ``None`` when no
response is sent (acks=0 Produce), or an awaitable of either.
Optionally ``REJECTED_BELOW``: versions under it are advertised but answered
with UNSUPPORTED_VERSION by the handler itself (Kafka 4's Produce v0-2).
Optionally ``REQUEST_CLS``: what decodes the request instead of kafka-python's class
(its ``decode``, ``name``, ``max_version``; ListOffsets' ``FastDecode``).
"""
from __future__ import annotations

from dataclasses import dataclass
from types import ModuleType
from typing import Any, Callable

from kafkapy.protocol.messages import REQUESTS, RESPONSES
from kafkapy.security.principal import PLAINTEXT_SESSION, Session


@dataclass(frozen=True)
class ApiSpec:
    key: int
    name: str
    min_version: int
    max_version: int
    handle: Callable[..., Any]
    request_cls: type
    response_cls: type

    @classmethod
    def from_module(cls, module: ModuleType) -> "ApiSpec":
        key = module.API_KEY
        request_cls = getattr(module, "REQUEST_CLS", None) or REQUESTS[key]  # own decode
        assert module.MAX_VERSION <= request_cls.max_version, module.__name__
        return cls(key=key, name=request_cls.name.removesuffix("Request"),
                   min_version=module.MIN_VERSION, max_version=module.MAX_VERSION,
                   handle=module.handle, request_cls=request_cls,
                   response_cls=RESPONSES[key])


class RequestContext:
    """One request: who sent it, at which version, and the broker serving it.

    ``session`` (contract K1) is the connection's principal, address and listener;
    ``connection_auth`` (contract K2) is set only for SaslHandshake / SaslAuthenticate
    while a SASL connection authenticates (``kafkapy.security.gate``), else None.
    """

    __slots__ = ("broker", "api_key", "api_version", "correlation_id", "client_id",
                 "peer", "response_cls", "zero_copy", "listener", "session",
                 "connection_auth")

    def __init__(self, broker, api_key: int, api_version: int, correlation_id: int,
                 client_id: str | None, peer: str, response_cls: type,
                 zero_copy: bool = False, listener: str | None = None,
                 session: Session = PLAINTEXT_SESSION, connection_auth=None) -> None:
        self.broker = broker
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
