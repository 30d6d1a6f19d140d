"""BrokerConnection against small asyncio servers on 127.0.0.1 that misbehave on purpose.

A real broker never sends these (late answers, wrong correlation ids, tagged
fields in response headers, a v0 ApiVersions body), so they are staged here.
"""
from __future__ import annotations

import asyncio
import struct
import traceback

import pytest

from kafka.protocol.api_header import RequestHeader

from kafkapy.network.client import BrokerConnection, _Answer, _request_header, _ResponseStream
from kafkapy.network import client as client_module
from kafkapy.protocol.messages import REQUESTS, RESPONSES

ApiVersions, Metadata = REQUESTS[18], REQUESTS[3]


class FakeServer:
    """Reads request frames; ``answer(frame) -> list of response payloads`` (without size)."""

    def __init__(self, answer) -> None:
        self.answer = answer
        self.frames: list[bytes] = []
        self.server: asyncio.AbstractServer | None = None
        self.port = 0
        self.writers: list[asyncio.StreamWriter] = []

    async def start(self) -> "FakeServer":
        self.server = await asyncio.start_server(self._serve, "127.0.0.1", 0)
        self.port = self.server.sockets[0].getsockname()[1]
        return self

    async def _serve(self, reader, writer) -> None:
        self.writers.append(writer)
        try:
            while True:
                size = struct.unpack(">i", await reader.readexactly(4))[0]
                frame = await reader.readexactly(size)
                self.frames.append(frame)
                for payload in await self.answer(frame):
                    if payload is None:
                        writer.close()
                        return
                    writer.write(struct.pack(">i", len(payload)) + payload)
                await writer.drain()
        except (asyncio.IncompleteReadError, ConnectionError):
            pass
        finally:
            writer.close()

    async def stop(self) -> None:
        for writer in self.writers:
            writer.close()
        self.server.close()
        await self.server.wait_closed()


def correlation_of(frame: bytes) -> int:
    return struct.unpack_from(">i", frame, 4)[0]


async def api_versions_answer(frame: bytes) -> list[bytes]:
    """An empty ApiVersions v0 answer to ``frame``."""
    body = RESPONSES[18][0](error_code=0, api_keys=[]).encode()
    return [struct.pack(">i", correlation_of(frame)) + bytes(body)]


def metadata_v12_body() -> bytes:
    response = RESPONSES[3][12](throttle_time_ms=0, brokers=[], cluster_id="c", controller_id=7,
                                topics=[])
    return bytes(response.encode())


def metadata_v12() -> object:
    return Metadata[12](topics=[], allow_auto_topic_creation=False,
                        include_topic_authorized_operations=False)


@pytest.fixture
async def serve():
    servers = []

    async def start(answer) -> FakeServer:
        server = await FakeServer(answer).start()
        servers.append(server)
        return server
    yield start
    for server in servers:
        await server.stop()


async def connect(server: FakeServer, **kw) -> BrokerConnection:
    conn = BrokerConnection(**kw)
    await conn.connect("127.0.0.1", server.port, timeout_s=5.0)
    return conn


async def test_request_header_v2_for_flexible_and_v1_otherwise(serve):
    async def answer(frame):
        cid = struct.pack(">i", correlation_of(frame))
        api_key, version = struct.unpack_from(">hh", frame, 0)
        if api_key == 3:
            return [cid + b"\x00" + metadata_v12_body()]
        body = RESPONSES[18][version](error_code=0, api_keys=[]).encode()
        return [cid + bytes(body)]
    server = await serve(answer)
    conn = await connect(server, client_id="controller-1")
    try:
        await conn.send(ApiVersions[0]())
        await conn.send(metadata_v12())
        v1, v2 = server.frames
        # api key, version, correlation id, client id (int16 length) ...
        assert struct.unpack_from(">hhih", v1, 0) == (18, 0, 1, 12)
        assert v1[10:22] == b"controller-1" and len(v1) == 22  # v1: no tagged fields, empty body
        assert struct.unpack_from(">hhih", v2, 0) == (3, 12, 2, 12)
        assert v2[22] == 0  # v2 header: empty tagged fields after the client id
    finally:
        conn.close()


@pytest.mark.parametrize("client_id", [None, "", "broker-1-fetcher-0", "客户"])
@pytest.mark.parametrize("api_key, version", [(18, 0), (18, 3), (1, 12), (1, 17), (3, 12)])
def test_request_header_is_kafka_pythons(api_key, version, client_id):
    flexible = version >= {18: 3, 1: 12, 3: 9}[api_key]   # from Kafka's message JSON
    header = RequestHeader(request_api_key=api_key, request_api_version=version,
                           correlation_id=2**31 - 1, client_id=client_id)
    assert _request_header(api_key, version, 2**31 - 1, client_id) == bytes(
        header.encode(flexible=flexible))


def test_request_header_tails_are_kept_per_api_version_and_client(monkeypatch):
    monkeypatch.setattr(client_module, "_HEADER_TAILS", {})
    monkeypatch.setattr(client_module, "_MEMO_LIMIT", 3)
    first = _request_header(1, 17, 7, "broker-1-fetcher-0")
    assert _request_header(1, 17, 8, "broker-1-fetcher-0") == first[:4] + struct.pack(">i", 8) + first[8:]
    for client_id in ("a", "b", "c", "d"):
        _request_header(1, 17, 9, client_id)
        assert len(client_module._HEADER_TAILS) <= 3
    assert _request_header(1, 17, 7, "broker-1-fetcher-0") == first


def test_response_classes_are_kafka_pythons():
    for api_key, version in ((1, 17), (1, 4), (3, 12), (18, 0)):
        assert client_module._response_class(api_key, version) is RESPONSES[api_key][version]
        assert client_module._response_class(api_key, version) is RESPONSES[api_key][version]


async def test_a_send_waits_while_writing_is_paused(serve):
    async def answer(frame):
        body = RESPONSES[18][0](error_code=0, api_keys=[]).encode()
        return [struct.pack(">i", correlation_of(frame)) + bytes(body)]
    server = await serve(answer)
    conn = await connect(server)
    try:
        conn._stream.pause_writing()
        sending = asyncio.ensure_future(conn.send(ApiVersions[0]()))
        await asyncio.sleep(0.2)
        assert server.frames, "the frame is written before the wait"
        assert not sending.done(), "answered, but the transport is still over its high-water mark"
        conn._stream.resume_writing()
        assert (await asyncio.wait_for(sending, 5)).error_code == 0
    finally:
        conn.close()


async def test_flexible_response_header_tagged_fields_are_skipped(serve):
    async def answer(frame):
        # one tagged field (tag 5, 3 bytes) in the response header
        header = struct.pack(">i", correlation_of(frame)) + b"\x01\x05\x03abc"
        return [header + metadata_v12_body()]
    server = await serve(answer)
    conn = await connect(server)
    try:
        response = await conn.send(metadata_v12())
        assert response.controller_id == 7 and response.cluster_id == "c"
        assert response.header.correlation_id == 1
    finally:
        conn.close()


async def test_api_versions_unsupported_version_is_read_as_v0(serve):
    async def answer(frame):
        body = RESPONSES[18][0](error_code=35, api_keys=[
            RESPONSES[18].ApiVersion(api_key=18, min_version=0, max_version=3)]).encode()
        return [struct.pack(">i", correlation_of(frame)) + bytes(body)]
    server = await serve(answer)
    conn = await connect(server)
    try:
        response = await conn.send(ApiVersions[4](client_software_name="a", client_software_version="b"))
        assert response.error_code == 35
        assert [(a.api_key, a.max_version) for a in response.api_keys] == [(18, 3)]
    finally:
        conn.close()


async def test_timeout_raises_and_closes_the_connection(serve):
    async def answer(frame):
        return []  # never answers
    server = await serve(answer)
    conn = await connect(server)
    with pytest.raises(asyncio.TimeoutError):
        await conn.send(ApiVersions[0](), timeout_s=0.2)
    assert not conn.connected
    with pytest.raises(ConnectionError):
        await conn.send(ApiVersions[0]())


async def test_an_answered_request_leaves_no_timeout_behind(serve):
    server = await serve(api_versions_answer)
    conn = await connect(server)
    try:
        response = await conn.send(ApiVersions[0](), timeout_s=0.05)
        assert response.error_code == 0
        await asyncio.sleep(0.15)       # well past the first request's timeout
        assert conn.connected
        assert (await conn.send(ApiVersions[0](), timeout_s=5)).error_code == 0
    finally:
        conn.close()


async def test_server_closing_fails_every_pending_request(serve):
    seen = []

    async def answer(frame):
        seen.append(frame)
        return [None] if len(seen) == 3 else []
    server = await serve(answer)
    conn = await connect(server)
    results = await asyncio.gather(*(conn.send(ApiVersions[0](), timeout_s=10) for _ in range(3)),
                                   return_exceptions=True)
    assert all(isinstance(r, ConnectionError) for r in results), results
    assert not conn.connected


async def test_wrong_correlation_id_breaks_the_connection(serve):
    async def answer(frame):
        body = RESPONSES[18][0](error_code=0, api_keys=[]).encode()
        return [struct.pack(">i", correlation_of(frame) + 100) + bytes(body)]
    server = await serve(answer)
    conn = await connect(server)
    with pytest.raises(ConnectionError, match="correlation"):
        await conn.send(ApiVersions[0](), timeout_s=5)
    assert not conn.connected


async def test_cancelled_caller_leaves_the_connection_in_step(serve):
    release = asyncio.Event()

    async def answer(frame):
        if correlation_of(frame) == 1:
            await release.wait()
        body = RESPONSES[18][0](error_code=0, api_keys=[
            RESPONSES[18].ApiVersion(api_key=correlation_of(frame), min_version=0, max_version=0)]).encode()
        return [struct.pack(">i", correlation_of(frame)) + bytes(body)]
    server = await serve(answer)
    conn = await connect(server)
    try:
        first = asyncio.ensure_future(conn.send(ApiVersions[0]()))
        await asyncio.sleep(0.05)
        first.cancel()
        release.set()
        response = await conn.send(ApiVersions[0](), timeout_s=5)
        assert response.api_keys[0].api_key == 2  # the answer to the second request, not the first
        assert conn.connected
    finally:
        conn.close()


async def test_the_sender_resumes_inside_the_read_of_its_answer(serve):
    """The task awaiting an answer goes on from inside the read that completed the answer's
    frame, not from a later turn of the loop (an asyncio future's wake-up)."""
    server = await serve(api_versions_answer)
    conn = await connect(server)
    try:
        response = await conn.send(ApiVersions[0]())
        callers = [frame.name for frame in traceback.extract_stack()]
        assert response.error_code == 0
        assert "data_received" in callers
        # The next request goes out from there too, and is answered as usual.
        assert (await conn.send(ApiVersions[0]())).error_code == 0
    finally:
        conn.close()


async def test_an_answer_given_outside_any_task_resumes_its_task_at_once():
    answer = _Answer(asyncio.get_running_loop())
    waiter = asyncio.create_task(_await(answer))
    await asyncio.sleep(0)                  # the task now waits on the answer
    seen = asyncio.get_running_loop().create_future()

    def give() -> None:
        answer.set_result("given")
        seen.set_result(waiter.done())
    asyncio.get_running_loop().call_soon(give)
    assert await seen is True
    assert waiter.result() == "given"


async def test_an_answer_given_inside_a_task_resumes_its_task_on_the_next_turn():
    """A task cannot be stepped while another runs: the awaiting task is woken as an
    asyncio future wakes it."""
    answer = _Answer(asyncio.get_running_loop())
    waiter = asyncio.create_task(_await(answer))
    await asyncio.sleep(0)
    answer.set_exception(ConnectionError("gone"))
    assert not waiter.done()
    with pytest.raises(ConnectionError):
        await waiter


async def test_a_task_waiting_on_an_answer_can_be_cancelled():
    answer = _Answer(asyncio.get_running_loop())
    waiter = asyncio.create_task(_await(answer))
    await asyncio.sleep(0)
    waiter.cancel()
    with pytest.raises(asyncio.CancelledError):
        await waiter
    assert answer.cancelled()
    assert answer.cancel() is False         # given once only


async def _await(answer):
    return await answer


async def test_whole_frames_of_a_read_are_views_of_it_and_the_rest_waits():
    """An answer that arrives whole in one read reaches its decoder without a copy (a
    fetch answer's records go from that read to the log); a frame cut by the end of the
    read waits in the buffer for the rest."""
    frames = []
    stream = _ResponseStream(frames.append, lambda exc: None)
    first, second, third = b"\0\0\0\1answer one", b"\0\0\0\2answer two", b"\0\0\0\3three"
    data = b"".join(struct.pack(">i", len(f)) + f for f in (first, second)) + \
        struct.pack(">i", len(third)) + third[:3]
    stream.data_received(data)
    assert [bytes(f) for f in frames] == [first, second]
    assert all(isinstance(f, memoryview) and f.obj is data for f in frames)
    stream.data_received(third[3:])
    assert bytes(frames[2]) == third


async def test_connect_refused_is_a_connection_error(serve):
    server = await serve(lambda frame: [])
    port = server.port
    await server.stop()
    with pytest.raises(ConnectionError):
        await BrokerConnection().connect("127.0.0.1", port, timeout_s=5.0)
