"""A log segment costs one file descriptor (its .log); mapped indexes hold none."""
from __future__ import annotations

import os

from kafkapy.log.file_mapping import FileMapping
from kafkapy.log.offset_index import OffsetIndex
from kafkapy.log.segment import LogSegment
from kafkapy.log.time_index import TimeIndex


def _open_fds() -> int:
    return len(os.listdir("/proc/self/fd"))


def test_segment_holds_one_descriptor_active_or_not(tmp_path):
    before = _open_fds()
    active = LogSegment(str(tmp_path), 0)
    assert _open_fds() - before == 1
    active.on_become_inactive()
    assert _open_fds() - before == 1
    active.close()
    assert _open_fds() == before


def test_mapped_index_keeps_entries_without_a_descriptor(tmp_path):
    path = str(tmp_path / "00000000000000000000.index")
    before = _open_fds()
    index = OffsetIndex(path, 0, 1024)
    index.append(5, 100)
    index.append(9, 300)
    assert _open_fds() == before
    assert index.lookup(7) == (5, 100)
    index.close()
    assert os.path.getsize(path) == 16
    again = OffsetIndex(path, 0, 1024, writable=False)
    assert again.entries_list() == [(5, 100), (9, 300)]
    again.close()
    times = TimeIndex(str(tmp_path / "00000000000000000000.timeindex"), 0, 1200)
    times.maybe_append(1000, 5)
    assert _open_fds() == before
    times.close()


def test_file_mapping_writes_reach_the_file(tmp_path):
    path = tmp_path / "f"
    path.write_bytes(bytes(16))
    mapping = FileMapping(str(path), 16)
    mapping.view[0:4] = b"abcd"
    mapping.flush()
    assert path.read_bytes()[:4] == b"abcd"
    mapping.close()
    mapping.close()     # closing twice is harmless
