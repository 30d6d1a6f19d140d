"""acks=all and min.insync.replicas (kafkapy.replication.acks) on fake partitions.

A fake partition has an ISR, a replica list, a min.insync.replicas config and a
high watermark the test moves; the waits go through the real door, the replica
manager's ``await_replication`` (Produce's acks=-1, WriteTxnMarkers, the coordinators'
writes), with its produce purgatory and timer real on a mock clock.  Kafka 3.9's rules: NOT_ENOUGH_REPLICAS before the append when
the ISR is below the effective min ISR (min(min.insync.replicas, replication
factor)); after the append the wait ends NO_ERROR when the high watermark passes
the data, NOT_ENOUGH_REPLICAS_AFTER_APPEND if the ISR is by then below min ISR,
NOT_LEADER_OR_FOLLOWER when leadership moved, REQUEST_TIMED_OUT at the deadline.
"""
from __future__ import annotations

import asyncio
from types import SimpleNamespace

import pytest

from kafkapy.api.late_answer import LateAnswer
from kafkapy.clock import MockClock
from kafkapy.log.manager import LogManager
from kafkapy.protocol.errors import ErrorCode as E
from kafkapy.purgatory import Purgatory, Timer
from kafkapy.replication import acks
from kafkapy.replication.partition import AppendResult
from kafkapy.replication.replica_manager import ReplicaManager


class FakePartition:
    def __init__(self, replicas=(1, 2, 3), isr=(1, 2, 3), min_isr=2, leader=1) -> None:
        self.state = SimpleNamespace(replicas=list(replicas), isr=list(isr), leader=leader)
        self.log = SimpleNamespace(config=SimpleNamespace(values={"min.insync.replicas": min_isr}),
                                   log_start_offset=7)
        self.is_leader = True
        self.high_watermark = 0
        self._pending_isr = None

    @property
    def maximal_isr(self) -> list:
        """As Partition's: the ISR, or a pending expansion a test sets."""
        return self.state.isr if self._pending_isr is None else self._pending_isr

    @maximal_isr.setter
    def maximal_isr(self, isr) -> None:
        self._pending_isr = isr


class Replicas:
    """A real ReplicaManager whose purgatories run on a timer over a mock clock; the test
    puts fake partitions in it and moves their high watermarks."""

    def __init__(self, tmp_path, loop) -> None:
        self.loop = loop
        self.clock = MockClock(1_000_000)
        self.timer = Timer(loop=None, clock=self.clock)
        self.manager = ReplicaManager(LogManager([str(tmp_path)], self.clock, {}), 1,
                                      lambda name: {}, clock=self.clock)
        self.manager.attach_purgatories(Purgatory("Fetch", self.timer, 1000),
                                        Purgatory("Produce", self.timer, 1000), loop)
        self.partitions = self.manager.partitions

    def wait(self, results, timeout_ms: int, respond=list):
        return self.manager.await_replication(results, timeout_ms, respond)

    def move_hw(self, key, hw: int) -> None:
        self.partitions[key].high_watermark = hw
        self.manager.appended(key)      # what an append or a follower's fetch calls

    def advance(self, ms: int) -> None:
        self.clock.advance(ms)
        self.timer.advance_clock()


@pytest.fixture
def replicas(tmp_path):
    loop = asyncio.new_event_loop()
    yield Replicas(tmp_path, loop)
    loop.close()


KEY = ("t", 0)


def appended(base: int, last: int) -> AppendResult:
    return AppendResult(0, base_offset=base, log_start_offset=0, last_offset=last)


# -- before the append -----------------------------------------------------------------------

def test_isr_below_min_isr_refuses_with_kafkas_message():
    refused = acks.min_isr_error(FakePartition(isr=(1,), min_isr=2), "t", 0)
    assert refused.error_code == E.NOT_ENOUGH_REPLICAS
    assert refused.error_message == ("The size of the current ISR Set(1) is insufficient to "
                                     "satisfy the min.isr requirement of 2 for partition t-0")
    assert refused.log_start_offset == 7 and not refused.message_is_public


def test_isr_at_min_isr_appends():
    assert acks.min_isr_error(FakePartition(isr=(1, 2), min_isr=2), "t", 0) is None


def test_min_isr_above_the_replication_factor_is_capped_by_it():
    """Kafka's effectiveMinIsr: a single-replica topic with min.insync.replicas=3 takes
    acks=all writes (single-broker behaviour unchanged)."""
    single = FakePartition(replicas=(1,), isr=(1,), min_isr=3)
    assert acks.effective_min_isr(single) == 1
    assert acks.min_isr_error(single, "t", 0) is None
    two = FakePartition(replicas=(1, 2), isr=(1,), min_isr=3)
    assert acks.min_isr_error(two, "t", 0).error_code == E.NOT_ENOUGH_REPLICAS


# -- after the append ---------------------------------------------------------------------------

def test_completes_when_the_high_watermark_passes(replicas):
    replicas.partitions[KEY] = FakePartition()
    out = replicas.wait([("t", 0, appended(5, 9))], 30000, list)
    assert acks.is_pending(out)
    replicas.move_hw(KEY, 9)
    assert not out.done()
    replicas.move_hw(KEY, 10)
    [(topic, index, result)] = out.result()
    assert (topic, index, result.error_code, result.base_offset) == ("t", 0, 0, 5)


def test_answers_at_once_when_already_replicated(replicas):
    partition = FakePartition(replicas=(1,), isr=(1,))
    partition.high_watermark = 10
    replicas.partitions[KEY] = partition
    out = replicas.wait([("t", 0, appended(5, 9))], 30000, list)
    assert out[0][2].error_code == 0


def test_isr_shrunk_below_min_isr_while_waiting_is_after_append(replicas):
    partition = replicas.partitions[KEY] = FakePartition()
    out = replicas.wait([("t", 0, appended(0, 0))], 30000, list)
    partition.state.isr = [1]          # the followers left the ISR, the HW follows the leader
    replicas.move_hw(KEY, 1)
    assert out.result()[0][2].error_code == E.NOT_ENOUGH_REPLICAS_AFTER_APPEND


def test_maximal_isr_counts_for_after_append(replicas):
    """A pending ISR expansion (Kafka's maximalIsr) counts for the check after the append."""
    partition = replicas.partitions[KEY] = FakePartition(isr=(1,))
    partition.maximal_isr = [1, 2]
    out = replicas.wait([("t", 0, appended(0, 0))], 30000, list)
    replicas.move_hw(KEY, 1)
    assert out.result()[0][2].error_code == 0


def test_leadership_lost_while_waiting(replicas):
    partition = replicas.partitions[KEY] = FakePartition()
    out = replicas.wait([("t", 0, appended(0, 0))], 30000, list)
    partition.is_leader = False
    replicas.manager.appended(KEY)
    assert out.result()[0][2].error_code == E.NOT_LEADER_OR_FOLLOWER


def test_deadline_is_request_timed_out(replicas):
    replicas.partitions[KEY] = FakePartition()
    out = replicas.wait([("t", 0, appended(0, 0))], 1000, list)
    replicas.advance(999)
    assert not out.done()
    replicas.advance(2)
    assert out.result()[0][2].error_code == E.REQUEST_TIMED_OUT


def test_failed_partitions_do_not_wait(replicas):
    replicas.partitions[KEY] = FakePartition()
    refused = AppendResult(E.NOT_ENOUGH_REPLICAS)
    out = replicas.wait([("t", 0, refused)], 1000, list)
    assert out[0][2].error_code == E.NOT_ENOUGH_REPLICAS


def test_one_coordinator_write_answers_its_error_code(replicas):
    """A coordinator's write waits alone and is answered with its error code."""
    def code(done):
        return done[0][2].error_code
    replicas.partitions[KEY] = FakePartition()
    assert replicas.wait([("t", 0, AppendResult(E.NOT_ENOUGH_REPLICAS))], 5000, code) \
        == E.NOT_ENOUGH_REPLICAS
    out = replicas.wait([("t", 0, appended(3, 3))], 5000, code)
    replicas.move_hw(KEY, 4)
    assert out.result() == 0


# -- then ---------------------------------------------------------------------------------------

def test_then_on_a_value_and_on_a_future(replicas):
    assert acks.then(3, lambda v: v + 1) == 4
    future = replicas.loop.create_future()
    chained = acks.then(future, lambda v: v + 1)
    future.set_result(3)
    replicas.loop.run_until_complete(asyncio.sleep(0))
    assert chained.result() == 4


def test_a_clients_write_waits_in_a_late_answer_given_where_the_hw_moves(replicas):
    replicas.partitions[KEY] = FakePartition()
    out = replicas.manager.await_replication([("t", 0, appended(0, 4))], 30000, list,
                                             late=True)
    assert isinstance(out, LateAnswer) and acks.is_pending(out)
    given = []
    out.add_done_callback(lambda answer: given.append(answer.result()))
    replicas.move_hw(KEY, 5)
    assert given == [out.result()]          # no loop turned


def test_then_on_a_late_answer(replicas):
    async def chain():
        answer = LateAnswer()
        chained = acks.then(answer, lambda v: v + 1)
        answer.set_result(3)
        return await chained
    assert replicas.loop.run_until_complete(chain()) == 4
