"""LateAnswer: callbacks run inside set_result / set_exception, never on a later turn."""
from __future__ import annotations

import asyncio

import pytest

from kafkapy.api.late_answer import LateAnswer


def test_a_callback_runs_inside_set_result():
    answer = LateAnswer()
    seen = []
    answer.add_done_callback(lambda a: seen.append(a.result()))
    assert not answer.done() and seen == []
    answer.set_result("records")
    assert seen == ["records"]      # no event loop turned
    assert answer.done() and not answer.cancelled() and answer.exception() is None


def test_a_callback_added_after_the_answer_runs_at_once():
    answer = LateAnswer()
    answer.set_result(7)
    seen = []
    answer.add_done_callback(lambda a: seen.append(a.result()))
    assert seen == [7]


def test_an_error_is_the_answer_for_every_reader():
    answer = LateAnswer()
    seen = []
    answer.add_done_callback(lambda a: seen.append(a.exception()))
    error = ValueError("cannot answer")
    answer.set_exception(error)
    assert seen == [error] and answer.exception() is error
    with pytest.raises(ValueError):
        answer.result()


def test_no_answer_yet_and_no_second_answer():
    answer = LateAnswer()
    with pytest.raises(asyncio.InvalidStateError):
        answer.result()
    with pytest.raises(asyncio.InvalidStateError):
        answer.exception()
    answer.set_result(1)
    with pytest.raises(asyncio.InvalidStateError):
        answer.set_result(2)
    assert answer.result() == 1


def test_a_callback_that_raises_stays_out_of_the_giver():
    answer = LateAnswer()
    later = []

    def broken(_):
        raise RuntimeError("the taker's bug")

    answer.add_done_callback(broken)
    answer.add_done_callback(lambda a: later.append(a.result()))
    answer.set_result("v")          # does not raise
    assert later == ["v"]


async def test_awaiting_gets_the_value_or_the_error():
    answer = LateAnswer()
    asyncio.get_running_loop().call_soon(answer.set_result, "later")
    assert await answer == "later"
    assert await answer == "later"      # given already: at once
    failing = LateAnswer()
    asyncio.get_running_loop().call_soon(failing.set_exception, KeyError("k"))
    with pytest.raises(KeyError):
        await failing


async def test_a_cancelled_awaiter_leaves_the_answer_to_others():
    answer = LateAnswer()
    waiter = asyncio.ensure_future(_await(answer))
    await asyncio.sleep(0)
    waiter.cancel()
    await asyncio.sleep(0)
    seen = []
    answer.add_done_callback(lambda a: seen.append(a.result()))
    answer.set_result("kept")       # the cancelled await's future is not set twice
    assert seen == ["kept"] and waiter.cancelled()


async def _await(answer):
    return await answer
