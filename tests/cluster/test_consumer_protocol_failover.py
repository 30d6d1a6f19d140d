"""The group coordinator's failover for a consumer-protocol group (KIP-848) on three brokers.

Three members of Kafka 4.3's Java consumer (``group.protocol=consumer``, one JVM:
tests/java/GroupProtocolMembers.java) consume a topic of 12 partitions at replication
factor 3; ``__consumer_offsets`` has replication factor 3.  A fourth member starts joining,
and as soon as the coordinator (FindCoordinator) shows it in the group, while the group is
still reconciling, the coordinator's broker is killed (kill -9).

What Kafka does on a coordinator change (GroupMetadataManager: the new leader of the
group's ``__consumer_offsets`` partition replays the group's records, then ``onLoaded``
schedules every member's session timeout, and the rebalance timeout of members still
revoking) is what the test demands of the new coordinator:
- it answers ConsumerGroupDescribe with the group it loaded: the group epoch is not below
  the one described before the kill, every member described before is there with its
  member id, and no member's epoch went backwards or to 0;
- the Java members never lose their partitions (no ``onPartitionsLost``: nobody was fenced)
  and keep their member ids;
- the rebalance completes on the new coordinator: the group gets Stable with the four
  members, each at the group epoch, and the 12 partitions assigned once each;
- consumption continues: every record produced before and after the failover is consumed
  (counted by value), and the committed offsets reach the log end of every partition.

The broker settings shorten the consumer group heartbeat interval (2 s) so that the
reconciliation spans a few heartbeats; the session timeout stays Kafka's 45 s, longer than
the failover.  Every wait is bounded; the JVM and the brokers are killed however the test ends.
"""
from __future__ import annotations

import pytest

from tests.support import cluster_clients as clients
from tests.support.cluster import FAILOVER_S, REFERENCE, running_cluster, wait_for
from tests.support.consumer_protocol import JavaMembers, describe_group, find_coordinator
from tests.support.java_clients import ROOT, client_jars, compiled

PARTITIONS = 12
GROUP_SETTINGS = {
    "group.consumer.heartbeat.interval.ms": "2000",
    "group.consumer.min.heartbeat.interval.ms": "1000",
}
SETTLE_S = 90          # a group of members reaching Stable (JVM start included)
CONSUME_S = 90         # produced records reaching the members


@pytest.fixture
def cluster(tmp_path, zookeeper_server):  # noqa: F811 (the module's own settings)
    if REFERENCE == "kafka":
        pytest.skip("Kafka 3.9 brokers do not serve the consumer group protocol by default")
    yield from running_cluster(tmp_path / "cluster", zookeeper_server, GROUP_SETTINGS)


@pytest.fixture
def java_members(tmp_path):
    """A factory of JavaMembers processes (kafka-clients 4.3), stopped at the end."""
    client_jars(["4.3.0"])
    java = compiled("4.3.0", [ROOT / "tests" / "java" / "GroupProtocolMembers.java"],
                    tmp_path / "classes")
    started: list[JavaMembers] = []

    def start(bootstrap: str, topic: str, group: str, members: int) -> JavaMembers:
        process = JavaMembers(java.command("GroupProtocolMembers", bootstrap, topic, group,
                                           str(members)), tmp_path / f"members-{len(started)}.log")
        started.append(process)
        return process
    yield start
    for process in started:
        process.stop()


def test_new_coordinator_resumes_group_mid_rebalance(cluster, java_members, unique):
    c = cluster
    topic, group = unique("kip848-failover"), unique("kip848-group")
    clients.create_topic(c.bootstrap(1), topic, partitions=PARTITIONS, replication=3)
    c.wait_topic(topic, PARTITIONS)
    before_values = _produce(c.bootstrap(1), topic, "a", 10)

    members = java_members(_bootstrap(c, c.running_ids()), topic, group, 3)
    coordinator = _coordinator(c, group, via=1)
    stable = wait_for(lambda: _settled(c, coordinator, group, topic, 3), SETTLE_S,
                      lambda: "3 members Stable with 12 partitions\n"
                      + describe_group(c.bootstrap(coordinator), group).summary())
    wait_for(lambda: before_values <= members.consumed(), CONSUME_S,
             lambda: f"{len(before_values - members.consumed())} records before the failover")

    # A 4th member joins; kill the coordinator as soon as it describes the 4 of them.
    members.command("add")
    before = wait_for(lambda: _four_members(c, coordinator, group), 60,
                      "the coordinator to describe a 4th member")
    c.kill(coordinator)
    print(f"killed coordinator {coordinator}; it described:\n{before.summary()}")
    assert not before.settled(), (
        "the group was already Stable when its coordinator was killed (no rebalance in "
        "progress):\n" + before.summary())
    assert before.group_epoch > stable.group_epoch, before.summary()

    survivors = [i for i in c.running_ids()]
    new_coordinator = wait_for(lambda: _moved(c, group, survivors, coordinator),
                               FAILOVER_S + 30, "a new coordinator for the group")
    loaded = wait_for(lambda: _loaded(c, new_coordinator, group), 60,
                      "the new coordinator to describe the group")
    print(f"new coordinator {new_coordinator} loaded:\n{loaded.summary()}")
    _check_resumed(before, loaded)

    settled = wait_for(lambda: _settled(c, new_coordinator, group, topic, 4), SETTLE_S,
                       lambda: "4 members Stable with 12 partitions on the new coordinator\n"
                       "before the kill:\n" + before.summary() + "\nnow:\n"
                       + describe_group(c.bootstrap(new_coordinator), group).summary())
    print(f"settled:\n{settled.summary()}")
    assert settled.ids() == before.ids(), before.summary() + "\n" + settled.summary()
    assert settled.group_epoch >= before.group_epoch

    after_values = _produce(c.bootstrap(survivors[0]), topic, "b", 20)
    wait_for(lambda: after_values <= members.consumed(), CONSUME_S,
             lambda: f"{len(after_values - members.consumed())} of {len(after_values)} records "
                     "produced after the failover")
    assert not (before_values | after_values) - members.consumed()

    _check_no_rejoin(members, before)

    ends = {p: 30 for p in range(PARTITIONS)}
    wait_for(lambda: clients.committed_offsets(c.bootstrap(new_coordinator), group, topic,
                                               range(PARTITIONS)) == ends, 60,
             lambda: "committed offsets at the log end: " + str(clients.committed_offsets(
                 c.bootstrap(new_coordinator), group, topic, range(PARTITIONS)))
             + f"; failed commits: {members.lines('COMMITFAIL')}")


# --------------------------------------------------------------------------- steps

def _bootstrap(c, ids) -> str:
    return ",".join(c.bootstrap(i) for i in ids)


def _produce(bootstrap: str, topic: str, tag: str, per_partition: int) -> set[str]:
    values = {p: clients.record_values(topic, p, per_partition, tag) for p in range(PARTITIONS)}
    clients.produce_confluent(bootstrap, topic, values)
    return {v.decode() for vals in values.values() for v in vals}


def _coordinator(c, group: str, via: int) -> int:
    found = wait_for(lambda: (r := find_coordinator(c.bootstrap(via), group))[0] == 0 and r,
                     30, f"a coordinator for {group}")
    return found[1]


def _settled(c, coordinator: int, group: str, topic: str, count: int):
    """The group's description when it is Stable with ``count`` members sharing the 12
    partitions once each."""
    view = describe_group(c.bootstrap(coordinator), group)
    if view.settled() and len(view.members) == count and \
            view.assigned(topic) == list(range(PARTITIONS)):
        return view
    return None


def _four_members(c, coordinator: int, group: str):
    view = describe_group(c.bootstrap(coordinator), group, timeout=5)
    return view if view.error == 0 and len(view.members) == 4 else None


def _moved(c, group: str, survivors: list[int], old: int) -> int | None:
    answers = {find_coordinator(c.bootstrap(i), group, timeout=5) for i in survivors}
    if len(answers) == 1:
        error, node = answers.pop()
        if error == 0 and node != old and node in survivors:
            return node
    return None


def _loaded(c, coordinator: int, group: str):
    """The new coordinator's description once it has loaded the group (not NOT_COORDINATOR,
    COORDINATOR_LOAD_IN_PROGRESS, ...)."""
    view = describe_group(c.bootstrap(coordinator), group, timeout=5)
    if view.error in (14, 15, 16):   # loading, not available, not the coordinator yet
        return None
    return view


def _check_resumed(before, loaded) -> None:
    """The loaded group continues the one described before the kill."""
    text = "before the kill:\n" + before.summary() + "\nloaded:\n" + loaded.summary()
    assert loaded.error == 0, text
    assert loaded.group_epoch >= before.group_epoch, text
    assert loaded.assignment_epoch >= before.assignment_epoch, text
    assert loaded.ids() >= before.ids(), text
    for member in before.members:
        now = loaded.member(member.member_id)
        assert now.member_epoch >= member.member_epoch > 0, text


def _check_no_rejoin(members: JavaMembers, before) -> None:
    """No Java member lost its partitions (was fenced), changed its member id or went back
    to epoch 0 once it had joined; the ids they used are those the old coordinator described."""
    lost = members.lines("LOST")
    assert not lost, f"members fenced: {lost}"
    epochs: dict[str, list[tuple[str, int]]] = {}
    for _, index, member_id, epoch in members.lines("MEMBER"):
        if member_id:
            epochs.setdefault(index, []).append((member_id, int(epoch)))
    for index, seen in epochs.items():
        assert len({member_id for member_id, _ in seen}) == 1, f"member {index} ids: {seen}"
        joined = [epoch for _, epoch in seen if epoch > 0]
        after_join = [epoch for _, epoch in seen][len(seen) - len(joined):]
        assert joined == after_join and joined == sorted(joined), (
            f"member {index} left its epoch after joining (rejoined from scratch): {seen}")
    ids = {member_id for seen in epochs.values() for member_id, _ in seen}
    assert ids == before.ids(), (epochs, before.summary())
