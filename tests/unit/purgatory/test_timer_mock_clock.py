"""Timer on a MockClock: after the clock jumps past an armed deadline, new tasks still fire.

The loop handle armed for the old deadline is still its old real-time distance away; the
timer must not take it for "armed early enough" (else a rejoin's zero-delay join
deadline waits for the next advance()).
"""
from __future__ import annotations

import asyncio

from kafkapy.clock import MockClock
from kafkapy.purgatory.timer import Timer, TimerTask


class _Task(TimerTask):
    def __init__(self, delay_ms: int, name: str, ran: list[str]) -> None:
        super().__init__(delay_ms)
        self.name, self.ran = name, ran

    def run(self) -> None:
        self.ran.append(self.name)


async def test_task_added_after_a_jump_fires_without_another_advance():
    clock, ran = MockClock(), []
    timer = Timer(asyncio.get_running_loop(), clock)
    timer.add(_Task(30_000, "long", ran))
    clock.advance(30_001)
    timer.advance_clock()
    assert ran == ["long"]
    timer.add(_Task(0, "now", ran))
    timer.add(_Task(5, "soon", ran))
    clock.advance(5)
    for _ in range(3000):
        if len(ran) == 3:
            break
        await asyncio.sleep(0.01)
    assert ran == ["long", "now", "soon"]
    timer.close()


async def test_stale_handle_is_replaced_when_a_later_task_is_added():
    clock, ran = MockClock(), []
    timer = Timer(asyncio.get_running_loop(), clock)
    timer.add(_Task(60_000, "far", ran))        # armed a minute of real time away
    clock.advance(60_000)                         # no advance_clock(): the handle is stale
    timer.add(_Task(1, "next", ran))
    clock.advance(1)
    for _ in range(3000):
        if "next" in ran:
            break
        await asyncio.sleep(0.01)
    assert sorted(ran) == ["far", "next"]
    timer.close()
