"""The request timer: the loop time of a request's handler steps, not of its waits."""
from __future__ import annotations

import asyncio

import pytest

from kafkapy.api import request_timer
from kafkapy.api.request_timer import RequestTimer, timed


class _Ticks:
    """perf_counter_ns that moves only when told to."""

    def __init__(self) -> None:
        self.now = 1_000

    def __call__(self) -> int:
        return self.now


@pytest.fixture
def ticks(monkeypatch):
    fake = _Ticks()
    monkeypatch.setattr(request_timer, "perf_counter_ns", fake)
    return fake


def test_start_stop_and_the_step_running(ticks):
    timer = RequestTimer()
    timer.start()
    ticks.now += 300
    assert timer.elapsed_ns() == 300        # the step now running counts
    timer.stop()
    ticks.now += 5_000                      # not on the request
    assert timer.elapsed_ns() == timer.ns == 300
    timer.stop()                            # a second stop adds nothing
    assert timer.ns == 300


async def test_steps_are_timed_and_waits_are_not(ticks):
    released = asyncio.get_running_loop().create_future()

    async def handler():
        ticks.now += 100                    # first step
        await released
        ticks.now += 40                     # second step
        return "answer"

    timer = RequestTimer()
    task = asyncio.ensure_future(timed(handler(), timer))
    await asyncio.sleep(0)
    assert timer.ns == 100 and not task.done()
    ticks.now += 10_000                     # waiting for the future: not counted
    released.set_result(None)
    assert await task == "answer"
    assert timer.ns == 140


async def test_an_error_and_a_cancellation_go_through(ticks):
    async def failing():
        ticks.now += 7
        raise ValueError("bad")

    timer = RequestTimer()
    with pytest.raises(ValueError):
        await timed(failing(), timer)
    assert timer.ns == 7

    cancelled = []

    async def waiting():
        try:
            await asyncio.sleep(3600)
        except asyncio.CancelledError:
            ticks.now += 3
            cancelled.append(True)
            raise

    timer = RequestTimer()
    task = asyncio.ensure_future(timed(waiting(), timer))
    await asyncio.sleep(0)
    task.cancel()
    with pytest.raises(asyncio.CancelledError):
        await task
    assert cancelled == [True] and timer.ns == 3
