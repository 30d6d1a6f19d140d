"""Cluster gauges on three kafkapy brokers (tests/cluster's ``Cluster``, real ZooKeeper).

Each broker serves its own ``kafkapy.metrics.port``.  Checked, scraping every broker:
- exactly one broker reports ``kafka_controller_kafkacontroller_activecontrollercount`` 1;
- with every broker up, nothing is under-replicated or offline;
- after kill -9 of a broker that is not the controller: every partition of a replication
  factor 3 topic is under-replicated on its (surviving) leader, and the partition whose
  only replica was on the killed broker is offline on the controller.
Waits are bounded (``wait_for``): the controller learns of the death from ZooKeeper.
"""
from __future__ import annotations

import pytest
from kafka.admin import KafkaAdminClient, NewTopic

from tests.support.broker_process import free_port
from tests.support.cluster import SESSION_S, running_cluster, wait_for
from tests.support.metrics import scrape, value
from tests.support.zookeeper_server import zookeeper_server  # noqa: F401 (fixture)

REPLICATED = "metrics-rf3"
SINGLE = "metrics-rf1"


def _with_metrics_ports(cluster) -> None:
    for node in cluster.nodes.values():
        node.metrics_port = free_port()
        node.process.overrides["kafkapy.metrics.port"] = str(node.metrics_port)
        node.process.metrics_port = node.metrics_port


@pytest.fixture
def metrics_cluster(tmp_path, zookeeper_server):  # noqa: F811
    yield from running_cluster(tmp_path / "cluster", zookeeper_server,
                               prepare=_with_metrics_ports)


def _sum(cluster, name: str, ids=None) -> float:
    return sum(value(scrape(cluster.nodes[i].process), name)
               for i in (ids or cluster.running_ids()))


def test_controller_under_replicated_and_offline_gauges(metrics_cluster):
    c = metrics_cluster
    controller = c.controller_id()
    victim = next(i for i in c.running_ids() if i != controller)
    admin = KafkaAdminClient(bootstrap_servers=c.bootstrap(controller))
    try:
        admin.create_topics([NewTopic(REPLICATED, 3, 3),
                             NewTopic(SINGLE, -1, -1, replica_assignments={0: [victim]})])
    finally:
        admin.close()
    c.wait_topic(REPLICATED, 3)
    c.wait_topic(SINGLE, 1)

    active = "kafka_controller_kafkacontroller_activecontrollercount"
    assert {i: value(scrape(c.nodes[i].process), active) for i in c.running_ids()} == {
        i: (1 if i == controller else 0) for i in c.running_ids()}
    under = "kafka_server_replicamanager_underreplicatedpartitions"
    wait_for(lambda: _sum(c, under) == 0, 30, "every ISR full")
    offline = "kafka_controller_kafkacontroller_offlinepartitionscount"
    assert _sum(c, offline) == 0

    c.kill(victim)
    survivors = [i for i in c.running_ids() if i != victim]
    wait_for(lambda: _sum(c, offline, survivors) == 1, SESSION_S + 30,
             "the killed broker's only partition offline on the controller")
    assert value(scrape(c.nodes[controller].process), offline) == 1
    wait_for(lambda: _sum(c, under, survivors) == 3, SESSION_S + 30,
             "the replicated topic's partitions under-replicated on their leaders")
    assert _sum(c, active, survivors) == 1
