"""Offset and time index files: on-disk bytes, lookups, truncation, reopen."""
from __future__ import annotations

import os
import struct

import pytest

from kafkapy.log.index_base import CorruptIndexError
from kafkapy.log.offset_index import OffsetIndex
from kafkapy.log.time_index import TimeIndex


def test_offset_index_file_format_and_lookup(tmp_path):
    p = str(tmp_path / "00000000000000000100.index")
    idx = OffsetIndex(p, 100, max_index_size=1005)
    assert not os.path.exists(p)  # lazy: no file before the first append
    assert idx.max_entries == 125
    for i in range(1, 11):
        idx.append(100 + i * 10, i * 4096)
        assert os.path.getsize(p) == 1000  # preallocated, rounded down to 8
    assert idx.lookup(99) == (100, 0)
    assert idx.lookup(100) == (100, 0)
    assert idx.lookup(110) == (110, 4096)
    assert idx.lookup(155) == (150, 5 * 4096)
    assert idx.lookup(10**9) == (200, 10 * 4096)
    assert idx.lookup_by_position(3 * 4096 + 5) == (130, 3 * 4096)
    with pytest.raises(ValueError):
        idx.append(200, 99999)  # not increasing
    idx.close()
    data = open(p, "rb").read()
    assert len(data) == 80  # trimmed on close
    entries = [struct.unpack_from(">ii", data, i) for i in range(0, 80, 8)]
    assert entries == [(i * 10, i * 4096) for i in range(1, 11)]


def test_offset_index_truncate_and_reopen(tmp_path):
    p = str(tmp_path / "00000000000000000000.index")
    idx = OffsetIndex(p, 0, max_index_size=800)
    for i in range(1, 6):
        idx.append(i * 10, i * 100)
    idx.truncate_to(30)
    assert idx.entries == 2 and idx.last_offset == 20
    idx.append(25, 250)
    idx.flush()
    # crash: file still preallocated (800 bytes) -> valid prefix is found
    assert os.path.getsize(p) == 800
    idx.release()
    idx2 = OffsetIndex(p, 0, max_index_size=800)
    assert idx2.entries == 3
    assert idx2.entries_list() == [(10, 100), (20, 200), (25, 250)]
    idx2.close()
    assert os.path.getsize(p) == 24


def test_offset_index_full(tmp_path):
    idx = OffsetIndex(str(tmp_path / "x.index"), 0, max_index_size=16)
    idx.append(1, 10)
    assert not idx.is_full
    idx.append(2, 20)
    assert idx.is_full
    with pytest.raises(ValueError):
        idx.append(3, 30)


def test_offset_index_sanity(tmp_path):
    p = str(tmp_path / "00000000000000000050.index")
    with open(p, "wb") as f:
        f.write(struct.pack(">ii", -5, 100))
    idx = OffsetIndex(p, 50, writable=False)
    with pytest.raises(CorruptIndexError):
        idx.sanity_check()
    idx.close()
    with open(p, "wb") as f:
        f.write(b"\x00" * 7)
    lazy = OffsetIndex(p, 50)   # nothing read yet
    with pytest.raises(CorruptIndexError):
        lazy.entries


def test_time_index_format_and_lookup(tmp_path):
    p = str(tmp_path / "00000000000000001000.timeindex")
    ti = TimeIndex(p, 1000, max_index_size=125)
    assert not os.path.exists(p)
    ti.maybe_append(5000, 1005)
    assert os.path.getsize(p) == 120
    ti.maybe_append(5000, 1006)  # not larger: ignored
    ti.maybe_append(4000, 1007)  # smaller: ignored
    ti.maybe_append(7000, 1010)
    ti.maybe_append(9000, 1020)
    assert ti.entries == 3
    assert ti.last_entry == (9000, 1020)
    assert ti.lookup(4999) == (-1, 1000)
    assert ti.lookup(5000) == (5000, 1005)
    assert ti.lookup(8999) == (7000, 1010)
    assert ti.lookup(10**15) == (9000, 1020)
    ti.truncate_to(1010)
    assert ti.entries == 1 and ti.last_entry == (5000, 1005)
    ti.maybe_append(6000, 1008)
    ti.close()
    data = open(p, "rb").read()
    assert [struct.unpack_from(">qi", data, i) for i in range(0, len(data), 12)] == \
        [(5000, 5), (6000, 8)]
    reopened = TimeIndex(p, 1000, max_index_size=125)
    assert reopened.last_entry == (6000, 1008)
    assert os.path.getsize(p) == 24  # read, not preallocated before an append
    reopened.maybe_append(6500, 1009)
    assert os.path.getsize(p) == 120  # writable: preallocated again
    reopened.close()


def test_time_index_full_keeps_a_slot_for_roll(tmp_path):
    ti = TimeIndex(str(tmp_path / "t.timeindex"), 0, max_index_size=36)
    assert ti.max_entries == 3
    ti.maybe_append(1, 1)
    ti.maybe_append(2, 2)
    assert ti.is_full
    ti.maybe_append(3, 3, skip_full_check=True)
    assert ti.entries == 3
