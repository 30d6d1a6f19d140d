"""SIGTERM runs a controlled shutdown: the stopping broker leads nothing before it exits.

With ``controlled.shutdown.enable`` the broker asks the controller (ControlledShutdown) to
move away every leadership it holds before it closes its ZooKeeper session; the controller
elects a live ISR member that is not shutting down for each (Kafka's
ControlledShutdownPartitionLeaderElectionStrategy) and tells everyone.  Observed from
outside: while the broker is still registered in ``/brokers/ids`` (so the controller cannot
be acting on its death yet), the partition state znodes and another broker's Metadata
already show it leading nothing.  Then it exits with status 0, and the cluster serves every
partition from the others.  Both a plain broker and the controller itself are stopped.
"""
from __future__ import annotations

import time

import pytest

from tests.cluster import clients
from tests.cluster.conftest import FAILOVER_S, REFERENCE, wait_for

PARTITIONS = 6


@pytest.mark.parametrize("role", ["broker", "controller"])
def test_sigterm_moves_every_leadership_away_before_exit(cluster, unique, role):
    c = cluster
    topic = unique("shutdown")
    clients.create_topic(c.bootstrap(1), topic, partitions=PARTITIONS, replication=3)
    leaders = c.wait_topic(topic, PARTITIONS)
    controller = c.controller_id()
    victim = controller if role == "controller" else next(
        i for i in (1, 2, 3) if i != controller)
    assert victim in leaders.values()
    watcher = next(i for i in (1, 2, 3) if i != victim)
    values = {p: clients.record_values(topic, p, 10) for p in range(PARTITIONS)}
    clients.produce_confluent(c.bootstrap(watcher), topic, values)

    proc = c.nodes[victim].proc
    proc.send_signal(15)
    clean_while_registered = None      # a snapshot taken while still registered
    deadline = time.monotonic() + 90
    while time.monotonic() < deadline:
        states = c.states(topic)
        try:
            view = c.metadata(watcher, [topic]).leaders(topic)
        except OSError:
            view = None
        registered = victim in c.registered()
        if not registered:
            break
        if (all(s["leader"] != victim for s in states.values())
                and view is not None and victim not in view.values()):
            clean_while_registered = (states, view)
        time.sleep(0.02)
    else:
        pytest.fail(f"broker {victim} still registered 90 s after SIGTERM\n{c.summary()}")
    assert clean_while_registered is not None, (
        f"broker {victim} was still a leader when its registration went: the controller moved "
        f"its partitions only on its death, not by controlled shutdown\n{c.summary()}")
    states, view = clean_while_registered
    rc = proc.wait(60)
    assert rc == 0 or (REFERENCE == "kafka" and rc == 143), (
        f"broker {victim} exited with {rc}\n{c.log_text(victim)[-4000:]}")

    survivors = [i for i in (1, 2, 3) if i != victim]
    c.wait_topic(topic, PARTITIONS, via=survivors, leaders_in=survivors, timeout=FAILOVER_S)
    got = clients.consume_confluent(c.bootstrap(survivors[0]), topic,
                                    {p: 10 for p in range(PARTITIONS)})
    assert got == values
    if role == "controller":
        wait_for(lambda: c.controller_id() in survivors, FAILOVER_S, "a new controller")
