"""The active controller's channel to every broker (Kafka's ControllerChannelManager).

One ordered queue and one sender task per broker, like Kafka's RequestSendThread:
the task takes the oldest request, sends it, waits for the answer and only then
takes the next (one in flight per broker), then runs the request's callback on
the loop.  On any connection failure or timeout it closes the connection, backs
off (100 ms doubling to 1 s) and sends the SAME request again, for as long as the
broker is in the channel; ``remove_broker`` (the broker's znode is gone) stops
that, dropping the queue and the request in flight without a callback.

Requests to the controller's own broker never touch a socket: ``send`` calls
``local_deliver(request)`` synchronously (the same ``apply`` functions the
handlers use) and passes the response to the callback before returning, so the
single-broker start-up and CreateTopics are fast and deterministic.

Invariants:
- per broker, callbacks run in the order the requests were queued, each once;
- a request queued for a broker that is not in the channel is dropped with a
  warning (Kafka: "Not sending request ... since it is offline");
- all state is touched from the loop only (no locks).
The client id is the controller's broker id as a string, as Kafka's
NetworkClient for the channel uses ``config.brokerId.toString``.
"""
from __future__ import annotations

import asyncio
import collections
from typing import Any, Callable

import structlog

from kafkapy.network.client import BrokerConnection
from kafkapy.network.links import Links

_log = structlog.get_logger("kafkapy.controller.channel")
_BACKOFF_MIN_S = 0.1
_BACKOFF_MAX_S = 1.0

Callback = Callable[[Any], None]


class _Dropped(Exception):
    """The request cannot be delivered (not a network failure): give up on it."""


class _BrokerState:
    __slots__ = ("node_id", "host", "port", "queue", "wakeup", "task", "conn", "failures", "stopped")

    def __init__(self, node_id: int, host: str, port: int) -> None:
        self.node_id = node_id
        self.host = host
        self.port = port
        self.queue: collections.deque[tuple[Any, Callback | None]] = collections.deque()
        self.wakeup = asyncio.Event()
        self.task: asyncio.Task | None = None
        self.conn: BrokerConnection | None = None
        self.failures = 0  # consecutive, for the backoff and for quieter logs
        # Checked after every await: Python 3.11's wait_for can swallow a
        # cancellation when the awaited answer fails at the same moment.
        self.stopped = False

    def close_connection(self) -> None:
        if self.conn is not None:
            self.conn.close()
            self.conn = None


class ControllerChannelManager:
    def __init__(self, loop: asyncio.AbstractEventLoop, local_node_id: int,
                 local_deliver: Callable[[Any], Any] | None, client_id: str | None = None,
                 socket_timeout_ms: int = 30000, request_timeout_ms: int | None = None,
                 links: Links | None = None) -> None:
        self._loop = loop
        self._links = links     # which brokers are reachable (None: all)
        self.local_node_id = local_node_id
        # May be set after construction (the controller wires the BRK apply functions).
        self.local_deliver = local_deliver
        self.client_id = str(local_node_id) if client_id is None else client_id
        self._connect_timeout_s = socket_timeout_ms / 1000.0
        self._request_timeout_s = (socket_timeout_ms if request_timeout_ms is None
                                   else request_timeout_ms) / 1000.0
        self._brokers: dict[int, _BrokerState] = {}
        self._finishing: set[asyncio.Task] = set()
        self._closed = False

    # ---- membership -------------------------------------------------------

    def add_broker(self, node_id: int, host: str, port: int) -> None:
        """Start a queue for ``node_id``; a new endpoint for a known broker replaces the old one."""
        if self._closed or node_id == self.local_node_id:
            return
        state = self._brokers.get(node_id)
        if state is not None:
            if (state.host, state.port) != (host, port):
                _log.info("broker endpoint changed", broker=node_id, host=host, port=port)
                state.host, state.port = host, port
                state.close_connection()  # the request in flight is resent to the new endpoint
            return
        state = _BrokerState(node_id, host, port)
        self._brokers[node_id] = state
        state.task = self._loop.create_task(self._run(state), name=f"controller-to-broker-{node_id}")

    def remove_broker(self, node_id: int) -> None:
        """Forget ``node_id``: its queued and in-flight requests are dropped without callbacks."""
        state = self._brokers.pop(node_id, None)
        if state is None:
            return
        if state.queue:
            _log.info("dropping requests to removed broker", broker=node_id, count=len(state.queue))
        state.queue.clear()
        self._stop(state)

    def has_broker(self, node_id: int) -> bool:
        return node_id in self._brokers

    @property
    def broker_ids(self) -> list[int]:
        return sorted(self._brokers)

    # ---- sending ----------------------------------------------------------

    def send(self, node_id: int, request: Any, callback: Callback | None = None) -> None:
        """Queue ``request`` for ``node_id``; to ourselves it is delivered before returning."""
        if node_id == self.local_node_id:
            # Errors here are bugs of the local apply: they propagate to the caller.
            response = self.local_deliver(request)
            if callback is not None:
                callback(response)
            return
        state = self._brokers.get(node_id)
        if state is None:
            _log.warning("not sending request to broker not in the channel", broker=node_id,
                         request=type(request).__name__)
            return
        state.queue.append((request, callback))
        state.wakeup.set()

    def queue_size(self, node_id: int) -> int:
        """Requests waiting for ``node_id`` (the one in flight excluded, as Kafka's QueueSize)."""
        state = self._brokers.get(node_id)
        return len(state.queue) if state is not None else 0

    def total_queue_size(self) -> int:
        return sum(len(state.queue) for state in self._brokers.values())

    # ---- shutdown ---------------------------------------------------------

    def close(self) -> None:
        """Stop every sender task and close every connection; later sends to remote brokers drop."""
        self._closed = True
        for node_id in list(self._brokers):
            self.remove_broker(node_id)

    async def wait_closed(self) -> None:
        """Wait until the cancelled sender tasks have finished."""
        while self._finishing:
            await asyncio.gather(*list(self._finishing), return_exceptions=True)

    def _stop(self, state: _BrokerState) -> None:
        state.stopped = True
        state.close_connection()
        task = state.task
        if task is not None and not task.done():
            task.cancel()
            self._finishing.add(task)
            task.add_done_callback(self._finishing.discard)

    # ---- the sender task (Kafka's RequestSendThread.doWork) ----------------

    async def _run(self, state: _BrokerState) -> None:
        try:
            while True:
                while not state.queue:
                    state.wakeup.clear()
                    await state.wakeup.wait()
                request, callback = state.queue.popleft()
                try:
                    response = await self._deliver(state, request)
                except _Dropped:
                    continue
                if state.stopped:
                    return
                _log.debug("response from broker", broker=state.node_id,
                           response=type(response).__name__)
                if callback is not None:
                    self._run_callback(state, callback, response)
        except asyncio.CancelledError:
            state.close_connection()
            raise

    async def _deliver(self, state: _BrokerState, request: Any) -> Any:
        """Send until answered; reconnects and resends on network failures."""
        while True:
            if state.stopped:
                raise asyncio.CancelledError()
            try:
                conn = await self._connection(state)
                response = await conn.send(request)  # its client id and timeout
                state.failures = 0
                return response
            except (ConnectionError, asyncio.TimeoutError, OSError) as exc:
                state.close_connection()
                state.failures += 1
                log = _log.warning if state.failures == 1 else _log.debug
                log("controller request to broker failed; reconnecting", broker=state.node_id,
                    host=state.host, port=state.port, request=type(request).__name__,
                    attempt=state.failures, error=repr(exc))
                await asyncio.sleep(_backoff_s(state.failures))
            except Exception as exc:  # an answer we cannot read: resending would not help
                state.close_connection()
                _log.error("controller request to broker failed", broker=state.node_id,
                           request=type(request).__name__, error=repr(exc))
                raise _Dropped() from exc

    async def _connection(self, state: _BrokerState) -> BrokerConnection:
        if state.conn is not None and state.conn.connected:
            return state.conn
        state.close_connection()
        endpoint = (state.host, state.port)
        conn = BrokerConnection(client_id=self.client_id, request_timeout_s=self._request_timeout_s,
                                links=self._links)
        await conn.connect(*endpoint, self._connect_timeout_s)
        if (state.host, state.port) != endpoint:  # add_broker moved it while we connected
            conn.close()
            raise ConnectionError("broker endpoint changed while connecting")
        state.conn = conn
        _log.info("controller connected to broker for state change requests",
                  controller=self.local_node_id, broker=state.node_id,
                  host=state.host, port=state.port)
        return conn

    @staticmethod
    def _run_callback(state: _BrokerState, callback: Callback, response: Any) -> None:
        try:
            callback(response)
        except Exception:  # one bad callback must not stop the broker's queue
            _log.exception("controller channel callback failed", broker=state.node_id,
                           response=type(response).__name__)


def _backoff_s(failures: int) -> float:
    return min(_BACKOFF_MIN_S * (2 ** (failures - 1)), _BACKOFF_MAX_S)
