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

from tests.support.broker_process import BrokerProcess, free_port


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


def test_min_bytes_is_honoured(broker):
    """A fetch below min_bytes waits for max_wait; appends that reach it answer early."""
    from kafka.record.default_records import DefaultRecordBatchBuilder

    from kafkapy.protocol.messages import REQUESTS
    from tests.support.wire import WireClient

    Produce, Fetch = REQUESTS[0], REQUESTS[1]

    def produce(client, size):
        builder = DefaultRecordBatchBuilder(2, 0, False, -1, -1, -1, 1 << 20)
        builder.append(0, int(time.time() * 1000), None, b"v" * size, [])
        client.request(0, 9, transactional_id=None, acks=1, timeout_ms=5000, topic_data=[
            Produce.TopicProduceData(name="minbytes", partition_data=[
                Produce.TopicProduceData.PartitionProduceData(index=0,
                                                              records=bytes(builder.build()))])])

    def fetch(client, min_bytes, max_wait_ms):
        started = time.monotonic()
        response = client.request(1, 12, replica_id=-1, max_wait_ms=max_wait_ms,
                                  min_bytes=min_bytes, max_bytes=1 << 20, isolation_level=0,
                                  session_id=0, session_epoch=-1, topics=[Fetch.FetchTopic(
                                      topic="minbytes", partitions=[Fetch.FetchTopic.FetchPartition(
                                          partition=0, current_leader_epoch=-1, fetch_offset=0,
                                          last_fetched_epoch=-1, log_start_offset=-1,
                                          partition_max_bytes=1 << 20)])],
                                  forgotten_topics_data=[], rack_id="")
        records = response.responses[0].partitions[0].records or b""
        return time.monotonic() - started, len(records)

    producer = WireClient(broker.bootstrap)
    consumer = WireClient(broker.bootstrap)
    producer.request(3, 4, topics=[REQUESTS[3].MetadataRequestTopic(name="minbytes")],
                     allow_auto_topic_creation=True)
    time.sleep(0.2)
    produce(producer, 100)
    elapsed, size = fetch(consumer, 1, 5000)
    assert size > 100 and elapsed < 2.5
    elapsed, size = fetch(consumer, 100_000, 1500)
    assert size > 100 and elapsed >= 1.2, "answered before max_wait although min_bytes unmet"

    def trickle():
        for _ in range(6):
            time.sleep(0.3)
            produce(producer, 1000)

    thread = threading.Thread(target=trickle)
    thread.start()
    elapsed, size = fetch(consumer, 3000, 10_000)
    thread.join()
    assert size >= 3000 and elapsed < 8, (elapsed, size)
