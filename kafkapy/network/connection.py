"""One client connection: Kafka framing, in-order pipelined responses, flow control.

Framing: every request and response is an int32 size followed by that many
bytes.  Invariants:
- responses leave in the order their requests arrived, whatever order the
  handlers finish in (a queue of slots; only the ready head is written);
- at most ``max_inflight`` requests of a connection are being handled at once:
  reading pauses at the bound and resumes as responses drain;
- fairness: one event-loop callback handles at most ``_FRAMES_PER_TURN`` frames of
  a connection; the rest wait for a later turn (``call_soon``, behind every other
  ready callback) and reading pauses while they wait, as Kafka mutes a channel
  while its request is being handled.  A client pipelining thousands of requests
  thus takes its turn like everyone else instead of holding the loop;
- when the transport's write buffer is over its high-water mark, no new
  request is started until it drains (``pause_writing``/``resume_writing``);
- while frozen (``freeze``: its listener is paused) nothing is read, handled or
  written; the answers finished meanwhile wait in their slots, in order;
- a frame larger than socket.request.max.bytes, an unknown API key, an
  unsupported version of any API but ApiVersions, a body that does not
  decode, or a null in a field the schema says is not nullable closes this
  connection only, with one warning line;
- on a SASL listener the connection's ``SaslGate`` (``kafkapy.security.gate``) sees
  every frame first: before authentication only ApiVersions, SaslHandshake and
  SaslAuthenticate (or raw v0 tokens) pass, anything else closes the connection, and a
  failed authentication closes it right after its error answer; with no gate
  (PLAINTEXT, SSL) the path is one attribute test;
- every request's context carries the connection's ``Session`` (principal: ANONYMOUS,
  the SSL client certificate's distinguished name, or the SASL user; the peer's address
  on any listener other than the default PLAINTEXT one, and on every one with an
  authorizer, whose host-specific ACLs need it);
- responses carrying file ranges (zero-copy Fetch) are sent with
  ``os.sendfile`` on a duplicate of the socket's descriptor once the
  transport's own buffer is empty; everything queued behind them waits, so
  order holds.  uvloop has no ``loop.sendfile``, hence this path;
- memory: thousands of mostly idle connections are the normal case, so a connection is a
  ``__slots__`` object whose response and file queues are the shared empty tuple while
  empty (a deque only while something waits), and its read buffer is emptied after each
  frame; the listener (``kafkapy.network.server``) counts it against the connection quotas
  from accept to ``connection_lost`` (``address`` is set while it holds its slot);
- close callbacks (``RequestContext.on_close``): each runs once, from ``connection_lost``
  (the event loop's own call, whoever closed the connection), or soon after it is registered
  if the connection is already lost; one that raises is logged in one line and the others
  still run.  A connection without any holds the shared empty tuple, so ``connection_lost``
  pays one test for them.  The listener shutting down drops them (``drop_close_callbacks``)
  before it closes its connections: the broker is stopping, and the components they
  would call stop right after;
- metrics: a request's time runs from its dispatch to its answer handed to the transport
  and is observed once, with its count by version, on its API's cached ``ApiStats``
  (``kafkapy.metrics.counters``: Kafka's RequestsPerSec and TotalTimeMs);
- client quotas (KIP-219): a handler whose client went over its quota calls
  ``ctx.throttle(ms)``; its answer (carrying throttle_time_ms) still goes out, then no frame
  is read or handled until the throttle time has passed;
- the request quota: while the listener's ``request_quota`` is enabled, each request's
  handling is timed on the loop (``kafkapy.api.request_timer``: the handler call and each
  step of its coroutine) and the quota sees the answer before it is encoded
  (``completed``); disabled, that is one test per request;
- a handler's answer that comes later is sent when it comes: an asyncio future's on the
  loop turn after it resolves, a ``LateAnswer``'s (``kafkapy.api.late_answer``: a parked
  Fetch, a client's acks=-1 Produce) inside the code that gives it (the append that ends
  a fetch's wait, the follower fetch that moves the high watermark), so it does not wait
  behind the rest of that turn.
"""
from __future__ import annotations

import asyncio
import collections
import inspect
import os
import socket
import struct
from collections.abc import Callable

import structlog

from kafkapy.api.context import CloseConnection, RequestContext
from kafkapy.api.late_answer import LateAnswer
from kafkapy.api.principal import ANONYMOUS, PLAINTEXT_SESSION, Session, host_address
from kafkapy.api.request_timer import RequestTimer, timed
from kafkapy.metrics import counters as metrics
from kafkapy.network.framing import Reads
from kafkapy.network.zero_copy import (FileRange, PartsResponse, ZeroCopyResponse, framed_parts,
                                       materialize, splice)
from kafkapy.protocol.headers import (
    API_VERSIONS_KEY, peek_api, read_request_header)
from kafkapy.protocol.nullability import null_field
from kafkapy.security import gate as sasl_gate
from kafkapy.security.ssl import peer_principal

_log = structlog.get_logger("kafkapy.network")
_SIZE = struct.Struct(">i")
_NO_RESPONSE = b""
# Frames one connection may have handled per event-loop turn.  Small enough that a
# pipelining client cannot hold the loop; large enough that a pipelining producer
# (librdkafka keeps up to 5 requests in flight) is not slowed by extra turns.
_FRAMES_PER_TURN = 4
_EMPTY = ()
_DROPPED = ("dropped",)     # close callbacks: none will run any more
_ANSWERED_POLL_S = 0.05     # how often a failed authentication checks its answers left


class _Slot:
    __slots__ = ("payload", "stats")

    def __init__(self) -> None:
        self.payload: bytes | list | None = None
        # The ApiStats the request's time (from ``ctx.received``) is observed on (None for
        # a slot that is not a request's: an answer queued ready).
        self.stats = None


class KafkaConnection(asyncio.Protocol):
    # Thousands of mostly idle connections: no per-instance __dict__.
    __slots__ = ("_server", "_services", "_max_frame", "_max_inflight", "_reads", "_slots",
                 "_transport", "_reading_paused", "_writing_paused", "_turn_scheduled",
                 "_closed", "_zero_copy", "_file_parts", "_sock", "peer", "address",
                 "last_active", "session", "_gate", "_close_callbacks", "_throttled",
                 "_frozen")

    def __init__(self, server, address: str | None = None, peer: str = "?") -> None:
        self._server = server
        # The peer's address while it holds a connection-quota slot (the server gives the
        # slot back once and clears this).
        self.address = address
        self._services = server.services
        self._max_frame = server.max_request_bytes
        self._max_inflight = server.max_inflight
        # What was read and not yet handled: frames are views of the reads, so a request
        # reaches its decoder without a copy.
        self._reads = Reads()
        # Both queues are the shared empty tuple while empty (an idle connection holds no
        # deque: ~0.7 KiB each), a deque while something waits in them.
        self._slots: collections.deque[_Slot] | tuple = _EMPTY
        self._transport: asyncio.Transport | None = None
        self._reading_paused = False
        self._writing_paused = False
        self._turn_scheduled = False
        self._throttled = None      # the timer ending a quota's mute (KIP-219), or None
        self._frozen = False        # the listener is paused (``freeze``)
        self._closed = False
        self._zero_copy = server.zero_copy
        self._file_parts: collections.deque | tuple = _EMPTY
        self._sock: socket.socket | None = None     # for sendfile (see _socket)
        # "host:port" as accepted (the listener has it: no getpeername per connection)
        self.peer = peer
        self.last_active = 0.0
        self.session = PLAINTEXT_SESSION
        self._gate: sasl_gate.SaslGate | None = None
        # token -> callback while some are registered; None once they have run, _DROPPED
        # once they never will.
        self._close_callbacks: dict | tuple | None = _EMPTY

    # -- asyncio.Protocol ---------------------------------------------------
    def connection_made(self, transport) -> None:
        self._transport = transport
        if self.peer == "?":
            self.peer = _peer_text(transport.get_extra_info("peername"))
        self.last_active = self._server.now()
        protocol = self._server.security_protocol
        # Once per connection: ACLs name hosts, so with an authorizer even the default
        # PLAINTEXT listener's session carries the peer's address.
        if (protocol != "PLAINTEXT" or self._server.listener not in (None, "PLAINTEXT")
                or self._server.authorizer_enabled):
            peer = transport.get_extra_info("peername")
            try:
                self._secure_session(transport, peer, protocol)
            except Exception:   # never serve a connection whose security is not set up
                _log.exception("connection set-up failed", peer=self.peer)
                self.close()
        self._server.connection_opened(self)

    def _secure_session(self, transport, peer, protocol: str) -> None:
        """The session of a non-default listener: the SSL certificate's principal, and
        on SASL listeners the gate every frame passes until authentication completes."""
        principal = ANONYMOUS
        if protocol == "SSL":
            principal = peer_principal(transport.get_extra_info("ssl_object"))
        self.session = Session(principal, host_address(peer[0]) if peer else "",
                               self._server.listener or "PLAINTEXT", protocol)
        if protocol in ("SASL_PLAINTEXT", "SASL_SSL"):
            self._gate = sasl_gate.SaslGate(self._server.config, self._server.listener,
                                            self._authenticated_as)
            # Kafka reads authentication frames with sasl.server.max.receive.size
            self._max_frame = min(self._max_frame, self._gate.max_receive)

    def _authenticated_as(self, principal) -> None:
        self._max_frame = self._server.max_request_bytes
        s = self.session
        self.session = Session(principal, s.client_address, s.listener_name, s.security_protocol)

    def connection_lost(self, exc) -> None:
        self._closed = True
        self._drop_file_parts()
        self._server.connection_closed(self)
        callbacks = self._close_callbacks
        if callbacks is not _DROPPED:
            self._close_callbacks = None
            if callbacks:
                self._run_close_callbacks(callbacks)

    def data_received(self, data: bytes) -> None:
        self.last_active = self._server.now()
        if self._reads.add(data):
            self._process_frames()

    def eof_received(self):
        return False

    def pause_writing(self) -> None:
        self._writing_paused = True
        self._update_reading()

    def resume_writing(self) -> None:
        self._writing_paused = False
        self._update_reading()
        self._schedule_turn()

    # -- framing --------------------------------------------------------------
    def _process_frames(self) -> None:
        self._turn_scheduled = False
        reads = self._reads
        if not reads or self._closed or self._busy():
            self._update_reading()
            return
        view = reads.joined()
        have = len(view)
        consumed = 0
        handled = 0
        wanted = 0      # stopped by a bound or the turn: what comes next tries again
        while not self._closed and not self._busy():
            if have - consumed < 4:
                wanted = 4
                break
            if handled == _FRAMES_PER_TURN:
                self._schedule_turn()
                break
            (size,) = _SIZE.unpack_from(view, consumed)
            if size < 0 or size > self._max_frame:
                self._bad_request("frame size out of range", size=size,
                                  limit=self._max_frame)
                return
            end = consumed + 4 + size
            if have < end:
                wanted = end - consumed
                break
            frame = view[consumed + 4:end]
            consumed = end
            handled += 1
            try:
                self._handle_frame(frame)
            except Exception:
                _log.exception("request failed", peer=self.peer)
                self.close()
                return
        if self._reads is reads:    # (a failed authentication drops what was read)
            reads.keep(view, consumed, wanted)
        self._update_reading()

    def _schedule_turn(self) -> None:
        """Handle the rest of the buffer in a later loop turn, after everyone else's."""
        if not self._turn_scheduled:
            self._turn_scheduled = True
            asyncio.get_running_loop().call_soon(self._process_frames)

    def _busy(self) -> bool:
        return (self._writing_paused or len(self._slots) >= self._max_inflight
                or self._throttled is not None or self._frozen)

    def throttle(self, throttle_ms: int) -> None:
        """KIP-219: the answers keep going out, but no frame is read or handled until
        ``throttle_ms`` from now; a throttle already ending later is kept (a request's
        byte-rate and request throttles both mute it)."""
        if self._closed:
            return
        loop = asyncio.get_running_loop()
        end = loop.time() + throttle_ms / 1000.0
        if self._throttled is not None:
            if self._throttled.when() >= end:
                return
            self._throttled.cancel()
        self._throttled = loop.call_at(end, self._end_throttle)
        self._update_reading()

    def _end_throttle(self) -> None:
        self._throttled = None
        self._update_reading()
        if self._reads:
            self._schedule_turn()

    def _muted(self) -> bool:
        """Read nothing more while unhandled frames wait for their turn or a bound holds."""
        return self._turn_scheduled or self._busy()

    def _update_reading(self) -> None:
        if self._transport is None or self._closed:
            return
        should_pause = self._muted()
        if should_pause and not self._reading_paused:
            self._transport.pause_reading()
            self._reading_paused = True
        elif not should_pause and self._reading_paused:
            self._transport.resume_reading()
            self._reading_paused = False

    # -- dispatch --------------------------------------------------------------
    def _handle_frame(self, frame: memoryview) -> None:
        """One request frame: a view of the bytes read."""
        auth = None
        gate = self._gate
        if gate is not None and (gate.state is not sasl_gate.COMPLETE
                                 or gate.expires_at is not None):
            auth = self._gated(gate, frame)
            if auth is False:
                return
        if len(frame) < 8:
            self._bad_request("request shorter than its header", size=len(frame))
            return
        view = memoryview(frame)
        api_key, version, correlation_id = peek_api(view)
        spec = self._server.apis.get(api_key)
        if spec is None:
            self._bad_request("unknown API key", api_key=api_key)
            return
        if not spec.min_version <= version <= spec.max_version:
            if api_key == API_VERSIONS_KEY:
                self._queue_ready(self._server.unsupported_api_versions(correlation_id))
            else:
                self._bad_request("unsupported API version", api=spec.name, version=version,
                                  supported=f"{spec.min_version}-{spec.max_version}")
            return
        try:
            client_id, pos = read_request_header(view, api_key, version)
            request = spec.request_cls.decode(view[pos:], version=version)
        except Exception as exc:  # malformed body: Kafka closes the connection too
            self._bad_request("request does not decode", api=spec.name, version=version,
                              error=repr(exc))
            return
        null_path = null_field(request, version)
        if null_path is not None:   # Kafka's parser refuses these too
            self._bad_request("non-nullable field was serialized as null", api=spec.name,
                              version=version, field=null_path)
            return
        stats = metrics.APIS.get(api_key) or metrics.api_stats(api_key, spec.name)
        if api_key == metrics.FETCH_KEY:
            stats = metrics.fetch_stats(request, version)
        ctx = RequestContext(self._services, api_key, version, correlation_id,
                             client_id, self.peer, spec.response_cls, self._zero_copy,
                             self._server.listener, self.session, auth, self, len(frame),
                             metrics.now())
        if gate is not None and api_key == API_VERSIONS_KEY:
            gate.versions_answered()
        slot = _Slot()
        slot.stats = stats
        self._queue(slot)
        timer = None
        request_quota = self._server.request_quota
        if request_quota is not None and request_quota.enabled:
            timer = ctx.timer = RequestTimer()
            timer.start()
        try:
            result = spec.handle(ctx, request)
        except CloseConnection as reason:
            self._bad_request(str(reason) or "closed by handler", api=spec.name)
            return
        except Exception:
            _log.exception("handler failed", api=spec.name, version=version, peer=self.peer)
            self.close()
            return
        if timer is not None:
            timer.stop()
        if timer is None and isinstance(result, LateAnswer):
            # sent inside the code that gives it (see LateAnswer), not on a later turn
            result.add_done_callback(lambda answer: self._finished(slot, ctx, spec, answer))
        elif inspect.isawaitable(result):
            future = asyncio.ensure_future(result if timer is None else timed(result, timer))
            future.add_done_callback(lambda f: self._finished(slot, ctx, spec, f))
        else:
            self._complete(slot, ctx, result)

    def _gated(self, gate, frame):
        """The gate's verdict on a frame: False (handled or closed), or the
        ``connection_auth`` for the dispatch (None for an ordinary request)."""
        api_key = int.from_bytes(frame[:2], "big", signed=True) if len(frame) >= 2 else -1
        verdict = gate.admit(api_key, len(frame))
        if verdict == sasl_gate.SERVE:
            return None
        if verdict == sasl_gate.SERVE_AUTH:
            version = int.from_bytes(frame[2:4], "big", signed=True) if len(frame) >= 4 else 0
            return gate.auth_for(version)
        if verdict == sasl_gate.RAW_TOKEN:
            answer = gate.raw_token(bytes(frame))
            if answer is None:   # v0 has no error answer; the close is delayed all the same
                self._close_after_failed_authentication()
            else:
                self._queue_ready(answer)
            return False
        self._bad_request(gate.close_reason, api_key=api_key)
        return False

    def _finished(self, slot: _Slot, ctx, spec, future: asyncio.Future | LateAnswer) -> None:
        try:
            response = future.result()
        except asyncio.CancelledError:
            self.close()
            return
        except CloseConnection as exc:
            self._bad_request(str(exc) or "closed by handler", api=spec.name)
            return
        except Exception as exc:
            _log.error("handler failed", api=spec.name, version=ctx.api_version,
                       peer=self.peer, error=repr(exc), exc_info=exc)
            self.close()
            return
        self._complete(slot, ctx, response)

    def _complete(self, slot: _Slot, ctx: RequestContext, response) -> None:
        if ctx.timer is not None:
            self._server.request_quota.completed(ctx, response)
        if response is None:
            slot.payload = _NO_RESPONSE
        else:
            try:
                slot.payload = encode_response(ctx, response, self._zero_copy)
            except Exception:
                _log.exception("response does not encode", api_key=ctx.api_key,
                               version=ctx.api_version, peer=self.peer)
                self.close()
                return
        self._flush()
        # Kafka's RequestsPerSec and TotalTimeMs (here: read -> answer handed to the socket)
        slot.stats.observe(ctx.api_version, (metrics.now() - ctx.received) * 1000.0)
        if ctx.connection_auth is not None and self._gate.state is sasl_gate.FAILED:
            self._close_after_failed_authentication(slot)

    def _close_after_failed_authentication(self, failed: _Slot | None = None) -> None:
        """Kafka sends the error answer, reads nothing more, and closes the connection
        ``connection.failed.authentication.delay.ms`` later (slowing password guessing).
        Answers queued ahead of the failed request (a re-authentication behind a long-poll
        Fetch) still leave first, as Kafka had sent them before reading the handshake;
        requests read after it are never answered, as Kafka never reads them."""
        _log.info("closing connection: " + self._gate.close_reason, peer=self.peer)
        if self._transport is None:
            self.close()
            return
        self._max_inflight = 0      # busy from now on: no frame is handled, reading stays paused
        self._reads = Reads()
        self._update_reading()
        while failed is not None and self._slots and self._slots[-1] is not failed:
            self._slots.pop()
        self._flush()
        delay_ms = self._gate.failed_close_delay_ms
        if delay_ms <= 0:
            self._close_once_answered()
        else:
            asyncio.get_running_loop().call_later(delay_ms / 1000.0, self._close_once_answered)

    def _close_once_answered(self) -> None:
        if self._closed:
            return
        if self.has_inflight():     # an answer ahead of the failure is still on its way
            asyncio.get_running_loop().call_later(_ANSWERED_POLL_S, self._close_once_answered)
            return
        self.close()

    def _queue(self, slot: _Slot) -> None:
        if not self._slots:
            self._slots = collections.deque()
        self._slots.append(slot)

    def _queue_ready(self, payload: bytes) -> None:
        slot = _Slot()
        slot.payload = payload
        self._queue(slot)
        self._flush()

    def _flush(self) -> None:
        slots = self._slots
        if self._closed:
            self._slots = _EMPTY
            return
        if self._frozen:
            return      # the answers wait in their slots until ``freeze(False)``
        ready = []
        while slots and slots[0].payload is not None:
            payload = slots.popleft().payload
            if isinstance(payload, list) or self._file_parts:
                self._write_now(ready)
                ready = []
                if not self._file_parts:
                    self._file_parts = collections.deque()
                self._file_parts.extend(payload if isinstance(payload, list) else (payload,))
            elif payload:
                ready.append(payload)
        self._write_now(ready)
        if not slots:
            self._slots = _EMPTY
        if self._file_parts:
            self._pump_files()
        if self._reading_paused and not self._busy():
            self._update_reading()
            if self._reads:
                self._schedule_turn()

    def _write_now(self, ready: list) -> None:
        if len(ready) == 1:
            self._transport.write(ready[0])
        elif ready:
            self._transport.writelines(ready)

    # -- zero-copy sending -----------------------------------------------------------
    def _pump_files(self) -> None:
        """Send queued parts in order; file ranges with os.sendfile when the buffer is empty."""
        parts = self._file_parts
        transport = self._transport
        while parts and not self._closed:
            part = parts[0]
            if not isinstance(part, FileRange):
                parts.popleft()
                if parts and isinstance(parts[0], FileRange) and \
                        not transport.get_write_buffer_size():
                    self._send_before_file(part)
                else:
                    transport.write(part)
                continue
            if transport.get_write_buffer_size():
                self._wait_writable()
                return
            try:
                sent = os.sendfile(self._socket_fd(), part.fd, part.position, part.remaining)
            except BlockingIOError:
                self._wait_writable()
                return
            except OSError as exc:
                _log.warning("sendfile failed; closing connection", peer=self.peer, error=repr(exc))
                self.close()
                return
            if sent == 0:
                _log.warning("segment shorter than its fetch range", peer=self.peer)
                self.close()
                return
            metrics.BROKER.sendfile_bytes += sent
            part.position += sent
            part.remaining -= sent
            if part.remaining == 0:
                part.close()
                parts.popleft()
        if not parts and self._sock is not None:
            asyncio.get_running_loop().remove_writer(self._sock.fileno())

    def _send_before_file(self, part: bytes) -> None:
        """The bytes before a file range, sent with MSG_MORE: the kernel holds them for the
        file's bytes, so they leave together and the reader is not woken for a frame's
        first few bytes alone.  What the socket does not take goes to the transport."""
        try:
            sent = self._socket().send(part, socket.MSG_MORE)
        except OSError:
            sent = 0    # full (or failing: the transport's write meets and reports it)
        if sent < len(part):
            self._transport.write(memoryview(part)[sent:])

    def _socket_fd(self) -> int:
        return self._socket().fileno()

    def _socket(self) -> socket.socket:
        """The connection's socket for sendfile and MSG_MORE sends: a duplicate of the
        transport's (the transport keeps its own), closed with the connection."""
        if self._sock is None:
            fd = os.dup(self._transport.get_extra_info("socket").fileno())
            self._sock = socket.socket(fileno=fd)
        return self._sock

    def _wait_writable(self) -> None:
        asyncio.get_running_loop().add_writer(self._socket_fd(), self._on_writable)

    def _on_writable(self) -> None:
        asyncio.get_running_loop().remove_writer(self._sock.fileno())
        self._pump_files()
        if not self._file_parts:
            self._flush()

    def _drop_file_parts(self) -> None:
        for part in self._file_parts:
            if isinstance(part, FileRange):
                part.close()
        self._file_parts = _EMPTY
        if self._sock is not None:
            try:
                asyncio.get_running_loop().remove_writer(self._sock.fileno())
            except RuntimeError:
                pass
            self._sock.close()
            self._sock = None

    # -- closing ---------------------------------------------------------------
    def on_close(self, callback: Callable[[], object]) -> Callable[[], None]:
        """Run ``callback()`` once when the connection is lost (soon, if it already is);
        answers the function that cancels it."""
        callbacks = self._close_callbacks
        if callbacks is _DROPPED:
            return _never
        if callbacks is None:
            handle = asyncio.get_running_loop().call_soon(
                self._run_close_callbacks, {None: callback})
            return handle.cancel
        if callbacks is _EMPTY:
            callbacks = self._close_callbacks = {}
        token = object()
        callbacks[token] = callback

        def cancel() -> None:
            callbacks.pop(token, None)
        return cancel

    def drop_close_callbacks(self) -> None:
        """None of the close callbacks will run, nor any registered from now on."""
        self._close_callbacks = _DROPPED

    def _run_close_callbacks(self, callbacks: dict) -> None:
        """Each in the order registered; one cancelled by an earlier one does not run."""
        for token in list(callbacks):
            callback = callbacks.pop(token, None)
            if callback is None:
                continue
            try:
                callback()
            except Exception as exc:
                _log.warning("connection close callback failed", peer=self.peer,
                             error=repr(exc))

    def freeze(self, frozen: bool) -> None:
        """While frozen, nothing is read, handled or written (as in a stopped process):
        answers made meanwhile wait in order; unfreezing writes them and reads on."""
        self._frozen = frozen
        if self._closed:
            return
        self._update_reading()
        if not frozen:
            self._flush()
            if self._reads:
                self._schedule_turn()

    def _bad_request(self, reason: str, **details) -> None:
        _log.warning("closing connection: " + reason, peer=self.peer, **details)
        self.close()

    def close(self) -> None:
        if not self._closed:
            self._closed = True
            self._slots = _EMPTY
            self._drop_file_parts()
            if self._transport is not None:
                self._transport.close()

    @property
    def closing(self) -> bool:
        return self._closed or (self._gate is not None and self._gate.state is sasl_gate.FAILED)

    @property
    def idle(self) -> bool:
        return not self._slots and not self._file_parts

    @property
    def inflight_requests(self) -> int:
        """Requests read and not answered yet (the metrics' request queue size)."""
        return sum(1 for slot in self._slots if slot.payload is None)

    def has_inflight(self) -> bool:
        return bool(self._slots) or bool(self._file_parts)


def _never() -> None:
    """The cancel of a close callback that will never run."""


def _peer_text(peer) -> str:
    return f"{peer[0]}:{peer[1]}" if peer else "?"


def encode_response(ctx: RequestContext, response, zero_copy: bool = False):
    """Frame, header (v0 or v1 by API and version) and body: bytes, or parts for sendfile.

    The response already carries its version (``ctx.response``); passing it
    again to ``encode`` would trip kafka-python's request-header bookkeeping.
    """
    if isinstance(response, PartsResponse):
        inner = response.response
        parts = framed_parts(ctx.correlation_id, inner.flexible_version_q(ctx.api_version),
                             inner.encode_parts())
        return parts if zero_copy or isinstance(parts, bytes) else materialize(parts)
    if isinstance(response, ZeroCopyResponse):
        inner = response.response
        flexible = inner.flexible_version_q(ctx.api_version)
        frame = framed_parts(ctx.correlation_id, flexible, [inner.encode()])
        if not response.slices:
            return frame
        parts = splice(frame, response.slices, flexible)
        return parts if zero_copy else materialize(parts)
    response.with_header(correlation_id=ctx.correlation_id)
    return response.encode(header=True, framed=True)

