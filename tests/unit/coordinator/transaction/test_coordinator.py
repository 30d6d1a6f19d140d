"""The transaction coordinator's state machine on a MockClock.

The store and the marker writer are in-memory fakes that record what the
coordinator wrote; deferred work (marker sending) runs when the test says so;
timeouts run on the purgatory timer driven by the MockClock.
"""
from __future__ import annotations

import pytest

from kafkapy.coordinator.transaction import records as R
from kafkapy.coordinator.transaction.state import TxnState as S
from kafkapy.protocol.errors import ErrorCode as E
from tests.support.txn_coordinator import OFFSETS_TP, Harness

TP0, TP1 = ("t", 0), ("t", 1)


@pytest.fixture
def h():
    return Harness()


def test_init_commit_cycle_writes_every_state_and_markers(h):
    assert h.coord.init_producer_id("a", 10000) == (0, 1000, 0)
    assert h.coord.add_partitions("a", 1000, 0, [TP0, TP1]) == 0
    assert h.coord.add_partitions("a", 1000, 0, [TP0]) == 0  # already in: no write
    assert h.coord.end_txn("a", 1000, 0, True) == 0
    assert h.txn("a").state == S.PREPARE_COMMIT
    # Markers in flight: everything else is CONCURRENT_TRANSACTIONS.
    assert h.coord.add_partitions("a", 1000, 0, [TP0]) == E.CONCURRENT_TRANSACTIONS
    assert h.coord.init_producer_id("a", 10000)[0] == E.CONCURRENT_TRANSACTIONS
    assert h.coord.end_txn("a", 1000, 0, True) == E.CONCURRENT_TRANSACTIONS
    assert h.coord.end_txn("a", 1000, 0, False) == E.CONCURRENT_TRANSACTIONS  # as Kafka
    h.run_deferred()
    assert h.markers.calls == [(1000, 0, 3, True, [TP0, TP1])]
    assert h.txn("a").state == S.COMPLETE_COMMIT and not h.txn("a").partitions
    assert h.store.states("a") == [S.EMPTY, S.ONGOING, S.PREPARE_COMMIT, S.COMPLETE_COMMIT]
    assert h.coord.end_txn("a", 1000, 0, True) == 0  # a retried commit is fine
    assert h.coord.end_txn("a", 1000, 0, False) == E.INVALID_TXN_STATE
    # Next transaction; the stored record has the partitions and the start time.
    h.clock.advance(5)
    assert h.coord.add_partitions("a", 1000, 0, [TP1]) == 0
    stored = R.decode_value(h.store.records[-1][2])
    assert stored.partitions == {TP1} and stored.start_ms == h.clock.time_ms()


def test_errors_for_unknown_ids_epochs_and_timeouts(h):
    assert h.coord.init_producer_id("x", 60001)[0] == E.INVALID_TRANSACTION_TIMEOUT
    assert h.coord.init_producer_id("", 1000)[0] == E.INVALID_REQUEST
    assert h.coord.add_partitions("nope", 1, 0, [TP0]) == E.INVALID_PRODUCER_ID_MAPPING
    assert h.coord.end_txn("nope", 1, 0, True) == E.INVALID_PRODUCER_ID_MAPPING
    _, pid, epoch = h.coord.init_producer_id("x", 1000)
    assert h.coord.add_partitions("x", pid + 1, epoch, [TP0]) == E.INVALID_PRODUCER_ID_MAPPING
    assert h.coord.add_partitions("x", pid, epoch + 1, [TP0]) == E.PRODUCER_FENCED
    assert h.coord.end_txn("x", pid, epoch, True) == E.INVALID_TXN_STATE  # Empty


def test_reinit_bumps_epoch_and_fences_an_ongoing_transaction(h):
    _, pid, epoch = h.coord.init_producer_id("f", 10000)
    assert h.coord.add_partitions("f", pid, epoch, [TP0]) == 0
    # A new producer instance: the open transaction is aborted with a bumped epoch.
    assert h.coord.init_producer_id("f", 10000)[0] == E.CONCURRENT_TRANSACTIONS
    assert h.txn("f").state == S.PREPARE_ABORT and h.txn("f").producer_epoch == epoch + 1
    h.run_deferred()
    assert h.markers.calls == [(pid, epoch + 1, 3, False, [TP0])]
    assert h.txn("f").state == S.COMPLETE_ABORT
    # Its retry gets the epoch bumped a second time.
    assert h.coord.init_producer_id("f", 10000) == (0, pid, epoch + 2)
    # The old instance is fenced everywhere.
    assert h.coord.add_partitions("f", pid, epoch, [TP0]) == E.PRODUCER_FENCED
    assert h.coord.end_txn("f", pid, epoch, True) == E.PRODUCER_FENCED


def test_expected_epoch_on_reinit(h):
    _, pid, epoch = h.coord.init_producer_id("k", 10000)
    assert h.coord.init_producer_id("k", 10000, pid, epoch) == (0, pid, epoch + 1)
    # A retry of that same call (the response was lost) keeps the epoch.
    assert h.coord.init_producer_id("k", 10000, pid, epoch) == (0, pid, epoch + 1)
    assert h.coord.init_producer_id("k", 10000, pid, epoch + 5)[0] == E.PRODUCER_FENCED
    assert h.coord.init_producer_id("k", 10000, pid + 77, 0)[0] == E.PRODUCER_FENCED


def test_transaction_timeout_aborts_on_the_timer(h):
    _, pid, epoch = h.coord.init_producer_id("t", 5000)
    assert h.coord.add_partitions("t", pid, epoch, [TP0]) == 0
    h.advance(4999)
    assert h.txn("t").state == S.ONGOING
    h.advance(1)
    assert h.txn("t").state == S.COMPLETE_ABORT
    assert h.markers.calls == [(pid, epoch + 1, 3, False, [TP0])]
    # The timed-out producer is fenced.
    assert h.coord.end_txn("t", pid, epoch, True) == E.PRODUCER_FENCED
    assert h.coord.add_partitions("t", pid, epoch, [TP0]) == E.PRODUCER_FENCED


def test_committed_transaction_does_not_time_out(h):
    _, pid, epoch = h.coord.init_producer_id("c", 5000)
    h.coord.add_partitions("c", pid, epoch, [TP0])
    h.coord.end_txn("c", pid, epoch, True)
    h.run_deferred()
    h.advance(60_000)
    assert h.txn("c").state == S.COMPLETE_COMMIT
    assert [c[3] for c in h.markers.calls] == [True]


def test_transactional_id_expires_after_idle_time(h):
    _, pid, epoch = h.coord.init_producer_id("e", 5000)
    h.advance(3_600_000 - 1)
    assert h.coord.describe("e")[0] == 0
    h.advance(1)
    assert h.coord.describe("e")[0] == E.TRANSACTIONAL_ID_NOT_FOUND
    assert h.store.records[-1][2] is None  # a tombstone
    # A new producer with that id gets a new producer id.
    assert h.coord.init_producer_id("e", 5000)[1:] == (pid + 1, 0)


def test_ongoing_transaction_does_not_expire(h):
    _, pid, epoch = h.coord.init_producer_id("o", 60000)
    h.coord.add_partitions("o", pid, epoch, [TP0])
    h.advance(59_999)
    assert h.coord.describe("o")[1].state == S.ONGOING


def test_failed_markers_are_retried_until_written(h):
    _, pid, epoch = h.coord.init_producer_id("m", 10000)
    h.coord.add_partitions("m", pid, epoch, [TP0, TP1])
    h.markers.errors[TP1] = E.NOT_LEADER_OR_FOLLOWER
    h.coord.end_txn("m", pid, epoch, False)
    h.run_deferred()
    assert h.txn("m").state == S.PREPARE_ABORT
    assert h.coord.add_partitions("m", pid, epoch, [TP0]) == E.CONCURRENT_TRANSACTIONS
    h.advance(100)
    assert h.markers.calls[-1][4] == [TP1]  # only the missing partition again
    assert h.txn("m").state == S.COMPLETE_ABORT


def test_failed_log_write_leaves_state_unchanged(h):
    _, pid, epoch = h.coord.init_producer_id("w", 10000)
    h.store.fail_with = E.NOT_LEADER_OR_FOLLOWER
    assert h.coord.add_partitions("w", pid, epoch, [TP0]) == E.NOT_COORDINATOR
    assert h.txn("w").state == S.EMPTY and not h.txn("w").pending_in_progress
    h.store.fail_with = 0
    assert h.coord.add_partitions("w", pid, epoch, [TP0]) == 0


def test_add_offsets_adds_the_groups_offsets_partition(h):
    _, pid, epoch = h.coord.init_producer_id("g", 10000)
    assert h.coord.add_offsets("g", pid, epoch, "group") == 0
    assert h.txn("g").partitions == {OFFSETS_TP}


def test_reload_resends_markers_of_prepared_and_times_out_ongoing():
    first = Harness()
    _, pid, epoch = first.coord.init_producer_id("p", 10000)
    first.coord.add_partitions("p", pid, epoch, [TP0])
    first.coord.end_txn("p", pid, epoch, True)  # PrepareCommit written, markers not sent
    _, pid2, epoch2 = first.coord.init_producer_id("q", 2000)
    first.coord.add_partitions("q", pid2, epoch2, [TP1])  # Ongoing at the "crash"
    second = Harness()
    for index in {second.coord.partition_for("p"), second.coord.partition_for("q")}:
        second.coord.begin_loading(index, coordinator_epoch=4)
        second.coord.finish_loading(index, [(k, v) for i, k, v in first.store.records
                                            if i == index])
    assert second.txn("p").state == S.PREPARE_COMMIT
    second.run_deferred()
    assert second.markers.calls == [(pid, epoch, 4, True, [TP0])]
    assert second.txn("p").state == S.COMPLETE_COMMIT
    assert second.store.states("p") == [S.COMPLETE_COMMIT]
    assert second.txn("q").state == S.ONGOING and second.txn("q").partitions == {TP1}


def test_reload_aborts_timed_out_ongoing_transaction():
    first = Harness()
    _, pid, epoch = first.coord.init_producer_id("q", 2000)
    first.coord.add_partitions("q", pid, epoch, [TP1])
    written = [(k, v) for _, k, v in first.store.records]
    second = Harness()
    second.clock.advance(10_000)  # the broker was down longer than the timeout
    index = second.coord.partition_for("q")
    second.coord.begin_loading(index, coordinator_epoch=5)
    second.coord.finish_loading(index, written)
    second.advance(0)
    assert second.txn("q").state == S.COMPLETE_ABORT
    assert second.markers.calls == [(pid, epoch + 1, 5, False, [TP1])]


def test_unowned_and_loading_partitions(h):
    index = h.coord.partition_for("u")
    h.coord.unload(index)
    assert h.coord.init_producer_id("u", 1000)[0] == E.NOT_COORDINATOR
    h.coord.begin_loading(index, 9)
    assert h.coord.init_producer_id("u", 1000)[0] == E.COORDINATOR_LOAD_IN_PROGRESS


def test_list_filters(h):
    _, pid, epoch = h.coord.init_producer_id("l1", 1000)
    h.coord.init_producer_id("l2", 1000)
    h.coord.add_partitions("l1", pid, epoch, [TP0])
    assert {t.transactional_id for t in h.coord.list(set(), set())[1]} == {"l1", "l2"}
    assert [t.transactional_id for t in h.coord.list({S.ONGOING}, set())[1]] == ["l1"]
    assert [t.transactional_id for t in h.coord.list(set(), {pid})[1]] == ["l1"]


def test_partition_for_matches_kafka():
    # Kafka: Utils.abs("my-txn".hashCode()) % 50
    from kafkapy.coordinator.transaction.coordinator import partition_for
    h_ = 0
    for ch in "my-txn":
        h_ = (31 * h_ + ord(ch)) & 0xFFFFFFFF
    h_ = h_ - (1 << 32) if h_ & 0x80000000 else h_
    assert partition_for("my-txn", 50) == abs(h_) % 50


def test_log_record_encoding_round_trips_in_kafka_layout():
    stored = R.StoredTxn(7, 2, 60000, int(S.ONGOING), frozenset({TP0, TP1}), 20, 10)
    value = R.encode_value(stored)
    assert value[:2] == b"\x00\x00"  # value version 0
    assert R.decode_value(value) == stored
    key = R.encode_key("tid")
    assert key == b"\x00\x00\x00\x03tid"
    assert R.decode_key(key) == "tid"
    empty = R.encode_value(R.StoredTxn(7, 2, 60000, int(S.EMPTY), frozenset(), 20, -1))
    # TransactionPartitions is null (-1) for Empty.
    assert empty[2 + 8 + 2 + 4 + 1:2 + 8 + 2 + 4 + 1 + 4] == b"\xff\xff\xff\xff"
