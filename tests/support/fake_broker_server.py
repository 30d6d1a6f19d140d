"""A fake broker for unit tests: an asyncio server on 127.0.0.1 that speaks the Kafka
wire format with our own protocol classes, so an inter-broker client (controller
channel, controlled-shutdown client, transaction-marker channel) can be staged
without a broker.

Invariants: every request is decoded and recorded (``received``, arrival order)
before it is answered, dropped or held; an answer is the response of the same
API version, framed with the request's correlation id; every wait is bounded.
The ``fakes`` fixture starts fakes on demand and stops them all at the end.
"""
from __future__ import annotations

import asyncio
import struct

import pytest

from kafkapy.protocol.headers import peek_api, read_request_header
from kafkapy.protocol.messages import REQUESTS, RESPONSES

WAIT_S = 10.0


def default_response(request):
    """Error 0, no per-partition detail, for UpdateMetadata, StopReplica, LeaderAndIsr."""
    cls = RESPONSES[request.API_KEY][request.API_VERSION]
    if request.API_KEY == 6:
        return cls(error_code=0)
    if request.API_KEY == 5:
        return cls(error_code=0, partition_errors=[])
    if request.API_KEY == 4:
        return cls(error_code=0, topics=[])
    raise AssertionError(f"unexpected api {request.API_KEY}")


class FakeBrokerServer:
    """Answers requests with ``respond(request) -> response``; records
    ``(api_key, request, client_id)`` in arrival order.

    ``port``: None binds an ephemeral port (read ``port`` after ``start``); a given
    port lets a test bring a "restarted" broker back where the old one was.
    ``drop_next``: close the connection on the next N requests without answering.
    ``hold``: while clear, requests are received but not answered.
    """

    def __init__(self, port: int | None = None, respond=None) -> None:
        self.port = port or 0
        self.respond = respond or default_response
        self.received: list[tuple[int, object, str | None]] = []
        self.answered = 0
        self.drop_next = 0
        self.hold = asyncio.Event()
        self.hold.set()
        self.arrived = asyncio.Condition()
        self.connections = 0
        self._server: asyncio.AbstractServer | None = None
        self._writers: set[asyncio.StreamWriter] = set()

    @property
    def requests(self) -> list:
        """The decoded requests alone, in arrival order."""
        return [request for _, request, _ in self.received]

    async def start(self) -> FakeBrokerServer:
        self._server = await asyncio.start_server(self._serve, "127.0.0.1", self.port,
                                                  reuse_address=True)
        self.port = self._server.sockets[0].getsockname()[1]
        return self

    async def stop(self) -> None:
        if self._server is None:
            return
        self._server.close()
        for writer in list(self._writers):
            writer.close()
        await self._server.wait_closed()
        self._server = None

    async def wait_received(self, count: int) -> None:
        async with self.arrived:
            await asyncio.wait_for(self.arrived.wait_for(lambda: len(self.received) >= count),
                                   WAIT_S)

    async def _serve(self, reader, writer) -> None:
        self.connections += 1
        self._writers.add(writer)
        try:
            while True:
                size = struct.unpack(">i", await reader.readexactly(4))[0]
                frame = await reader.readexactly(size)
                api_key, version, correlation_id = peek_api(frame)
                client_id, pos = read_request_header(memoryview(frame), api_key, version)
                request = REQUESTS[api_key][version].decode(memoryview(frame)[pos:])
                async with self.arrived:
                    self.received.append((api_key, request, client_id))
                    self.arrived.notify_all()
                if self.drop_next:
                    self.drop_next -= 1
                    return
                await self.hold.wait()
                head = struct.pack(">i", correlation_id)
                if RESPONSES[api_key].flexible_version_q(version):
                    head += b"\x00"
                payload = head + bytes(self.respond(request).encode())
                writer.write(struct.pack(">i", len(payload)) + payload)
                await writer.drain()
                self.answered += 1
        except (asyncio.IncompleteReadError, ConnectionError, asyncio.CancelledError):
            pass   # (cancelled: the test's loop is closing)
        finally:
            self._writers.discard(writer)
            writer.close()


@pytest.fixture
async def fakes():
    """``await fakes(**kw)`` starts a FakeBrokerServer; all are stopped at the end."""
    started: list[FakeBrokerServer] = []

    async def start(**kw) -> FakeBrokerServer:
        fake = await FakeBrokerServer(**kw).start()
        started.append(fake)
        return fake
    yield start
    for fake in started:
        await fake.stop()
