"""Kafka 3.9's own command-line tools see the kafkapy cluster as they see a Kafka one.

``bin/kafka-topics.sh --bootstrap-server <one broker>`` creates (by count and by explicit
``--replica-assignment``), lists, describes and deletes topics; what it prints is checked
against the znodes (assignment, leader, ISR, topic id).  ``bin/kafka-broker-api-versions.sh``
finds all three brokers from one.  ``bin/zookeeper-shell.sh`` on the cluster's chroot lists
``/brokers/ids`` and shows ``/controller`` and ``/controller_epoch`` in Kafka's forms.
(``kafka-metadata-shell.sh`` reads KRaft metadata only, so it has nothing to show here.)
A Kafka script started as every test starts one maps the class-data archive of Kafka's
classes (tests/support/kafka_jvm.py): its classpath is the one the archive was dumped with.
"""
from __future__ import annotations

import base64
import json
import re
import subprocess

from tests.support import kafka_cds
from tests.support.cluster import KAFKA_BIN, kafka_tool, tool_env, wait_for
from tests.support.kafka_jvm import kafka_jvm_opts


def _topics(c, via: int, *args: str):
    return kafka_tool("kafka-topics.sh", "--bootstrap-server", c.bootstrap(via), *args)


def _describe(c, via: int, topic: str) -> tuple[dict, dict[int, dict]]:
    result = _topics(c, via, "--describe", "--topic", topic)
    assert result.returncode == 0, result.stderr
    lines = [l for l in result.stdout.splitlines() if l.strip()]
    header = dict(f.split(": ", 1) for f in lines[0].split("\t") if ": " in f)
    rows = {}
    for line in lines[1:]:
        fields = dict(f.split(": ", 1) for f in line.strip().split("\t") if ": " in f)
        rows[int(fields["Partition"])] = fields
    return header, rows


def _ids(text: str) -> list[int]:
    return [int(x) for x in text.split(",") if x]


def test_kafka_topics_create_describe_list_delete(shared_cluster, unique):
    c = shared_cluster
    topic = unique("cli-spread")
    created = _topics(c, 2, "--create", "--topic", topic, "--partitions", "6",
                      "--replication-factor", "3")
    assert (created.returncode, created.stdout) == (0, f"Created topic {topic}.\n"), created.stderr
    c.wait_topic(topic, 6)
    listed = _topics(c, 3, "--list")
    assert topic in listed.stdout.splitlines(), listed.stdout

    header, rows = _describe(c, 1, topic)
    znode = c.znode_json(f"/brokers/topics/{topic}")
    assert header["Topic"] == topic
    assert base64.urlsafe_b64decode(header["TopicId"] + "==") == base64.urlsafe_b64decode(
        znode["topic_id"] + "==")
    assert (header["PartitionCount"], header["ReplicationFactor"]) == ("6", "3")
    assert sorted(rows) == list(range(6))
    for p, row in rows.items():
        state = c.partition_state(topic, p)
        assert _ids(row["Replicas"]) == znode["partitions"][str(p)], row
        assert int(row["Leader"]) == state["leader"] == znode["partitions"][str(p)][0], row
        assert sorted(_ids(row["Isr"])) == sorted(state["isr"]), row
    assert sorted(int(r["Leader"]) for r in rows.values()) == [1, 1, 2, 2, 3, 3]
    under = _topics(c, 3, "--describe", "--under-replicated-partitions", "--topic", topic)
    assert (under.returncode, under.stdout.strip()) == (0, ""), under.stdout + under.stderr

    deleted = _topics(c, 1, "--delete", "--topic", topic)
    assert deleted.returncode == 0, deleted.stderr
    wait_for(lambda: topic not in _topics(c, 2, "--list").stdout.splitlines(), 60,
             f"{topic} to leave kafka-topics.sh --list")
    assert not c.zk.exists(f"/brokers/topics/{topic}")


def test_kafka_topics_replica_assignment(shared_cluster, unique):
    c = shared_cluster
    topic = unique("cli-assigned")
    created = _topics(c, 3, "--create", "--topic", topic, "--replica-assignment", "3:1,2:3,1:2")
    assert created.returncode == 0, created.stderr
    c.wait_topic(topic, 3)
    assert c.assignment(topic) == {0: [3, 1], 1: [2, 3], 2: [1, 2]}
    _, rows = _describe(c, 2, topic)
    assert {p: (int(r["Leader"]), _ids(r["Replicas"])) for p, r in rows.items()} == {
        0: (3, [3, 1]), 1: (2, [2, 3]), 2: (1, [1, 2])}


def test_kafka_broker_api_versions_finds_every_broker(shared_cluster):
    c = shared_cluster
    result = kafka_tool("kafka-broker-api-versions.sh", "--bootstrap-server", c.bootstrap(1))
    assert result.returncode == 0, result.stderr
    found = re.findall(r"^127\.0\.0\.1:(\d+) \(id: (\d+) rack: null\) -> \(", result.stdout, re.M)
    assert sorted((int(i), int(p)) for p, i in found) == sorted(
        (i, n.port) for i, n in c.nodes.items()), result.stdout


def _zk_shell(c, *command: str) -> list[str]:
    result = kafka_tool("zookeeper-shell.sh", c.zk_connect, *command)
    assert result.returncode == 0, result.stdout + result.stderr
    # The shell prints its banner lines first; the answer is the last non-empty line.
    return [l for l in result.stdout.splitlines() if l.strip()]


def test_zookeeper_shell_sees_kafkas_znodes(shared_cluster):
    c = shared_cluster
    assert _zk_shell(c, "ls", "/brokers/ids")[-1] == "[1, 2, 3]"
    controller = json.loads(_zk_shell(c, "get", "/controller")[-1])
    assert controller["brokerid"] == c.controller_id() and controller["version"] == 2
    assert set(controller) == {"version", "brokerid", "timestamp", "kraftControllerEpoch"}
    assert int(_zk_shell(c, "get", "/controller_epoch")[-1]) == c.controller_epoch() >= 1
    registration = json.loads(_zk_shell(c, "get", "/brokers/ids/2")[-1])
    assert registration["endpoints"] == [f"PLAINTEXT://127.0.0.1:{c.nodes[2].port}"]
    assert (registration["host"], registration["port"], registration["version"]) == (
        "127.0.0.1", c.nodes[2].port, 5)


def test_kafka_scripts_map_the_class_data_archive():
    """-Xshare:on: a JVM that cannot map the archive (another classpath) exits 1."""
    kafka_cds.build()
    env = tool_env()
    env["KAFKA_JVM_PERFORMANCE_OPTS"] = f"{kafka_jvm_opts()} -Xshare:on"
    result = subprocess.run([str(KAFKA_BIN / "kafka-topics.sh"), "--version"], env=env,
                            capture_output=True, text=True, timeout=120,
                            stdin=subprocess.DEVNULL)
    assert (result.returncode, result.stdout.strip()) == (0, "3.9.0"), result.stderr
