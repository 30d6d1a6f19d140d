"""What the connection does with an answer given later, over a real listener's socket: a
value is answered; CloseConnection closes the connection with one warning; any other
exception closes it with an error line; a cancelled asyncio future closes it.  Alike for a
``LateAnswer`` (given inside the code that resolves it) and an asyncio future."""
from __future__ import annotations

import asyncio
import socket
import struct

import pytest
import structlog.testing

from kafkapy.api.context import CloseConnection
from kafkapy.api.late_answer import LateAnswer
from tests.support.handler_listener import handler_listener, request_frame


class _Handler:
    """Answers each request later: with the kind of pending answer the test chose."""

    def __init__(self) -> None:
        self.kind = "late"
        self.pending: list = []
        self.contexts: list = []

    def handle(self, ctx, request):
        answer = LateAnswer() if self.kind == "late" else \
            asyncio.get_running_loop().create_future()
        self.pending.append(answer)
        self.contexts.append(ctx)
        return answer


@pytest.fixture
async def listener():
    handler = _Handler()
    async with handler_listener(handler.handle) as server:
        yield server, handler


async def _send(server, handler) -> socket.socket:
    """A client socket that sent one request, once the handler holds its pending answer."""
    loop = asyncio.get_running_loop()
    sock = socket.create_connection((server.host, server.port), timeout=5)
    sock.setblocking(False)
    await loop.sock_sendall(sock, request_frame(7))
    for _ in range(500):
        if handler.pending:
            return sock
        await asyncio.sleep(0.01)
    raise AssertionError("the request never reached the handler")


async def _read_all(sock) -> bytes:
    """What the client reads until the broker closes the connection."""
    loop = asyncio.get_running_loop()
    data = b""
    while True:
        chunk = await asyncio.wait_for(loop.sock_recv(sock, 1 << 16), 5)
        if not chunk:
            return data
        data += chunk


def _give(answer, outcome) -> None:
    if isinstance(outcome, str) and outcome == "cancel":
        answer.cancel()
    elif isinstance(outcome, BaseException):
        answer.set_exception(outcome)
    else:
        answer.set_result(outcome)


@pytest.mark.parametrize("kind", ["late", "future"])
async def test_a_value_is_answered(listener, kind):
    server, handler = listener
    handler.kind = kind
    sock = await _send(server, handler)
    try:
        ctx = handler.contexts[0]
        _give(handler.pending[0], ctx.response(error_code=0, api_keys=[], throttle_time_ms=0))
        loop = asyncio.get_running_loop()
        head = await asyncio.wait_for(loop.sock_recv(sock, 8), 5)
        assert struct.unpack(">ii", head)[1] == 7
    finally:
        sock.close()


@pytest.mark.parametrize("kind", ["late", "future"])
@pytest.mark.parametrize("outcome,event,level", [
    (CloseConnection("not answered"), "closing connection: not answered", "warning"),
    (RuntimeError("broken"), "handler failed", "error"),
])
async def test_an_exception_closes_the_connection_unanswered(listener, kind, outcome, event,
                                                             level):
    server, handler = listener
    handler.kind = kind
    sock = await _send(server, handler)
    try:
        with structlog.testing.capture_logs() as logs:
            _give(handler.pending[0], outcome)
            assert await _read_all(sock) == b""
        assert [(e["event"], e["log_level"]) for e in logs
                if e["event"] == event] == [(event, level)]
    finally:
        sock.close()


async def test_a_cancelled_future_closes_the_connection(listener):
    server, handler = listener
    handler.kind = "future"
    sock = await _send(server, handler)
    try:
        _give(handler.pending[0], "cancel")
        assert await _read_all(sock) == b""
    finally:
        sock.close()
