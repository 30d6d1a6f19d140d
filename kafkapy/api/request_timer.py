"""The event-loop time one request's handling takes, for the request quota.

Kafka's request quota (``request_percentage``) measures the time a request handler thread
spends on a client's request.  kafkapy has one event loop doing everything, so the
measure is the time the loop spends in the request's handler: the call the listener
makes, and every later step of the coroutine it answers (``timed``), each timed with
``time.perf_counter_ns``; the time the coroutine waits (for an append's replication, a
delayed fetch) is not counted.

The listener puts a ``RequestTimer`` on a request's context (``ctx.timer``) only while a
request quota is configured (``RequestQuota.enabled``, one test per request); otherwise
``ctx.timer`` is None and nothing is timed.  ``recorded`` is set once the request's time
has gone into the quota (by a handler that needs its throttle before it answers, Fetch,
or by ``RequestQuota.completed`` when the answer is ready), so it is recorded once.
"""
from __future__ import annotations

from time import perf_counter_ns
from typing import Any, Protocol


class RequestTimer:
    """Nanoseconds of loop time spent on one request so far."""

    __slots__ = ("ns", "_since", "recorded")

    def __init__(self) -> None:
        self.ns = 0
        self._since = 0         # perf_counter_ns at the start of the step running, else 0
        self.recorded = False

    def start(self) -> None:
        self._since = perf_counter_ns()

    def stop(self) -> None:
        if self._since:
            self.ns += perf_counter_ns() - self._since
            self._since = 0

    def elapsed_ns(self) -> int:
        """The time so far, the step now running included."""
        if self._since:
            return self.ns + perf_counter_ns() - self._since
        return self.ns


class RequestQuota(Protocol):
    """What the listener asks of the request quota (``kafkapy.quota.request``)."""

    @property
    def enabled(self) -> bool: ...

    def completed(self, ctx: Any, response: Any) -> None:
        """The request's answer (None: none is sent) is ready: record its time, and when
        the client is over its quota, put the throttle time on the answer and mute the
        connection for it."""


class timed:    # noqa: N801 (used as a function: timed(awaitable, timer))
    """An awaitable running ``awaitable`` with each of its steps timed on ``timer``."""

    __slots__ = ("_awaitable", "_timer")

    def __init__(self, awaitable, timer: RequestTimer) -> None:
        self._awaitable = awaitable
        self._timer = timer

    def __await__(self):
        steps = self._awaitable.__await__()
        timer = self._timer
        send, error = None, None
        while True:
            timer.start()
            try:
                if error is None:
                    yielded = steps.send(send)
                else:
                    yielded = steps.throw(error)
            except StopIteration as done:
                timer.stop()
                return done.value
            except BaseException:
                timer.stop()
                raise
            timer.stop()
            try:
                send, error = (yield yielded), None
            except GeneratorExit:
                steps.close()
                raise
            except BaseException as exc:    # a cancellation, thrown into the inner steps
                send, error = None, exc
