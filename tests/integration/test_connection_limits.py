"""Connection quotas and the idle timeout on a real broker process, over real sockets.

Kafka 3.9's ConnectionQuotas (``kafkapy.network.connection_quotas``):
- ``max.connections.per.ip`` / ``max.connections.per.ip.overrides``: one connection too many
  from an address is closed right after accept ("Rejected connection from ..."), the others
  are served, and a slot freed is usable again;
- ``max.connections``: the listener stops accepting at the limit; a new client's connect
  succeeds (kernel backlog) but its request is answered only once another connection closes;
- the limits change live through ``kafkapy-configs --entity-type brokers --entity-default``
  (lowering ``max.connections`` below the current count closes the least recently used);
- ``listener.name.<l>.max.connections`` bounds one listener; the inter-broker listener (of
  several) is not held by ``max.connections`` and evicts the others' least recently used;
- a connection counts from accept, its TLS handshake included;
- ``max.connection.creation.rate``: after Kafka's burst, new connections are held;
- ``connections.max.idle.ms`` closes a connection with nothing read for that long, and only
  such a connection.

Every client here connects to 127.0.0.1; the per-address tests pick their source address
(127.0.0.2 ... 127.0.0.9, all loopback on Linux), so the start-up probe and the CLI (from
127.0.0.1) never share an address with them.
"""
from __future__ import annotations

import socket
import ssl
import struct
import subprocess
import sys
import time
from pathlib import Path

import pytest

from kafkapy.testing._broker import free_port
from tests.support.broker_process import BrokerProcess
from tests.support.certs import broker_ssl_overrides
from tests.support.certs import certs  # noqa: F401 (fixture)
from tests.support.cluster import wait_for

BIN = Path(sys.executable).parent
DEFAULT = ("--entity-type", "brokers", "--entity-default")
_API_VERSIONS_V0 = struct.pack(">hhih", 18, 0, 7, 1) + b"t"


def _broker(tmp_path, port: int | None, **overrides) -> BrokerProcess:
    settings = {"kafkapy.metadata.store": "embedded", "offsets.topic.replication.factor": "1"}
    settings.update(overrides)
    return BrokerProcess(tmp_path / "logs", port=port, overrides=settings).start()


@pytest.fixture
def make_broker(tmp_path):
    started = []

    def make(port: int | None = None, **overrides) -> BrokerProcess:
        started.append(_broker(tmp_path, port, **overrides))
        return started[-1]
    yield make
    for broker in started:
        broker.kill()


def _wait_listening(port: int, timeout: float = 30.0) -> None:
    """Until a socket listens on ``port``, read from /proc/net/tcp: a probe connection
    would count against the listener's max.connections."""
    wanted = f":{port:04X}"

    def listening() -> bool:
        with open("/proc/net/tcp") as table:
            next(table)
            return any(line.split()[1].endswith(wanted) and line.split()[3] == "0A"
                       for line in table)
    wait_for(listening, timeout, f"a listener on port {port}", interval=0.05)


class Client:
    """One raw connection from ``source``; ``ask`` sends ApiVersions v0."""

    def __init__(self, broker: BrokerProcess, source: str = "127.0.0.1",
                 port: int | None = None) -> None:
        self.sock = socket.create_connection(("127.0.0.1", port or broker.port), timeout=10,
                                             source_address=(source, 0))

    def send(self) -> None:
        self.sock.sendall(struct.pack(">i", len(_API_VERSIONS_V0)) + _API_VERSIONS_V0)

    def answered(self, timeout: float = 10.0) -> bool:
        """The answer to the request sent arrived within ``timeout`` (False: closed or not yet)."""
        self.sock.settimeout(timeout)
        try:
            head = self._read(4)
            body = self._read(struct.unpack(">i", head)[0])
        except (ConnectionError, socket.timeout, OSError):
            return False
        return struct.unpack(">i", body[:4])[0] == 7

    def ask(self, timeout: float = 10.0) -> bool:
        try:
            self.send()
        except OSError:
            return False
        return self.answered(timeout)

    def closed_by_broker(self, timeout: float = 10.0) -> bool:
        self.sock.settimeout(timeout)
        try:
            return self.sock.recv(1) == b""
        except (ConnectionResetError, BrokenPipeError):
            return True
        except socket.timeout:
            return False

    def _read(self, n: int) -> bytes:
        data = b""
        while len(data) < n:
            chunk = self.sock.recv(n - len(data))
            if not chunk:
                raise ConnectionError("closed")
            data += chunk
        return data

    def close(self) -> None:
        self.sock.close()


def _rejected(broker: BrokerProcess, source: str, attempts: int = 75) -> bool:
    """A new connection from ``source`` is closed by the broker (tried until it is, bounded:
    dynamic changes reach the broker through a change notification)."""
    for _ in range(attempts):
        client = Client(broker, source)
        served = client.ask(timeout=5)
        client.close()
        if not served:
            return True
        time.sleep(0.2)
    return False


def _served(broker: BrokerProcess, source: str, attempts: int = 75,
            pause: float = 0.2) -> Client:
    """A connection from ``source`` that gets its answer, retried while the broker
    still refuses (a slot just freed, a dynamic change not applied yet)."""
    for _ in range(attempts):
        client = Client(broker, source)
        if client.ask(timeout=5):
            return client
        client.close()
        time.sleep(pause)
    pytest.fail(f"no connection from {source} was served in {attempts} attempts")


def _configs(broker: BrokerProcess, *args: str) -> None:
    exe = BIN / "kafkapy-configs"
    assert exe.is_file(), f"{exe} is missing: install the console scripts (pip install -e .)"
    result = subprocess.run([str(exe), "--bootstrap-server", broker.bootstrap, *args],
                            capture_output=True, text=True, timeout=120)
    assert result.returncode == 0, result.stdout + result.stderr


def test_per_ip_limit_closes_the_extra_connection_and_serves_the_others(make_broker):
    broker = make_broker(**{"max.connections.per.ip": "2"})
    first, second = Client(broker, "127.0.0.2"), Client(broker, "127.0.0.2")
    assert first.ask() and second.ask()
    third = Client(broker, "127.0.0.2")
    assert third.closed_by_broker()
    third.close()
    assert first.ask() and second.ask()
    # another address has its own count
    others = [Client(broker, "127.0.0.3") for _ in range(2)]
    assert all(c.ask() for c in others)
    assert ("Rejected connection from 127.0.0.2, address already has the configured maximum "
            "of 2 connections.") in broker.output()
    # a slot given back is usable again
    first.close()
    again = _served(broker, "127.0.0.2", attempts=50, pause=0.1)
    for c in [second, again, *others]:
        c.close()


def test_overrides_per_address(make_broker):
    broker = make_broker(**{"max.connections.per.ip": "3",
                            "max.connections.per.ip.overrides": "127.0.0.4:1,localhost:0"})
    one = Client(broker, "127.0.0.4")
    assert one.ask()
    assert _rejected(broker, "127.0.0.4", attempts=1)
    # the default (3) for an address without an override
    three = [Client(broker, "127.0.0.5") for _ in range(3)]
    assert all(c.ask() for c in three)
    assert _rejected(broker, "127.0.0.5", attempts=1)
    assert one.ask() and all(c.ask() for c in three)
    assert _rejected(broker, "127.0.0.1", attempts=1)     # localhost resolved: 127.0.0.1 -> 0
    assert "address already has the configured maximum of 1 connections." in broker.output()
    assert ("Rejected connection from 127.0.0.1, address already has the configured maximum "
            "of 0 connections.") in broker.output()
    for c in [one, *three]:
        c.close()


def test_broker_wide_limit_makes_a_new_client_wait_until_another_disconnects(make_broker):
    broker = make_broker(**{"max.connections": "3"})
    held = []
    for _ in range(3):
        held.append(Client(broker, "127.0.0.6"))
        assert held[-1].ask()
    waiting = Client(broker, "127.0.0.6")     # the connect itself succeeds (backlog)
    waiting.send()
    assert not waiting.answered(timeout=1.5)
    assert all(c.ask() for c in held)          # the others are served meanwhile
    held.pop(0).close()
    assert waiting.answered(timeout=10)
    assert waiting.ask() and all(c.ask() for c in held)
    for c in [waiting, *held]:
        c.close()


def test_inter_broker_listener_is_protected_and_listener_limits_hold(make_broker):
    """Two listeners: the inter-broker one (INTERNAL) is not held by max.connections; its
    connections over the limit close the least recently used of the other listener, whose
    waiting client stays waiting; listener.name.internal.max.connections bounds INTERNAL."""
    internal, external = free_port(), free_port()
    broker = make_broker(port=internal, **{
        "listeners": f"INTERNAL://127.0.0.1:{internal},EXTERNAL://127.0.0.1:{external}",
        "advertised.listeners": f"INTERNAL://127.0.0.1:{internal},EXTERNAL://127.0.0.1:{external}",
        "listener.security.protocol.map": "INTERNAL:PLAINTEXT,EXTERNAL:PLAINTEXT",
        "inter.broker.listener.name": "INTERNAL",
        "max.connections": "2",
        "listener.name.internal.max.connections": "1"})
    _wait_listening(external)     # the broker was waited for on its first listener only
    older, newer = Client(broker, port=external), Client(broker, port=external)
    assert older.ask() and newer.ask()
    waiting = Client(broker, port=external)
    waiting.send()
    assert not waiting.answered(timeout=1.0)
    inter_broker = Client(broker, port=internal)      # total 3 > 2: allowed on INTERNAL
    assert inter_broker.ask()
    assert older.closed_by_broker()                   # the least recently used EXTERNAL one
    assert newer.ask()
    assert not waiting.answered(timeout=1.0)          # total is back at 2: still waiting
    second_internal = Client(broker, port=internal)   # INTERNAL's own limit is 1
    second_internal.send()
    assert not second_internal.answered(timeout=1.0)
    inter_broker.close()
    assert second_internal.answered()
    newer.close()
    assert waiting.answered()
    for c in (older, waiting, second_internal):
        c.close()


def test_creation_rate_holds_new_connections(make_broker):
    """max.connection.creation.rate=1 over 11 one-second windows: a fresh broker takes a
    burst of about ten, then each new connection waits (up to a second) to be accepted."""
    broker = make_broker(**{"max.connection.creation.rate": "1"})
    burst = []
    for _ in range(14):
        burst.append(Client(broker, "127.0.0.9"))
        burst[-1].send()
    # the burst's first ten are taken at once; the rest wait for their throttle
    assert burst[0].answered()
    assert not burst[-1].answered(timeout=0.3)
    assert all(c.answered(timeout=15) for c in burst[1:])
    for c in burst:
        c.close()


def test_a_connection_still_in_its_tls_handshake_counts(make_broker, certs):  # noqa: F811
    """listener.name.tls.max.connections=1: a TCP connection that never starts its TLS
    handshake holds the slot; a TLS client's handshake waits until it is closed."""
    plain, secure = free_port(), free_port()
    listeners = f"PLAINTEXT://127.0.0.1:{plain},TLS://127.0.0.1:{secure}"
    broker = make_broker(port=plain, **{
        "listeners": listeners, "advertised.listeners": listeners,
        "listener.security.protocol.map": "PLAINTEXT:PLAINTEXT,TLS:SSL",
        "inter.broker.listener.name": "PLAINTEXT",
        **broker_ssl_overrides(certs, "PEM", prefix="listener.name.tls."),
        "listener.name.tls.max.connections": "1"})
    silent = Client(broker, port=secure)              # accepted, handshake not begun
    context = ssl.create_default_context(cafile=str(certs.ca))
    raw = socket.create_connection(("127.0.0.1", secure), timeout=10)
    tls = context.wrap_socket(raw, server_hostname="localhost", do_handshake_on_connect=False)
    tls.settimeout(1.0)
    with pytest.raises((socket.timeout, ssl.SSLError)):
        tls.do_handshake()                            # not accepted: no ServerHello
    silent.close()
    tls.settimeout(10)
    tls.do_handshake()
    tls.sendall(struct.pack(">i", len(_API_VERSIONS_V0)) + _API_VERSIONS_V0)
    answer = b""
    while len(answer) < 8:
        chunk = tls.recv(8 - len(answer))
        assert chunk, "closed before the ApiVersions answer"
        answer += chunk
    assert struct.unpack(">i", answer[4:8])[0] == 7
    tls.close()


def test_dynamic_changes_apply_live(make_broker):
    broker = make_broker()
    clients = [Client(broker, "127.0.0.7") for _ in range(3)]
    assert all(c.ask() for c in clients)
    _configs(broker, *DEFAULT, "--alter", "--add-config", "max.connections.per.ip=3")
    assert _rejected(broker, "127.0.0.7")
    assert all(c.ask() for c in clients)
    _configs(broker, *DEFAULT, "--alter", "--add-config",
             "max.connections.per.ip.overrides=127.0.0.7:5")
    extra = _served(broker, "127.0.0.7")    # the override lifts the default for that address
    clients.append(extra)
    _configs(broker, *DEFAULT, "--alter", "--delete-config",
             "max.connections.per.ip,max.connections.per.ip.overrides")

    # max.connections lowered below the current count: the least recently used go
    for c in clients[1:]:
        assert c.ask()                          # clients[0] is now the least recently used
    _configs(broker, *DEFAULT, "--alter", "--add-config", "max.connections=3")
    assert clients[0].closed_by_broker(timeout=15)
    assert clients[-1].ask()
    for c in clients:
        c.close()


def test_idle_connections_are_closed_after_connections_max_idle_ms(make_broker):
    broker = make_broker(**{"connections.max.idle.ms": "3000"})
    idle, busy = Client(broker, "127.0.0.8"), Client(broker, "127.0.0.8")
    assert idle.ask() and busy.ask()
    deadline = time.monotonic() + 7.0
    while time.monotonic() < deadline:       # busy sends a request every 0.3 s meanwhile
        assert busy.ask()
        time.sleep(0.3)
    assert idle.closed_by_broker(timeout=10)
    assert busy.ask()
    busy.close()
    idle.close()
