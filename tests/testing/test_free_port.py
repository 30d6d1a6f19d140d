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


def _no_own_range(monkeypatch) -> None:
    monkeypatch.delenv("KAFKAPY_TEST_PORTS", raising=False)
    monkeypatch.delenv("PYTEST_XDIST_WORKER", raising=False)


def test_a_port_the_kernel_repeats_is_skipped(monkeypatch):
    _no_own_range(monkeypatch)
    monkeypatch.setattr(_broker, "_handed_out", set())
    # Only _broker's name for the socket module changes: other threads keep the real one.
    monkeypatch.setattr(_broker, "socket", SimpleNamespace(socket=_ReplayingSocket))
    _ReplayingSocket.ports = [40001, 40001, 40002, 40001, 40003]
    assert [_broker.free_port() for _ in range(3)] == [40001, 40002, 40003]


def test_real_ports_are_distinct_and_bindable(monkeypatch):
    _no_own_range(monkeypatch)
    ports = [_broker.free_port() for _ in range(200)]
    assert len(set(ports)) == len(ports)
    with socket.socket() as s:
        s.bind(("127.0.0.1", ports[-1]))


def test_xdist_workers_draw_from_disjoint_ranges_below_the_ephemeral_ports(monkeypatch):
    monkeypatch.delenv("KAFKAPY_TEST_PORTS", raising=False)
    drawn = {}
    for worker in ("gw0", "gw1", "gw2"):
        monkeypatch.setenv("PYTEST_XDIST_WORKER", worker)
        monkeypatch.setattr(_broker, "_next_in_range", 0)
        drawn[worker] = {_broker.free_port() for _ in range(50)}
        assert len(drawn[worker]) == 50
        assert all(port < 32768 for port in drawn[worker])
    assert not drawn["gw0"] & drawn["gw1"] and not drawn["gw1"] & drawn["gw2"]


def test_a_set_range_is_cycled_skipping_ports_in_use(monkeypatch):
    with socket.socket() as busy:
        busy.bind(("127.0.0.1", 0))
        busy.listen()
        port = busy.getsockname()[1]
        monkeypatch.setenv("KAFKAPY_TEST_PORTS", f"{port - 20}-{port + 20}")
        monkeypatch.setattr(_broker, "_next_in_range", 0)
        drawn = [_broker.free_port() for _ in range(60)]
    assert port not in drawn
    assert all(port - 20 <= p <= port + 20 for p in drawn)
    first_round = sorted(set(drawn))
    assert drawn == (first_round * 3)[:60]          # ascending, then around again
