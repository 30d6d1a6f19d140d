"""Fetches parked until data arrives or their max wait passes.

A fetch that found fewer than min_bytes waits on the keys of its partitions;
an append to any of them re-checks it and answers it as soon as enough bytes
are there (or a partition went away).  Invariant: a waiter resolves once.
"""
from __future__ import annotations

import asyncio
from typing import Callable, Hashable


class _Waiter:
    __slots__ = ("future", "min_bytes", "available", "keys", "timer")

    def __init__(self, future, min_bytes, available, keys):
        self.future = future
        self.min_bytes = min_bytes
        self.available = available
        self.keys = keys
        self.timer = None


class FetchWaits:
    def __init__(self, loop: asyncio.AbstractEventLoop) -> None:
        self._loop = loop
        self._by_key: dict[Hashable, set[_Waiter]] = {}

    def wait(self, keys: list[Hashable], max_wait_ms: int, min_bytes: int,
             available: Callable[[], tuple[int, bool]]) -> asyncio.Future:
        future = self._loop.create_future()
        waiter = _Waiter(future, min_bytes, available, keys)
        for key in keys:
            self._by_key.setdefault(key, set()).add(waiter)
        waiter.timer = self._loop.call_later(max_wait_ms / 1000.0, self._done, waiter)
        return future

    def wake(self, key: Hashable) -> None:
        for waiter in list(self._by_key.get(key, ())):
            total, now = waiter.available()
            if now or total >= waiter.min_bytes:
                self._done(waiter)

    def _done(self, waiter: _Waiter) -> None:
        if waiter.timer is not None:
            waiter.timer.cancel()
        for key in waiter.keys:
            waiters = self._by_key.get(key)
            if waiters is not None:
                waiters.discard(waiter)
                if not waiters:
                    del self._by_key[key]
        if not waiter.future.done():
            waiter.future.set_result(None)

    def close(self) -> None:
        for waiters in list(self._by_key.values()):
            for waiter in list(waiters):
                self._done(waiter)
