"""An answer given later, handed over the moment it is given.

A handler that cannot answer at once returns something that resolves later.  An asyncio
future runs its callbacks on a later turn of the event loop, so the answer first waits for
whatever else that turn holds: the rest of the code that resolved it, and every other
connection whose bytes arrived in the same turn.  A fetch waiting in the fetch purgatory
is resolved inside the append that brought its records, which is the replication round's
critical path: the follower's records would leave only after the produce that wrote them
was done and after everything else read in that turn.  A ``LateAnswer`` runs its callbacks
inside ``set_result`` / ``set_exception`` instead, so the listener encodes and sends the
answer there and then.

It has the part of a future's interface its users need (``done``, ``cancelled``,
``result``, ``exception``, ``add_done_callback``: a callback added after the answer runs
at once) and can be awaited (through an asyncio future made on the first await).  A
callback that raises is logged and goes no further: the code that gave the answer (an
append) must not fail because an answer could not be sent.  The inter-broker client's
answers (``kafkapy.network.client``) are LateAnswers that asyncio's Task waits on
directly, so the task itself is stepped where the answer is given.
"""
from __future__ import annotations

import asyncio
import contextvars
from collections.abc import Callable
from typing import Any

import structlog

_PENDING, _VALUE, _ERROR = 0, 1, 2
_log = structlog.get_logger("kafkapy.api.late_answer")


class LateAnswer:
    """One answer, given once (``set_result`` or ``set_exception``)."""

    __slots__ = ("_state", "_value", "_callbacks")

    def __init__(self) -> None:
        self._state = _PENDING
        self._value: Any = None
        self._callbacks: list[tuple[Callable, contextvars.Context | None]] = []

    def done(self) -> bool:
        return self._state != _PENDING

    def cancelled(self) -> bool:
        return False    # nothing cancels an answer: its connection drops it if it closed

    def result(self) -> Any:
        if self._state == _ERROR:
            raise self._value
        self._check_given()
        return self._value

    def exception(self) -> BaseException | None:
        self._check_given()
        return self._value if self._state == _ERROR else None

    def set_result(self, value: Any) -> None:
        self._give(_VALUE, value)

    def set_exception(self, error: BaseException) -> None:
        self._give(_ERROR, error)

    def add_done_callback(self, callback: Callable[[LateAnswer], object], *,
                          context: contextvars.Context | None = None) -> None:
        """``callback(self)`` when the answer is given (now, if it was), in ``context``
        when one is given (as asyncio's Task passes its own)."""
        if self._state == _PENDING:
            self._callbacks.append((callback, context))
        else:
            _run(callback, self, context)

    def __await__(self):
        if self._state == _PENDING:
            future = asyncio.get_running_loop().create_future()
            self.add_done_callback(lambda answer: _copy(answer, future))
            yield from future
        return self.result()

    def _check_given(self) -> None:
        if self._state == _PENDING:
            raise asyncio.InvalidStateError("the answer is not given yet")

    def _give(self, state: int, value: Any) -> None:
        if self._state != _PENDING:
            raise asyncio.InvalidStateError("the answer was given already")
        self._state, self._value = state, value
        callbacks, self._callbacks = self._callbacks, []
        for callback, context in callbacks:
            self._hand_over(callback, context)

    def _hand_over(self, callback: Callable[[LateAnswer], object],
                   context: contextvars.Context | None) -> None:
        """Run one callback of the answer just given (here: at once)."""
        _run(callback, self, context)


def _run(callback: Callable[[LateAnswer], object], answer: LateAnswer,
         context: contextvars.Context | None) -> None:
    try:
        if context is None:
            callback(answer)
        else:
            context.run(callback, answer)
    except Exception:   # a bug in the taker: logged, never into the giver
        _log.exception("late answer callback failed")


def _copy(answer: LateAnswer, future: asyncio.Future) -> None:
    """The answer into the future an awaiting caller waits on (unless it gave up)."""
    if future.done():
        return
    error = answer.exception()
    if error is not None:
        future.set_exception(error)
    else:
        future.set_result(answer.result())
