"""Unsigned varints: what is written reads back, at every length, and bad input is refused."""
from __future__ import annotations

import pytest

from kafkapy.protocol.varint import read_uvarint, uvarint, write_uvarint


@pytest.mark.parametrize("value, encoded", [
    (0, b"\x00"), (1, b"\x01"), (127, b"\x7f"), (128, b"\x80\x01"), (300, b"\xac\x02"),
    (16383, b"\xff\x7f"), (16384, b"\x80\x80\x01"), (2**31 - 1, b"\xff\xff\xff\xff\x07"),
])
def test_values_read_back_from_where_they_start(value, encoded):
    assert uvarint(value) == encoded
    out = bytearray(b"ab")
    write_uvarint(out, value)
    assert read_uvarint(memoryview(bytes(out) + b"z"), 2) == (value, 2 + len(encoded))


def test_more_than_five_bytes_is_refused():
    with pytest.raises(ValueError):
        read_uvarint(b"\x80\x80\x80\x80\x80\x01", 0)


@pytest.mark.parametrize("data", [b"", b"\x80", b"\xff\xff"])
def test_reading_past_the_end_raises_index_error(data):
    with pytest.raises(IndexError):
        read_uvarint(memoryview(data), 0)
