"""``kafkapy-producer-perf-test`` and ``kafkapy-consumer-perf-test`` against a real broker.

Each test runs the console scripts as subprocesses (and, marked ``java``, Kafka 3.9's
``kafka-producer-perf-test.sh`` / ``kafka-consumer-perf-test.sh`` against the same kafkapy
broker) and checks the output lines with regexes on the numbers (timings differ from run to
run; the layout must not) and the counts through the broker: end offsets and a group's
committed offsets. Loads are small (20,000 records of 100 bytes); no assertion depends on
timing; the subprocess timeout only guards against a hang.
"""
from __future__ import annotations

import os
import re
import subprocess
import sys
import uuid
from pathlib import Path

import pytest
from kafka import KafkaAdminClient, KafkaConsumer, TopicPartition

from tests.support.cli_tools import tool

ROOT = Path(__file__).resolve().parents[2]
KAFKA_HOME = Path(os.environ.get("KAFKA_HOME", ROOT.parent / "shared" / "kafka_2.13-3.9.0"))
SUFFIX = uuid.uuid4().hex[:8]
RECORDS = 20000
SIZE = 100

NUMBER = r"-?\d+\.\d+"
WINDOW = re.compile(rf"\d+ records sent, {NUMBER} records/sec \({NUMBER} MB/sec\), "
                    rf"{NUMBER} ms avg latency, {NUMBER} ms max latency\.")
FINAL = re.compile(r"(\d+) records sent, \d+\.\d{6} records/sec \(\d+\.\d\d MB/sec\), "
                   r"\d+\.\d\d ms avg latency, \d+\.\d\d ms max latency, \d+ ms 50th, "
                   r"\d+ ms 95th, \d+ ms 99th, \d+ ms 99\.9th\.")
HEADER = ("start.time, end.time, data.consumed.in.MB, MB.sec, data.consumed.in.nMsg, nMsg.sec, "
          "rebalance.time.ms, fetch.time.ms, fetch.MB.sec, fetch.nMsg.sec")
DETAILED_HEADER = ("time, threadId, data.consumed.in.MB, MB.sec, data.consumed.in.nMsg, "
                   "nMsg.sec, rebalance.time.ms, fetch.time.ms, fetch.MB.sec, fetch.nMsg.sec")
DATE = r"\d{4}-\d\d-\d\d \d\d:\d\d:\d\d:\d{3}"
F4 = r"(?:\d+\.\d{4}|Infinity|NaN)"
SUMMARY = re.compile(rf"({DATE}), ({DATE}), (\d+\.\d{{4}}), {F4}, (\d+), {F4}, (\d+), (-?\d+), "
                     rf"{F4}, {F4}")
DETAILED = re.compile(rf"{DATE}, 0, \d+\.\d{{4}}, {F4}, (\d+), {F4}, \d+, -?\d+, {F4}, {F4}")


def unique(name: str) -> str:
    return f"perf-{name}-{SUFFIX}"


def kafka_tool(name: str, *args: str) -> subprocess.CompletedProcess:
    script = KAFKA_HOME / "bin" / f"kafka-{name}.sh"
    assert script.is_file(), f"{script} is missing (Kafka 3.9 at ../shared or $KAFKA_HOME)"
    return subprocess.run([str(script), *args], capture_output=True, text=True, timeout=180)


@pytest.fixture(scope="module")
def admin(broker):
    client = KafkaAdminClient(bootstrap_servers=broker.bootstrap)
    yield client
    client.close()


def create_topic(broker, name: str, partitions: int = 1) -> str:
    result = tool("topics", "--bootstrap-server", broker.bootstrap, "--create", "--topic", name,
                  "--partitions", str(partitions))
    assert result.returncode == 0, result.stdout + result.stderr
    return name


def end_offsets(broker, topic: str) -> dict[int, int]:
    consumer = KafkaConsumer(bootstrap_servers=broker.bootstrap)
    try:
        partitions = [TopicPartition(topic, p) for p in consumer.partitions_for_topic(topic)]
        return {tp.partition: offset for tp, offset in consumer.end_offsets(partitions).items()}
    finally:
        consumer.close()


def produce(broker, topic: str, *extra: str, records: int = RECORDS,
            runner=tool, name: str = "producer-perf-test") -> list[str]:
    """The perf producer's output lines after checking its exit code and line formats."""
    result = runner(name, "--topic", topic, "--num-records", str(records),
                    "--throughput", "-1", "--producer-props",
                    f"bootstrap.servers={broker.bootstrap}", *extra)
    assert result.returncode == 0, result.stdout + result.stderr
    lines = result.stdout.splitlines()
    windows = [line for line in lines[:-1] if not line.startswith(("Reading payloads from: ",
                                                                   "Number of messages read: "))]
    assert all(WINDOW.fullmatch(line) for line in windows), lines
    final = FINAL.fullmatch(lines[-1])
    assert final, lines[-1]
    assert int(final.group(1)) == records
    return lines


def consume(broker, topic: str, group: str, *extra: str, messages: int = RECORDS,
            runner=tool, name: str = "consumer-perf-test") -> subprocess.CompletedProcess:
    result = runner(name, "--bootstrap-server", broker.bootstrap, "--topic", topic,
                    "--messages", str(messages), "--group", group, *extra)
    assert result.returncode == 0, result.stdout + result.stderr
    return result


def committed(admin, group: str) -> dict[int, int]:
    offsets = admin.list_group_offsets(group)[group]
    return {tp.partition: meta.offset for tp, meta in offsets.items()}


# -- kafkapy-producer-perf-test --------------------------------------------------------------

def test_producer_sends_exactly_the_requested_records(broker):
    topic = create_topic(broker, unique("produce"), partitions=2)
    produce(broker, topic, "--record-size", str(SIZE))
    assert sum(end_offsets(broker, topic).values()) == RECORDS


def test_producer_record_size_payloads_are_letters_of_that_size(broker):
    topic = create_topic(broker, unique("letters"))
    produce(broker, topic, "--record-size", "37", records=50)
    consumer = KafkaConsumer(topic, bootstrap_servers=broker.bootstrap,
                             auto_offset_reset="earliest", consumer_timeout_ms=5000)
    values = [record.value for _, record in zip(range(50), consumer)]
    consumer.close()
    assert len(values) == 50
    assert all(re.fullmatch(rb"[A-Z]{37}", value) for value in values)


def test_producer_payload_file_and_delimiter(broker, tmp_path):
    topic = create_topic(broker, unique("payload-file"))
    payloads = tmp_path / "payloads.txt"
    payloads.write_text("alpha;beta;gamma")
    lines = produce(broker, topic, "--payload-file", str(payloads), "--payload-delimiter", ";",
                    records=30)
    assert lines[:2] == [f"Reading payloads from: {payloads}", "Number of messages read: 3"]
    consumer = KafkaConsumer(topic, bootstrap_servers=broker.bootstrap,
                             auto_offset_reset="earliest", consumer_timeout_ms=5000)
    values = {record.value for _, record in zip(range(30), consumer)}
    consumer.close()
    assert values <= {b"alpha", b"beta", b"gamma"} and values


def test_producer_monotonic_payloads(broker):
    topic = create_topic(broker, unique("monotonic"))
    produce(broker, topic, "--payload-monotonic", records=20)
    consumer = KafkaConsumer(topic, bootstrap_servers=broker.bootstrap,
                             auto_offset_reset="earliest", consumer_timeout_ms=5000)
    values = [record.value for _, record in zip(range(20), consumer)]
    consumer.close()
    assert values == [str(i).encode() for i in range(20)]


def test_producer_transactions_commit_every_record(broker):
    topic = create_topic(broker, unique("transactions"))
    records = 5000
    produce(broker, topic, "--record-size", str(SIZE), "--transaction-duration-ms", "100",
            "--transactional-id", unique("txn"), records=records)
    consumer = KafkaConsumer(topic, bootstrap_servers=broker.bootstrap,
                             auto_offset_reset="earliest", isolation_level="read_committed",
                             consumer_timeout_ms=5000)
    seen = sum(1 for _, _record in zip(range(records + 1), consumer))
    consumer.close()
    assert seen == records
    # Each transaction leaves a commit marker after its records.
    assert end_offsets(broker, topic)[0] > records


def test_producer_print_metrics_prints_kafkas_table(broker):
    topic = create_topic(broker, unique("metrics"))
    result = tool("producer-perf-test", "--topic", topic, "--num-records", "100",
                  "--record-size", "10", "--throughput", "-1", "--print-metrics",
                  "--producer-props", f"bootstrap.servers={broker.bootstrap}")
    assert result.returncode == 0, result.stderr
    lines = result.stdout.splitlines()
    assert FINAL.fullmatch(lines[0])
    assert lines[1] == "" and re.fullmatch(r"Metric Name +Value", lines[2])
    names = [line.split(" : ")[0].rstrip() for line in lines[3:]]
    assert names == sorted(names) and names
    assert all(re.fullmatch(r"[\w.-]+:[\w.-]+:\{client-id=perf-producer-client\}", name)
               for name in names)


def test_producer_usage_errors_exit_1(broker):
    no_props = tool("producer-perf-test", "--topic", "t", "--num-records", "1",
                    "--record-size", "1", "--throughput", "-1")
    assert no_props.returncode == 1
    assert "Either --producer-props or --producer.config must be specified." in no_props.stderr
    both = tool("producer-perf-test", "--topic", "t", "--num-records", "1", "--record-size",
                "1", "--payload-monotonic", "--throughput", "-1")
    assert both.returncode == 1 and "not allowed with argument" in both.stderr
    zero = tool("producer-perf-test", "--topic", "t", "--num-records", "0", "--record-size",
                "1", "--throughput", "-1", "--producer-props", "bootstrap.servers=x:1")
    assert zero.returncode == 1
    assert "--num-records should be greater than zero" in zero.stderr
    empty = tool("producer-perf-test")
    assert empty.returncode == 0 and empty.stdout.startswith("usage: kafkapy-producer-perf-test")


@pytest.mark.java
def test_producer_lines_match_kafkas_tool(broker):
    ours, theirs = unique("ours"), unique("theirs")
    create_topic(broker, ours)
    create_topic(broker, theirs)
    produce(broker, ours, "--record-size", str(SIZE))
    produce(broker, theirs, "--record-size", str(SIZE), runner=kafka_tool)
    assert end_offsets(broker, ours) == end_offsets(broker, theirs) == {0: RECORDS}


# -- kafkapy-consumer-perf-test --------------------------------------------------------------

@pytest.fixture(scope="module")
def loaded_topic(broker):
    """A two-partition topic holding RECORDS records of SIZE bytes (no keys)."""
    topic = create_topic(broker, unique("consume"), partitions=2)
    produce(broker, topic, "--record-size", str(SIZE))
    return topic


def summary(result: subprocess.CompletedProcess, header: bool = True) -> re.Match:
    lines = result.stdout.splitlines()
    if header:
        assert lines[0] == HEADER
        lines = lines[1:]
    assert len(lines) == 1, lines
    found = SUMMARY.fullmatch(lines[0])
    assert found, lines[0]
    return found


def test_consumer_reads_exactly_the_requested_records(broker, admin, loaded_topic):
    group = unique("group")
    found = summary(consume(broker, loaded_topic, group))
    assert int(found.group(4)) == RECORDS
    assert found.group(3) == f"{RECORDS * SIZE / 2**20:.4f}"
    assert found.group(1) <= found.group(2)
    # The group committed what it read (auto-commit on close).
    assert committed(admin, group) == end_offsets(broker, loaded_topic)


def test_consumer_detailed_stats(broker, loaded_topic):
    result = consume(broker, loaded_topic, unique("detailed"), "--show-detailed-stats",
                     "--reporting-interval", "1")
    header, *lines = result.stdout.splitlines()
    assert header == DETAILED_HEADER
    assert lines, "no progress line"
    counts = []
    for line in lines:
        found = DETAILED.fullmatch(line)
        assert found, line
        counts.append(int(found.group(1)))
    assert counts == sorted(counts) and counts[-1] <= RECORDS


def test_consumer_timeout_warns_and_reports_what_it_read(broker, loaded_topic):
    result = consume(broker, loaded_topic, unique("timeout"), "--timeout", "1000",
                     "--hide-header", messages=RECORDS + 1)
    warning, line = result.stdout.splitlines()
    assert warning == ("WARNING: Exiting before consuming the expected number of messages: "
                       "timeout (1000 ms) exceeded. You can use the --timeout option to "
                       "increase the timeout.")
    found = SUMMARY.fullmatch(line)
    assert found and int(found.group(4)) == RECORDS


def test_consumer_date_format(broker, loaded_topic):
    result = consume(broker, loaded_topic, unique("date"), "--hide-header",
                     "--date-format", "yyyy-MM-dd'T'HH:mm:ss.SSS' x'", messages=10)
    stamp = r"\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d\.\d{3} x"
    assert re.fullmatch(rf"{stamp}, {stamp}, .*", result.stdout.strip()), result.stdout


def test_consumer_from_latest_reads_nothing_old(broker, loaded_topic):
    result = consume(broker, loaded_topic, unique("latest"), "--from-latest", "--timeout",
                     "1000", messages=1)
    assert "WARNING: Exiting before consuming" in result.stdout
    assert int(SUMMARY.fullmatch(result.stdout.splitlines()[-1]).group(4)) == 0


def test_consumer_usage_errors_exit_1(broker):
    missing = tool("consumer-perf-test", "--bootstrap-server", broker.bootstrap,
                   "--topic", "t")
    assert missing.returncode == 1
    assert 'Missing required argument "[messages]"' in missing.stderr


@pytest.mark.java
def test_consumer_lines_match_kafkas_tool(broker, admin, loaded_topic):
    ours, theirs = unique("ours-group"), unique("theirs-group")
    mine = summary(consume(broker, loaded_topic, ours))
    kafka = summary(consume(broker, loaded_topic, theirs, runner=kafka_tool))
    # Same MB and record counts; the timings differ.
    assert (mine.group(3), mine.group(4)) == (kafka.group(3), kafka.group(4))
    assert committed(admin, ours) == committed(admin, theirs)


@pytest.mark.java
def test_a_partition_read_nothing_from_is_committed_like_kafkas_tool(broker, admin):
    """Kafka's tool commits a position for every assigned partition on close, records or
    not (here partition 0 holds none: {0: 0, 1: 500}); librdkafka's auto-commit alone
    would leave partition 0 out."""
    from kafka import KafkaProducer
    topic = create_topic(broker, unique("one-sided"), partitions=2)
    producer = KafkaProducer(bootstrap_servers=broker.bootstrap)
    for _ in range(500):
        producer.send(topic, b"x" * SIZE, partition=1)
    producer.flush(30)
    producer.close()
    ours, theirs = unique("ours-one-sided"), unique("theirs-one-sided")
    consume(broker, topic, ours, messages=500)
    consume(broker, topic, theirs, messages=500, runner=kafka_tool)
    assert committed(admin, theirs) == {0: 0, 1: 500}
    assert committed(admin, ours) == committed(admin, theirs)


# -- without confluent-kafka: the kafka-python client ----------------------------------------

def without_confluent(module: str):
    """A runner calling ``kafkapy.cli.<module>.main`` in a Python where confluent_kafka
    cannot be imported (what a kafkapy install without the test extras has)."""
    def run(_name: str, *args: str) -> subprocess.CompletedProcess:
        code = ("import sys; sys.modules['confluent_kafka'] = None; "
                f"from kafkapy.cli.{module} import main; sys.exit(main(sys.argv[1:]))")
        return subprocess.run([sys.executable, "-c", code, *args], capture_output=True,
                              text=True, timeout=120, cwd=ROOT)
    return run


def test_kafka_python_fallback(broker, admin):
    topic = create_topic(broker, unique("fallback"))
    produce(broker, topic, "--record-size", str(SIZE), records=2000,
            runner=without_confluent("producer_perf_test"))
    assert end_offsets(broker, topic) == {0: 2000}
    group = unique("fallback-group")
    found = summary(consume(broker, topic, group, messages=2000,
                            runner=without_confluent("consumer_perf_test")))
    assert int(found.group(4)) == 2000
    assert committed(admin, group) == {0: 2000}
