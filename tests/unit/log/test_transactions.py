"""Partition side of transactions: LSO, aborted-transaction index, rebuild.

A Log gets transactional batches of two producers and COMMIT/ABORT markers;
checked: the first unstable offset (LSO), the ``.txnindex`` entries in Kafka's
34-byte layout (producer id, first offset, marker offset, LSO after the
marker), ``collect_aborted_transactions`` for read_committed fetches, and that
the index and the open transactions come back from the log alone after the
index and snapshot files are removed.
"""
from __future__ import annotations

import os
import struct

import pytest

from kafkapy.clock import MockClock
from kafkapy.log.log import Log
from kafkapy.log.transaction_index import AbortedTxn
from kafkapy.records.batch import read_header
from kafkapy.records.record import CONTROL_ABORT, CONTROL_COMMIT, build_batch, build_control_batch

TS = 1_700_000_000_000


def data(log, pid, epoch, seq, n=3):
    batch = bytearray(build_batch([(b"k", b"v%d" % i, (), TS) for i in range(n)],
                                  producer_id=pid, producer_epoch=epoch, base_sequence=seq,
                                  is_transactional=True))
    return log.append_as_leader(batch, read_header(batch), 0)


def marker(log, pid, epoch, commit):
    batch = bytearray(build_control_batch(CONTROL_COMMIT if commit else CONTROL_ABORT, 0, pid,
                                          epoch, TS))
    return log.append_as_leader(batch, read_header(batch), 0)


@pytest.fixture
def log(tmp_path):
    lg = Log.load(str(tmp_path / "t-0"), {"segment.bytes": 1 << 20}, MockClock(TS))
    yield lg
    lg.close()


def _index_file_entries(log):
    out = []
    for name in sorted(os.listdir(log.dir)):
        if name.endswith(".txnindex"):
            raw = open(os.path.join(log.dir, name), "rb").read()
            out += [struct.unpack_from(">hqqqq", raw, i) for i in range(0, len(raw), 34)]
    return out


def test_lso_and_aborted_index(log):
    data(log, 1, 0, 0)                  # 0-2  producer 1 (open)
    data(log, 2, 0, 0)                  # 3-5  producer 2 (open)
    assert log.first_unstable_offset() == 0
    marker(log, 1, 0, commit=False)     # 6    ABORT producer 1 -> LSO still 3 (producer 2)
    assert log.first_unstable_offset() == 3
    data(log, 1, 0, 3)                  # 7-9  producer 1, next transaction
    marker(log, 2, 0, commit=True)      # 10   COMMIT producer 2 (not indexed)
    assert log.first_unstable_offset() == 7
    marker(log, 1, 0, commit=False)     # 11   ABORT producer 1
    assert log.first_unstable_offset() is None
    assert _index_file_entries(log) == [(0, 1, 0, 6, 3), (0, 1, 7, 11, 12)]
    assert log.collect_aborted_transactions(0, 12) == [AbortedTxn(1, 0, 6, 3),
                                                       AbortedTxn(1, 7, 11, 12)]
    assert log.collect_aborted_transactions(7, 12) == [AbortedTxn(1, 7, 11, 12)]
    assert log.collect_aborted_transactions(0, 3) == [AbortedTxn(1, 0, 6, 3)]
    # An abort of a transaction without data here changes nothing.
    marker(log, 3, 0, commit=False)
    assert len(_index_file_entries(log)) == 2


def test_index_and_open_transactions_rebuilt_from_the_log(tmp_path):
    path = str(tmp_path / "t-0")
    lg = Log.load(path, {"segment.bytes": 400}, MockClock(TS))  # several segments
    for round_ in range(4):
        data(lg, 5, 0, round_ * 3)
        marker(lg, 5, 0, commit=round_ % 2 == 1)
    data(lg, 6, 0, 0)                   # open at the "crash"
    open_first = lg.log_end_offset - 3
    before = _index_file_entries(lg)
    assert len(before) == 2 and len(lg.segments) > 1
    lg.close()
    for name in os.listdir(path):
        if name.endswith((".txnindex", ".snapshot")):
            os.unlink(os.path.join(path, name))
    again = Log.load(path, {"segment.bytes": 400}, MockClock(TS))
    try:
        assert _index_file_entries(again) == before
        assert again.first_unstable_offset() == open_first
        # Producer 5's sequence continues where it was.
        data(again, 5, 0, 12)
    finally:
        again.close()


def test_truncation_drops_index_entries_past_the_end(log):
    data(log, 1, 0, 0)
    marker(log, 1, 0, commit=False)     # 3
    data(log, 1, 0, 3)
    marker(log, 1, 0, commit=False)     # 7
    assert len(_index_file_entries(log)) == 2
    log.truncate_to(7)                  # the second ABORT marker goes
    assert _index_file_entries(log) == [(0, 1, 0, 3, 4)]
    assert log.first_unstable_offset() == 4  # the second transaction is open again
    assert log.collect_aborted_transactions(4, 7) == []


def test_coordinator_batches_without_sequence_are_not_sequence_checked(log):
    """Transactional offset commits carry no sequence; they must not collide with a
    producer's own sequenced batches nor be taken as duplicates of each other."""
    for _ in range(3):
        batch = bytearray(build_batch([(b"k", b"v", (), TS)], producer_id=9, producer_epoch=1,
                                      base_sequence=-1, is_transactional=True))
        info = log.append_as_leader(batch, read_header(batch), 0)
        assert not info.duplicate
        marker(log, 9, 1, commit=True)
    assert log.log_end_offset == 6
