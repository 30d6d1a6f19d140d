"""The Kafka-shaped command-line tools (``kafkapy/cli/``), run as a user runs them.

Each test runs the installed console scripts (``kafkapy-topics``, ``kafkapy-console-producer``,
...) as subprocesses against a real broker (the module's ``broker`` fixture) and checks their
output lines and exit codes against Kafka's formats. What the tools claim is cross-checked
with kafka-python where it can be: topic ids, partition counts, committed offsets, configs.
Topic and group names carry a per-run suffix. No assertion depends on timing; the subprocess
timeout only guards against a hang.
"""
from __future__ import annotations

import base64
import subprocess
import time
import uuid

import pytest
from kafka import KafkaConsumer, KafkaProducer, TopicPartition
from kafka.admin import ConfigResource, ConfigResourceType, KafkaAdminClient
from kafka.errors import CoordinatorNotAvailableError
from kafka.structs import OffsetAndMetadata

from tests.support.broker_process import free_port
from tests.support.cli_tools import tool

SUFFIX = uuid.uuid4().hex[:8]
GROUP_COLUMNS = ["GROUP", "TOPIC", "PARTITION", "CURRENT-OFFSET", "LOG-END-OFFSET", "LAG",
                 "CONSUMER-ID", "HOST", "CLIENT-ID"]


def unique(name: str) -> str:
    return f"cli-{name}-{SUFFIX}"


@pytest.fixture(scope="module")
def run(broker):
    def run_tool(name: str, *args: str, stdin: str | None = None) -> subprocess.CompletedProcess:
        return tool(name, "--bootstrap-server", broker.bootstrap, *args, stdin=stdin)
    return run_tool


@pytest.fixture(scope="module")
def admin(broker):
    client = KafkaAdminClient(bootstrap_servers=broker.bootstrap)
    yield client
    client.close()


def create_topic(run, name: str, partitions: int = 1) -> None:
    result = run("topics", "--create", "--topic", name, "--partitions", str(partitions))
    assert (result.returncode, result.stdout) == (0, f"Created topic {name}.\n"), result.stderr


def produce(run, topic: str, lines: list[str], *options: str) -> None:
    text = "".join(f"{line}\n" for line in lines)
    result = run("console-producer", "--topic", topic, *options, stdin=text)
    assert result.returncode == 0, result.stderr


def group_rows(run, group: str) -> list[list[str]]:
    """``--describe`` rows, split at whitespace, after checking the header."""
    result = run("consumer-groups", "--describe", "--group", group)
    assert result.returncode == 0, result.stdout + result.stderr
    lines = result.stdout.splitlines()
    assert lines[0] == "" and lines[1].split() == GROUP_COLUMNS
    return [line.split() for line in lines[2:]]


def reset_plan(result: subprocess.CompletedProcess) -> list[list[str]]:
    assert result.returncode == 0, result.stdout + result.stderr
    lines = result.stdout.splitlines()
    assert lines[0] == "" and lines[1].split() == ["GROUP", "TOPIC", "PARTITION", "NEW-OFFSET"]
    return [line.split() for line in lines[2:]]


def topic_configs(admin, topic: str) -> dict:
    resource = ConfigResource(ConfigResourceType.TOPIC, topic)
    return admin.describe_configs([resource], config_filter="all")["topic"][topic]


# -- kafkapy-topics --------------------------------------------------------------------------

def test_topic_create_list_describe_alter_delete(run, admin):
    topic = unique("lifecycle")
    created = run("topics", "--create", "--topic", topic, "--partitions", "2",
                  "--replication-factor", "1", "--config", "retention.ms=123456")
    assert (created.returncode, created.stdout) == (0, f"Created topic {topic}.\n")
    assert topic in run("topics", "--list").stdout.splitlines()

    described = run("topics", "--describe", "--topic", topic)
    assert described.returncode == 0, described.stderr
    header, *partitions = described.stdout.splitlines()
    fields = header.split("\t")
    assert fields[0] == f"Topic: {topic}"
    topic_id = base64.urlsafe_b64decode(fields[1].removeprefix("TopicId: ") + "==")
    expected_id = admin.describe_topics([topic])[0]["topic_id"]
    assert uuid.UUID(bytes=topic_id) == uuid.UUID(str(expected_id))
    assert fields[2:4] == ["PartitionCount: 2", "ReplicationFactor: 1"]
    configs = dict(item.split("=") for item in fields[4].removeprefix("Configs: ").split(","))
    assert configs["retention.ms"] == "123456"
    assert "cleanup.policy" not in configs  # defaults are not listed
    assert partitions == [f"\tTopic: {topic}\tPartition: {p}\tLeader: 0\tReplicas: 0\tIsr: 0"
                          f"\tElr: N/A\tLastKnownElr: N/A" for p in (0, 1)]

    altered = run("topics", "--alter", "--topic", topic, "--partitions", "3")
    assert (altered.returncode, altered.stdout) == (0, "")
    assert len(admin.describe_topics([topic])[0]["partitions"]) == 3
    assert f"\tTopic: {topic}\tPartition: 2\tLeader: 0" in run(
        "topics", "--describe", "--topic", topic).stdout

    shrink = run("topics", "--alter", "--topic", topic, "--partitions", "1")
    assert shrink.returncode == 1
    assert shrink.stdout.startswith("Error while executing topic command : ")
    assert "higher than the requested 1" in shrink.stdout

    deleted = run("topics", "--delete", "--topic", topic)
    assert (deleted.returncode, deleted.stdout) == (0, "")
    assert topic not in run("topics", "--list").stdout.splitlines()


def test_create_existing_topic_fails_unless_if_not_exists(run):
    topic = unique("twice")
    create_topic(run, topic)
    again = run("topics", "--create", "--topic", topic)
    assert again.returncode == 1
    assert again.stdout == (f"Error while executing topic command : "
                            f"Topic '{topic}' already exists.\n")
    tolerated = run("topics", "--create", "--topic", topic, "--if-not-exists")
    assert (tolerated.returncode, tolerated.stdout) == (0, "")


def test_describe_unknown_topic_is_an_error(run):
    missing = unique("missing")
    result = run("topics", "--describe", "--topic", missing)
    assert result.returncode == 1
    assert result.stdout == ""
    assert result.stderr.strip() == f"Topic '{missing}' does not exist as expected"
    quiet = run("topics", "--describe", "--topic", missing, "--if-exists")
    assert (quiet.returncode, quiet.stdout) == (0, "")


def _commit_offset_zero(admin, group: str, topic: str) -> None:
    """Commits offset 0 of ``topic``-0 for ``group``.  The first lookup creates
    __consumer_offsets without waiting (as Kafka): retried until it is online."""
    for _ in range(600):
        try:
            admin.alter_group_offsets(group, {TopicPartition(topic, 0):
                                              OffsetAndMetadata(0, "", None)})
            return
        except CoordinatorNotAvailableError:
            time.sleep(0.05)
    raise AssertionError(f"no group coordinator for {group} after 100 tries")


def test_list_shows_internal_topics_unless_excluded(run, admin):
    # A commit makes the coordinator create __consumer_offsets.
    topic, group = unique("internal"), unique("internal-group")
    create_topic(run, topic)
    _commit_offset_zero(admin, group, topic)
    assert "__consumer_offsets" in run("topics", "--list").stdout.splitlines()
    listed = run("topics", "--list", "--exclude-internal").stdout.splitlines()
    assert topic in listed and "__consumer_offsets" not in listed


@pytest.mark.parametrize("args, message", [
    (["--topic", "x"], "Command must include exactly one action: "
                       "--list, --describe, --create, --alter or --delete"),
    (["--alter", "--topic", "x"], 'Missing required argument "[partitions]"'),
    (["--list", "--replication-factor", "1"],
     'Option "[replication-factor]" can\'t be used with option "[list]"'),
])
def test_topics_usage_errors(run, args, message):
    result = run("topics", *args)
    assert result.returncode == 1
    assert result.stderr.splitlines()[0] == message


def test_topics_needs_bootstrap_server():
    result = tool("topics", "--list")
    assert (result.returncode, result.stderr.strip()) == (1, "--bootstrap-server must be specified")


# -- console producer and consumer --------------------------------------------------------

def test_console_producer_and_consumer_round_trip(run, broker):
    topic = unique("console")
    create_topic(run, topic)
    produce(run, topic, ["k1:v1", "k2:v2", "k3:hello world"], "--property", "parse.key=true",
            "--property", "key.separator=:", "--compression-codec", "gzip",
            "--request-required-acks", "1")

    consumed = run("console-consumer", "--topic", topic, "--from-beginning", "--max-messages", "3",
                   "--property", "print.key=true")
    assert consumed.returncode == 0, consumed.stderr
    assert consumed.stdout == "k1\tv1\nk2\tv2\nk3\thello world\n"
    assert "Processed a total of 3 messages" in consumed.stderr.splitlines()

    picked = run("console-consumer", "--topic", topic, "--partition", "0", "--offset", "1",
                 "--max-messages", "2", "--property", "print.partition=true",
                 "--property", "print.offset=true", "--property", "print.key=true",
                 "--property", "key.separator=|")
    assert picked.stdout == "Partition:0|Offset:1|k2|v2\nPartition:0|Offset:2|k3|hello world\n"

    # Until no record arrives for a second: all three, then a normal exit.
    timed = run("console-consumer", "--topic", topic, "--from-beginning", "--timeout-ms", "1000",
                "--property", "print.timestamp=true")
    assert timed.returncode == 0
    assert "Processed a total of 3 messages" in timed.stderr.splitlines()
    reader = KafkaConsumer(bootstrap_servers=broker.bootstrap, enable_auto_commit=False)
    partition = TopicPartition(topic, 0)
    reader.assign([partition])
    reader.seek(partition, 0)
    records = []
    while len(records) < 3:
        records += reader.poll(timeout_ms=1000).get(partition, [])
    reader.close()
    assert timed.stdout.splitlines() == [f"CreateTime:{r.timestamp}\t{r.value.decode()}"
                                         for r in records]


def test_console_producer_headers_and_null_marker(run):
    topic = unique("headers")
    create_topic(run, topic)
    produce(run, topic, ["h1:a,h2:b\tkey\tvalue", "NULL\tNULL\tv2"], "--property", "parse.key=true",
            "--property", "parse.headers=true", "--property", "null.marker=NULL", "--sync")
    consumed = run("console-consumer", "--topic", topic, "--from-beginning", "--max-messages", "2",
                   "--property", "print.headers=true", "--property", "print.key=true")
    assert consumed.stdout == "h1:a,h2:b\tkey\tvalue\nNO_HEADERS\tnull\tv2\n"


def test_console_producer_stops_at_a_line_without_key_separator(run):
    topic = unique("badline")
    create_topic(run, topic)
    result = run("console-producer", "--topic", topic, "--property", "parse.key=true",
                 stdin="good\tline\nnovalue\nnever\tsent\n")
    assert result.returncode == 1
    assert "No key separator found on line number 2: 'novalue'" in result.stderr
    # The line before the bad one was still sent.
    consumed = run("console-consumer", "--topic", topic, "--from-beginning", "--timeout-ms", "1000",
                   "--property", "print.key=true")
    assert consumed.stdout == "good\tline\n"


# -- kafkapy-consumer-groups ------------------------------------------------------------------

def test_consumer_groups_describe_reset_and_delete(run):
    topic, group = unique("groups"), unique("group")
    create_topic(run, topic)
    produce(run, topic, [f"m{i}" for i in range(5)])
    consumed = run("console-consumer", "--topic", topic, "--group", group, "--from-beginning",
                   "--max-messages", "2")
    assert consumed.stdout == "m0\nm1\n"
    assert group in run("consumer-groups", "--list").stdout.splitlines()

    # The console consumer committed what it printed (2 of 5) and left the group.
    # Kafka's layout: an empty line, then columns padded to 15 (group and topic to their
    # length when longer), partition to 10, the last column unpadded.
    described = run("consumer-groups", "--describe", "--group", group)
    g, t = max(15, len(group)), max(15, len(topic))
    header = ["CURRENT-OFFSET", "LOG-END-OFFSET", "LAG", "CONSUMER-ID", "HOST"]
    values = ["2", "5", "3", "-", "-"]
    assert described.stdout == (
        f"\n{'GROUP':<{g}} {'TOPIC':<{t}} {'PARTITION':<10} "
        + "".join(f"{h:<15} " for h in header) + "CLIENT-ID\n"
        f"{group:<{g}} {topic:<{t}} {'0':<10} " + "".join(f"{v:<15} " for v in values) + "-\n")
    assert f"Consumer group '{group}' has no active members." in described.stderr

    to_earliest = run("consumer-groups", "--reset-offsets", "--group", group, "--topic", topic,
                      "--to-earliest", "--execute")
    assert reset_plan(to_earliest) == [[group, topic, "0", "0"]]
    assert group_rows(run, group) == [[group, topic, "0", "0", "5", "5", "-", "-", "-"]]

    dry_run = run("consumer-groups", "--reset-offsets", "--group", group, "--topic", topic,
                  "--to-offset", "3", "--dry-run")
    assert reset_plan(dry_run) == [[group, topic, "0", "3"]]
    assert group_rows(run, group)[0][3] == "0"

    to_latest = run("consumer-groups", "--reset-offsets", "--group", group, "--all-topics",
                    "--to-latest", "--execute")
    assert reset_plan(to_latest) == [[group, topic, "0", "5"]]
    assert group_rows(run, group) == [[group, topic, "0", "5", "5", "0", "-", "-", "-"]]

    deleted = run("consumer-groups", "--delete", "--group", group)
    assert deleted.stdout == f"Deletion of requested consumer groups ('{group}') was successful.\n"
    assert group not in run("consumer-groups", "--list").stdout.splitlines()
    gone = run("consumer-groups", "--describe", "--group", group)
    assert gone.returncode == 1
    assert gone.stdout.splitlines() == ["", f"Error: Consumer group '{group}' does not exist."]


def test_consumer_groups_with_an_active_member(run, broker):
    topic, group = unique("active"), unique("active-group")
    create_topic(run, topic)
    member = KafkaConsumer(topic, group_id=group, client_id="cli-test-member",
                           bootstrap_servers=broker.bootstrap, enable_auto_commit=False)
    try:
        while not member.assignment():
            member.poll(timeout_ms=200)
        rows = group_rows(run, group)
        assert len(rows) == 1
        name, partition, offset, end, lag, member_id, host, client = rows[0][1:]
        assert (name, partition, offset, end, lag) == (topic, "0", "-", "0", "-")
        assert member_id.startswith("cli-test-member-")
        assert (host, client) == ("/127.0.0.1", "cli-test-member")

        refused = run("consumer-groups", "--reset-offsets", "--group", group, "--all-topics",
                      "--to-earliest", "--execute")
        assert refused.returncode == 1
        assert (f"Error: Assignments can only be reset if the group '{group}' is inactive, "
                f"but the current state is Stable.") in refused.stdout.splitlines()
    finally:
        member.close()


def test_consumer_groups_delete_offsets(run, admin):
    topic, group = unique("offsets-gone"), unique("offsets-group")
    create_topic(run, topic)
    _commit_offset_zero(admin, group, topic)
    assert group_rows(run, group) == [[group, topic, "0", "0", "0", "0", "-", "-", "-"]]
    result = run("consumer-groups", "--delete-offsets", "--group", group, "--topic", topic)
    assert result.returncode == 0
    lines = result.stdout.splitlines()
    assert lines[:2] == [f"Request succeeded for deleting offsets from group {group}.", ""]
    assert [line.split() for line in lines[2:]] == [["TOPIC", "PARTITION", "STATUS"],
                                                   [topic, "0", "Successful"]]
    assert admin.list_group_offsets(group)[group] == {}


# -- kafkapy-configs --------------------------------------------------------------------------

def test_configs_alter_describe_and_delete_round_trip(run, admin):
    topic = unique("configs")
    create_topic(run, topic)
    describe = ("configs", "--entity-type", "topics", "--entity-name", topic, "--describe")
    alter = ("configs", "--entity-type", "topics", "--entity-name", topic, "--alter")

    added = run(*alter, "--add-config", "retention.ms=86400000,cleanup.policy=[compact,delete]")
    assert added.returncode == 0
    assert added.stdout == f"Completed updating config for topic {topic}.\n"
    configs = topic_configs(admin, topic)
    assert configs["cleanup.policy"]["value"] == "compact,delete"
    assert configs["retention.ms"]["config_source"] == "DYNAMIC_TOPIC_CONFIG"

    lines = run(*describe).stdout.splitlines()
    assert lines[0] == f"Dynamic configs for topic {topic} are:"
    assert [line.split(" synonyms=")[0] for line in lines[1:]] == [
        "  cleanup.policy=compact,delete sensitive=false",
        "  retention.ms=86400000 sensitive=false"]
    assert lines[2].startswith("  retention.ms=86400000 sensitive=false "
                               "synonyms={DYNAMIC_TOPIC_CONFIG:retention.ms=86400000")
    assert lines[2].endswith("}")

    removed = run(*alter, "--delete-config", "cleanup.policy")
    assert removed.stdout == f"Completed updating config for topic {topic}.\n"
    assert [line.split(" sensitive")[0] for line in run(*describe).stdout.splitlines()] == [
        f"Dynamic configs for topic {topic} are:", "  retention.ms=86400000"]
    assert topic_configs(admin, topic)["cleanup.policy"]["config_source"] == "DEFAULT_CONFIG"

    not_set = run(*alter, "--delete-config", "segment.ms")
    assert (not_set.returncode, not_set.stderr.strip()) == (1, "Invalid config(s): segment.ms")


def test_configs_describe_unknown_topic_and_broker(run, broker):
    missing = unique("no-such")
    result = run("configs", "--entity-type", "topics", "--entity-name", missing, "--describe")
    assert result.stdout == (f"The topic '{missing}' doesn't exist and doesn't have "
                             f"dynamic config.\n")

    every = run("configs", "--entity-type", "brokers", "--entity-name", "0", "--describe", "--all")
    lines = every.stdout.splitlines()
    assert lines[0] == "All configs for broker 0 are:"
    log_dirs = [line for line in lines if line.startswith("  log.dirs=")]
    assert log_dirs == [f"  log.dirs={broker.log_dir} sensitive=false "
                        f"synonyms={{STATIC_BROKER_CONFIG:log.dirs={broker.log_dir}}}"]


# -- kafkapy-get-offsets ----------------------------------------------------------------------

def test_get_offsets_latest_earliest_and_filters(run, broker, admin):
    topic = unique("offsets")
    create_topic(run, topic, partitions=2)
    producer = KafkaProducer(bootstrap_servers=broker.bootstrap)
    for partition, count in ((0, 3), (1, 1)):
        for i in range(count):
            producer.send(topic, value=b"r%d" % i, partition=partition)
    producer.flush()
    producer.close()
    admin.delete_records({TopicPartition(topic, 0): 1})

    latest, earliest = f"{topic}:0:3\n{topic}:1:1\n", f"{topic}:0:1\n{topic}:1:0\n"
    assert run("get-offsets", "--topic", topic).stdout == latest
    assert run("get-offsets", "--topic", topic, "--time", "-1").stdout == latest
    assert run("get-offsets", "--topic", topic, "--time", "-2").stdout == earliest
    assert run("get-offsets", "--topic", topic, "--time", "earliest").stdout == earliest
    assert run("get-offsets", "--topic", topic, "--partitions", "1").stdout == f"{topic}:1:1\n"
    assert run("get-offsets", "--topic-partitions", f"{topic}:0").stdout == f"{topic}:0:3\n"

    nothing = run("get-offsets", "--topic", unique("nothing"))
    assert nothing.returncode == 1
    assert nothing.stderr.strip() == ("Error occurred: Could not match any topic-partitions with "
                                      "the specified filters")


# -- kafkapy-leader-election -------------------------------------------------------------------

def test_leader_election_reports_like_kafka(run, tmp_path):
    topic = unique("elect")
    create_topic(run, topic, partitions=2)
    result = run("leader-election", "--election-type", "PREFERRED", "--topic", topic,
                 "--partition", "0")
    assert (result.returncode, result.stdout) == (
        0, f"Valid replica already elected for partitions {topic}-0\n"), result.stderr
    spec = tmp_path / "election.json"
    spec.write_text(f'{{"partitions": [{{"topic": "{topic}", "partition": 1}}, '
                    f'{{"topic": "{topic}", "partition": 0}}]}}')
    result = run("leader-election", "--election-type", "unclean", "--path-to-json-file", str(spec))
    # Listed in the order of Kafka's HashSet<TopicPartition> (it depends on the topic's hash).
    from kafkapy.cli._common import java_set_order, topic_partition_hash
    listed = ", ".join(f"{t}-{p}" for t, p in java_set_order([(topic, 1), (topic, 0)],
                                                             topic_partition_hash))
    assert (result.returncode, result.stdout) == (
        0, f"Valid replica already elected for partitions {listed}\n"), result.stderr
    # Every partition: the healthy ones need no election and are not reported.
    result = run("leader-election", "--election-type", "preferred", "--all-topic-partitions")
    assert (result.returncode, result.stdout) == (0, ""), result.stderr


def test_leader_election_failures_and_bad_options(run, tmp_path):
    topic = unique("elect-missing")
    create_topic(run, topic)
    result = run("leader-election", "--election-type", "preferred", "--topic", topic,
                 "--partition", "9")
    assert result.returncode == 1
    assert result.stdout == (f"Error completing leader election (PREFERRED) for partition: "
                             f"{topic}-9: org.apache.kafka.common.errors."
                             f"UnknownTopicOrPartitionException: The partition does not exist.\n")
    assert result.stderr.strip() == "1 replica(s) could not be elected"
    usage = {
        ("--all-topic-partitions",): "Missing required option(s): election-type",
        ("--election-type", "preferred", "--topic", topic, "--all-topic-partitions"):
            "One and only one of the following options is required: topic, "
            "all-topic-partitions, path-to-json-file",
        ("--election-type", "preferred", "--topic", topic): "Missing required option(s): partition",
        ("--election-type", "sideways", "--all-topic-partitions"):
            "Cannot convert argument 'sideways' of option ['election-type']. "
            "Possible values: PREFERRED, UNCLEAN",
    }
    for args, message in usage.items():
        result = run("leader-election", *args)
        assert (result.returncode, result.stderr.strip()) == (1, message), args
    duplicate = tmp_path / "dup.json"
    duplicate.write_text(f'{{"partitions": [{{"topic": "{topic}", "partition": 0}}, '
                         f'{{"topic": "{topic}", "partition": 0}}]}}')
    result = run("leader-election", "--election-type", "preferred", "--path-to-json-file",
                 str(duplicate))
    assert (result.returncode, result.stderr.strip()) == (
        1, f"Replica election data contains duplicate partitions: {topic}-0")


def test_leader_election_reports_an_election_among_all_partitions(run, fresh_broker):
    """A partition whose leader is gone: ``--all-topic-partitions`` elects it and says so,
    the healthy partitions needing no election are not listed (as Kafka 3.9's tool does)."""
    healthy, orphan = unique("elect-healthy"), unique("elect-orphan")
    for topic in (healthy, orphan):
        created = tool("topics", "--bootstrap-server", fresh_broker.bootstrap, "--create",
                       "--topic", topic)
        assert created.returncode == 0, created.stderr
    orphan_partition(fresh_broker, orphan, dead_broker=5)
    result = tool("leader-election", "--bootstrap-server", fresh_broker.bootstrap,
                  "--election-type", "unclean", "--all-topic-partitions")
    assert (result.returncode, result.stdout) == (
        0, f"Successfully completed leader election (UNCLEAN) for partitions {orphan}-0\n"
    ), result.stderr


def orphan_partition(broker, topic: str, dead_broker: int) -> None:
    """Record ``dead_broker`` as the partition's only leader and ISR member (written into
    the metadata store while the broker is stopped), as after that broker's loss."""
    from kafkapy.metadata import paths
    from kafkapy.metadata.embedded import EmbeddedStore

    broker.stop()
    store = EmbeddedStore(broker.log_dir / "kafkapy-metadata.json")
    try:
        path = paths.partition_state_path(topic, 0)
        epoch = paths.decode_partition_state(store.get(path)[0]).leader_epoch + 1
        store.set(path, paths.encode_partition_state(dead_broker, epoch, [dead_broker], 1))
    finally:
        store.close()
        broker.start()


# -- a broker that is down ---------------------------------------------------------------------

DOWN_BROKER_RUNS = {
    "topics": ["--list"],
    "console-consumer": ["--topic", "t"],
    "console-producer": ["--topic", "t"],
    "consumer-groups": ["--list"],
    "configs": ["--entity-type", "topics", "--entity-name", "t", "--describe"],
    "get-offsets": ["--topic", "t"],
    "leader-election": ["--election-type", "preferred", "--all-topic-partitions"],
}


@pytest.mark.parametrize("name", sorted(DOWN_BROKER_RUNS))
def test_a_down_broker_is_reported_once(name):
    port = free_port()  # bound and released: nothing listens there
    result = tool(name, "--bootstrap-server", f"127.0.0.1:{port}", *DOWN_BROKER_RUNS[name],
                  stdin="")
    assert result.returncode == 1
    lines = [line for line in (result.stdout + result.stderr).splitlines() if line.strip()]
    # kafkapy-configs reports a failure under a line naming its arguments, as Kafka's does.
    assert len(lines) == (2 if name == "configs" else 1), lines
    assert (f"Connection to node -1 (/127.0.0.1:{port}) could not be established. "
            f"Node may not be available.") in lines[-1], lines


def test_an_unresolvable_bootstrap_server_is_reported_once():
    result = tool("topics", "--bootstrap-server", "no-such-host.invalid:9092", "--list")
    assert (result.returncode, result.stdout) == (
        1, "Error while executing topic command : "
           "No resolvable bootstrap urls given in bootstrap.servers\n")
