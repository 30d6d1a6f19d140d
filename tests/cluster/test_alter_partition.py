"""ISR changes through AlterPartition when the leader is NOT the controller.

Three brokers with ``replica.lag.time.max.ms=2000`` (``replica.fetch.wait.max.ms=500``
below it) and a ZooKeeper session of 20 s, so a SIGSTOPped broker stays registered: what
takes it out of the ISR is the leader's lag rule.  The partition is led by a broker that
is not the controller, so the leader's AlterPartition goes over the network to the
controller's inter-broker listener (``test_isr_min`` covers a leader that is the
controller, where it is delivered in-process).

* the paused follower leaves the ISR once the leader's log end moved past it for longer
  than the lag time (records keep coming: a follower at the leader's log end is caught
  up however long ago it fetched, Kafka's Replica.isCaughtUp): the state znode (same
  leader and leader epoch, a new zk version = partition epoch) and every running
  broker's Metadata; the leader logs Kafka's "Shrinking ISR from ... to ..."; acks=all
  goes on with the two left;
* after SIGCONT it catches up and is back in the ISR ("ISR updated to"), the znode's
  version moved again, the leader epoch still the same; what was written while it was
  paused is on it.

Runs against real Kafka 3.9 too (``KAFKAPY_CLUSTER_REFERENCE=kafka``).
"""
from __future__ import annotations

from tests.support import cluster_clients as clients
from tests.support.cluster import Cluster
from tests.support.isr import REJOIN_S, feeder, lag_cluster, produce, wait_isr  # noqa: F401

SHRINK_S = 15       # lag time + the expiration period + AlterPartition + UpdateMetadata;
#                     well within the 20 s session, so no expiry gets there first


def znode(c: Cluster, topic: str) -> tuple[dict, int]:
    """The partition's state znode and its zk version (the partition epoch)."""
    import json
    data, stat = c.zk.get(f"/brokers/topics/{topic}/partitions/0/state")
    return json.loads(data), stat.version


def test_leader_elsewhere_than_the_controller_shrinks_and_expands(lag_cluster, unique):
    c = lag_cluster
    topic = unique("remote-alter")
    controller = c.controller_id()
    leader, follower = [i for i in (1, 2, 3) if i != controller]
    clients.create_topic(c.bootstrap(controller), topic,
                         assignment={0: [leader, controller, follower]})
    c.wait_topic(topic, 1)
    wait_isr(c, topic, [1, 2, 3], REJOIN_S, "after creation")
    assert produce(c, leader, topic, [b"warm-up"]) == (0, 0)
    before, version = znode(c, topic)
    assert before["leader"] == leader
    written = [b"warm-up"]

    c.pause(follower)
    try:
        wait_isr(c, topic, [leader, controller], SHRINK_S, f"paused follower {follower}",
                 feed=feeder(c, topic, written))
        assert follower in c.registered(), (
            "the lag rule did it, not a session expiry\n" + c.log_text(follower)[-4000:])
        shrunk, shrunk_version = znode(c, topic)
        assert (shrunk["leader"], shrunk["leader_epoch"]) == (leader, before["leader_epoch"])
        assert shrunk_version > version
        assert "Shrinking ISR from" in c.log_text(leader)
        assert produce(c, leader, topic, [b"two-in-sync"]) == (0, len(written))
        written.append(b"two-in-sync")
    finally:
        c.resume(follower)
    wait_isr(c, topic, [1, 2, 3], REJOIN_S, f"resumed follower {follower}")
    expanded, expanded_version = znode(c, topic)
    assert (expanded["leader"], expanded["leader_epoch"]) == (leader, before["leader_epoch"])
    assert expanded_version > shrunk_version
    assert "ISR updated to" in c.log_text(leader)     # Kafka logs no "Expanding ISR"
    assert produce(c, leader, topic, [b"three-in-sync"]) == (0, len(written))
    written.append(b"three-in-sync")
    got = clients.consume_confluent(c.bootstrap(follower), topic, {0: len(written)},
                                    timeout=30)
    assert got == {0: written}
