"""ISR maintenance on the leader (Kafka 3.9's Partition): shrink after
replica.lag.time.max.ms, expansion once a follower is in sync, the pending states
(one change in flight; the HW counts a pending expansion's member, not a pending
shrink), the controller's answers, and the high watermark's rules (caught-up
followers about to join hold it; it stops under min.insync.replicas).

Real logs on a mock clock; the AlterPartitionManager is a recorder."""
from __future__ import annotations

import pytest
from kafka.record.default_records import DefaultRecordBatchBuilder

from kafkapy import metrics
from kafkapy.clock import MockClock
from kafkapy.log.log import Log
from kafkapy.metadata.cache import PartitionState
from kafkapy.protocol.errors import ErrorCode
from kafkapy.replication.partition import EXPAND, SHRINK, Partition

TS = 1_700_000_000_000
LAG = 10_000


class Manager:
    """The AlterPartitionManager surface a partition uses."""

    def __init__(self) -> None:
        self.replica_lag_time_max_ms = LAG
        self.sent: list = []
        self.dead: set[int] = set()

    def is_replica_eligible(self, broker_id: int) -> bool:
        return broker_id not in self.dead

    def submit(self, partition, pending) -> bool:
        self.sent.append(pending)
        return True


def batch(n=3) -> bytes:
    b = DefaultRecordBatchBuilder(2, 0, False, -1, -1, -1, 1 << 22)
    for i in range(n):
        b.append(i, timestamp=TS + i, key=b"k%d" % i, value=b"v" * 20, headers=[])
    return bytes(b.build())


def state(epoch, isr, replicas=(0, 1, 2), zk_version=0):
    return PartitionState(0, list(replicas), 0, epoch, list(isr), zk_version=zk_version)


@pytest.fixture
def clock():
    return MockClock(TS)


def leader(tmp_path, clock, isr, replicas=(0, 1, 2), config=None, manager=None):
    log = Log.load(str(tmp_path / "t-0"), config or {}, clock)
    p = Partition("t", 0, log, state(-1, [], replicas), 0,
                  isr_manager=manager if manager is not None else Manager())
    p.make_leader(state(1, isr, replicas))
    return p


def produce(p, n=3) -> None:
    assert p.append_as_leader(batch(n), 9).error_code == 0


# -- shrink ---------------------------------------------------------------------------
def test_lagging_follower_is_proposed_out_after_the_lag(tmp_path, clock):
    p = leader(tmp_path, clock, [0, 1, 2])
    manager = p.isr_manager
    produce(p, 5)
    p.update_follower_fetch(1, 5, clock.time_ms())
    assert p.maybe_shrink_isr() is False, "within replica.lag.time.max.ms"
    clock.advance(LAG + 1)
    p.update_follower_fetch(1, 5, clock.time_ms())      # 1 keeps up, 2 never fetched
    assert p.out_of_sync_replicas(clock.time_ms()) == [2]
    assert p.maybe_shrink_isr() is True
    pending = manager.sent[-1]
    assert (pending.kind, pending.new_isr, pending.leader_epoch, pending.partition_epoch) == (
        SHRINK, [0, 1], 1, 0)
    # Pending: the committed ISR (and the maximal one) still hold 2; no second proposal.
    assert p.state.isr == [0, 1, 2] and p.maximal_isr == [0, 1, 2] and p.isr_inflight
    assert p.high_watermark == 0
    assert p.maybe_shrink_isr() is False and len(manager.sent) == 1
    shrinks = metrics.counters.BROKER.isr_shrinks
    moved, retry = p.alter_partition_answered(pending, 0, 1, [0, 1], 1)
    assert (moved, retry) == (True, False)
    assert p.state.isr == [0, 1] and p.partition_epoch == 1 and not p.isr_inflight
    assert p.high_watermark == 5, "2 no longer holds the high watermark"
    assert metrics.counters.BROKER.isr_shrinks == shrinks + 1
    assert p.is_under_replicated and p.in_sync_count == 2


def test_follower_behind_but_reaching_the_previous_leader_end_stays_in(tmp_path, clock):
    """Kafka's lastFetchLeaderLogEndOffset: a follower never at the current end, but
    always at the end the leader had at its previous fetch, is caught up."""
    p = leader(tmp_path, clock, [0, 1], replicas=(0, 1))
    for _ in range(5):
        produce(p, 2)
        p.update_follower_fetch(1, p.log.log_end_offset - 2, clock.time_ms())
        clock.advance(LAG // 2)
    assert p.out_of_sync_replicas(clock.time_ms()) == []
    clock.advance(LAG + 1)
    assert p.out_of_sync_replicas(clock.time_ms()) == [1]


# -- expand ---------------------------------------------------------------------------
def test_follower_in_sync_is_proposed_in_and_holds_the_hw_while_pending(tmp_path, clock):
    p = leader(tmp_path, clock, [0, 1])
    manager = p.isr_manager
    produce(p, 4)
    now = clock.time_ms()
    p.update_follower_fetch(1, 4, now)
    assert p.high_watermark == 4
    clock.advance(LAG + 1)                      # 2's join-wait is over: not caught up
    produce(p, 4)
    p.update_follower_fetch(2, 2, clock.time_ms())  # below the HW: not in sync
    assert manager.sent == []
    p.update_follower_fetch(2, 4, clock.time_ms())
    pending = manager.sent[-1]
    assert (pending.kind, pending.new_isr) == (EXPAND, [0, 1, 2])
    assert p.state.isr == [0, 1] and p.maximal_isr == [0, 1, 2]
    p.update_follower_fetch(1, 8, clock.time_ms())
    assert p.high_watermark == 4, "the member being added holds the HW"
    expands = metrics.counters.BROKER.isr_expands
    assert p.alter_partition_answered(pending, 0, 1, [0, 1, 2], 1) == (False, False)
    assert p.state.isr == [0, 1, 2] and not p.is_under_replicated
    assert metrics.counters.BROKER.isr_expands == expands + 1
    p.update_follower_fetch(2, 8, clock.time_ms())
    assert p.high_watermark == 8


def test_expansion_waits_for_the_leader_epoch_start_offset(tmp_path, clock):
    """Kafka's isFollowerInSync: at or past the HW is not enough, the follower must
    also have reached where this leader's epoch began."""
    log = Log.load(str(tmp_path / "t-0"), {}, clock)
    p = Partition("t", 0, log, state(-1, []), 0, isr_manager=Manager())
    p.make_follower(PartitionState(0, [0, 1, 2], 1, 0, [0, 1, 2]))
    src = Log.load(str(tmp_path / "src" / "t-0"), {}, clock)
    src_p = Partition("t", 0, src, PartitionState(0, [9], 9, 0, [9]), 9)
    src_p.append_as_leader(batch(6), 9)
    p.append_as_follower(src.read_bytes(0, 1 << 20))
    p.make_leader(state(1, [0]))                # epoch 1 starts at 6; HW is 0
    p.update_follower_fetch(1, 3, clock.time_ms())
    assert p.isr_manager.sent == []
    p.update_follower_fetch(1, 6, clock.time_ms())
    assert p.isr_manager.sent[-1].new_isr == [0, 1]


def test_dead_follower_is_not_proposed(tmp_path, clock):
    manager = Manager()
    manager.dead.add(2)
    p = leader(tmp_path, clock, [0, 1], manager=manager)
    p.update_follower_fetch(2, 0, clock.time_ms())
    assert manager.sent == []


# -- answers --------------------------------------------------------------------------
def test_leader_and_isr_supersedes_the_pending_change(tmp_path, clock):
    p = leader(tmp_path, clock, [0, 1, 2])
    clock.advance(LAG + 1)
    p.maybe_shrink_isr()
    pending = p.pending_isr
    p.make_leader(state(2, [0, 1, 2], zk_version=5))
    assert p.pending_isr is None
    assert p.alter_partition_answered(pending, 0, 1, [0], 1) == (False, False)
    assert p.state.isr == [0, 1, 2] and p.partition_epoch == 5


@pytest.mark.parametrize("code, committed, retry", [
    (ErrorCode.INELIGIBLE_REPLICA, True, False),
    (ErrorCode.OPERATION_NOT_ATTEMPTED, True, False),
    (ErrorCode.FENCED_LEADER_EPOCH, False, False),
    (ErrorCode.INVALID_UPDATE_VERSION, False, False),
    (ErrorCode.UNKNOWN_TOPIC_OR_PARTITION, False, False),
    (ErrorCode.NOT_CONTROLLER, False, True),
])
def test_errors(tmp_path, clock, code, committed, retry):
    """Kafka's handleAlterPartitionError: back to the committed state when the
    controller says nothing was applied; wait for metadata when the state moved on;
    send again otherwise."""
    p = leader(tmp_path, clock, [0, 1, 2])
    clock.advance(LAG + 1)
    p.maybe_shrink_isr()
    pending = p.pending_isr
    assert p.alter_partition_answered(pending, code) == (False, retry)
    assert (p.pending_isr is None) == committed
    assert p.state.isr == [0, 1, 2]


def test_stale_answer_keeps_the_change_pending(tmp_path, clock):
    p = leader(tmp_path, clock, [0, 1, 2])
    clock.advance(LAG + 1)
    p.maybe_shrink_isr()
    pending = p.pending_isr
    assert p.alter_partition_answered(pending, 0, 7, [0], 3) == (False, False)
    assert p.pending_isr is pending and p.state.isr == [0, 1, 2]


# -- the high watermark -----------------------------------------------------------------
class Refusing(Manager):
    """A manager with a change already queued for the partition: every proposal is
    refused (Kafka's OPERATION_NOT_ATTEMPTED), so nothing is pending."""

    def submit(self, partition, pending) -> bool:
        return False


def test_caught_up_follower_outside_the_isr_holds_the_hw(tmp_path, clock):
    """Kafka's shouldWaitForReplicaToJoinIsr: follower 1, outside the ISR, caught up a
    moment ago, holds the HW until it lags for longer than replica.lag.time.max.ms."""
    p = leader(tmp_path, clock, [0], replicas=(0, 1), manager=Refusing())
    produce(p, 4)
    assert p.high_watermark == 4, "1 never fetched: not waited for"
    p.update_follower_fetch(1, 4, clock.time_ms())
    assert p.pending_isr is None
    produce(p, 4)
    assert p.high_watermark == 4, "1 was caught up a moment ago: its LEO holds the HW"
    clock.advance(LAG + 1)
    produce(p, 1)
    assert p.high_watermark == 9, "1 lags for longer than the lag time: no longer waited for"


def test_hw_stops_under_min_isr(tmp_path, clock):
    """Kafka 3.9 (KIP-966): no HW advance while the ISR is below min.insync.replicas."""
    p = leader(tmp_path, clock, [0], config={"min.insync.replicas": 2})
    clock.advance(LAG + 1)
    produce(p, 3)
    assert p.is_under_min_isr and p.high_watermark == 0
    q = leader(tmp_path / "b", clock, [0], replicas=(0,), config={"min.insync.replicas": 2})
    produce(q, 3)
    assert q.effective_min_isr == 1 and q.high_watermark == 3, "min ISR capped at RF"


def test_no_manager_no_isr_changes(tmp_path, clock):
    log = Log.load(str(tmp_path / "t-0"), {}, clock)
    p = Partition("t", 0, log, state(-1, []), 0)
    p.make_leader(state(1, [0, 1, 2]))
    clock.advance(LAG * 10)
    assert p.maybe_shrink_isr() is False and p.pending_isr is None
