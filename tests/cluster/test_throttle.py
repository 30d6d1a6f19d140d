"""Replication throttles on a real cluster: a throttled reassignment moves at about the
set rate, an unthrottled one much faster.

A partition with ~24 MB on broker 1 only gets a replica on broker 2 by reassignment
(kafka-python's AlterPartitionReassignments, answered by the controller).  The
throttle is set as ``kafka-reassign-partitions --throttle`` sets it, with Kafka's own
``kafka-configs.sh``: ``leader.replication.throttled.rate`` and
``follower.replication.throttled.rate`` as dynamic configs of brokers 1 and 2, and the
topic's ``leader.replication.throttled.replicas`` = ``0:1`` (the existing replica)
and ``follower.replication.throttled.replicas`` = ``0:2`` (the moving one).  The time
from the request to broker 2 in the ISR bounds the rate the bytes moved at: it must
stay below a generous multiple of the set rate (Kafka's quota allows a burst of one
window and keeps the average over 11 one-second samples), and without a throttle the
same move must be several times faster, so the check can fail both ways.  Each side
is checked alone too: only the leader's quota (list and rate on broker 1), only the
follower's (list and rate on broker 2).

``KAFKAPY_CLUSTER_REFERENCE=kafka`` runs the same against Kafka 3.9.
"""
from __future__ import annotations

import json
import os
import time

import pytest
from kafka import TopicPartition
from kafka.admin import ConfigResource, ConfigResourceType, KafkaAdminClient

from tests.support import cluster_clients as clients
from tests.support.cluster import kafka_tool, wait_for

MB = 1024 * 1024
VALUE_BYTES = 50 * 1024
RECORDS = 480                       # ~24 MB
RATE = 3 * MB                       # bytes per second
MAX_FACTOR = 2.5                    # throttled: observed rate <= 2.5 x RATE
MIN_SPEEDUP = 3.0                   # unthrottled: at least 3 x the throttled rate
MOVE_TIMEOUT_S = 120
LEADER, FOLLOWER = 1, 2
LONG_MAX = 9223372036854775807


def _admin(c) -> KafkaAdminClient:
    return KafkaAdminClient(bootstrap_servers=c.bootstrap(LEADER), request_timeout_ms=30000)


def _fill(c, topic: str, configs: dict[str, str] | None = None) -> int:
    """A one-partition topic on broker 1 only with ~24 MB; returns its log bytes."""
    clients.create_topic(c.bootstrap(LEADER), topic, assignment={0: [LEADER]},
                         configs=configs)
    c.wait_topic(topic, 1)
    values = [os.urandom(VALUE_BYTES) for _ in range(RECORDS)]
    clients.produce_confluent(c.bootstrap(LEADER), topic, {0: values}, acks="1")
    log_dir = c.nodes[LEADER].log_dir / f"{topic}-0"
    return sum(f.stat().st_size for f in log_dir.glob("*.log"))


# Which side is throttled: the topic list and the broker rate of that side.
_SIDES = {LEADER: ("leader.replication.throttled.replicas", "leader.replication.throttled.rate"),
          FOLLOWER: ("follower.replication.throttled.replicas",
                     "follower.replication.throttled.rate")}


def _set_topic_throttles(c, topic: str, sides) -> None:
    """The topic's throttled replicas (``0:<broker>`` for each side), with Kafka's
    kafka-configs.sh: a config change (Kafka's ZK-mode brokers apply throttled-replica
    lists on change notifications, not from the configs a topic is created with)."""
    configs = ",".join(f"{_SIDES[b][0]}=0:{b}" for b in sides)
    done = kafka_tool("kafka-configs.sh", "--bootstrap-server", c.bootstrap(LEADER),
                      "--entity-type", "topics", "--entity-name", topic, "--alter",
                      "--add-config", configs)
    assert done.returncode == 0, done.stdout + done.stderr


def _set_broker_rates(c, rate: int | None, sides) -> None:
    """Kafka's kafka-configs.sh: the leader rate on broker 1, the follower rate on broker
    2 (``None``: delete them); waits until each broker describes its own value."""
    for broker in sides:
        key = _SIDES[broker][1]
        change = ["--delete-config", key] if rate is None else ["--add-config", f"{key}={rate}"]
        done = kafka_tool("kafka-configs.sh", "--bootstrap-server", c.bootstrap(LEADER),
                          "--entity-type", "brokers", "--entity-name", str(broker),
                          "--alter", *change)
        assert done.returncode == 0, done.stdout + done.stderr
    expected = {None, str(LONG_MAX)} if rate is None else {str(rate)}
    for broker in sides:
        wait_for(lambda: _described(c, broker, _SIDES[broker][1]) in expected, 30,
                 f"broker {broker} describing {_SIDES[broker][1]} in {expected}")


def _described(c, broker: int, key: str) -> str | None:
    """The value broker ``broker`` describes for itself (DescribeConfigs goes to it)."""
    admin = _admin(c)
    try:
        got = admin.describe_configs([ConfigResource(ConfigResourceType.BROKER, str(broker),
                                                     configs={key: None})],
                                     config_filter="all")
    finally:
        admin.close()
    entry = got.get("broker", {}).get(str(broker), {}).get(key)
    return None if entry is None else entry.get("value")


def _move(c, topic: str) -> float:
    """Reassign partition 0 from [1] to [1, 2]; seconds until 2 is in the ISR and the
    reassignment is over."""
    admin = _admin(c)
    try:
        start = time.monotonic()
        admin.alter_partition_reassignments({TopicPartition(topic, 0): [LEADER, FOLLOWER]})
    finally:
        admin.close()
    _wait_moved(c, topic)
    return time.monotonic() - start


def _wait_moved(c, topic: str) -> None:
    """Until partition 0 is on [1, 2], 2 in the ISR, nothing adding (polled every 50 ms:
    the time taken is the measurement)."""
    def done():
        state = c.partition_state(topic, 0)
        assignment = c.znode_json(f"/brokers/topics/{topic}")
        return (FOLLOWER in state["isr"] and assignment["partitions"]["0"] == [LEADER, FOLLOWER]
                and not assignment.get("adding_replicas"))
    wait_for(done, MOVE_TIMEOUT_S, lambda: f"{topic}-0 moved to [1, 2]\n{c.summary()}",
             interval=0.05)


@pytest.mark.parametrize("sides", [(LEADER, FOLLOWER), (LEADER,), (FOLLOWER,)],
                         ids=["both", "leader", "follower"])
def test_throttled_reassignment_moves_at_about_the_set_rate(cluster, unique, sides):
    free_topic, throttled_topic = unique("free"), unique("throttled")

    # The throttled move first: nothing else replicates from broker 1 before it, so the
    # leader quota's samples start with it (Kafka records every follower fetch answered,
    # zero bytes included, and a rate averages over the samples' whole span: with an
    # idle follower fetching from broker 1 for seconds before, a burst of that many
    # seconds times the rate would pass at once).
    throttled_bytes = _fill(cluster, throttled_topic)
    _set_topic_throttles(cluster, throttled_topic, sides)
    _set_broker_rates(cluster, RATE, sides)
    try:
        seconds = _move(cluster, throttled_topic)
    finally:
        _set_broker_rates(cluster, None, sides)
    throttled_rate = throttled_bytes / seconds

    free_bytes = _fill(cluster, free_topic)
    free_rate = free_bytes / _move(cluster, free_topic)

    report = (f"{throttled_bytes / MB:.1f} MB: throttled at {RATE / MB:.1f} MB/s moved at "
              f"{throttled_rate / MB:.2f} MB/s ({seconds:.1f} s); unthrottled "
              f"{free_rate / MB:.2f} MB/s")
    print(report)
    assert throttled_rate <= MAX_FACTOR * RATE, report
    assert free_rate >= MIN_SPEEDUP * throttled_rate, report
    # The moved replica holds every byte.
    moved = cluster.nodes[FOLLOWER].log_dir / f"{throttled_topic}-0"
    wait_for(lambda: sum(f.stat().st_size for f in moved.glob("*.log")) == throttled_bytes, 30,
             "the new replica's log as large as the leader's")


def test_kafka_reassign_tool_throttle_then_verify_clears_it(cluster, unique, tmp_path):
    """Kafka's own kafka-reassign-partitions.sh --execute --throttle sets the lists and both
    rates on brokers 1 and 2 and moves the partition at about the rate; --verify, once
    the move is over, clears every throttle it set."""
    topic = unique("tool")
    size = _fill(cluster, topic)
    plan = tmp_path / "plan.json"
    plan.write_text(json.dumps({"version": 1, "partitions": [
        {"topic": topic, "partition": 0, "replicas": [LEADER, FOLLOWER]}]}))
    tool = ("kafka-reassign-partitions.sh", "--bootstrap-server", cluster.bootstrap(LEADER),
            "--reassignment-json-file", str(plan))
    start = time.monotonic()
    done = kafka_tool(*tool, "--execute", "--throttle", str(RATE))
    assert done.returncode == 0, done.stdout + done.stderr
    tool_s = time.monotonic() - start
    assert f"The inter-broker throttle limit was set to {RATE} B/s" in done.stdout, done.stdout
    for broker in (LEADER, FOLLOWER):
        for key in ("leader.replication.throttled.rate", "follower.replication.throttled.rate"):
            assert _described(cluster, broker, key) == str(RATE)
    throttles = cluster.znode_json(f"/config/topics/{topic}")["config"]
    assert throttles == {"leader.replication.throttled.replicas": f"0:{LEADER}",
                         "follower.replication.throttled.replicas": f"0:{FOLLOWER}"}, throttles
    _wait_moved(cluster, topic)
    rate = size / (time.monotonic() - start)
    print(f"{size / MB:.1f} MB through kafka-reassign-partitions --throttle {RATE / MB:.1f} "
          f"MB/s: {rate / MB:.2f} MB/s (the tool itself {tool_s:.1f} s)")
    assert rate <= MAX_FACTOR * RATE, f"{rate / MB:.2f} MB/s"

    verified = kafka_tool(*tool, "--verify")
    assert verified.returncode == 0, verified.stdout + verified.stderr
    assert f"Reassignment of partition {topic}-0 is completed." in verified.stdout, verified.stdout
    assert "Clearing broker-level throttles on brokers 1,2" in verified.stdout, verified.stdout
    assert f"Clearing topic-level throttles on topic {topic}" in verified.stdout, verified.stdout
    for broker in (LEADER, FOLLOWER):
        wait_for(lambda: _described(cluster, broker, "leader.replication.throttled.rate")
                 in (None, str(LONG_MAX)), 30, f"broker {broker}'s throttle rate cleared")
    assert cluster.znode_json(f"/config/topics/{topic}")["config"] == {}
