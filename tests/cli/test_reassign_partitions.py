"""``kafkapy-reassign-partitions`` against Kafka 3.9's ``kafka-reassign-partitions.sh``.

Three parts:

* Options, usage errors and plan-file errors, with no broker (an unreachable bootstrap
  server: Kafka's tool, like this one, checks the files before it talks to a broker). The
  expected lines are what Kafka 3.9's tool prints for the same command lines (recorded from
  ``bin/kafka-reassign-partitions.sh``; usage errors on stderr, failures "Error: ..." on
  stdout, exit 1).  The Java hash-set order the tool reproduces is checked on its own.
* ``--generate`` on a three-broker cluster (``tests/cluster`` fixtures), run with both tools on
  the same cluster: the "Current partition replica assignment" part is byte-identical, and each
  proposal (random, as Kafka's) is one Kafka's placement could give.
* ``--execute`` (with ``--throttle``), ``--verify``, ``--list``, ``--additional`` and
  ``--cancel`` end to end: the output of each command is compared with Kafka's tool run on the
  same cluster state, and the throttle configs are read back with kafka-python.  A
  reassignment is kept in flight by a 1 KB/s throttle over a partition holding more than one
  fetch (replica.fetch.max.bytes) of records: the first fetch passes, the rest waits for the
  quota.

The cluster is kafkapy's, or with ``KAFKAPY_CLUSTER_REFERENCE=kafka`` Kafka 3.9's (which checks
that the expectations are Kafka's).  Every wait is bounded.
"""
from __future__ import annotations

import itertools
import json
import re
import subprocess
import sys
from pathlib import Path

import pytest

from kafkapy.cli import reassign_partitions as tool
from kafkapy.admin.assignment import assign_replicas
from tests.support import cluster_clients as clients
from tests.support.cluster import (kafka_tool, running_cluster, shared_cluster,  # noqa: F401
                                    unique, wait_for)
from tests.support.zookeeper_server import zookeeper_server  # noqa: F401 (fixture)

EXE = Path(sys.executable).parent / "kafkapy-reassign-partitions"
NOWHERE = "127.0.0.1:1"
CANNOT_EXECUTE = ("Cannot execute because there is an existing partition assignment.  Use "
                  "--additional to override this and create a new partition assignment in "
                  "addition to the existing one. The --additional flag can also be used to "
                  "change the throttle by resubmitting the current reassignment.")
RUN_VERIFY = ("Warning: You must run --verify periodically, until the reassignment completes, "
              "to ensure the throttle is removed.")
BROKER_RATES = ("leader.replication.throttled.rate", "follower.replication.throttled.rate")
TOPIC_LISTS = ("leader.replication.throttled.replicas", "follower.replication.throttled.replicas")


def run(*args: str, timeout: float = 120.0) -> subprocess.CompletedProcess:
    assert EXE.is_file(), f"{EXE} is missing: install the console scripts (pip install -e .)"
    return clients.kafkapy_tool(EXE.name, *args, timeout=timeout)


def both(bootstrap: str, *args: str) -> tuple[subprocess.CompletedProcess, ...]:
    """Kafka's tool, then kafkapy's, with the same arguments."""
    kafka = kafka_tool("kafka-reassign-partitions.sh", "--bootstrap-server", bootstrap, *args)
    return kafka, run("--bootstrap-server", bootstrap, *args)


def write(tmp_path: Path, name: str, content) -> str:
    path = tmp_path / name
    path.write_text(content if isinstance(content, str) else json.dumps(content))
    return str(path)


def plan(*parts: tuple[str, int, list[int]]) -> dict:
    return {"version": 1, "partitions": [{"topic": t, "partition": p, "replicas": r}
                                         for t, p, r in parts]}


# --------------------------------------------------------------------------- no broker

USAGE_CASES = [
    (["--bootstrap-server", NOWHERE],
     "Command must include exactly one action: --generate, --execute, --verify, --cancel, "
     "--list"),
    (["--list", "--generate", "--bootstrap-server", NOWHERE],
     "Command must include exactly one action: --generate, --execute, --verify, --cancel, "
     "--list"),
    (["--list"], "Please specify --bootstrap-server"),
    (["--generate"], "Please specify --bootstrap-server"),
    (["--generate", "--bootstrap-server", NOWHERE],
     'Missing required argument "[topics-to-move-json-file]"'),
    (["--generate", "--bootstrap-server", NOWHERE, "--topics-to-move-json-file", "x"],
     'Missing required argument "[broker-list]"'),
    (["--execute", "--bootstrap-server", NOWHERE],
     'Missing required argument "[reassignment-json-file]"'),
    (["--verify", "--bootstrap-server", NOWHERE],
     'Missing required argument "[reassignment-json-file]"'),
    (["--cancel", "--bootstrap-server", NOWHERE],
     'Missing required argument "[reassignment-json-file]"'),
    (["--list", "--bootstrap-server", NOWHERE, "--throttle", "5"],
     'Option "[throttle]" can\'t be used with action "[list]"'),
    (["--list", "--bootstrap-server", NOWHERE, "--preserve-throttles"],
     'Option "[preserve-throttles]" can\'t be used with action "[list]"'),
    (["--verify", "--reassignment-json-file", "x", "--bootstrap-server", NOWHERE,
      "--additional", "--throttle", "1"],
     'Option "[additional]" can\'t be used with action "[verify]"'),
    (["--execute", "--reassignment-json-file", "x", "--bootstrap-server", NOWHERE,
      "--preserve-throttles"],
     'Option "[preserve-throttles]" can\'t be used with action "[execute]"'),
    (["--generate", "--topics-to-move-json-file", "x", "--broker-list", "1",
      "--bootstrap-server", NOWHERE, "--reassignment-json-file", "y"],
     'Option "[reassignment-json-file]" can\'t be used with action "[generate]"'),
    (["--cancel", "--reassignment-json-file", "x", "--bootstrap-server", NOWHERE,
      "--disable-rack-aware"],
     'Option "[disable-rack-aware]" can\'t be used with action "[cancel]"'),
]


@pytest.mark.parametrize("args,message", USAGE_CASES)
def test_usage_errors_are_kafkas(args, message):
    result = run(*args)
    assert result.returncode == 1
    assert result.stdout == ""
    assert result.stderr.splitlines()[0] == message
    assert "usage: kafkapy-reassign-partitions" in result.stderr


def test_no_arguments_print_the_help_and_fail():
    result = run()
    assert result.returncode == 1
    assert "This tool helps to move topic partitions between replicas." in result.stderr


def test_version_and_unknown_options():
    version = run("--version")
    assert version.returncode == 0 and version.stdout.strip()
    unknown = run("--list", "--bootstrap-server", NOWHERE, "--foo")
    assert unknown.returncode == 1
    assert unknown.stderr.splitlines()[0] == "foo is not a recognized option"
    # joptsimple (allowing no abbreviations) refuses a prefix of an option too.
    prefix = run("--list", "--boot", NOWHERE)
    assert prefix.returncode == 1
    assert prefix.stderr.splitlines()[0] == "boot is not a recognized option"


def test_help_lists_kafkas_options():
    result = run("--help")
    assert result.returncode == 0
    for option in ("--additional", "--bootstrap-server", "--broker-list", "--cancel",
                   "--command-config", "--disable-rack-aware", "--execute", "--generate",
                   "--help", "--list", "--preserve-throttles", "--reassignment-json-file",
                   "--replica-alter-log-dirs-throttle", "--throttle", "--timeout",
                   "--topics-to-move-json-file", "--verify", "--version"):
        assert option in result.stdout, option


TOPICS_FILE_CASES = [
    ("{}", "1,2", None),   # no topics: not an error (see the cluster test for the output)
    ('{"topics":[{"topic":"foo"},{"topic":"foo"}]}', "1,2",
     "Error: List of topics to reassign contains duplicate entries: [foo]"),
    ('{"topics":[{"topic":"foo"}]}', "1,1,2", "Error: Broker list contains duplicate entries: [1]"),
    ('{"topics":[{"topic":"foo"}]}', "3,2,2,3",
     "Error: Broker list contains duplicate entries: [2, 3]"),
    ('{"topics":[{"topic":"foo"}]}', "1,x", 'Error: For input string: "x"'),
    ("garbage", "1,2", "Error: The input string is not a valid JSON"),
    ('{"topics":[{"topic":"foo"}],"version":2}', "1,2",
     "Error: Not supported version field value 2"),
    ('{"topics":[{"name":"foo"}]}', "1,2", "Error: No such field exists: `topic`"),
    ('{"topics":[{"topic":7}]}', "1,2", "Error: Expected `String` value, received 7"),
]


@pytest.mark.parametrize("content,brokers,first_line", TOPICS_FILE_CASES[1:])
def test_generate_input_errors(tmp_path, content, brokers, first_line):
    topics = write(tmp_path, "topics.json", content)
    result = run("--bootstrap-server", NOWHERE, "--generate", "--topics-to-move-json-file",
                 topics, "--broker-list", brokers)
    assert (result.returncode, result.stdout) == (1, first_line + "\n"), result.stderr


PLAN_CASES = [
    ('{"version":1,"partitions":[]}', "Error: Partition reassignment list cannot be empty"),
    ('{"partitions":[{"topic":"foo","partition":0,"replicas":[]}]}',
     "Error: Partition replica list cannot be empty"),
    ('{"partitions":[{"topic":"foo","partition":0,"replicas":[1,2]},'
     '{"topic":"foo","partition":0,"replicas":[1,3]}]}',
     "Error: Partition reassignment contains duplicate topic partitions: foo-0"),
    ('{"partitions":[{"topic":"foo","partition":0,"replicas":[1,1,2]},'
     '{"topic":"foo","partition":1,"replicas":[3,3]}]}',
     "Error: Partition replica lists may not contain duplicate entries: foo-0 contains "
     "multiple entries for 1. foo-1 contains multiple entries for 3"),
    ('{"partitions":[{"topic":"foo","partition":0,"replicas":[1,2],"log_dirs":["any"]}]}',
     "Error: Size of replicas list [1, 2] is different from size of log dirs list [any] for "
     "partition foo-0"),
    ('{"partitions":[{"topic":"foo","partition":0}]}', "Error: No such field exists: `replicas`"),
    ('{"partitions":[{"topic":"foo","partition":"x","replicas":[1]}]}',
     'Error: Expected `Integer` value, received "x"'),
    ("[1]", "Error: Expected JSON object, received [1]"),
    ("", "Error: Expected JSON object, received "),
    ('{"version":3,"partitions":[]}', "Error: Not supported version field value 3"),
]


@pytest.mark.parametrize("content,first_line", PLAN_CASES)
def test_execute_plan_errors(tmp_path, content, first_line):
    path = write(tmp_path, "plan.json", content)
    result = run("--bootstrap-server", NOWHERE, "--execute", "--reassignment-json-file", path)
    assert (result.returncode, result.stdout) == (1, first_line + "\n"), result.stderr


def test_option_values_and_missing_files(tmp_path):
    path = write(tmp_path, "plan.json", '{"version":1,"partitions":[]}')
    result = run("--bootstrap-server", NOWHERE, "--execute", "--reassignment-json-file", path,
                 "--throttle", "abc")
    assert (result.returncode, result.stdout) == (
        1, "Error: Cannot parse argument 'abc' of option throttle\n")
    missing = str(tmp_path / "absent.json")
    result = run("--bootstrap-server", NOWHERE, "--verify", "--reassignment-json-file", missing)
    assert (result.returncode, result.stdout) == (1, f"Error: Unable to read file {missing}\n")


def test_java_hash_set_order():
    # Kafka 3.9 printed "Clearing topic-level throttles on topics bar,foo"; the rest is what
    # java.util.HashSet (Java 17) prints for the same insertions.
    assert tool.java_set_order(["foo", "bar"], tool.string_hash) == ["bar", "foo"]
    assert tool.java_set_order([3, 1, 2, 17], tool.int_hash) == [1, 17, 2, 3]
    assert tool.java_set_order(["zeta", "foo", "bar", "alpha-topic", "t-1", "t-10"],
                            tool.string_hash) == ["zeta", "bar", "foo", "t-1", "alpha-topic",
                                                   "t-10"]
    assert tool.string_hash("a-much-longer-topic-name") == 260706745 == _java_string_hash(
        "a-much-longer-topic-name")


def _java_string_hash(text: str) -> int:
    h = 0
    for ch in text:
        h = (31 * h + ord(ch)) & 0xFFFFFFFF
    return h - (1 << 32) if h >= 1 << 31 else h


# --------------------------------------------------------------------------- the cluster

def _placements(brokers: list[int], partitions: int, rf: int) -> list[dict[int, list[int]]]:
    """Every assignment Kafka's rack-unaware placement can give (each start and shift)."""
    n = len(brokers)
    return [assign_replicas(brokers, partitions, rf, start_index=start, replica_shift=shift)
            for start, shift in itertools.product(range(n), range(n))]


def _generated(result: subprocess.CompletedProcess) -> tuple[str, dict]:
    assert result.returncode == 0, result.stdout + result.stderr
    lines = result.stdout.splitlines()
    assert lines[0] == "Current partition replica assignment"
    assert lines[2:4] == ["", "Proposed partition reassignment configuration"]
    assert len(lines) == 5
    return lines[1], json.loads(lines[4])


def test_generate_matches_kafkas_tool(shared_cluster, unique, tmp_path):
    c = shared_cluster
    spread, single = unique("gen-spread"), unique("gen-single")
    clients.create_topic(c.bootstrap(1), spread, assignment={0: [1, 2], 1: [2, 3], 2: [3, 1],
                                                             3: [1, 3]})
    clients.create_topic(c.bootstrap(1), single, assignment={0: [3], 1: [2]})
    c.wait_topic(spread, 4)
    c.wait_topic(single, 2)
    topics = write(tmp_path, "topics.json", {"topics": [{"topic": spread}, {"topic": single}],
                                             "version": 1})
    kafka, ours = both(c.bootstrap(2), "--generate", "--topics-to-move-json-file", topics,
                       "--broker-list", "1,2,3")
    (kafka_current, kafka_proposal), (current, proposal) = _generated(kafka), _generated(ours)
    assert current == kafka_current
    assert json.loads(current)["partitions"][0] == {
        "topic": single if single < spread else spread, "partition": 0,
        "replicas": [3] if single < spread else [1, 2],
        "log_dirs": ["any"] if single < spread else ["any", "any"]}
    for proposed in (kafka_proposal, proposal):
        by_topic: dict[str, dict[int, list[int]]] = {}
        for entry in proposed["partitions"]:
            assert entry["log_dirs"] == ["any"] * len(entry["replicas"])
            by_topic.setdefault(entry["topic"], {})[entry["partition"]] = entry["replicas"]
        assert by_topic[spread] in _placements([1, 2, 3], 4, 2)
        assert by_topic[single] in _placements([1, 2, 3], 2, 1)
    # Brokers the cluster lacks are left out; too few left for the replication factor.
    kafka, ours = both(c.bootstrap(2), "--generate", "--topics-to-move-json-file", topics,
                       "--broker-list", "3,7")
    assert (ours.returncode, ours.stdout) == (kafka.returncode, kafka.stdout.splitlines()[0]
                                              + "\n")
    assert ours.stdout == "Error: Replication factor: 2 larger than available brokers: 1.\n"
    missing = write(tmp_path, "missing.json", {"topics": [{"topic": unique("absent")}]})
    kafka, ours = both(c.bootstrap(2), "--generate", "--topics-to-move-json-file", missing,
                       "--broker-list", "1,2")
    assert ours.returncode == kafka.returncode == 1
    assert ours.stdout == kafka.stdout.splitlines()[0] + "\n"
    assert ours.stdout.endswith(f"Topic {unique('absent')} not found.\n")


def _configs(bootstrap: str, kind: str, names: list[str]) -> dict[str, dict[str, str]]:
    """The modified (non-default) configs of brokers or topics, through kafka-python:
    {name: {key: value}}."""
    from kafka.admin import ConfigResource, ConfigResourceType, KafkaAdminClient
    admin = KafkaAdminClient(bootstrap_servers=bootstrap)
    try:
        described = admin.describe_configs(
            [ConfigResource(getattr(ConfigResourceType, kind), name) for name in names])
    finally:
        admin.close()
    by_name = described[kind.lower()]
    return {name: {k: v["value"] for k, v in by_name.get(name, {}).items()
                   if v.get("value") is not None} for name in names}


def _throttles(c, topic: str) -> tuple[dict, dict]:
    brokers = _configs(c.bootstrap(1), "BROKER", ["1", "2", "3"])
    topics = _configs(c.bootstrap(1), "TOPIC", [topic])
    return ({b: {k: v for k, v in cfg.items() if k in BROKER_RATES} for b, cfg in brokers.items()},
            {k: v for k, v in topics[topic].items() if k in TOPIC_LISTS})


def _produce_bulk(bootstrap: str, topic: str, partition: int, size: int) -> None:
    """``size`` bytes of 1000-byte records, acknowledged by every replica."""
    from kafka import KafkaProducer
    producer = KafkaProducer(bootstrap_servers=bootstrap, acks="all", linger_ms=5,
                             batch_size=256 * 1024, max_request_size=4 * 1024 * 1024)
    try:
        for i in range(size // 1000):
            producer.send(topic, b"%06d" % i + b"x" * 994, partition=partition)
        producer.flush(timeout=120)
    finally:
        producer.close()


def _verify_until_done(bootstrap: str, path: str, timeout: float = 120.0) -> str:
    def done():
        result = run("--bootstrap-server", bootstrap, "--verify", "--reassignment-json-file",
                     path, "--preserve-throttles")
        assert result.returncode == 0, result.stdout + result.stderr
        return result.stdout if "still in progress" not in result.stdout else None
    return wait_for(done, timeout, f"the reassignment in {path} to complete", interval=1.0)


def test_execute_throttle_verify_end_to_end(shared_cluster, unique, tmp_path):
    """The output of each step is Kafka's (Kafka's tool answers the same questions on the same
    state before and after), and the throttles are set and then cleared."""
    c = shared_cluster
    topic = unique("move")
    clients.create_topic(c.bootstrap(1), topic, assignment={0: [1, 2], 1: [2, 3]})
    c.wait_topic(topic, 2)
    path = write(tmp_path, "plan.json", plan((topic, 0, [2, 3]), (topic, 1, [2, 3])))
    result = run("--bootstrap-server", c.bootstrap(3), "--execute", "--reassignment-json-file",
                 path, "--throttle", "10000000")
    current = (f'{{"version":1,"partitions":[{{"topic":"{topic}","partition":0,"replicas":[1,2],'
               f'"log_dirs":["any","any"]}},{{"topic":"{topic}","partition":1,"replicas":[2,3],'
               f'"log_dirs":["any","any"]}}]}}')
    assert (result.returncode, result.stderr) == (0, "")
    assert result.stdout.splitlines() == [
        "Current partition replica assignment", "", current, "",
        "Save this to use as the --reassignment-json-file option during rollback",
        RUN_VERIFY,
        "The inter-broker throttle limit was set to 10000000 B/s",
        f"Successfully started partition reassignments for {topic}-0,{topic}-1"]
    rates, lists = _throttles(c, topic)
    # Leader side: every source replica; follower side: the new one; rates on every broker
    # involved (1 gives up a replica, 3 takes one, 2 stays).
    assert lists == {"leader.replication.throttled.replicas": "0:1,0:2,1:2,1:3",
                     "follower.replication.throttled.replicas": "0:3"}
    assert rates == {b: dict.fromkeys(BROKER_RATES, "10000000") for b in ("1", "2", "3")}

    status = _verify_until_done(c.bootstrap(1), path)
    assert status.splitlines() == ["Status of partition reassignment:",
                                   f"Reassignment of partition {topic}-0 is completed.",
                                   f"Reassignment of partition {topic}-1 is completed.", ""]
    kafka, ours = both(c.bootstrap(1), "--verify", "--reassignment-json-file", path,
                       "--preserve-throttles")
    assert (ours.returncode, ours.stdout) == (kafka.returncode, kafka.stdout)
    assert _throttles(c, topic)[1] == lists        # preserved

    result = run("--bootstrap-server", c.bootstrap(1), "--verify", "--reassignment-json-file",
                 path)
    assert result.returncode == 0
    assert result.stdout.splitlines()[-2:] == ["Clearing broker-level throttles on brokers 1,2,3",
                                               f"Clearing topic-level throttles on topic {topic}"]
    rates, lists = _throttles(c, topic)
    assert lists == {} and rates == {"1": {}, "2": {}, "3": {}}
    kafka, ours = both(c.bootstrap(1), "--verify", "--reassignment-json-file", path)
    assert (ours.returncode, ours.stdout) == (kafka.returncode, kafka.stdout)
    assert clients.describe_topic(c.bootstrap(1), topic)[0]["Replicas"] == [2, 3]

    # A partition no longer where the plan says: Kafka's "There is no active reassignment".
    other = write(tmp_path, "other.json", plan((topic, 0, [3, 1])))
    kafka, ours = both(c.bootstrap(1), "--verify", "--reassignment-json-file", other,
                       "--preserve-throttles")
    assert (ours.returncode, ours.stdout) == (kafka.returncode, kafka.stdout)
    assert ours.stdout.splitlines()[1] == (f"There is no active reassignment of partition "
                                           f"{topic}-0, but replica set is 2,3 rather than 3,1.")


def test_execute_errors_match_kafkas(shared_cluster, unique, tmp_path):
    c = shared_cluster
    topic = unique("errs")
    clients.create_topic(c.bootstrap(1), topic, assignment={0: [1, 2]})
    c.wait_topic(topic, 1)
    for name, content in {
            "unknown-broker": plan((topic, 0, [1, 7])),
            "unknown-partition": plan((topic, 4, [1, 2])),
            "unknown-topic": plan((unique("absent"), 0, [1, 2]))}.items():
        path = write(tmp_path, f"{name}.json", content)
        kafka, ours = both(c.bootstrap(2), "--execute", "--reassignment-json-file", path)
        assert ours.returncode == kafka.returncode == 1, name
        assert ours.stdout == kafka.stdout.splitlines()[0] + "\n", name
    assert "No partition reassignments found." in run(
        "--bootstrap-server", c.bootstrap(2), "--list").stdout


def test_in_flight_list_additional_and_cancel(shared_cluster, unique, tmp_path):
    """A move held back by a 1 KB/s throttle: --list and --verify show it, --execute refuses a
    second one without --additional, --additional changes the throttle, --cancel reverts it."""
    c = shared_cluster
    topic = unique("slow")
    clients.create_topic(c.bootstrap(1), topic, assignment={0: [1]})
    c.wait_topic(topic, 1)
    _produce_bulk(c.bootstrap(1), topic, 0, 3 * 1024 * 1024)
    path = write(tmp_path, "plan.json", plan((topic, 0, [2])))
    result = run("--bootstrap-server", c.bootstrap(1), "--execute", "--reassignment-json-file",
                 path, "--throttle", "1000")
    assert result.returncode == 0, result.stdout + result.stderr
    assert result.stdout.splitlines()[-1] == (f"Successfully started partition reassignment for "
                                              f"{topic}-0")

    listed = run("--bootstrap-server", c.bootstrap(2), "--list")
    assert listed.stdout.splitlines() == ["Current partition reassignments:",
                                          f"{topic}-0: replicas: 2,1. adding: 2. removing: 1."]
    kafka, ours = both(c.bootstrap(2), "--list")
    assert (ours.returncode, ours.stdout) == (kafka.returncode, kafka.stdout)
    kafka, ours = both(c.bootstrap(2), "--verify", "--reassignment-json-file", path)
    assert (ours.returncode, ours.stdout) == (kafka.returncode, kafka.stdout)
    assert ours.stdout.splitlines() == ["Status of partition reassignment:",
                                        f"Reassignment of partition {topic}-0 is still in "
                                        "progress.", ""]   # nothing cleared while in flight
    assert _throttles(c, topic)[1]["follower.replication.throttled.replicas"] == "0:2"

    kafka, ours = both(c.bootstrap(2), "--execute", "--reassignment-json-file", path)
    assert (ours.returncode, ours.stdout) == (kafka.returncode, kafka.stdout) == (
        1, CANNOT_EXECUTE + "\n")

    result = run("--bootstrap-server", c.bootstrap(3), "--execute", "--reassignment-json-file",
                 path, "--additional", "--throttle", "2000")
    assert result.returncode == 0, result.stdout + result.stderr
    assert result.stdout.splitlines()[2] == (
        f'{{"version":1,"partitions":[{{"topic":"{topic}","partition":0,"replicas":[2,1],'
        f'"log_dirs":["any","any"]}}]}}')
    assert "The inter-broker throttle limit was set to 2000 B/s" in result.stdout
    rates, lists = _throttles(c, topic)
    assert lists == {"leader.replication.throttled.replicas": "0:1",
                     "follower.replication.throttled.replicas": "0:2"}
    assert rates["1"] == rates["2"] == dict.fromkeys(BROKER_RATES, "2000")

    cancelled = run("--bootstrap-server", c.bootstrap(2), "--cancel", "--reassignment-json-file",
                    path)
    assert cancelled.returncode == 0, cancelled.stdout + cancelled.stderr
    assert cancelled.stdout == (f"Successfully cancelled partition reassignment for: {topic}-0\n"
                                "None of the specified partition moves are active."
                                "Clearing broker-level throttles on brokers 1,2,3\n"
                                f"Clearing topic-level throttles on topic {topic}\n")
    assert run("--bootstrap-server", c.bootstrap(1), "--list").stdout == (
        "No partition reassignments found.\n")
    wait_for(lambda: clients.describe_topic(c.bootstrap(1), topic)[0]["Replicas"] == [1], 30,
             "the original replica back")
    rates, lists = _throttles(c, topic)
    assert lists == {} and rates == {"1": {}, "2": {}, "3": {}}
    kafka, ours = both(c.bootstrap(2), "--cancel", "--reassignment-json-file", path)
    assert (ours.returncode, ours.stdout) == (kafka.returncode, kafka.stdout)
    assert ours.stdout.startswith("None of the specified partition reassignments are active.\n")


# --------------------------------------------------------------------------- leader election

def _unbalance(c, topic: str, tmp_path: Path, name: str) -> None:
    """Reverse each partition's replica list by reassignment: the leader stays (it is still a
    replica), so it is no longer the preferred one."""
    described = clients.describe_topic(c.bootstrap(1), topic)
    reversed_plan = plan(*((topic, p, row["Replicas"][::-1]) for p, row in described.items()))
    path = write(tmp_path, f"{name}.json", reversed_plan)
    result = run("--bootstrap-server", c.bootstrap(1), "--execute", "--reassignment-json-file",
                 path)
    assert result.returncode == 0, result.stdout + result.stderr
    _verify_until_done(c.bootstrap(1), path, timeout=60)

    def unbalanced():
        rows = clients.describe_topic(c.bootstrap(1), topic)
        return all(row["Leader"] != row["Replicas"][0] for row in rows.values())
    wait_for(unbalanced, 30, f"{topic}'s leaders off their preferred replicas")


def test_leader_election_output_matches_kafkas(shared_cluster, unique, tmp_path):
    """kafka-leader-election.sh and kafkapy-leader-election with ``--election-type preferred
    --all-topic-partitions`` on the same imbalance print the same bytes (Kafka's HashSet order
    of the partitions)."""
    c = shared_cluster
    topic = unique("elect")
    clients.create_topic(c.bootstrap(1), topic, assignment={0: [1, 2], 1: [2, 3], 2: [3, 1],
                                                            3: [1, 3], 4: [2, 1]})
    c.wait_topic(topic, 5)
    settle = ("--bootstrap-server", c.bootstrap(2), "--election-type", "preferred",
              "--all-topic-partitions")
    kafka_tool("kafka-leader-election.sh", *settle)    # every other topic balanced first
    outputs = {}
    for name in ("kafka", "kafkapy"):
        _unbalance(c, topic, tmp_path, name)
        if name == "kafka":
            result = kafka_tool("kafka-leader-election.sh", *settle)
        else:
            result = clients.kafkapy_tool("kafkapy-leader-election", *settle)
        assert result.returncode == 0, result.stdout + result.stderr
        outputs[name] = result.stdout
        wait_for(lambda: all(row["Leader"] == row["Replicas"][0] for row in
                             clients.describe_topic(c.bootstrap(1), topic).values()),
                 30, f"{topic}'s preferred leaders back after {name}'s election")
    assert outputs["kafkapy"] == outputs["kafka"]
    elected = [f"{t}-{p}" for t, p in tool.java_set_order([(topic, p) for p in range(5)],
                                                          tool.topic_partition_hash)]
    assert outputs["kafkapy"] == ("Successfully completed leader election (PREFERRED) for "
                                  f"partitions {', '.join(elected)}\n")


# --------------------------------------------------------------------------- README

README_PORTS = {"9101": 1, "9102": 2, "9103": 3}


def test_readme_moving_replicas_runs_as_printed(shared_cluster, tmp_path):
    """The README's commands, on this cluster (its brokers 1-3 stand for 127.0.0.1:9101-9103,
    as in the README's "A cluster"), from a directory whose ``.venv`` is this one."""
    c = shared_cluster
    (tmp_path / ".venv").symlink_to(Path(sys.executable).parents[1])
    from tests.support.readme import moving_replicas_commands
    assignments, commands = moving_replicas_commands()
    results = []
    for command in commands:
        script = "\n".join(assignments + [command])
        for port, node in README_PORTS.items():
            script = script.replace(f"127.0.0.1:{port}", c.bootstrap(node))
        result = subprocess.run(["bash", "-euo", "pipefail", "-c", script], cwd=tmp_path,
                                capture_output=True, text=True, timeout=120,
                                stdin=subprocess.DEVNULL)
        assert result.returncode == 0, f"{command}\n{result.stdout}{result.stderr}"
        results.append((command, result.stdout))
        if "--create" in command:
            c.wait_topic("refunds", 3)
    assert [re.search(r"^echo|--(create|generate|execute|list|verify)", cmd).group(0)
            for cmd, _ in results] == ["--create", "echo", "--generate", "--execute", "--list",
                                       "--verify"]
    planned = json.loads((tmp_path / "plan.json").read_text())
    assert sorted(p["partition"] for p in planned["partitions"]) == [0, 1, 2]
    assert all(sorted(p["replicas"]) == [2, 3] for p in planned["partitions"])
    execute, listed, verify = (out for cmd, out in results[3:])
    assert execute.splitlines()[-1] == ("Successfully started partition reassignments for "
                                        "refunds-0,refunds-1,refunds-2")
    assert listed.splitlines()[0] in ("No partition reassignments found.",
                                      "Current partition reassignments:")
    status = verify.splitlines()
    assert status[0] == "Status of partition reassignment:"
    for p, line in enumerate(status[1:4]):
        # The tool asks the controller which reassignments run and any broker for the
        # replicas; that broker learns the final set from UpdateMetadata a moment after the
        # controller finished (Kafka's order too), so a just-finished partition may show
        # its old set once.
        assert (line in (f"Reassignment of partition refunds-{p} is completed.",
                         f"Reassignment of partition refunds-{p} is still in progress.")
                or re.fullmatch(rf"There is no active reassignment of partition refunds-{p}, "
                                rf"but replica set is [\d,]+ rather than [\d,]+\.", line)
                ), verify
    _verify_until_done(c.bootstrap(1), str(tmp_path / "plan.json"))
    run("--bootstrap-server", c.bootstrap(1), "--verify", "--reassignment-json-file",
        str(tmp_path / "plan.json"))
    rates, lists = _throttles(c, "refunds")
    assert lists == {} and rates == {"1": {}, "2": {}, "3": {}}
    rows = clients.describe_topic(c.bootstrap(2), "refunds")
    assert {p: row["Replicas"] for p, row in rows.items()} == {
        p["partition"]: p["replicas"] for p in planned["partitions"]}


def test_verify_reports_log_dir_placement_like_kafka(shared_cluster, unique, tmp_path):
    """A plan naming log dirs: --execute moves replicas there (AlterReplicaLogDirs), --verify
    reads DescribeLogDirs, as Kafka's tool does."""
    from kafka import KafkaAdminClient
    c = shared_cluster
    topic = unique("dirs")
    clients.create_topic(c.bootstrap(1), topic, assignment={0: [1, 2]})
    c.wait_topic(topic, 1)
    admin = KafkaAdminClient(bootstrap_servers=c.bootstrap(1))
    try:
        (described,) = admin.describe_log_dirs(brokers=[1])
    finally:
        admin.close()
    (log_dir,) = [d["log_dir"] for d in described["log_dirs"]]
    here = {"version": 1, "partitions": [{"topic": topic, "partition": 0, "replicas": [1, 2],
                                          "log_dirs": [log_dir, "any"]}]}
    elsewhere = json.loads(json.dumps(here))
    elsewhere["partitions"][0]["log_dirs"][0] = "/elsewhere"
    expected = {"here": f"Reassignment of replica {topic}-0-1 completed successfully.",
                "elsewhere": f"Partition {topic}-0 on broker 1 is not being moved from log dir "
                             f"{log_dir} to /elsewhere."}
    # --execute with a log dir: the (no-op) reassignment, then AlterReplicaLogDirs.
    path = write(tmp_path, "execute.json", here)
    kafka, ours = both(c.bootstrap(2), "--execute", "--reassignment-json-file", path)
    assert (ours.returncode, ours.stdout) == (kafka.returncode, kafka.stdout)
    assert ours.stdout.splitlines()[-1] == (f"Successfully started moving log directory to "
                                            f"{log_dir} for replica {topic}-0 with broker 1 ")
    for name, content in (("here", here), ("elsewhere", elsewhere)):
        path = write(tmp_path, f"{name}.json", content)
        kafka, ours = both(c.bootstrap(2), "--verify", "--reassignment-json-file", path,
                           "--preserve-throttles")
        assert (ours.returncode, ours.stdout) == (kafka.returncode, kafka.stdout)
        assert ours.stdout.splitlines() == ["Status of partition reassignment:",
                                            f"Reassignment of partition {topic}-0 is completed.",
                                            expected[name]]


# --------------------------------------------------------------------------- racks

RACKS = {1: "rack-a", 2: "rack-b"}   # broker 3 has none


@pytest.fixture
def racked_cluster(tmp_path, zookeeper_server):  # noqa: F811
    """Brokers 1 and 2 with a ``broker.rack``, broker 3 without."""
    def give_racks(c):
        for node_id, rack in RACKS.items():
            node = c.nodes[node_id]
            if hasattr(node, "settings"):            # Kafka 3.9 (reference mode)
                node.settings["broker.rack"] = rack
            else:
                node.process.overrides["broker.rack"] = rack
    yield from running_cluster(tmp_path / "racked", zookeeper_server, prepare=give_racks)


def test_generate_with_racks_like_kafka(racked_cluster, tmp_path):
    c = racked_cluster
    topic = "racked"
    clients.create_topic(c.bootstrap(1), topic, assignment={0: [1, 3], 1: [3, 2], 2: [2, 1]})
    c.wait_topic(topic, 3)
    topics = write(tmp_path, "topics.json", {"topics": [{"topic": topic}], "version": 1})
    # Some brokers with a rack, some without: refused unless --disable-rack-aware.
    kafka, ours = both(c.bootstrap(1), "--generate", "--topics-to-move-json-file", topics,
                       "--broker-list", "1,2,3")
    assert (ours.returncode, ours.stdout) == (kafka.returncode, kafka.stdout.splitlines()[0]
                                              + "\n")
    assert ours.stdout == ("Error: Not all brokers have rack information. Add "
                           "--disable-rack-aware in command line to make replica assignment "
                           "without rack information.\n")
    kafka, ours = both(c.bootstrap(1), "--generate", "--topics-to-move-json-file", topics,
                       "--broker-list", "1,2,3", "--disable-rack-aware")
    for result in (kafka, ours):
        _, proposal = _generated(result)
        placed = {e["partition"]: e["replicas"] for e in proposal["partitions"]}
        assert placed in _placements([1, 2, 3], 3, 2)
    # Only racked brokers: Kafka's rack-aware placement (one replica per rack).
    kafka, ours = both(c.bootstrap(1), "--generate", "--topics-to-move-json-file", topics,
                       "--broker-list", "1,2")
    assert _generated(ours)[0] == _generated(kafka)[0]
    rack_aware = [assign_replicas([1, 2], 3, 2, racks=RACKS, start_index=start,
                                  replica_shift=shift)
                  for start, shift in itertools.product(range(2), range(2))]
    for result in (kafka, ours):
        _, proposal = _generated(result)
        placed = {e["partition"]: e["replicas"] for e in proposal["partitions"]}
        assert placed in rack_aware
