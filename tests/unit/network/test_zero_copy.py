"""Zero-copy responses: markers and the frame cut at them."""
from __future__ import annotations

import os

from kafkapy.network.zero_copy import MARKER_SIZE, FileRange, materialize, new_marker, splice
from kafkapy.protocol.varint import uvarint


def test_markers_are_distinct_and_of_the_marker_size():
    markers = [new_marker() for _ in range(1000)]
    assert len(set(markers)) == 1000
    assert {len(m) for m in markers} == {MARKER_SIZE}


class _Slice:
    def __init__(self, fd, position, size):
        self.fd, self.position, self.size = fd, position, size


def test_a_frame_is_cut_at_its_markers_and_reads_back_with_the_file_bytes(tmp_path):
    path = tmp_path / "segment"
    path.write_bytes(b"0123456789abcdef")
    fd = os.open(path, os.O_RDONLY)
    try:
        first, second = new_marker(), new_marker()
        body = b"H" + uvarint(MARKER_SIZE + 1) + first + b"M" + uvarint(MARKER_SIZE + 1) + second + b"T"
        frame = len(body).to_bytes(4, "big") + body
        parts = splice(frame, {first: [_Slice(fd, 2, 3)], second: [_Slice(fd, 10, 4)]}, True)
        assert sum(isinstance(p, FileRange) for p in parts) == 2
        whole = materialize(parts)
        expected = b"H" + uvarint(4) + b"234" + b"M" + uvarint(5) + b"abcd" + b"T"
        assert whole == len(expected).to_bytes(4, "big") + expected
    finally:
        os.close(fd)
