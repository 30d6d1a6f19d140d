"""Topics created through any broker of a 3-broker cluster are placed as Kafka places them.

Kafka 3.9 (ZooKeeper mode) places replicas with ``AdminUtils.assignReplicasToBrokers``
(rack-unaware here): the first replica of partition p is ``brokers[(p + start) % n]`` and
follower j is ``brokers[(first + 1 + (shift + j) % (n - 1)) % n]``, with ``shift`` growing by
one every n partitions, ``start`` and ``shift`` random (``kafka_assignments`` lists every
outcome); CreatePartitions continues with ``start`` = the index of partition 0's first
replica and ``startPartitionId`` = the current count, so its result is fixed.  The
assignment is written to ``/brokers/topics/T`` (version 3 JSON with the topic id), the
controller brings every partition online with the first replica as leader and all replicas
in the ISR, and every broker's metadata says so.  CreateTopics sent straight to a broker that
is not the controller answers NOT_CONTROLLER, as Kafka's ZK-mode brokers do.
"""
from __future__ import annotations

import pytest

from kafkapy.protocol.errors import ErrorCode
from tests.support import cluster_clients as clients
from tests.support.cluster import NOT_CONTROLLER, wait_for
from tests.support.request_fields import fields


def kafka_assignment(n_partitions: int, rf: int, brokers: list[int], start: int, shift: int,
                     start_partition: int = 0) -> dict[int, list[int]]:
    """AdminUtils.assignReplicasToBrokersRackUnaware with a given start index and shift."""
    n = len(brokers)
    out = {}
    for p in range(start_partition, start_partition + n_partitions):
        if p > 0 and p % n == 0:
            shift += 1
        first = (p + start) % n
        replicas = [brokers[first]]
        for j in range(rf - 1):
            replicas.append(brokers[(first + 1 + (shift + j) % (n - 1)) % n])
        out[p] = replicas
    return out


def kafka_assignments(n_partitions: int, rf: int, brokers: list[int]) -> list[dict]:
    """Every assignment Kafka can pick (its start index and shift are random)."""
    return [kafka_assignment(n_partitions, rf, brokers, s, k)
            for s in range(len(brokers)) for k in range(len(brokers))]


def test_the_worked_example_of_the_algorithm():
    # Kafka's AdminUtils comment, 5 brokers, 10 partitions, RF 3, start 0, shift 0:
    # broker-0 holds p0 p5 (first), p4 p9 (second) ... see AdminUtils' scaladoc.
    got = kafka_assignment(10, 3, [0, 1, 2, 3, 4], 0, 0)
    assert got == {0: [0, 1, 2], 1: [1, 2, 3], 2: [2, 3, 4], 3: [3, 4, 0], 4: [4, 0, 1],
                   5: [0, 2, 3], 6: [1, 3, 4], 7: [2, 4, 0], 8: [3, 0, 1], 9: [4, 1, 2]}


def _check_online_as_assigned(cluster, topic: str, assignment: dict[int, list[int]]) -> None:
    """Every broker reports the assignment, first replica leading, ISR = all replicas; the
    state znodes agree; the topic id is the znode's on every broker."""
    partitions = len(assignment)
    cluster.wait_topic(topic, partitions)
    znode = cluster.znode_json(f"/brokers/topics/{topic}")
    epoch = cluster.controller_epoch()
    for p, replicas in assignment.items():
        state = cluster.partition_state(topic, p)
        assert (state["leader"], sorted(state["isr"]), state["leader_epoch"]) == (
            replicas[0], sorted(replicas), 0), (topic, p, state)
        assert state["controller_epoch"] <= epoch and state["version"] == 1, state
    for i in cluster.running_ids():
        view = cluster.metadata(i, [topic])
        assert view.topic_errors[topic] == 0, (i, view.topic_errors)
        got = {p: (v.leader, v.replicas, sorted(v.isr)) for p, v in view.topics[topic].items()}
        assert got == {p: (r[0], r, sorted(r)) for p, r in assignment.items()}, f"broker {i}"
        # Metadata names the id base64url-less as a UUID; the znode has Kafka's base64 form.
        assert _b64_uuid(znode["topic_id"]) == view.topic_ids[topic], f"broker {i}: topic id"


def _b64_uuid(b64: str) -> str:
    import base64
    import uuid
    return str(uuid.UUID(bytes=base64.urlsafe_b64decode(b64 + "==")))


@pytest.mark.parametrize("via", [1, 2, 3])
@pytest.mark.parametrize("rf", [1, 3])
def test_topic_created_through_any_broker_is_placed_by_kafkas_algorithm(shared_cluster, unique,
                                                                        via, rf):
    c = shared_cluster
    topic = unique(f"placed-rf{rf}-via{via}")
    clients.create_topic(c.bootstrap(via), topic, partitions=6, replication=rf)

    znode = c.znode_json(f"/brokers/topics/{topic}")
    assert set(znode) == {"version", "topic_id", "partitions", "adding_replicas",
                          "removing_replicas"}, znode
    assert (znode["version"], znode["adding_replicas"], znode["removing_replicas"]) == (3, {}, {})
    assert len(znode["topic_id"]) == 22
    assignment = {int(p): r for p, r in znode["partitions"].items()}
    assert sorted(assignment) == list(range(6))
    for p, replicas in assignment.items():
        assert len(replicas) == rf and len(set(replicas)) == rf, (p, replicas)
    assert assignment in kafka_assignments(6, rf, [1, 2, 3]), assignment
    # Leaders (first replicas) round-robin: two partitions each.
    firsts = [r[0] for r in assignment.values()]
    assert sorted(firsts.count(b) for b in (1, 2, 3)) == [2, 2, 2], firsts
    _check_online_as_assigned(c, topic, assignment)


def test_explicit_replica_assignment_is_honoured(shared_cluster, unique):
    c = shared_cluster
    topic = unique("explicit")
    wanted = {0: [3, 1], 1: [2, 3], 2: [1, 2], 3: [3, 2]}
    clients.create_topic(c.bootstrap(2), topic, assignment=wanted)
    assert c.assignment(topic) == wanted
    _check_online_as_assigned(c, topic, wanted)


def test_create_partitions_continues_kafkas_placement(shared_cluster, unique):
    from confluent_kafka.admin import AdminClient, NewPartitions
    c = shared_cluster
    topic = unique("grown")
    clients.create_topic(c.bootstrap(1), topic, partitions=3, replication=2)
    before = c.assignment(topic)
    c.wait_topic(topic, 3)
    admin = AdminClient({"bootstrap.servers": c.bootstrap(3)})
    admin.create_partitions([NewPartitions(topic, 7)], operation_timeout=30,
                            request_timeout=30)[topic].result(35)
    after = c.assignment(topic)
    assert {p: after[p] for p in before} == before, "existing partitions must not move"
    brokers = [1, 2, 3]
    start = brokers.index(before[0][0])
    assert {p: after[p] for p in range(3, 7)} == kafka_assignment(
        4, 2, brokers, start, start, start_partition=3)
    _check_online_as_assigned(c, topic, after)


def test_create_topics_at_a_broker_that_is_not_the_controller(shared_cluster, unique):
    """Kafka 3.9 ZK mode: only the controller creates topics; the others say NOT_CONTROLLER
    (clients send CreateTopics to the controller named in Metadata)."""
    c = shared_cluster
    controller = c.controller_id()
    other = next(i for i in c.running_ids() if i != controller)
    topic = unique("not-here")
    r = clients.request(c, other, 19, 7, **fields(19, topics=[dict(
        name=topic, num_partitions=1, replication_factor=1, assignments=[], configs=[])],
        timeout_ms=10000, validate_only=False))
    assert r.topics[0].error_code == NOT_CONTROLLER, r.topics[0]
    assert not c.zk.exists(f"/brokers/topics/{topic}")


def test_replication_factor_larger_than_the_cluster(shared_cluster, unique):
    c = shared_cluster
    r = clients.request(c, c.controller_id(), 19, 7, **fields(19, topics=[dict(
        name=unique("too-wide"), num_partitions=1, replication_factor=4, assignments=[],
        configs=[])], timeout_ms=10000, validate_only=False))
    t = r.topics[0]
    assert (t.error_code, t.error_message) == (
        ErrorCode.INVALID_REPLICATION_FACTOR,
        "Replication factor: 4 larger than available brokers: 3."), t


def test_delete_topic_removes_its_logs_from_every_broker(shared_cluster, unique):
    c = shared_cluster
    topic = unique("doomed")
    clients.create_topic(c.bootstrap(3), topic, partitions=3, replication=3)
    c.wait_topic(topic, 3)
    clients.produce_confluent(c.bootstrap(3), topic, {p: [b"x"] * 5 for p in range(3)})

    def dirs():
        return {i: sorted(d.name for d in c.nodes[i].log_dir.iterdir()
                          if d.name.startswith(f"{topic}-")) for i in c.running_ids()}
    wait_for(lambda: all(len(d) == 3 for d in dirs().values()), 30,
             f"every broker to host the 3 replicas of {topic}: {dirs()}")
    clients.delete_topic(c.bootstrap(1), topic)

    def gone():
        for i in c.running_ids():
            if c.metadata(i, [topic]).topic_errors.get(topic) != ErrorCode.UNKNOWN_TOPIC_OR_PARTITION:
                return False
        return (not c.zk.exists(f"/brokers/topics/{topic}")
                and not c.zk.exists(f"/admin/delete_topics/{topic}"))
    wait_for(gone, 30, f"{topic} gone from every broker's metadata and from ZooKeeper")
    wait_for(lambda: not any(dirs().values()), 30,
             f"{topic}'s log dirs removed from every broker: {dirs()}")
