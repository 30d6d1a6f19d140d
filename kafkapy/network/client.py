"""An asyncio client connection to one Kafka broker (ours or Kafka's).

Used between brokers: the controller's channel (LeaderAndIsr, StopReplica,
UpdateMetadata), the replica fetcher (Fetch) and ControlledShutdown to the
controller.

Wire format (Kafka's framing):
- request  = int32 size, request header, body.  Header v1 = api_key int16,
  api_version int16, correlation_id int32, client_id nullable string (int16
  length); header v2 (flexible versions) = v1 followed by tagged fields.
- response = int32 size, response header, body.  Header v0 = correlation_id
  int32; v1 (flexible versions) = v0 and tagged fields.  ApiVersions responses
  always carry header v0 (kafka-python's ``ApiVersionsResponse`` knows it).

Security: with a ``ClientSecurity`` (``kafkapy.security.listener_setup``) the connection speaks TLS (SSL,
SASL_SSL; the broker's host name checked unless the listener turns endpoint
identification off) and authenticates with SASL (SASL_PLAINTEXT, SASL_SSL) before
``connect`` returns: SaslHandshake v1, then SaslAuthenticate v2 tokens from the
client mechanism (``kafkapy.security.sasl.client``).  A refused login raises
``SaslLoginError`` (a ConnectionError) and closes the connection.  The broker calls
``use_inter_broker_security`` once at start-up (its inter-broker settings), which
every connection made without an explicit ``security`` uses; it is process-wide, so
brokers sharing one process must share their inter-broker security.

Invariants:
- requests may be pipelined; responses arrive in request order (Kafka's server
  guarantee), so the pending requests are a FIFO and each response's
  correlation id must match the head of it, else the connection is broken;
- a request that expects no response (Produce with acks=0) is written and
  answered ``None`` at once;
- a timed-out request closes the connection (a late answer would otherwise be
  taken for the next request's, as Kafka's NetworkClient disconnects on request
  timeout) and raises ``asyncio.TimeoutError``;
- any failure of the socket fails every pending request with
  ``ConnectionError``; after ``close()`` every send raises ``ConnectionError``;
- the task awaiting an answer resumes inside the answer's delivery (``_Answer``: the
  read that completed its frame, the timeout, the connection's loss), not on a later turn
  of the loop behind everything else that turn holds: a follower's next Fetch leaves from
  inside the read of the answer it follows.  When another task is running at that moment
  (the answer given from inside it), the awaiting task resumes on the next turn, as with
  an asyncio future;
- with ``links`` (``kafkapy.network.links``; None: the peer is always reachable) an
  unreachable peer is a partition: connect waits (within its timeout), requests are held and
  written in order once the peer is reachable again, a response read is handed over only
  then (the request timeouts run meanwhile).
"""
from __future__ import annotations

import asyncio
import collections
import socket
import struct
from typing import Callable

import structlog
from kafka.protocol.api_header import ResponseHeader
from kafka.protocol.api_message import ApiMessage

from kafkapy.api.late_answer import LateAnswer
from kafkapy.network.framing import Reads
from kafkapy.network.links import Links
from kafkapy.protocol.errors import ErrorCode
from kafkapy.protocol.headers import skip_tagged_fields
from kafkapy.protocol.messages import REQUESTS, RESPONSES, is_flexible
from kafkapy.security.listener_setup import ClientSecurity
from kafkapy.security.sasl import SaslAuthenticationError
from kafkapy.security.sasl.client import client_for

_log = structlog.get_logger("kafkapy.network.client")
_SIZE = struct.Struct(">i")
_CORRELATION = struct.Struct(">i")
_INT16 = struct.Struct(">h")
_KEY_VERSION_CORRELATION = struct.Struct(">hhi")
# Per (api key, version, client id): the header's bytes after the correlation id.  Client
# ids are few (one per component), but the memo is bounded all the same.
_HEADER_TAILS: dict[tuple[int, int, str | None], bytes] = {}
_RESPONSE_CLASSES: dict[tuple[int, int], type] = {}
_MEMO_LIMIT = 1024
_MAX_CORRELATION = 2**31 - 1
_API_VERSIONS = 18
# kafka-python's ApiVersionsResponse.decode reads a v0 body for ANY error; Kafka
# answers v0 only for UNSUPPORTED_VERSION (other errors keep the asked version),
# so the generic decoder is called and the version chosen here.
_decode_body = ApiMessage.__dict__["decode"].__func__


class SaslLoginError(ConnectionError):
    """The other broker refused this broker's SASL login."""


class CorrelationMismatch(ConnectionError):
    """A response whose correlation id is not the oldest pending request's."""


class _Answer(LateAnswer):
    """The answer to one request, awaited by the task that sent it.

    An asyncio future wakes its awaiting task with ``call_soon``: the task runs on a later
    turn of the loop, after every other callback and connection that turn holds.  Awaited,
    an ``_Answer`` gives asyncio's Task itself to wait on (the Task accepts any object that
    follows the future protocol: ``_asyncio_future_blocking``, ``get_loop``,
    ``add_done_callback`` with a context, ``result``, ``cancel``), so the task is stepped
    inside ``set_result`` / ``set_exception`` (a ``LateAnswer``'s callbacks run there).  A
    task can only be stepped while no other task runs, so an answer given from inside a
    task wakes its awaiting task the asyncio way, with ``call_soon``.  A cancelled answer
    is one whose error is CancelledError."""

    __slots__ = ("_loop", "_asyncio_future_blocking")

    def __init__(self, loop: asyncio.AbstractEventLoop) -> None:
        super().__init__()
        self._loop = loop
        self._asyncio_future_blocking = False

    def get_loop(self) -> asyncio.AbstractEventLoop:
        return self._loop

    def cancelled(self) -> bool:
        return self.done() and isinstance(self.exception(), asyncio.CancelledError)

    def cancel(self, msg=None) -> bool:
        if self.done():
            return False
        self.set_exception(asyncio.CancelledError(msg))
        return True

    def __await__(self):
        if not self.done():
            self._asyncio_future_blocking = True
            yield self
        return self.result()

    __iter__ = __await__

    def _hand_over(self, callback, context) -> None:
        if _current_task() is None:
            super()._hand_over(callback, context)
        else:
            self._loop.call_soon(callback, self, context=context)


class _Pending:
    """A request sent and not answered yet.  ``decode_body``: the request's own decoder of
    its answer's body (``decode_response``), which may give None to leave it to
    kafka-python's ``response_cls``."""

    __slots__ = ("correlation_id", "response_cls", "future", "decode_body")

    def __init__(self, correlation_id: int, response_cls: type, future: _Answer,
                 decode_body=None) -> None:
        self.correlation_id = correlation_id
        self.response_cls = response_cls
        self.future = future
        self.decode_body = decode_body


# What a connection made without its own ``security`` uses (None: PLAINTEXT).
_inter_broker_security: ClientSecurity | None = None


def use_inter_broker_security(security: ClientSecurity | None) -> None:
    """Every BrokerConnection made from now on without a ``security`` of its own uses
    ``security`` (the broker's inter-broker settings; None: PLAINTEXT)."""
    global _inter_broker_security
    _inter_broker_security = security


class BrokerConnection:
    """One TCP connection; ``connect`` once, ``send`` any number of times."""

    def __init__(self, client_id: str | None = "kafkapy", request_timeout_s: float = 30.0,
                 security: ClientSecurity | None = None, links: Links | None = None) -> None:
        self.client_id = client_id
        self._links = links
        self._held: list[bytes] | None = None     # requests waiting for the link to come back
        self._release: asyncio.Task | None = None
        self._held_answers: list[bytes] | None = None   # responses read while it is cut
        self._hand_over: asyncio.Task | None = None
        self.security = security if security is not None else _inter_broker_security
        self.request_timeout_s = request_timeout_s
        self.host: str | None = None
        self.port: int | None = None
        self._stream: _ResponseStream | None = None
        self._pending: collections.deque[_Pending] = collections.deque()
        self._next_correlation = 0
        self._closed_error: ConnectionError | None = None

    @property
    def connected(self) -> bool:
        return self._stream is not None and self._closed_error is None

    async def connect(self, host: str, port: int, timeout_s: float = 30.0) -> None:
        """Open the socket; ``asyncio.TimeoutError`` or ``ConnectionError`` on failure."""
        if self._stream is not None:
            raise RuntimeError("BrokerConnection.connect called twice")
        self.host, self.port = host, port
        security = self.security
        tls = {}
        if security is not None and security.ssl_context is not None:
            tls = {"ssl": security.ssl_context, "server_hostname": host}
        if self._links is not None and not self._links.reachable(host, port):
            # as a SYN into a partition: nothing until the link is back or the timeout
            started = asyncio.get_running_loop().time()
            await asyncio.wait_for(self._links.wait_reachable(host, port), timeout_s)
            timeout_s = max(0.001, timeout_s - (asyncio.get_running_loop().time() - started))
        try:
            transport, stream = await asyncio.wait_for(asyncio.get_running_loop().create_connection(
                lambda: _ResponseStream(self._frame_received, self._lost), host, port, **tls),
                timeout_s)
        except asyncio.TimeoutError:
            raise
        except ConnectionError:
            raise
        except OSError as exc:  # EHOSTUNREACH, ENETUNREACH, DNS failure, TLS refusal...: one type
            raise ConnectionError(f"cannot connect to {host}:{port}: {exc}") from exc
        sock = transport.get_extra_info("socket")
        if sock is not None:
            sock.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)
        self._stream = stream
        self._closed_error = None
        if security is not None and security.sasl_mechanism:
            try:
                await asyncio.wait_for(self._sasl_login(security), timeout_s)
            except BaseException:
                self.close()
                raise

    async def _sasl_login(self, security: ClientSecurity) -> None:
        """SaslHandshake v1 and SaslAuthenticate v2 (Kafka's SaslClientAuthenticator)."""
        mechanism = security.sasl_mechanism
        answer = await self.send(REQUESTS[17][1](mechanism=mechanism))
        if answer.error_code:
            raise SaslLoginError(f"{self.host}:{self.port} does not enable SASL mechanism "
                                 f"{mechanism} (error {answer.error_code}, enabled: "
                                 f"{', '.join(answer.mechanisms)})")
        client = client_for(mechanism, security.username, security.password)
        token = client.first()
        while True:
            answer = await self.send(REQUESTS[36][2](auth_bytes=token))
            if answer.error_code:
                raise SaslLoginError(f"SASL login to {self.host}:{self.port} failed: "
                                     f"{answer.error_message}")
            try:
                token = client.evaluate(bytes(answer.auth_bytes))
            except SaslAuthenticationError as err:
                raise SaslLoginError(f"SASL login to {self.host}:{self.port} failed: {err}") from None
            if client.complete:
                return

    async def send(self, request, client_id: str | None = None, timeout_s: float | None = None):
        """Send a versioned request instance; returns the decoded versioned response."""
        if self._closed_error is not None:
            raise ConnectionError(str(self._closed_error))
        if self._stream is None:
            raise ConnectionError("not connected")
        api_key, version = request.API_KEY, request.API_VERSION
        correlation_id = self._correlation_id()
        frame = _encode(request, correlation_id, self.client_id if client_id is None else client_id)
        expects_response = request.expect_response()
        pending = None
        if expects_response:
            future = _Answer(asyncio.get_running_loop())
            pending = _Pending(correlation_id, _response_class(api_key, version), future,
                               getattr(request, "decode_response", None))
            # Registered before writing so the answer can never outrun its entry.
            self._pending.append(pending)
        if self._links is not None and (self._held is not None
                                        or not self._links.reachable(self.host, self.port)):
            self._hold(frame)
        else:
            self._stream.transport.write(frame)
            if self._stream.paused:
                await self._stream.drain()   # a lost connection has failed the request already
        if pending is None:
            if self._closed_error is not None:
                raise ConnectionError(str(self._closed_error))
            return None
        timeout = self.request_timeout_s if timeout_s is None else timeout_s
        if timeout is None:
            return await pending.future
        # A timer on the future itself, not asyncio.wait_for: that adds a second future
        # and one more turn of the loop to every answer.
        expiry = asyncio.get_running_loop().call_later(timeout, self._time_out, pending,
                                                       api_key, version, timeout)
        try:
            # A cancelled caller cancels only its future: its answer is still
            # read and dropped, so the connection stays in step.
            return await pending.future
        finally:
            expiry.cancel()

    def _time_out(self, pending, api_key: int, version: int, timeout: float) -> None:
        """A request unanswered in time: it fails with TimeoutError, and the connection
        (every other request on it) with ConnectionError."""
        if pending.future.done():
            return
        self._fail(ConnectionError(
            f"request {api_key} v{version} to {self.host}:{self.port} timed out after {timeout}s"),
            timed_out=pending)

    def _hold(self, frame: bytes) -> None:
        """Keep ``frame`` until the link is back (after the frames held before it)."""
        if self._held is None:
            self._held = []
            self._release = asyncio.get_running_loop().create_task(self._write_held())
        self._held.append(frame)

    async def _write_held(self) -> None:
        await self._links.wait_reachable(self.host, self.port)
        held, self._held, self._release = self._held, None, None
        if held and self._closed_error is None:
            self._stream.transport.writelines(held)

    def close(self) -> None:
        """Close the socket; pending requests fail with ConnectionError."""
        self._fail(ConnectionError("connection closed by client"))

    async def wait_closed(self) -> None:
        if self._stream is not None:
            await asyncio.shield(self._stream.closed)

    def _correlation_id(self) -> int:
        self._next_correlation = (self._next_correlation + 1) % _MAX_CORRELATION
        return self._next_correlation

    def _frame_received(self, frame: memoryview) -> None:
        """A response frame, in arrival order: dispatched, or held while the link is cut."""
        if self._closed_error is not None:
            return
        links = self._links
        if links is not None and (self._held_answers is not None
                                  or not links.reachable(self.host, self.port)):
            self._hold_answer(frame)
            return
        self._deliver(frame)

    def _deliver(self, frame: memoryview) -> None:
        try:
            self._dispatch(frame)
        except ConnectionError as exc:
            self._fail(exc)

    def _hold_answer(self, frame: memoryview) -> None:
        """Keep ``frame`` (and stop reading) until the link is back, then hand the held
        responses over in order."""
        if self._held_answers is None:
            self._held_answers = []
            self._stream.transport.pause_reading()
            self._hand_over = asyncio.get_running_loop().create_task(self._deliver_held())
        self._held_answers.append(frame)

    async def _deliver_held(self) -> None:
        await self._links.wait_reachable(self.host, self.port)
        held, self._held_answers, self._hand_over = self._held_answers, None, None
        for frame in held:
            if self._closed_error is not None:
                return
            self._deliver(frame)
        if self._closed_error is None:
            self._stream.transport.resume_reading()

    def _lost(self, exc: Exception | None) -> None:
        if exc is None:
            self._fail(ConnectionError(f"connection to {self.host}:{self.port} closed by the broker"))
        else:
            self._fail(exc if isinstance(exc, ConnectionError) else ConnectionError(str(exc)))

    def _dispatch(self, frame: memoryview) -> None:
        correlation_id = _CORRELATION.unpack_from(frame, 0)[0]
        if not self._pending or self._pending[0].correlation_id != correlation_id:
            expected = self._pending[0].correlation_id if self._pending else None
            raise CorrelationMismatch(
                f"response correlation id {correlation_id} from {self.host}:{self.port}, "
                f"expected {expected}")
        pending = self._pending.popleft()
        if pending.future.done():
            return
        try:
            response = _decode(pending.response_cls, frame, pending.decode_body)
        except Exception as exc:  # a body we cannot read fails that request only: framing is intact
            _log.warning("undecodable response", host=self.host, port=self.port,
                         response=pending.response_cls.__name__, error=repr(exc))
            pending.future.set_exception(exc)
            return
        pending.future.set_result(response)

    def _fail(self, error: ConnectionError, timed_out: _Pending | None = None) -> None:
        """Close the connection; every pending request fails with ConnectionError
        (``timed_out`` with TimeoutError).  The requests fail last: their tasks may resume
        right there (``_Answer``) and must find the connection closed."""
        if self._closed_error is None:
            self._closed_error = error
        failed, self._pending = self._pending, collections.deque()
        if self._stream is not None:
            self._stream.transport.close()
        release, self._release, self._held = self._release, None, None
        hand_over, self._hand_over, self._held_answers = self._hand_over, None, None
        for task in (release, hand_over):
            if task is not None and task is not _current_task():
                task.cancel()
        for pending in failed:
            if not pending.future.done():
                pending.future.set_exception(asyncio.TimeoutError() if pending is timed_out
                                             else ConnectionError(str(error)))


class _ResponseStream(asyncio.Protocol):
    """A BrokerConnection's socket: what arrives is cut into response frames (int32
    size, then that many bytes), each handed to ``on_frame`` in order, with no task
    woken per chunk; ``on_lost(exc)`` once when the connection ends (None: the peer
    closed it, mid-frame or not).  ``drain`` waits while the transport's write buffer
    is over its high-water mark."""

    def __init__(self, on_frame: Callable[[memoryview], None],
                 on_lost: Callable[[Exception | None], None]) -> None:
        self._on_frame = on_frame
        self._on_lost = on_lost
        # Frames are views of the bytes read, not copies: a fetch answer's records go
        # from the read to the log.
        self._reads = Reads()
        self._writable: asyncio.Future | None = None   # set while writing is paused
        self.transport: asyncio.Transport | None = None
        self.closed = asyncio.get_running_loop().create_future()

    def connection_made(self, transport) -> None:
        self.transport = transport

    def data_received(self, data: bytes) -> None:
        reads = self._reads
        if not reads.add(data):
            return          # a frame still arriving: nothing to cut yet
        view = reads.joined()
        frames, pos, have = [], 0, len(view)
        while True:
            if have - pos < 4:
                wanted = 4
                break
            size = _SIZE.unpack_from(view, pos)[0]
            if size < 4:
                self.transport.close()
                self._lose(ConnectionError(f"bad response size {size}"))
                return
            end = pos + 4 + size
            if end > have:
                wanted = end - pos
                break
            frames.append(view[pos + 4:end])
            pos = end
        reads.keep(view, pos, wanted)
        for frame in frames:
            self._on_frame(frame)

    def eof_received(self) -> bool:
        return False        # the transport closes; connection_lost follows

    def pause_writing(self) -> None:
        if self._writable is None:
            self._writable = asyncio.get_running_loop().create_future()

    def resume_writing(self) -> None:
        writable, self._writable = self._writable, None
        if writable is not None and not writable.done():
            writable.set_result(None)

    @property
    def paused(self) -> bool:
        """Whether writing is paused (the transport's buffer is over its high-water mark)."""
        return self._writable is not None

    async def drain(self) -> None:
        if self._writable is not None:
            await asyncio.shield(self._writable)

    def connection_lost(self, exc: Exception | None) -> None:
        self.resume_writing()
        self._lose(exc)

    def _lose(self, exc: Exception | None) -> None:
        if not self.closed.done():
            self.closed.set_result(None)
            self._on_lost(exc)


class SharedConnections:
    """One connection per broker, opened on first use and shared by every caller meanwhile
    (concurrent callers await the same connect); a connection that closed, failed to open,
    or whose broker moved to another address is replaced at the next ``get``."""

    def __init__(self, client_id: str, connect_timeout_s: float,
                 request_timeout_s: float, links: Links | None = None) -> None:
        self._client_id = client_id
        self._links = links
        self._connect_timeout_s = connect_timeout_s
        self._request_timeout_s = request_timeout_s
        self._by_node: dict[int, asyncio.Future] = {}

    async def get(self, node_id: int, host: str, port: int) -> BrokerConnection:
        pending = self._by_node.get(node_id)
        if pending is not None and pending.done():
            conn = None if pending.cancelled() or pending.exception() else pending.result()
            if conn is None or not conn.connected or (conn.host, conn.port) != (host, port):
                self.drop(node_id)
                pending = None
        if pending is None:
            pending = asyncio.ensure_future(self._connect(host, port))
            self._by_node[node_id] = pending
        return await asyncio.shield(pending)

    async def _connect(self, host: str, port: int) -> BrokerConnection:
        conn = BrokerConnection(client_id=self._client_id,
                                request_timeout_s=self._request_timeout_s, links=self._links)
        await conn.connect(host, port, self._connect_timeout_s)
        return conn

    def drop(self, node_id: int) -> None:
        """Close (or stop opening) the connection to ``node_id``."""
        pending = self._by_node.pop(node_id, None)
        if pending is None:
            return
        if pending.done() and not pending.cancelled() and pending.exception() is None:
            pending.result().close()
        elif not pending.done():
            pending.cancel()

    def nodes(self) -> set[int]:
        """The brokers with a connection open or opening."""
        return set(self._by_node)

    def close(self) -> None:
        for node_id in list(self._by_node):
            self.drop(node_id)


def _current_task() -> asyncio.Task | None:
    try:
        return asyncio.current_task()
    except RuntimeError:
        return None


def _decode(response_cls: type, frame: memoryview, decode_body=None):
    """Header v0/v1 skipped without copying the frame; then the versioned body, by
    ``decode_body`` when it reads it, else by kafka-python."""
    view = memoryview(frame)
    api_key, version = response_cls.API_KEY, response_cls._class_version
    correlation_id = _CORRELATION.unpack_from(view, 0)[0]
    pos = 4
    if api_key == _API_VERSIONS:
        if len(view) >= 6 and _INT16.unpack_from(view, 4)[0] == ErrorCode.UNSUPPORTED_VERSION:
            version = 0
    elif is_flexible(api_key, version):
        pos = skip_tagged_fields(view, pos)
    if decode_body is not None:
        response = decode_body(view[pos:])
        if response is not None:
            return response
    response = _decode_body(response_cls, view[pos:], version=version)
    response._header = ResponseHeader(correlation_id=correlation_id)
    return response


def _encode(request, correlation_id: int, client_id: str | None) -> bytes:
    """Frame = size, header v1/v2, body; the request instance is not modified."""
    api_key, version = request.API_KEY, request.API_VERSION
    head = _request_header(api_key, version, correlation_id, client_id)
    body = request.encode()
    return b"".join((_SIZE.pack(len(head) + len(body)), head, body))


def _request_header(api_key: int, version: int, correlation_id: int,
                    client_id: str | None) -> bytes:
    """Header v1, or v2 (v1 and an empty tagged-field count) for flexible versions; the
    client id stays a non-compact nullable string in both (Kafka's RequestHeader)."""
    tail = _HEADER_TAILS.get((api_key, version, client_id))
    if tail is None:
        tail = _header_tail(api_key, version, client_id)
    return _KEY_VERSION_CORRELATION.pack(api_key, version, correlation_id) + tail


def _header_tail(api_key: int, version: int, client_id: str | None) -> bytes:
    """What follows the correlation id in every header of (api, version, client id): the
    client id, and the empty tagged fields of a flexible version; kept for the next."""
    if client_id is None:
        tail = _INT16.pack(-1)
    else:
        name = client_id.encode()
        tail = _INT16.pack(len(name)) + name
    if is_flexible(api_key, version):
        tail += b"\x00"
    if len(_HEADER_TAILS) >= _MEMO_LIMIT:
        _HEADER_TAILS.clear()
    _HEADER_TAILS[(api_key, version, client_id)] = tail
    return tail


def _response_class(api_key: int, version: int) -> type:
    """kafka-python's response class of (api, version), looked up once (its versioned
    lookup runs a class property and a subscript per call)."""
    cls = _RESPONSE_CLASSES.get((api_key, version))
    if cls is None:
        cls = _RESPONSE_CLASSES[(api_key, version)] = RESPONSES[api_key][version]
    return cls
