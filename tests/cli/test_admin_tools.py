"""``kafkapy-delete-records``, ``kafkapy-log-dirs`` and ``kafkapy-transactions``.

Each tool runs as a subprocess against a real broker; the ``java`` tests run Kafka 3.9's own
``kafka-delete-records.sh``, ``kafka-log-dirs.sh`` and ``kafka-transactions.sh`` with the
same arguments against the same broker and compare stdout, stderr's first line and the exit
code. Only what must differ is normalised: the current time (a transaction's duration) and
the retry counts and clock readings of Kafka's call-timeout message.

Transactions need real work to find: a transactional producer (kafka-python) that writes and
is killed with SIGKILL before it ends its transaction (its coordinator still knows it), and
hanging transactions made with raw requests: a producer id from InitProducerId writes a
transactional batch under a transactional id no coordinator has, so no marker will ever
come. Kafka 3.9 (and kafkapy) refuse such a batch while transaction.partition.verification
is on (KIP-890), so this module's broker runs with it off, as a pre-3.6 broker would be
(where hanging transactions were met). After ``abort`` a read_committed consumer gets past
the hanging transaction to the records behind it.

The admin calls that retry (a topic that does not exist) use ``default.api.timeout.ms`` =
3 s from ``--command-config`` for both tools, so a timeout costs 3 s, not Kafka's 60.
"""
from __future__ import annotations

import json
import re
import signal
import subprocess
import sys
import time
import uuid
from pathlib import Path

import pytest
from kafka import KafkaConsumer, KafkaProducer, TopicPartition

from kafkapy.protocol.messages import REQUESTS
from kafkapy.records.record import build_batch
from tests.support.broker_process import BrokerProcess
from tests.support.cluster import kafka_tool
from tests.support.wire import WireClient

BIN = Path(sys.executable).parent
SUFFIX = uuid.uuid4().hex[:6]
Produce = REQUESTS[0]
TXN_HEADERS = {
    "list": ["TransactionalId", "Coordinator", "ProducerId", "TransactionState"],
    "describe-producers": ["ProducerId", "ProducerEpoch", "LatestCoordinatorEpoch",
                           "LastSequence", "LastTimestamp", "CurrentTransactionStartOffset"],
    "find-hanging": ["Topic", "Partition", "ProducerId", "ProducerEpoch", "CoordinatorEpoch",
                     "StartOffset", "LastTimestamp", "Duration(min)"],
}


@pytest.fixture(scope="module")
def broker(tmp_path_factory):
    with BrokerProcess(tmp_path_factory.mktemp("admin-tools") / "logs", overrides={
            "transaction.partition.verification.enable": "false"}).start() as b:
        yield b


@pytest.fixture(scope="module")
def config(tmp_path_factory) -> str:
    path = tmp_path_factory.mktemp("admin-tools-config") / "admin.properties"
    path.write_text("default.api.timeout.ms=3000\nrequest.timeout.ms=3000\n")
    return str(path)


def ours(tool: str, *args: str) -> subprocess.CompletedProcess:
    exe = BIN / f"kafkapy-{tool}"
    assert exe.is_file(), f"{exe} is missing: install the console scripts (pip install -e .)"
    return subprocess.run([str(exe), *args], capture_output=True, text=True, timeout=120,
                          stdin=subprocess.DEVNULL)


def both(tool: str, *args: str) -> tuple[subprocess.CompletedProcess, subprocess.CompletedProcess]:
    """(Kafka 3.9's tool, ours) with the same arguments."""
    return kafka_tool(f"kafka-{tool}.sh", *args), ours(tool, *args)


def same(kafka: subprocess.CompletedProcess, mine: subprocess.CompletedProcess,
         normalise=lambda text: text) -> None:
    """Equal exit codes and stdout, and the same first line of stderr (Kafka follows an
    uncaught exception's message with its Java stack trace)."""
    assert mine.returncode == kafka.returncode, (kafka.stderr, mine.stderr)
    assert normalise(mine.stdout) == normalise(kafka.stdout)
    assert normalise(_first_error(mine.stderr)) == normalise(_first_error(kafka.stderr))


def _first_error(stderr: str) -> str:
    lines = [line for line in stderr.splitlines() if not line.startswith("[")]
    return lines[0] if lines else ""


# Kafka's admin client words a call timeout one of two ways, depending on whether the call
# was waiting for a node or had tries behind it when the deadline passed (timing decides).
_CALL_TIMEOUT = re.compile(
    r"Call\(callName=(\w+)\(api=(\w+)\), deadlineMs=\d+, tries=\d+, nextAllowedTryMs=\d+\) "
    r"timed out at \d+ after \d+ attempt\(s\)"
    r"|Timed out waiting for a node assignment\. Call: (\w+)\(api=(\w+)\)")


def _timeless(text: str) -> str:
    return _CALL_TIMEOUT.sub(lambda m: f"<{m.group(1) or m.group(3)} timed out>", text)


def create_topic(broker, name: str, partitions: int) -> None:
    result = ours("topics", "--bootstrap-server", broker.bootstrap, "--create", "--topic",
                  name, "--partitions", str(partitions))
    assert result.returncode == 0, result.stderr


def produce(broker, topic: str, partition: int, values: list[bytes]) -> None:
    producer = KafkaProducer(bootstrap_servers=broker.bootstrap, acks="all")
    try:
        for value in values:
            producer.send(topic, value, partition=partition)
        producer.flush(timeout=30)
    finally:
        producer.close()


def offset_json(tmp_path: Path, entries: list[tuple[str, int, int]], name="offsets.json") -> str:
    path = tmp_path / name
    path.write_text(json.dumps({"partitions": [{"topic": t, "partition": p, "offset": o}
                                               for t, p, o in entries], "version": 1}))
    return str(path)


def earliest(broker, topic: str, partition: int) -> int:
    result = ours("get-offsets", "--bootstrap-server", broker.bootstrap, "--topic", topic,
                  "--partitions", str(partition), "--time", "-2")
    assert result.returncode == 0, result.stderr
    return int(result.stdout.strip().rsplit(":", 1)[1])


# --------------------------------------------------------------------------- delete-records

def test_delete_records_moves_the_log_start(broker, tmp_path, config):
    topic = f"delrec-{SUFFIX}"
    create_topic(broker, topic, 2)
    produce(broker, topic, 0, [b"a%d" % i for i in range(10)])
    produce(broker, topic, 1, [b"b%d" % i for i in range(4)])
    plan = offset_json(tmp_path, [(topic, 0, 3), (topic, 1, -1)])
    result = ours("delete-records", "--bootstrap-server", broker.bootstrap,
                  "--offset-json-file", plan)
    assert result.returncode == 0, result.stderr
    lines = result.stdout.splitlines()
    assert lines[:2] == ["Executing records delete operation",
                         "Records delete operation completed:"]
    assert sorted(lines[2:]) == [f"partition: {topic}-0\tlow_watermark: 3",
                                 f"partition: {topic}-1\tlow_watermark: 4"]
    assert (earliest(broker, topic, 0), earliest(broker, topic, 1)) == (3, 4)


def test_delete_records_reports_partition_errors(broker, tmp_path, config):
    topic = f"delrec-errors-{SUFFIX}"
    create_topic(broker, topic, 1)
    produce(broker, topic, 0, [b"x", b"y"])
    plan = offset_json(tmp_path, [(topic, 0, 99), (f"missing-{SUFFIX}", 0, 1)])
    result = ours("delete-records", "--bootstrap-server", broker.bootstrap,
                  "--offset-json-file", plan, "--command-config", config)
    assert result.returncode == 0
    lines = dict(line.split("\t", 1) for line in result.stdout.splitlines()[2:])
    assert lines[f"partition: {topic}-0"] == (
        "error: org.apache.kafka.common.errors.OffsetOutOfRangeException: The requested "
        "offset is not within the range of offsets maintained by the server.")
    assert lines[f"partition: missing-{SUFFIX}-0"].startswith(
        "error: org.apache.kafka.common.errors.TimeoutException: "
        "Call(callName=deleteRecords(api=METADATA), deadlineMs=")
    # Kafka's admin client logs the refused partition at ERROR.
    assert (f"ERROR [AdminClient clientId=adminclient-1] DeleteRecords request for topic "
            f"partition {topic}-0 failed due to an unexpected error OFFSET_OUT_OF_RANGE "
            f"(org.apache.kafka.clients.admin.internals.DeleteRecordsHandler)") in result.stderr


@pytest.mark.parametrize("content, message", [
    ("not json", "The input string is not a valid JSON"),
    ('{"version": 2, "partitions": []}', "Not supported version field value 2"),
    ('{"version": 1}', "Missing partitions field"),
    ('{"partitions": [{"topic": "t", "partition": 0, "offset": 1}, '
     '{"topic": "t", "partition": 0, "offset": 2}]}',
     "Offset json file contains duplicate topic partitions: t-0"),
])
def test_delete_records_bad_files(broker, tmp_path, content, message):
    path = tmp_path / "bad.json"
    path.write_text(content)
    result = ours("delete-records", "--bootstrap-server", broker.bootstrap,
                  "--offset-json-file", str(path))
    assert (result.returncode, result.stdout, result.stderr) == (1, "", message + "\n")


def test_delete_records_needs_its_file(broker):
    result = ours("delete-records", "--bootstrap-server", broker.bootstrap)
    assert result.returncode == 1
    assert result.stderr.splitlines()[0] == 'Missing required argument "[offset-json-file]"'
    unreadable = ours("delete-records", "--bootstrap-server", broker.bootstrap,
                      "--offset-json-file", "/nonexistent/offsets.json")
    assert (unreadable.returncode, unreadable.stderr) == (
        1, "Unable to read file /nonexistent/offsets.json\n")


@pytest.mark.java
def test_delete_records_like_kafka(broker, tmp_path, config):
    topic = f"delrec-kafka-{SUFFIX}"
    create_topic(broker, topic, 3)
    for partition in range(3):
        produce(broker, topic, partition, [b"v%d" % i for i in range(6)])
    # Deleting to the same offsets twice gives the same low watermarks: each tool runs once
    # on the plan and both outputs must be the same. Partitions that share a Java hash
    # bucket are listed too, so the order Kafka prints them in is checked.
    plan = offset_json(tmp_path, [(topic, 0, 2), (topic, 1, -1), (topic, 2, 0),
                                  (topic, 2 + 1000, 1), ("t", 1, 1), ("nope", 0, 1)])
    kafka, mine = both("delete-records", "--bootstrap-server", broker.bootstrap,
                       "--offset-json-file", plan, "--command-config", config)
    same(kafka, mine, _timeless)
    assert f"partition: {topic}-1\tlow_watermark: 6" in mine.stdout.splitlines()
    out_of_range = offset_json(tmp_path, [(topic, 0, 999)], "out.json")
    same(*both("delete-records", "--bootstrap-server", broker.bootstrap,
               "--offset-json-file", out_of_range))
    for content in ("not json", '{"version": 1}', '{"version": 3, "partitions": []}'):
        path = tmp_path / "bad.json"
        path.write_text(content)
        same(*both("delete-records", "--bootstrap-server", broker.bootstrap,
                   "--offset-json-file", str(path)))


# --------------------------------------------------------------------------- log-dirs

def _log_dirs_json(result: subprocess.CompletedProcess) -> dict:
    assert result.returncode == 0, result.stderr
    lines = result.stdout.splitlines()
    assert lines[:2] == ["Querying brokers for log directories information",
                         "Received log directory information from brokers 0"]
    return json.loads(lines[2])


def test_log_dirs_describe(broker):
    topic = f"logdirs-{SUFFIX}"
    create_topic(broker, topic, 2)
    produce(broker, topic, 1, [b"z" * 100])
    described = _log_dirs_json(ours("log-dirs", "--bootstrap-server", broker.bootstrap,
                                    "--describe", "--topic-list", topic))
    [entry] = described["brokers"]
    assert list(described) == ["brokers", "version"] and described["version"] == 1
    assert entry["broker"] == 0
    [log_dir] = entry["logDirs"]
    assert list(log_dir) == ["partitions", "error", "logDir"]
    assert log_dir["error"] is None and log_dir["logDir"] == str(broker.log_dir)
    sizes = {p["partition"]: p["size"] for p in log_dir["partitions"]}
    assert set(sizes) == {f"{topic}-0", f"{topic}-1"}
    assert sizes[f"{topic}-0"] == 0 and sizes[f"{topic}-1"] > 100
    on_disk = sum(f.stat().st_size for f in (broker.log_dir / f"{topic}-1").glob("*.log"))
    assert sizes[f"{topic}-1"] == on_disk
    assert all(list(p) == ["partition", "size", "offsetLag", "isFuture"]
               and p["offsetLag"] == 0 and p["isFuture"] is False
               for p in log_dir["partitions"])


def test_log_dirs_errors(broker):
    missing = ours("log-dirs", "--bootstrap-server", broker.bootstrap, "--describe",
                   "--broker-list", "0,5,3")
    assert (missing.returncode, missing.stdout) == (1, "")
    assert missing.stderr == ("ERROR: The given brokers do not exist from --broker-list: "
                              "3,5. Current existent brokers: 0\n")
    no_action = ours("log-dirs", "--bootstrap-server", broker.bootstrap)
    assert no_action.returncode == 1
    assert no_action.stderr.splitlines()[0] == 'Missing required argument "[describe]"'
    not_a_number = ours("log-dirs", "--bootstrap-server", broker.bootstrap, "--describe",
                        "--broker-list", "x")
    assert (not_a_number.returncode, not_a_number.stderr) == (1, 'For input string: "x"\n')


@pytest.mark.java
def test_log_dirs_like_kafka(broker):
    topic = f"logdirs-kafka-{SUFFIX}"
    create_topic(broker, topic, 5)
    for partition in (0, 3):
        produce(broker, topic, partition, [b"p%d" % partition] * 3)
    for args in (["--describe"], ["--describe", "--topic-list", f"{topic},absent"],
                 ["--describe", "--broker-list", "0"], ["--describe", "--broker-list", "0,7"],
                 ["--describe", "--broker-list", "x"], []):
        same(*both("log-dirs", "--bootstrap-server", broker.bootstrap, *args))


# --------------------------------------------------------------------------- transactions

class Hanging:
    """A transaction no coordinator will end (see the module docstring)."""

    def __init__(self, broker, topic: str, partition: int, records: int = 2) -> None:
        client = WireClient(broker.bootstrap)
        try:
            init = client.request(22, 4, transactional_id=None, transaction_timeout_ms=60000,
                                  producer_id=-1, producer_epoch=-1)
            assert init.error_code == 0
            self.producer_id, self.epoch = init.producer_id, init.producer_epoch
            now = int(time.time() * 1000)
            batch = build_batch([(None, b"hanging-%d" % i, (), now) for i in range(records)],
                                producer_id=self.producer_id, producer_epoch=self.epoch,
                                base_sequence=0, is_transactional=True)
            answer = client.request(0, 9, transactional_id=f"unknown-{SUFFIX}", acks=-1,
                                    timeout_ms=5000, topic_data=[Produce.TopicProduceData(
                                        name=topic, partition_data=[
                                            Produce.TopicProduceData.PartitionProduceData(
                                                index=partition, records=batch)])])
            part = answer.responses[0].partition_responses[0]
            assert part.error_code == 0, part
            self.start_offset = part.base_offset
        finally:
            client.close()


_KILLED_PRODUCER = """
import sys, time
from kafka import KafkaProducer
bootstrap, topic, tid = sys.argv[1:4]
producer = KafkaProducer(bootstrap_servers=bootstrap, transactional_id=tid,
                         transaction_timeout_ms=900000)
producer.init_transactions()
producer.begin_transaction()
producer.send(topic, b"open", partition=0)
producer.flush()
print("written", flush=True)
time.sleep(300)
"""


@pytest.fixture(scope="module")
def txns(broker):
    """A topic with an open transaction of a killed producer on partition 0 (its coordinator
    knows it) and a hanging transaction on partition 1 with committed records behind it."""
    topic, tid = f"txn-{SUFFIX}", f"killed-{SUFFIX}"
    create_topic(broker, topic, 2)
    produce(broker, topic, 1, [b"before"])
    proc = subprocess.Popen([sys.executable, "-c", _KILLED_PRODUCER, broker.bootstrap, topic,
                             tid], stdout=subprocess.PIPE, text=True)
    try:
        assert proc.stdout.readline().strip() == "written"
    finally:
        proc.send_signal(signal.SIGKILL)
        proc.wait(timeout=30)
        proc.stdout.close()
    hanging = Hanging(broker, topic, 1)
    produce(broker, topic, 1, [b"after-1", b"after-2"])
    time.sleep(0.01)   # find-hanging counts transactions idle for more than 0 ms
    return {"topic": topic, "tid": tid, "hanging": hanging}


def _rows(result: subprocess.CompletedProcess, command: str) -> list[list[str]]:
    assert result.returncode == 0, result.stderr
    header, *rows = result.stdout.splitlines()
    assert header.endswith("\t") and header.split() == TXN_HEADERS[command]
    return [row.split("\t")[:-1] for row in rows]


def _cells(row: list[str]) -> list[str]:
    return [cell.strip() for cell in row]


def test_transactions_list_and_describe(broker, txns):
    run = lambda *a: ours("transactions", "--bootstrap-server", broker.bootstrap, *a)  # noqa: E731
    listed = [_cells(r) for r in _rows(run("list"), "list")]
    assert [txns["tid"], "0", "Ongoing"] in [[r[0], r[1], r[3]] for r in listed]
    described = run("describe", "--transactional-id", txns["tid"])
    assert described.returncode == 0, described.stderr
    header, row = described.stdout.splitlines()
    assert header.split() == ["CoordinatorId", "TransactionalId", "ProducerId", "ProducerEpoch",
                              "TransactionState", "TransactionTimeoutMs",
                              "CurrentTransactionStartTimeMs", "TransactionDurationMs",
                              "TopicPartitions"]
    cells = _cells(row.split("\t")[:-1])
    assert cells[0:2] == ["0", txns["tid"]]
    assert cells[4:6] == ["Ongoing", "900000"] and cells[8] == f"{txns['topic']}-0"
    unknown = run("describe", "--transactional-id", f"nobody-{SUFFIX}")
    assert (unknown.returncode, unknown.stdout) == (1, "")
    assert unknown.stderr == (
        f"Failed to describe transaction state of transactional-id `nobody-{SUFFIX}`: "
        f"DescribeTransactions request for transactionalId `nobody-{SUFFIX}` failed because "
        "the ID could not be found. Enable debug logging for additional detail.\n")


def test_transactions_describe_producers(broker, txns):
    topic, hanging = txns["topic"], txns["hanging"]
    result = ours("transactions", "--bootstrap-server", broker.bootstrap, "describe-producers",
                  "--topic", topic, "--partition", "1")
    rows = {r[0]: r for r in map(_cells, _rows(result, "describe-producers"))}
    assert rows[str(hanging.producer_id)][1:4] == [str(hanging.epoch), "-1", "1"]
    assert rows[str(hanging.producer_id)][5] == str(hanging.start_offset)
    assert sum(r[5] == "None" for r in rows.values()) == len(rows) - 1


def test_transactions_usage_errors(broker):
    run = lambda *a: ours("transactions", "--bootstrap-server", broker.bootstrap, *a)  # noqa: E731
    for args, message in [
        (["find-hanging"], "The `find-hanging` command requires either --topic or --broker-id "
                           "to limit the scope of the search"),
        (["find-hanging", "--broker-id", "0", "--partition", "1"],
         "The --partition argument requires --topic to be provided"),
        (["abort", "--topic", "t", "--partition", "0"],
         "The transaction to abort must be identified either with --start-offset (for "
         "brokers on 3.0 or above) or with --producer-id, --producer-epoch, and "
         "--coordinator-epoch (for older brokers)"),
        (["abort", "--topic", "t", "--partition", "0", "--producer-id", "5"],
         "Missing required argument --producer-epoch"),
        (["abort", "--topic", "t", "--partition", "0", "--producer-id", "5",
          "--producer-epoch", "0"], "Missing required argument --coordinator-epoch"),
    ]:
        result = run(*args)
        assert (result.returncode, result.stdout, result.stderr) == (1, "", message + "\n")
    assert ours("transactions", "list").returncode == 1     # no --bootstrap-server


def _read_committed(broker, topic: str, partition: int) -> list[bytes]:
    consumer = KafkaConsumer(bootstrap_servers=broker.bootstrap, isolation_level="read_committed",
                             enable_auto_commit=False, consumer_timeout_ms=3000)
    try:
        tp = TopicPartition(topic, partition)
        consumer.assign([tp])
        consumer.seek_to_beginning(tp)
        return [record.value for record in consumer]
    finally:
        consumer.close()


def test_find_hanging_then_abort_unblocks_read_committed(broker, txns):
    topic, hanging = txns["topic"], txns["hanging"]
    run = lambda *a: ours("transactions", "--bootstrap-server", broker.bootstrap, *a)  # noqa: E731
    assert _read_committed(broker, topic, 1) == [b"before"]   # stuck at the open transaction
    found = [_cells(r) for r in _rows(run("find-hanging", "--broker-id", "0",
                                          "--max-transaction-timeout", "0"), "find-hanging")]
    # The killed producer's transaction is open too, but its coordinator still counts the
    # partition in it: only the raw one hangs.
    assert [r[:6] for r in found] == [[topic, "1", str(hanging.producer_id), str(hanging.epoch),
                                       "-1", str(hanging.start_offset)]]
    assert _rows(run("find-hanging", "--topic", topic), "find-hanging") == []   # under 15 min
    missing = run("abort", "--topic", topic, "--partition", "1", "--start-offset", "9999")
    assert (missing.returncode, missing.stderr) == (
        1, f"Could not find any open transactions starting at offset 9999 on partition "
           f"{topic}-1\n")
    aborted = run("abort", "--topic", topic, "--partition", "1", "--start-offset",
                  str(hanging.start_offset))
    assert (aborted.returncode, aborted.stdout, aborted.stderr) == (0, "", "")
    assert _rows(run("find-hanging", "--topic", topic, "--max-transaction-timeout", "0"),
                 "find-hanging") == []
    assert _read_committed(broker, topic, 1) == [b"before", b"after-1", b"after-2"]


@pytest.mark.java
def test_transactions_like_kafka(broker, txns, config):
    topic = txns["topic"]
    # A hanging transaction of this test's own (the other test may have aborted the first).
    hanging = Hanging(broker, topic, 1, records=3)
    time.sleep(0.01)
    base = ["--bootstrap-server", broker.bootstrap, "--command-config", config]

    def duration_free(text: str) -> str:
        # describe's TransactionDurationMs is "now - start": the one column that must differ
        return re.sub(r"(?m)^((?:[^\t\n]*\t){7})\d+ *\t", r"\1D\t", text)

    for args in (["list"], ["describe", "--transactional-id", txns["tid"]],
                 ["describe", "--transactional-id", f"nobody-{SUFFIX}"],
                 ["describe-producers", "--topic", topic, "--partition", "0"],
                 ["describe-producers", "--topic", topic, "--partition", "1"],
                 ["describe-producers", "--topic", topic, "--partition", "1", "--broker-id", "0"],
                 ["describe-producers", "--topic", topic, "--partition", "0", "--broker-id", "7"],
                 ["describe-producers", "--topic", f"absent-{SUFFIX}", "--partition", "0"],
                 ["find-hanging", "--broker-id", "0", "--max-transaction-timeout", "0"],
                 ["find-hanging", "--topic", topic, "--max-transaction-timeout", "0"],
                 ["find-hanging", "--topic", topic, "--partition", "1",
                  "--max-transaction-timeout", "0"],
                 ["find-hanging", "--topic", f"absent-{SUFFIX}"],
                 ["find-hanging"], ["find-hanging", "--partition", "1", "--broker-id", "0"],
                 ["abort", "--topic", topic, "--partition", "1", "--start-offset", "9999"],
                 ["abort", "--topic", topic, "--partition", "1"]):
        kafka, mine = both("transactions", *base, *args)
        same(kafka, mine, lambda text: duration_free(_timeless(text)))
    # Kafka's tool aborts the hanging transaction kafkapy-transactions found, by its
    # producer id and epoch (the pre-3.0 form); then neither finds anything.
    kafka = kafka_tool("kafka-transactions.sh", *base, "abort", "--topic", topic, "--partition",
                       "1", "--producer-id", str(hanging.producer_id), "--producer-epoch",
                       str(hanging.epoch), "--coordinator-epoch", "-1")
    assert (kafka.returncode, kafka.stdout) == (0, ""), kafka.stderr
    kafka, mine = both("transactions", *base, "find-hanging", "--topic", topic,
                       "--max-transaction-timeout", "0")
    same(kafka, mine)
    assert str(hanging.producer_id) not in [r[2].strip() for r in _rows(mine, "find-hanging")]
