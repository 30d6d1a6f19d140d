"""DelayedOperation: a timer task that completes early on events or at its deadline.

Lifecycle (Kafka's DelayedOperation, single-threaded):
- ``try_complete()`` is called when something the operation waits on changes; if the
  operation can complete now it calls ``force_complete()`` and returns its result.
- ``force_complete()`` succeeds exactly once: the first caller wins, cancels the
  timer entry, then calls ``on_complete()``.  Later calls return False.
- When the timer fires, ``run()`` calls ``force_complete()`` and, only if that call
  won, ``on_expiration()`` -- after ``on_complete()`` has already run.

Invariants: ``on_complete`` runs at most once; ``on_expiration`` runs at most once
and only after ``on_complete``; ``is_completed`` is True from the moment the first
``force_complete`` starts (so re-entrant calls from ``on_complete`` lose).
"""
from __future__ import annotations

from abc import abstractmethod
from typing import Protocol

from kafkapy.purgatory.timer import TimerTask


class _Holder(Protocol):
    """What an operation tells the purgatory whose timer holds it (``Purgatory``): that it
    finished, and that its deadline finished it."""

    def _delayed_done(self, op: DelayedOperation) -> None: ...

    def _expired(self, op: DelayedOperation) -> None: ...


class DelayedOperation(TimerTask):
    """Base of DelayedFetch, DelayedProduce, and friends."""

    __slots__ = ("_completed", "_purgatory")

    # Whether the purgatory tries again once the operation is watched (Kafka's order);
    # an operation whose try only reads state may say no.
    try_again_when_watched = True

    def __init__(self, delay_ms: int) -> None:
        super().__init__(delay_ms)
        self._completed = False
        # The purgatory whose timer holds us, told when we finish (for its counters).
        self._purgatory: _Holder | None = None

    @property
    def is_completed(self) -> bool:
        return self._completed

    @abstractmethod
    def try_complete(self) -> bool:
        """Check the completion condition; if met, return ``self.force_complete()``."""

    @abstractmethod
    def on_complete(self) -> None:
        """Build and send the response; called exactly once."""

    @abstractmethod
    def on_expiration(self) -> None:
        """Called once after ``on_complete`` when the deadline caused completion."""

    def force_complete(self) -> bool:
        """Complete now unless already completed; True only for the winning call."""
        if self._completed:
            return False
        self._completed = True
        self.cancel()
        purgatory, self._purgatory = self._purgatory, None
        if purgatory is not None:
            purgatory._delayed_done(self)
        self.on_complete()
        return True

    def run(self) -> None:
        purgatory = self._purgatory
        if self.force_complete():
            if purgatory is not None:
                purgatory._expired(self)
            self.on_expiration()
