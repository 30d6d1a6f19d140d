"""LogSegment: appends, index entries on disk, lookups, reads, recovery, truncation."""
from __future__ import annotations

import os
import struct

from kafka.record import MemoryRecords
from kafka.record.default_records import DefaultRecordBatchBuilder

from kafkapy.clock import MockClock
from kafkapy.log.segment import LogSegment
from kafkapy.records.batch import patch_for_append, read_header, validate_for_append

TS = 1_700_000_000_000


def make_batch(n: int, ts: int, value_size: int = 100, codec: int = 0) -> bytearray:
    b = DefaultRecordBatchBuilder(2, codec, False, -1, -1, -1, 1 << 22)
    for i in range(n):
        b.append(i, timestamp=ts + i, key=None, value=b"x" * value_size, headers=[])
    return bytearray(b.build())


def append_batch(seg: LogSegment, base_offset: int, n: int, ts: int, value_size: int = 100):
    buf = make_batch(n, ts, value_size)
    [h] = validate_for_append(buf, 1 << 22, 9)
    patch_for_append(buf, h, base_offset, 0)
    seg.append(h.last_offset, h.max_timestamp, h.last_offset, buf)
    return h


def fill(seg, batches=20, per=10, value_size=100, base=0):
    """Append ``batches`` batches of ``per`` records; returns headers with positions."""
    hs = []
    pos = seg.size
    off = base
    for i in range(batches):
        h = append_batch(seg, off, per, TS + i * 1000, value_size)
        h.position = pos
        pos += h.size
        off += per
        hs.append(h)
    return hs


def test_append_writes_batches_and_sparse_index(tmp_path):
    seg = LogSegment(str(tmp_path), 0, index_interval_bytes=4096, max_index_size=4096,
                     clock=MockClock())
    hs = fill(seg, batches=20, per=10, value_size=100)  # ~1.1 KB batches
    assert seg.size == sum(h.size for h in hs) == os.path.getsize(seg.log_path)
    assert seg.next_offset == 200
    # file bytes are exactly the batches, readable by kafka-python
    data = open(seg.log_path, "rb").read()
    mr = MemoryRecords(data)
    offsets = []
    while mr.has_next():
        offsets += [r.offset for r in mr.next_batch()]
    assert offsets == list(range(200))
    # index rule: an entry when > 4096 bytes were appended since the last one; the
    # entry is (last offset of that append, its start position)
    expected = []
    since = 0
    for h in hs:
        if since > 4096:
            expected.append((h.last_offset, h.position))
            since = 0
        since += h.size
    assert seg.offset_index.entries_list() == expected and len(expected) >= 3
    seg.on_become_inactive()
    raw = open(os.path.join(str(tmp_path), "00000000000000000000.index"), "rb").read()
    assert [struct.unpack_from(">ii", raw, i) for i in range(0, len(raw), 8)] == expected
    traw = open(os.path.join(str(tmp_path), "00000000000000000000.timeindex"), "rb").read()
    tentries = [struct.unpack_from(">qi", traw, i) for i in range(0, len(traw), 12)]
    # time index: strictly increasing timestamps, final entry = max ts so far
    assert [t for t, _ in tentries] == sorted(set(t for t, _ in tentries))
    assert tentries[-1] == (TS + 19 * 1000 + 9, 199)
    seg.close()


def test_find_offset_position_and_read(tmp_path):
    seg = LogSegment(str(tmp_path), 0, index_interval_bytes=1000, clock=MockClock())
    hs = fill(seg, batches=30, per=5)
    for target in (0, 3, 4, 5, 77, 149):
        h = seg.find_offset_position(target)
        want = hs[target // 5]
        assert (h.base_offset, h.position) == (want.base_offset, want.position)
    assert seg.find_offset_position(150) is None
    # read: whole batches only, within max_size
    sl = seg.read(12, 3 * hs[0].size + 10)
    assert sl.position == hs[2].position and sl.size == 3 * hs[0].size
    assert sl.first_offset == 10
    data = sl.read_bytes()
    assert read_header(data).base_offset == 10
    # min_one_message returns one oversized batch; without it nothing
    assert seg.read(12, 10).size == hs[2].size
    assert seg.read(12, 10, min_one_message=False).size == 0
    # max_position (exclusive bound, e.g. the HW position)
    sl = seg.read(0, 10**9, max_position=hs[4].position)
    assert sl.size == hs[4].position
    # to the end
    sl = seg.read(140, 10**9)
    assert sl.position + sl.size == seg.size
    seg.close()


def test_find_by_timestamp(tmp_path):
    seg = LogSegment(str(tmp_path), 0, index_interval_bytes=500, clock=MockClock())
    fill(seg, batches=10, per=5)
    h = seg.find_batch_by_timestamp(TS + 3000 + 2)
    assert h.base_offset == 15 and h.max_timestamp == TS + 3004
    h = seg.find_batch_by_timestamp(TS + 3005)
    assert h.base_offset == 20
    assert seg.find_batch_by_timestamp(TS + 10**6) is None
    seg.close()


def test_recover_truncates_torn_tail_and_rebuilds_indexes(tmp_path):
    seg = LogSegment(str(tmp_path), 0, index_interval_bytes=2000, clock=MockClock())
    hs = fill(seg, batches=12, per=4)
    entries = seg.offset_index.entries_list()
    seg.close()
    full = os.path.getsize(os.path.join(str(tmp_path), "00000000000000000000.log"))
    with open(os.path.join(str(tmp_path), "00000000000000000000.log"), "r+b") as f:
        f.truncate(full - 30)  # tear the last batch
    seg = LogSegment(str(tmp_path), 0, index_interval_bytes=2000, clock=MockClock())
    truncated = seg.recover()
    assert truncated == hs[-1].size - 30
    assert seg.size == hs[-1].position
    assert seg.next_offset == 44
    assert seg.offset_index.entries_list() == [e for e in entries if e[1] < hs[-1].position]
    assert seg.max_timestamp_so_far == TS + 10 * 1000 + 3
    seg.close()


def test_recover_garbage_and_bad_crc(tmp_path):
    seg = LogSegment(str(tmp_path), 0, clock=MockClock())
    hs = fill(seg, batches=5, per=2)
    good = seg.size
    os.write(seg.fd, b"\x00\x01garbage" * 20)
    seg.size += 180
    assert seg.recover() == 180
    assert seg.size == good
    # corrupt a byte inside batch 3: it and everything after are dropped
    with open(seg.log_path, "r+b") as f:
        f.seek(hs[3].position + 70)
        f.write(b"\xff")
    assert seg.recover() == good - hs[3].position
    assert seg.next_offset == 6
    seg.close()


def test_the_last_appended_batch_is_found_without_reading_the_file(tmp_path, monkeypatch):
    """Readers at the log end ask for the batch just appended: its header is kept from the
    append.  Any other offset, and any after a truncation, is looked up in the file."""
    seg = LogSegment(str(tmp_path), 0, index_interval_bytes=1000, clock=MockClock())
    hs = fill(seg, batches=6, per=5)
    scans = []
    iter_batches = LogSegment.iter_batches
    monkeypatch.setattr(LogSegment, "iter_batches",
                        lambda self, *a, **kw: scans.append(a) or iter_batches(self, *a, **kw))
    for target in (25, 27, 29):
        h = seg.find_offset_position(target)
        assert (h.base_offset, h.position, h.size) == (25, hs[5].position, hs[5].size)
    assert seg.read(25, 10**9).position == hs[5].position
    assert scans == []
    assert seg.find_offset_position(25, start_position=hs[5].position + 1) is None
    assert seg.find_offset_position(24).base_offset == 20 and len(scans) == 2
    assert seg.find_offset_position(30) is None
    seg.truncate_to(25)
    scans.clear()
    assert seg.find_offset_position(25) is None and scans
    append_batch(seg, 25, 2, TS)
    assert seg.find_offset_position(26).position == hs[5].position
    seg.close()


def test_truncate_to(tmp_path):
    seg = LogSegment(str(tmp_path), 100, index_interval_bytes=300, clock=MockClock())
    hs = fill(seg, batches=10, per=3, base=100)
    removed = seg.truncate_to(112)  # inside batch 4 (112..114): the whole batch goes
    assert removed == sum(h.size for h in hs[4:])
    assert seg.size == hs[4].position == os.path.getsize(seg.log_path)
    assert seg.next_offset == 112
    assert all(o < 112 for o, _ in seg.offset_index.entries_list())
    append_batch(seg, 112, 3, TS)
    assert seg.next_offset == 115
    seg.close()


def test_roll_conditions(tmp_path):
    clock = MockClock()
    seg = LogSegment(str(tmp_path), 0, clock=clock)
    now = clock.time_ms()
    kw = dict(now_ms=now, segment_bytes=10_000, segment_ms=1000, jitter_ms=0)
    assert not seg.should_roll(messages_size=100, max_offset=0, max_timestamp=now, **kw)
    append_batch(seg, 0, 1, now - 5)  # first batch timestamp: now - 5
    assert not seg.should_roll(messages_size=100, max_offset=1, max_timestamp=now, **kw)
    assert seg.should_roll(messages_size=10_000, max_offset=1, max_timestamp=now, **kw)
    assert seg.should_roll(messages_size=1, max_offset=2**31, max_timestamp=now, **kw)
    # segment.ms compares the incoming batch's max timestamp with the first batch's
    assert not seg.should_roll(messages_size=1, max_offset=1, max_timestamp=now + 995, **kw)
    assert seg.should_roll(messages_size=1, max_offset=1, max_timestamp=now + 996, **kw)
    assert seg.should_roll(messages_size=1, max_offset=1, max_timestamp=now + 900,
                           **{**kw, "jitter_ms": 100})
    seg.close()


def test_find_offset_by_timestamp_exact_record(tmp_path):
    seg = LogSegment(str(tmp_path), 0, index_interval_bytes=500, clock=MockClock())
    fill(seg, batches=10, per=5)  # batch i: offsets 5i..5i+4, ts TS+1000i+j
    assert seg.find_offset_by_timestamp(TS + 3002) == (17, TS + 3002)
    assert seg.find_offset_by_timestamp(TS + 3002, starting_offset=19) == (19, TS + 3004)
    assert seg.find_offset_by_timestamp(TS + 3005) == (20, TS + 4000)
    assert seg.find_offset_by_timestamp(TS + 10**6) is None
    seg.close()
