"""DelayedShareFetch in a real purgatory on a mock-clock timer: it completes when its check
finds reads, at its deadline with None (read again), and when the check raises (the caller,
an append listener, never sees the exception)."""
from __future__ import annotations

from kafkapy.clock import MockClock
from kafkapy.purgatory import Purgatory, Timer
from kafkapy.share.delayed import CallbackTask, DelayedShareFetch, group_key, partition_key


def _purgatory():
    clock = MockClock(0)
    timer = Timer(None, clock)
    return clock, timer, Purgatory("ShareFetch", timer)


def test_completes_once_the_check_finds_reads():
    _, _, purgatory = _purgatory()
    found = {"reads": None}
    completed = []
    op = DelayedShareFetch(500, lambda: found["reads"], completed.append)
    assert not purgatory.try_complete_else_watch(op, [partition_key("t", 0)])
    assert purgatory.check_and_complete(partition_key("t", 0)) == 0
    found["reads"] = ["read"]
    assert purgatory.check_and_complete(partition_key("t", 0)) == 1
    assert completed == [["read"]]


def test_the_deadline_completes_with_none():
    clock, timer, purgatory = _purgatory()
    completed = []
    op = DelayedShareFetch(500, lambda: None, completed.append)
    purgatory.try_complete_else_watch(op, [group_key("g", "t", 0)])
    clock.advance(499)
    timer.advance_clock()
    assert completed == []
    clock.advance(1)
    timer.advance_clock()
    assert completed == [None] and purgatory.expirations == 1


def test_a_failing_check_completes_instead_of_raising():
    _, _, purgatory = _purgatory()
    calls = []

    def check():
        calls.append(1)
        if len(calls) > 2:
            raise RuntimeError("broken")
        return None

    completed = []
    op = DelayedShareFetch(500, check, completed.append)
    purgatory.try_complete_else_watch(op, [partition_key("t", 0)])
    assert purgatory.check_and_complete(partition_key("t", 0)) == 1
    assert completed == [None]


def test_callback_task_runs_on_the_timer():
    clock, timer, _ = _purgatory()
    ran = []
    timer.add(CallbackTask(100, lambda: ran.append(clock.monotonic_ms())))
    clock.advance(100)
    timer.advance_clock()
    assert ran == [100]
