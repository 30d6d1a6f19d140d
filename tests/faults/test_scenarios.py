"""Every fault scenario (tests/support/faults/scenarios.py), short, against kafkapy: the
checker must find no anomaly in the history and the replicas' logs, and the workloads must
have had acknowledged writes (the run proved something).

One ZooKeeper for the module (under its own group, so brokers can be cut from it); a fresh
three-broker cluster per scenario.  ``bench/faults.py`` runs the long version against
kafkapy and Kafka 3.9.
"""
from __future__ import annotations

import json

import pytest

from tests.support.faults import scenarios

KIND = "kafkapy"


@pytest.mark.parametrize("name", sorted(scenarios.SCENARIOS))
def test_scenario_checks_clean(name, tmp_path, faults_zookeeper, net):
    outcome = scenarios.run(name, KIND, tmp_path, faults_zookeeper, net, scenarios.SHORT)
    report = outcome.report
    found = {k: v for k, v in report.counts.items() if v}
    detail = "\n".join(outcome.notes + [f"{k}: {json.dumps(report.examples[k])[:2000]}"
                                        for k in found] + [f"history: {outcome.history_path}"])
    assert not found, f"{name}: anomalies {found}\n{detail}"
    assert report.acked > 0, f"{name}: no acknowledged write\n{detail}"
    assert not [n for n in outcome.notes if n.startswith("workload error")], detail
    if name == "leader-paused-in-fsync":
        assert any("during an fsync" in n for n in outcome.notes), detail
