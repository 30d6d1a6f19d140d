"""A broker whose ZooKeeper session expires registers again and rejoins the cluster.

A (non-controller) broker is SIGSTOPped until ZooKeeper expires its session: its
``/brokers/ids/N`` goes, the controller treats it as failed (the RF-1 partitions it led go
offline: leader -1 everywhere).  On SIGCONT it finds the session expired, registers again
(a new registration, so a higher broker epoch), and the controller runs its broker-startup
work: the others list it again, its offline partitions come back online with it as leader,
and new topics are placed on it too.  Clients then produce to and read from it.
"""
from __future__ import annotations

from tests.support import cluster_clients as clients
from tests.support.cluster import FAILOVER_S, wait_for

PARTITIONS = 6


def test_expired_broker_registers_again_and_leads_again(cluster, unique):
    c = cluster
    topic = unique("expiring")
    clients.create_topic(c.bootstrap(1), topic, partitions=PARTITIONS, replication=1)
    leaders = c.wait_topic(topic, PARTITIONS)
    controller = c.controller_id()
    victim = next(i for i in (1, 2, 3) if i != controller)
    theirs = sorted(p for p, l in leaders.items() if l == victim)
    others = [i for i in (1, 2, 3) if i != victim]
    old_epoch = c.broker_epoch(victim)

    c.pause(victim)
    try:
        def failed():
            if victim in c.registered():
                return False
            for i in others:
                view = c.metadata(i, [topic])
                if victim in view.brokers or any(
                        view.topics[topic][p].leader != -1 for p in theirs):
                    return False
            return True
        wait_for(failed, FAILOVER_S,
                 lambda: f"the controller to treat paused {victim} as failed\n{c.summary()}")
    finally:
        c.resume(victim)

    def rejoined():
        if victim not in c.registered():
            return False
        for i in (1, 2, 3):
            view = c.metadata(i, [topic])
            if set(view.brokers) != {1, 2, 3} or view.controller != controller:
                return False
            if view.leaders(topic) != leaders:
                return False
        return True
    wait_for(rejoined, FAILOVER_S + 15,
             lambda: f"{victim} to register again and lead {theirs} again\n{c.summary()}")
    assert c.broker_epoch(victim) > old_epoch
    assert c.controller_id() == controller

    fresh = unique("after-expiry")
    clients.create_topic(c.bootstrap(victim), fresh, partitions=PARTITIONS, replication=1)
    fresh_leaders = c.wait_topic(fresh, PARTITIONS)
    assert sorted(fresh_leaders.values()) == [1, 1, 2, 2, 3, 3], fresh_leaders

    values = {p: clients.record_values(topic, p, 5) for p in theirs}
    clients.produce_confluent(c.bootstrap(victim), topic, values)
    assert clients.consume_kafka_python(c.bootstrap(controller), topic,
                                        {p: 5 for p in theirs}) == values
