"""A real listener (``SocketServer``) whose one API is a test's handler: ApiVersions' key
and schema carry the requests, the test's ``handle(ctx, request)`` answers them."""
from __future__ import annotations

import contextlib
import struct

from kafkapy.api.spec import ApiSpec
from kafkapy.config.broker import BrokerConfig
from kafkapy.network.connection_quotas import ConnectionQuotas
from kafkapy.network.server import SocketServer
from kafkapy.protocol.messages import REQUESTS, RESPONSES
from kafkapy.testing._broker import free_port
from tests.support.services import services

API_KEY = 18        # ApiVersions' schema carries the test requests; the handler is the test's
Request = REQUESTS[API_KEY]


@contextlib.asynccontextmanager
async def handler_listener(handle):
    """The started listener on a free port of 127.0.0.1, closed after the block."""
    config = BrokerConfig.from_properties({"broker.id": "0"})
    spec = ApiSpec(key=API_KEY, name="ApiVersions", min_version=0, max_version=3,
                   handle=handle, request_cls=Request, response_cls=RESPONSES[API_KEY])
    server = SocketServer(config, {API_KEY: spec}, "127.0.0.1", free_port(),
                          max_request_bytes=1 << 20, max_inflight=5, idle_ms=600_000,
                          unsupported_api_versions=lambda cid: b"",
                          quotas=ConnectionQuotas(config))
    await server.start(services(config=config))
    try:
        yield server
    finally:
        await server.stop_accepting()
        await server.drain_and_close(timeout_s=1)


def request_frame(correlation_id: int) -> bytes:
    """One ApiVersions v0 request, framed, with a null client id."""
    body = Request(version=0).encode()
    header = struct.pack(">hhih", API_KEY, 0, correlation_id, -1)
    return struct.pack(">i", len(header) + len(body)) + header + body
