"""A zero-copy answer on a real socket: the bytes before a file range go with MSG_MORE
(held by the kernel for the file's bytes, so the reader is not woken for a frame's first
bytes alone), the range by sendfile, the rest by the transport; the reader gets exactly
the frame."""
from __future__ import annotations

import os
import socket

from kafkapy.network import connection as connection_module
from kafkapy.network.zero_copy import FileRange
from tests.support.fake_connection import FakeTransport, fake_connection


class _SocketTransport(FakeTransport):
    def __init__(self, sock: socket.socket) -> None:
        super().__init__()
        self.sock = sock

    def get_extra_info(self, name, default=None):
        return self.sock if name == "socket" else super().get_extra_info(name, default)

    def write(self, data) -> None:
        self.sock.sendall(data)


async def test_the_bytes_before_a_file_range_go_with_msg_more(tmp_path, monkeypatch):
    sends = []
    send = socket.socket.send
    monkeypatch.setattr(socket.socket, "send",
                        lambda self, data, flags=0: sends.append((bytes(data), flags))
                        or send(self, data, flags))
    records = os.urandom(50_000)
    path = tmp_path / "segment.log"
    path.write_bytes(b"-" * 7 + records)
    fd = os.open(path, os.O_RDONLY)
    ours, theirs = socket.socketpair()
    conn, _ = fake_connection()
    conn.connection_made(_SocketTransport(ours))
    try:
        slot = connection_module._Slot()
        slot.payload = [b"head", FileRange(fd, 7, len(records)), b"tail"]
        conn._queue(slot)
        conn._flush()
        expected = b"head" + records + b"tail"
        received = b""
        while len(received) < len(expected):
            received += theirs.recv(1 << 20)
        assert received == expected
        assert sends[0] == (b"head", socket.MSG_MORE)
    finally:
        conn.close()
        os.close(fd)
        ours.close()
        theirs.close()
