"""SIGTERM runs a controlled shutdown: the stopping broker leads nothing before it exits.

With ``controlled.shutdown.enable`` the broker asks the controller (ControlledShutdown) to
move away every leadership it holds before it closes its ZooKeeper session; the controller
elects a live ISR member that is not shutting down for each (Kafka's
ControlledShutdownPartitionLeaderElectionStrategy) and tells everyone.  Observed from
outside through ZooKeeper's order of changes: every partition state znode shows it leading
nothing before its registration leaves ``/brokers/ids`` (so the controller cannot have been
acting on its death).  The test watches the state znodes and ``/brokers/ids``; ZooKeeper
delivers one client's watch events in the order of the changes and kazoo runs their
callbacks one at a time in that order, so the leaders seen when the registration's removal
arrives are those written before it, however slowly the test's thread runs.  (Another
broker's Metadata may lag: Kafka answers ControlledShutdown once LeaderAndIsr and
UpdateMetadata are queued, not delivered.)  Then it exits with status 0, and the cluster serves every
partition from the others.  Both a plain broker and the controller itself are stopped.
"""
from __future__ import annotations

import json
import threading

import pytest
from kazoo.recipe.watchers import ChildrenWatch, DataWatch

from tests.support import cluster_clients as clients
from tests.support.cluster import FAILOVER_S, REFERENCE, wait_for

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
    watched = _ZkOrder(c, topic, victim)
    try:
        proc.send_signal(15)
        wait_for(lambda: watched.deregistered_with is not None, 90,
                 lambda: f"broker {victim} still registered 90 s after SIGTERM\n{c.summary()}")
    finally:
        watched.stop()
    assert sorted(watched.deregistered_with) == list(range(PARTITIONS))
    still_led = {p: leader for p, leader in watched.deregistered_with.items()
                 if leader == victim}
    assert not still_led, (
        f"broker {victim} still led {sorted(still_led)} when its registration went: the "
        f"controller moved them only on its death, not by controlled shutdown\n{c.summary()}")
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


class _ZkOrder:
    """Each partition's leader as last seen, and a copy of them taken when ``victim``'s
    registration is first seen gone (``deregistered_with``), all in watch-event order."""

    def __init__(self, c, topic: str, victim: int):
        self._victim = victim
        self._stopped = False
        self._lock = threading.Lock()
        self.leaders: dict[int, int] = {}
        self.deregistered_with: dict[int, int] | None = None
        for p in c.assignment(topic):
            DataWatch(c.zk, f"/brokers/topics/{topic}/partitions/{p}/state",
                      self._state_watcher(p))
        ChildrenWatch(c.zk, "/brokers/ids", self._on_brokers)

    def _state_watcher(self, partition: int):
        def on_state(data, _stat) -> bool:
            if data is not None:
                with self._lock:
                    self.leaders[partition] = json.loads(data)["leader"]
            return not self._stopped      # False ends the watch
        return on_state

    def _on_brokers(self, children) -> bool:
        with self._lock:
            if self.deregistered_with is None and str(self._victim) not in children:
                self.deregistered_with = dict(self.leaders)
        return not self._stopped

    def stop(self) -> None:
        self._stopped = True
