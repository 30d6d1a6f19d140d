"""kafkapy.testing: a real kafkapy broker (or cluster) inside a Python test process.

``broker()`` is both an async context manager (the broker runs in the test's event loop) and a
plain context manager (the broker runs in a background thread with its own loop). ``cluster()``
is the same for several brokers sharing one metadata store. ``MockClock`` makes timeouts instant:
``await b.advance(ms)`` moves it and runs everything that became due.

Imports are lazy: importing this package does not import the broker (pytest plugin collection
stays light).
"""
from __future__ import annotations

from typing import Any

# A kafkapy.clock.MockClock that starts at the real wall time (light: no broker import).
from kafkapy.testing._broker import MockClock

__all__ = ["MockClock", "Record", "broker", "cluster"]


def broker(**settings: Any) -> Any:
    """A single in-process broker; ``async with`` or ``with``. See ``_broker.broker``."""
    from kafkapy.testing._broker import broker as _broker

    return _broker(**settings)


def cluster(**settings: Any) -> Any:
    """Several in-process brokers; ``async with`` or ``with``. See ``_cluster.cluster``."""
    from kafkapy.testing._cluster import cluster as _cluster

    return _cluster(**settings)


def __getattr__(name: str) -> Any:
    if name == "Record":
        from kafkapy.testing._records import Record

        return Record
    raise AttributeError(name)
