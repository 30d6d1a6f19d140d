"""Log (one partition): append as leader, roll, read, timestamps, restart, recovery."""
from __future__ import annotations

import os
import struct

import pytest
from kafka.record import MemoryRecords
from kafka.record.default_records import DefaultRecordBatchBuilder

from kafkapy.clock import MockClock
from kafkapy.log.log import Log
from kafkapy.protocol.errors import ErrorCode, KafkaError
from kafkapy.records.batch import RecordError, validate_for_append

TS = 1_700_000_000_000


def make(n=5, ts=TS, value_size=100, codec=0, producer=(-1, -1, -1), ts_step=1):
    b = DefaultRecordBatchBuilder(2, codec, False, producer[0], producer[1], producer[2],
                                  1 << 22)
    for i in range(n):
        b.append(i, timestamp=ts + i * ts_step, key=b"k%d" % i, value=b"v" * value_size,
                 headers=[])
    buf = bytearray(b.build())
    [h] = validate_for_append(buf, 1 << 22, 9)
    return buf, h


def append(log, n=5, ts=TS, epoch=0, **kw):
    buf, h = make(n, ts, **kw)
    return log.append_as_leader(buf, h, epoch)


def all_records(log, start=None):
    data = log.read_bytes(log.log_start_offset if start is None else start, 1 << 30)
    mr = MemoryRecords(data)
    out = []
    while mr.has_next():
        batch = mr.next_batch()
        assert batch.validate_crc()
        out += [(r.offset, r.timestamp) for r in batch]
    return out


@pytest.fixture
def clock():
    return MockClock(TS)


def open_log(tmp_path, clock, cfg=None, **kw):
    return Log.load(str(tmp_path / "orders-3"), cfg or {}, clock, **kw)


def test_append_assigns_offsets_and_reads_back(tmp_path, clock):
    log = open_log(tmp_path, clock)
    assert (log.topic, log.partition) == ("orders", 3)
    info = append(log, 5)
    assert (info.first_offset, info.last_offset, info.log_append_time_ms) == (0, 4, -1)
    info = append(log, 3, codec=3)
    assert (info.first_offset, info.last_offset) == (5, 7)
    assert log.log_end_offset == 8
    assert [o for o, _ in all_records(log)] == list(range(8))
    assert all_records(log, 6)[0][0] == 5  # whole batch containing 6
    assert log.read(8, 1000) == []
    with pytest.raises(KafkaError) as e:
        log.read(9, 1000)
    assert e.value.code == ErrorCode.OFFSET_OUT_OF_RANGE
    # max_offset (HW) is exclusive and batch-aligned
    data = log.read_bytes(0, 1 << 20, max_offset=5)
    mr = MemoryRecords(data)
    assert [r.offset for r in mr.next_batch()] == [0, 1, 2, 3, 4]
    assert not mr.has_next()
    log.high_watermark = 100
    assert log.high_watermark == 8  # clamped to the LEO
    assert log.read(5, 1 << 20, max_offset=5) == []
    [sl] = log.read(0, 1 << 20)
    assert sl.position == 0 and sl.size == log.segments[0].size
    log.close()


def test_log_append_time(tmp_path, clock):
    log = open_log(tmp_path, clock, {"message.timestamp.type": "LogAppendTime"})
    clock.advance(12345)
    info = append(log, 4, codec=1)
    assert info.log_append_time_ms == TS + 12345
    recs = all_records(log)
    assert recs == [(i, TS + 12345) for i in range(4)]
    log.close()


def test_roll_at_segment_bytes(tmp_path, clock):
    log = open_log(tmp_path, clock, {"segment.bytes": 3000})
    sizes = []
    for i in range(10):
        buf, h = make(5, TS + i, value_size=100)
        sizes.append(h.size)
        log.append_as_leader(buf, h, 0)
    per_seg = 3000 // sizes[0]
    assert len(log.segments) == -(-10 // per_seg)
    assert [s.base_offset for s in log.segments] == [i * per_seg * 5 for i in
                                                     range(len(log.segments))]
    for s in log.segments:
        assert s.size <= 3000
    names = sorted(os.listdir(log.dir))
    assert "00000000000000000000.log" in names
    assert f"{per_seg * 5:020d}.log" in names
    # rolled segments have trimmed indexes; the active one is preallocated
    first_ti = os.path.getsize(os.path.join(log.dir, "00000000000000000000.timeindex"))
    assert first_ti % 12 == 0 and first_ti <= 24
    # lazy, as Kafka's LazyIndex: preallocated by the segment's first append
    assert os.path.getsize(log.segments[-1].offset_index.path) == 10485760
    # producer snapshot taken at roll
    assert f"{per_seg * 5:020d}.snapshot" in names
    # reads span segments
    assert [o for o, _ in all_records(log)] == list(range(50))
    log.close()


def test_roll_on_segment_ms(tmp_path, clock):
    log = open_log(tmp_path, clock, {"segment.ms": 1000})
    append(log, 1, ts=clock.time_ms())
    clock.advance(500)
    append(log, 1, ts=clock.time_ms())
    assert len(log.segments) == 1
    clock.advance(600)
    append(log, 1, ts=clock.time_ms())  # first batch's timestamp is 1100 ms old
    assert [s.base_offset for s in log.segments] == [0, 2]
    log.close()


def test_batch_larger_than_segment_rejected(tmp_path, clock):
    log = open_log(tmp_path, clock, {"segment.bytes": 500})
    buf, h = make(5, value_size=200)
    with pytest.raises(RecordError) as e:
        log.append_as_leader(buf, h, 0)
    assert e.value.code == ErrorCode.RECORD_LIST_TOO_LARGE


def test_offset_for_timestamp_and_max_timestamp(tmp_path, clock):
    log = open_log(tmp_path, clock, {"segment.bytes": 2000})
    # CreateTime, non-monotonic across batches
    append(log, 5, ts=TS + 100, ts_step=10)   # 0..4: 100..140
    append(log, 5, ts=TS + 50, ts_step=1)     # 5..9: 50..54
    append(log, 5, ts=TS + 500, ts_step=-10)  # 10..14: 500..460 (max in first record)
    append(log, 5, ts=TS + 200, ts_step=10, codec=2)  # 15..19: 200..240
    assert len(log.segments) > 1
    assert log.offset_for_timestamp(TS + 125) == (3, TS + 130)
    assert log.offset_for_timestamp(TS + 0) == (0, TS + 100)
    assert log.offset_for_timestamp(TS + 141) == (10, TS + 500)
    assert log.offset_for_timestamp(TS + 501) is None
    assert log.max_timestamp_and_offset() == (10, TS + 500)
    log.close()


def test_restart_after_clean_close_keeps_state(tmp_path, clock):
    log = open_log(tmp_path, clock, {"segment.bytes": 2500})
    for i in range(9):
        append(log, 4, ts=TS + i * 100)
    leo, nseg = log.log_end_offset, len(log.segments)
    entries = [s.offset_index.entries_list() for s in log.segments]
    log.flush()
    log.close()
    log2 = open_log(tmp_path, clock, {"segment.bytes": 2500}, recovery_point=leo)
    assert log2.log_end_offset == leo == 36
    assert len(log2.segments) == nseg
    assert [s.offset_index.entries_list() for s in log2.segments] == entries
    assert log2.segments[-1].max_timestamp_so_far == TS + 800 + 3
    info = append(log2, 2)
    assert info.first_offset == 36
    assert [o for o, _ in all_records(log2)] == list(range(38))
    log2.close()


def _crash(log):
    """Simulate a crash: drop descriptors without trimming or snapshotting."""
    for s in log.segments:
        s.release()


def test_unclean_restart_recovers_torn_tail(tmp_path, clock):
    log = open_log(tmp_path, clock)
    for i in range(6):
        append(log, 3, ts=TS + i)
    last_pos = log.segments[-1].find_offset_position(15).position
    path = log.segments[-1].log_path
    _crash(log)
    size = os.path.getsize(path)
    with open(path, "r+b") as f:
        f.truncate(size - 7)
    log2 = open_log(tmp_path, clock, had_clean_shutdown=False, recovery_point=0)
    assert log2.log_end_offset == 15
    assert log2.recovered_bytes_truncated == size - 7 - last_pos
    assert os.path.getsize(path) == last_pos
    assert append(log2, 1).first_offset == 15
    log2.close()


def test_unclean_restart_drops_appended_garbage(tmp_path, clock):
    log = open_log(tmp_path, clock)
    append(log, 3)
    append(log, 3)
    path = log.segments[-1].log_path
    good = log.segments[-1].size
    _crash(log)
    with open(path, "ab") as f:
        f.write(os.urandom(500))
    log2 = open_log(tmp_path, clock, had_clean_shutdown=False)
    assert log2.log_end_offset == 6 and os.path.getsize(path) == good
    log2.close()


def test_missing_or_corrupt_index_is_rebuilt(tmp_path, clock):
    cfg = {"index.interval.bytes": 600, "segment.bytes": 2500}
    log = open_log(tmp_path, clock, cfg)
    for i in range(12):
        append(log, 3, ts=TS + i)
    entries = [s.offset_index.entries_list() for s in log.segments]
    assert all(entries)
    first = log.segments[0]
    log.close()
    os.unlink(first.offset_index.path)
    # corrupt the second segment's index: offsets not ascending
    with open(log.segments[1].offset_index.path, "r+b") as f:
        f.write(struct.pack(">ii", 50, 999999))
    log2 = open_log(tmp_path, clock, cfg)
    assert [s.offset_index.entries_list() for s in log2.segments] == entries
    assert log2.log_end_offset == 36
    log2.close()


def test_truncate_to(tmp_path, clock):
    log = open_log(tmp_path, clock, {"segment.bytes": 2000})
    for i in range(8):
        append(log, 4, ts=TS + i, epoch=i // 3)
    assert len(log.segments) >= 3
    log.high_watermark = 32
    assert log.truncate_to(14)  # inside batch 12..15: whole batch removed
    assert log.log_end_offset == 12
    assert log.high_watermark == 12
    assert [o for o, _ in all_records(log)] == list(range(12))
    assert log.leader_epoch_cache.entries == [(0, 0), (1, 12)][:1]
    assert append(log, 1).first_offset == 12
    log.close()


def test_truncate_at_log_end_drops_an_empty_epoch(tmp_path, clock):
    """A broker that led epoch 1 without appending keeps (1, LEO); truncating to the log
    end (the new leader's diverging epoch says so) must drop it, as Kafka's truncateTo."""
    log = open_log(tmp_path, clock)
    append(log, 5, epoch=0)
    log.leader_epoch_cache.assign(1, log.log_end_offset)    # became leader, wrote nothing
    assert not log.truncate_to(log.log_end_offset)
    assert log.leader_epoch_cache.entries == [(0, 0)]
    assert log.log_end_offset == 5
    log.close()


def test_epoch_checkpoint_written_from_two_threads(tmp_path):
    """The loop assigns epochs while the flusher thread flushes: both write the file
    through one .tmp name, so they must not interleave (a rename would find it gone)."""
    import threading
    from kafkapy.log.leader_epoch import LeaderEpochCache
    cache = LeaderEpochCache(str(tmp_path))
    errors: list[BaseException] = []
    stop = threading.Event()

    def flusher() -> None:
        try:
            while not stop.is_set():
                cache._unsynced = True
                cache.flush()
        except BaseException as e:      # noqa: BLE001 (reported below)
            errors.append(e)
    thread = threading.Thread(target=flusher)
    thread.start()
    try:
        for epoch in range(2000):
            cache.assign(epoch, epoch * 10)
    finally:
        stop.set()
        thread.join(10)
    assert errors == []
    assert cache.entries[-1] == (1999, 19990)


def test_leader_epoch_checkpoint_written(tmp_path, clock):
    log = open_log(tmp_path, clock)
    append(log, 2, epoch=0)
    append(log, 2, epoch=0)
    append(log, 2, epoch=3)
    text = open(os.path.join(log.dir, "leader-epoch-checkpoint")).read()
    assert text == "0\n2\n0 0\n3 4\n"
    assert log.leader_epoch_cache.end_offset_for(0, log.log_end_offset) == (0, 4)
    assert log.leader_epoch_cache.end_offset_for(3, log.log_end_offset) == (3, 6)
    log.close()


def test_flush_messages_policy(tmp_path, clock):
    log = open_log(tmp_path, clock, {"flush.messages": 10})
    append(log, 5)
    assert log.recovery_point == 0
    append(log, 5)
    assert log.recovery_point == 10
    log.update_config({"flush.ms": 1000})
    append(log, 1)
    assert not log.flush_if_due()
    clock.advance(1000)
    assert log.flush_if_due() and log.recovery_point == 11
    log.close()


def test_delete_renames_and_removes(tmp_path, clock):
    log = open_log(tmp_path, clock)
    append(log, 1)
    renamed = log.delete()
    name = os.path.basename(renamed)
    assert name.startswith("orders-3.") and name.endswith("-delete")
    assert len(name) == len("orders-3.") + 32 + len("-delete")
    assert not os.path.exists(renamed)
    assert not os.path.exists(str(tmp_path / "orders-3"))


def test_retention_by_time_respects_hw_and_delete_delay(tmp_path, clock):
    cfg = {"segment.bytes": 1200, "retention.ms": 10_000, "file.delete.delay.ms": 60_000}
    log = open_log(tmp_path, clock, cfg)
    for i in range(6):
        append(log, 4, ts=TS + i * 1000)  # ~560-byte batches: 2 per segment
    bases = [s.base_offset for s in log.segments]
    assert bases == [0, 8, 16]
    clock.advance(11_500)  # only segment 0 (max ts TS+1003) is older than 10 s
    log.high_watermark = 0
    assert log.delete_old_segments() == 0  # nothing below the HW
    log.high_watermark = log.log_end_offset
    assert log.delete_old_segments() == 1
    assert log.log_start_offset == 8 and [s.base_offset for s in log.segments] == [8, 16]
    names = os.listdir(log.dir)
    assert "00000000000000000000.log.deleted" in names
    assert "00000000000000000000.index.deleted" in names
    assert "00000000000000000000.log" not in names
    with pytest.raises(KafkaError):
        log.read(3, 1000)
    assert log.purge_deleted_segments() == 0
    clock.advance(60_000)
    assert log.purge_deleted_segments() == 1
    assert not [n for n in os.listdir(log.dir) if n.endswith(".deleted")]
    # everything expired: the active segment is rolled first, log stays usable
    assert log.delete_old_segments() == 2
    assert [s.base_offset for s in log.segments] == [24]
    assert log.log_start_offset == 24 == log.log_end_offset
    assert append(log, 1, ts=clock.time_ms()).first_offset == 24
    log.close()


def test_retention_by_bytes_and_log_start(tmp_path, clock):
    log = open_log(tmp_path, clock, {"segment.bytes": 1200, "retention.ms": -1,
                                     "retention.bytes": 1200})
    for i in range(8):
        append(log, 4, ts=TS + i)
    log.high_watermark = log.log_end_offset
    total = log.size
    seg_sizes = [s.size for s in log.segments]
    assert len(seg_sizes) == 4
    removed = log.delete_old_segments()
    # drop oldest segments while what is left stays >= retention.bytes
    expect, excess = 0, total - 1200
    for sz in seg_sizes:
        if excess - sz >= 0:
            excess -= sz
            expect += 1
        else:
            break
    assert removed == expect == 2
    log.update_config({"retention.bytes": -1, "cleanup.policy": ["compact"]})
    log.maybe_increment_log_start_offset(26)
    assert log.delete_old_segments() == 1  # segment [16..23] lies wholly below 26
    assert log.log_start_offset == 26 and log.segments[0].base_offset == 24
    log.close()


def test_read_spans_segments_within_budget(tmp_path, clock):
    log = open_log(tmp_path, clock, {"segment.bytes": 1200})
    sizes = []
    for i in range(6):
        buf, h = make(4, TS + i)
        sizes.append(h.size)
        log.append_as_leader(buf, h, 0)
    assert [s.base_offset for s in log.segments] == [0, 8, 16]
    slices = log.read(0, 1 << 20)
    assert [(s.first_offset, s.position, s.size) for s in slices] == \
        [(0, 0, sizes[0] * 2), (8, 0, sizes[0] * 2), (16, 0, sizes[0] * 2)]
    assert len({s.fd for s in slices}) == 3
    slices = log.read(0, sizes[0] * 2 + 10)
    assert [(s.first_offset, s.size) for s in slices] == [(0, sizes[0] * 2)]
    slices = log.read(5, sizes[0] * 2)
    assert [(s.first_offset, s.size) for s in slices] == [(4, sizes[0]), (8, sizes[0])]
    # HW inside the second segment stops the read there
    slices = log.read(0, 1 << 20, max_offset=12)
    assert [(s.first_offset, s.size) for s in slices] == [(0, sizes[0] * 2), (8, sizes[0])]
    log.close()


def test_corruption_in_middle_segment_drops_later_segments(tmp_path, clock):
    cfg = {"segment.bytes": 1200}
    log = open_log(tmp_path, clock, cfg)
    for i in range(6):
        append(log, 4, ts=TS + i)
    assert [s.base_offset for s in log.segments] == [0, 8, 16]
    second = log.segments[0].find_offset_position(4)
    path0 = log.segments[0].log_path
    _crash(log)
    with open(path0, "r+b") as f:
        f.seek(second.position + 80)
        b = f.read(1)
        f.seek(second.position + 80)
        f.write(bytes([b[0] ^ 0x55]))
    log2 = open_log(tmp_path, clock, cfg, had_clean_shutdown=False, recovery_point=0)
    assert log2.log_end_offset == 4
    assert [s.base_offset for s in log2.segments] == [0]
    assert sorted(n for n in os.listdir(log2.dir) if n.endswith(".log")) == \
        ["00000000000000000000.log"]
    assert append(log2, 2).first_offset == 4
    log2.close()


def test_truncate_fully_and_reload(tmp_path, clock):
    log = open_log(tmp_path, clock, {"segment.bytes": 1200})
    for i in range(4):
        append(log, 4, ts=TS + i)
    log.truncate_to(0)
    assert (log.log_start_offset, log.log_end_offset, len(log.segments)) == (0, 0, 1)
    assert append(log, 2).first_offset == 0
    log.close()
    log2 = open_log(tmp_path, clock, {"segment.bytes": 1200})
    assert log2.log_end_offset == 2
    assert not [n for n in os.listdir(log2.dir) if n.endswith(".deleted")]
    assert [o for o, _ in all_records(log2)] == [0, 1]
    log2.close()


def test_log_start_offset_restored_on_load(tmp_path, clock):
    log = open_log(tmp_path, clock)
    for i in range(3):
        append(log, 4, ts=TS + i)
    log.close()
    log2 = open_log(tmp_path, clock, log_start_offset=5, high_watermark=3)
    assert (log2.log_start_offset, log2.high_watermark, log2.log_end_offset) == (5, 5, 12)
    with pytest.raises(KafkaError):
        log2.read(4, 100)
    assert log2.read(5, 1 << 20)[0].first_offset == 4  # whole batch holding offset 5
    log2.close()


def test_hot_path_never_decodes_records(tmp_path, clock, monkeypatch):
    import kafkapy.records.record as record_mod

    def boom(*a, **k):
        raise AssertionError("record-level code on the hot path")
    for name in ("decode_records", "decompress", "decode_varint"):
        monkeypatch.setattr(record_mod, name, boom)
    log = open_log(tmp_path, clock, {"segment.bytes": 800,
                                     "message.timestamp.type": "LogAppendTime"})
    for codec in (0, 1, 2, 3, 4):
        buf, h = make(5, codec=codec)
        log.append_as_leader(buf, h, 1)
    assert len(log.segments) > 1
    assert sum(s.size for s in log.read(0, 1 << 20)) == log.size
    log.close()
