"""Per-partition storage costs: lazy index files, recovery limited to the
segments past the recovery point, O(1) log placement, clean stop with one sync per dir.

Real files in tmp_path; the on-disk layout checked is Kafka 3.9's (a fresh partition
after a clean stop: ``.log``, ``.index``, ``.timeindex`` of 0 bytes, no snapshot).
"""
from __future__ import annotations

import os
import struct
import threading

import pytest
from kafka.record.default_records import DefaultRecordBatchBuilder

from kafkapy.clock import MockClock
from kafkapy.log import manager as manager_mod
from kafkapy.log.index_base import IndexFileBase
from kafkapy.log.log import Log
from kafkapy.log.manager import CLEAN_SHUTDOWN_FILE, LogManager
from kafkapy.log.offset_index import OffsetIndex
from kafkapy.log.segment import LogSegment
from kafkapy.records.batch import validate_for_append

TS = 1_700_000_000_000
MAX_INDEX = 10 * 1024 * 1024
SEG0 = "00000000000000000000"


def _batch(n=5, value_size=100):
    b = DefaultRecordBatchBuilder(2, 0, False, -1, -1, -1, 1 << 22)
    for i in range(n):
        b.append(i, timestamp=TS + i, key=None, value=b"v" * value_size, headers=[])
    buf = bytearray(b.build())
    [h] = validate_for_append(buf, 1 << 22, 9)
    return buf, h


def _append(log, n=5, value_size=100):
    return log.append_as_leader(*_batch(n, value_size), 0)


@pytest.fixture
def clock():
    return MockClock(TS)


def _open(tmp_path, clock, cfg=None, **kw):
    return Log.load(str(tmp_path / "t-0"), cfg or {}, clock, **kw)


def _sizes(d):
    return {n: os.path.getsize(os.path.join(d, n)) for n in os.listdir(d)}


# ------------------------------------------------------------------ lazy indexes

def test_fresh_log_has_no_index_file_or_mapping_until_first_append(tmp_path, clock):
    log = _open(tmp_path, clock, {"index.interval.bytes": 100})
    seg = log.active_segment
    assert _sizes(log.dir) == {f"{SEG0}.log": 0}
    for idx in (seg.offset_index, seg.time_index):
        assert not idx.is_loaded and not idx.is_mapped
    _append(log)          # first batch: no entry, but Kafka's first append touches both
    assert seg.offset_index.is_mapped and seg.time_index.is_mapped
    assert os.path.getsize(seg.offset_index.path) == MAX_INDEX    # preallocated now
    assert os.path.getsize(seg.time_index.path) == MAX_INDEX - MAX_INDEX % 12
    assert seg.offset_index.entries == 0
    _append(log)                                 # past index.interval.bytes: an entry
    assert seg.offset_index.entries == 1
    log.close()
    sizes = _sizes(log.dir)
    assert sizes[f"{SEG0}.index"] == 8 and sizes[f"{SEG0}.timeindex"] == 12


def test_clean_close_of_an_empty_log_leaves_kafkas_files(tmp_path, clock):
    log = _open(tmp_path, clock)
    log.close()
    # Kafka 3.9 after a clean stop of a fresh partition: empty .log/.index/.timeindex,
    # no producer snapshot (takeSnapshot skips when the log end did not move).
    assert _sizes(log.dir) == {f"{SEG0}.log": 0, f"{SEG0}.index": 0,
                               f"{SEG0}.timeindex": 0}
    again = _open(tmp_path, clock)
    assert again.log_end_offset == 0 and not again.active_segment.offset_index.is_loaded
    again.close()
    assert _sizes(again.dir) == {f"{SEG0}.log": 0, f"{SEG0}.index": 0,
                                 f"{SEG0}.timeindex": 0}


def test_close_writes_a_snapshot_only_when_the_log_moved(tmp_path, clock):
    log = _open(tmp_path, clock)
    _append(log, 3)
    log.close()
    assert f"{3:020d}.snapshot" in os.listdir(log.dir)
    log = _open(tmp_path, clock)
    before = sorted(os.listdir(log.dir))
    log.close()                                   # nothing appended: nothing written
    assert sorted(os.listdir(log.dir)) == before


def test_old_segments_are_not_opened_at_load(tmp_path, clock):
    cfg = {"segment.bytes": 1500, "index.interval.bytes": 200}
    log = _open(tmp_path, clock, cfg)
    for _ in range(20):
        _append(log, 2)
    assert len(log.segments) > 3
    log.close()
    log = _open(tmp_path, clock, cfg)
    # only the active segment's offset index is read (its next offset), as Kafka's
    assert not any(s.offset_index.is_loaded or s.time_index.is_loaded
                   for s in log.segments[:-1])
    # a lookup opens only the segment it needs
    got = log.read_bytes(1, 1)   # one batch (min one message)
    assert got and log.segments[0].offset_index.is_loaded
    assert not any(s.offset_index.is_mapped for s in log.segments[2:-1])
    log.close()


def test_trimmed_index_is_counted_by_its_length(tmp_path, monkeypatch):
    p = str(tmp_path / f"{SEG0}.index")
    idx = OffsetIndex(p, 0, 8000)
    for i in range(1, 801):
        idx.append(i, i * 10)
    idx.close()
    probes = []
    real = IndexFileBase._entry_is_unused
    monkeypatch.setattr(IndexFileBase, "_entry_is_unused",
                        lambda self, i: probes.append(i) or real(self, i))
    again = OffsetIndex(p, 0, 8000, writable=False)
    assert again.entries == 800 and len(probes) == 1   # no binary search
    again.close()


# ------------------------------------------------------------------ recovery

def _crash(log):
    """kill -9: nothing trimmed, closed or snapshotted."""
    log.release()


def test_unclean_load_recovers_only_from_the_recovery_points_segment(tmp_path, clock,
                                                                      monkeypatch):
    cfg = {"segment.bytes": 1500, "index.interval.bytes": 200}
    log = _open(tmp_path, clock, cfg)
    for _ in range(24):
        _append(log, 2)
    assert len(log.segments) >= 4
    rp_seg = log.segments[2]
    recovery_point = rp_seg.base_offset + 1
    entries = [s.offset_index.entries_list() for s in log.segments]
    leo = log.log_end_offset
    _crash(log)
    recovered = []
    real = LogSegment.recover
    monkeypatch.setattr(LogSegment, "recover",
                        lambda self, *a, **k: recovered.append(self.base_offset)
                        or real(self, *a, **k))
    log = _open(tmp_path, clock, cfg, had_clean_shutdown=False,
                recovery_point=recovery_point)
    bases = [s.base_offset for s in log.segments]
    assert recovered == bases[2:]
    assert not any(s.offset_index.is_loaded for s in log.segments[:2])
    assert log.log_end_offset == leo
    # Kafka's LogLoader: no fsync at recovery, the recovery point does not move
    assert log.recovery_point == recovery_point
    assert [s.offset_index.entries_list() for s in log.segments] == entries
    log.close()


def test_recovery_over_a_sparse_preallocated_index(tmp_path, clock):
    """Kafka's or our own active segment after kill -9: a 10 MiB untrimmed index."""
    cfg = {"index.interval.bytes": 200}
    log = _open(tmp_path, clock, cfg)
    for _ in range(10):
        _append(log, 2)
    seg = log.active_segment
    entries = seg.offset_index.entries_list()
    assert len(entries) > 3 and os.path.getsize(seg.offset_index.path) == MAX_INDEX
    _crash(log)
    # and a torn tail in the middle of the last batches: the rebuilt index is shorter
    path = os.path.join(log.dir, f"{SEG0}.log")
    cut = entries[-2][1] + 10
    os.truncate(path, cut)
    log = _open(tmp_path, clock, cfg, had_clean_shutdown=False)
    idx = log.active_segment.offset_index
    assert idx.entries_list() == entries[:-2]
    assert os.path.getsize(idx.path) == MAX_INDEX          # same file, reused
    with open(idx.path, "rb") as f:                          # stale entries zeroed
        tail = f.read(8 * (len(entries) + 2))[8 * idx.entries:]
    assert tail == bytes(len(tail))
    _append(log, 2)
    log.close()
    log = _open(tmp_path, clock, cfg)
    assert log.log_end_offset == log.active_segment.next_offset
    log.close()


def test_unclean_load_of_an_empty_log_touches_no_index(tmp_path, clock):
    log = _open(tmp_path, clock)
    _crash(log)
    # as Kafka leaves a fresh partition after kill -9: sparse 10 MiB indexes
    d = log.dir
    for suffix, size in ((".index", MAX_INDEX), (".timeindex", MAX_INDEX - MAX_INDEX % 12)):
        with open(os.path.join(d, SEG0 + suffix), "wb") as f:
            f.truncate(size)
    log = _open(tmp_path, clock, had_clean_shutdown=False)
    assert log.log_end_offset == 0
    assert not log.active_segment.offset_index.is_mapped
    assert _sizes(d)[f"{SEG0}.index"] == 0      # cut, never mapped nor read
    _append(log, 1)
    log.close()
    assert _sizes(d)[f"{SEG0}.index"] == 0 and _sizes(d)[f"{SEG0}.timeindex"] == 12


def test_corrupt_index_found_on_first_use_is_rebuilt(tmp_path, clock):
    cfg = {"index.interval.bytes": 200, "segment.bytes": 1500}
    log = _open(tmp_path, clock, cfg)
    for _ in range(12):
        _append(log, 2)
    first = log.segments[0]
    entries = first.offset_index.entries_list()
    assert len(entries) > 1
    log.close()
    with open(first.offset_index.path, "r+b") as f:
        f.write(struct.pack(">ii", 50, 999999))        # not ascending, past the log
    log = _open(tmp_path, clock, cfg)
    assert log.segments[0].offset_index.entries_list() == entries
    assert log.read_bytes(0, 1 << 20)
    log.close()


# ------------------------------------------------------------------ LogManager

def _manager(dirs, **kw):
    m = LogManager(dirs, MockClock(TS), {}, **kw)
    m.load("cluster-A", 1)
    return m


def test_placement_counts_follow_creates_and_deletes(tmp_path):
    dirs = [str(tmp_path / "a"), str(tmp_path / "b")]
    m = _manager(dirs)
    for p in range(6):
        m.get_or_create_log("t", p)
    assert m._dir_counts == {os.path.abspath(d): 3 for d in dirs}
    m.delete_log("t", 0)
    m.delete_log("t", 2)
    m.delete_log("t", 4)
    gone = m.log_dir_of("t", 1)
    counts = {d: sum(1 for k in m.logs if m.log_dir_of(*k) == d) for d in m.log_dirs}
    assert {d: n for d, n in m._dir_counts.items() if n} == {d: n for d, n in counts.items() if n}
    nxt = m.get_or_create_log("t", 10)
    assert nxt is not None and m.log_dir_of("t", 10) == min(
        m.log_dirs, key=lambda d: (counts[d], m.log_dirs.index(d)))
    assert gone is not None
    m.shutdown()
    assert sum(m._dir_counts.values()) == 0


def test_clean_shutdown_syncs_each_dir_once_then_marks_it(tmp_path, monkeypatch):
    dirs = [str(tmp_path / "a"), str(tmp_path / "b")]
    m = _manager(dirs)
    logs = [m.get_or_create_log("t", p) for p in range(6)]
    for log in logs[:3]:
        _append(log, 3)
    synced = []
    real_sync = manager_mod._sync_dir

    def sync(d):
        # nothing is marked clean before the dir is synced
        assert not os.path.exists(os.path.join(d, CLEAN_SHUTDOWN_FILE))
        synced.append(d)
        real_sync(d)
    fsyncs = []
    real_fsync = os.fsync
    monkeypatch.setattr(manager_mod, "_sync_dir", sync)
    monkeypatch.setattr(os, "fsync", lambda fd: fsyncs.append(fd) or real_fsync(fd))
    m.shutdown()
    assert sorted(synced) == sorted(os.path.abspath(d) for d in dirs)
    # per-partition fsyncs are gone: only the dir-level checkpoints and markers
    assert len(fsyncs) <= 2 * 4 * len(dirs)
    for d in dirs:
        assert os.path.exists(os.path.join(d, CLEAN_SHUTDOWN_FILE))
    m2 = _manager(dirs)
    assert all(m2.had_clean_shutdown.values())
    for p in range(3):
        assert m2.get_log("t", p).recovery_point == 3
    m2.shutdown()


def test_recovery_threads_load_every_log(tmp_path, monkeypatch):
    dirs = [str(tmp_path / "a")]
    m = _manager(dirs)
    for p in range(12):
        _append(m.get_or_create_log("t", p), 2)
    m.checkpoint()
    for log in m.logs.values():
        log.release()
    m._release_locks()
    threads = set()
    real_load = Log.load.__func__

    def load(cls, *a, **k):
        threads.add(threading.current_thread().name)
        return real_load(cls, *a, **k)
    monkeypatch.setattr(Log, "load", classmethod(load))
    m2 = _manager(dirs, recovery_threads_per_data_dir=lambda: 3)
    assert not any(m2.had_clean_shutdown.values())
    assert sorted(p for _, p in m2.logs) == list(range(12))
    assert all(log.log_end_offset == 2 for log in m2.logs.values())
    assert all(t.startswith("log-recovery") for t in threads) and len(threads) >= 1
    m2.shutdown()


def test_small_segment_gets_its_final_time_entry_at_close(tmp_path, clock):
    log = _open(tmp_path, clock)                 # index.interval.bytes 4096: no entry
    _append(log, 3)
    seg = log.active_segment
    assert seg.time_index.entries == 0 and os.path.exists(seg.time_index.path)
    log.close()
    with open(os.path.join(log.dir, f"{SEG0}.timeindex"), "rb") as f:
        assert struct.unpack(">qi", f.read()) == (TS + 2, 2)   # Kafka's layout, 12 bytes
    assert _sizes(log.dir)[f"{SEG0}.index"] == 0
    log = _open(tmp_path, clock)
    assert log.active_segment.time_index.last_entry == (TS + 2, 2)
    assert log.offset_for_timestamp(TS + 1)[0] == 1
    log.close()
