"""kill -9 of a partition leader: leadership moves to another ISR member, clients continue.

An RF-3 topic, 3 partitions, one led by each broker.  A confluent-kafka producer (idempotent,
acks=all) bootstrapped from the controller writes known records to every partition; then the
leader of a partition that is not the controller is killed with kill -9.  When its session
ends the controller elects, for every partition it led, the first live ISR member in
assignment order, removes it from the ISRs (leader epoch + 1, state znodes written under the
current controller epoch) and tells the survivors.  The same producer goes on writing (it
learns the new leaders itself), and every record acknowledged before and after the kill is
read back, in order, through a survivor.  Needs the followers to replicate (acks=all with
an ISR of 3).
"""
from __future__ import annotations

from tests.support import cluster_clients as clients
from tests.support.cluster import FAILOVER_S, wait_for

PARTITIONS = 3


def _produce(producer, topic: str, values: dict[int, list[bytes]], timeout: float = 60.0) -> None:
    errors: list[str] = []
    for p, vals in values.items():
        for v in vals:
            producer.produce(topic, v, partition=p,
                             on_delivery=lambda err, _m: err and errors.append(str(err)))
            producer.poll(0)
    left = producer.flush(timeout)
    assert left == 0 and not errors, f"{left} unacknowledged, errors {errors[:5]}"


def test_killing_a_leader_moves_leadership_within_the_isr(cluster, unique):
    from confluent_kafka import Producer
    c = cluster
    topic = unique("failover")
    controller = c.controller_id()
    clients.create_topic(c.bootstrap(controller), topic, partitions=PARTITIONS, replication=3)
    leaders = c.wait_topic(topic, PARTITIONS)
    assignment = c.assignment(topic)
    victim = next(l for l in leaders.values() if l != controller)
    led = sorted(p for p, l in leaders.items() if l == victim)
    states_before = c.states(topic)

    producer = Producer({"bootstrap.servers": c.bootstrap(controller), "acks": "all",
                         "enable.idempotence": True, "linger.ms": 5,
                         "message.timeout.ms": 90000})
    first = {p: clients.record_values(topic, p, 50, "a") for p in range(PARTITIONS)}
    _produce(producer, topic, first)
    # acks=all: every record is on all three replicas before it is acknowledged.

    c.kill(victim)
    survivors = [i for i in (1, 2, 3) if i != victim]

    def moved():
        for i in survivors:
            view = c.metadata(i, [topic])
            for p in led:
                leader = view.topics[topic][p].leader
                if leader in (victim, -1):
                    return False
        return True
    wait_for(moved, FAILOVER_S, lambda: f"leaders of {led} to move off {victim}\n{c.summary()}")
    for p in led:
        old, new = states_before[p], c.partition_state(topic, p)
        live_isr = [r for r in assignment[p] if r in old["isr"] and r != victim]
        assert new["leader"] == live_isr[0], (p, old, new, assignment[p])
        assert victim not in new["isr"] and new["leader_epoch"] > old["leader_epoch"], (old, new)
        assert new["controller_epoch"] == c.controller_epoch()
    for p in set(range(PARTITIONS)) - set(led):
        assert c.partition_state(topic, p)["leader"] == leaders[p]

    # The same producer goes on; every acknowledged record is readable through a survivor.
    second = {p: clients.record_values(topic, p, 50, "b") for p in range(PARTITIONS)}
    _produce(producer, topic, second)
    producer.flush(10)
    expected = {p: first[p] + second[p] for p in range(PARTITIONS)}
    got = clients.consume_confluent(c.bootstrap(survivors[0]), topic,
                                    {p: 100 for p in range(PARTITIONS)})
    assert got == expected
    got = clients.consume_kafka_python(c.bootstrap(survivors[1]), topic,
                                       {p: 100 for p in range(PARTITIONS)})
    assert got == expected
