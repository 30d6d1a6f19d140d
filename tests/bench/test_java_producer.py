"""bench/java_producer.py: the summary line of Kafka's kafka-producer-perf-test read into
numbers, the command line built from the rf3 producer settings, and real runs of the tool
(Kafka 3.9's) against a real kafkapy broker: one where every record is acknowledged, one
where the records are refused.  No timing is asserted."""
from __future__ import annotations

import uuid

import pytest
from kafka import KafkaConsumer, TopicPartition

from tests.support.bench_scripts import load_bench_script

jp = load_bench_script("java_producer.py", "bench_java_producer")
wl = load_bench_script("workloads.py", "bench_workloads")

WINDOW = ("148341 records sent, 29668.2 records/sec (28.97 MB/sec), 850.3 ms avg latency, "
          "1386.0 ms max latency.")
SUMMARY = ("300000 records sent, 49504.950495 records/sec (48.34 MB/sec), 539.23 ms avg "
           "latency, 846.00 ms max latency, 558 ms 50th, 741 ms 95th, 795 ms 99th, "
           "824 ms 99.9th.")


def test_the_summary_line_is_read_into_numbers_and_window_lines_are_not():
    got = jp.parse_summary("\n".join([WINDOW, SUMMARY, ""]))
    assert got == {"records_acked": 300000, "records_per_s": 49504.950495, "mb_per_s": 48.34,
                   "latency_ms": {"mean": 539.23, "max": 846.0, "p50": 558, "p95": 741,
                                  "p99": 795, "p99_9": 824}}
    assert jp.parse_summary(WINDOW) is None
    assert jp.parse_summary("") is None
    nothing = jp.parse_summary("0 records sent, 0.000000 records/sec (0.00 MB/sec), NaN ms avg "
                               "latency, 0.00 ms max latency, 0 ms 50th, 0 ms 95th, 0 ms 99th, "
                               "0 ms 99.9th.")
    assert nothing["records_acked"] == 0 and nothing["records_per_s"] == 0.0


def test_the_command_carries_the_settings_both_clients_know_and_no_librdkafka_one():
    conf = {**wl.PRODUCER_DEFAULTS, "enable.idempotence": True}
    cmd = jp.command("127.0.0.1:9092", "t", 300000, 1024, conf)
    props = cmd[cmd.index("--producer-props") + 1:]
    assert cmd[cmd.index("--num-records") + 1] == "300000"
    assert cmd[cmd.index("--record-size") + 1] == "1024"
    assert cmd[cmd.index("--throughput") + 1] == "-1"
    assert props == ["bootstrap.servers=127.0.0.1:9092", "client.id=bench-java-producer",
                     "acks=all", "enable.idempotence=true", "linger.ms=5",
                     "batch.size=65536", "compression.type=none"]
    assert str(jp.SCRIPT) in cmd


def _end_offsets(bootstrap: str, topic: str) -> int:
    consumer = KafkaConsumer(bootstrap_servers=bootstrap)
    try:
        parts = [TopicPartition(topic, p) for p in consumer.partitions_for_topic(topic) or ()]
        return sum(consumer.end_offsets(parts).values())
    finally:
        consumer.close()


@pytest.mark.java
def test_a_run_against_a_broker_acknowledges_every_record_and_reports_the_jvm_cpu(broker):
    assert jp.available(), f"{jp.SCRIPT} is missing (Kafka 3.9 at ../shared or $KAFKA_HOME)"
    topic = f"java-producer-{uuid.uuid4().hex[:8]}"
    wl.create_topic(broker.bootstrap, topic, 3)
    conf = {**wl.PRODUCER_DEFAULTS, "enable.idempotence": True}
    got = jp.produce(broker.bootstrap, topic, 2000, 100, conf, timeout=120)
    assert got["ok"], got
    assert got["records_acked"] == 2000 and got["returncode"] == 0 and not got["errors"]
    assert got["records_per_s"] > 0 and got["seconds"] > 0
    assert got["latency_ms"]["p50"] <= got["latency_ms"]["p99"] <= got["latency_ms"]["max"]
    assert got["driver_process_cpu_s"] > 0      # the JVM's own CPU, reaped by wait4
    assert _end_offsets(broker.bootstrap, topic) == 2000


@pytest.mark.java
def test_a_run_whose_records_are_refused_is_not_ok(broker):
    topic = f"java-producer-big-{uuid.uuid4().hex[:8]}"
    wl.create_topic(broker.bootstrap, topic, 1)
    # Records above the producer's max.request.size (1 MiB) fail in the client, each with
    # a RecordTooLargeException the tool prints.
    got = jp.produce(broker.bootstrap, topic, 3, 2 * 1024 * 1024, {"acks": "all"}, timeout=120)
    assert not got["ok"], got
    assert any("RecordTooLargeException" in line for line in got["errors"]), got
    assert got["records_acked"] == 0       # the tool's summary of nothing sent
