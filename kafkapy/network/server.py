"""The listener: accepts connections within the connection quotas, tracks them, closes idle
ones, shuts down gracefully.

Accepting is this module's own loop (Kafka's Acceptor), not ``loop.create_server``: the
listening sockets are watched with ``loop.add_reader`` and each connection accepted is
handed to the loop with ``connect_accepted_socket``.  That is what lets the listener *wait*:
  - before each accept the broker's ``ConnectionQuotas`` (``kafkapy.network.connection_quotas``,
    one for all listeners) must have a slot for this listener (``max.connections``,
    ``listener.name.<l>.max.connections``); without one the reader is removed, so new
    connections wait in the kernel's backlog, and put back when a connection closes or a
    limit is raised;
  - a connection from an address already at ``max.connections.per.ip`` (or its override) is
    closed right after accept, with Kafka's "Rejected connection from ..." line;
  - a connection counts from accept to close, its TLS handshake included;
  - over ``max.connection.creation.rate`` the connection just accepted is held, and nothing
    else accepted, for the quotas' throttle time;
  - an accept error other than "nothing to accept" (EMFILE: out of descriptors) pauses
    accepting for a second instead of spinning on a readable socket.
At most ``_ACCEPTS_PER_TURN`` connections are accepted per loop turn, so a connection storm
takes turns with the connections already being served.

Idle connections: a connection with nothing in flight and no bytes read for
``connections.max.idle.ms`` is closed by a reaper that runs every tenth of that (between
0.1 s and 30 s).

Pausing (``pause``/``resume``, for tests: a stopped process as its clients see it): nothing is
accepted (new connections wait in the backlog) and every connection is frozen: nothing read,
handled or written until ``resume`` writes the answers held and reads on.

Graceful shutdown: stop accepting, let every connection finish the requests it has in
flight (bounded wait), then close the transports without running their close callbacks
(``RequestContext.on_close``: the components they would call are shutting down next).

A listener whose security protocol is SSL or SASL_SSL gets an ``ssl.SSLContext``
(``kafkapy.security.ssl``); the TLS handshake completes before the connection is made, so a
failed or truncated handshake never becomes a connection (bounded by the handshake timeout)
and costs nobody else anything (its quota slot is given back).
"""
from __future__ import annotations

import asyncio
import errno
import socket
import time
from typing import TYPE_CHECKING

import structlog

from kafkapy.network.connection import KafkaConnection
from kafkapy.network.connection_quotas import ConnectionQuotas
from kafkapy.api.principal import host_address

if TYPE_CHECKING:
    from kafkapy.api.request_timer import RequestQuota
    from kafkapy.config.broker import BrokerConfig

_log = structlog.get_logger("kafkapy.network")
# A client that opens a TLS connection and never finishes the handshake is dropped then.
_HANDSHAKE_TIMEOUT_S = 10.0
_BACKLOG = 1024
# Connections accepted per readiness callback of a listening socket.
_ACCEPTS_PER_TURN = 64
# After an accept error (out of descriptors, memory): wait this long before trying again.
_ACCEPT_ERROR_PAUSE_S = 1.0
_NOTHING_TO_ACCEPT = (BlockingIOError, InterruptedError)
_PEER_GONE = (errno.ECONNABORTED, errno.EPROTO, errno.EPERM)


class SocketServer:
    def __init__(self, config: BrokerConfig, apis: dict, host: str, port: int, *,
                 max_request_bytes: int, max_inflight: int, idle_ms: int,
                 unsupported_api_versions, zero_copy: bool = True,
                 listener: str | None = None, security_protocol: str = "PLAINTEXT",
                 ssl_context=None, quotas: ConnectionQuotas,
                 authorizer_enabled: bool = False) -> None:
        self.config = config        # SASL listeners read their JAAS and mechanism settings
        # ACLs name hosts: with an authorizer every session carries the peer's address
        self.authorizer_enabled = authorizer_enabled
        # What the handlers get on each request's context: handed over by ``start``.
        self.services = None
        self.request_quota: RequestQuota | None = None    # also handed over by ``start``
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
        self._setting_up: set[asyncio.Task] = set()
        self._sockets: list[socket.socket] = []
        self._accepting = False      # the listening sockets' readers are installed
        self._stopped = False
        self._paused = False         # ``pause``: nothing accepted, read or answered
        self._waiting_for_slot = False
        self._throttled = False      # a connection held for the creation rate
        self._loop: asyncio.AbstractEventLoop | None = None
        self._reaper: asyncio.TimerHandle | None = None
        self.quotas = quotas         # the broker's one ConnectionQuotas, every listener's
        self.quotas.add_server(self)

    @staticmethod
    def now() -> float:
        return time.monotonic()

    def bind(self) -> None:
        """Bind the listener's sockets (the port is taken, or this raises OSError) without
        listening: until ``start`` connections are refused, as before the bind.  A port
        of 0 becomes the one the kernel chose."""
        if not self._sockets:
            self._sockets = _bound_sockets(self.host, self.port)
            self.port = self._sockets[0].getsockname()[1]

    async def start(self, services, request_quota: RequestQuota | None = None) -> None:
        """Listen and accept (binding first if ``bind`` was not called); every request's
        context carries ``services`` from here on, and its connection times it for
        ``request_quota`` while that is enabled."""
        self.services = services
        self.request_quota = request_quota
        self._loop = asyncio.get_running_loop()
        self.bind()
        for sock in self._sockets:
            sock.listen(_BACKLOG)
            sock.setblocking(False)
        self._stopped = False
        self._start_accepting()
        self._schedule_reaper()
        _log.info("listening", listener=self.listener, host=self.host, port=self.port,
                  security_protocol=self.security_protocol)

    # -- accepting ------------------------------------------------------------------------
    def _start_accepting(self) -> None:
        if self._accepting or self._stopped or self._throttled or self._paused:
            return
        self._accepting = True
        for sock in self._sockets:
            self._loop.add_reader(sock.fileno(), self._on_acceptable, sock, int(sock.family))

    def _pause_accepting(self) -> None:
        if not self._accepting:
            return
        self._accepting = False
        for sock in self._sockets:
            self._loop.remove_reader(sock.fileno())

    def _on_acceptable(self, lsock: socket.socket, family: int) -> None:
        for _ in range(_ACCEPTS_PER_TURN):
            if not self.quotas.slot_available(self.listener):
                self._wait_for_slot()
                return
            try:
                # socket.accept() less its per-call enum conversions of family and type
                fd, addr = lsock._accept()
                sock = socket.socket(family, socket.SOCK_STREAM, lsock.proto, fd)
            except _NOTHING_TO_ACCEPT:
                return
            except OSError as err:
                if err.errno in _PEER_GONE:
                    continue
                _log.error("accepting a connection failed; pausing accepts", listener=self.listener,
                           error=repr(err), pause_s=_ACCEPT_ERROR_PAUSE_S)
                self._pause_accepting()
                self._loop.call_later(_ACCEPT_ERROR_PAUSE_S, self._start_accepting)
                return
            throttle_ms = self.quotas.record_creation(self.listener, int(self.now() * 1000))
            if throttle_ms > 0:
                self._hold(sock, addr, throttle_ms)
                return
            self._admit(sock, addr)

    def _hold(self, sock: socket.socket, addr, throttle_ms: int) -> None:
        """Over max.connection.creation.rate: keep this connection waiting, and accept
        nothing else, for the throttle time (Kafka's acceptor blocks as long)."""
        self._pause_accepting()
        self._throttled = True

        def release() -> None:
            if self._stopped:
                self._throttled = False
                sock.close()
                return
            if not self.quotas.slot_available(self.listener):   # Kafka waits for both
                self.quotas.wait_for_slot(release)
                return
            self._throttled = False
            self._admit(sock, addr)
            self._start_accepting()
        self._loop.call_later(throttle_ms / 1000.0, release)

    def _wait_for_slot(self) -> None:
        """Kafka's waitForConnectionSlot: accept nothing until the quotas call back."""
        self._pause_accepting()
        if not self._waiting_for_slot:
            self._waiting_for_slot = True
            self.quotas.wait_for_slot(self._slot_may_be_free)

    def _slot_may_be_free(self) -> None:
        self._waiting_for_slot = False
        self._start_accepting()    # the next readiness callback checks the slot again

    def _admit(self, sock: socket.socket, addr) -> None:
        address = host_address(addr[0]) if addr else "?"
        throttle_ms = self.quotas.record_ip_creation(self.listener, address,
                                                     int(self.now() * 1000))
        if throttle_ms > 0:         # over its address's connection_creation_rate
            _log.debug("delaying closing of a throttled connection", address=address,
                       throttle_ms=throttle_ms)
            self._loop.call_later(throttle_ms / 1000.0, sock.close)
            return
        limit = self.quotas.inc(self.listener, address)
        if limit is not None:
            _log.info(f"Rejected connection from {address}, address already has the "
                      f"configured maximum of {limit} connections.")
            sock.close()
            return
        # No setsockopt here: TCP_NODELAY and SO_KEEPALIVE (Kafka's acceptor sets both) are
        # inherited from the listening socket, and uvloop's transport sets TCP_NODELAY too.
        conn = KafkaConnection(self, address, f"{addr[0]}:{addr[1]}" if addr else "?")
        task = self._loop.create_task(self._set_up(conn, sock))
        self._setting_up.add(task)
        task.add_done_callback(self._setting_up.discard)

    async def _set_up(self, conn: KafkaConnection, sock: socket.socket) -> None:
        tls = {} if self.ssl_context is None else {
            "ssl": self.ssl_context, "ssl_handshake_timeout": _HANDSHAKE_TIMEOUT_S}
        try:
            await self._loop.connect_accepted_socket(lambda: conn, sock, **tls)
        except BaseException as exc:   # a failed TLS handshake, the peer gone, a shutdown
            if not isinstance(exc, asyncio.CancelledError):
                _log.info("connection set-up failed", peer=conn.peer, address=conn.address,
                          error=repr(exc))
            self._release(conn)
            if not isinstance(exc, Exception):
                raise

    def _release(self, conn: KafkaConnection) -> None:
        """Give the connection's quota slot back (once)."""
        address, conn.address = conn.address, None
        if address is not None:
            self.quotas.dec(self.listener, address)

    # -- connections ----------------------------------------------------------------------
    def connection_opened(self, conn: KafkaConnection) -> None:
        self._connections.add(conn)
        if self._paused:
            conn.freeze(True)

    def connection_closed(self, conn: KafkaConnection) -> None:
        self._connections.discard(conn)
        self._release(conn)

    def open_connections(self) -> list[KafkaConnection]:
        return list(self._connections)

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
        self._reaper = self._loop.call_later(interval, self._close_idle)

    def _close_idle(self) -> None:
        cutoff = self.now() - self._idle_s
        for conn in list(self._connections):
            if conn.idle and conn.last_active < cutoff:
                _log.info("closing idle connection", peer=conn.peer)
                conn.close()
        self._schedule_reaper()

    # -- pausing (a stopped process, for tests) ------------------------------------------
    def pause(self) -> None:
        """Accept, read, handle and answer nothing until ``resume``, as a stopped process:
        new connections wait in the kernel's backlog, open ones keep their bytes."""
        self._paused = True
        self._pause_accepting()
        for conn in list(self._connections):
            conn.freeze(True)

    def resume(self) -> None:
        """Serve again: the answers held go out, then reading and accepting go on."""
        self._paused = False
        for conn in list(self._connections):
            conn.freeze(False)
        if self._loop is not None:
            self._start_accepting()

    # -- shutdown -------------------------------------------------------------------------
    async def stop_accepting(self) -> None:
        self._stopped = True
        if self._loop is not None:
            self._pause_accepting()
        for sock in self._sockets:
            sock.close()
        self._sockets = []
        if self._reaper is not None:
            self._reaper.cancel()

    async def drain_and_close(self, timeout_s: float = 10.0) -> None:
        for task in list(self._setting_up):
            task.cancel()
        deadline = self.now() + timeout_s
        while any(c.has_inflight() for c in self._connections) and self.now() < deadline:
            await asyncio.sleep(0.01)
        for conn in list(self._connections):
            conn.drop_close_callbacks()     # what they would clean up stops with the broker
            conn.close()


def _bound_sockets(host: str, port: int) -> list[socket.socket]:
    """Bound sockets, not yet listening, for ``host`` (all interfaces when empty, one
    socket per address family as ``loop.create_server`` does); with port 0 every socket gets
    the port the first one was given.  With SO_REUSEADDR, Linux refuses the bind while
    another socket listens on the address (a broker running there), not for the closed
    connections of a previous run (TIME_WAIT)."""
    infos = socket.getaddrinfo(host or None, port, socket.AF_UNSPEC, socket.SOCK_STREAM, 0,
                               socket.AI_PASSIVE)
    seen = set()
    socks: list[socket.socket] = []
    try:
        for family, type_, proto, _, addr in infos:
            if (family, addr) in seen:
                continue
            seen.add((family, addr))
            if socks and port == 0:
                addr = (addr[0], socks[0].getsockname()[1], *addr[2:])
            sock = socket.socket(family, type_, proto)
            socks.append(sock)
            sock.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
            # Linux copies these to every accepted socket: no per-connection syscalls
            sock.setsockopt(socket.SOL_SOCKET, socket.SO_KEEPALIVE, 1)
            sock.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)
            if family == socket.AF_INET6:
                sock.setsockopt(socket.IPPROTO_IPV6, socket.IPV6_V6ONLY, 1)
            sock.bind(addr)
    except BaseException:
        for sock in socks:
            sock.close()
        raise
    return socks
