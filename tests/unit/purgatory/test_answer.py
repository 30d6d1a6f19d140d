"""AnswerFuture: its one waiter runs inside set_result / set_exception / cancel (before
any done callback), at once when registered on a settled future, and a waiter that
raises leaves the outcome standing; awaiting and done callbacks are asyncio's."""
from __future__ import annotations

import asyncio

import pytest

from kafkapy.purgatory.answer import AnswerFuture, answer_future


async def test_the_waiter_runs_inside_set_result_before_done_callbacks():
    future = answer_future(asyncio.get_running_loop())
    seen = []
    future.add_done_callback(lambda f: seen.append(("callback", f.result())))
    future.on_result(lambda f: seen.append(("waiter", f.result())))
    future.set_result(5)
    assert seen == [("waiter", 5)]
    await asyncio.sleep(0)
    assert seen == [("waiter", 5), ("callback", 5)]
    assert await future == 5


async def test_a_waiter_registered_on_a_settled_future_runs_at_once():
    future = AnswerFuture(loop=asyncio.get_running_loop())
    future.set_result("x")
    seen = []
    future.on_result(lambda f: seen.append(f.result()))
    assert seen == ["x"]


async def test_exception_and_cancel_reach_the_waiter():
    loop = asyncio.get_running_loop()
    failed, cancelled = answer_future(loop), answer_future(loop)
    seen = []
    failed.on_result(lambda f: seen.append(type(f.exception()).__name__))
    cancelled.on_result(lambda f: seen.append(f.cancelled()))
    failed.set_exception(ValueError("no"))
    assert cancelled.cancel()
    assert seen == ["ValueError", True]
    assert not cancelled.cancel()    # already done: the waiter is not called again
    assert seen == ["ValueError", True]
    with pytest.raises(ValueError):
        await failed


async def test_a_raising_waiter_leaves_the_result():
    future = answer_future(asyncio.get_running_loop())

    def waiter(f):
        raise RuntimeError("waiter broke")
    future.on_result(waiter)
    future.set_result(1)           # does not raise
    assert future.result() == 1
