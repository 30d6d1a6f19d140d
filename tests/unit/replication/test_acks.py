"""acks=all and min.insync.replicas (kafkapy.replication.acks) on fake partitions.

A fake partition has an ISR, a replica list, a min.insync.replicas config and a
high watermark the test moves; the produce purgatory and its timer are real and
run on a mock clock.  Kafka 3.9's rules: NOT_ENOUGH_REPLICAS before the append when
the ISR is below the effective min ISR (min(min.insync.replicas, replication
factor)); after the append the wait ends NO_ERROR when the high watermark passes
the data, NOT_ENOUGH_REPLICAS_AFTER_APPEND if the ISR is by then below min ISR,
NOT_LEADER_OR_FOLLOWER when leadership moved, REQUEST_TIMED_OUT at the deadline.
"""
from __future__ import annotations

import asyncio
from types import SimpleNamespace

import pytest

from kafkapy.clock import MockClock
from kafkapy.protocol.errors import ErrorCode as E
from kafkapy.purgatory import Purgatory, Timer
from kafkapy.replication import acks
from kafkapy.replication.partition import AppendResult


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


class FakeBroker:
    """What acks needs of a broker: partitions, the produce purgatory, the loop."""

    def __init__(self, loop, clock) -> None:
        self.clock = clock
        self.timer = Timer(loop=None, clock=clock)
        self.produce_purgatory = Purgatory("Produce", self.timer, purge_interval_requests=1000)
        self.replica_manager = SimpleNamespace(partitions={})
        self.loop = loop

    def move_hw(self, key, hw: int) -> None:
        self.replica_manager.partitions[key].high_watermark = hw
        self.produce_purgatory.check_and_complete(key)

    def advance(self, ms: int) -> None:
        self.clock.advance(ms)
        self.timer.advance_clock()


@pytest.fixture
def broker():
    loop = asyncio.new_event_loop()
    b = FakeBroker(loop, MockClock(1_000_000))
    yield b
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

def test_completes_when_the_high_watermark_passes(broker):
    broker.replica_manager.partitions[KEY] = FakePartition()
    out = acks.await_replication(broker, [("t", 0, appended(5, 9))], 30000, list)
    assert acks.is_pending(out)
    broker.move_hw(KEY, 9)
    assert not out.done()
    broker.move_hw(KEY, 10)
    [(topic, index, result)] = out.result()
    assert (topic, index, result.error_code, result.base_offset) == ("t", 0, 0, 5)


def test_answers_at_once_when_already_replicated(broker):
    partition = FakePartition(replicas=(1,), isr=(1,))
    partition.high_watermark = 10
    broker.replica_manager.partitions[KEY] = partition
    out = acks.await_replication(broker, [("t", 0, appended(5, 9))], 30000, list)
    assert out[0][2].error_code == 0


def test_isr_shrunk_below_min_isr_while_waiting_is_after_append(broker):
    partition = broker.replica_manager.partitions[KEY] = FakePartition()
    out = acks.await_replication(broker, [("t", 0, appended(0, 0))], 30000, list)
    partition.state.isr = [1]          # the followers left the ISR, the HW follows the leader
    broker.move_hw(KEY, 1)
    assert out.result()[0][2].error_code == E.NOT_ENOUGH_REPLICAS_AFTER_APPEND


def test_maximal_isr_counts_for_after_append(broker):
    """A pending ISR expansion (Kafka's maximalIsr) counts for the check after the append."""
    partition = broker.replica_manager.partitions[KEY] = FakePartition(isr=(1,))
    partition.maximal_isr = [1, 2]
    out = acks.await_replication(broker, [("t", 0, appended(0, 0))], 30000, list)
    broker.move_hw(KEY, 1)
    assert out.result()[0][2].error_code == 0


def test_leadership_lost_while_waiting(broker):
    partition = broker.replica_manager.partitions[KEY] = FakePartition()
    out = acks.await_replication(broker, [("t", 0, appended(0, 0))], 30000, list)
    partition.is_leader = False
    broker.produce_purgatory.check_and_complete(KEY)
    assert out.result()[0][2].error_code == E.NOT_LEADER_OR_FOLLOWER


def test_deadline_is_request_timed_out(broker):
    broker.replica_manager.partitions[KEY] = FakePartition()
    out = acks.await_replication(broker, [("t", 0, appended(0, 0))], 1000, list)
    broker.advance(999)
    assert not out.done()
    broker.advance(2)
    assert out.result()[0][2].error_code == E.REQUEST_TIMED_OUT


def test_failed_partitions_do_not_wait(broker):
    broker.replica_manager.partitions[KEY] = FakePartition()
    refused = AppendResult(E.NOT_ENOUGH_REPLICAS)
    out = acks.await_replication(broker, [("t", 0, refused)], 1000, list)
    assert out[0][2].error_code == E.NOT_ENOUGH_REPLICAS


def test_replicated_one_coordinator_write(broker):
    broker.replica_manager.partitions[KEY] = FakePartition()
    assert acks.replicated(broker, KEY, AppendResult(E.NOT_ENOUGH_REPLICAS), 5000) \
        == E.NOT_ENOUGH_REPLICAS
    out = acks.replicated(broker, KEY, appended(3, 3), 5000)
    broker.move_hw(KEY, 4)
    assert out.result() == 0


# -- then ---------------------------------------------------------------------------------------

def test_then_on_a_value_and_on_a_future(broker):
    assert acks.then(3, lambda v: v + 1) == 4
    future = broker.loop.create_future()
    chained = acks.then(future, lambda v: v + 1)
    future.set_result(3)
    broker.loop.run_until_complete(asyncio.sleep(0))
    assert chained.result() == 4
