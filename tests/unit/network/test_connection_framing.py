"""How a connection cuts the bytes it reads into request frames: the frames that came
whole in one read are views of that read (not copies), a frame cut by the end of a read
waits for the rest and is joined once, and the frames handled in one turn of the loop
stay bounded."""
from __future__ import annotations

import asyncio
import struct

import pytest

from kafkapy.network import connection as connection_module
from kafkapy.network.connection import KafkaConnection
from tests.support.fake_connection import fake_connection


def framed(body: bytes) -> bytes:
    return struct.pack(">i", len(body)) + body


@pytest.fixture
def handled(monkeypatch):
    """The frames the connection hands on, in order."""
    frames = []
    monkeypatch.setattr(KafkaConnection, "_handle_frame", lambda self, frame: frames.append(frame))
    return frames


async def test_whole_frames_of_a_read_are_views_of_it_and_the_rest_waits(handled):
    conn, _ = fake_connection()
    first, second, third = b"request one", b"request two", b"request three"
    data = framed(first) + framed(second) + framed(third)[:7]
    conn.data_received(data)
    assert [bytes(frame) for frame in handled] == [first, second]
    assert all(isinstance(frame, memoryview) and frame.obj is data for frame in handled)
    assert conn._reads.pieces == [framed(third)[:7]]    # (a copy: the read's smaller part)
    rest = framed(third)[7:]
    conn.data_received(rest[:2])                # still not whole: nothing handled
    assert len(handled) == 2
    conn.data_received(rest[2:])                # the pieces are joined once, then cut
    assert bytes(handled[2]) == third and isinstance(handled[2], memoryview)


async def test_frames_past_one_turn_wait_in_the_buffer_for_the_next(handled):
    conn, _ = fake_connection()
    bodies = [b"request %d" % i for i in range(connection_module._FRAMES_PER_TURN + 2)]
    data = b"".join(framed(body) for body in bodies)
    conn.data_received(data)
    assert len(handled) == connection_module._FRAMES_PER_TURN
    await asyncio.sleep(0)
    assert [bytes(frame) for frame in handled] == bodies
