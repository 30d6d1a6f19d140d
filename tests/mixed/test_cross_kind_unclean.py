"""Unclean leader election across kinds.

2 Kafka 3.9 brokers (1, 2) + 1 kafkapy broker (3), the controller of either kind
(``first``); topic ``ux`` with ``unclean.leader.election.enable=true`` on the two brokers
that are not the controller: with Kafka's controller a Kafka leader and a kafkapy follower,
with kafkapy's controller two Kafka brokers.  The follower is killed (the controller
shrinks the ISR to the leader), records are written, the leader is killed (partition
offline), the follower restarts: the controller elects it uncleanly with leader recovery
state RECOVERING (Kafka's ZooKeeper mode at IBP >= 3.2) and ISR = itself; it serves what
it had (the records written while it was down are lost, as Kafka's unclean election loses
them); the old leader restarts, truncates to the new leader and rejoins the ISR, its
``.log`` files byte-identical; the ISR expansion (AlterPartition) carries RECOVERED, so
the state znode is RECOVERED again.  Skips without Java or Kafka 3.9.
"""
from __future__ import annotations

import json

import pytest

from kafkapy.metadata import paths
from tests.support.cluster_clients import consume_confluent, create_topic, produce_confluent
from tests.support.mixed import _require_kafka, segment_files, wait_for
from tests.support.mixed import _start_mixed

TOPIC = "ux"
TIMEOUT = 90


def _state(m) -> dict:
    return json.loads(m.zk.get(paths.partition_state_path(TOPIC, 0))[0])


@pytest.mark.parametrize("first", ["kafka", "kafkapy"])
def test_unclean_election_across_kinds(tmp_path, zookeeper_server, first):  # noqa: F811
    _require_kafka()
    m = _start_mixed(tmp_path / "cluster", zookeeper_server, first)
    try:
        leader, follower = (2, 3) if first == "kafka" else (1, 2)
        controller = m.controller_id()
        create_topic(m.bootstrap(controller), TOPIC, assignment={0: [leader, follower]},
                     configs={"unclean.leader.election.enable": "true",
                              "min.insync.replicas": "1"})
        kept = [f"kept-{i}".encode() for i in range(30)]
        produce_confluent(m.bootstrap(controller), TOPIC, {0: kept})
        wait_for(lambda: sorted(_state(m)["isr"]) == sorted([leader, follower]), TIMEOUT,
                 "both replicas in the ISR")

        m.kill(follower)
        wait_for(lambda: _state(m)["isr"] == [leader], TIMEOUT,
                 lambda: f"ISR shrunk to [{leader}]\n" + m.summary())
        lost = [f"lost-{i}".encode() for i in range(10)]
        produce_confluent(m.bootstrap(controller), TOPIC, {0: lost})
        m.kill(leader)
        wait_for(lambda: _state(m)["leader"] == -1, TIMEOUT, "partition offline")

        m.restart(follower)
        wait_for(lambda: _state(m)["leader"] == follower, TIMEOUT,
                 lambda: f"{follower} elected uncleanly\n" + m.summary())
        # RECOVERING until the new leader's next ISR change (Kafka's Partition.makeLeader
        # marks it RECOVERED locally and sends it with its next AlterPartition)
        assert (_state(m)["isr"], _state(m).get("leader_recovery_state")) == ([follower], 1)
        got = consume_confluent(m.bootstrap(follower), TOPIC, {0: len(kept)}, timeout=30)
        assert got == {0: kept}

        more = [f"more-{i}".encode() for i in range(10)]
        produce_confluent(m.bootstrap(controller), TOPIC, {0: more})
        m.restart(leader)
        wait_for(lambda: sorted(_state(m)["isr"]) == sorted([leader, follower]), TIMEOUT,
                 lambda: f"{leader} back in the ISR\n" + m.summary())
        assert "leader_recovery_state" not in _state(m), _state(m)     # RECOVERED again
        wait_for(lambda: segment_files(m, leader, TOPIC, 0)
                 == segment_files(m, follower, TOPIC, 0), TIMEOUT,
                 "the old leader truncated to the new one: .log files identical")
        for via in (leader, follower):
            got = consume_confluent(m.bootstrap(via), TOPIC, {0: len(kept) + len(more)})
            assert got == {0: kept + more}, f"read through {via}"
    finally:
        m.stop()
