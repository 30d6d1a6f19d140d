"""Idempotent producer checks, standalone and through Log.append_as_leader."""
from __future__ import annotations

import os

import pytest

from kafkapy.clock import MockClock
from kafkapy.log.log import Log
from kafkapy.log.producer_state import DuplicateBatch, ProducerStateManager
from kafkapy.protocol.errors import ErrorCode
from kafkapy.records.batch import RecordError, read_header
from kafkapy.records.record import build_batch, build_control_batch
from tests.support.producer_state import PID, TS, batch


def test_sequence_rules_standalone():
    psm = ProducerStateManager()
    _, h = batch(0)
    assert psm.check(h) is None
    h.base_offset = 0
    psm.update(h)
    _, h2 = batch(3)
    assert psm.check(h2) is None
    psm.update(h2, 3)
    # duplicate of an earlier cached batch -> original metadata
    _, dup = batch(0)
    assert psm.check(dup) == DuplicateBatch(0, 2, TS + 2)
    # gap
    _, gap = batch(7)
    with pytest.raises(RecordError) as e:
        psm.check(gap)
    assert e.value.code == ErrorCode.OUT_OF_ORDER_SEQUENCE_NUMBER == 45
    # stale epoch
    _, bump = batch(0, epoch=1)
    assert psm.check(bump) is None
    psm.update(bump, 6)
    _, stale = batch(6, epoch=0)
    with pytest.raises(RecordError) as e:
        psm.check(stale)
    assert e.value.code == ErrorCode.INVALID_PRODUCER_EPOCH == 47
    # a new epoch must start at 0
    _, bad_new = batch(5, epoch=2)
    with pytest.raises(RecordError) as e:
        psm.check(bad_new)
    assert e.value.code == ErrorCode.OUT_OF_ORDER_SEQUENCE_NUMBER


def test_unknown_producer_accepts_any_first_sequence():
    # Kafka (3.x): no entry / epoch unknown -> any sequence is accepted
    psm = ProducerStateManager()
    _, h = batch(17)
    assert psm.check(h) is None


def test_only_last_five_batches_are_cached():
    psm = ProducerStateManager()
    off = 0
    for i in range(7):
        _, h = batch(i * 2, n=2)
        assert psm.check(h) is None
        psm.update(h, off)
        off += 2
    _, old = batch(2, n=2)  # batch #2 fell out of the cache: now an out-of-order sequence
    with pytest.raises(RecordError) as e:
        psm.check(old)
    assert e.value.code == ErrorCode.OUT_OF_ORDER_SEQUENCE_NUMBER
    _, recent = batch(6, n=2)
    assert psm.check(recent) == DuplicateBatch(6, 7, TS + 1)


def test_sequence_wraps():
    psm = ProducerStateManager()
    raw = build_batch([(None, b"x", [], TS)] * 2, producer_id=PID, producer_epoch=0,
                      base_sequence=2**31 - 2)
    h = read_header(raw)
    psm.update(h, 0)
    nxt = read_header(build_batch([(None, b"y", [], TS)], producer_id=PID,
                                  producer_epoch=0, base_sequence=0))
    assert psm.check(nxt) is None


def test_control_batch_bumps_epoch_and_ends_txn():
    psm = ProducerStateManager()
    h = read_header(build_batch([(None, b"x", [], TS)], producer_id=PID, producer_epoch=0,
                                base_sequence=0, is_transactional=True))
    psm.update(h, 10)
    assert psm.first_unstable_offset() == 10
    marker = read_header(build_control_batch(1, 0, PID, 1, TS, base_offset=11))
    psm.update(marker)
    assert psm.first_unstable_offset() is None
    assert psm.last_entry(PID).epoch == 1


@pytest.fixture
def log(tmp_path):
    lg = Log.load(str(tmp_path / "t-0"), {"segment.bytes": 500}, MockClock(TS))
    yield lg
    lg.close()


def test_log_duplicate_returns_original_offsets(log):
    log.append_as_leader(*batch(0, n=3), 0)           # offsets 0..2
    other = log.append_as_leader(*batch(0, n=2, pid=7), 0)  # 3..4
    assert other.first_offset == 3
    info = log.append_as_leader(*batch(3, n=3), 0)    # 5..7
    assert (info.first_offset, info.last_offset, info.duplicate) == (5, 7, False)
    leo = log.log_end_offset
    dup = log.append_as_leader(*batch(3, n=3), 0)
    assert (dup.first_offset, dup.last_offset, dup.duplicate) == (5, 7, True)
    assert log.log_end_offset == leo  # nothing written
    with pytest.raises(RecordError) as e:
        log.append_as_leader(*batch(9, n=1), 0)
    assert e.value.code == 45
    log.append_as_leader(*batch(0, n=1, epoch=1), 0)
    with pytest.raises(RecordError) as e:
        log.append_as_leader(*batch(6, n=1, epoch=0), 0)
    assert e.value.code == 47


def test_state_rebuilt_on_reload(tmp_path):
    d = str(tmp_path / "t-0")
    clock = MockClock(TS)
    lg = Log.load(d, {"segment.bytes": 500}, clock)
    for i in range(12):
        lg.append_as_leader(*batch(i * 3, n=3), 0)
    assert len(lg.segments) > 1
    snaps = [n for n in os.listdir(d) if n.endswith(".snapshot")]
    assert snaps
    lg.close()
    lg2 = Log.load(d, {"segment.bytes": 500}, clock)
    assert lg2.producer_state.last_entry(PID).last_seq == 35
    dup = lg2.append_as_leader(*batch(33, n=3), 0)
    assert dup.duplicate and (dup.first_offset, dup.last_offset) == (33, 35)
    assert lg2.append_as_leader(*batch(36, n=1), 0).first_offset == 36
    lg2.close()
    # without any snapshot: full header scan
    for n in os.listdir(d):
        if n.endswith(".snapshot"):
            os.unlink(os.path.join(d, n))
    lg3 = Log.load(d, {"segment.bytes": 500}, clock)
    assert lg3.producer_state.last_entry(PID).last_seq == 36
    with pytest.raises(RecordError) as e:
        lg3.append_as_leader(*batch(40, n=1), 0)
    assert e.value.code == 45
    lg3.close()


def test_snapshot_file_format(tmp_path):
    import struct
    import crc32c
    psm = ProducerStateManager(str(tmp_path))
    _, h = batch(5, n=4)
    psm.update(h, 100)
    path = psm.take_snapshot()
    assert os.path.basename(path) == f"{104:020d}.snapshot"
    data = open(path, "rb").read()
    version, crc = struct.unpack_from(">hI", data, 0)
    assert version == 1 and crc == crc32c.crc32c(data[6:])
    (count,) = struct.unpack_from(">i", data, 6)
    assert count == 1
    assert struct.unpack_from(">qhiqiqiq", data, 10) == (PID, 0, 8, 103, 3, TS + 3, -1, -1)
    other = ProducerStateManager(str(tmp_path))
    assert other.load_latest_snapshot(10**9) == 104
    assert other.check(batch(5, n=4)[1]) == DuplicateBatch(100, 103, TS + 3)


def test_remove_stray_snapshots_as_kafka_log_loader(tmp_path):
    """Kafka's removeStraySnapshots: snapshots at no segment base go, except the newest
    stray one when it lies past the last segment's base (the log end's snapshot)."""
    from kafkapy.log.producer_state import ProducerStateManager
    for off in (0, 12, 24, 49, 80):
        (tmp_path / f"{off:020d}.snapshot").write_bytes(b"")
    ps = ProducerStateManager(str(tmp_path))
    ps.remove_stray_snapshots([0, 49, 63])
    assert [off for off, _ in ps.list_snapshots()] == [0, 49, 80]
    ps.remove_stray_snapshots([0, 100])
    assert [off for off, _ in ps.list_snapshots()] == [0]


def test_snapshots_out_of_range_deleted_as_kafka_truncate_and_reload(tmp_path):
    for off in (10, 49, 63, 90):
        (tmp_path / f"{off:020d}.snapshot").write_bytes(b"")
    ps = ProducerStateManager(str(tmp_path))
    ps.delete_snapshots_out_of_range(49, 80)
    assert [off for off, _ in ps.list_snapshots()] == [63]
