"""Listeners: every one in ``listeners`` is opened and registered, each client is answered
with the addresses of the listener it came through, and a secured listener kafkapy cannot
set up (SSL without a key store; SASL with only the default mechanism, GSSAPI, which kafkapy
lacks) stops start-up instead of serving plaintext unauthenticated."""
from __future__ import annotations

import json
import subprocess
import sys

import pytest
from kafka import KafkaConsumer, KafkaProducer
from kazoo.client import KazooClient

from tests.support.broker_process import ROOT, SERVER_PROPERTIES, BrokerProcess, free_port
from tests.support.wire import WireClient
from tests.support.zookeeper_server import zk_connect, zookeeper_server  # noqa: F401  (fixtures)


@pytest.fixture
def two_listeners(tmp_path, zk_connect):  # noqa: F811
    internal, external = free_port(), free_port()
    b = BrokerProcess(tmp_path / "logs", port=internal, overrides={
        "zookeeper.connect": zk_connect,
        "listeners": f"INTERNAL://127.0.0.1:{internal},EXTERNAL://127.0.0.1:{external}",
        "advertised.listeners": f"INTERNAL://127.0.0.1:{internal},EXTERNAL://localhost:{external}",
        "listener.security.protocol.map": "INTERNAL:PLAINTEXT,EXTERNAL:PLAINTEXT",
        "inter.broker.listener.name": "INTERNAL",
    }).start()
    yield b, internal, external
    b.stop()


def _metadata_brokers(port: int) -> list[tuple[str, int]]:
    client = WireClient(f"127.0.0.1:{port}")
    try:
        response = client.request(3, 9, topics=[], allow_auto_topic_creation=False,
                                  include_cluster_authorized_operations=False,
                                  include_topic_authorized_operations=False)
        return [(b.host, b.port) for b in response.brokers]
    finally:
        client.close()


def test_every_listener_is_opened_registered_and_answers_with_its_own_address(two_listeners,
                                                                              zk_connect):  # noqa: F811
    broker, internal, external = two_listeners
    assert _metadata_brokers(internal) == [("127.0.0.1", internal)]
    assert _metadata_brokers(external) == [("localhost", external)]
    zk = KazooClient(hosts=zk_connect)
    zk.start()
    try:
        registration = json.loads(zk.get("/brokers/ids/0")[0])
    finally:
        zk.stop()
    assert registration["endpoints"] == [f"INTERNAL://127.0.0.1:{internal}",
                                         f"EXTERNAL://localhost:{external}"]
    assert registration["listener_security_protocol_map"] == {"INTERNAL": "PLAINTEXT",
                                                              "EXTERNAL": "PLAINTEXT"}
    # A client bootstrapped on the second listener produces and consumes through it.
    bootstrap = f"localhost:{external}"
    producer = KafkaProducer(bootstrap_servers=bootstrap)
    producer.send("through-external", b"hello").get(timeout=30)
    producer.close()
    consumer = KafkaConsumer("through-external", bootstrap_servers=bootstrap,
                             auto_offset_reset="earliest", consumer_timeout_ms=10000)
    assert [r.value for r in consumer] == [b"hello"]
    consumer.close()


@pytest.mark.parametrize("protocol", ["SSL", "SASL_PLAINTEXT", "SASL_SSL"])
def test_a_listener_kafkapy_cannot_secure_stops_start_up(tmp_path, protocol):
    plain, secure = free_port(), free_port()
    cmd = [sys.executable, "-m", "kafkapy", str(SERVER_PROPERTIES),
           "--override", f"log.dirs={tmp_path / 'logs'}",
           "--override", f"listeners=PLAINTEXT://127.0.0.1:{plain},{protocol}://127.0.0.1:{secure}"]
    proc = subprocess.run(cmd, cwd=ROOT, capture_output=True, text=True, timeout=60)
    output = proc.stdout + proc.stderr
    assert proc.returncode != 0, output
    assert "Traceback" not in output, output
    lines = [line for line in output.splitlines() if protocol in line]
    # the listener's TLS key store / SASL mechanisms are missing, said in one line
    assert len(lines) == 1 and "start-up failed" in lines[0], output
    assert ("key store" in lines[0]) if protocol == "SSL" else ("GSSAPI" in lines[0]), output
