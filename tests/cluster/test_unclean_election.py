"""Leader election from the ISR, and ``unclean.leader.election.enable`` per topic.

Two topics on the same replicas (explicit assignment [a, b]): ``clean`` with the default
(false) and ``unclean`` with the topic override true.  Kill b: the controller drops it from
both ISRs (a leads, ISR [a]).  Kill a: no live ISR member is left, so both partitions go
offline (leader -1, ISR [a] kept, as Kafka keeps the last ISR member).  Start b again: only
``unclean`` elects it (a replica outside the ISR); ``clean`` stays offline until a, its last
ISR member, returns.
"""
from __future__ import annotations

from tests.support import cluster_clients as clients
from tests.support.cluster import FAILOVER_S, wait_for


def test_unclean_leader_election_is_per_topic(cluster, unique):
    c = cluster
    controller = c.controller_id()
    a, b = [i for i in (1, 2, 3) if i != controller]
    clean, unclean = unique("clean"), unique("unclean")
    clients.create_topic(c.bootstrap(controller), clean, assignment={0: [a, b]})
    clients.create_topic(c.bootstrap(controller), unclean, assignment={0: [a, b]},
                         configs={"unclean.leader.election.enable": "true"})
    for t in (clean, unclean):
        c.wait_topic(t, 1)
        clients.produce_confluent(c.bootstrap(controller), t, {0: [b"before"]})

    def state(t):
        s = c.partition_state(t, 0)
        return s["leader"], sorted(s["isr"])

    c.kill(b)
    wait_for(lambda: state(clean) == state(unclean) == (a, [a]), FAILOVER_S,
             lambda: f"{b} out of the ISRs: {state(clean)} {state(unclean)}\n{c.summary()}")
    c.kill(a)
    wait_for(lambda: state(clean) == state(unclean) == (-1, [a]), FAILOVER_S,
             lambda: f"both offline: {state(clean)} {state(unclean)}\n{c.summary()}")

    c.restart(b)
    wait_for(lambda: state(unclean) == (b, [b]), FAILOVER_S,
             lambda: f"unclean election of {b}: {state(unclean)}\n{c.summary()}")
    wait_for(lambda: c.leaders(unclean, controller) == {0: b}, FAILOVER_S,
             "metadata to name the unclean leader")
    assert state(clean) == (-1, [a])
    assert c.leaders(clean, controller) == {0: -1}

    c.restart(a)
    wait_for(lambda: state(clean)[0] == a, FAILOVER_S,
             lambda: f"{a} back as leader of {clean}: {state(clean)}\n{c.summary()}")
    errors: list[str] = []
    got = clients.consume_confluent(c.bootstrap(controller), clean, {0: 1}, errors=errors)
    assert got == {0: [b"before"]}, (f"{got} {errors[:5]}\n{_partition_files(c, clean)}\n"
                                     f"{c.summary()}")


def test_enabling_unclean_election_elects_an_offline_partition(cluster, unique):
    """Kafka's TopicUncleanLeaderElectionEnable: turning the topic override on retries the
    topic's offline partitions at once, with no broker change needed."""
    from confluent_kafka.admin import AdminClient, ConfigResource
    c = cluster
    controller = c.controller_id()
    topic = unique("later")
    a, b = clients.offline_partition(c, topic)

    def state():
        return clients.leader_and_isr(c, topic)

    admin = AdminClient({"bootstrap.servers": c.bootstrap(controller)})
    resource = ConfigResource("topic", topic, set_config={"unclean.leader.election.enable": "true"})
    for future in admin.alter_configs([resource]).values():
        future.result(30)
    wait_for(lambda: state() == (b, [b]), FAILOVER_S,
             lambda: f"unclean election of {b} after the config change: {state()}\n{c.summary()}")


def _partition_files(c, topic: str) -> str:
    """Each broker's files of ``topic``-0 with their sizes (what a failed read had on disk)."""
    lines = []
    for i, node in c.nodes.items():
        d = node.log_dir / f"{topic}-0"
        files = sorted(d.iterdir()) if d.is_dir() else []
        lines.append(f"broker {i}: " + ", ".join(f"{f.name}={f.stat().st_size}" for f in files))
    return "\n".join(lines)

