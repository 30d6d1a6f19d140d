"""Replicas moved between kinds with Kafka 3.9's own ``kafka-reassign-partitions.sh``.

2 Kafka 3.9 brokers (1, 2) + 1 kafkapy broker (3) on one ZooKeeper, the controller of
either kind (``first``).  Topic ``rx`` (RF 2): partition 0 on [1, 2] moves to [3, 2] (a
Kafka leader's replica to a kafkapy broker: the leader moves to kafkapy), partition 1 on
[3, 1] moves to [2, 1] (kafkapy's replica to a Kafka broker).  Records written acks=all
before and after.  Checks: ``--verify`` reports both complete; ZooKeeper holds the target
assignment with no adding/removing replicas; the new replicas' ``.log`` files are
byte-identical to the other replica's; the removed replicas' dirs are gone; every record
reads back through every broker.  Skips without Java or Kafka 3.9.
"""
from __future__ import annotations

import json

import pytest

from kafkapy.metadata import paths
from tests.support.cluster_clients import consume_confluent, create_topic, produce_confluent
from tests.support.mixed import _require_kafka, kafka_tool, segment_files, wait_for
from tests.support.mixed import _start_mixed

TOPIC = "rx"
BEFORE = {0: [1, 2], 1: [3, 1]}
AFTER = {0: [3, 2], 1: [2, 1]}
TIMEOUT = 90


def _reassign(m, tmp_path, *args: str):
    plan = tmp_path / "plan.json"
    plan.write_text(json.dumps({"version": 1, "partitions": [
        {"topic": TOPIC, "partition": p, "replicas": r} for p, r in AFTER.items()]}))
    return kafka_tool("kafka-reassign-partitions.sh", "--bootstrap-server", m.bootstrap(3),
                      "--reassignment-json-file", str(plan), *args)


@pytest.mark.parametrize("first", ["kafka", "kafkapy"])
def test_reassign_across_kinds(tmp_path, zookeeper_server, first):  # noqa: F811
    _require_kafka()
    m = _start_mixed(tmp_path / "cluster", zookeeper_server, first)
    try:
        create_topic(m.bootstrap(3), TOPIC, assignment=BEFORE,
                     configs={"min.insync.replicas": "2"})
        values = {p: [f"before-{p}-{i}".encode() for i in range(50)] for p in BEFORE}
        produce_confluent(m.bootstrap(1), TOPIC, values)

        done = _reassign(m, tmp_path, "--execute")
        assert done.returncode == 0, done.stdout + done.stderr[-2000:]
        assert "Successfully started partition reassignments for rx-0,rx-1" in done.stdout

        def completed():
            out = _reassign(m, tmp_path, "--verify").stdout
            return all(f"Reassignment of partition {TOPIC}-{p} is completed." in out
                       for p in AFTER) and out
        wait_for(completed, TIMEOUT, lambda: "reassignment completed\n" + m.summary())

        node = json.loads(m.zk.get(paths.topic_path(TOPIC))[0])
        assert node["partitions"] == {str(p): r for p, r in AFTER.items()}
        assert node["adding_replicas"] == {} and node["removing_replicas"] == {}
        for p, replicas in AFTER.items():
            state = json.loads(m.zk.get(paths.partition_state_path(TOPIC, p))[0])
            wait_for(lambda p=p, replicas=replicas: sorted(json.loads(
                m.zk.get(paths.partition_state_path(TOPIC, p))[0])["isr"]) == sorted(replicas),
                TIMEOUT, f"ISR of {TOPIC}-{p} = {replicas}")
            assert state["leader"] in replicas

        more = {p: [f"after-{p}-{i}".encode() for i in range(20)] for p in AFTER}
        produce_confluent(m.bootstrap(3), TOPIC, more)
        for p, replicas in AFTER.items():
            wait_for(lambda p=p, replicas=replicas: segment_files(m, replicas[0], TOPIC, p)
                     == segment_files(m, replicas[1], TOPIC, p), TIMEOUT,
                     f"{TOPIC}-{p}'s .log files identical on brokers {replicas}")
        # the removed replicas are deleted (StopReplica with delete=true)
        wait_for(lambda: not (m.log_dir(1) / f"{TOPIC}-0").exists()
                 and not (m.log_dir(3) / f"{TOPIC}-1").exists(), TIMEOUT,
                 "the removed replicas' dirs deleted")
        for via in (1, 2, 3):
            got = consume_confluent(m.bootstrap(via), TOPIC, {p: 70 for p in AFTER})
            assert got == {p: values[p] + more[p] for p in AFTER}, f"read through {via}"
    finally:
        m.stop()
