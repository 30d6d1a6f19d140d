"""DelayedOperation, Purgatory, DelayedFetch and DelayedProduce on a mock clock."""
from __future__ import annotations

import pytest

from kafkapy.clock import MockClock
from kafkapy.protocol.errors import ErrorCode
from kafkapy.purgatory import (
    DelayedFetch, DelayedFollowerFetch, DelayedOperation, DelayedProduce, FetchPartitionStatus,
    LogOffsetMetadata,
    ProducePartitionStatus, Purgatory, Timer,
)

START = 5_000_003


class Op(DelayedOperation):
    """Completes when ``ready`` is set; records every callback."""

    def __init__(self, delay_ms, ready=False):
        super().__init__(delay_ms)
        self.ready = ready
        self.tries = 0
        self.events = []
        self.on_complete_hook = None
        self.on_expiration_hook = None

    def try_complete(self):
        self.tries += 1
        return self.force_complete() if self.ready else False

    def on_complete(self):
        self.events.append("complete")
        if self.on_complete_hook:
            self.on_complete_hook()

    def on_expiration(self):
        self.events.append("expire")
        if self.on_expiration_hook:
            self.on_expiration_hook()


@pytest.fixture
def clock():
    return MockClock(START)


@pytest.fixture
def timer(clock):
    return Timer(loop=None, clock=clock)


@pytest.fixture
def purgatory(timer):
    return Purgatory("test", timer, purge_interval_requests=1000)


def advance(timer, clock, ms):
    clock.advance(ms)
    return timer.advance_clock()


# --- DelayedOperation + Purgatory -------------------------------------------------------

def test_ready_op_completes_without_watching_or_timer(purgatory, timer):
    op = Op(100, ready=True)
    assert purgatory.try_complete_else_watch(op, ["a", "b"])
    assert op.events == ["complete"]
    assert purgatory.watched_count == 0
    assert purgatory.num_delayed == 0 and timer.size == 0


def test_waiting_op_is_watched_on_every_key_and_timed(purgatory, timer):
    op = Op(100)
    assert not purgatory.try_complete_else_watch(op, [("t", 0), ("t", 1)])
    assert op.tries == 2  # try, watch, try again
    assert purgatory.watched(("t", 0)) == 1 and purgatory.watched(("t", 1)) == 1
    assert purgatory.num_delayed == 1 and timer.size == 1


def test_second_try_after_watching_completes_without_timer(purgatory, timer):
    class ReadyOnSecondTry(Op):
        def try_complete(self):
            self.ready = self.tries == 1
            return super().try_complete()

    op = ReadyOnSecondTry(100)
    assert purgatory.try_complete_else_watch(op, ["k"])
    assert op.events == ["complete"]
    assert timer.size == 0 and purgatory.num_delayed == 0


def test_an_op_without_side_effects_is_tried_once_before_it_waits(purgatory, timer):
    class ReadsOnly(Op):
        try_again_when_watched = False

    op = ReadsOnly(100)
    assert not purgatory.try_complete_else_watch(op, ["k"])
    assert op.tries == 1
    assert purgatory.watched("k") == 1 and timer.size == 1


def test_an_op_the_caller_has_tried_is_watched_without_a_first_try(purgatory, timer):
    class ReadsOnly(Op):
        try_again_when_watched = False

    op = ReadsOnly(100)
    assert not purgatory.try_complete_else_watch(op, ["k"], tried=True)
    assert op.tries == 0
    assert purgatory.watched("k") == 1 and timer.size == 1
    op.ready = True
    assert purgatory.check_and_complete("k") == 1 and op.events == ["complete"]


def test_completes_exactly_once_on_event(purgatory, timer, clock):
    op = Op(100)
    purgatory.try_complete_else_watch(op, ["a", "b"])
    op.ready = True
    assert purgatory.check_and_complete("a") == 1
    assert purgatory.check_and_complete("b") == 0
    assert purgatory.check_and_complete("a") == 0
    assert not op.force_complete()
    advance(timer, clock, 1_000)
    assert op.events == ["complete"]
    assert timer.size == 0 and purgatory.num_delayed == 0 and purgatory.expirations == 0


def test_expires_exactly_once_after_on_complete(purgatory, timer, clock):
    op = Op(100)
    purgatory.try_complete_else_watch(op, ["a"])
    assert advance(timer, clock, 99) == 0
    assert op.events == []
    assert advance(timer, clock, 1) == 1
    assert op.events == ["complete", "expire"]
    op.ready = True
    assert purgatory.check_and_complete("a") == 0
    advance(timer, clock, 10_000)
    assert op.events == ["complete", "expire"]
    assert purgatory.expirations == 1 and purgatory.num_delayed == 0


def test_completion_attempts_from_on_expiration_lose(purgatory, timer, clock):
    op = Op(50)
    purgatory.try_complete_else_watch(op, ["a"])
    results = []

    def race():
        op.ready = True
        results.append(op.force_complete())
        results.append(op.try_complete())
        results.append(purgatory.check_and_complete("a"))

    op.on_expiration_hook = race
    advance(timer, clock, 50)
    assert results == [False, False, 0]
    assert op.events == ["complete", "expire"]


def test_event_completion_from_inside_expiry_on_complete_loses(purgatory, timer, clock):
    op = Op(50)
    purgatory.try_complete_else_watch(op, ["a"])
    results = []

    def event_during_expiry():
        op.ready = True
        results.append(purgatory.check_and_complete("a"))

    op.on_complete_hook = event_during_expiry
    advance(timer, clock, 50)
    assert results == [0]
    assert op.events == ["complete", "expire"]
    assert purgatory.expirations == 1


def test_expiry_from_inside_event_completion_does_nothing(purgatory, timer, clock):
    op = Op(50)
    purgatory.try_complete_else_watch(op, ["a"])
    ran = []
    op.on_complete_hook = lambda: ran.append(advance(timer, clock, 1_000))
    op.ready = True
    assert purgatory.check_and_complete("a") == 1
    assert ran == [0]  # the timer entry was cancelled before on_complete ran
    assert op.events == ["complete"]
    assert purgatory.expirations == 0


def test_check_and_complete_wakes_only_ops_watching_that_key(purgatory):
    a, b, ab = Op(100), Op(100), Op(100)
    purgatory.try_complete_else_watch(a, ["a"])
    purgatory.try_complete_else_watch(b, ["b"])
    purgatory.try_complete_else_watch(ab, ["a", "b"])
    for op in (a, b, ab):
        op.ready = True
        op.tries = 0
    assert purgatory.check_and_complete("a") == 2
    assert (a.tries, b.tries, ab.tries) == (1, 0, 1)
    assert b.events == []
    assert purgatory.check_and_complete("nobody") == 0


def test_completed_key_lists_are_forgotten(purgatory):
    op = Op(100)
    purgatory.try_complete_else_watch(op, ["a", "b"])
    op.ready = True
    purgatory.check_and_complete("a")
    assert purgatory.watched("a") == 0
    assert purgatory.watched("b") == 1  # removed lazily
    assert purgatory.watched_count == 1 and purgatory.key_count == 1
    purgatory.check_and_complete("b")
    assert purgatory.watched_count == 0 and purgatory.key_count == 0


def test_purge_removes_completed_ops_from_other_keys(timer):
    purgatory = Purgatory("p", timer, purge_interval_requests=3)
    done = []
    for i in range(4):
        op = Op(10_000)
        purgatory.try_complete_else_watch(op, [("own", i), "shared"])
        op.ready = True
        purgatory.check_and_complete(("own", i))
        done.append(op)
    # Each completion left a stale entry on "shared"; nothing has purged them yet.
    assert purgatory.watched("shared") == 4 and purgatory.purges == 0
    live = Op(10_000)
    purgatory.try_complete_else_watch(live, ["shared"])
    # 5 watched - 1 delayed > 3: the purge ran and kept only the live op.
    assert purgatory.purges == 1
    assert purgatory.watched("shared") == 1
    assert purgatory.watched_count == 1
    assert purgatory.key_count == 1  # the emptied ("own", i) lists are gone


def test_purge_completed_explicitly_counts_entries(purgatory, timer, clock):
    ops = [Op(10) for _ in range(3)]
    for op in ops:
        purgatory.try_complete_else_watch(op, ["x", "y"])
    advance(timer, clock, 10)  # all expire, still listed on both keys
    assert purgatory.watched_count == 6
    assert purgatory.purge_completed() == 6
    assert purgatory.watched_count == 0 and purgatory.key_count == 0


def test_on_complete_may_watch_a_new_op_on_the_same_key(purgatory):
    first, second = Op(100), Op(100)
    purgatory.try_complete_else_watch(first, ["k"])
    first.on_complete_hook = lambda: purgatory.try_complete_else_watch(second, ["k"])
    first.ready = True
    assert purgatory.check_and_complete("k") == 1
    assert purgatory.watched("k") == 1
    second.ready = True
    assert purgatory.check_and_complete("k") == 1


def test_shared_timer_counts_delayed_per_purgatory(timer, clock):
    fetches, produces = Purgatory("fetch", timer), Purgatory("produce", timer)
    fetches.try_complete_else_watch(Op(10), ["a"])
    produces.try_complete_else_watch(Op(20), ["a"])
    produces.try_complete_else_watch(Op(30), ["a"])
    assert (fetches.num_delayed, produces.num_delayed, timer.size) == (1, 2, 3)
    advance(timer, clock, 20)
    assert (fetches.num_delayed, produces.num_delayed) == (0, 1)
    assert (fetches.expirations, produces.expirations) == (1, 1)


def test_shutdown_drops_pending_ops_without_completing(purgatory, timer, clock):
    op = Op(10)
    purgatory.try_complete_else_watch(op, ["a"])
    purgatory.shutdown()
    assert timer.size == 0 and purgatory.watched_count == 0 and purgatory.num_delayed == 0
    advance(timer, clock, 100)
    assert op.events == []


def test_operation_without_keys_completes_at_once(purgatory, timer):
    op = Op(10)
    assert purgatory.try_complete_else_watch(op, []) is True
    assert op.is_completed and op.events == ["complete"]
    assert timer.size == 0 and purgatory.num_delayed == 0 and purgatory.watched_count == 0


# --- DelayedFetch ---------------------------------------------------------------------

class FakeLogs:
    """Per-partition end position (or error) as the fetch's partition_state sees it."""

    def __init__(self):
        self.ends = {}
        self.reads = 0

    def state(self, topic, partition):
        return self.ends.get((topic, partition), ErrorCode.UNKNOWN_TOPIC_OR_PARTITION)

    def read(self):
        self.reads += 1
        return {"read": self.reads}


def start_at(offset, segment=0, position=0):
    return LogOffsetMetadata(offset, segment, position)


def make_fetch(logs, responses, min_bytes, statuses, delay_ms=500):
    return DelayedFetch(delay_ms, min_bytes, statuses, logs.read, responses.append, logs.state)


def test_fetch_waits_until_bytes_over_all_partitions_reach_min_bytes(purgatory):
    logs, responses = FakeLogs(), []
    logs.ends[("t", 0)] = start_at(10, 0, 1_000)
    logs.ends[("t", 1)] = start_at(50, 0, 9_000)
    fetch = make_fetch(logs, responses, 150, [
        FetchPartitionStatus("t", 0, 10, 1_000_000, start_at(10, 0, 1_000)),
        FetchPartitionStatus("t", 1, 50, 1_000_000, start_at(50, 0, 9_000)),
    ])
    assert not purgatory.try_complete_else_watch(fetch, [("t", 0), ("t", 1)])
    logs.ends[("t", 0)] = start_at(12, 0, 1_100)  # 100 bytes
    assert purgatory.check_and_complete(("t", 0)) == 0
    logs.ends[("t", 1)] = start_at(51, 0, 9_049)  # +49 = 149
    assert purgatory.check_and_complete(("t", 1)) == 0
    logs.ends[("t", 1)] = start_at(52, 0, 9_050)  # +50 = 150
    assert purgatory.check_and_complete(("t", 1)) == 1
    assert responses == [{"read": 1}]  # read again on completion, not before


def test_fetch_bytes_per_partition_are_capped_at_max_bytes():
    logs, responses = FakeLogs(), []
    logs.ends[("t", 0)] = start_at(90, 0, 50_000)
    fetch = make_fetch(logs, responses, 100, [
        FetchPartitionStatus("t", 0, 10, 99, start_at(10, 0, 0))])
    assert not fetch.try_complete()
    fetch.partitions[0].max_bytes = 100
    assert fetch.try_complete()


@pytest.mark.parametrize("error", [ErrorCode.NOT_LEADER_OR_FOLLOWER,
                                   ErrorCode.UNKNOWN_TOPIC_OR_PARTITION])
def test_fetch_completes_at_once_on_partition_error(error):
    logs, responses = FakeLogs(), []
    logs.ends[("t", 0)] = start_at(10, 0, 0)
    fetch = make_fetch(logs, responses, 1_000, [
        FetchPartitionStatus("t", 0, 10, 1_000, start_at(10, 0, 0)),
        FetchPartitionStatus("t", 1, 10, 1_000, start_at(10, 0, 0))])
    logs.ends[("t", 1)] = start_at(10, 0, 0)
    assert not fetch.try_complete()
    logs.ends[("t", 1)] = error
    assert fetch.try_complete()
    assert responses == [{"read": 1}]


def test_fetch_completes_when_end_is_on_a_newer_segment():
    logs, responses = FakeLogs(), []
    logs.ends[("t", 0)] = start_at(11, 11, 0)  # segment rolled: no position diff to use
    fetch = make_fetch(logs, responses, 1_000, [
        FetchPartitionStatus("t", 0, 10, 1_000, start_at(10, 0, 4_000))])
    assert fetch.try_complete()


def test_fetch_completes_when_log_truncated_below_fetch_segment():
    logs, responses = FakeLogs(), []
    logs.ends[("t", 0)] = start_at(5, 0, 500)
    fetch = make_fetch(logs, responses, 1_000, [
        FetchPartitionStatus("t", 0, 30, 1_000, start_at(30, 20, 100))])
    assert fetch.try_complete()


def test_fetch_same_offset_on_new_segment_is_not_data():
    # The segment rolled but the end offset did not move: nothing new to read.
    logs, responses = FakeLogs(), []
    logs.ends[("t", 0)] = start_at(10, 10, 0)
    fetch = make_fetch(logs, responses, 1, [
        FetchPartitionStatus("t", 0, 10, 1_000, start_at(10, 0, 4_000))])
    assert not fetch.try_complete()


def test_fetch_partition_with_unknown_start_is_skipped():
    logs, responses = FakeLogs(), []
    logs.ends[("t", 0)] = start_at(99, 0, 99_999)
    fetch = make_fetch(logs, responses, 1, [FetchPartitionStatus("t", 0, 10, 1_000, None)])
    assert not fetch.try_complete()


def test_fetch_expiry_rereads_and_responds_once(purgatory, timer, clock):
    logs, responses = FakeLogs(), []
    logs.ends[("t", 0)] = start_at(10, 0, 0)
    fetch = make_fetch(logs, responses, 1, [
        FetchPartitionStatus("t", 0, 10, 1_000, start_at(10, 0, 0))], delay_ms=500)
    purgatory.try_complete_else_watch(fetch, [("t", 0)])
    advance(timer, clock, 499)
    assert responses == []
    advance(timer, clock, 1)
    assert responses == [{"read": 1}]
    assert purgatory.expirations == 1
    logs.ends[("t", 0)] = start_at(11, 0, 10)
    assert purgatory.check_and_complete(("t", 0)) == 0
    assert responses == [{"read": 1}]


# --- DelayedFollowerFetch -------------------------------------------------------------

class FollowerLog:
    """The bytes a follower's read finds past its fetch offset, counted per read."""

    def __init__(self):
        self.size = 0
        self.reads = 0

    def read(self):
        self.reads += 1
        return {"read": self.reads, "size": self.size}


def make_follower_fetch(log, responses, min_bytes=1, delay_ms=500):
    return DelayedFollowerFetch(delay_ms, log.read, lambda read: read["size"] >= min_bytes,
                                responses.append)


def test_follower_fetch_answers_with_the_read_that_completed_it(purgatory):
    log, responses = FollowerLog(), []
    fetch = make_follower_fetch(log, responses, min_bytes=100)
    assert not purgatory.try_complete_else_watch(fetch, [("t", 0)], tried=True)
    assert log.reads == 0   # the caller's own read said not ready
    log.size = 99
    assert purgatory.check_and_complete(("t", 0)) == 0
    assert responses == [] and log.reads == 1
    log.size = 100
    assert purgatory.check_and_complete(("t", 0)) == 1
    assert responses == [{"read": 2, "size": 100}] and log.reads == 2   # no third read
    assert purgatory.num_delayed == 0 and purgatory.expirations == 0


def test_follower_fetch_at_its_deadline_answers_a_read_made_then(purgatory, timer, clock):
    log, responses = FollowerLog(), []
    fetch = make_follower_fetch(log, responses, delay_ms=500)
    assert not purgatory.try_complete_else_watch(fetch, [("t", 0)])
    assert log.reads == 1   # not told it was tried: the purgatory tried once
    advance(timer, clock, 499)
    assert responses == []
    advance(timer, clock, 1)
    assert responses == [{"read": 2, "size": 0}]
    assert purgatory.expirations == 1 and purgatory.num_delayed == 0


# --- DelayedProduce -------------------------------------------------------------------

class FakeReplicas:
    def __init__(self, hws):
        self.hws = hws
        self.calls = []

    def hw_of(self, key):
        self.calls.append(key)
        return self.hws[key]


def make_produce(hws, statuses, responses, delay_ms=30_000):
    replicas = FakeReplicas(hws)
    return DelayedProduce(delay_ms, statuses, replicas.hw_of, responses.append), replicas


def test_produce_completes_when_every_hw_reaches_required_offset(purgatory):
    responses = []
    statuses = {("t", 0): ProducePartitionStatus(100, result="base 90"),
                ("t", 1): ProducePartitionStatus(7, result="base 5")}
    hws = {("t", 0): 90, ("t", 1): 5}
    produce, replicas = make_produce(hws, statuses, responses)
    assert not purgatory.try_complete_else_watch(produce, list(statuses))
    hws[("t", 1)] = 7
    assert purgatory.check_and_complete(("t", 1)) == 0
    assert not statuses[("t", 1)].acks_pending and statuses[("t", 0)].acks_pending
    hws[("t", 0)] = 99
    assert purgatory.check_and_complete(("t", 0)) == 0
    replicas.calls.clear()
    hws[("t", 0)] = 101
    assert purgatory.check_and_complete(("t", 0)) == 1
    assert replicas.calls == [("t", 0)]  # finished partitions are not asked again
    assert len(responses) == 1
    final = responses[0]
    assert {k: (s.error_code, s.result) for k, s in final.items()} == {
        ("t", 0): (ErrorCode.NO_ERROR, "base 90"), ("t", 1): (ErrorCode.NO_ERROR, "base 5")}


def test_produce_partition_error_finishes_that_partition():
    responses = []
    statuses = {"a": ProducePartitionStatus(10), "b": ProducePartitionStatus(10)}
    hws = {"a": ErrorCode.NOT_LEADER_OR_FOLLOWER, "b": 3}
    produce, _ = make_produce(hws, statuses, responses)
    assert not produce.try_complete()
    assert statuses["a"].error_code == ErrorCode.NOT_LEADER_OR_FOLLOWER
    assert not statuses["a"].acks_pending
    hws["b"] = 10
    assert produce.try_complete()
    assert [s.error_code for s in responses[0].values()] == [
        ErrorCode.NOT_LEADER_OR_FOLLOWER, ErrorCode.NO_ERROR]


def test_produce_partitions_failed_at_append_are_not_waited_for():
    responses = []
    statuses = {"bad": ProducePartitionStatus(-1, ErrorCode.CORRUPT_MESSAGE),
                "ok": ProducePartitionStatus(4)}
    produce, replicas = make_produce({"ok": 4}, statuses, responses)
    assert produce.try_complete()
    assert replicas.calls == ["ok"]
    assert statuses["bad"].error_code == ErrorCode.CORRUPT_MESSAGE


def test_produce_expiry_times_out_only_unfinished_partitions(purgatory, timer, clock):
    responses = []
    statuses = {"a": ProducePartitionStatus(10), "b": ProducePartitionStatus(10)}
    hws = {"a": 10, "b": 9}
    produce, _ = make_produce(hws, statuses, responses, delay_ms=30_000)
    assert not purgatory.try_complete_else_watch(produce, ["a", "b"])
    advance(timer, clock, 29_999)
    assert responses == []
    advance(timer, clock, 1)
    assert len(responses) == 1
    assert statuses["a"].error_code == ErrorCode.NO_ERROR
    assert statuses["b"].error_code == ErrorCode.REQUEST_TIMED_OUT == 7
    assert purgatory.expirations == 1
    hws["b"] = 10
    assert purgatory.check_and_complete("b") == 0
    assert len(responses) == 1
