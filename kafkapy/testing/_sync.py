"""Running an async test handle in a background thread, for synchronous test code.

``LoopThread`` owns one event loop in one daemon thread; ``run(coro)`` blocks until the
coroutine finished there.  ``ThreadedContext(async_cm)`` enters an async context manager on
such a thread and hands back a ``SyncProxy`` of what it yielded: attribute reads pass through,
coroutine methods become blocking calls run on the loop.  ``cluster()`` reuses both.

Invariants: everything the broker owns is touched only from the loop thread (the proxy sends
every call there); leaving the context exits the async manager on its loop, shuts down the
loop's default executor, closes the loop and joins the thread, so nothing of it outlives the
``with`` block (the 50 start/stop test counts threads and file descriptors).
"""
from __future__ import annotations

import asyncio
import inspect
import threading
from typing import Any, Awaitable, Callable

_TIMEOUT_S = 120.0


class LoopThread:
    """An event loop running forever in a daemon thread until ``close()``."""

    def __init__(self, name: str = "kafkapy-testing") -> None:
        self.loop = _new_loop()
        self._thread = threading.Thread(target=self._run, name=name, daemon=True)
        self._thread.start()

    def _run(self) -> None:
        asyncio.set_event_loop(self.loop)
        self.loop.run_forever()

    def run(self, coro: Awaitable, timeout: float | None = _TIMEOUT_S) -> Any:
        """Run ``coro`` on the loop; block for its result (its exception is raised here)."""
        if threading.current_thread() is self._thread:
            raise RuntimeError("LoopThread.run called from its own loop (would deadlock)")
        future = asyncio.run_coroutine_threadsafe(coro, self.loop)
        try:
            return future.result(timeout)
        except TimeoutError:
            future.cancel()
            raise

    def call(self, fn: Callable[..., Any], *args: Any) -> Any:
        """Call a plain function on the loop thread; block for its result."""
        async def _call() -> Any:
            return fn(*args)
        return self.run(_call())

    def close(self) -> None:
        """Cancel what is left, shut the executor down, stop the loop, join the thread."""
        if self.loop.is_closed():
            return
        try:
            self.run(_drain(), timeout=30)
        finally:
            self.loop.call_soon_threadsafe(self.loop.stop)
            self._thread.join(30)
            self.loop.close()


async def _drain() -> None:
    loop = asyncio.get_running_loop()
    me = asyncio.current_task()
    tasks = [t for t in asyncio.all_tasks(loop) if t is not me]
    for task in tasks:
        task.cancel()
    if tasks:
        await asyncio.gather(*tasks, return_exceptions=True)
    await loop.shutdown_asyncgens()
    await loop.shutdown_default_executor()


def _new_loop() -> asyncio.AbstractEventLoop:
    try:
        import uvloop   # here: a missing uvloop falls back to asyncio's own loop
        return uvloop.new_event_loop()
    except ImportError:
        return asyncio.new_event_loop()


def is_handle(value: Any) -> bool:
    """Objects whose methods must run on the loop: marked with ``__kafkapy_handle__``."""
    return getattr(type(value), "__kafkapy_handle__", False)


class SyncProxy:
    """A handle seen from another thread: coroutine methods become blocking calls; handles
    (and lists of handles) read from it come back proxied too."""

    def __init__(self, target: Any, thread: LoopThread) -> None:
        object.__setattr__(self, "_target", target)
        object.__setattr__(self, "_thread", thread)

    @property
    def async_handle(self) -> Any:
        """The proxied async handle (use only from the loop thread)."""
        return self._target

    @property
    def loop(self) -> asyncio.AbstractEventLoop:
        return self._thread.loop

    def __getattr__(self, name: str) -> Any:
        value = getattr(self._target, name)
        if inspect.iscoroutinefunction(value):
            return self._blocking(value)
        return self._wrap(value)

    def __setattr__(self, name: str, value: Any) -> None:
        setattr(self._target, name, value)

    def _blocking(self, method: Callable[..., Awaitable]) -> Callable[..., Any]:
        def call(*args: Any, **kwargs: Any) -> Any:
            return self._wrap(self._thread.run(method(*args, **kwargs)))
        call.__name__ = method.__name__
        call.__doc__ = method.__doc__
        return call

    def _wrap(self, value: Any) -> Any:
        if is_handle(value):
            return SyncProxy(value, self._thread)
        if isinstance(value, (list, tuple)) and value and all(is_handle(v) for v in value):
            return type(value)(SyncProxy(v, self._thread) for v in value)
        return value

    def __repr__(self) -> str:
        return f"SyncProxy({self._target!r})"


class ThreadedContext:
    """``with ThreadedContext(async_cm) as handle``: the async context manager entered and
    exited on a fresh ``LoopThread``; ``handle`` is a ``SyncProxy`` of what it yielded."""

    def __init__(self, async_cm: Any, name: str = "kafkapy-testing") -> None:
        self._cm = async_cm
        self._name = name
        self._thread: LoopThread | None = None

    def __enter__(self) -> Any:
        self._thread = LoopThread(self._name)
        try:
            handle = self._thread.run(self._cm.__aenter__())
        except BaseException:
            self._thread.close()
            self._thread = None
            raise
        return SyncProxy(handle, self._thread)

    def __exit__(self, exc_type, exc, tb) -> bool:
        thread, self._thread = self._thread, None
        try:
            return bool(thread.run(self._cm.__aexit__(exc_type, exc, tb)))
        finally:
            thread.close()
