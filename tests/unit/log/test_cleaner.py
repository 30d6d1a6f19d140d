"""Log cleaner: key map, segment rewrite (bytes on disk), tombstones, lags, producer
state, aborted transactions, checkpoint, and a crash at every step of the swap."""
from __future__ import annotations

import glob
import os
import shutil
import struct

import pytest
from kafka.record import MemoryRecords

from kafkapy.clock import MockClock
from kafkapy.log.checkpoint import read_offset_checkpoint
from kafkapy.log.cleaner import (Cleaner, CleanerSettings, InjectedCrash, LogCleaner,
                                 cleanable_offsets, prepare_job, replace_segments)
from kafkapy.log.log import Log
from kafkapy.log.manager import LogManager
from kafkapy.log.offset_map import OffsetMap
from kafkapy.log.swap import recover_swap_files
from kafkapy.records.batch import read_header
from kafkapy.records.record import build_batch, build_control_batch

TS = 1_700_000_000_000
HDR = struct.Struct(">qiibIhiqqqhii")
DAY = 86_400_000


# ---------------------------------------------------------------- helpers (independent reads)

def disk_batches(dir_path):
    """Every batch header + records of every .log file, parsed with struct and kafka-python."""
    out = []
    for path in sorted(glob.glob(os.path.join(dir_path, "*.log"))):
        data = open(path, "rb").read()
        pos = 0
        while pos + 61 <= len(data):
            f = HDR.unpack_from(data, pos)
            size = 12 + f[1]
            raw = data[pos:pos + size]
            recs = []
            if f[12] > 0:
                mr = MemoryRecords(raw)
                b = mr.next_batch()
                assert b.validate_crc(), f"bad crc in {path} at {pos}"
                recs = [(r.offset, r.key, r.value) for r in b]
            else:
                import crc32c
                assert crc32c.crc32c(raw[21:]) == f[4]
            out.append({"file": os.path.basename(path), "base": f[0], "epoch": f[2],
                        "attrs": f[5], "last_delta": f[6], "base_ts": f[7], "max_ts": f[8],
                        "pid": f[9], "pepoch": f[10], "seq": f[11], "count": f[12],
                        "records": recs})
            pos += size
        assert pos == len(data), f"trailing bytes in {path}"
    return out


def disk_records(dir_path):
    return [r for b in disk_batches(dir_path) for r in b["records"]]


def append(log, records, producer=(-1, -1, -1), transactional=False, epoch=0):
    """records: list of (key, value); timestamps follow the clock."""
    now = log.clock.time_ms()
    buf = bytearray(build_batch([(k, v, (), now + i) for i, (k, v) in enumerate(records)],
                                producer_id=producer[0], producer_epoch=producer[1],
                                base_sequence=producer[2], is_transactional=transactional))
    info = log.append_as_leader(buf, read_header(buf), epoch)
    log.high_watermark = log.log_end_offset
    return info


@pytest.fixture
def clock():
    return MockClock(TS)


def manager(tmp_path, clock, **cfg):
    conf = {"cleanup.policy": ["compact"], "segment.bytes": 1024, "min.cleanable.dirty.ratio": 0.01,
            "delete.retention.ms": DAY, "file.delete.delay.ms": 0}
    conf.update(cfg)
    m = LogManager([str(tmp_path / "data")], clock, conf)
    m.load("cluster-A", 0)
    return m


def cleaner(m, clock):
    return LogCleaner(m, CleanerSettings(backoff_ms=10, dedupe_buffer_size=1 << 20), clock)


def latest_by_key(records):
    out = {}
    for off, k, v in records:
        out[k] = (off, v)
    return out


# ---------------------------------------------------------------- tests

def test_offset_map_capacity_and_latest():
    m = OffsetMap(24 * 10, 1.0)
    assert m.capacity == 10
    for i in range(10):
        m.put(b"k%d" % (i % 4), i)
    assert (m.get(b"k1"), m.get(b"k3"), m.get(b"zz"), len(m), m.latest_offset) == (9, 7, -1, 4, 9)
    m.update_latest_offset(42)
    assert m.latest_offset == 42


def test_compaction_keeps_latest_per_key_with_offsets_and_batch_metadata(tmp_path, clock):
    m = manager(tmp_path, clock)
    log = m.get_or_create_log("compacted", 0)
    for i in range(60):
        append(log, [(b"k%d" % (i % 5), b"v%03d" % i), (b"u%d" % i, b"unique")])
    before = disk_batches(log.dir)
    before_records = [r for b in before for r in b["records"]]
    active_before = open(log.active_segment.log_path, "rb").read()
    assert len(log.segments) > 3
    result = cleaner(m, clock).clean_once()
    assert result is not None and result.end_offset == log.active_segment.base_offset
    after = disk_batches(log.dir)
    records = [r for b in after for r in b["records"]]
    # offsets ascend, nothing new appears, the latest value of every key survives
    offs = [r[0] for r in records]
    assert offs == sorted(set(offs))
    assert set(records) <= set(before_records)
    assert latest_by_key(records) == latest_by_key(before_records)
    # in the cleaned part each key appears once
    active_base = log.active_segment.base_offset
    cleaned_keys = [k for off, k, v in records if off < active_base]
    assert len(cleaned_keys) == len(set(cleaned_keys))
    assert len(records) < len(before_records)
    # batch metadata: same base offset, last offset delta, leader epoch, producer fields
    orig = {b["base"]: b for b in before}
    for b in after:
        o = orig[b["base"]]
        assert (b["last_delta"], b["epoch"], b["pid"], b["pepoch"], b["seq"]) == \
            (o["last_delta"], o["epoch"], o["pid"], o["pepoch"], o["seq"])
        assert b["attrs"] & 0x40 == 0  # no tombstones: no delete horizon
    # the active segment is untouched, checkpoint written in Kafka's format
    assert open(log.active_segment.log_path, "rb").read() == active_before
    ckpt = read_offset_checkpoint(os.path.join(m.log_dirs[0], "cleaner-offset-checkpoint"))
    assert ckpt == {("compacted", 0): active_base}
    assert not glob.glob(os.path.join(log.dir, "*.cleaned")) + glob.glob(
        os.path.join(log.dir, "*.swap"))
    # reads through the log agree with the files; indexes find every offset
    data = log.read_bytes(log.log_start_offset, 1 << 30)
    mr = MemoryRecords(data)
    got = []
    while mr.has_next():
        got += [(r.offset, r.key, r.value) for r in mr.next_batch()]
    assert got == records
    for off, _k, _v in records:
        seg = log.segments[log.segment_for(off)]
        h = seg.find_offset_position(off)
        assert h is not None and h.base_offset <= off <= h.last_offset
    # nothing dirty is left: a second pass finds nothing to do
    assert cleaner(m, clock).clean_once() is None
    # reload: the same records
    m.shutdown()
    m2 = manager(tmp_path, clock)
    assert disk_records(m2.get_log("compacted", 0).dir) == records
    m2.shutdown()


def test_tombstone_gets_delete_horizon_then_is_removed(tmp_path, clock):
    m = manager(tmp_path, clock, **{"delete.retention.ms": 1000})
    log = m.get_or_create_log("tomb", 0)
    append(log, [(b"gone", b"v1"), (b"keep", b"k1")])
    append(log, [(b"gone", None)])
    for i in range(40):
        append(log, [(b"x%d" % (i % 3), b"y" * 40)])
    c = cleaner(m, clock)
    now = clock.time_ms()
    c.clean_once()
    batches = disk_batches(log.dir)
    tomb = [b for b in batches if any(r[1] == b"gone" for r in b["records"])]
    assert len(tomb) == 1 and tomb[0]["records"][0][2] is None
    assert tomb[0]["attrs"] & 0x40, "hasDeleteHorizonMs attribute set"
    assert tomb[0]["base_ts"] == now + 1000, "baseTimestamp holds the delete horizon"
    assert tomb[0]["max_ts"] < now + 1000
    # before the horizon another pass keeps it; after it, it is removed
    clock.advance(2000)
    for i in range(40):
        append(log, [(b"x%d" % (i % 3), b"z" * 40)])
    c.clean_once()
    keys = [r[1] for r in disk_records(log.dir)]
    assert b"gone" not in keys and b"keep" in keys
    m.shutdown()


def test_min_compaction_lag_holds_young_segments(tmp_path, clock):
    m = manager(tmp_path, clock, **{"min.compaction.lag.ms": 10_000})
    log = m.get_or_create_log("lag", 0)
    for i in range(40):
        append(log, [(b"k", b"v%d" % i)])
    c = cleaner(m, clock)
    dirty, uncleanable, _ = cleanable_offsets(log, None, clock.time_ms())
    assert dirty == uncleanable == 0
    assert c.clean_once() is None
    clock.advance(20_000)
    assert c.clean_once() is not None
    active = log.active_segment.base_offset
    assert [r[1] for r in disk_records(log.dir) if r[0] < active] == [b"k"]
    m.shutdown()


def test_max_compaction_lag_forces_cleaning_below_ratio(tmp_path, clock):
    m = manager(tmp_path, clock, **{"min.cleanable.dirty.ratio": 0.99,
                                    "max.compaction.lag.ms": 5000})
    log = m.get_or_create_log("maxlag", 0)
    for i in range(40):
        append(log, [(b"k%d" % (i % 2), b"v" * 30)])
    c = cleaner(m, clock)
    assert c.clean_once() is not None  # all dirty: ratio 1.0
    for i in range(25):
        append(log, [(b"k%d" % (i % 2), b"w" * 30)])
    assert c.clean_once() is None  # ratio below 0.99, lag not passed
    clock.advance(10_000)
    assert c.clean_once() is not None
    m.shutdown()


def test_last_batch_of_active_producer_is_kept_empty(tmp_path, clock):
    m = manager(tmp_path, clock)
    log = m.get_or_create_log("pid", 0)
    append(log, [(b"a", b"1"), (b"b", b"2")], producer=(77, 3, 0))
    for i in range(40):
        append(log, [(b"a", b"x"), (b"b", b"y"), (b"c%d" % i, b"z")])
    cleaner(m, clock).clean_once()
    first = disk_batches(log.dir)[0]
    assert (first["base"], first["last_delta"], first["count"]) == (0, 1, 0)
    assert (first["pid"], first["pepoch"], first["seq"]) == (77, 3, 0)
    m.shutdown()
    m2 = manager(tmp_path, clock)
    entry = m2.get_log("pid", 0).producer_state.last_entry(77)
    assert entry is not None and entry.epoch == 3 and entry.last_seq == 1
    m2.shutdown()


def test_aborted_transaction_records_are_removed(tmp_path, clock):
    m = manager(tmp_path, clock)
    log = m.get_or_create_log("txn", 0)
    append(log, [(b"t", b"aborted-1"), (b"t2", b"aborted-2")], producer=(5, 0, 0),
           transactional=True)
    marker = bytearray(build_control_batch(0, 0, 5, 0, clock.time_ms()))
    log.append_as_leader(marker, read_header(marker), 0)
    log.high_watermark = log.log_end_offset
    for i in range(40):
        append(log, [(b"n%d" % i, b"v" * 30)])
    cleaner(m, clock).clean_once()
    values = [r[2] for r in disk_records(log.dir)]
    assert b"aborted-1" not in values and b"aborted-2" not in values
    m.shutdown()


# ---------------------------------------------------------------- crash at each swap step

def _build_crash_log(tmp_path, clock):
    m = manager(tmp_path, clock, **{"segment.bytes": 1 << 20})
    log = m.get_or_create_log("crash", 0)
    for s in range(4):  # four small segments -> one group of four
        for i in range(10):
            append(log, [(b"k%d" % (i % 3), b"s%d-%d" % (s, i))])
        append(log, [(b"end-%d" % s, b"unique")])
        log.roll()
    append(log, [(b"active", b"1")])
    return m, log


def _expected_after_clean(tmp_path, clock):
    m, log = _build_crash_log(tmp_path / "reference", clock)
    assert cleaner(m, clock).clean_once() is not None
    recs = disk_records(log.dir)
    m.shutdown()
    return recs


@pytest.mark.parametrize("step,forward", [
    ("cleaned_only", False), ("first_swap_file", False), ("to_swap", True),
    ("first_old_deleted", True), ("old_deleted", True), ("swap_renamed", True)])
def test_crash_at_each_swap_step_recovers(tmp_path, clock, step, forward):
    expected_after = _expected_after_clean(tmp_path, clock)
    m, log = _build_crash_log(tmp_path / "victim", clock)
    before = disk_records(log.dir)
    c = cleaner(m, clock)
    ltc = c.grab_filthiest()
    job = prepare_job(ltc.key, log, ltc.first_dirty, ltc.first_uncleanable, clock.time_ms(),
                      c.settings)
    result = Cleaner().clean(job)
    assert len(result.groups) == 1 and len(result.groups[0].old) == 4
    assert glob.glob(os.path.join(log.dir, "*.log.cleaned"))
    if step != "cleaned_only":
        with pytest.raises(InjectedCrash):
            replace_segments(log, result.groups[0], fail_after=step)
    # "crash": drop every descriptor without writing anything, then load as after kill -9
    d = log.dir
    log.release()
    for lg in m.logs.values():
        lg.release()
    leftovers = [n for n in os.listdir(d) if n.endswith((".cleaned", ".swap", ".deleted"))]
    assert leftovers, "the crash left intermediate files behind"
    reloaded = Log.load(d, {"segment.bytes": 1 << 20}, clock, had_clean_shutdown=False)
    assert not [n for n in os.listdir(d) if n.endswith((".cleaned", ".swap", ".deleted"))]
    got = disk_records(d)
    assert got == (expected_after if forward else before)
    assert latest_by_key(got) == latest_by_key(before)
    # indexes valid: every offset found through them
    for off, _k, _v in got:
        seg = reloaded.segments[reloaded.segment_for(off)]
        h = seg.find_offset_position(off)
        assert h is not None and h.base_offset <= off <= h.last_offset
    assert reloaded.log_end_offset == before[-1][0] + 1
    reloaded.close()


def test_swap_with_leftover_cleaned_index_rolls_back(tmp_path):
    d = tmp_path / "t-0"
    d.mkdir()
    (d / "00000000000000000000.log").write_bytes(build_batch([(b"k", b"old", (), TS)]))
    (d / "00000000000000000000.log.swap").write_bytes(build_batch([(b"k", b"new", (), TS)]))
    (d / "00000000000000000000.index.cleaned").write_bytes(b"")
    assert recover_swap_files(str(d)) == []
    assert sorted(os.listdir(d)) == ["00000000000000000000.log"]
    assert b"old" in (d / "00000000000000000000.log").read_bytes()


def test_background_cleaner_runs_off_loop_and_installs_on_loop(tmp_path, clock):
    import asyncio
    m = manager(tmp_path, clock)
    log = m.get_or_create_log("bg", 0)
    for i in range(60):
        append(log, [(b"k%d" % (i % 4), b"v%d" % i)])
    before = disk_records(log.dir)

    async def run():
        c = cleaner(m, clock)
        c.start()
        for _ in range(3000):
            if c.cleans:
                break
            # appends keep going on the loop while the thread cleans
            append(log, [(b"live", b"x")])
            await asyncio.sleep(0.01)
        await c.stop()
        return c.cleans

    assert asyncio.run(run()) >= 1
    after = disk_records(log.dir)
    assert latest_by_key([r for r in after if r[1] != b"live"]) == latest_by_key(before)
    offs = [r[0] for r in after]
    assert offs == sorted(set(offs)) and offs[-1] == log.log_end_offset - 1
    m.shutdown()
    shutil.rmtree(tmp_path / "data", ignore_errors=True)
