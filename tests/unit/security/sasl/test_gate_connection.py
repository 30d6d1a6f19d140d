"""The connection's SASL gate on a fake transport: a failed legacy (v0, raw token)
authentication is closed after ``connection.failed.authentication.delay.ms`` like a v1
one (Kafka's delayed close on any authentication failure), reading nothing meanwhile."""
from __future__ import annotations

import asyncio
import struct
from types import SimpleNamespace

from kafkapy.config.broker import BrokerConfig
from kafkapy.network.connection import KafkaConnection
from kafkapy.security import gate as G
from kafkapy.security.sasl.plain import PlainServer
from tests.support.services import services


class _Transport:
    def __init__(self) -> None:
        self.closed = False
        self.paused = False
        self.written = b""

    def get_extra_info(self, name, default=None):
        return ("127.0.0.1", 40000) if name == "peername" else default

    def write(self, data) -> None:
        self.written += bytes(data)

    def get_write_buffer_size(self) -> int:
        return 0

    def pause_reading(self) -> None:
        self.paused = True

    def resume_reading(self) -> None:
        self.paused = False

    def is_closing(self) -> bool:
        return self.closed

    def close(self) -> None:
        self.closed = True


def _connection(delay_ms: int):
    config = BrokerConfig.from_properties({
        "connection.failed.authentication.delay.ms": str(delay_ms)})
    server = SimpleNamespace(config=config, authorizer_enabled=False, services=services(),
                             max_request_bytes=1 << 20, max_inflight=5,
                             zero_copy=False, listener="SASL_PLAINTEXT",
                             security_protocol="SASL_PLAINTEXT", now=lambda: 0.0,
                             connection_opened=lambda c: None, connection_closed=lambda c: None,
                             apis={}, unsupported_api_versions=None, request_quota=None)
    conn = KafkaConnection(server)
    transport = _Transport()
    conn.connection_made(transport)
    return conn, transport


async def test_failed_raw_token_closes_after_the_delay():
    conn, transport = _connection(delay_ms=50)
    gate = conn._gate
    gate.server, gate.mechanism, gate.state = PlainServer({"alice": "a"}), "PLAIN", G.AUTHENTICATE_RAW
    token = b"\0alice\0wrong"
    conn.data_received(struct.pack(">i", len(token)) + token + struct.pack(">i", 4) + b"more")
    assert gate.state == G.FAILED
    assert not transport.closed and transport.paused      # held open, reading nothing
    for _ in range(600):
        if transport.closed:
            break
        await asyncio.sleep(0.05)
    assert transport.closed


async def test_no_delay_closes_at_once():
    conn, transport = _connection(delay_ms=0)
    gate = conn._gate
    gate.server, gate.mechanism, gate.state = PlainServer({"alice": "a"}), "PLAIN", G.AUTHENTICATE_RAW
    token = b"\0alice\0wrong"
    conn.data_received(struct.pack(">i", len(token)) + token)
    assert transport.closed


def test_session_host_is_javas_host_address_form():
    """ACL hosts are matched against Java's getHostAddress() text."""
    from kafkapy.api.principal import host_address
    assert host_address("127.0.0.1") == "127.0.0.1"
    assert host_address("::1") == "0:0:0:0:0:0:0:1"
    assert host_address("fe80::a:0:0:1%eth0") == "fe80:0:0:0:a:0:0:1%eth0"
    assert host_address("::ffff:10.1.2.3") == "10.1.2.3"
    conn, _ = _connection(delay_ms=0)
    assert conn.session.client_address == "127.0.0.1"
