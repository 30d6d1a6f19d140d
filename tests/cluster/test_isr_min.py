"""ISR shrink by lag, expansion on catch-up, and min.insync.replicas.

Three brokers with ``replica.lag.time.max.ms=2000`` and ``replica.fetch.wait.max.ms=500``
and a ZooKeeper session of 20 s, so a SIGSTOPped broker keeps its registration for the
whole pause: whatever takes it out of the ISR is the leader's lag rule (Kafka's
isr-expiration task and AlterPartition to the controller), not the controller noticing a
dead broker.  The topic has one partition on [controller, a, b] (the controller leads, so
pausing a follower never pauses the controller) with ``min.insync.replicas=2``.

* A follower SIGSTOPped drops out of the ISR (the partition state znode and every broker's
  Metadata) while still registered, once the leader's log has moved on without it (acks=1
  writes during the pause: an idle partition keeps a stopped follower in sync, as in
  Kafka); after SIGCONT it catches up and is back in the ISR.
* With both followers paused the ISR is the leader alone: an acks=all Produce answers
  NOT_ENOUGH_REPLICAS (19) and appends nothing, acks=1 is appended; after SIGCONT the
  followers rejoin, acks=all works again and the acks=1 record is there.
* An acks=all write appended while all three were in sync and waiting when both followers
  stop: the ISR shrinks to the leader and the write is never acknowledged
  (REQUEST_TIMED_OUT as Kafka 3.9, or NOT_ENOUGH_REPLICAS_AFTER_APPEND); it stays in the log.

Runs against real Kafka 3.9 too (``KAFKAPY_CLUSTER_REFERENCE=kafka``).
"""
from __future__ import annotations

from tests.support import cluster_clients as clients
from tests.support.cluster import Cluster
from tests.support.isr import NONE, REJOIN_S, feeder, lag_cluster, produce, wait_isr  # noqa: F401

NOT_ENOUGH_REPLICAS = 19
NOT_ENOUGH_REPLICAS_AFTER_APPEND = 20
REQUEST_TIMED_OUT = 7
SHRINK_S = 30        # lag time + the expiration task's period + AlterPartition + UpdateMetadata


def setup_topic(c: Cluster, topic: str) -> tuple[int, int, int]:
    leader = c.controller_id()
    a, b = [i for i in (1, 2, 3) if i != leader]
    clients.create_topic(c.bootstrap(leader), topic, assignment={0: [leader, a, b]},
                         configs={"min.insync.replicas": "2"})
    c.wait_topic(topic, 1)
    wait_isr(c, topic, [1, 2, 3], REJOIN_S, "after creation")
    assert produce(c, leader, topic, [b"warm-up"], acks=-1) == (NONE, 0)
    return leader, a, b


def test_paused_follower_leaves_the_isr_and_rejoins(lag_cluster, unique):
    c = lag_cluster
    topic = unique("lagging")
    leader, a, b = setup_topic(c, topic)
    epoch = c.partition_state(topic, 0)["leader_epoch"]
    written = [b"warm-up"]
    c.pause(a)
    try:
        wait_isr(c, topic, [leader, b], SHRINK_S, f"paused follower {a}",
                 feed=feeder(c, topic, written))
        # Still registered: the lag rule did it, not a session expiry.
        assert a in c.registered()
        state = c.partition_state(topic, 0)
        assert (state["leader"], state["leader_epoch"]) == (leader, epoch), state
        # With 2 in sync (= min.insync.replicas) acks=all still works.
        assert produce(c, leader, topic, [b"two-in-sync"], acks=-1) == (NONE, len(written))
        written.append(b"two-in-sync")
    finally:
        c.resume(a)
    wait_isr(c, topic, [1, 2, 3], REJOIN_S, f"resumed follower {a}")
    assert produce(c, leader, topic, [b"three-in-sync"], acks=-1) == (NONE, len(written))
    written.append(b"three-in-sync")
    got = clients.consume_confluent(c.bootstrap(a), topic, {0: len(written)})
    assert got == {0: written}


def test_isr_below_min_insync_refuses_acks_all_but_not_acks_1(lag_cluster, unique):
    c = lag_cluster
    topic = unique("min-isr")
    leader, a, b = setup_topic(c, topic)
    written = [b"warm-up"]
    c.pause(a)
    c.pause(b)
    try:
        wait_isr(c, topic, [leader], SHRINK_S, f"paused followers {a} and {b}",
                 feed=feeder(c, topic, written))
        assert {a, b} <= set(c.registered())
        assert produce(c, leader, topic, [b"refused"], acks=-1) == (NOT_ENOUGH_REPLICAS, -1)
        assert produce(c, leader, topic, [b"leader-only"], acks=1) == (NONE, len(written))
        written.append(b"leader-only")
        assert produce(c, leader, topic, [b"refused-again"], acks=-1)[0] == NOT_ENOUGH_REPLICAS
    finally:
        c.resume(a)
        c.resume(b)
    wait_isr(c, topic, [1, 2, 3], REJOIN_S, f"resumed followers {a} and {b}")
    assert produce(c, leader, topic, [b"accepted"], acks=-1) == (NONE, len(written))
    written.append(b"accepted")
    # The refused writes were never appended; the acks=1 ones are there.
    got = clients.consume_confluent(c.bootstrap(a), topic, {0: len(written)}, timeout=30)
    assert got == {0: written}


def test_isr_shrinking_under_a_waiting_acks_all_write(lag_cluster, unique):
    """Appended while 3 were in sync, the write waits; the stopped followers leave the ISR
    (below min.insync.replicas) and the write is never acknowledged: Kafka 3.9 answers
    REQUEST_TIMED_OUT at the request's timeout (its high watermark does not move when the
    AlterPartition shrink commits; checked), NOT_ENOUGH_REPLICAS_AFTER_APPEND is the answer
    when it does (checkEnoughReplicasReachOffset).  Either way the record stays in the log."""
    c = lag_cluster
    topic = unique("after-append")
    leader, a, b = setup_topic(c, topic)
    c.pause(a)
    c.pause(b)
    try:
        error, _ = produce(c, leader, topic, [b"waiting"], acks=-1, timeout_ms=10000)
        assert error in (REQUEST_TIMED_OUT, NOT_ENOUGH_REPLICAS_AFTER_APPEND), error
        wait_isr(c, topic, [leader], SHRINK_S, f"paused followers {a} and {b}")
    finally:
        c.resume(a)
        c.resume(b)
    wait_isr(c, topic, [1, 2, 3], REJOIN_S, f"resumed followers {a} and {b}")
    got = clients.consume_confluent(c.bootstrap(a), topic, {0: 2}, timeout=30)
    assert got == {0: [b"warm-up", b"waiting"]}
