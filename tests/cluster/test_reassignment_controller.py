"""Partition reassignment on a real cluster, driven through kafka-python's admin client
(AlterPartitionReassignments / ListPartitionReassignments, answered by the controller).

What is checked, as an operator sees it: the topic znode (RS, adding_replicas,
removing_replicas) while in flight and after, every broker's Metadata, the listing, the
old replica's log dir gone from its broker, and every record produced before readable after.
A reassignment is held in flight by SIGSTOPping its target broker (it cannot fetch, so it
cannot join the ISR); resumed, it catches up and the reassignment completes -- also after
the controller was killed with -9 in between (the new controller resumes it from the topic
znode).  ``KAFKAPY_CLUSTER_REFERENCE=kafka`` runs the same against Kafka 3.9.  The legacy
``/admin/reassign_partitions`` znode and Kafka's kafka-reassign-partitions.sh are
test_reassignment.py's.
"""
from __future__ import annotations

from kafka import TopicPartition
from kafka.admin import KafkaAdminClient

from tests.cluster import clients
from tests.cluster.conftest import FAILOVER_S, wait_for
from tests.integration.request_fields import fields

RECORDS = 200
SETTLE_S = 60


def admin(c, via: int = 1) -> KafkaAdminClient:
    return KafkaAdminClient(bootstrap_servers=c.bootstrap(via), request_timeout_ms=30000)


def alter(c, reassignments: dict, via: int = 1) -> dict:
    a = admin(c, via)
    try:
        return a.alter_partition_reassignments(
            {TopicPartition(t, p): r for (t, p), r in reassignments.items()})
    finally:
        a.close()


def listed(c, via: int = 1) -> dict:
    """{(topic, p): (replicas, adding, removing)} of the reassignments in flight."""
    a = admin(c, via)
    try:
        got = a.list_partition_reassignments()
    finally:
        a.close()
    return {(tp.topic, tp.partition): (list(v["replicas"]), list(v["adding_replicas"]),
                                       list(v["removing_replicas"])) for tp, v in got.items()}


def alter_raw(c, node: int, reassignments: dict) -> dict:
    """AlterPartitionReassignments v0 straight to broker ``node`` (no client bootstrap, which
    might pick a paused broker): {(topic, p): error code}, or the top-level code."""
    topics: dict[str, list] = {}
    for (t, p), r in reassignments.items():
        topics.setdefault(t, []).append({"partition_index": p, "replicas": r})
    r = clients.request(c, node, 45, 0, **fields(45, timeout_ms=30000, topics=[
        {"name": t, "partitions": ps} for t, ps in topics.items()]))
    if r.error_code:
        return r.error_code
    return {(t.name, p.partition_index): p.error_code for t in r.responses for p in t.partitions}


def listed_raw(c, node: int) -> dict:
    r = clients.request(c, node, 46, 0, timeout_ms=30000, topics=None)
    assert r.error_code == 0, r
    return {(t.name, p.partition_index): (list(p.replicas), list(p.adding_replicas),
                                          list(p.removing_replicas))
            for t in r.topics for p in t.partitions}


def znode(c, topic: str) -> dict:
    return c.znode_json(f"/brokers/topics/{topic}")


def produce(c, topic: str, partitions: list[int], tag: str = "") -> dict[int, list[bytes]]:
    values = {p: clients.record_values(topic, p, RECORDS, tag) for p in partitions}
    clients.produce_kafka_python(c.bootstrap(1), topic, values)
    return values


def assert_readable(c, topic: str, values: dict[int, list[bytes]], via: int) -> None:
    got = clients.consume_kafka_python(c.bootstrap(via), topic,
                                       {p: len(v) for p, v in values.items()})
    assert got == values


def wait_done(c, topic: str, expected: dict[int, list[int]]) -> None:
    """Until the topic znode holds ``expected`` with nothing adding or removing, and every
    running broker's Metadata lists those replicas, all of them in the ISR."""
    def done():
        z = znode(c, topic)
        if {int(p): r for p, r in z["partitions"].items()} != expected:
            return False
        if z.get("adding_replicas") or z.get("removing_replicas"):
            return False
        for i in c.running_ids():
            view = c.metadata(i, [topic]).topics.get(topic, {})
            for p, replicas in expected.items():
                if p not in view or view[p].replicas != replicas:
                    return False
                if sorted(view[p].isr) != sorted(replicas) or view[p].leader not in replicas:
                    return False
        return True
    wait_for(done, SETTLE_S, lambda: f"{topic} reassigned to {expected}: znode "
             f"{znode(c, topic)}\n{c.summary()}")


def replica_dirs(c, node_id: int, topic: str, partition: int) -> list[str]:
    """The partition's directories in the broker's log dir (a deleted one may linger
    renamed ``<t>-<p>.<id>-delete`` until log.segment.delete.delay.ms)."""
    root = c.nodes[node_id].log_dir
    if not root.is_dir():
        return []
    prefix = f"{topic}-{partition}"
    return sorted(d.name for d in root.iterdir()
                  if d.name == prefix or d.name.startswith(prefix + "."))


def test_move_a_topic_from_brokers_1_2_to_2_3(shared_cluster, unique):
    c = shared_cluster
    topic = unique("moved")
    clients.create_topic(c.bootstrap(1), topic, assignment={0: [1, 2], 1: [2, 1]})
    c.wait_topic(topic, 2)
    values = produce(c, topic, [0, 1])
    assert replica_dirs(c, 1, topic, 0) == [f"{topic}-0"]

    got = alter(c, {(topic, 0): [2, 3], (topic, 1): [3, 2]})
    assert got == {TopicPartition(topic, 0): None, TopicPartition(topic, 1): None}
    wait_done(c, topic, {0: [2, 3], 1: [3, 2]})
    assert listed(c) == {}
    assert listed(c, via=2) == {}           # routed to the controller from any broker
    for p in (0, 1):
        wait_for(lambda p=p: replica_dirs(c, 1, topic, p) == [], SETTLE_S,
                 lambda p=p: f"{topic}-{p} deleted from broker 1: "
                             f"{replica_dirs(c, 1, topic, p)}")
        assert replica_dirs(c, 3, topic, p) == [f"{topic}-{p}"]
    assert_readable(c, topic, values, via=3)
    # the moved partitions take new records
    more = produce(c, topic, [0, 1], tag="after-")
    assert_readable(c, topic, {p: values[p] + more[p] for p in (0, 1)}, via=2)


def test_replication_factor_1_to_3_then_3_to_2(shared_cluster, unique):
    c = shared_cluster
    topic = unique("rf")
    clients.create_topic(c.bootstrap(1), topic, assignment={0: [1]})
    c.wait_topic(topic, 1)
    values = produce(c, topic, [0])
    assert alter(c, {(topic, 0): [1, 2, 3]}) == {TopicPartition(topic, 0): None}
    wait_done(c, topic, {0: [1, 2, 3]})
    assert c.partition_state(topic, 0)["leader"] == 1
    assert_readable(c, topic, values, via=2)

    assert alter(c, {(topic, 0): [2, 3]}) == {TopicPartition(topic, 0): None}
    wait_done(c, topic, {0: [2, 3]})
    state = c.partition_state(topic, 0)
    assert state["leader"] == 2 and sorted(state["isr"]) == [2, 3]
    wait_for(lambda: replica_dirs(c, 1, topic, 0) == [], SETTLE_S,
             lambda: f"{topic}-0 deleted from broker 1: {replica_dirs(c, 1, topic, 0)}")
    assert_readable(c, topic, values, via=3)


def test_errors_answered_per_partition(shared_cluster, unique):
    c = shared_cluster
    topic = unique("errors")
    clients.create_topic(c.bootstrap(1), topic, assignment={0: [1, 2]})
    c.wait_topic(topic, 1)
    from kafka.errors import (
        InvalidReplicationAssignmentError, NoReassignmentInProgressError,
        UnknownTopicOrPartitionError)
    got = alter(c, {(topic, 0): [1, 9], (topic, 1): [1], (topic, 2): None})
    assert got == {TopicPartition(topic, 0): InvalidReplicationAssignmentError,
                   TopicPartition(topic, 1): UnknownTopicOrPartitionError,
                   TopicPartition(topic, 2): NoReassignmentInProgressError}
    assert alter(c, {(topic, 0): None}) == {TopicPartition(topic, 0): NoReassignmentInProgressError}
    assert {int(p): r for p, r in znode(c, topic)["partitions"].items()} == {0: [1, 2]}


def _others(c) -> tuple[int, int, int]:
    """(controller, a broker to pause, the remaining one)."""
    controller = c.controller_id()
    paused, other = [i for i in (1, 2, 3) if i != controller]
    return controller, paused, other


def test_in_flight_listing_then_cancellation(cluster, unique):
    c = cluster
    topic = unique("cancelled")
    controller, paused, other = _others(c)
    clients.create_topic(c.bootstrap(other), topic, assignment={0: [other]})
    c.wait_topic(topic, 1)
    values = produce(c, topic, [0])
    c.pause(paused)
    try:
        assert alter_raw(c, controller, {(topic, 0): [other, paused]}) == {(topic, 0): 0}
        assert alter_raw(c, other, {(topic, 0): [other]}) == 41      # NOT_CONTROLLER
        z = znode(c, topic)
        assert z["partitions"]["0"] == [other, paused]
        assert (z["adding_replicas"], z["removing_replicas"]) == ({"0": [paused]}, {})
        assert listed_raw(c, controller) == {(topic, 0): ([other, paused], [paused], [])}
        view = c.metadata(other, [topic]).topics[topic][0]
        assert (view.replicas, view.isr) == ([other, paused], [other])

        assert alter_raw(c, controller, {(topic, 0): None}) == {(topic, 0): 0}
        z = znode(c, topic)
        assert z["partitions"]["0"] == [other]
        assert not z.get("adding_replicas") and not z.get("removing_replicas")
        assert listed_raw(c, controller) == {}
    finally:
        c.resume(paused)
    wait_done(c, topic, {0: [other]})
    assert_readable(c, topic, values, via=paused)


def test_controller_killed_mid_reassignment(cluster, unique):
    c = cluster
    topic = unique("failover")
    controller, paused, other = _others(c)
    clients.create_topic(c.bootstrap(other), topic, assignment={0: [other]})
    c.wait_topic(topic, 1)
    values = produce(c, topic, [0])
    c.pause(paused)
    try:
        assert alter_raw(c, controller, {(topic, 0): [paused, other]}) == {(topic, 0): 0}
        assert znode(c, topic)["adding_replicas"] == {"0": [paused]}
        c.kill(controller)
        wait_for(lambda: c.controller_id() not in (None, controller), FAILOVER_S,
                 lambda: f"a new controller after killing {controller}\n{c.summary()}")
        # the new controller knows the reassignment from the topic znode
        assert znode(c, topic)["adding_replicas"] == {"0": [paused]}
        assert listed_raw(c, other) == {(topic, 0): ([paused, other], [paused], [])}
    finally:
        c.resume(paused)
    wait_for(lambda: c.controller_id() in (paused, other)
             and listed_raw(c, c.controller_id()) == {}, FAILOVER_S + SETTLE_S,
             lambda: f"the new controller to finish the reassignment\n{c.summary()}")
    wait_done(c, topic, {0: [paused, other]})
    assert_readable(c, topic, values, via=paused)
