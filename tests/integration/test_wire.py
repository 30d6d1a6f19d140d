"""Wire-level behaviour over a real socket: ApiVersions, pipelining, and bad input.

Each bad input gets Kafka's error or a closed connection with a log line, and
another connection opened beforehand keeps working throughout.
"""
from __future__ import annotations

import os
import struct

import pytest

from kafkapy.handlers import build_registry
from tests.support.wire import WireClient


@pytest.fixture
def wire(broker):
    client = WireClient(broker.bootstrap)
    yield client
    client.close()


@pytest.fixture(scope="module")
def bystander(broker):
    """A connection that must keep working while others misbehave."""
    client = WireClient(broker.bootstrap)
    yield client
    client.close()


def _still_serves(client):
    response = client.request(18, 0)
    assert response.error_code == 0


def test_api_versions_lists_exactly_the_registry(wire):
    expected = {k: (s.min_version, s.max_version) for k, s in build_registry().items()}
    for version in (0, 3, 4):
        fields = {}
        if version >= 3:
            fields = dict(client_software_name="wire-test", client_software_version="1.0")
        response = wire.request(18, version, **fields)
        assert response.error_code == 0
        got = {a.api_key: (a.min_version, a.max_version) for a in response.api_keys}
        assert got == expected


def test_api_versions_too_new_gets_error_35_with_v0_body(wire):
    correlation, data = wire.encode(18, 4, client_software_name="x", client_software_version="1")
    data = bytearray(data)
    struct.pack_into(">h", data, 6, 99)  # api_version in the header
    wire.send_raw(bytes(data))
    from kafkapy.protocol.messages import RESPONSES
    frame = wire.recv_frame()
    response = RESPONSES[18].decode(frame, version=0, header=True)
    assert response.header.correlation_id == correlation
    assert response.error_code == 35
    assert {a.api_key for a in response.api_keys} == set(build_registry())


def test_bad_software_name_gets_invalid_request(wire):
    # Kafka answers at the request's version; kafka-python's decoder would read
    # any error as v0, so read the header and error code straight off the frame.
    correlation, data = wire.encode(18, 3, client_software_name="-bad name",
                                    client_software_version="1")
    wire.send_raw(data)
    frame = wire.recv_frame()
    assert struct.unpack_from(">ih", frame) == (correlation, 42)


def test_pipelined_requests_answer_in_order(wire):
    sent = []
    for i in range(50):
        api = 18 if i % 2 else 3
        fields = {} if api == 18 else {"topics": []}
        correlation, data = wire.encode(api, 0 if api == 18 else 1, **fields)
        sent.append((api, correlation))
        wire.send_raw(data)
    for api, correlation in sent:
        response = wire.read_response(api, 0 if api == 18 else 1, correlation)
        assert response.header.correlation_id == correlation


def test_unknown_api_key_closes_only_that_connection(wire, bystander):
    wire.send_raw(struct.pack(">ihhih", 10, 999, 0, 1, -1))
    assert wire.is_closed()
    _still_serves(bystander)


def test_unsupported_version_closes_connection(wire, bystander):
    wire.send_raw(struct.pack(">ihhih", 10, 3, 99, 1, -1))  # Metadata v99
    assert wire.is_closed()
    _still_serves(bystander)


def test_oversized_frame_closes_connection(wire, bystander):
    wire.send_raw(struct.pack(">i", 200 * 1024 * 1024))
    assert wire.is_closed()
    _still_serves(bystander)


def test_negative_frame_size_closes_connection(wire, bystander):
    wire.send_raw(struct.pack(">i", -5))
    assert wire.is_closed()
    _still_serves(bystander)


def test_truncated_frame_then_close_harms_nobody(broker, bystander):
    client = WireClient(broker.bootstrap)
    _, data = client.encode(18, 0)
    client.send_raw(data[:-3])
    client.close()
    _still_serves(bystander)


def test_frame_too_short_for_a_header(wire, bystander):
    wire.send_raw(struct.pack(">i", 3) + b"abc")
    assert wire.is_closed()
    _still_serves(bystander)


def test_garbage_body_closes_connection(wire, bystander):
    # Metadata v4 claiming a million topics but carrying two bytes.
    body = struct.pack(">hhih", 3, 4, 7, 4) + b"test" + struct.pack(">i", 1_000_000) + b"xx"
    wire.send_raw(struct.pack(">i", len(body)) + body)
    assert wire.is_closed()
    _still_serves(bystander)


def test_random_bytes_never_kill_the_broker(broker, bystander):
    for seed in range(20):
        client = WireClient(broker.bootstrap)
        blob = os.urandom(4 + seed * 37)
        client.send_raw(struct.pack(">i", len(blob)) + blob)
        client.close()
    _still_serves(bystander)


def test_many_pipelined_requests_beyond_the_inflight_bound(wire):
    """500 requests sent at once (bound is 100): reading pauses and resumes, all answered in order."""
    sent = []
    blob = bytearray()
    for _ in range(500):
        correlation, data = wire.encode(18, 0)
        sent.append(correlation)
        blob += data
    wire.send_raw(bytes(blob))
    for correlation in sent:
        assert wire.read_response(18, 0, correlation).header.correlation_id == correlation


def test_idle_connections_are_closed(tmp_path):
    from tests.support.broker_process import BrokerProcess
    b = BrokerProcess(tmp_path / "logs", overrides={"connections.max.idle.ms": "1000"}).start()
    try:
        idle = WireClient(b.bootstrap)
        _still_serves(idle)
        assert idle.is_closed(timeout=10), "an idle connection outlived connections.max.idle.ms"
    finally:
        b.stop()
