"""Transactions v2 in the coordinator (EndTxn v5, partitions added by leaders) on a MockClock.

The store and the marker writer are the in-memory fakes of tests/support/txn_coordinator.py:
what was written to ``__transaction_state`` is decoded back, and every marker call is kept
with its transaction version.  The cluster has transaction.version 2 finalized unless a
test says otherwise.
"""
from __future__ import annotations

import pytest

from kafkapy.coordinator.transaction import records as R
from kafkapy.coordinator.transaction.state import MAX_EPOCH, TV_2, TxnState as S
from kafkapy.protocol.errors import ErrorCode as E
from tests.support.txn_coordinator import Harness

TP0, TP1 = ("t", 0), ("t", 1)


@pytest.fixture
def h():
    harness = Harness()
    harness.finalized_tv = TV_2
    return harness


def _begin(h, txn_id="a", partitions=(TP0,)):
    """A new producer with a v2 transaction holding ``partitions``: (pid, epoch)."""
    _, pid, epoch = h.coord.init_producer_id(txn_id, 10000)
    assert h.coord.add_partitions(txn_id, pid, epoch, list(partitions), client_tv=TV_2) == 0
    return pid, epoch


def _last_stored(h):
    return R.decode_value(h.store.records[-1][2])


def test_commit_bumps_the_epoch_for_the_markers_and_the_answer(h):
    pid, epoch = _begin(h, partitions=(TP0, TP1))
    assert _last_stored(h).client_tv == TV_2
    assert h.coord.end_txn_v2("a", pid, epoch, True) == (0, pid, epoch + 1)
    prepared = _last_stored(h)
    assert (prepared.state, prepared.producer_epoch) == (S.PREPARE_COMMIT, epoch + 1)
    h.run_deferred()
    assert h.markers.calls == [(pid, epoch + 1, 3, True, [TP0, TP1])]
    assert h.markers.versions == [TV_2]
    assert h.txn("a").state == S.COMPLETE_COMMIT
    assert (h.txn("a").producer_epoch, h.txn("a").last_producer_epoch) == (epoch + 1, epoch)
    # The next transaction runs at the new epoch; the old one is fenced.
    assert h.coord.add_partitions("a", pid, epoch, [TP0], client_tv=TV_2) == E.PRODUCER_FENCED
    assert h.coord.add_partitions("a", pid, epoch + 1, [TP0], client_tv=TV_2) == 0
    assert h.coord.end_txn_v2("a", pid, epoch + 1, False) == (0, pid, epoch + 2)


@pytest.mark.parametrize("level", [0, 1, 2], ids=["tv0", "tv1", "tv2"])
def test_a_v1_end_keeps_the_epoch_and_the_level_picks_the_log_format(h, level):
    h.finalized_tv = level
    _, pid, epoch = h.coord.init_producer_id("v1", 10000)
    assert h.coord.add_partitions("v1", pid, epoch, [TP0], client_tv=0) == 0
    assert h.coord.end_txn("v1", pid, epoch, True) == 0
    h.run_deferred()
    assert h.markers.calls == [(pid, epoch, 3, True, [TP0])] and h.markers.versions == [0]
    assert h.txn("v1").producer_epoch == epoch
    # Value version 0 (Kafka 3.9's bytes) below level 1, version 1 from it (Kafka 4).
    version = b"\x00\x01" if level >= 1 else b"\x00\x00"
    assert all(v[:2] == version for _, _, v in h.store.records)
    assert {R.decode_value(v).client_tv for _, _, v in h.store.records} == {0}


def test_retries_of_a_completed_end_answer_the_current_epoch(h):
    pid, epoch = _begin(h)
    assert h.coord.end_txn_v2("a", pid, epoch, True) == (0, pid, epoch + 1)
    # While the markers are pending only a retry's epoch is accepted, and it waits.
    assert h.coord.end_txn_v2("a", pid, epoch, True)[0] == E.CONCURRENT_TRANSACTIONS
    assert h.coord.end_txn_v2("a", pid, epoch + 1, True)[0] == E.PRODUCER_FENCED
    h.run_deferred()
    writes = len(h.store.records)
    assert h.coord.end_txn_v2("a", pid, epoch, True) == (0, pid, epoch + 1)     # retry
    assert h.coord.end_txn_v2("a", pid, epoch, False) == (E.INVALID_TXN_STATE, -1, -1)
    assert h.coord.end_txn_v2("a", pid, epoch + 1, True) == (E.INVALID_TXN_STATE, -1, -1)
    assert h.coord.end_txn_v2("a", pid, epoch - 1, True) == (E.PRODUCER_FENCED, -1, -1)
    assert h.coord.end_txn_v2("a", pid + 1, epoch + 1, True)[0] == E.INVALID_PRODUCER_ID_MAPPING
    assert len(h.store.records) == writes                     # none of them wrote anything


def test_an_abort_with_nothing_added_bumps_the_epoch(h):
    _, pid, epoch = h.coord.init_producer_id("e", 10000)
    assert h.coord.end_txn_v2("e", pid, epoch, True) == (E.INVALID_TXN_STATE, -1, -1)
    assert h.coord.end_txn_v2("e", pid, epoch, False) == (0, pid, epoch + 1)
    h.run_deferred()
    assert h.markers.calls == []                               # no partition to mark
    assert h.txn("e").state == S.COMPLETE_ABORT and h.txn("e").producer_epoch == epoch + 1
    # Its retry answers the same; an abort at the new epoch bumps again.
    assert h.coord.end_txn_v2("e", pid, epoch, False) == (0, pid, epoch + 1)
    assert h.coord.end_txn_v2("e", pid, epoch + 1, False) == (0, pid, epoch + 2)


def test_an_exhausted_epoch_rolls_to_a_new_producer_id(h):
    pid, _ = _begin(h)
    txn = h.txn("a")
    txn.producer_epoch = MAX_EPOCH - 1          # what 32765 transactions lead to
    answer = h.coord.end_txn_v2("a", pid, MAX_EPOCH - 1, True)
    new_pid = answer[1]
    assert answer == (0, new_pid, 0) and new_pid != pid
    prepared = _last_stored(h)
    assert (prepared.producer_id, prepared.producer_epoch, prepared.next_producer_id) == (
        pid, MAX_EPOCH, new_pid)
    h.run_deferred()
    assert h.markers.calls == [(pid, MAX_EPOCH, 3, True, [TP0])]
    complete = _last_stored(h)
    assert (complete.state, complete.producer_id, complete.producer_epoch,
            complete.prev_producer_id, complete.next_producer_id) == (
        S.COMPLETE_COMMIT, new_pid, 0, pid, -1)
    # A retry from the old producer id at its last epoch answers the new id.
    assert h.coord.end_txn_v2("a", pid, MAX_EPOCH - 1, True) == (0, new_pid, 0)
    assert h.coord.add_partitions("a", new_pid, 0, [TP1], client_tv=TV_2) == 0


@pytest.mark.parametrize("level", [1, 2], ids=["tv1", "tv2"])
def test_a_timed_out_transaction_is_aborted_at_the_clusters_level(h, level):
    h.finalized_tv = level
    pid, epoch = _begin(h)
    h.advance(10001)
    txn = h.txn("a")
    assert txn.state == S.COMPLETE_ABORT
    # Fenced (+1); at level 2 the abort bumps once more, as an EndTxn v5 would.
    bumped = epoch + 2 if level == TV_2 else epoch + 1
    assert txn.producer_epoch == bumped
    assert h.markers.calls == [(pid, bumped, 3, False, [TP0])]
    assert h.markers.versions == [TV_2 if level == TV_2 else 0]
    # The client's commit: two epochs behind is fenced; one behind looks like the retry of
    # an EndTxn that ended in an abort (Kafka's table), so a commit is INVALID_TXN_STATE.
    late = E.PRODUCER_FENCED if level == TV_2 else E.INVALID_TXN_STATE
    assert h.coord.end_txn_v2("a", pid, epoch, True)[0] == late


def test_init_producer_id_fences_an_ongoing_v2_transaction(h):
    pid, epoch = _begin(h)
    assert h.coord.init_producer_id("a", 10000)[0] == E.CONCURRENT_TRANSACTIONS
    h.run_deferred()
    assert h.txn("a").state == S.COMPLETE_ABORT
    fenced = h.txn("a").producer_epoch
    assert fenced > epoch and h.markers.calls[-1][1] == fenced
    assert h.coord.init_producer_id("a", 10000) == (0, pid, fenced + 1)


def test_v1_and_v2_records_load_back(h):
    pid, epoch = _begin(h, "v2-id")
    assert h.coord.end_txn_v2("v2-id", pid, epoch, True)[0] == 0       # PrepareCommit
    _, pid1, epoch1 = h.coord.init_producer_id("v1-id", 10000)
    assert h.coord.add_partitions("v1-id", pid1, epoch1, [TP1], client_tv=0) == 0
    entries = [(k, v) for _, k, v in h.store.records]
    for index in range(4):      # each partition's own records, at a new coordinator epoch
        h.coord.begin_loading(index, coordinator_epoch=4)
        h.coord.finish_loading(index, [(k, v) for k, v in entries
                                       if h.coord.partition_for(R.decode_key(k)) == index])
    v2, v1 = h.txn("v2-id"), h.txn("v1-id")
    assert (v2.state, v2.producer_epoch, v2.last_producer_id, v2.client_tv) == (
        S.PREPARE_COMMIT, epoch + 1, pid, TV_2)
    assert (v1.state, v1.partitions, v1.client_tv) == (S.ONGOING, {TP1}, 0)
    # The loaded PrepareCommit completes with the bumped epoch's markers.
    h.markers.calls.clear()
    h.run_deferred()
    assert h.markers.calls == [(pid, epoch + 1, 4, True, [TP0])] and h.txn(
        "v2-id").state == S.COMPLETE_COMMIT


def test_value_versions_and_tagged_fields():
    v1 = R.StoredTxn(5, 3, 100, int(S.ONGOING), frozenset({TP0}), 7, 8)
    v2 = R.StoredTxn(5, 3, 100, int(S.ONGOING), frozenset({TP0}), 7, 8, 4, 9, TV_2)
    assert R.encode_value(v1)[:2] == b"\x00\x00" and R.decode_value(R.encode_value(v1)) == v1
    encoded = R.encode_value(v2, flexible=True)
    assert encoded[:2] == b"\x00\x01" and R.decode_value(encoded) == v2
    # Defaults are left out of the tagged fields: only ClientTransactionVersion is there.
    bare = R.encode_value(R.StoredTxn(5, 3, 100, int(S.EMPTY), frozenset(), 7, -1,
                                      client_tv=TV_2), flexible=True)
    assert bare.endswith(bytes([1, 2, 2, 0, 2]))
