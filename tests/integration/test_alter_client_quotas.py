"""AlterClientQuotas and Kafka 3.9's kafka-configs.sh for clients, users and ips, compared
with Apache Kafka 3.9: both brokers on one ZooKeeper (own chroots), the same requests and
commands sent to both, the answers, the tool's output and the quota znodes (bytes) and
change notifications compared."""
from __future__ import annotations

import json
import shutil
import subprocess

import pytest

from tests.support.cluster import tool_env
from tests.support.sasl import KAFKA_HOME
from tests.support.side_by_side import side_by_side
from tests.support.wire import WireClient
from tests.support.zookeeper_server import zookeeper_server  # noqa: F401 (fixture)

pytestmark = pytest.mark.skipif(
    not (KAFKA_HOME / "bin" / "kafka-server-start.sh").exists() or not shutil.which("java"),
    reason="Kafka 3.9 or java missing")


def _entry(entity: list, ops: list) -> tuple:
    return ([(t, n) for t, n in entity],
            [(k, 0.0 if v is None else v, v is None) for k, v in ops])


U, C, IP = "user", "client-id", "ip"
# Each step: (entries, validate_only).
STEPS = [
    ([_entry([(C, "app")], [("producer_byte_rate", 1024.0), ("consumer_byte_rate", 2048.0)])], False),
    ([_entry([(U, "alice")], [("request_percentage", 12.5)]),
      _entry([(U, "alice"), (C, "app")], [("controller_mutation_rate", 1e7)]),
      _entry([(U, None)], [("producer_byte_rate", 300000.0)]),
      _entry([(U, "bob b"), (C, None)], [("consumer_byte_rate", 7.0)])], False),
    ([_entry([(IP, "127.0.0.1")], [("connection_creation_rate", 5.0)]),
      _entry([(IP, None)], [("connection_creation_rate", 9.0)])], False),
    ([_entry([(C, "validated")], [("producer_byte_rate", 10.0)])], True),
    # refusals
    ([_entry([], [("producer_byte_rate", 1.0)])], False),
    ([_entry([(C, "")], [("producer_byte_rate", 1.0)])], False),
    ([_entry([(C, "x")], [("producer_byte_rate", 1.5)])], False),
    ([_entry([(C, "x")], [("connection_creation_rate", 1.0)])], False),
    ([_entry([(IP, "127.0.0.1")], [("producer_byte_rate", 1.0)])], False),
    ([_entry([(U, "u"), (IP, "127.0.0.1")], [("producer_byte_rate", 1.0)])], False),
    ([_entry([(IP, "no such host.invalid")], [("connection_creation_rate", 1.0)])], False),
    ([_entry([("group", "g")], [("producer_byte_rate", 1.0)])], False),
    ([_entry([(U, "alice")], [("SCRAM-SHA-256", 1.0)])], False),
    # removals: the nodes are cleaned up once empty
    ([_entry([(U, "alice"), (C, "app")], [("controller_mutation_rate", None)]),
      _entry([(U, "bob b"), (C, None)], [("consumer_byte_rate", None)]),
      _entry([(C, "app")], [("producer_byte_rate", None)])], False),
    ([_entry([(C, "dup")], [("producer_byte_rate", 1.0)]),
      _entry([(C, "dup")], [("producer_byte_rate", 2.5)])], False),
]


@pytest.fixture(scope="module")
def brokers(tmp_path_factory, zookeeper_server):  # noqa: F811
    with side_by_side(tmp_path_factory.mktemp("quotas"), zookeeper_server, "aq") as pair:
        yield {"kafka": (pair.kafka, pair.roots["kafka"]),
               "kafkapy": (pair.kafkapy, pair.roots["kafkapy"])}, pair.zk


def _tree(zk, root: str) -> dict:
    out = {}
    for kind in ("users", "clients", "ips"):
        stack = [f"{root}/config/{kind}"]
        while stack:
            path = stack.pop()
            if zk.exists(path) is None:
                continue
            # nodes made as parents: kafkapy's store writes empty data, Kafka's null
            out[path[len(root):]] = zk.get(path)[0] or b""
            stack += [f"{path}/{c}" for c in zk.get_children(path)]
    return out


def _notified(zk, root: str) -> list:
    children = sorted(zk.get_children(f"{root}/config/changes"))
    return [json.loads(zk.get(f"{root}/config/changes/{c}")[0]) for c in children]


def _canonical(response) -> list:
    return [(e[0], e[1], [tuple(x) for x in e[2]]) for e in response.entries]


def test_same_answers_znodes_and_notifications_as_kafka(brokers):
    sides, zk = brokers
    conns = {name: WireClient(broker.bootstrap) for name, (broker, _) in sides.items()}
    try:
        for version in (0, 1):
            for entries, validate_only in STEPS:
                answers = {name: _canonical(conn.request(49, version, entries=entries,
                                                         validate_only=validate_only))
                           for name, conn in conns.items()}
                assert answers["kafkapy"] == answers["kafka"], (version, entries)
            trees = {name: _tree(zk, root) for name, (_, root) in sides.items()}
            assert trees["kafkapy"] == trees["kafka"]
        notes = {name: _notified(zk, root) for name, (_, root) in sides.items()}
        assert notes["kafkapy"] == notes["kafka"]
        described = {name: conn.request(48, 1, components=[], strict=False)
                     for name, conn in conns.items()}
        assert (sorted(map(repr, _describe_entries(described["kafkapy"])))
                == sorted(map(repr, _describe_entries(described["kafka"]))))
        assert described["kafkapy"].entries
    finally:
        for conn in conns.values():
            conn.close()


def _describe_entries(response) -> list:
    return [(sorted(map(tuple, e[0])), sorted(map(tuple, e[1]))) for e in response.entries]


COMMANDS = [
    ["--alter", "--entity-type", "clients", "--entity-name", "tool-app",
     "--add-config", "producer_byte_rate=400000,consumer_byte_rate=500000"],
    ["--alter", "--entity-type", "users", "--entity-name", "carol", "--entity-type", "clients",
     "--entity-default", "--add-config", "request_percentage=25"],
    ["--alter", "--entity-type", "clients", "--entity-name", "tool-app",
     "--delete-config", "consumer_byte_rate"],
    ["--describe", "--entity-type", "clients", "--entity-name", "tool-app"],
    ["--describe", "--entity-type", "users", "--entity-name", "carol", "--entity-type", "clients",
     "--entity-default"],
]


def test_kafka_configs_tool_on_both(brokers):
    sides, zk = brokers
    tool = str(KAFKA_HOME / "bin" / "kafka-configs.sh")
    for command in COMMANDS:
        outputs = {}
        for name, (broker, _) in sides.items():
            run = subprocess.run([tool, "--bootstrap-server", broker.bootstrap, *command],
                                 capture_output=True, text=True, timeout=120, env=tool_env())
            outputs[name] = (run.returncode, run.stdout)
        assert outputs["kafkapy"] == outputs["kafka"], command
        assert outputs["kafkapy"][0] == 0, command
    trees = {name: _tree(zk, root) for name, (_, root) in sides.items()}
    assert trees["kafkapy"] == trees["kafka"]
    assert "/config/clients/tool-app" in trees["kafkapy"]


OUR_COMMANDS = [
    ["--alter", "--entity-type", "clients", "--entity-name", "ours-app",
     "--add-config", "producer_byte_rate=400000,consumer_byte_rate=500000"],
    ["--alter", "--entity-type", "clients", "--entity-default",
     "--add-config", "request_percentage=12.5"],
    ["--alter", "--entity-type", "users", "--entity-name", "dave", "--entity-type", "clients",
     "--entity-name", "ours-app", "--add-config", "controller_mutation_rate=10"],
    ["--alter", "--entity-type", "users", "--entity-default",
     "--add-config", "consumer_byte_rate=300000"],
    ["--alter", "--entity-type", "ips", "--entity-name", "127.0.0.3",
     "--add-config", "connection_creation_rate=3"],
    ["--alter", "--entity-type", "clients", "--entity-name", "ours-app",
     "--delete-config", "consumer_byte_rate"],
    ["--alter", "--entity-type", "clients", "--entity-name", "ours-app",
     "--delete-config", "consumer_byte_rate"],
    ["--describe", "--entity-type", "clients"],
    ["--describe", "--entity-type", "users", "--entity-name", "dave", "--entity-type", "clients"],
    ["--describe", "--entity-type", "users", "--entity-default"],
    ["--describe", "--entity-type", "ips", "--entity-name", "127.0.0.3"],
]


def test_kafkapy_configs_as_kafka_configs(brokers, capsys):
    """kafkapy-configs on kafkapy prints what kafka-configs.sh prints on Kafka 3.9 (exit
    codes, and stdout, or the first line of the reason for a refusal), and leaves the same
    znodes."""
    from kafkapy.cli import configs
    sides, zk = brokers
    tool = str(KAFKA_HOME / "bin" / "kafka-configs.sh")
    for command in OUR_COMMANDS:
        run = subprocess.run([tool, "--bootstrap-server", sides["kafka"][0].bootstrap, *command],
                             capture_output=True, text=True, timeout=120, env=tool_env())
        code = configs.main(["--bootstrap-server", sides["kafkapy"][0].bootstrap, *command])
        out, err = capsys.readouterr()
        assert (code, out) == (run.returncode, run.stdout), (command, err, run.stderr)
        if code:
            assert run.stderr.splitlines()[0] in err, (command, err, run.stderr)
    trees = {name: _tree(zk, root) for name, (_, root) in sides.items()}
    assert trees["kafkapy"] == trees["kafka"]
