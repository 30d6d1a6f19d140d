"""Timing wheel and Timer: placement, cancel, promotion, order, far timers, time jumps,
and the single-handle loop driver."""
from __future__ import annotations

import asyncio
import random
import time

import pytest

from kafkapy.clock import SYSTEM_CLOCK, Clock, MockClock
from kafkapy.purgatory.timer import YOUNG_MS, Timer, TimerTask
from kafkapy.purgatory.timer_task_list import TaskCounter, TimerTaskEntry, TimerTaskList
from kafkapy.purgatory.timing_wheel import BucketQueue, TimingWheel

START = 1_000_007  # not a multiple of any wheel's tick, to exercise rounding
DAY_MS = 86_400_000


class Recorder(TimerTask):
    """Appends (name, clock time) to a shared log when run."""

    def __init__(self, delay_ms, name, log, clock):
        super().__init__(delay_ms)
        self.name = name
        self.log = log
        self.clock = clock

    def run(self):
        self.log.append((self.name, self.clock.monotonic_ms()))


@pytest.fixture
def clock():
    return MockClock(START)


@pytest.fixture
def timer(clock):
    return Timer(loop=None, clock=clock)


def schedule(timer, clock, log, delay_ms, name=None):
    task = Recorder(delay_ms, name if name is not None else delay_ms, log, clock)
    timer.add(task)
    return task


def step_to(timer, clock, time_ms):
    """Advance the mock clock to time_ms and let the timer run what expired."""
    clock.advance(time_ms - clock.monotonic_ms())
    return timer.advance_clock()


# --- the wheel on its own ----------------------------------------------------------

def make_wheel(start=START):
    counter, queue = TaskCounter(), BucketQueue()
    return TimingWheel(1, 20, start, counter, queue), counter, queue


def test_wheel_places_entry_in_bucket_with_its_expiration():
    wheel, counter, queue = make_wheel()
    entry = TimerTaskEntry(Recorder(0, "a", [], None), START + 7)
    assert wheel.add(entry)
    assert entry.list.expiration_ms == START + 7
    assert counter.value == 1
    assert queue.head_expiration() == START + 7


def test_wheel_refuses_expired_and_cancelled_entries():
    wheel, counter, _ = make_wheel()
    assert not wheel.add(TimerTaskEntry(Recorder(0, "now", [], None), START))
    task = Recorder(0, "c", [], None)
    entry = TimerTaskEntry(task, START + 5)
    task.cancel()
    assert not wheel.add(entry)
    assert counter.value == 0 and entry.list is None


def test_bucket_does_not_link_a_cancelled_entry():
    counter = TaskCounter()
    bucket = TimerTaskList(counter)
    task = Recorder(0, "c", [], None)
    entry = TimerTaskEntry(task, 10)
    task.cancel()
    bucket.add(entry)
    assert bucket.is_empty() and counter.value == 0 and entry.list is None


def test_wheel_creates_overflow_only_when_needed():
    wheel, _, _ = make_wheel()
    wheel.add(TimerTaskEntry(Recorder(0, "near", [], None), START + 19))
    assert wheel.overflow_wheel is None
    entry = TimerTaskEntry(Recorder(0, "far", [], None), START + 20)
    assert wheel.add(entry)
    assert wheel.overflow_wheel is not None
    assert wheel.overflow_wheel.tick_ms == 20
    # The coarse bucket's expiration is the deadline rounded down to 20 ms.
    assert entry.list.expiration_ms == (START + 20) // 20 * 20


def test_bucket_is_queued_once_per_expiration():
    wheel, _, queue = make_wheel()
    for _ in range(100):
        wheel.add(TimerTaskEntry(Recorder(0, "x", [], None), START + 3))
    assert len(queue) == 1


def test_bucket_queue_skips_a_stale_entry_of_a_rescheduled_bucket():
    queue = BucketQueue()
    wheel, _, _ = make_wheel()
    bucket = wheel._buckets[0]
    bucket.set_expiration(5)
    queue.offer(bucket)
    bucket.set_expiration(25)
    queue.offer(bucket)
    assert queue.poll(10) is None
    assert queue.poll(25) is bucket
    assert len(queue) == 0


def test_bucket_queue_polls_in_expiration_order():
    queue = BucketQueue()
    wheel, _, _ = make_wheel()
    for i, expiration in enumerate((30, 10, 20)):
        wheel._buckets[i].set_expiration(expiration)
        queue.offer(wheel._buckets[i])
    assert queue.poll(9) is None
    assert [queue.poll(100).expiration_ms for _ in range(3)] == [10, 20, 30]


def test_wheel_current_time_is_rounded_down_to_tick():
    wheel, _, _ = make_wheel()
    assert wheel.current_time_ms == START
    wheel.add(TimerTaskEntry(Recorder(0, "far", [], None), START + 500))
    assert wheel.overflow_wheel.current_time_ms == START // 20 * 20
    wheel.advance_clock(START + 45)
    assert wheel.current_time_ms == START + 45
    assert wheel.overflow_wheel.current_time_ms == (START + 45) // 20 * 20


# --- the timer with a mock clock ----------------------------------------------------

def test_task_runs_at_its_deadline_not_before(timer, clock):
    log = []
    schedule(timer, clock, log, 15)
    assert step_to(timer, clock, START + 14) == 0
    assert log == []
    assert step_to(timer, clock, START + 15) == 1
    assert log == [(15, START + 15)]
    assert timer.size == 0


def test_cancel_unlinks_and_task_never_runs(timer, clock):
    log = []
    tasks = [schedule(timer, clock, log, d) for d in (5, 5, 300, 70_000)]
    assert timer.size == 4
    bucket = tasks[0]._entry.list
    tasks[0].cancel()
    assert bucket.tasks() == [tasks[1]]
    for t in tasks[2:]:
        t.cancel()
    assert timer.size == 1
    assert not tasks[3].is_scheduled
    step_to(timer, clock, START + DAY_MS)
    assert [name for name, _ in log] == [5]


def test_cancel_twice_and_cancel_unscheduled_are_harmless(timer, clock):
    task = Recorder(10, "t", [], clock)
    task.cancel()
    timer.add(task)
    task.cancel()
    task.cancel()
    assert timer.size == 0


def test_readd_after_cancel_runs_once_at_new_deadline(timer, clock):
    log = []
    task = schedule(timer, clock, log, 10)
    task.cancel()
    step_to(timer, clock, START + 5)
    timer.add(task)  # now START+5, so deadline START+15
    step_to(timer, clock, START + 14)
    assert log == []
    step_to(timer, clock, START + 100)
    assert log == [(10, START + 100)]


def test_readd_while_scheduled_reschedules(timer, clock):
    log = []
    task = schedule(timer, clock, log, 10)
    task.delay_ms = 50
    timer.add(task)
    assert timer.size == 1
    step_to(timer, clock, START + 49)
    assert log == []
    step_to(timer, clock, START + 50)
    assert log == [(10, START + 50)]


def test_promotion_from_overflow_wheels_into_finest_wheel(timer, clock):
    log = []
    task = schedule(timer, clock, log, 30_000)
    deadline = START + 30_000
    coarse = task._entry.list.expiration_ms
    assert coarse < deadline - 400  # parked in an 8 s (or coarser) bucket
    seen = {id(task._entry.list)}  # buckets live as long as their wheels
    for t in [*range(START + 1000, deadline, 997), deadline - 1]:
        step_to(timer, clock, t)
        if task.is_scheduled:
            seen.add(id(task._entry.list))
    assert log == []
    # It moved down through finer wheels (8 s bucket -> 400 ms bucket -> the 1 ms
    # wheel, skipping levels it fits below); the finest bucket's expiration is the
    # deadline itself.
    assert task._entry.list.expiration_ms == deadline
    assert len(seen) >= 3
    step_to(timer, clock, deadline)
    assert log == [(30_000, deadline)]


def test_expiry_order_with_step_by_step_advance(timer, clock):
    rng = random.Random(7)
    log = []
    delays = [rng.randint(1, 5_000) for _ in range(2_000)]
    for i, d in enumerate(delays):
        schedule(timer, clock, log, d, name=(d, i))
    for t in range(START, START + 5_001, 13):
        step_to(timer, clock, t)
    step_to(timer, clock, START + 5_001)
    assert [name for name, _ in log] == sorted((d, i) for i, d in enumerate(delays))
    # Nothing ran early, and nothing later than the step it was due in.
    for (d, _), ran_at in log:
        assert START + d <= ran_at < START + d + 13 or ran_at == START + 5_001


def test_time_jump_runs_everything_in_deadline_order(timer, clock):
    rng = random.Random(11)
    log = []
    delays = [rng.randint(1, 3 * DAY_MS) for _ in range(3_000)]
    for i, d in enumerate(delays):
        schedule(timer, clock, log, d, name=(d, i))
    assert step_to(timer, clock, START + 3 * DAY_MS) == len(delays)
    assert [name for name, _ in log] == sorted((d, i) for i, d in enumerate(delays))
    assert timer.size == 0


def test_partial_time_jump_runs_only_what_expired(timer, clock):
    log = []
    for d in (5, 500, 50_000, 5_000_000):
        schedule(timer, clock, log, d)
    assert step_to(timer, clock, START + 60_000) == 3
    assert [name for name, _ in log] == [5, 500, 50_000]
    assert timer.size == 1
    assert step_to(timer, clock, START + 4_999_999) == 0
    assert step_to(timer, clock, START + 5_000_000) == 1


def test_many_timers_on_one_deadline_share_a_bucket(timer, clock):
    log = []
    tasks = [schedule(timer, clock, log, 250, name=i) for i in range(10_000)]
    step_to(timer, clock, START + YOUNG_MS)     # placed in the wheel
    assert len({id(t._entry.list) for t in tasks}) == 1
    step_to(timer, clock, START + 249)
    assert log == []
    assert step_to(timer, clock, START + 250) == 10_000
    assert [name for name, _ in log] == list(range(10_000))


def test_far_future_timer_days_away(timer, clock):
    log = []
    schedule(timer, clock, log, 3 * DAY_MS + 17)
    step_to(timer, clock, START + YOUNG_MS)     # placed in the wheel
    levels, wheel = 0, timer.wheel
    while wheel is not None:
        levels, wheel = levels + 1, wheel.overflow_wheel
    assert 7 <= levels <= 9  # 20 ms, 400 ms, 8 s, 160 s, 53 min, 17.8 h, 14.8 d
    for hour in range(1, 73):
        step_to(timer, clock, START + hour * 3_600_000)
    assert log == []
    step_to(timer, clock, START + 3 * DAY_MS + 16)
    assert log == []
    step_to(timer, clock, START + 3 * DAY_MS + 17)
    assert log == [(3 * DAY_MS + 17, START + 3 * DAY_MS + 17)]


def test_a_task_cancelled_while_young_never_enters_the_wheel(timer, clock):
    task = schedule(timer, clock, [], 500)
    assert task.is_scheduled and timer.size == 1
    assert timer.wheel.overflow_wheel is None   # 500 ms would need the 400 ms level
    clock.advance(YOUNG_MS - 1)
    task.cancel()
    assert not task.is_scheduled and timer.size == 0
    assert step_to(timer, clock, START + 1_000) == 0
    assert timer.wheel.overflow_wheel is None


def test_a_young_task_runs_at_its_own_expiration(timer, clock):
    log = []
    young = schedule(timer, clock, log, 500, name="young")
    clock.advance(10)
    later = schedule(timer, clock, log, YOUNG_MS, name="later")   # joins the young list
    step_to(timer, clock, START + YOUNG_MS)
    assert young.is_scheduled and timer.wheel.overflow_wheel is not None   # placed
    assert log == [] and timer.size == 2
    assert step_to(timer, clock, START + 10 + YOUNG_MS - 1) == 0
    assert step_to(timer, clock, START + 10 + YOUNG_MS) == 1
    assert step_to(timer, clock, START + 499) == 0
    assert step_to(timer, clock, START + 500) == 1
    assert [(name, at - START) for name, at in log] == [("later", 10 + YOUNG_MS),
                                                        ("young", 500)]
    assert not later.is_scheduled and timer.size == 0


def test_a_short_task_goes_to_the_wheel_at_once(timer, clock):
    log = []
    schedule(timer, clock, log, YOUNG_MS - 1)
    assert step_to(timer, clock, START + YOUNG_MS - 2) == 0
    assert step_to(timer, clock, START + YOUNG_MS - 1) == 1   # not held until YOUNG_MS


def test_zero_and_negative_delay_run_on_next_advance_not_inside_add(timer, clock):
    log = []
    schedule(timer, clock, log, 0)
    schedule(timer, clock, log, -5)
    assert log == [] and timer.size == 2
    assert timer.advance_clock() == 2
    assert [name for name, _ in log] == [0, -5]


def test_idle_timer_places_new_short_task_in_finest_wheel(timer, clock):
    clock.advance(3_600_000)  # an hour with nothing scheduled and no advance_clock call
    task = schedule(timer, clock, [], 5)
    assert task._entry.list.expiration_ms == clock.monotonic_ms() + 5


def test_overdue_bucket_emptied_by_cancel_does_not_hold_the_wheel_back(timer, clock):
    schedule(timer, clock, [], 5).cancel()
    clock.advance(3_600_000)
    task = schedule(timer, clock, [], 5)
    assert task._entry.list.expiration_ms == clock.monotonic_ms() + 5


def test_overdue_bucket_is_not_lost_when_its_slot_comes_round_again(timer, clock):
    # A is due at +5 but the timer has not fired yet when B lands in the same slot
    # one rotation later (+25): A must still run when the timer next advances.
    log = []
    schedule(timer, clock, log, 5, name="A")
    clock.advance(20)
    schedule(timer, clock, log, 5, name="B")
    timer.advance_clock()
    assert log == [("A", START + 20)]
    step_to(timer, clock, START + 25)
    assert log == [("A", START + 20), ("B", START + 25)]


def test_task_readding_itself_with_no_delay_does_not_loop(timer, clock):
    class Again(TimerTask):
        runs = 0

        def run(self):
            self.runs += 1
            timer.add(self)

    task = Again(0)
    timer.add(task)
    assert timer.advance_clock() == 1
    assert timer.advance_clock() == 1
    assert task.runs == 2 and timer.size == 1


def test_task_cancelled_by_earlier_task_of_same_batch_does_not_run(timer, clock):
    log = []
    victim = Recorder(10, "victim", log, clock)

    class Killer(TimerTask):
        def run(self):
            log.append(("killer", 0))
            victim.cancel()

    timer.add(Killer(10))
    timer.add(victim)
    assert step_to(timer, clock, START + 10) == 1
    assert log == [("killer", 0)]


def test_failing_task_does_not_stop_others(timer, clock, caplog):
    log = []

    class Boom(TimerTask):
        def run(self):
            raise RuntimeError("boom")

    timer.add(Boom(3))
    schedule(timer, clock, log, 3, name="after")
    step_to(timer, clock, START + 3)
    assert log == [("after", START + 3)]
    assert "boom" in caplog.text


def test_close_stops_adds(timer, clock):
    timer.close()
    schedule(timer, clock, [], 1)
    assert timer.size == 0


# --- the loop driver ------------------------------------------------------------------

def loop_factories():
    factories = [pytest.param(asyncio.new_event_loop, id="asyncio")]
    try:
        import uvloop
        factories.append(pytest.param(uvloop.new_event_loop, id="uvloop"))
    except ImportError:
        pass
    return factories


class CountingLoop:
    """Stands in for the loop, counting call_at: the timer should hold one handle."""

    def __init__(self, loop):
        self.loop = loop
        self.call_at_calls = 0

    def time(self):
        return self.loop.time()

    def call_at(self, when, callback):
        self.call_at_calls += 1
        return self.loop.call_at(when, callback)


class Waker(TimerTask):
    def __init__(self, delay_ms, name, log, done):
        super().__init__(delay_ms)
        self.name, self.log, self.done = name, log, done

    def run(self):
        self.log.append(self.name)
        if len(self.log) == self.done[0]:
            self.done[1].set()


@pytest.mark.parametrize("new_loop", loop_factories())
def test_loop_fires_real_timers_in_deadline_order(new_loop):
    loop = new_loop()
    try:
        log = []

        async def main():
            done = (4, asyncio.Event())
            timer = Timer(loop, SYSTEM_CLOCK)
            for d in (40, 10, 30, 20):
                timer.add(Waker(d, d, log, done))
            cancelled = Waker(15, "cancelled", log, done)
            timer.add(cancelled)
            cancelled.cancel()
            await asyncio.wait_for(done[1].wait(), 30)
            await asyncio.sleep(0.05)
            timer.close()

        loop.run_until_complete(main())
        assert log == [10, 20, 30, 40]
    finally:
        loop.close()


def run_counted(new_loop, body, clock=SYSTEM_CLOCK):
    """Run ``body(timer, counting, log)`` on a fresh loop whose handles are counted;
    return the names the tasks logged."""
    loop = new_loop()
    log = []

    async def main():
        counting = CountingLoop(loop)
        timer = Timer(counting, clock)
        try:
            await body(timer, counting, log)
        finally:
            timer.close()

    try:
        loop.run_until_complete(main())
    finally:
        loop.close()
    return log


@pytest.mark.parametrize("new_loop", loop_factories())
def test_loop_uses_one_handle_not_one_per_task(new_loop):
    async def body(timer, counting, log):
        # An earlier deadline re-arms (cancel + one new handle).  The first task is
        # far off so that no stall of this process can make it due in between.
        timer.add(Waker(60_000, "late", [], (0, asyncio.Event())))
        assert counting.call_at_calls == 1
        timer.add(Waker(5, "early", [], (0, asyncio.Event())))
        assert counting.call_at_calls == 2
        # Later deadlines never need re-arming: no handle for 1000 tasks.
        done = (1_000, asyncio.Event())
        for i in range(1_000):
            timer.add(Waker(200 + i // 100, i, log, done))
        assert counting.call_at_calls == 2
        await asyncio.wait_for(done[1].wait(), 30)
        # Firing re-arms once per distinct bucket at most, not once per task.
        assert counting.call_at_calls <= 2 + 50

    assert sorted(run_counted(new_loop, body)) == list(range(1_000))


@pytest.mark.parametrize("new_loop", loop_factories())
def test_loop_keeps_its_handle_through_a_stall(new_loop):
    """A process that stalls past the armed deadline (descheduled, or a long callback)
    finds its handle already due: adds made before the loop runs it keep that handle."""
    async def body(timer, counting, log):
        done = (1_000, asyncio.Event())
        for i in range(500):
            timer.add(Waker(50, i, log, done))
        time.sleep(0.1)  # the stall: the armed deadline passes with the loop blocked
        for i in range(500, 1_000):
            timer.add(Waker(50, i, log, done))
        assert counting.call_at_calls == 1
        await asyncio.wait_for(done[1].wait(), 30)

    assert sorted(run_counted(new_loop, body)) == list(range(1_000))


class StallingClock(Clock):
    """The real clock, whose next reading after ``stall_next`` is returned late, as when
    the process is descheduled (or collects garbage) between reading the clock and
    arming."""

    _stall_s = 0.0

    def stall_next(self, seconds):
        self._stall_s = seconds

    def monotonic_ms(self):
        now = super().monotonic_ms()
        stall, self._stall_s = self._stall_s, 0.0
        time.sleep(stall)
        return now


@pytest.mark.parametrize("new_loop", loop_factories())
def test_loop_keeps_its_handle_after_a_stall_while_arming(new_loop):
    """A stall between the add's clock reading and the arming must not push the armed
    deadline later than the task's: the next add, made once the task is due, keeps the
    handle."""
    clock = StallingClock()

    async def body(timer, counting, log):
        done = (2, asyncio.Event())
        clock.stall_next(0.05)
        timer.add(Waker(5, "first", log, done))  # read the clock, stall 50 ms, arm
        timer.add(Waker(5, "second", log, done))  # the first is 45 ms overdue
        assert counting.call_at_calls == 1
        await asyncio.wait_for(done[1].wait(), 30)

    assert run_counted(new_loop, body, clock) == ["first", "second"]
