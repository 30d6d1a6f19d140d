"""Fetch over real sockets: zero-copy sendfile, the copying fallback, long polling.

The broker's Prometheus endpoint tells which path served the bytes and how
many Fetch requests it answered.
"""
from __future__ import annotations

import re
import threading
import time
import urllib.request

import pytest
from kafka import KafkaConsumer, KafkaProducer, TopicPartition

from tests.broker_process import BrokerProcess, free_port


def _metric(port: int, name: str, labels: str = "") -> float:
    text = urllib.request.urlopen(f"http://127.0.0.1:{port}/metrics", timeout=5).read().decode()
    pattern = re.escape(name) + (re.escape("{" + labels + "}") if labels else "") + r" (\S+)"
    match = re.search("^" + pattern + "$", text, re.M)
    return float(match.group(1)) if match else 0.0


def _start(tmp_path, **overrides):
    port = free_port()
    settings = {"kafkapy.metrics.port": str(port)}
    settings.update(overrides)
    return BrokerProcess(tmp_path / "logs", overrides=settings).start(), port


def _round_trip(bootstrap: str, topic: str, n: int = 2000) -> list[bytes]:
    producer = KafkaProducer(bootstrap_servers=bootstrap, acks="all")
    for i in range(n):
        producer.send(topic, value=b"payload-%05d" % i + b"x" * 200)
    producer.flush()
    producer.close()
    consumer = KafkaConsumer(bootstrap_servers=bootstrap, consumer_timeout_ms=3000,
                             enable_auto_commit=False)
    consumer.assign([TopicPartition(topic, 0)])
    consumer.seek_to_beginning()
    values = [r.value for r in consumer]
    consumer.close()
    return values


@pytest.mark.parametrize("sendfile", [True, False], ids=["sendfile", "copy"])
def test_fetch_path_and_bytes(tmp_path, sendfile):
    broker, metrics_port = _start(tmp_path, **{
        "kafkapy.fetch.sendfile.enable": "true" if sendfile else "false"})
    try:
        values = _round_trip(broker.bootstrap, "zc")
        assert values == [b"payload-%05d" % i + b"x" * 200 for i in range(2000)]
        sent = _metric(metrics_port, "kafkapy_fetch_sendfile_bytes_total")
        copied = _metric(metrics_port, "kafkapy_fetch_copied_bytes_total")
        if sendfile:
            assert sent > 2000 * 200 and copied == 0
        else:
            assert copied > 2000 * 200 and sent == 0
    finally:
        broker.stop()


def test_long_poll_answers_on_append_and_idle_consumer_does_not_spin(tmp_path):
    broker, metrics_port = _start(tmp_path)
    try:
        producer = KafkaProducer(bootstrap_servers=broker.bootstrap, acks="all")
        producer.send("lp", b"first").get(timeout=10)
        consumer = KafkaConsumer(bootstrap_servers=broker.bootstrap, fetch_max_wait_ms=5000,
                                 enable_auto_commit=False)
        consumer.assign([TopicPartition("lp", 0)])
        consumer.seek_to_beginning()
        assert [r.value for r in consumer.poll(10000).get(TopicPartition("lp", 0), [])] == [b"first"]

        before = _metric(metrics_port, "kafkapy_requests_total", 'api="Fetch"')
        assert consumer.poll(3000) == {}
        idle_fetches = _metric(metrics_port, "kafkapy_requests_total", 'api="Fetch"') - before
        assert idle_fetches <= 4, f"an idle consumer sent {idle_fetches} fetches in 3 s"

        sent_at = {}

        def produce_later():
            time.sleep(1.0)
            sent_at["t"] = time.monotonic()
            producer.send("lp", b"second").get(timeout=10)

        threading.Thread(target=produce_later).start()
        records = consumer.poll(8000).get(TopicPartition("lp", 0), [])
        received = time.monotonic()
        assert [r.value for r in records] == [b"second"]
        # Loose: answered because of the append, long before the 5 s wait ends.
        assert received - sent_at["t"] < 2.5
        consumer.close()
        producer.close()
    finally:
        broker.stop()
