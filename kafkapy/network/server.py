"""The listener: accepts connections, tracks them, closes idle ones, shuts down gracefully.

Graceful shutdown: stop accepting, let every connection finish the requests it
has in flight (bounded wait), then close the transports.

A listener whose security protocol is SSL or SASL_SSL gets an ``ssl.SSLContext``
(``kafkapy.security.ssl``); the TLS handshake completes before the connection is
made, so a failed or truncated handshake never becomes a connection (bounded by the
handshake timeout) and costs nobody else anything.
"""
from __future__ import annotations

import asyncio
import time

import structlog

from kafkapy.network.connection import KafkaConnection

_log = structlog.get_logger("kafkapy.network")
# A client that opens a TLS connection and never finishes the handshake is dropped then.
_HANDSHAKE_TIMEOUT_S = 10.0


class SocketServer:
    def __init__(self, broker, apis: dict, host: str, port: int, *,
                 max_request_bytes: int, max_inflight: int, idle_ms: int,
                 unsupported_api_versions, zero_copy: bool = True,
                 listener: str | None = None, security_protocol: str = "PLAINTEXT",
                 ssl_context=None) -> None:
        self.broker = broker
        self.listener = listener
        self.security_protocol = security_protocol
        self.ssl_context = ssl_context
        self.apis = apis
        self.host = host
        self.port = port
        self.max_request_bytes = max_request_bytes
        self.max_inflight = max_inflight
        self.unsupported_api_versions = unsupported_api_versions
        self.zero_copy = zero_copy
        self._idle_s = idle_ms / 1000.0
        self._connections: set[KafkaConnection] = set()
        self._server: asyncio.AbstractServer | None = None
        self._reaper: asyncio.TimerHandle | None = None

    @staticmethod
    def now() -> float:
        return time.monotonic()

    async def start(self) -> None:
        loop = asyncio.get_running_loop()
        tls = {} if self.ssl_context is None else {
            "ssl": self.ssl_context, "ssl_handshake_timeout": _HANDSHAKE_TIMEOUT_S}
        self._server = await loop.create_server(
            lambda: KafkaConnection(self), self.host or None, self.port,
            reuse_address=True, backlog=1024, **tls)
        sock = self._server.sockets[0]
        self.port = sock.getsockname()[1]
        self._schedule_reaper()
        _log.info("listening", listener=self.listener, host=self.host, port=self.port,
                  security_protocol=self.security_protocol)

    def connection_opened(self, conn: KafkaConnection) -> None:
        self._connections.add(conn)

    def connection_closed(self, conn: KafkaConnection) -> None:
        self._connections.discard(conn)

    @property
    def connection_count(self) -> int:
        return len(self._connections)

    def inflight_requests(self) -> int:
        """Requests read and not yet answered, over this listener's connections."""
        return sum(conn.inflight_requests for conn in self._connections)

    def _schedule_reaper(self) -> None:
        if self._idle_s <= 0:
            return
        interval = min(max(self._idle_s / 10, 0.1), 30.0)
        loop = asyncio.get_running_loop()
        self._reaper = loop.call_later(interval, self._close_idle)

    def _close_idle(self) -> None:
        cutoff = self.now() - self._idle_s
        for conn in list(self._connections):
            if conn.idle and conn.last_active < cutoff:
                _log.info("closing idle connection", peer=conn.peer)
                conn.close()
        self._schedule_reaper()

    async def stop_accepting(self) -> None:
        if self._server is not None:
            self._server.close()
        if self._reaper is not None:
            self._reaper.cancel()

    async def drain_and_close(self, timeout_s: float = 10.0) -> None:
        deadline = self.now() + timeout_s
        while any(c.has_inflight() for c in self._connections) and self.now() < deadline:
            await asyncio.sleep(0.01)
        for conn in list(self._connections):
            conn.close()
        if self._server is not None:
            await self._server.wait_closed()
