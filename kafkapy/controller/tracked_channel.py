"""The controller's channel with a count of what is still unanswered.

``TrackedChannel`` wraps the ``ControllerChannelManager`` (or a test's stand-in) and
counts, per broker, the requests sent and not yet answered, so that a controller
shutting down can give what it already decided (a controlled shutdown's new leaders) a
bounded time to reach the brokers (``drained``) before the channel drops its queues.

Invariants: a count goes down once per answered request; a broker removed from the
channel (its requests are dropped without callbacks) takes its count with it, as does a
request to a broker not in the channel (dropped at once); ``close`` forgets every count.
"""
from __future__ import annotations

import asyncio

import structlog

_log = structlog.get_logger("kafkapy.controller")


class TrackedChannel:
    def __init__(self, channel) -> None:
        self._channel = channel
        self._pending: dict[int, int] = {}
        self._idle = asyncio.Event()
        self._idle.set()

    def __getattr__(self, name):
        return getattr(self._channel, name)

    def send(self, node_id: int, request, callback=None) -> None:
        self._pending[node_id] = self._pending.get(node_id, 0) + 1
        self._idle.clear()

        def answered(response, node_id=node_id) -> None:
            self._done(node_id)
            if callback is not None:
                callback(response)
        try:
            self._channel.send(node_id, request, answered)
        except BaseException:
            self._done(node_id)
            raise
        if node_id != self._channel.local_node_id and not self._channel.has_broker(node_id):
            self._forget(node_id)       # not in the channel: dropped at once

    def remove_broker(self, node_id: int) -> None:
        self._channel.remove_broker(node_id)
        self._forget(node_id)

    def close(self) -> None:
        self._channel.close()
        self._pending.clear()
        self._idle.set()

    async def drained(self, timeout_s: float) -> bool:
        try:
            await asyncio.wait_for(self._idle.wait(), timeout_s)
            return True
        except asyncio.TimeoutError:
            _log.warning("controller requests still unanswered at shutdown",
                         pending={b: n for b, n in self._pending.items() if n})
            return False

    def _done(self, node_id: int) -> None:
        if self._pending.get(node_id, 0) > 0:
            self._pending[node_id] -= 1
        self._check_idle()

    def _forget(self, node_id: int) -> None:
        self._pending.pop(node_id, None)
        self._check_idle()

    def _check_idle(self) -> None:
        if not any(self._pending.values()):
            self._idle.set()
