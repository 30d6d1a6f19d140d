"""Close callbacks (``RequestContext.on_close``) over a real listener's socket: a callback
registered by a handler runs once when the client closes its socket, or when the broker
closes the connection; a cancelled one never runs; one registered on a connection already
lost runs soon; one that raises is logged and the others still run; the listener
shutting down drops them; a context made without a connection takes callbacks and never
runs them."""
from __future__ import annotations

import asyncio
import socket
import struct

import pytest
import structlog.testing

from kafkapy.api.context import RequestContext
from kafkapy.protocol.messages import RESPONSES
from tests.support.handler_listener import API_KEY, handler_listener, request_frame
from tests.support.services import services


class _Handler:
    """Registers what the test asks on each request's context, answers at once."""

    def __init__(self) -> None:
        self.contexts: list[RequestContext] = []
        self.ran: list[str] = []
        self.register: list = []        # (name, raises) per callback to register

    def handle(self, ctx: RequestContext, request):
        self.contexts.append(ctx)
        for name, raises in self.register:
            ctx.on_close(self._callback(name, raises))
        return ctx.response(error_code=0, api_keys=[], throttle_time_ms=0)

    def _callback(self, name: str, raises: bool):
        def callback() -> None:
            self.ran.append(name)
            if raises:
                raise RuntimeError(f"{name} failed")
        return callback


@pytest.fixture
async def listener():
    handler = _Handler()
    async with handler_listener(handler.handle) as server:
        yield server, handler


async def _request(server, correlation_id: int = 1) -> socket.socket:
    """A client socket that sent one ApiVersions v0 and read its answer."""
    loop = asyncio.get_running_loop()
    sock = socket.create_connection((server.host, server.port), timeout=5)
    sock.setblocking(False)
    await loop.sock_sendall(sock, request_frame(correlation_id))
    size = struct.unpack(">i", await _read(loop, sock, 4))[0]
    await _read(loop, sock, size)
    return sock


async def _read(loop, sock, n: int) -> bytes:
    data = b""
    while len(data) < n:
        chunk = await loop.sock_recv(sock, n - len(data))
        assert chunk, "connection closed"
        data += chunk
    return data


async def _until(predicate, timeout_s: float = 5.0) -> None:
    for _ in range(int(timeout_s / 0.01)):
        if predicate():
            return
        await asyncio.sleep(0.01)
    raise AssertionError("not reached in time")


async def test_a_callback_runs_once_when_the_client_closes_its_socket(listener):
    server, handler = listener
    handler.register = [("a", False)]
    sock = await _request(server)
    assert handler.ran == [] and server.connection_count == 1
    sock.close()
    await _until(lambda: server.connection_count == 0)
    await asyncio.sleep(0.05)
    assert handler.ran == ["a"]


async def test_each_request_may_register_and_all_run_in_order(listener):
    server, handler = listener
    handler.register = [("first", False)]
    sock = await _request(server, 1)
    handler.register = [("second", False)]
    loop = asyncio.get_running_loop()
    await loop.sock_sendall(sock, request_frame(2))
    await _read(loop, sock, struct.unpack(">i", await _read(loop, sock, 4))[0])
    sock.close()
    await _until(lambda: handler.ran == ["first", "second"])


async def test_a_cancelled_callback_does_not_run(listener):
    server, handler = listener
    sock = await _request(server)
    [ctx] = handler.contexts
    ran = []
    cancel = ctx.on_close(lambda: ran.append("cancelled"))
    ctx.on_close(lambda: ran.append("kept"))
    cancel()
    sock.close()
    await _until(lambda: server.connection_count == 0)
    await asyncio.sleep(0.05)
    assert ran == ["kept"]


async def test_a_failing_callback_is_logged_in_one_line_and_the_others_run(listener):
    server, handler = listener
    handler.register = [("boom", True), ("after", False)]
    sock = await _request(server)
    with structlog.testing.capture_logs() as logs:
        sock.close()
        await _until(lambda: handler.ran == ["boom", "after"])
    [line] = [e for e in logs if e["event"] == "connection close callback failed"]
    assert line["log_level"] == "warning" and "boom failed" in line["error"]
    assert "exc_info" not in line


async def test_the_broker_closing_the_connection_runs_it_too(listener):
    server, handler = listener
    handler.register = [("a", False)]
    sock = await _request(server)
    try:
        [conn] = server.open_connections()
        conn.close()
        await _until(lambda: handler.ran == ["a"])
        await asyncio.sleep(0.05)
        assert handler.ran == ["a"]
    finally:
        sock.close()


async def test_the_listener_shutting_down_drops_them(listener):
    server, handler = listener
    handler.register = [("a", False)]
    sock = await _request(server)
    [ctx] = handler.contexts
    try:
        await server.stop_accepting()
        await server.drain_and_close(timeout_s=1)
        late = ctx.on_close(lambda: handler.ran.append("late"))
        await _until(lambda: server.connection_count == 0)
        await asyncio.sleep(0.05)
        late()
        assert handler.ran == []
    finally:
        sock.close()


async def test_registered_after_the_connection_was_lost_runs_soon(listener):
    server, handler = listener
    sock = await _request(server)
    [ctx] = handler.contexts
    sock.close()
    await _until(lambda: server.connection_count == 0)
    ran = []
    ctx.on_close(lambda: ran.append("late"))
    cancel = ctx.on_close(lambda: ran.append("late and cancelled"))
    cancel()
    assert ran == []
    await _until(lambda: ran == ["late"])


def test_a_context_without_a_connection_never_runs_them():
    ctx = RequestContext(services(), API_KEY, 0, 1, "c", "p", RESPONSES[API_KEY])
    ran = []
    cancel = ctx.on_close(lambda: ran.append("x"))
    cancel()
    assert ran == []
