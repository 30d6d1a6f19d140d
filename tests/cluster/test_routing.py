"""Every broker answers for the whole cluster, and refuses partition work it does not lead.

Metadata, DescribeCluster and FindCoordinator give the same answer at every broker (the
cache UpdateMetadata maintains): all three brokers, the active controller, each partition's
leader and replicas.  Produce and ListOffsets for a partition sent to a broker that is not
its leader answer NOT_LEADER_OR_FOLLOWER, whether that broker holds a follower replica
(RF 3) or none at all (RF 1), as Kafka's ReplicaManager does when its metadata knows the
partition.  A consumer's Fetch (v11+) is served by a follower replica too (KIP-392, fetch
from follower), so only a broker holding no replica refuses it.
"""
from __future__ import annotations

import time

from kafkapy.protocol.errors import ErrorCode
from kafkapy.records.record import build_batch
from tests.support import cluster_clients as clients
from tests.support.cluster_clients import find_coordinator
from tests.support.request_fields import fields


def test_every_broker_describes_the_same_cluster(shared_cluster, unique):
    from confluent_kafka.admin import AdminClient
    c = shared_cluster
    topic = unique("everywhere")
    clients.create_topic(c.bootstrap(1), topic, partitions=6, replication=3)
    c.wait_topic(topic, 6)
    controller = c.controller_id()
    views = {i: c.metadata(i, [topic]) for i in (1, 2, 3)}
    for i, view in views.items():
        assert view.controller == controller, i
        assert view.brokers == {n: c.nodes[n].port for n in (1, 2, 3)}, i
        assert view.topics[topic] == views[1].topics[topic], i
    for i in (1, 2, 3):
        admin = AdminClient({"bootstrap.servers": c.bootstrap(i)})
        described = admin.describe_cluster(request_timeout=20).result(25)
        assert described.controller.id == controller, i
        assert sorted((n.id, n.port) for n in described.nodes) == sorted(
            (n, c.nodes[n].port) for n in (1, 2, 3)), i
    group = unique("group")
    answers = {find_coordinator(c, i, group) for i in (1, 2, 3)}
    deadline = time.monotonic() + 30
    while any(e != 0 for e, _ in answers) and time.monotonic() < deadline:
        time.sleep(0.2)
        answers = {find_coordinator(c, i, group) for i in (1, 2, 3)}
    assert len(answers) == 1 and next(iter(answers))[0] == 0, answers


def _produce(c, node: int, topic: str, partition: int) -> int:
    batch = build_batch([(None, b"v", (), int(time.time() * 1000))])
    r = clients.request(c, node, 0, 9, **fields(0, transactional_id=None, acks=-1,
                                                timeout_ms=10000, topic_data=[dict(
                                                    name=topic, partition_data=[dict(
                                                        index=partition, records=batch)])]))
    return r.responses[0].partition_responses[0].error_code


def _fetch(c, node: int, topic: str, partition: int) -> int:
    r = clients.request(c, node, 1, 12, **fields(
        1, replica_id=-1, max_wait_ms=0, min_bytes=0, max_bytes=1 << 20, isolation_level=0,
        session_id=0, session_epoch=-1, topics=[dict(topic=topic, partitions=[dict(
            partition=partition, current_leader_epoch=-1, fetch_offset=0,
            last_fetched_epoch=-1, log_start_offset=-1, partition_max_bytes=1 << 20)])],
        forgotten_topics_data=[], rack_id=""))
    return r.responses[0].partitions[0].error_code


def _list_offsets(c, node: int, topic: str, partition: int) -> int:
    r = clients.request(c, node, 2, 7, **fields(2, replica_id=-1, isolation_level=0, topics=[dict(
        name=topic, partitions=[dict(partition_index=partition, current_leader_epoch=-1,
                                     timestamp=-1)])]))
    return r.topics[0].partitions[0].error_code


def test_partition_requests_at_a_broker_that_does_not_lead(shared_cluster, unique):
    c = shared_cluster
    not_leader = ErrorCode.NOT_LEADER_OR_FOLLOWER
    for rf in (1, 3):
        topic = unique(f"routed-rf{rf}")
        clients.create_topic(c.bootstrap(1), topic, partitions=3, replication=rf)
        leaders = c.wait_topic(topic, 3)
        for p, leader in leaders.items():
            assert _produce(c, leader, topic, p) == 0
            for other in (i for i in (1, 2, 3) if i != leader):
                what = f"{topic}-{p} at broker {other} (leader {leader})"
                assert _produce(c, other, topic, p) == not_leader, what
                assert _list_offsets(c, other, topic, p) == not_leader, what
                # Fetch v11+ may be served by a follower (KIP-392); a broker holding no
                # replica refuses it.
                assert _fetch(c, other, topic, p) == (0 if rf == 3 else not_leader), what
            assert _fetch(c, leader, topic, p) == 0
            assert _list_offsets(c, leader, topic, p) == 0
