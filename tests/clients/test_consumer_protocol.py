"""The consumer group protocol (``group.protocol=consumer``) with real clients.

Members are processes (tests/java/ConsumerProtocol.java on kafka-clients 4.3.0,
tests/support/confluent_member.py on confluent-kafka) that print every rebalance-listener call
with the wall clock; tests/support/group_members.py reads them.  One broker for the module, with
a short consumer-group session timeout and heartbeat interval (within Kafka's bounds).

- three members share a 12-partition topic 4/4/4, with the uniform and the range assignor
  (range: each member a contiguous range);
- a fourth member joins (Java and confluent-kafka): members revoke only the partitions that
  move (a member never revokes one it ends up with, the revoked ones are exactly the new
  member's), and no partition is ever owned by two members at one instant;
- a member killed with SIGKILL: its partitions go to the others after the session timeout
  and not within its first half;
- a static member (``group.instance.id``) closes (leaving with epoch -2) and restarts within
  the session timeout (its group sets a longer one, ``consumer.session.timeout.ms``, since
  the restart includes a JVM's start): it gets back exactly its partitions, the others revoke
  nothing;
- a broker-side regular expression subscription picks up a matching topic created later;
- committed offsets: a restarted group resumes where the last one committed (every record read
  once); on the wire, OffsetCommit v9 and OffsetFetch v9 with a wrong member epoch get
  STALE_MEMBER_EPOCH;
- classic groups (Java 3.9, kafka-python) beside them on the same broker.
Waits are bounded polls for a condition.  The module starts its own broker (its settings are
the test's premises, so ``KAFKAPY_E2E_BOOTSTRAP`` does not apply) and compiles only
ConsumerProtocol.java (against 4.3.0 for consumer members, 3.9.0 for classic ones).
"""
from __future__ import annotations

import base64
import time
import uuid

import pytest
from kafka import KafkaAdminClient, KafkaConsumer, KafkaProducer
from kafka.admin import NewTopic

import kafkapy.protocol.consumer_group_apis  # noqa: F401  (registers ConsumerGroupHeartbeat)
from kafkapy.protocol.errors import ErrorCode
from kafkapy.protocol.messages import REQUESTS
from tests.support.broker_process import BrokerProcess
from tests.support.group_members import (MemberProcess, confluent_member, java_member,
                                         overlaps, settle)
from tests.support.java_clients import JAVA_SOURCE, JavaClient, client_jars, compiled
from tests.support.share_clients import alter_group_configs
from tests.support.wire import WireClient, until

pytestmark = [pytest.mark.java, pytest.mark.timeout(600)]

SESSION_MS = 8000
HEARTBEAT_MS = 500
STATIC_SESSION_MS = 30000
OVERRIDES = {
    "group.consumer.session.timeout.ms": str(SESSION_MS),
    "group.consumer.min.session.timeout.ms": "1000",
    "group.consumer.heartbeat.interval.ms": str(HEARTBEAT_MS),
    "group.consumer.min.heartbeat.interval.ms": "100",
    "group.min.session.timeout.ms": "1000",
    "offsets.topic.num.partitions": "4",
}
TOPIC = "cp-twelve"
PARTITIONS = {(TOPIC, p) for p in range(12)}
CONSUMER = "group.protocol=consumer"
WAIT = 60.0


# -- fixtures and helpers ---------------------------------------------------------------------
@pytest.fixture(scope="module")
def cbroker(tmp_path_factory):
    b = BrokerProcess(tmp_path_factory.mktemp("consumer-protocol") / "logs",
                      overrides=OVERRIDES).start()
    _create_topics(b.bootstrap, {TOPIC: 12})
    yield b
    b.stop()


@pytest.fixture(scope="module")
def java_programs(tmp_path_factory) -> dict[str, JavaClient]:
    """tests/java/ConsumerProtocol.java alone, compiled against kafka-clients 4.3.0 (consumer
    protocol members) and 3.9.0 (classic members)."""
    versions = ("3.9.0", "4.3.0")
    client_jars(versions)
    build = tmp_path_factory.mktemp("consumer-protocol-java")
    source = JAVA_SOURCE.parent / "ConsumerProtocol.java"
    return {version: compiled(version, [source], build / version) for version in versions}


class _Members:
    """The member processes a test starts; those still running are killed at its end."""

    def __init__(self, java_clients, bootstrap: str, log_dir) -> None:
        self._java = java_clients
        self.bootstrap = bootstrap
        self._log_dir = log_dir
        self.started: list[MemberProcess] = []

    def java(self, name: str, group: str, subscription: str, *options: str,
             version: str = "4.3.0") -> MemberProcess:
        return self._keep(java_member(self._java[version], name, self._log_dir, self.bootstrap,
                                      group, subscription, *options))

    def confluent(self, name: str, group: str, topic: str, *settings: str) -> MemberProcess:
        return self._keep(confluent_member(name, self._log_dir, self.bootstrap, group, topic,
                                           *settings))

    def _keep(self, member: MemberProcess) -> MemberProcess:
        self.started.append(member)
        return member

    def end(self) -> None:
        for member in self.started:
            member.kill()


@pytest.fixture
def members(cbroker, java_programs, tmp_path):
    group = _Members(java_programs, cbroker.bootstrap, tmp_path)
    yield group
    group.end()


def _create_topics(bootstrap: str, topics: dict[str, int]) -> None:
    admin = KafkaAdminClient(bootstrap_servers=bootstrap)
    try:
        admin.create_topics([NewTopic(name, n, 1) for name, n in topics.items()])
    finally:
        admin.close()


def _produce(bootstrap: str, topic: str, partitions: int, per_partition: int) -> None:
    producer = KafkaProducer(bootstrap_servers=bootstrap)
    for i in range(partitions * per_partition):
        producer.send(topic, f"v{i}".encode(), partition=i % partitions)
    producer.flush()
    producer.close()


def _report(members: list[MemberProcess]) -> str:
    return "\n".join(m.describe() for m in members)


def _check_broker_agrees(bootstrap: str, group: str, owned: dict[str, frozenset],
                         assignor: str = "uniform") -> None:
    """ConsumerGroupDescribe v1 of ``group`` (bounded wait for it to be stable): consumer
    members, all at the group's epoch, assigned by ``assignor`` what the clients say they
    own."""
    def described():
        client = WireClient(bootstrap)
        try:
            return client.request(69, 1, group_ids=[group],
                                  include_authorized_operations=False).groups[0]
        finally:
            client.close()

    def assignments(g) -> list[list]:
        return sorted(_partitions(m.assignment) for m in g.members)

    wanted = sorted(sorted(o) for o in owned.values())
    group_seen = until(described, lambda g: g.group_state == "Stable"
                       and assignments(g) == wanted, timeout=WAIT)
    assert group_seen.error_code == 0 and group_seen.group_state == "Stable", group_seen
    assert assignments(group_seen) == wanted, group_seen
    assert group_seen.assignment_epoch == group_seen.group_epoch, group_seen
    assert group_seen.assignor_name == assignor, group_seen
    for m in group_seen.members:
        assert m.member_type == 1 and m.member_epoch == group_seen.group_epoch, group_seen
        assert _partitions(m.target_assignment) == _partitions(m.assignment), group_seen


def _partitions(assignment) -> list[tuple[str, int]]:
    """A described member's assignment as sorted (topic, partition) pairs."""
    return sorted({(t.topic_name, p) for t in assignment.topic_partitions for p in t.partitions})


def _check_fourth_joins(bootstrap: str, group: str, first: list[MemberProcess], start_fourth
                        ) -> None:
    """``first`` settled 4/4/4 on the topic; a fourth member joins (``start_fourth()``): the
    first revoke exactly what it gets, nothing they keep, and no partition has two owners."""
    settle(first, PARTITIONS, [4, 4, 4], timeout=WAIT)
    marks = {m.name: m.mark() for m in first}
    fourth = start_fourth()
    everyone = first + [fourth]
    final = settle(everyone, PARTITIONS, [3, 3, 3, 3], timeout=WAIT)
    report = _report(everyone)
    revoked = {m.name: m.moved("REVOKED", marks[m.name]) for m in first}
    for m in first:
        assert not revoked[m.name] & final[m.name], f"{m.name} revoked what it keeps\n{report}"
        assert not m.moved("LOST", marks[m.name]), f"{m.name} lost partitions\n{report}"
        assert not m.moved("ASSIGNED", marks[m.name]), f"{m.name} was given more\n{report}"
    assert sum(map(len, revoked.values())) == len(final[fourth.name]) == 3, report
    assert set().union(*revoked.values()) == final[fourth.name], report
    assert overlaps(everyone) == [], report
    _check_broker_agrees(bootstrap, group, final)


# -- 1. three members, 4 partitions each ------------------------------------------------------
@pytest.mark.parametrize("assignor", ["uniform", "range"])
def test_three_members_share_twelve_partitions(members, assignor):
    group = f"cp-three-{assignor}"
    three = [members.java(f"{assignor}-{i}", group, TOPIC, CONSUMER,
                          f"group.remote.assignor={assignor}") for i in range(3)]
    owned = settle(three, PARTITIONS, [4, 4, 4], timeout=WAIT)
    report = _report(three)
    assert overlaps(three) == [], report
    _check_broker_agrees(members.bootstrap, group, owned, assignor)
    if assignor == "range":
        for name, partitions in owned.items():
            numbers = sorted(p for _, p in partitions)
            assert numbers == list(range(numbers[0], numbers[0] + 4)), (name, numbers, report)


# -- 2. a fourth member joins -----------------------------------------------------------------
def test_fourth_java_member_moves_only_its_partitions(members):
    group = "cp-fourth-java"
    first = [members.java(f"java-{i}", group, TOPIC, CONSUMER) for i in range(3)]
    _check_fourth_joins(members.bootstrap, group, first,
                        lambda: members.java("java-3", group, TOPIC, CONSUMER))


# -- 3. a member killed -----------------------------------------------------------------------
def test_killed_member_partitions_move_after_session_timeout(members):
    group = "cp-kill"
    three = [members.java(f"kill-{i}", group, TOPIC, CONSUMER) for i in range(3)]
    owned = settle(three, PARTITIONS, [4, 4, 4], timeout=WAIT)
    victim, survivors = three[1], [three[0], three[2]]
    marks = {m.name: m.mark() for m in survivors}
    killed_ms = victim.kill()
    final = settle(survivors, PARTITIONS, [6, 6], timeout=SESSION_MS / 1000 + WAIT)
    report = _report(three)
    taken = [e for m in survivors for e in m.since(marks[m.name], ("ASSIGNED",))]
    assert {p for e in taken for p in e.partitions} == owned[victim.name], report
    first_taken = min(e.ms for e in taken)
    assert first_taken - killed_ms >= SESSION_MS // 2, (
        f"partitions moved {first_taken - killed_ms} ms after the kill (session timeout "
        f"{SESSION_MS} ms)\n{report}")
    for m in survivors:
        assert final[m.name] >= owned[m.name], report
        assert not m.moved("REVOKED", marks[m.name]) and not m.moved("LOST", marks[m.name]), report


# -- 4. static membership ---------------------------------------------------------------------
def test_static_member_restart_gets_its_partitions_back(members):
    group = "cp-static"
    # The replacement is a new JVM: on a loaded 2-core machine its start alone can take longer
    # than the module's short session timeout, so this group sets a longer one of its own.
    assert alter_group_configs(members.bootstrap, group,
                               {"consumer.session.timeout.ms": str(STATIC_SESSION_MS)})[0] == 0

    def static(name: str, instance: str) -> MemberProcess:
        return members.java(name, group, TOPIC, CONSUMER, f"group.instance.id={instance}")

    s0, s1, s2 = (static(f"static-{i}", f"s{i}") for i in range(3))
    owned = settle([s0, s1, s2], PARTITIONS, [4, 4, 4], timeout=WAIT)
    marks = {m.name: m.mark() for m in (s0, s2)}
    stopped_ms = int(time.time() * 1000)
    assert s1.stop() == 0, s1.describe()
    again = static("static-1-again", "s1")
    final = settle([s0, again, s2], PARTITIONS, [4, 4, 4], timeout=WAIT)
    report = _report([s0, s1, again, s2])
    back_ms = again.since(0, ("ASSIGNED",))[0].ms
    assert back_ms - stopped_ms < STATIC_SESSION_MS, (
        f"the restart took {back_ms - stopped_ms} ms, beyond the session timeout: this machine "
        f"is too slow for the scenario\n{report}")
    assert final[again.name] == owned[s1.name], report
    assert again.moved("ASSIGNED") == owned[s1.name], report
    time.sleep(4 * HEARTBEAT_MS / 1000)    # room for a wrong revocation to show
    for m in (s0, s2):
        assert m.since(marks[m.name]) == [], f"{m.name} saw a rebalance\n{report}"
    assert again.since(0, ("REVOKED", "LOST")) == [], report


# -- 5. regular-expression subscription -------------------------------------------------------
def test_regex_subscription_picks_up_new_topic(members):
    _create_topics(members.bootstrap, {"cpre-a": 2})
    member = members.java("regex", "cp-regex", "cpre-.*", "--pattern", CONSUMER)
    first = {("cpre-a", 0), ("cpre-a", 1)}
    settle([member], first, timeout=WAIT)
    _create_topics(members.bootstrap, {"cpre-b": 2, "cpx-b": 1})
    wanted = first | {("cpre-b", 0), ("cpre-b", 1)}
    settle([member], wanted, timeout=30)
    time.sleep(4 * HEARTBEAT_MS / 1000)    # room for the non-matching topic to show
    assert member.owned() == wanted, member.describe()
    assert member.since(0, ("REVOKED", "LOST")) == [], member.describe()


# -- 6. confluent-kafka -----------------------------------------------------------------------
def test_fourth_confluent_member_moves_only_its_partitions(members):
    group = "cp-fourth-confluent"
    first = [members.confluent(f"confluent-{i}", group, TOPIC) for i in range(3)]
    _check_fourth_joins(members.bootstrap, group, first,
                        lambda: members.confluent("confluent-3", group, TOPIC))


# -- 7. offsets -------------------------------------------------------------------------------
def test_restarted_group_resumes_from_committed_offsets(members):
    topic, group, per_partition = "cp-offsets", "cp-commits", 100
    _create_topics(members.bootstrap, {topic: 3})
    _produce(members.bootstrap, topic, 3, per_partition)
    every = {((topic, p), o) for p in range(3) for o in range(per_partition)}
    first = members.java("commit-first", group, topic, CONSUMER, "max.poll.records=20",
                         "--records", "--stop-after=120")
    assert first.wait_exit(WAIT) == 0, first.describe()
    before = first.records()
    assert 120 <= len(before) < len(every), first.describe()
    then = [members.java(f"commit-then-{i}", group, topic, CONSUMER, "max.poll.records=20",
                         "--records") for i in range(2)]
    until(lambda: {r for m in [first] + then for r in m.records()},
          lambda got: len(got) >= len(every) or not all(m.alive for m in then), timeout=WAIT)
    for m in then:
        assert m.stop() == 0, m.describe()
    read = before + [r for m in then for r in m.records()]
    assert set(read) == every, f"{len(every - set(read))} records never read"
    assert len(read) == len(every), f"{len(read) - len(every)} records read twice"
    admin = KafkaAdminClient(bootstrap_servers=members.bootstrap)
    try:
        committed = admin.list_group_offsets(group)[group]
    finally:
        admin.close()
    assert {(tp.topic, tp.partition): meta.offset for tp, meta in committed.items()} == {
        (topic, p): per_partition for p in range(3)}


def _member_id() -> str:
    return base64.urlsafe_b64encode(uuid.uuid4().bytes).rstrip(b"=").decode()


def test_stale_member_epoch_on_the_wire(cbroker):
    group, member = "cp-wire-epoch", _member_id()
    client = WireClient(cbroker.bootstrap)
    try:
        found = until(lambda: client.request(10, 4, key_type=0, coordinator_keys=[group]),
                      lambda r: r.coordinators[0].error_code == 0, timeout=WAIT)
        assert found.coordinators[0].error_code == 0, found
        joined = client.request(
            68, 1, group_id=group, member_id=member, member_epoch=0, instance_id=None,
            rack_id=None, rebalance_timeout_ms=30000, subscribed_topic_names=[TOPIC],
            subscribed_topic_regex=None, server_assignor=None, topic_partitions=[])
        assert joined.error_code == 0 and joined.member_epoch > 0, joined
        epoch = joined.member_epoch
        assert _commit(client, group, member, epoch + 5) == ErrorCode.STALE_MEMBER_EPOCH
        assert _fetch(client, group, member, epoch + 5) == ErrorCode.STALE_MEMBER_EPOCH
        assert _commit(client, group, member, epoch) == 0
        assert _fetch(client, group, member, epoch) == 0
        left = client.request(68, 1, group_id=group, member_id=member, member_epoch=-1,
                              instance_id=None, rack_id=None, rebalance_timeout_ms=-1,
                              subscribed_topic_names=None, subscribed_topic_regex=None,
                              server_assignor=None, topic_partitions=None)
        assert left.error_code == 0 and left.member_epoch == -1, left
    finally:
        client.close()


def _commit(client: WireClient, group: str, member: str, epoch: int) -> int:
    """OffsetCommit v9 of offset 1 on partition 0; the partition's error code."""
    request = REQUESTS[8]
    r = client.request(8, 9, group_id=group, generation_id_or_member_epoch=epoch,
                       member_id=member, group_instance_id=None, topics=[
                           request.OffsetCommitRequestTopic(name=TOPIC, partitions=[
                               request.OffsetCommitRequestTopic.OffsetCommitRequestPartition(
                                   partition_index=0, committed_offset=1,
                                   committed_leader_epoch=-1, committed_metadata="")])])
    return r.topics[0].partitions[0].error_code


def _fetch(client: WireClient, group: str, member: str, epoch: int) -> int:
    """OffsetFetch v9 of partition 0; the group's error code."""
    request = REQUESTS[9]
    r = client.request(9, 9, groups=[request.OffsetFetchRequestGroup(
        group_id=group, member_id=member, member_epoch=epoch, topics=[
            request.OffsetFetchRequestGroup.OffsetFetchRequestTopics(
                name=TOPIC, partition_indexes=[0])])], require_stable=False)
    return r.groups[0].error_code


# -- 8. classic groups beside them ------------------------------------------------------------
def test_classic_groups_beside_consumer_groups(members):
    topic = "cp-classic-records"
    _create_topics(members.bootstrap, {topic: 3})
    _produce(members.bootstrap, topic, 3, 30)
    classic = [members.java(f"classic-{i}", "cp-classic-java", TOPIC, "session.timeout.ms=6000",
                            "heartbeat.interval.ms=500", version="3.9.0") for i in range(2)]
    consumer = KafkaConsumer(topic, bootstrap_servers=members.bootstrap,
                             group_id="cp-classic-python", auto_offset_reset="earliest",
                             enable_auto_commit=False)
    read: list[tuple[int, int]] = []

    def poll() -> list[tuple[int, int]]:
        for records in consumer.poll(timeout_ms=500).values():
            read.extend((r.partition, r.offset) for r in records)
        return read
    try:
        until(poll, lambda got: len(got) >= 90, timeout=WAIT)
        consumer.commit()
    finally:
        consumer.close()
    assert sorted(read) == [(p, o) for p in range(3) for o in range(30)]
    settle(classic, PARTITIONS, [6, 6], timeout=WAIT)
    assert overlaps(classic) == [], _report(classic)

