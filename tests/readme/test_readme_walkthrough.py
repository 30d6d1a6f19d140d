"""README.md's commands, run as printed, so the README cannot drift from what works.

Job: read the fenced ``sh`` blocks of the README's "Quickstart", "Starting like Kafka",
"Command-line tools", "A cluster" and "Moving replicas" (on
"A cluster"'s brokers) sections at test time and run them with bash in a temporary copy of the
repository (its files without ``.venv``, ``data``, ``.git`` and caches). The Quickstart's
``make run`` therefore builds a fresh ``.venv`` exactly as a user's first ``make run`` does
(``pip install -e .``, the broker only; this needs PyPI or a pip cache and takes a minute or
so), and every later ``.venv/bin/...`` command uses that venv.

One substitution is made, the same in the commands and in the copy's
``config/server.properties``: the README's ports (9092-9094, the cluster's 9101-9103 and
ZooKeeper's 2181, right after a colon, as in ``127.0.0.1:9092``; not in names such as
``data/broker-9093``) become free loopback ports, so a broker or ZooKeeper a developer already
runs on them neither breaks the test nor answers it. "A cluster" runs against a real
ZooKeeper (``tests/support/zookeeper_server.py``) started on the port that replaces 2181; without
ZooKeeper jars or java that test skips. Relative paths (``data/...``) land in the copy. The "Two commands" block is not run: its ``make run``
is the Quickstart's, and its ``make test`` is what runs this module.

Invariants: every command of those sections runs and its output is checked; a command this
module has no check for, or a check no command uses, fails the test, so a changed example
must come with a changed check. Traffic goes only to 127.0.0.1. Brokers are stopped as a
user stops them (SIGINT to the process group, i.e. Ctrl-C) and must shut down cleanly; a
failing test kills what it started. No assertion depends on timing: waits are bounded
deadlines that only guard against a hang.
"""
from __future__ import annotations

import json
import os
import re
import shutil
import signal
import socket
import subprocess
import time
from contextlib import contextmanager
from dataclasses import dataclass, field
from pathlib import Path
from typing import Callable

import pytest
from kafka import KafkaProducer

from kafkapy.protocol.messages import REQUESTS
from tests.support.broker_process import free_port
from tests.support.readme import ROOT, logical_lines, moving_replicas_commands, section, sh_blocks
from tests.support.wire import WireClient
from tests.support.zookeeper_server import ZOOKEEPER_SKIP_REASON, ZooKeeperServer, zookeeper_classpath

README_PORTS = ("9092", "9093", "9094")
CLUSTER_PORTS = ("9101", "9102", "9103")
ZOOKEEPER_PORT = "2181"
COPY_IGNORE = shutil.ignore_patterns(".venv", ".git", ".cache", "data", "__pycache__",
                                     "*.egg-info", ".pytest_cache", "build")
# Environment a user's shell would not have inside this test run (an outer make, a venv).
ENV_DROP = ("VIRTUAL_ENV", "PYTHONPATH", "PYTHONHOME", "MAKEFLAGS", "MFLAGS", "MAKELEVEL")
FIRST_START_S = 600.0   # `make run` into an empty venv installs the broker first
START_S = 60.0
STOP_S = 60.0
COMMAND_S = 180.0
METADATA = 3

pytestmark = pytest.mark.timeout(1200)


# ---------------------------------------------------------------- reading README.md


# ---------------------------------------------------------------- the repository copy

@dataclass
class Foreground:
    """A long-running README command (a broker start), in its own process group."""
    command: str
    port: int
    proc: subprocess.Popen
    output_path: Path

    def output(self) -> str:
        return self.output_path.read_text(errors="replace")[-20000:]

    def running(self) -> bool:
        return self.proc.poll() is None

    def ctrl_c(self) -> str:
        """SIGINT to the group, as a terminal's Ctrl-C; returns the output after exit."""
        if self.running():
            os.killpg(self.proc.pid, signal.SIGINT)
            self._wait("Ctrl-C")
        return self.output()

    def sigterm(self) -> str:
        """SIGTERM to the started process alone (``kill PID``); returns the output."""
        os.kill(self.proc.pid, signal.SIGTERM)
        self._wait("SIGTERM")
        # The rest of the group (the broker, if the process did not pass SIGTERM on) must
        # be gone too: a probe signal to an empty group fails.
        with pytest.raises(ProcessLookupError):
            os.killpg(self.proc.pid, 0)
        return self.output()

    def _wait(self, how: str) -> None:
        try:
            self.proc.wait(STOP_S)
        except subprocess.TimeoutExpired:
            self.kill()
            pytest.fail(f"{self.command!r} ignored {how}:\n{self.output()}")

    def kill(self) -> None:
        if self.running():
            os.killpg(self.proc.pid, signal.SIGKILL)
            self.proc.wait()


@dataclass
class Workspace:
    """A copy of the repository where README commands run as printed (ports localized)."""
    root: Path
    ports: dict[str, int]
    started: list[Foreground] = field(default_factory=list)

    def localize(self, text: str) -> str:
        for readme_port, port in self.ports.items():
            text = re.sub(rf"(?<=:){readme_port}\b", str(port), text)
        return text

    def env(self) -> dict[str, str]:
        env = {k: v for k, v in os.environ.items() if k not in ENV_DROP}
        env["PYTHONUNBUFFERED"] = "1"
        return env

    def run(self, script: str, check: bool = True) -> subprocess.CompletedProcess:
        """Runs README text with bash in the copy; with ``check``, a failure fails the test."""
        local = self.localize(script)
        proc = subprocess.run(["bash", "-euo", "pipefail", "-c", local], cwd=self.root,
                              env=self.env(), capture_output=True, text=True,
                              timeout=COMMAND_S)
        if check:
            assert proc.returncode == 0, (
                f"README command failed ({proc.returncode}):\n{local}\n--- stdout ---\n"
                f"{proc.stdout[-4000:]}\n--- stderr ---\n{proc.stderr[-4000:]}")
        return proc

    def start(self, command: str, timeout: float = START_S,
              port: int | None = None) -> Foreground:
        """Starts a README broker command and waits until its port (by default the local
        one of the README port the command names, else of 9092) accepts connections."""
        if port is None:
            named = [p for p in README_PORTS if re.search(rf":{p}\b", command)]
            port = self.ports[named[0] if named else "9092"]
        out_path = self.root / f"foreground-{len(self.started)}.out"
        with open(out_path, "wb") as out:
            proc = subprocess.Popen(["bash", "-c", self.localize(command)], cwd=self.root,
                                    env=self.env(), stdout=out, stderr=subprocess.STDOUT,
                                    start_new_session=True)
        fg = Foreground(command, port, proc, out_path)
        self.started.append(fg)
        wait_listening(fg, timeout)
        return fg

    @contextmanager
    def foreground(self, command: str):
        """``start`` for the length of a ``with``; whatever happens in it, the broker is gone
        after it, so a failed check leaves no port taken."""
        fg = self.start(command)
        try:
            yield fg
        finally:
            fg.kill()

    def stop_all(self) -> None:
        for fg in self.started:
            fg.kill()


def wait_listening(fg: Foreground, timeout: float) -> None:
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        if not fg.running():
            pytest.fail(f"{fg.command!r} exited with {fg.proc.returncode}:\n{fg.output()}")
        try:
            with socket.create_connection(("127.0.0.1", fg.port), timeout=1.0):
                return
        except OSError:
            time.sleep(0.2)
    fg.kill()
    pytest.fail(f"{fg.command!r} did not listen on {fg.port} within {timeout}s:\n{fg.output()}")


@pytest.fixture(scope="module")
def workspace(tmp_path_factory) -> Workspace:
    root = tmp_path_factory.mktemp("readme") / "kafkapy"
    shutil.copytree(ROOT, root, ignore=COPY_IGNORE)
    readme_ports = README_PORTS + CLUSTER_PORTS + (ZOOKEEPER_PORT,)
    ws = Workspace(root, {p: free_port() for p in readme_ports})
    assert len(set(ws.ports.values())) == len(readme_ports)
    props = root / "config" / "server.properties"
    assert "127.0.0.1:9092" in props.read_text(), "the README's 9092 comes from the sample config"
    props.write_text(ws.localize(props.read_text()))
    yield ws
    ws.stop_all()


@pytest.fixture(scope="module")
def make_run(workspace) -> Foreground:
    """The Quickstart's first block, ``make run``, started in the copy (a fresh venv)."""
    first = sh_blocks("Quickstart")[0].strip()
    assert first == "make run", f"the Quickstart starts with {first!r}, not 'make run'"
    fg = workspace.start(first, timeout=FIRST_START_S)
    yield fg
    fg.kill()


def quickstart_block(marker: str) -> str:
    blocks = [b for b in sh_blocks("Quickstart") if marker in b]
    assert len(blocks) == 1, f"expected one Quickstart block with {marker!r}, found {blocks!r}"
    return blocks[0]


def assert_clean_stop(fg: Foreground, log_dir: Path, how: str = "ctrl_c") -> None:
    output = getattr(fg, how)()
    assert "shut down cleanly" in output, output
    # Kafka's marker: its presence is what lets the next start skip log recovery.
    assert (log_dir / ".kafka_cleanshutdown").is_file(), sorted(p.name for p in log_dir.iterdir())


def advertised_brokers(port: int) -> list[tuple[int, str, int]]:
    """The brokers a Metadata request to 127.0.0.1:port names: where clients go next."""
    client = WireClient(f"127.0.0.1:{port}")
    try:
        response = client.request(METADATA, 1, topics=[])
    finally:
        client.close()
    return [(b.node_id, b.host, b.port) for b in response.brokers]


# ---------------------------------------------------------------- Quickstart

@pytest.mark.kcat
@pytest.mark.skipif(shutil.which("kcat") is None, reason="kcat binary not installed")
def test_quickstart_kcat(workspace, make_run):
    block = quickstart_block("kcat -P")
    assert "kcat -C" in block and "printf 'hello\\nworld\\n'" in block, block
    out = workspace.run(block).stdout
    assert out.splitlines() == ["hello", "world"], out


def test_quickstart_kafka_python(workspace, make_run):
    """The snippet prints the topic from offset 0; its own record is last (after kcat's, if
    that test ran first)."""
    block = quickstart_block("KafkaProducer")
    assert block.startswith(".venv/bin/python - <<'PY'"), block
    lines = workspace.run(block).stdout.splitlines()
    assert lines and lines[-1] == f"{len(lines) - 1} b'k' b'from kafka-python'", lines
    assert [int(line.split()[0]) for line in lines] == list(range(len(lines))), lines


def test_make_run_installs_the_broker_only(workspace, make_run):
    """``make run`` installs the runtime dependencies, not the test and Spark extras."""
    probe = ("import importlib.util as u; "
             "print(*[m for m in ('kafka', 'uvloop', 'kafkapy', 'pytest', 'pyspark', "
             "'confluent_kafka') if u.find_spec(m)])")
    out = workspace.run(f".venv/bin/python -c \"{probe}\"").stdout
    assert out.split() == ["kafka", "uvloop", "kafkapy"], out
    assert (workspace.root / ".venv" / ".installed-run").is_file()
    assert not (workspace.root / ".venv" / ".installed").exists()


# ---------------------------------------------------------------- Command-line tools

def _rows(stdout: str, header: list[str]) -> list[list[str]]:
    lines = stdout.splitlines()
    assert lines[0] == "" and lines[1].split() == header, stdout
    return [line.split() for line in lines[2:]]


def check_create(r: subprocess.CompletedProcess) -> None:
    assert r.stdout == "Created topic orders.\n", r.stdout


def check_describe_topic(r: subprocess.CompletedProcess) -> None:
    head, *parts = r.stdout.splitlines()
    assert head.startswith("Topic: orders\tTopicId: ") and "PartitionCount: 3" in head, head
    assert "retention.ms=86400000" in head, head
    assert [p.split("\t")[2] for p in parts] == [f"Partition: {i}" for i in range(3)], parts


def check_produce(r: subprocess.CompletedProcess) -> None:
    assert r.stdout == "", r.stdout


def check_consume(r: subprocess.CompletedProcess) -> None:
    assert sorted(r.stdout.splitlines()) == ["k1\thello", "k2\tworld"], r.stdout
    assert "Processed a total of 2 messages" in r.stderr, r.stderr


def check_describe_group(r: subprocess.CompletedProcess) -> None:
    assert "Consumer group 'billing' has no active members." in r.stderr, r.stderr
    rows = _rows(r.stdout, ["GROUP", "TOPIC", "PARTITION", "CURRENT-OFFSET", "LOG-END-OFFSET",
                            "LAG", "CONSUMER-ID", "HOST", "CLIENT-ID"])
    assert [row[:3] for row in rows] == [["billing", "orders", str(i)] for i in range(3)], rows
    assert [row[3] for row in rows] == [row[4] for row in rows], rows   # all consumed
    assert sum(int(row[3]) for row in rows) == 2 and {row[5] for row in rows} == {"0"}, rows


def check_reset(r: subprocess.CompletedProcess) -> None:
    rows = _rows(r.stdout, ["GROUP", "TOPIC", "PARTITION", "NEW-OFFSET"])
    assert rows == [["billing", "orders", str(i), "0"] for i in range(3)], rows


def check_alter_config(r: subprocess.CompletedProcess) -> None:
    assert r.stdout == "Completed updating config for topic orders.\n", r.stdout


def check_describe_config(r: subprocess.CompletedProcess) -> None:
    lines = r.stdout.splitlines()
    assert lines[0] == "Dynamic configs for topic orders are:", lines
    assert [line.split()[0] for line in lines[1:]] == [
        "cleanup.policy=compact", "retention.ms=86400000"], lines


def check_offsets(r: subprocess.CompletedProcess) -> None:
    parts = [line.split(":") for line in r.stdout.splitlines()]
    assert [p[:2] for p in parts] == [["orders", str(i)] for i in range(3)], parts
    assert sum(int(p[2]) for p in parts) == 2, parts


def check_election(r: subprocess.CompletedProcess) -> None:
    # One broker: every preferred leader already leads; Kafka then reports nothing.
    assert r.stdout == "", r.stdout


def check_producer_perf(r: subprocess.CompletedProcess) -> None:
    final = r.stdout.splitlines()[-1]
    assert re.fullmatch(r"1000 records sent, [\d.]+ records/sec \([\d.]+ MB/sec\), [\d.]+ ms avg "
                        r"latency, [\d.]+ ms max latency, \d+ ms 50th, \d+ ms 95th, \d+ ms 99th, "
                        r"\d+ ms 99\.9th\.", final), r.stdout


def check_consumer_perf(r: subprocess.CompletedProcess) -> None:
    # Kafka's tool prints a warning line before the summary when --timeout passed first.
    assert len(r.stdout.splitlines()) == 2, r.stdout
    header, row = r.stdout.splitlines()
    assert header.startswith("start.time, end.time, data.consumed.in.MB, MB.sec, "
                             "data.consumed.in.nMsg, nMsg.sec"), header
    assert row.split(", ")[4] == "1000", row


def check_api_versions(r: subprocess.CompletedProcess) -> None:
    lines = r.stdout.splitlines()
    assert re.fullmatch(r"127\.0\.0\.1:\d+ \(id: \d+ rack: null\) -> \(", lines[0]), lines[0]
    assert re.fullmatch(r"\tProduce\(0\): \d+ to \d+ \[usable: \d+\],", lines[1]), lines[1]
    assert lines[-1] == ")", lines[-1]


def check_log_dirs(r: subprocess.CompletedProcess) -> None:
    querying, received, body = r.stdout.splitlines()
    assert querying == "Querying brokers for log directories information", querying
    assert received.startswith("Received log directory information from brokers "), received
    (broker,) = json.loads(body)["brokers"]
    (log_dir,) = broker["logDirs"]
    assert sorted(p["partition"] for p in log_dir["partitions"]) == [
        f"orders-{i}" for i in range(3)], log_dir


def check_dump_log(r: subprocess.CompletedProcess) -> None:
    lines = r.stdout.splitlines()
    assert lines[:2] == ["Dumping data/kafka-logs/orders-0/00000000000000000000.log",
                         "Log starting offset: 0"], lines[:2]
    assert any(line.startswith("| offset: ") for line in lines), r.stdout


def check_no_output(r: subprocess.CompletedProcess) -> None:
    assert r.stdout == "", r.stdout


def check_delete_records(r: subprocess.CompletedProcess) -> None:
    lines = r.stdout.splitlines()
    # loadtest has one partition (auto-created): the perf test's 1,000 records are all below
    assert lines == ["Executing records delete operation", "Records delete operation completed:",
                     "partition: loadtest-0\tlow_watermark: 1000"], lines


def check_transactions_list(r: subprocess.CompletedProcess) -> None:
    assert r.stdout.split() == ["TransactionalId", "Coordinator", "ProducerId",
                                "TransactionState"], r.stdout


CLI_CHECKS: list[tuple[str, Callable[[subprocess.CompletedProcess], None]]] = [
    (r"kafkapy-topics .*--create", check_create),
    (r"kafkapy-topics .*--describe", check_describe_topic),
    (r"kafkapy-console-producer ", check_produce),
    (r"kafkapy-console-consumer ", check_consume),
    (r"kafkapy-consumer-groups .*--describe", check_describe_group),
    (r"kafkapy-consumer-groups .*--reset-offsets", check_reset),
    (r"kafkapy-configs .*--alter", check_alter_config),
    (r"kafkapy-configs .*--describe", check_describe_config),
    (r"kafkapy-get-offsets ", check_offsets),
    (r"kafkapy-leader-election ", check_election),
    (r"kafkapy-producer-perf-test ", check_producer_perf),
    (r"kafkapy-consumer-perf-test ", check_consumer_perf),
    (r"kafkapy-broker-api-versions ", check_api_versions),
    (r"kafkapy-log-dirs ", check_log_dirs),
    (r"kafkapy-dump-log ", check_dump_log),
    (r"^echo ", check_no_output),
    (r"kafkapy-delete-records ", check_delete_records),
    (r"kafkapy-transactions ", check_transactions_list),
]


def checks_for(commands: list[str], table: list[tuple[str, Callable]]) -> list[Callable]:
    """The one check of ``table`` whose pattern each README command matches; every check
    of the table must be used (a command dropped from the README fails here)."""
    checks = []
    for command in commands:
        found = [check for pattern, check in table if re.search(pattern, command)]
        assert len(found) == 1, f"README command with {len(found)} checks here: {command}"
        checks.append(found[0])
    assert sorted(map(id, checks)) == sorted(id(c) for _, c in table), "unused checks"
    return checks


def test_command_line_tools(workspace, make_run):
    """Each command of the section, in order, with the block's variable assignments."""
    (block,) = sh_blocks("Command-line tools")
    lines = logical_lines(block)
    assignments = [line for line in lines if re.match(r"^[A-Za-z_]\w*=", line)]
    commands = [line for line in lines if line not in assignments]
    checks = checks_for(commands, CLI_CHECKS)
    for command, check in zip(commands, checks):
        result = workspace.run("\n".join(assignments + [command]))
        check(result)


# ---------------------------------------------------------------- stopping, starting

def test_make_run_stops_cleanly_on_ctrl_c(workspace, make_run):
    assert_clean_stop(make_run, workspace.root / "data" / "kafka-logs")


def check_broker_1(workspace: Workspace, fg: Foreground) -> Path:
    assert advertised_brokers(fg.port) == [(1, "127.0.0.1", fg.port)]
    log_dir = workspace.root / "data" / "broker-1"
    assert "broker.id=1" in (log_dir / "meta.properties").read_text()
    return log_dir


def check_broker_9093(workspace: Workspace, fg: Foreground) -> Path:
    """Clients are sent to the port-override broker, and their records land in its logs."""
    assert advertised_brokers(fg.port) == [(0, "127.0.0.1", fg.port)]
    bootstrap = f"127.0.0.1:{fg.port}"
    producer = KafkaProducer(bootstrap_servers=bootstrap)
    sent = producer.send("port-override", b"to 9093").get(timeout=30)
    producer.close()
    assert (sent.topic, sent.partition) == ("port-override", 0), sent
    log_dir = workspace.root / "data" / "broker-9093"
    assert (log_dir / "port-override-0").is_dir()
    return log_dir


def test_starting_like_kafka(workspace, make_run):
    """Each start command in turn, beside ``make run``'s broker (each has its own port and
    data directory, as the section says). The ``make run ARGS=...`` start is stopped by
    SIGTERM to make alone, the README's other way to stop ``make run``; the others by
    Ctrl-C."""
    (block,) = sh_blocks("Starting like Kafka")
    commands = logical_lines(block)
    assert len(commands) == 3, commands
    assert ":9094" in commands[0] and all(":9093" in c for c in commands[1:]), commands
    assert commands[2].startswith("make run ARGS="), commands[2]
    checks = [check_broker_1, check_broker_9093, check_broker_9093]
    for command, check, how in zip(commands, checks, ["ctrl_c", "ctrl_c", "sigterm"]):
        with workspace.foreground(command) as fg:
            assert_clean_stop(fg, check(workspace, fg), how)


def test_listener_host_claims(workspace, make_run):
    """The section's prose: ``0.0.0.0`` alone stops start-up (as Kafka does); an empty host
    is advertised as this machine's canonical name (Python's ``socket.getfqdn()``)."""
    text = " ".join(section("Starting like Kafka").split())
    assert "refuses to start with `listeners=PLAINTEXT://0.0.0.0:9093` alone" in text, text
    assert "`listeners=PLAINTEXT://:9093`, advertised as this machine's canonical" in text, text
    start = ".venv/bin/python -m kafkapy config/server.properties --override log.dirs=data/hosts"
    refused = workspace.run(f"{start} --override listeners=PLAINTEXT://0.0.0.0:9093", check=False)
    assert refused.returncode == 1, refused.stdout + refused.stderr
    assert "advertised.listeners cannot use the nonroutable meta-address 0.0.0.0" in refused.stderr
    with workspace.foreground(f"{start} --override listeners=PLAINTEXT://:9093") as fg:
        assert advertised_brokers(fg.port) == [(0, socket.getfqdn(), fg.port)]
        assert_clean_stop(fg, workspace.root / "data" / "hosts")


# ---------------------------------------------------------------- A cluster

CLUSTER_TOPIC = "payments"
CLUSTER_IDS = [1, 2, 3]


@pytest.fixture(scope="module")
def readme_zookeeper(workspace, tmp_path_factory):
    """A real ZooKeeper on the port that stands for the README's 127.0.0.1:2181."""
    if zookeeper_classpath() is None:
        pytest.skip(ZOOKEEPER_SKIP_REASON)
    server = ZooKeeperServer(tmp_path_factory.mktemp("zookeeper"),
                             port=workspace.ports[ZOOKEEPER_PORT]).start()
    yield server
    server.stop()


@dataclass
class ClusterBroker:
    """One of the section's broker commands and what it claims: id, listener port, log dir."""
    command: str
    broker_id: int
    readme_port: str
    log_dir: str


def cluster_broker(command: str) -> ClusterBroker:
    """The command's claims, read from its overrides (so a changed README is followed)."""
    broker_id = re.search(r"--override broker\.id=(\d+)\b", command)
    port = re.search(r"--override listeners=PLAINTEXT://127\.0\.0\.1:(\d+)\b", command)
    log_dir = re.search(r"--override log\.dirs=(\S+)", command)
    assert broker_id and port and log_dir, f"a cluster broker command without its own id, " \
                                           f"listener or log.dirs: {command}"
    assert command.startswith(".venv/bin/kafkapy-server-start config/server.properties $Z "), \
        command
    assert port.group(1) in CLUSTER_PORTS, command
    return ClusterBroker(command, int(broker_id.group(1)), port.group(1), log_dir.group(1))


def wait_for_cluster(workspace: Workspace, brokers: list[ClusterBroker]) -> None:
    """Every broker names all of them in Metadata: they share one cluster (the check of
    each start command). Also the point where the controller knows all three, which a
    replication factor of 3 needs; a bounded wait, not a timing claim."""
    expected = sorted((b.broker_id, "127.0.0.1", workspace.ports[b.readme_port])
                      for b in brokers)
    seen: dict[int, list] = {}
    deadline = time.monotonic() + START_S
    while time.monotonic() < deadline:
        seen = {b.broker_id: sorted(advertised_brokers(workspace.ports[b.readme_port]))
                for b in brokers}
        if all(v == expected for v in seen.values()):
            return
        time.sleep(0.2)
    pytest.fail(f"brokers did not all see {expected} within {START_S}s: {seen}")


def check_cluster_create(r: subprocess.CompletedProcess) -> None:
    assert r.stdout == f"Created topic {CLUSTER_TOPIC}.\n", r.stdout + r.stderr


def check_cluster_describe(r: subprocess.CompletedProcess) -> None:
    """Six partitions, each on brokers 1, 2 and 3, led by one of them, all three in sync."""
    head, *parts = r.stdout.splitlines()
    fields = dict(f.split(": ", 1) for f in head.split("\t") if ": " in f)
    assert fields["Topic"] == CLUSTER_TOPIC, head
    assert (fields["PartitionCount"], fields["ReplicationFactor"]) == ("6", "3"), head
    rows = [dict(f.split(": ", 1) for f in p.strip().split("\t") if ": " in f) for p in parts]
    assert [row["Partition"] for row in rows] == [str(i) for i in range(6)], parts
    for row in rows:
        assert row["Topic"] == CLUSTER_TOPIC, row
        assert sorted(map(int, row["Replicas"].split(","))) == CLUSTER_IDS, row
        assert int(row["Leader"]) in CLUSTER_IDS, row
        assert sorted(map(int, row["Isr"].split(","))) == CLUSTER_IDS, row
    # Kafka's placement spreads the leaders (first replicas) over the brokers.
    assert {int(row["Leader"]) for row in rows} == set(CLUSTER_IDS), parts


CLUSTER_CHECKS: list[tuple[str, Callable[[subprocess.CompletedProcess], None]]] = [
    (r"kafkapy-topics .*--create", check_cluster_create),
    (r"kafkapy-topics .*--describe", check_cluster_describe),
]


def wait_for_topic(workspace: Workspace, readme_port: str, partitions: int,
                   topic: str = CLUSTER_TOPIC) -> None:
    """The broker a describe goes to has the topic with a leader for every partition: the
    create answers once the controller has it, the others learn it by UpdateMetadata right
    after (as in Kafka). A bounded wait so the describe does not race that message."""
    client = WireClient(f"127.0.0.1:{workspace.ports[readme_port]}")
    try:
        deadline = time.monotonic() + START_S
        while time.monotonic() < deadline:
            response = client.request(METADATA, 4, allow_auto_topic_creation=False,
                                      topics=[REQUESTS[METADATA].MetadataRequestTopic(
                                          name=topic)])
            (found,) = response.topics
            if (found.error_code == 0 and len(found.partitions) == partitions
                    and all(p.leader_id >= 0 for p in found.partitions)):
                return
            time.sleep(0.2)
    finally:
        client.close()
    pytest.fail(f"{topic} not on the broker at {readme_port} within {START_S}s")


# ---------------------------------------------------------------- Moving replicas
# (run on "A cluster"'s brokers, before they stop)

MOVE_TOPIC = "refunds"


def check_move_create(r: subprocess.CompletedProcess) -> None:
    assert r.stdout == f"Created topic {MOVE_TOPIC}.\n", r.stdout + r.stderr


def check_move_file(r: subprocess.CompletedProcess) -> None:
    assert r.stdout == "", r.stdout + r.stderr   # the topics file is written (checked next)


def check_move_generate(r: subprocess.CompletedProcess) -> None:
    """plan.json: the proposal, every partition on brokers 2 and 3."""
    assert r.stdout == "", r.stdout + r.stderr


def check_move_execute(r: subprocess.CompletedProcess) -> None:
    assert r.stdout.splitlines()[-1] == (f"Successfully started partition reassignments for "
                                         f"{MOVE_TOPIC}-0,{MOVE_TOPIC}-1,{MOVE_TOPIC}-2"), r.stdout
    assert "The inter-broker throttle limit was set to 10000000 B/s" in r.stdout, r.stdout


def check_move_list(r: subprocess.CompletedProcess) -> None:
    assert r.stdout.splitlines()[0] in ("No partition reassignments found.",
                                        "Current partition reassignments:"), r.stdout


def check_move_verify(r: subprocess.CompletedProcess) -> None:
    lines = r.stdout.splitlines()
    assert lines[0] == "Status of partition reassignment:", r.stdout
    for p, line in enumerate(lines[1:4]):
        assert line in (f"Reassignment of partition {MOVE_TOPIC}-{p} is completed.",
                        f"Reassignment of partition {MOVE_TOPIC}-{p} is still in progress."), \
            r.stdout


MOVE_CHECKS: list[tuple[str, Callable[[subprocess.CompletedProcess], None]]] = [
    (r"kafkapy-topics .*--create", check_move_create),
    (r"^echo .*> topics\.json$", check_move_file),
    (r"--generate", check_move_generate),
    (r"--execute", check_move_execute),
    (r"--list", check_move_list),
    (r"--verify", check_move_verify),
]


def run_moving_replicas(workspace: Workspace) -> None:
    """The "Moving replicas" block, command by command, with its variable assignments."""
    assignments, commands = moving_replicas_commands()
    for command, check in zip(commands, checks_for(commands, MOVE_CHECKS)):
        check(workspace.run("\n".join(assignments + [command])))
        if check is check_move_create:
            wait_for_topic(workspace, CLUSTER_PORTS[0], 3, MOVE_TOPIC)
        if check is check_move_generate:
            plan = json.loads((workspace.root / "plan.json").read_text())
            assert sorted(p["partition"] for p in plan["partitions"]) == [0, 1, 2], plan
            assert all(sorted(p["replicas"]) == [2, 3] for p in plan["partitions"]), plan


def test_a_cluster(workspace, make_run, readme_zookeeper):
    """Three brokers on one ZooKeeper, started as printed (one "terminal" each: a process
    group), then the topic commands through two different brokers; each broker stops on
    Ctrl-C with exit code 0 and a clean shutdown. ``make_run`` is here for the venv it
    builds (its broker, on another port and without ZooKeeper, does not matter)."""
    blocks = sh_blocks("A cluster")
    assert len(blocks) == 2, blocks
    lines = logical_lines(blocks[0])
    assignments = [line for line in lines if re.match(r"^[A-Za-z_]\w*=", line)]
    assert assignments == ['Z="--override zookeeper.connect=127.0.0.1:2181"'], assignments
    brokers = [cluster_broker(line) for line in lines if line not in assignments]
    assert sorted(b.broker_id for b in brokers) == CLUSTER_IDS, lines
    assert sorted(b.readme_port for b in brokers) == list(CLUSTER_PORTS), lines

    commands = logical_lines(blocks[1])
    checks = checks_for(commands, CLUSTER_CHECKS)
    started: list[Foreground] = []
    try:
        for b in brokers:
            started.append(workspace.start("\n".join(assignments + [b.command]),
                                           port=workspace.ports[b.readme_port]))
        wait_for_cluster(workspace, brokers)
        for command, check in zip(commands, checks):
            if check is check_cluster_describe:
                via = re.search(r"--bootstrap-server 127\.0\.0\.1:(\d+)\b", command)
                assert via and via.group(1) in CLUSTER_PORTS, command
                wait_for_topic(workspace, via.group(1), 6)
            check(workspace.run(command))
        run_moving_replicas(workspace)
        # One terminal after another; the last one stopped leads everything and has no
        # one to hand over to, so its controlled shutdown gives up after its retries.
        for b, fg in zip(brokers, started):
            assert_clean_stop(fg, workspace.root / b.log_dir)
            assert fg.proc.returncode == 0, fg.output()
            assert f"broker.id={b.broker_id}" in (
                workspace.root / b.log_dir / "meta.properties").read_text()
    finally:
        for fg in started:
            fg.kill()
