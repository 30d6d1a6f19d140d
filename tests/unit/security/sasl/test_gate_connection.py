"""The connection's SASL gate on a fake transport: a failed legacy (v0, raw token)
authentication is closed after ``connection.failed.authentication.delay.ms`` like a v1
one (Kafka's delayed close on any authentication failure), reading nothing meanwhile."""
from __future__ import annotations

import asyncio
import struct

from kafkapy.security import gate as G
from kafkapy.security.sasl.plain import PlainServer
from tests.support.fake_connection import fake_connection


def _connection(delay_ms: int):
    return fake_connection({"connection.failed.authentication.delay.ms": str(delay_ms)},
                           listener="SASL_PLAINTEXT")


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
