"""A delayed operation's answer (an ``AnswerFuture``) leaves on the client's socket inside
the call that settles it, before the event loop turns again, and in request order (an
answer owed to an earlier request holds it back); an ordinary asyncio future's answer
waits for a loop turn; a failed one closes the connection.  Over a real listener's socket."""
from __future__ import annotations

import asyncio
import select
import socket
import struct

import pytest

from kafkapy.api.spec import ApiSpec
from kafkapy.config.broker import BrokerConfig
from kafkapy.network.connection_quotas import ConnectionQuotas
from kafkapy.network.server import SocketServer
from kafkapy.protocol.messages import REQUESTS, RESPONSES
from kafkapy.purgatory.answer import AnswerFuture
from kafkapy.testing._broker import free_port
from tests.support.services import services

_KEY = 18        # ApiVersions' schema carries the test requests; the handler is the test's
_Request = REQUESTS[_KEY]


class _Handler:
    """Answers each request with a future the test settles (``kind``: which future)."""

    def __init__(self) -> None:
        self.kind = AnswerFuture
        self.parked: list[tuple[asyncio.Future, object]] = []

    def handle(self, ctx, request):
        future = self.kind(loop=asyncio.get_running_loop())
        self.parked.append((future, ctx.response(error_code=0, api_keys=[],
                                                 throttle_time_ms=0)))
        return future


@pytest.fixture
async def listener():
    handler = _Handler()
    config = BrokerConfig.from_properties({"broker.id": "0"})
    spec = ApiSpec(key=_KEY, name="ApiVersions", min_version=0, max_version=3,
                   handle=handler.handle, request_cls=_Request, response_cls=RESPONSES[_KEY])
    server = SocketServer(config, {_KEY: spec}, "127.0.0.1", free_port(),
                          max_request_bytes=1 << 20, max_inflight=5, idle_ms=600_000,
                          unsupported_api_versions=lambda cid: b"",
                          quotas=ConnectionQuotas(config))
    await server.start(services(config=config))
    try:
        yield server, handler
    finally:
        await server.stop_accepting()
        await server.drain_and_close(timeout_s=1)


async def _send(server, handler, correlation_ids) -> socket.socket:
    """A client socket that sent one request per correlation id, all parked."""
    loop = asyncio.get_running_loop()
    sock = socket.create_connection((server.host, server.port), timeout=5)
    sock.setblocking(False)
    body = _Request(version=0).encode()
    frames = b""
    for cid in correlation_ids:
        header = struct.pack(">hhih", _KEY, 0, cid, -1)
        frames += struct.pack(">i", len(header) + len(body)) + header + body
    await loop.sock_sendall(sock, frames)
    for _ in range(500):
        if len(handler.parked) == len(correlation_ids):
            return sock
        await asyncio.sleep(0.01)
    raise AssertionError("requests not handled in time")


def _readable_now(sock: socket.socket) -> bool:
    """Whether an answer is on the socket, waited for WITHOUT letting the event loop run
    (a blocking select on the loop's own thread)."""
    return bool(select.select([sock], [], [], 0.5)[0])


def _correlation_ids(data: bytes) -> list[int]:
    ids, pos = [], 0
    while pos + 8 <= len(data):
        size = struct.unpack_from(">i", data, pos)[0]
        ids.append(struct.unpack_from(">i", data, pos + 4)[0])
        pos += 4 + size
    return ids


async def test_the_answer_is_written_inside_set_result(listener):
    server, handler = listener
    sock = await _send(server, handler, [7])
    [(future, response)] = handler.parked
    assert not _readable_now(sock)
    future.set_result(response)
    assert _readable_now(sock)       # no loop turn happened since set_result
    assert _correlation_ids(sock.recv(4096)) == [7]
    sock.close()


async def test_an_asyncio_future_answer_waits_for_a_loop_turn(listener):
    server, handler = listener
    handler.kind = asyncio.Future
    sock = await _send(server, handler, [8])
    [(future, response)] = handler.parked
    future.set_result(response)
    assert not _readable_now(sock)
    await asyncio.sleep(0.05)
    assert _readable_now(sock)
    assert _correlation_ids(sock.recv(4096)) == [8]
    sock.close()


async def test_answers_keep_request_order(listener):
    server, handler = listener
    sock = await _send(server, handler, [1, 2])
    (first, first_response), (second, second_response) = handler.parked
    second.set_result(second_response)
    assert not _readable_now(sock)   # the first request's answer is still owed
    first.set_result(first_response)
    assert _readable_now(sock)
    data = b""
    while len(_correlation_ids(data)) < 2 and _readable_now(sock):
        data += sock.recv(4096)
    assert _correlation_ids(data) == [1, 2]
    sock.close()


async def test_a_failed_answer_closes_the_connection(listener):
    server, handler = listener
    sock = await _send(server, handler, [3])
    [(future, _)] = handler.parked
    future.set_exception(RuntimeError("read failed"))
    await asyncio.sleep(0.05)        # the transport closes on its next turn
    assert _readable_now(sock)
    assert sock.recv(4096) == b""    # closed, nothing answered
    sock.close()
