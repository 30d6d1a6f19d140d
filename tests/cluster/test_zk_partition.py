"""A broker cut off from ZooKeeper never acknowledges acks=all writes as a second leader.

Every broker reaches ZooKeeper through its own ``TcpProxy`` (tests/support/tcp_proxy.py) on
loopback; the brokers still reach each other directly.  The victim leads the topic's one
partition (RF 3, assignment [victim, a, b]) and is either not the controller or the
controller itself (then ``a`` or ``b`` takes over as controller first).  The
test cuts the victim's proxy: its ZooKeeper session expires, the controller elects ``a``
(first live ISR member) with a higher leader epoch and tells ``a`` and ``b``, which follow
``a`` from then on.  The victim is never told: it still believes it leads.

Throughout the cut the test produces straight to the victim with acks=all (raw Produce v9,
timeout 2 s), and, once the new leader is in the state znode, to the new leader as well.
Once the new leader has acknowledged an acks=all write, its ISR has left the victim (the
followers fetch from it, not from the victim): every write the victim acknowledges after
that is a second leader acknowledging acks=all.  There must be none (each fails or times
out).  Writes it
acknowledged before (it was the only leader then) and the new leader's must all be in the
final log at their acknowledged offsets.  Then the proxy heals: the victim registers again
(a higher broker epoch), becomes a follower of the new leader, truncates whatever it
appended alone, and is back in the ISR.

``replica.lag.time.max.ms`` is 3 s so the victim, its followers gone, tries to shrink the
ISR during the cut (AlterPartition, which the controller must refuse: the victim is no
longer a live broker and its leader epoch is old).  With ``min.insync.replicas=1`` a leader
that shrank its ISR on its own would acknowledge alone; the test runs with 1 and with 2.

Cut from ZooKeeper, the victim must go on answering requests (Kafka's does: REQUEST_TIMED_OUT
after the Produce timeout once its followers have gone), checked last.

Runs against real Kafka 3.9 too (``KAFKAPY_CLUSTER_REFERENCE=kafka``).
"""
from __future__ import annotations

import socket
import time
from collections import Counter

import pytest
from kafka.record.default_records import DefaultRecordBatchBuilder

from kafkapy.protocol.messages import REQUESTS
from tests.support import cluster_clients as clients
from tests.support.cluster import (FAILOVER_S, REFERENCE, Cluster, running_cluster,
                                    wait_for)
from tests.support.tcp_proxy import TcpProxy
from tests.support.cluster_clients import read_partition
from tests.support.wire import WireClient

NONE = 0
OBSERVE_AFTER_ELECTION_S = 10     # keep writing to the victim this long after the election
REJOIN_S = 60
SETTINGS = {
    "replica.lag.time.max.ms": "3000",
    "replica.fetch.wait.max.ms": "500",
}
Produce = REQUESTS[0]
NO_ANSWER: list[str] = []         # why a produce got no answer (diagnostics)


@pytest.fixture
def proxied_cluster(tmp_path, zookeeper_server):  # noqa: F811
    """A cluster whose every broker reaches ZooKeeper through a proxy of its own."""
    def through_proxies(c: Cluster):
        c.proxies = {}
        for i, node in c.nodes.items():
            proxy = c.proxies[i] = TcpProxy(zookeeper_server.port).start()
            connect = f"127.0.0.1:{proxy.port}{c.chroot}"
            if REFERENCE == "kafka":
                node.settings["zookeeper.connect"] = connect
            else:
                node.process.overrides["zookeeper.connect"] = connect
        return lambda: [proxy.stop() for proxy in c.proxies.values()]
    yield from running_cluster(tmp_path / "cluster", zookeeper_server, extra_settings=SETTINGS,
                               prepare=through_proxies)


def _batch(value: bytes) -> bytes:
    builder = DefaultRecordBatchBuilder(2, 0, False, -1, -1, -1, 1 << 20)
    builder.append(0, int(time.time() * 1000), None, value, [])
    return bytes(builder.build())


def produce(c: Cluster, node: int, topic: str, value: bytes) -> tuple[int, int]:
    """One acks=all record straight to ``node``: (error code, offset); (-1, -1) when no
    answer came (connection refused or closed, or no response within 10 s)."""
    try:
        wire = WireClient(c.bootstrap(node), timeout=10)
    except OSError:
        return -1, -1
    try:
        r = wire.request(0, 9, transactional_id=None, acks=-1, timeout_ms=2000,
                         topic_data=[Produce.TopicProduceData(name=topic, partition_data=[
                             Produce.TopicProduceData.PartitionProduceData(
                                 index=0, records=_batch(value))])])
    except (OSError, ConnectionError, socket.timeout) as e:
        NO_ANSWER.append(f"{type(e).__name__}: {e}")
        return -1, -1
    finally:
        wire.close()
    p = r.responses[0].partition_responses[0]
    return p.error_code, p.base_offset


@pytest.mark.parametrize("min_isr,role", [(1, "broker"), (2, "broker"), (1, "controller")])
def test_broker_cut_from_zookeeper_never_acknowledges_as_a_second_leader(proxied_cluster,
                                                                         unique, min_isr, role):
    c = proxied_cluster
    NO_ANSWER.clear()
    topic = unique("zk-cut")
    controller = c.controller_id()
    if role == "controller":
        victim = controller
    else:
        victim = next(i for i in (1, 2, 3) if i != controller)
    a, b = [i for i in (1, 2, 3) if i != victim]
    clients.create_topic(c.bootstrap(controller), topic, assignment={0: [victim, a, b]},
                         configs={"min.insync.replicas": str(min_isr)})
    c.wait_topic(topic, 1)
    wait_for(lambda: sorted(c.partition_state(topic, 0)["isr"]) == [1, 2, 3], REJOIN_S,
             "full ISR after creation")
    before = c.partition_state(topic, 0)
    old_epoch = c.broker_epoch(victim)

    acked: dict[bytes, int] = {}          # value -> acknowledged offset (any leader)
    for i in range(5):
        value = f"before-{i}".encode()
        assert produce(c, victim, topic, value) == (NONE, i)
        acked[value] = i

    c.proxies[victim].cut()
    # (sent after the new leader had acknowledged a write, value, error, offset)
    victim_outcomes: list[tuple[bool, bytes, int, int]] = []
    elected_at = None
    new_leader = None
    new_leader_acked = False
    deadline = time.monotonic() + FAILOVER_S + OBSERVE_AFTER_ELECTION_S + 30
    try:
        i = 0
        while time.monotonic() < deadline:
            i += 1
            if elected_at is None:
                state = c.partition_state(topic, 0)
                # leader -1 is a passing state when the victim was the controller: the new
                # one's failover takes the dead victim out of the ISR (leader -1, epoch + 1)
                # before it elects (Kafka's ReplicaStateMachine.startup runs before
                # PartitionStateMachine.startup)
                if (state["leader"] not in (victim, -1)
                        and state["leader_epoch"] > before["leader_epoch"]):
                    elected_at, new_leader = time.monotonic(), state["leader"]
            value = f"victim-{i}".encode()
            sent = time.monotonic()
            err, offset = produce(c, victim, topic, value)
            victim_outcomes.append((new_leader_acked, value, err, offset))
            print(f"victim produce {value!r}: error {err} offset {offset} after "
                  f"{time.monotonic() - sent:.1f}s; elected={elected_at is not None}")
            if err == NONE:
                acked[value] = offset
            if elected_at is not None:
                value = f"new-{i}".encode()
                err, offset = produce(c, new_leader, topic, value)
                if err == NONE:
                    acked[value] = offset
                    new_leader_acked = True
                if time.monotonic() - elected_at > OBSERVE_AFTER_ELECTION_S:
                    break
            time.sleep(0.2)
        assert elected_at is not None, (
            f"no new leader while {victim} was cut: {c.partition_state(topic, 0)}\n{c.summary()}")
        state = c.partition_state(topic, 0)
        assert new_leader == a and victim not in state["isr"], state
        assert victim not in c.registered()
        print(f"victim {victim} outcomes (after new leader acked, error) -> count:",
              Counter((after, err) for after, _, err, _ in victim_outcomes),
              f"new leader acks: {sum(v.startswith(b'new-') for v in acked)}; "
              f"no answer: {NO_ANSWER[-3:]}")
        second_leader_acks = [(v, off) for after, v, err, off in victim_outcomes
                              if after and err == NONE]
        assert not second_leader_acks, (
            f"{victim}, cut from ZooKeeper, acknowledged acks=all writes after {a} was elected: "
            f"{second_leader_acks[:10]}")
        assert any(v.startswith(b"new-") for v in acked), "the new leader acknowledged nothing"
    finally:
        c.proxies[victim].heal()

    def rejoined():
        if victim not in c.registered() or c.broker_epoch(victim) <= old_epoch:
            return False
        return sorted(c.partition_state(topic, 0)["isr"]) == [1, 2, 3]
    wait_for(rejoined, REJOIN_S, lambda: f"{victim} registered again and back in the ISR: "
                                         f"{c.partition_state(topic, 0)}\n{c.summary()}")
    assert c.partition_state(topic, 0)["leader"] == a

    log = dict(read_partition(c.bootstrap(a), topic))
    missing = sorted((v, off, log.get(off)) for v, off in acked.items() if log.get(off) != v)
    assert not missing, f"acknowledged writes missing afterwards: {missing[:10]}"
    values = list(log.values())
    assert len(values) == len(set(values)), "a record twice in the log"
    # Cut from ZooKeeper, a broker goes on serving: Kafka's victim answers each acks=all
    # Produce (NONE before the election, REQUEST_TIMED_OUT after timeout_ms once its
    # followers have left).  No answer within 10 s means its request handling stopped.
    unanswered = [v for _, v, err, _ in victim_outcomes if err == -1]
    assert not unanswered, (f"{victim}, cut from ZooKeeper, did not answer {len(unanswered)} "
                            f"of {len(victim_outcomes)} Produce requests within 10 s: "
                            f"{NO_ANSWER[-3:]}")
