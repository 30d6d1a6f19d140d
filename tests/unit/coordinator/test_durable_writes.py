"""Coordinator writes are durable: answered once the high watermark passes them (Kafka's
storeOffsets / storeGroup / appendTransactionToLog with acks=-1).

The group coordinator writes through a real Partition over a real Log (as in
coordinator/group/test_coordinator.py); its store's ``replicate`` hook is a future the test
resolves with the outcome of the wait (0 once the high watermark passed the write, else the
append error).  The transaction coordinator gets a store whose writes stay pending
the same way.  Meanwhile the group (CompletingRebalance) or the transaction (pending
transition) is held, as in Kafka.
"""
from __future__ import annotations

import asyncio

import pytest

from kafkapy.coordinator.group.coordinator import GroupCoordinator
from kafkapy.coordinator.group.group import GroupState
from kafkapy.coordinator.group.offsets import OffsetAndMetadata
from kafkapy.coordinator.group.persistence import GroupStore, Loaded
from kafkapy.coordinator.group.timers import Deadlines
from kafkapy.coordinator.transaction.state import TxnState as S
from kafkapy.metadata.cache import PartitionState
from kafkapy.protocol.errors import ErrorCode as E
from kafkapy.replication.acks import is_pending
from tests.support import group_coordinator, txn_coordinator

TP = ("t", 0)


@pytest.fixture
def loop():
    loop = asyncio.new_event_loop()
    yield loop
    loop.close()


def settle(loop) -> None:
    """Run the callbacks chained on resolved futures."""
    for _ in range(5):
        loop.run_until_complete(asyncio.sleep(0))


class Waits:
    """The replicate hook: every durable write waits here until the test resolves it."""

    def __init__(self, loop) -> None:
        self.loop = loop
        self.pending: list[tuple[tuple, object, asyncio.Future]] = []

    def __call__(self, key, result):
        if result.error_code:
            return result.error_code
        future = self.loop.create_future()
        self.pending.append((key, result, future))
        return future

    def resolve(self, code: int = 0) -> None:
        _, _, future = self.pending.pop(0)
        future.set_result(code)
        settle(self.loop)


class GroupHarness(group_coordinator.Harness):
    def __init__(self, tmp_path, loop, isr=(0,), replicas=(0,), min_isr=1) -> None:
        self.waits = Waits(loop)
        self._isr, self._replica_ids, self._min_isr = list(isr), list(replicas), min_isr
        super().__init__(tmp_path)

    def _new_coordinator(self, settings) -> GroupCoordinator:
        log = self.log
        log.update_config({"min.insync.replicas": self._min_isr})
        self.partition.state = PartitionState(0, list(self._replica_ids), 0, 0, list(self._isr))
        c = GroupCoordinator(settings, self.clock, Deadlines(self.timer),
                             GroupStore(self.replicas, self.clock, replicate=self.waits))
        c.begin_loading(0)
        c.finish_loading(0, Loaded())
        return c

    def commit(self, offset: int, group="g", member_id="", generation=-1):
        return self.coordinator.commit_offsets(group, member_id, None, generation,
                                               {TP: OffsetAndMetadata(offset, -1, "", 0)})

    def committed(self, group="g"):
        _, offsets = self.coordinator.fetch_offsets(group, [TP])
        return offsets[0][1].offset if offsets[0][1] is not None else None


@pytest.fixture
def g(tmp_path, loop):
    return GroupHarness(tmp_path, loop)


# -- offset commits -------------------------------------------------------------------------------

def test_offset_commit_is_answered_and_visible_once_durable(g, loop):
    out = g.commit(42)
    assert is_pending(out) and not out.done()
    assert g.committed() is None                      # not visible before the HW passes it
    assert g.log.log_end_offset == 1                  # but already in the leader's log
    g.waits.resolve(0)
    assert out.result() == {TP: 0}
    assert g.committed() == 42


@pytest.mark.parametrize("append_error, client_error", [
    (E.NOT_ENOUGH_REPLICAS_AFTER_APPEND, E.COORDINATOR_NOT_AVAILABLE),
    (E.NOT_LEADER_OR_FOLLOWER, E.NOT_COORDINATOR),
    (E.REQUEST_TIMED_OUT, E.REQUEST_TIMED_OUT),       # maybeConvertOffsetCommitError keeps it
])
def test_offset_commit_failing_to_replicate(g, loop, append_error, client_error):
    out = g.commit(42)
    g.waits.resolve(append_error)
    assert out.result() == {TP: client_error}
    assert g.committed() is None


def test_pending_commit_keeps_an_empty_group(g, loop):
    """Kafka's hasOffsets counts pending commits: the group is not removed meanwhile."""
    out = g.commit(42)
    group = g.coordinator._groups["g"]
    assert group.pending_offset_commits == {TP: 1}
    assert not g.coordinator._is_spent(group)
    g.waits.resolve(0)
    assert out.result() == {TP: 0} and group.pending_offset_commits == {}


def test_isr_below_min_isr_refuses_the_commit_before_appending(tmp_path, loop):
    g = GroupHarness(tmp_path, loop, isr=(0,), replicas=(0, 1, 2), min_isr=2)
    assert g.commit(42) == {TP: E.COORDINATOR_NOT_AVAILABLE}     # NOT_ENOUGH_REPLICAS mapped
    assert g.log.log_end_offset == 0 and not g.waits.pending


# -- SyncGroup -------------------------------------------------------------------------------

def _completing(g):
    first = g.first_join()
    g.advance(0)
    result = first[0]
    assert g.state() is GroupState.COMPLETING_REBALANCE
    return result


def test_sync_holds_the_group_until_the_assignment_is_durable(g, loop):
    r = _completing(g)
    out = g.sync(r.member_id, r.generation, {r.member_id: b"a"})
    assert out == [] and g.state() is GroupState.COMPLETING_REBALANCE
    g.waits.resolve(0)
    assert out[0].error == 0 and out[0].assignment == b"a"
    assert g.state() is GroupState.STABLE


def test_sync_store_timing_out_makes_members_rejoin(g, loop):
    r = _completing(g)
    out = g.sync(r.member_id, r.generation, {r.member_id: b"a"})
    g.waits.resolve(E.REQUEST_TIMED_OUT)
    assert out[0].error == E.REBALANCE_IN_PROGRESS           # storeGroup's mapping
    assert g.state() is GroupState.PREPARING_REBALANCE


def test_sync_store_not_enough_replicas(g, loop):
    r = _completing(g)
    out = g.sync(r.member_id, r.generation, {r.member_id: b"a"})
    g.waits.resolve(E.NOT_ENOUGH_REPLICAS_AFTER_APPEND)
    assert out[0].error == E.COORDINATOR_NOT_AVAILABLE


def test_late_store_of_an_old_generation_is_ignored(g, loop):
    r = _completing(g)
    out = g.sync(r.member_id, r.generation, {r.member_id: b"a"})
    g.coordinator._prepare_rebalance(g.coordinator._groups["g"], "test")   # group moved on
    g.waits.resolve(0)
    assert g.state() is GroupState.PREPARING_REBALANCE
    assert out[0].error == E.REBALANCE_IN_PROGRESS


# -- the transaction coordinator -------------------------------------------------------------------

class PendingStore(txn_coordinator.FakeStore):
    """Writes are appended at once, answered when the test resolves them."""

    def __init__(self, loop) -> None:
        super().__init__()
        self.loop = loop
        self.futures: list[asyncio.Future] = []
        self.timeouts: list = []

    def write(self, index, key, value, timeout_ms=None):
        code = super().write(index, key, value)
        if code:
            return code
        self.timeouts.append(timeout_ms)
        future = self.loop.create_future()
        self.futures.append(future)
        return future

    def resolve(self, code: int = 0) -> None:
        self.futures.pop(0).set_result(code)
        settle(self.loop)


@pytest.fixture
def t(loop):
    h = txn_coordinator.Harness()
    h.store = h.coord._store = PendingStore(loop)
    return h


def test_txn_state_is_installed_once_durable_and_held_meanwhile(t, loop):
    init = t.coord.init_producer_id("a", 10000)
    assert is_pending(init)
    assert t.coord.init_producer_id("a", 10000)[0] == E.CONCURRENT_TRANSACTIONS
    t.store.resolve(0)
    assert init.result() == (0, 1000, 0)
    assert t.store.timeouts == [10000]        # Kafka waits up to the transaction timeout
    added = t.coord.add_partitions("a", 1000, 0, [TP])
    assert t.txn("a").state == S.EMPTY and t.txn("a").pending == S.ONGOING
    assert t.coord.end_txn("a", 1000, 0, True) == E.CONCURRENT_TRANSACTIONS
    t.store.resolve(0)
    assert added.result() == 0 and t.txn("a").state == S.ONGOING


def test_markers_start_only_once_prepare_commit_is_durable(t, loop):
    init = t.coord.init_producer_id("a", 10000)
    t.store.resolve(0)
    added = t.coord.add_partitions("a", 1000, 0, [TP])
    t.store.resolve(0)
    assert init.result()[0] == 0 and added.result() == 0
    ended = t.coord.end_txn("a", 1000, 0, True)
    t.run_deferred()
    assert t.markers.calls == []              # PrepareCommit not durable yet
    t.store.resolve(0)
    assert ended.result() == 0 and t.txn("a").state == S.PREPARE_COMMIT
    t.run_deferred()
    assert t.markers.calls == [(1000, 0, 3, True, [TP])]
    t.store.resolve(0)                        # CompleteCommit
    assert t.txn("a").state == S.COMPLETE_COMMIT and t.txn("a").pending is None


@pytest.mark.parametrize("append_error, client_error", [
    (E.NOT_ENOUGH_REPLICAS, E.COORDINATOR_NOT_AVAILABLE),
    (E.NOT_ENOUGH_REPLICAS_AFTER_APPEND, E.COORDINATOR_NOT_AVAILABLE),
    (E.REQUEST_TIMED_OUT, E.COORDINATOR_NOT_AVAILABLE),
    (E.NOT_LEADER_OR_FOLLOWER, E.NOT_COORDINATOR),
    (E.KAFKA_STORAGE_ERROR, E.NOT_COORDINATOR),
    (E.MESSAGE_TOO_LARGE, E.UNKNOWN),
])
def test_txn_write_failures_map_as_kafka_and_release_the_id(t, loop, append_error,
                                                             client_error):
    init = t.coord.init_producer_id("a", 10000)
    t.store.resolve(append_error)
    assert init.result() == (client_error, -1, -1)
    assert t.txn("a").pending is None         # the next attempt may go
    retry = t.coord.init_producer_id("a", 10000)
    t.store.resolve(0)
    assert retry.result()[0] == 0


# -- transaction markers in __consumer_offsets ---------------------------------------------------

@pytest.mark.parametrize("outcome, heard", [(0, [(77, [0], True)]), (E.REQUEST_TIMED_OUT, [])])
def test_txn_offsets_materialise_once_the_marker_is_durable(tmp_path, loop, outcome, heard):
    """Kafka hands a COMMIT marker in __consumer_offsets to the group coordinator in the
    acks=-1 append's callback: a marker that never replicates materialises nothing (the
    coordinator writes it again)."""
    from kafkapy.coordinator.transaction.markers import write_markers
    g = GroupHarness(tmp_path, loop)
    calls = []
    results = write_markers(g.replicas, g.clock, 77, 0, 0, True, [("__consumer_offsets", 0)],
                            [lambda *args: calls.append(args)], replicate=g.waits)
    assert results == {("__consumer_offsets", 0): 0} and calls == []
    g.waits.resolve(outcome)
    assert calls == heard
