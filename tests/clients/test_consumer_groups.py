"""Consumer groups with stock clients.

- kafka-python, confluent-kafka and aiokafka members (each in its own process,
  tests/clients/group_member.py) share a 6-partition topic and consume every
  record exactly once between them; one is killed with SIGKILL (no LeaveGroup)
  and after its session timeout the others take its partitions; a new member
  joins and a rebalance follows.
- a static member (group.instance.id) restarts within its session timeout and
  the group does not rebalance (the others' assignments stay, the generation in
  ``__consumer_offsets`` stays).
- committed offsets survive a broker restart (SIGTERM, then SIGKILL).
- the Java consumer (kafka-clients 3.9.0 and 4.3.0) with the range, roundrobin,
  sticky and cooperative-sticky assignors, two members per group.
- admin through confluent-kafka, kafka-python and the Java Admin.
- an independent decoder (struct, written from Kafka's schemas, not our
  encoder) reads ``__consumer_offsets`` and finds every commit and group change.
Waits are bounded polls for a condition, never timing assertions.
"""
from __future__ import annotations

import signal
import struct
import subprocess
import sys
import threading
import time
from pathlib import Path

import pytest
from kafka import KafkaConsumer, KafkaProducer, TopicPartition
from kafka.admin import KafkaAdminClient, NewTopic, OffsetSpec

from kafkapy.coordinator.group.kafka_order import commit_order
from tests.support.broker_process import BrokerProcess

pytestmark = pytest.mark.timeout(900)

ROOT = Path(__file__).resolve().parents[2]
OVERRIDES = {"group.min.session.timeout.ms": "1000", "offsets.topic.num.partitions": "10"}
OFFSETS_PARTITIONS = 10
WAIT = 60.0


# -- helpers ---------------------------------------------------------------------------------
def wait_for(condition, what: str, timeout: float = WAIT):
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        value = condition()
        if value:
            return value
        time.sleep(0.1)
    raise AssertionError(f"gave up waiting for {what}")


class Member:
    """A group member process; collects its ASSIGN and REC lines."""

    def __init__(self, command: list[str], name: str) -> None:
        self.name = name
        self.lines: list[str] = []
        self.proc = subprocess.Popen(command, stdout=subprocess.PIPE, stderr=subprocess.DEVNULL,
                                     text=True, cwd=ROOT)
        self._reader = threading.Thread(target=self._read, daemon=True)
        self._reader.start()

    @classmethod
    def python(cls, client: str, bootstrap: str, topic: str, group: str,
               instance_id: str | None = None) -> "Member":
        cmd = [sys.executable, "-m", "tests.clients.group_member", client, bootstrap, topic, group]
        return cls(cmd + ([instance_id] if instance_id else []), client)

    def _read(self) -> None:
        for line in self.proc.stdout:
            self.lines.append(line.rstrip("\n"))

    @property
    def assignments(self) -> list[list[int]]:
        return [[int(p) for p in line[7:].split(",") if p]
                for line in list(self.lines) if line.startswith("ASSIGN ")]

    @property
    def assignment(self) -> list[int]:
        a = self.assignments
        return a[-1] if a else []

    @property
    def values(self) -> list[str]:
        return [line.split(" ", 3)[3] for line in list(self.lines) if line.startswith("REC ")]

    def kill(self) -> None:
        self.proc.send_signal(signal.SIGKILL)
        self.proc.wait()

    def stop(self) -> None:
        if self.proc.poll() is None:
            self.proc.send_signal(signal.SIGTERM)
            try:
                self.proc.wait(30)
            except subprocess.TimeoutExpired:
                self.kill()


def _covers_all(members: list[Member], n: int) -> bool:
    parts = [p for m in members for p in m.assignment]
    return sorted(parts) == list(range(n)) and all(m.assignment for m in members)


def create_topic(bootstrap: str, name: str, partitions: int) -> None:
    admin = KafkaAdminClient(bootstrap_servers=bootstrap)
    try:
        admin.create_topics([NewTopic(name, partitions, 1)])
    finally:
        admin.close()


def produce(bootstrap: str, topic: str, values: list[str], partitions: int = 6) -> None:
    producer = KafkaProducer(bootstrap_servers=bootstrap)
    for i, v in enumerate(values):
        producer.send(topic, v.encode(), partition=i % partitions)
    producer.flush()
    producer.close()


def _exactly_once(members: list[Member], values: list[str]) -> None:
    wanted = set(values)
    wait_for(lambda: wanted <= {v for m in members for v in m.values}, "every record consumed")
    got = [v for m in members for v in m.values if v in wanted]
    assert sorted(got) == sorted(values), "some record was consumed twice"


@pytest.fixture(scope="module")
def gbroker(tmp_path_factory):
    with BrokerProcess(tmp_path_factory.mktemp("groups") / "logs",
                       overrides=OVERRIDES).start() as b:
        yield b


# -- the independent __consumer_offsets decoder ---------------------------------------------
class _Reader:
    def __init__(self, data: bytes) -> None:
        self.data, self.pos = data, 0

    def take(self, fmt: str):
        (v,) = struct.unpack_from(">" + fmt, self.data, self.pos)
        self.pos += struct.calcsize(">" + fmt)
        return v

    def string(self) -> str | None:
        n = self.take("h")
        if n < 0:
            return None
        s = self.data[self.pos:self.pos + n].decode()
        self.pos += n
        return s

    def blob(self) -> bytes:
        n = self.take("i")
        b = self.data[self.pos:self.pos + n]
        self.pos += n
        return b


def decode_offsets_record(key: bytes, value: bytes | None):
    """('offset', group, topic, partition, value dict | None) or ('group', group, dict | None)."""
    k = _Reader(key)
    version = k.take("h")
    if version in (0, 1):
        group, topic, partition = k.string(), k.string(), k.take("i")
        if value is None:
            return ("offset", group, topic, partition, None)
        v = _Reader(value)
        vv = v.take("h")
        out = {"version": vv, "offset": v.take("q")}
        out["leader_epoch"] = v.take("i") if vv >= 3 else -1
        out["metadata"] = v.string()
        out["commit_timestamp"] = v.take("q")
        if vv == 1:
            out["expire_timestamp"] = v.take("q")
        assert v.pos == len(value), "trailing bytes in OffsetCommitValue"
        return ("offset", group, topic, partition, out)
    assert version == 2, f"unknown key version {version}"
    group = k.string()
    if value is None:
        return ("group", group, None)
    v = _Reader(value)
    vv = v.take("h")
    assert vv == 3, f"GroupMetadataValue v{vv}"
    out = {"protocol_type": v.string(), "generation": v.take("i"), "protocol": v.string(),
           "leader": v.string(), "current_state_timestamp": v.take("q"), "members": []}
    for _ in range(v.take("i")):
        out["members"].append({"member_id": v.string(), "group_instance_id": v.string(),
                               "client_id": v.string(), "client_host": v.string(),
                               "rebalance_timeout": v.take("i"), "session_timeout": v.take("i"),
                               "subscription": v.blob(), "assignment": v.blob()})
    assert v.pos == len(value), "trailing bytes in GroupMetadataValue"
    return ("group", group, out)


def read_offsets_topic(bootstrap: str) -> list[tuple]:
    consumer = KafkaConsumer(bootstrap_servers=bootstrap, group_id=None,
                             enable_auto_commit=False, exclude_internal_topics=False)
    try:
        tps = [TopicPartition("__consumer_offsets", i) for i in range(OFFSETS_PARTITIONS)]
        consumer.assign(tps)
        consumer.seek_to_beginning(*tps)
        ends = consumer.end_offsets(tps)
        records = []
        deadline = time.monotonic() + WAIT
        while any(consumer.position(tp) < ends[tp] for tp in tps) and time.monotonic() < deadline:
            for batch in consumer.poll(500).values():
                records += [(r.offset, r.key, r.value) for r in batch]
        return [decode_offsets_record(k, v) for _, k, v in records]
    finally:
        consumer.close()


# -- three Python clients in one group --------------------------------------------------------
def test_three_clients_share_kill_and_join(gbroker):
    bootstrap, topic, group = gbroker.bootstrap, "groups-six", "three-clients"
    create_topic(bootstrap, topic, 6)
    members = [Member.python(c, bootstrap, topic, group)
               for c in ("kafka-python", "confluent-kafka", "aiokafka")]
    extra = None
    try:
        wait_for(lambda: _covers_all(members, 6), "three members sharing six partitions")
        first = [f"a-{i}" for i in range(300)]
        produce(bootstrap, topic, first)
        _exactly_once(members, first)

        killed, survivors = members[1], [members[0], members[2]]
        killed_parts = set(killed.assignment)
        killed.kill()                          # no LeaveGroup: only the session timeout tells
        wait_for(lambda: _covers_all(survivors, 6), "survivors taking every partition")
        assert killed_parts <= {p for m in survivors for p in m.assignment}
        second = [f"b-{i}" for i in range(300)]
        produce(bootstrap, topic, second)
        _exactly_once(survivors, second)

        before = [len(m.assignments) for m in survivors]
        extra = Member.python("kafka-python", bootstrap, topic, group)
        everyone = survivors + [extra]
        wait_for(lambda: _covers_all(everyone, 6), "a rebalance including the new member")
        assert all(len(m.assignments) > n for m, n in zip(survivors, before))
        third = [f"c-{i}" for i in range(300)]
        produce(bootstrap, topic, third)
        _exactly_once(everyone, third)
    finally:
        for m in members + ([extra] if extra else []):
            m.stop()

    changes = [r for r in read_offsets_topic(bootstrap) if r[0] == "group" and r[1] == group]
    generations = [r[2]["generation"] for r in changes if r[2]]
    assert generations == sorted(generations) and len(set(generations)) >= 3
    assert {len(r[2]["members"]) for r in changes if r[2]} >= {2, 3}


# -- static membership ------------------------------------------------------------------------
def test_static_member_restart_causes_no_rebalance(gbroker):
    bootstrap, topic, group = gbroker.bootstrap, "groups-static", "static-group"
    create_topic(bootstrap, topic, 6)
    static = Member.python("confluent-kafka", bootstrap, topic, group, instance_id="static-1")
    other = Member.python("kafka-python", bootstrap, topic, group)
    try:
        wait_for(lambda: _covers_all([static, other], 6), "two members sharing six partitions")
        time.sleep(2)                          # let any trailing rebalance settle
        settled_other = len(other.assignments)
        gen_before = _generation(bootstrap, group)
        static_parts = static.assignment
        static.kill()
        static = Member.python("confluent-kafka", bootstrap, topic, group, instance_id="static-1")
        wait_for(lambda: static.assignment, "the restarted static member's assignment")
        assert static.assignment == static_parts
        values = [f"s-{i}" for i in range(120)]
        produce(bootstrap, topic, values)
        wait_for(lambda: set(values) <= set(static.values + other.values), "records consumed")
        assert len(other.assignments) == settled_other, "the other member was rebalanced"
        assert _generation(bootstrap, group) == gen_before
        records = [r for r in read_offsets_topic(bootstrap) if r[0] == "group" and r[1] == group]
        last = records[-1][2]
        assert [m["group_instance_id"] for m in last["members"]].count("static-1") == 1
    finally:
        static.stop()
        other.stop()


def _generation(bootstrap: str, group: str) -> int:
    changes = [r for r in read_offsets_topic(bootstrap) if r[0] == "group" and r[1] == group]
    return changes[-1][2]["generation"]


# -- restarts -----------------------------------------------------------------------------------
def _commit(bootstrap: str, group: str, topic: str, offsets: dict[int, int]) -> None:
    from kafka.structs import OffsetAndMetadata
    consumer = KafkaConsumer(bootstrap_servers=bootstrap, group_id=group,
                             enable_auto_commit=False)
    try:
        consumer.commit({TopicPartition(topic, p): OffsetAndMetadata(o, f"meta-{p}", -1)
                         for p, o in offsets.items()})
    finally:
        consumer.close()


def _committed(bootstrap: str, group: str, topic: str, n: int) -> dict[int, int | None]:
    consumer = KafkaConsumer(bootstrap_servers=bootstrap, group_id=group,
                             enable_auto_commit=False)
    try:
        return {p: consumer.committed(TopicPartition(topic, p)) for p in range(n)}
    finally:
        consumer.close()


def test_committed_offsets_survive_restarts(tmp_path):
    b = BrokerProcess(tmp_path / "logs", overrides=OVERRIDES).start()
    try:
        create_topic(b.bootstrap, "restart-topic", 3)
        produce(b.bootstrap, "restart-topic", [f"r-{i}" for i in range(30)], 3)
        _commit(b.bootstrap, "restart-group", "restart-topic", {0: 4, 1: 7, 2: 9})
        expected = {0: 4, 1: 7, 2: 9}
        assert _committed(b.bootstrap, "restart-group", "restart-topic", 3) == expected
        b.restart()                            # SIGTERM
        assert _committed(b.bootstrap, "restart-group", "restart-topic", 3) == expected
        _commit(b.bootstrap, "restart-group", "restart-topic", {1: 8})
        commits = [r for r in read_offsets_topic(b.bootstrap)
                   if r[0] == "offset" and r[1] == "restart-group"]
        # One commit's records come in Kafka's map order (kafka_order.commit_order).
        first = [p for _, p in commit_order([("restart-topic", p) for p in range(3)])]
        assert [(r[3], r[4]["offset"]) for r in commits] == [
            (p, {0: 4, 1: 7, 2: 9}[p]) for p in first] + [(1, 8)]
        assert all(r[4]["metadata"] == f"meta-{r[3]}" and r[4]["version"] == 3 for r in commits)
        b.restart(hard=True)                   # kill -9
        assert _committed(b.bootstrap, "restart-group", "restart-topic", 3) == {0: 4, 1: 8, 2: 9}
    finally:
        b.kill()


# -- the independent decoder sees every commit and group change -------------------------------
def test_offsets_topic_records_every_change(gbroker):
    bootstrap, topic, group = gbroker.bootstrap, "groups-decoder", "decoder-group"
    create_topic(bootstrap, topic, 2)
    _commit(bootstrap, group, topic, {0: 1, 1: 2})
    _commit(bootstrap, group, topic, {0: 3})
    member = Member.python("kafka-python", bootstrap, topic, group)
    try:
        wait_for(lambda: member.assignment == [0, 1], "the member's assignment")
    finally:
        member.stop()                          # LeaveGroup: the group goes Empty
    admin = KafkaAdminClient(bootstrap_servers=bootstrap)
    try:
        wait_for(lambda: _state(admin, group) == "Empty", "the group to be Empty")
        admin.delete_groups([group])
    finally:
        admin.close()
    mine = [r for r in read_offsets_topic(bootstrap) if r[1] == group]
    offsets = [(r[3], r[4]["offset"]) for r in mine if r[0] == "offset" and r[4]]
    assert offsets[:3] == [(0, 1), (1, 2), (0, 3)]
    groups = [r[2] for r in mine if r[0] == "group"]
    stable = [g for g in groups if g and g["members"]]
    assert stable and stable[0]["protocol_type"] == "consumer" and stable[0]["protocol"]
    member_record = stable[0]["members"][0]
    assert member_record["client_host"].startswith("/") and member_record["assignment"]
    assert any(g and not g["members"] for g in groups), "no record of the group going Empty"
    assert groups[-1] is None, "no group tombstone after DeleteGroups"
    tombstoned = {r[3] for r in mine if r[0] == "offset" and r[4] is None}
    assert tombstoned == {0, 1}


def _state(admin, group: str) -> str:
    return admin.describe_groups([group])[group]["group_state"]


def _end(ends, tp) -> int:
    value = ends[tp]
    return value if isinstance(value, int) else value.offset


# -- admin clients ------------------------------------------------------------------------------
def _admin_setup(bootstrap: str, topic: str, group: str) -> None:
    create_topic(bootstrap, topic, 2)
    produce(bootstrap, topic, [f"x-{i}" for i in range(20)], 2)   # 10 per partition
    _commit(bootstrap, group, topic, {0: 4, 1: 6})


def test_admin_kafka_python(gbroker):
    bootstrap, topic, group = gbroker.bootstrap, "admin-kp", "admin-kp-group"
    _admin_setup(bootstrap, topic, group)
    admin = KafkaAdminClient(bootstrap_servers=bootstrap)
    try:
        assert group in [g["group_id"] for g in admin.list_groups()]
        described = admin.describe_groups([group])[group]
        assert described["group_state"] == "Empty" and described["members"] == []
        offsets = admin.list_group_offsets(group)[group]
        assert {tp.partition: om.offset for tp, om in offsets.items()} == {0: 4, 1: 6}
        ends = admin.list_partition_offsets({tp: OffsetSpec.LATEST for tp in offsets})
        lag = sum(_end(ends, tp) - om.offset for tp, om in offsets.items())
        assert lag == 10
        admin.delete_group_offsets(group, [TopicPartition(topic, 0)])
        assert [tp.partition for tp in admin.list_group_offsets(group)[group]] == [1]
        assert admin.delete_groups([group]) == {group: "OK"}
        assert group not in [g["group_id"] for g in admin.list_groups()]
    finally:
        admin.close()


def test_admin_confluent(gbroker):
    from confluent_kafka import ConsumerGroupTopicPartitions, TopicPartition as CTP
    from confluent_kafka.admin import AdminClient
    bootstrap, topic, group = gbroker.bootstrap, "admin-ck", "admin-ck-group"
    _admin_setup(bootstrap, topic, group)
    admin = AdminClient({"bootstrap.servers": bootstrap})
    listed = admin.list_consumer_groups().result(30)
    assert group in [g.group_id for g in listed.valid]
    described = admin.describe_consumer_groups([group])[group].result(30)
    assert described.group_id == group and str(described.state).endswith("EMPTY")
    request = [ConsumerGroupTopicPartitions(group)]
    got = admin.list_consumer_group_offsets(request)[group].result(30)
    committed = {tp.partition: tp.offset for tp in got.topic_partitions}
    assert committed == {0: 4, 1: 6}
    lag = sum(10 - o for o in committed.values())
    assert lag == 10
    request = [ConsumerGroupTopicPartitions(group, [CTP(topic, 0, 2)])]
    admin.alter_consumer_group_offsets(request)[group].result(30)
    got = admin.list_consumer_group_offsets([ConsumerGroupTopicPartitions(group)])[group].result(30)
    assert {tp.partition: tp.offset for tp in got.topic_partitions} == {0: 2, 1: 6}
    admin.delete_consumer_groups([group])[group].result(30)
    listed = admin.list_consumer_groups().result(30)
    assert group not in [g.group_id for g in listed.valid]


# -- Java -------------------------------------------------------------------------------------------
@pytest.fixture(scope="module")
def java_groups(java_clients):
    """GroupClients.java (compiled with the other programs of tests/java) against each
    kafka-clients version."""
    return {version: client.command("GroupClients") for version, client in java_clients.items()}


@pytest.mark.java
@pytest.mark.parametrize("version", ["3.9.0", "4.3.0"])
def test_java_consumers_with_every_assignor(gbroker, java_groups, version):
    bootstrap = gbroker.bootstrap
    topic = f"java-groups-{version.replace('.', '-')}"
    create_topic(bootstrap, topic, 6)
    groups = {}
    try:
        for assignor in ("range", "roundrobin", "sticky", "cooperative-sticky"):
            group = f"java-{version}-{assignor}"
            groups[assignor] = [Member(java_groups[version] + ["consume", bootstrap, topic, group,
                                                             assignor], f"java-{assignor}")
                                for _ in range(2)]
        for assignor, members in groups.items():
            wait_for(lambda: _covers_all(members, 6), f"{assignor}: two members sharing six")
        values = [f"j-{i}" for i in range(240)]
        produce(bootstrap, topic, values)
        for members in groups.values():
            _exactly_once(members, values)
    finally:
        for members in groups.values():
            for m in members:
                m.stop()


@pytest.mark.java
@pytest.mark.parametrize("version", ["3.9.0", "4.3.0"])
def test_java_admin(gbroker, java_groups, version):
    bootstrap = gbroker.bootstrap
    topic, group = f"admin-java-{version.replace('.', '-')}", f"admin-java-{version}"
    _admin_setup(bootstrap, topic, group)
    proc = subprocess.run(java_groups[version] + ["admin", bootstrap, group, topic],
                          capture_output=True, text=True, timeout=300)
    assert proc.returncode == 0, proc.stderr
    facts = dict(line.split(" ", 1) for line in proc.stdout.splitlines() if " " in line)
    assert group in facts["LISTED"].split(",")
    assert facts["STATE"].upper() == "EMPTY" and facts["MEMBERS"] == "0"
    assert facts["COMMITTED"] == "2" and facts["LAG"] == "10"
    assert facts["AFTER_DELETE_OFFSETS"] == "1"
    assert group not in facts["LISTED_AFTER"].split(",")
