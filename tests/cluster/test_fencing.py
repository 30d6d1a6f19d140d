"""controller_epoch fencing: a paused old controller is replaced, fenced, and steps down.

A controller SIGSTOPped past its ZooKeeper session loses ``/controller``; another broker is
elected with a higher ``/controller_epoch`` and takes over.  On SIGCONT the old one finds its
session gone, resigns (its log says so), registers again as an ordinary broker, and takes its
metadata from the new controller; ``/controller`` still names the new one, the epoch is
unchanged, and nothing the old controller might still send is accepted: every partition
state written after its return carries the new epoch.

Every broker refuses controller requests from an older controller epoch
(STALE_CONTROLLER_EPOCH) or for an older broker epoch than its registration
(STALE_BROKER_EPOCH), checked with raw LeaderAndIsr v7 / UpdateMetadata v8 / StopReplica v4
requests, as Kafka 3.9's ReplicaManager and KafkaApis check them.  Beyond Kafka 3.9 (which
takes a higher controller epoch from anyone), kafkapy brokers refuse a controller epoch or
controller id that ZooKeeper's ``/controller_epoch`` and ``/controller`` do not confirm, and
the controller refuses a ControlledShutdown without the named broker's registration epoch,
so forged requests leave every broker obeying the real controller.
"""
from __future__ import annotations

import pytest

from tests.support import cluster_clients as clients
from tests.support.cluster import (
    FAILOVER_S, LOG_PATTERNS, REFERENCE, STALE_BROKER_EPOCH, STALE_CONTROLLER_EPOCH, wait_for)
from tests.support.request_fields import fields


def test_paused_controller_is_fenced_and_steps_down(cluster, unique):
    c = cluster
    topic = unique("fenced")
    clients.create_topic(c.bootstrap(1), topic, partitions=6, replication=3)
    c.wait_topic(topic, 6)
    old, old_epoch = c.controller_id(), c.controller_epoch()
    others = [i for i in (1, 2, 3) if i != old]

    c.pause(old)
    try:
        new = wait_for(lambda: (c.controller_id() not in (None, old)) and c.controller_id(),
                       FAILOVER_S, lambda: f"a new controller while {old} is paused\n{c.summary()}")
        new_epoch = c.controller_epoch()
        assert new in others and new_epoch > old_epoch

        # The new controller moved leadership off the paused broker and told the others.
        def taken_over():
            if old in c.registered():
                return False
            for i in others:
                view = c.metadata(i, [topic])
                if view.controller != new or old in view.brokers:
                    return False
                if any(p.leader in (old, -1) for p in view.topics[topic].values()):
                    return False
            return True
        wait_for(taken_over, FAILOVER_S,
                 lambda: f"{new} to take over from paused {old}\n{c.summary()}")
        before = {p: c.zk.get(f"/brokers/topics/{topic}/partitions/{p}/state")[1].version
                  for p in range(6)}
    finally:
        c.resume(old)

    # The old controller notices its session is gone, resigns, and rejoins as a broker
    # whose cache the new controller fills.
    def rejoined():
        if old not in c.registered():
            return False
        view = c.metadata(old, [topic])
        return view.controller == new and set(view.brokers) == {1, 2, 3} and len(
            view.topics.get(topic, {})) == 6
    wait_for(rejoined, FAILOVER_S + 10,
             lambda: f"old controller {old} to rejoin under {new}\n{c.summary()}")
    assert LOG_PATTERNS["resigned"].search(c.log_text(old)), (
        f"broker {old}'s log does not say it resigned:\n{c.log_text(old)[-4000:]}")

    # Fenced: the new controller stays, with its epoch; every broker names it (polled a few
    # times, so a late request of the old controller would show).
    for _ in range(10):
        assert (c.controller_id(), c.controller_epoch()) == (new, new_epoch)
        for i in (1, 2, 3):
            assert c.metadata(i).controller == new, f"broker {i} names another controller"
        import time
        time.sleep(0.2)
    for p in range(6):
        data, stat = c.zk.get(f"/brokers/topics/{topic}/partitions/{p}/state")
        if stat.version != before[p]:
            import json
            assert json.loads(data)["controller_epoch"] == new_epoch, (p, data)
    stale = [i for i in others if LOG_PATTERNS["stale_epoch"].search(c.log_text(i))]
    print(f"brokers that logged a refused stale-epoch request: {stale}")

    # And the cluster works: records in and out through the old controller.
    values = {p: clients.record_values(topic, p, 5) for p in range(6)}
    clients.produce_confluent(c.bootstrap(old), topic, values)
    assert clients.consume_confluent(c.bootstrap(old), topic, {p: 5 for p in range(6)}) == values


# --------------------------------------------------------------------------- raw requests

def _live_brokers(view) -> list[dict]:
    """The cluster's real broker list (harmless even if a broken broker applied it)."""
    return [dict(id=i, endpoints=[dict(port=port, host="127.0.0.1", listener="PLAINTEXT",
                                       security_protocol=0)], rack=None)
            for i, port in sorted(view.brokers.items())]


def _send(c, node: int, api_key: int, version: int, **values):
    return clients.request(c, node, api_key, version, **fields(api_key, **values))


def _assert_every_broker_refuses(c, controller: int, controller_epoch: int,
                                 broker_epoch_delta: int, error: int,
                                 sender: int | None = None) -> None:
    """UpdateMetadata v8, LeaderAndIsr v7 and StopReplica v4 as ``sender`` (default:
    ``controller``) at ``controller_epoch``, for each broker's epoch plus
    ``broker_epoch_delta``: every broker answers ``error`` to each; afterwards every broker
    still names ``controller``."""
    view = c.metadata(controller)
    sender = controller if sender is None else sender
    for node in (1, 2, 3):
        common = dict(controller_id=sender, is_k_raft_controller=False,
                      controller_epoch=controller_epoch,
                      broker_epoch=c.broker_epoch(node) + broker_epoch_delta)
        um = _send(c, node, 6, 8, **common, topic_states=[], live_brokers=_live_brokers(view))
        assert um.error_code == error, f"UpdateMetadata to {node}: {um}"
        lai = _send(c, node, 4, 7, **common, type=0, topic_states=[],
                    live_leaders=[dict(broker_id=controller, host_name="127.0.0.1",
                                       port=view.brokers[controller])])
        assert lai.error_code == error, f"LeaderAndIsr to {node}: {lai}"
        sr = _send(c, node, 5, 4, **common, topic_states=[])
        assert sr.error_code == error, f"StopReplica to {node}: {sr}"
    # Nothing changed: every broker still names the controller.
    assert all(c.metadata(i).controller == controller for i in (1, 2, 3))


def test_brokers_refuse_a_stale_controller_epoch(shared_cluster):
    c = shared_cluster
    controller, epoch = c.controller_id(), c.controller_epoch()
    assert epoch >= 1
    _assert_every_broker_refuses(c, controller, epoch - 1, 0, STALE_CONTROLLER_EPOCH)


def test_brokers_refuse_a_stale_broker_epoch(shared_cluster):
    c = shared_cluster
    controller, epoch = c.controller_id(), c.controller_epoch()
    _assert_every_broker_refuses(c, controller, epoch, -1, STALE_BROKER_EPOCH)


@pytest.mark.skipif(REFERENCE == "kafka", reason="Kafka 3.9 takes a higher controller epoch "
                    "from anyone and moves leaderships for any broker epoch")
def test_forged_controller_requests_are_refused(shared_cluster, unique):
    c = shared_cluster
    controller, epoch = c.controller_id(), c.controller_epoch()
    # The controller's id with an epoch ZooKeeper does not hold; nobody's id (-1) with a
    # garbled epoch; another broker's id at the current epoch.
    _assert_every_broker_refuses(c, controller, epoch + 1, 0, STALE_CONTROLLER_EPOCH)
    _assert_every_broker_refuses(c, controller, 1064960, 0, STALE_CONTROLLER_EPOCH, sender=-1)
    impostor = next(i for i in (1, 2, 3) if i != controller)
    _assert_every_broker_refuses(c, controller, epoch, 0, STALE_CONTROLLER_EPOCH,
                                 sender=impostor)
    # ControlledShutdown for a live broker without its registration's epoch.
    victim = impostor
    for version, broker_epoch in ((3, c.broker_epoch(victim) + 1), (3, -1), (1, None)):
        values = {"broker_id": victim}
        if broker_epoch is not None:
            values["broker_epoch"] = broker_epoch
        answer = _send(c, controller, 7, version, **values)
        assert (answer.error_code, answer.remaining_partitions) == (STALE_BROKER_EPOCH, []), (
            version, answer)
    assert (c.controller_id(), c.controller_epoch()) == (controller, epoch)

    # Every broker still obeys the controller: a new topic gets leaders on every broker
    # (the victim was not taken for shutting down) and takes records through each.
    topic = unique("after-forgery")
    clients.create_topic(c.bootstrap(controller), topic, partitions=6, replication=3)
    leaders = c.wait_topic(topic, 6)
    assert set(leaders.values()) == {1, 2, 3}, leaders
    values = {p: clients.record_values(topic, p, 5) for p in range(6)}
    clients.produce_confluent(c.bootstrap(victim), topic, values)
    assert clients.consume_confluent(c.bootstrap(victim), topic, {p: 5 for p in range(6)}) == values
