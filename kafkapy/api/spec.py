"""What every API handler module declares, and the spec the listener dispatches by.

A handler module has ``API_KEY``, ``MIN_VERSION``, ``MAX_VERSION`` (the range
advertised in ApiVersions) and ``handle(ctx, request)``, which returns the
response object (a kafka-python message, not yet versioned), ``None`` when no
response is sent (acks=0 Produce), or an awaitable of either.
Optionally ``REJECTED_BELOW``: versions under it are advertised but answered
with UNSUPPORTED_VERSION by the handler itself (Kafka 4's Produce v0-2).
Optionally ``REQUEST_CLS``: what decodes the request instead of kafka-python's class
(its ``decode``, ``name``, ``max_version``; ListOffsets' ``FastDecode``).

``ApiSpec.from_module`` reads those names once; the broker builds its registry (API key ->
``ApiSpec``, ``kafkapy.handlers.build_registry``) and hands it to the listener, which
checks a request's version and decodes it by its spec, then calls ``spec.handle``.
"""
from __future__ import annotations

from dataclasses import dataclass
from types import ModuleType
from typing import Any, Callable

from kafkapy.protocol.messages import REQUESTS, RESPONSES


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
