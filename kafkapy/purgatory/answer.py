"""AnswerFuture: the future a delayed operation's answer is delivered in.

An asyncio future runs its done callbacks in a later event-loop turn, behind every
callback already queued and the I/O the loop polls first.  The answer of a delayed
operation is ready the moment the operation completes, inside the call that completed
it (a produce append waking a follower's parked fetch, a follower's fetch moving the
high watermark for a waiting acks=all produce), and the connection that waits for it
can write it there and then.  ``on_result(fn)`` registers such a waiter: ``fn(future)``
runs inside ``set_result`` / ``set_exception`` / ``cancel``, after the future is done,
before the ordinary done callbacks are queued.  At most one waiter; one that raises
is logged and the future's outcome stands.  Everything else is ``asyncio.Future``'s
(awaiting it, ``add_done_callback``).
"""
from __future__ import annotations

import asyncio
from typing import Callable

import structlog

_log = structlog.get_logger("kafkapy.purgatory")


class AnswerFuture(asyncio.Future):
    """An ``asyncio.Future`` that also calls one waiter synchronously when it is done."""

    _waiter: Callable[[asyncio.Future], None] | None = None

    def on_result(self, fn: Callable[[asyncio.Future], None]) -> None:
        """``fn(self)`` when done: now if already done, else inside the call that settles it."""
        if self.done():
            self._call(fn)
        else:
            self._waiter = fn

    def set_result(self, result) -> None:
        super().set_result(result)
        self._settled()

    def set_exception(self, exception) -> None:
        super().set_exception(exception)
        self._settled()

    def cancel(self, msg=None) -> bool:
        cancelled = super().cancel(msg)
        if cancelled:
            self._settled()
        return cancelled

    def _settled(self) -> None:
        fn, self._waiter = self._waiter, None
        if fn is not None:
            self._call(fn)

    def _call(self, fn: Callable[[asyncio.Future], None]) -> None:
        try:
            fn(self)
        except Exception:   # the waiter's failure is its own; the future is settled
            _log.exception("answer waiter failed")


def answer_future(loop: asyncio.AbstractEventLoop) -> AnswerFuture:
    return AnswerFuture(loop=loop)
