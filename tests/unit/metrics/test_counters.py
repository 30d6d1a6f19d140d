"""kafkapy.metrics.counters and the collector's percentiles, without a broker.

- ``ApiStats.observe`` counts by version, sums the time and keeps the latest RECENT times;
- a Fetch counts under Fetch and under FetchConsumer or FetchFollower (Kafka's
  RequestChannel), by replica id below v15 and by ``replica_state`` from v15;
- a retired (deleted) topic's counts stay in the all-topics totals;
- the percentiles are Yammer's (Snapshot.getValue: interpolated at q * (n + 1)).
"""
from __future__ import annotations

from types import SimpleNamespace

import pytest

from kafkapy.metrics import counters as C
from kafkapy.metrics.collector import _percentiles


def test_observe_counts_versions_and_keeps_the_latest_times():
    stats = C.ApiStats("Test")
    for i in range(C.RECENT + 10):
        stats.observe(i % 2, float(i))
    assert stats.versions[0] + stats.versions[1] == stats.count == C.RECENT + 10
    assert stats.total_ms == sum(range(C.RECENT + 10))
    assert sorted(stats.samples()) == [float(i) for i in range(10, C.RECENT + 10)]


def test_samples_before_the_ring_fills():
    stats = C.ApiStats("Test")
    stats.observe(3, 2.5)
    assert stats.samples() == [2.5] and stats.versions[3] == 1


@pytest.mark.parametrize("version,request_fields,kind", [
    (12, {"replica_id": -1}, "FetchConsumer"),
    (12, {"replica_id": 2}, "FetchFollower"),
    (15, {"replica_state": SimpleNamespace(replica_id=3)}, "FetchFollower"),
    (15, {"replica_state": SimpleNamespace(replica_id=-1)}, "FetchConsumer"),
    (17, {"replica_state": None}, "FetchConsumer"),
])
def test_fetch_counts_twice(version, request_fields, kind):
    named = {s.name: s for s in C.all_api_stats()}
    before = {n: named[n].count for n in ("Fetch", "FetchConsumer", "FetchFollower")}
    C.fetch_stats(SimpleNamespace(**request_fields), version).observe(version, 1.0)
    after = {n: named[n].count for n in before}
    other = "FetchFollower" if kind == "FetchConsumer" else "FetchConsumer"
    assert after["Fetch"] == before["Fetch"] + 1
    assert after[kind] == before[kind] + 1 and after[other] == before[other]


def test_a_retired_topic_stays_in_the_totals():
    start = C.all_topics()
    C.appended("unit-kept", 3, 300)
    C.appended("unit-gone", 2, 200)
    C.fetched("unit-gone", 50)
    C.retire_topics(set(C.TOPICS) - {"unit-gone"})
    assert "unit-gone" not in C.TOPICS and C.TOPICS["unit-kept"].messages_in == 3
    total = C.all_topics()
    assert total.messages_in == start.messages_in + 5
    assert total.bytes_in == start.bytes_in + 500 and total.bytes_out == start.bytes_out + 50


def test_percentiles_are_yammers():
    values = [float(v) for v in range(1, 101)]
    got = dict(_percentiles(values))
    assert set(got) == {"0.50", "0.75", "0.95", "0.98", "0.99", "0.999"}
    assert got["0.50"] == pytest.approx(50.5)
    assert got["0.99"] == pytest.approx(99.99)
    assert got["0.999"] == 100.0
    assert dict(_percentiles([7.0])) == dict.fromkeys(got, 7.0)
