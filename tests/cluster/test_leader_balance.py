"""Preferred-leader balance across a three-broker cluster (issue 15, spec §17).

A topic of six partitions at replication factor 3 whose preferred (first) replicas rotate
over brokers 1, 2, 3.  Broker 1 is stopped with SIGTERM (a controlled shutdown moves its
leaderships away) and started again; it rejoins every ISR but leads nothing.  Then:
* with ``auto.leader.rebalance.enable=true``, ``leader.imbalance.check.interval.seconds=5``
  and ``leader.imbalance.per.broker.percentage=10`` (Kafka's default), the controller's
  periodic check gives leadership back to the preferred replicas within a bounded wait;
* with it off (the cluster tests' default), leadership stays away until an operator asks:
  ``kafka-leader-election.sh --election-type preferred --all-topic-partitions`` and
  ``kafkapy-leader-election`` with the same options each give it back, and print the same
  partitions (compared as sets: Kafka's order is a hash set's).

Runs against kafkapy and, with ``KAFKAPY_CLUSTER_REFERENCE=kafka``, against Kafka 3.9.
Invariants: every wait is bounded; traffic stays on 127.0.0.1.
"""
from __future__ import annotations

import re

import pytest

from tests.cluster import clients
from tests.cluster.conftest import kafka_tool, running_cluster, wait_for

CHECK_INTERVAL_S = 5
AUTO_SETTINGS = {
    "auto.leader.rebalance.enable": "true",
    "leader.imbalance.check.interval.seconds": str(CHECK_INTERVAL_S),
    "leader.imbalance.per.broker.percentage": "10",
}
# Preferred leaders rotate: broker 1 prefers p0 and p3.
ASSIGNMENT = {0: [1, 2, 3], 1: [2, 3, 1], 2: [3, 1, 2], 3: [1, 3, 2], 4: [2, 1, 3], 5: [3, 2, 1]}
PREFERRED = {p: r[0] for p, r in ASSIGNMENT.items()}
REJOIN_S = 90
# Rebalance bound: the rejoined broker's ISR entry, then at most one check interval (its
# period), then the election; generous margins for a loaded machine.
REBALANCE_S = 3 * CHECK_INTERVAL_S + 20


@pytest.fixture(scope="module")
def auto_cluster(tmp_path_factory, zookeeper_server):  # noqa: F811
    yield from running_cluster(tmp_path_factory.mktemp("auto-balance"), zookeeper_server,
                               AUTO_SETTINGS)


def leaders(c, topic: str) -> dict[int, int]:
    return {p: s["leader"] for p, s in c.states(topic).items()}


def in_every_isr(c, broker: int) -> bool:
    """``broker`` is in the ISR of every partition (of every topic) it is a replica of."""
    for topic in c.zk.get_children("/brokers/topics"):
        for p, replicas in c.assignment(topic).items():
            if broker in replicas and broker not in c.partition_state(topic, p)["isr"]:
                return False
    return True


def make_topic(c, topic: str) -> None:
    clients.create_topic(c.bootstrap(c.controller_id()), topic, assignment=ASSIGNMENT)
    c.wait_topic(topic, len(ASSIGNMENT))
    wait_for(lambda: all(sorted(s["isr"]) == [1, 2, 3] for s in c.states(topic).values()), REJOIN_S,
             f"{topic}: full ISRs")
    wait_for(lambda: leaders(c, topic) == PREFERRED, 30, f"{topic}: preferred leaders at creation")


def bounce_broker_1(c, topic: str) -> None:
    """SIGTERM broker 1 (its leaderships move away), start it again, wait until it is back
    in every ISR; it then leads none of the topic's partitions."""
    assert c.terminate(1) in (0, 143), "broker 1's exit code after SIGTERM"
    wait_for(lambda: 1 not in leaders(c, topic).values(), 30, "leadership away from broker 1")
    c.restart(1)
    c.wait_ready()
    wait_for(lambda: in_every_isr(c, 1), REJOIN_S,
             lambda: f"broker 1 back in every ISR: {c.states(topic)}\n{c.summary()}")
    now = leaders(c, topic)
    assert 1 not in now.values(), now


def test_auto_rebalance_gives_leadership_back_after_a_restart(auto_cluster, unique):
    c = auto_cluster
    topic = unique("auto-balance")
    make_topic(c, topic)
    bounce_broker_1(c, topic)
    wait_for(lambda: leaders(c, topic) == PREFERRED, REBALANCE_S,
             lambda: f"the auto rebalance to restore preferred leaders {PREFERRED}: now "
                     f"{leaders(c, topic)}\n{c.summary()}", interval=0.5)
    for i in c.running_ids():
        wait_for(lambda: c.leaders(topic, via=i) == PREFERRED, 30,
                 f"broker {i}'s metadata to show the preferred leaders")


_ELECTION_LINE = re.compile(r"^(Successfully completed leader election \(PREFERRED\) for partitions"
                            r"|Valid replica already elected for partitions) (.*)$")


def election_report(stdout: str) -> dict[str, set[str]]:
    """{first words of the line: set of "topic-partition"} from either tool's output."""
    report: dict[str, set[str]] = {}
    for line in stdout.splitlines():
        m = _ELECTION_LINE.match(line.strip())
        if m:
            report.setdefault(m.group(1), set()).update(x.strip() for x in m.group(2).split(","))
    return report


def run_election(c, tool: str, via: int):
    args = ("--bootstrap-server", c.bootstrap(via), "--election-type", "preferred",
            "--all-topic-partitions")
    if tool == "kafka":
        return kafka_tool("kafka-leader-election.sh", *args)
    return clients.kafkapy_tool("kafkapy-leader-election", *args)


def test_leader_election_tools_restore_preferred_leaders_on_demand(shared_cluster, unique):
    c = shared_cluster
    topic = unique("manual-balance")
    make_topic(c, topic)
    reports = {}
    for tool, via in (("kafka", 2), ("kafkapy", 3)):
        bounce_broker_1(c, topic)
        result = run_election(c, tool, via)
        assert result.returncode == 0, f"{tool}: {result.stdout}\n{result.stderr}"
        reports[tool] = election_report(result.stdout)
        elected = reports[tool].get(
            "Successfully completed leader election (PREFERRED) for partitions", set())
        assert {f"{topic}-0", f"{topic}-3"} <= elected, (tool, result.stdout)
        wait_for(lambda: leaders(c, topic) == PREFERRED, 30,
                 lambda: f"preferred leaders after {tool}'s election: {leaders(c, topic)}")
        for i in c.running_ids():
            wait_for(lambda: c.leaders(topic, via=i) == PREFERRED, 30,
                     f"broker {i}'s metadata to show the preferred leaders")
    assert reports["kafka"] == reports["kafkapy"], reports
