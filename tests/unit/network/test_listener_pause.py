"""SocketServer.pause/resume on a real in-process broker: a stopped process as its clients see
it.  While paused nothing is accepted (a new connection waits in the kernel's backlog), read
or answered; on resume the waiting requests are read and answered, in order."""
from __future__ import annotations

import asyncio
import socket
import struct

import pytest


STALL_S = 0.2


def _api_versions(correlation_id: int) -> bytes:
    client_id = b"pause-test"
    body = struct.pack(">hhih", 18, 0, correlation_id, len(client_id)) + client_id
    return struct.pack(">i", len(body)) + body


async def _answer(reader: asyncio.StreamReader, timeout_s: float) -> int | None:
    """The correlation id of the next answer, None if none came in ``timeout_s``."""
    try:
        size, correlation_id = struct.unpack(">ii", await asyncio.wait_for(
            reader.readexactly(8), timeout_s))
    except asyncio.TimeoutError:
        return None
    await reader.readexactly(size - 4)
    return correlation_id


@pytest.fixture
def b(async_kafka_broker):
    """A broker in the test's event loop (the kafkapy.testing pytest plugin's)."""
    return async_kafka_broker


async def test_paused_listener_reads_and_answers_nothing_until_resumed(b):
    listener = b.server.socket_server
    reader, writer = await asyncio.open_connection(b.host, b.port)
    try:
        writer.write(_api_versions(1))
        assert await _answer(reader, 5) == 1
        listener.pause()
        writer.write(_api_versions(2) + _api_versions(3))
        assert await _answer(reader, STALL_S) is None
        assert listener.inflight_requests() == 0        # not even read
        listener.resume()
        assert [await _answer(reader, 5), await _answer(reader, 5)] == [2, 3]
    finally:
        writer.close()


async def test_new_connections_wait_in_the_backlog_while_paused(b):
    listener = b.server.socket_server
    before = listener.connection_count
    listener.pause()
    sock = socket.create_connection((b.host, b.port), timeout=5)    # the kernel accepts it
    try:
        sock.setblocking(False)
        reader, writer = await asyncio.open_connection(sock=sock)
        writer.write(_api_versions(7))
        assert await _answer(reader, STALL_S) is None
        assert listener.connection_count == before                  # not accepted yet
        listener.resume()
        assert await _answer(reader, 5) == 7
    finally:
        sock.close()
