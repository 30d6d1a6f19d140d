"""The rest of a read after its whole frames: a view while it is the larger part of the
read, a copy once it is the smaller one (so a few bytes of the next frame do not keep a
whole read alive)."""
from __future__ import annotations

from kafkapy.network.framing import rest_of


def test_the_larger_part_stays_a_view_of_the_read():
    data = bytes(range(100))
    rest = rest_of(memoryview(data), 40)
    assert isinstance(rest, memoryview) and rest.obj is data and rest == data[40:]
    assert rest_of(memoryview(data), 0).obj is data


def test_the_smaller_part_is_copied():
    data = bytes(range(100))
    rest = rest_of(memoryview(data), 60)
    assert type(rest) is bytes and rest == data[60:]
    assert rest_of(memoryview(data), 100) == b""
