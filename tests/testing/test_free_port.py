"""free_port never hands out a port twice in one process.

The README walkthrough once got the same port for two listeners: the kernel
gave a just-closed port to the next bind. The fake socket below replays that.
"""

from __future__ import annotations

import socket
from types import SimpleNamespace

from kafkapy.testing import _broker


class _ReplayingSocket:
    """Stands in for socket.socket: binds get the ports of ``ports`` in turn."""

    ports: list[int] = []

    def __enter__(self):
        return self

    def __exit__(self, *exc) -> None:
        pass

    def bind(self, address) -> None:
        self._port = self.ports.pop(0)

    def getsockname(self):
        return ("127.0.0.1", self._port)


def test_a_port_the_kernel_repeats_is_skipped(monkeypatch):
    monkeypatch.setattr(_broker, "_handed_out", set())
    # Only _broker's name for the socket module changes: other threads keep the real one.
    monkeypatch.setattr(_broker, "socket", SimpleNamespace(socket=_ReplayingSocket))
    _ReplayingSocket.ports = [40001, 40001, 40002, 40001, 40003]
    assert [_broker.free_port() for _ in range(3)] == [40001, 40002, 40003]


def test_real_ports_are_distinct_and_bindable():
    ports = [_broker.free_port() for _ in range(200)]
    assert len(set(ports)) == len(ports)
    with socket.socket() as s:
        s.bind(("127.0.0.1", ports[-1]))
