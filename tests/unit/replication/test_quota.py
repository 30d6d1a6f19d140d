"""Replication throttles (kafkapy.replication.quota) on a mock clock.

The rate arithmetic is Kafka 3.9's (SimpleRate over SampledStat; the first test is
Kafka's ReplicationQuotaManagerTest.shouldExceedQuotaThenReturnBackBelowBoundAsTimePasses
step by step); the exclusion decisions are checked through real replicas stepped by
hand (tests/support/replication_steps.py: real logs, the real Fetch handler, the real
replica fetchers).
"""
from __future__ import annotations

import asyncio
from types import SimpleNamespace

import pytest

from kafkapy.clock import MockClock
from kafkapy.replication.quota import (ALL_REPLICAS, FOLLOWER, LEADER, LONG_MAX,
                                       ReplicationQuota, parse_throttled)
from tests.support.replication_steps import TOPIC, Cluster

A, B = 0, 1
LEADER_RATE = "leader.replication.throttled.rate"
FOLLOWER_RATE = "follower.replication.throttled.rate"
LEADER_REPLICAS = "leader.replication.throttled.replicas"
FOLLOWER_REPLICAS = "follower.replication.throttled.replicas"


def _partition(replicas_key: str, replicas: list, index: int = 0, isr=(0,)):
    return SimpleNamespace(topic="t", index=index, state=SimpleNamespace(isr=list(isr)),
                           log=SimpleNamespace(config=SimpleNamespace(
                               values={replicas_key: replicas})))


# -- the rate ----------------------------------------------------------------------------
def test_rate_exceeds_then_returns_below_the_bound_as_time_passes():
    """Kafka's ReplicationQuotaManagerTest, with 10 samples of 1 s and a bound of 100 B/s."""
    clock = MockClock(0)
    config = {LEADER_RATE: 100, "replication.quota.window.num": 10,
              "replication.quota.window.size.seconds": 1}
    quota = ReplicationQuota(LEADER, 0, config=config, clock=clock)
    assert not quota.is_exceeded()           # the first measure starts the first sample
    clock.advance(1500)
    quota.record(1)
    assert not quota.is_exceeded()
    quota.record(149)                        # 150 B over 1.5 s
    assert not quota.is_exceeded()
    quota.record(1)                          # 151 B over 1.5 s
    assert quota.rate() == 151 / 1.5
    assert quota.is_exceeded()
    clock.advance(500)                       # 151 B over 2 s
    assert not quota.is_exceeded()
    assert quota.rate() == pytest.approx(151 / 2, abs=0.1)
    clock.advance(500)
    quota.record(99)                         # 250 B over 2.5 s: exactly the bound
    assert quota.rate() == 250 / 2.5
    assert not quota.is_exceeded()
    quota.record(1)
    assert quota.is_exceeded()
    assert quota.rate() == 251 / 2.5
    clock.advance(2000)
    assert not quota.is_exceeded()
    assert quota.rate() == 251 / 4.5


def test_zero_records_keep_the_span_a_burst_is_averaged_over():
    """Kafka records every follower fetch answered, zero bytes included: an idle follower
    keeps the samples alive, so a later burst is averaged over their whole span."""
    clock = MockClock(0)
    config = {LEADER_RATE: 1000}
    quota = ReplicationQuota(LEADER, 0, config=config, clock=clock)
    for _ in range(20):
        quota.record(0)
        clock.advance(500)
    quota.record(9000)                       # 9000 B over 10 s of samples
    assert quota.rate() == 900.0
    assert not quota.is_exceeded()
    fresh = ReplicationQuota(LEADER, 0, config=config, clock=clock)
    fresh.record(9000)                       # the same burst with no history
    assert fresh.rate() == 9000.0
    assert fresh.is_exceeded()


def test_an_unset_rate_is_never_exceeded_and_reads_the_config_each_time():
    clock = MockClock(0)
    config: dict = {}
    quota = ReplicationQuota(FOLLOWER, 1, config=config, clock=clock)
    quota.record(10 ** 12)
    assert not quota.is_exceeded()           # Long.MAX_VALUE: unthrottled
    config[FOLLOWER_RATE] = LONG_MAX
    assert not quota.is_exceeded()
    config[FOLLOWER_RATE] = 1000                 # a dynamic change applies at once
    assert quota.is_exceeded()
    config[FOLLOWER_RATE] = 10 ** 12
    assert not quota.is_exceeded()


# -- which partitions --------------------------------------------------------------------
@pytest.mark.parametrize("replicas, node, expected", [
    (["*"], 3, ALL_REPLICAS),
    ([" * "], 3, ALL_REPLICAS),
    (["0:1", "1:2", "2:1"], 1, frozenset({0, 2})),
    (["0:1", "1:2"], 2, frozenset({1})),
    (["0:1"], 5, frozenset()),
    ([], 1, frozenset()),
])
def test_parse_throttled_keeps_this_brokers_entries(replicas, node, expected):
    assert parse_throttled(replicas, node) == expected


def test_is_throttled_follows_a_changed_list():
    quota = ReplicationQuota(LEADER, 1, config={}, clock=MockClock(0))
    part = _partition(LEADER_REPLICAS, ["0:1"], index=0)
    assert quota.is_throttled(part)
    other = _partition(LEADER_REPLICAS, ["0:1"], index=1)
    assert not quota.is_throttled(other)
    part.log.config.values = {LEADER_REPLICAS: ["0:2"]}   # a topic config change
    assert not quota.is_throttled(part)
    part.log.config.values = {LEADER_REPLICAS: ["*"]}
    assert quota.is_throttled(part) and quota.is_throttled(other) is False
    other.log.config.values = {}                           # no list at all
    assert not quota.is_throttled(other)


def test_leader_throttles_only_out_of_sync_replicas_over_quota():
    clock = MockClock(0)
    quota = ReplicationQuota(LEADER, 0, config={LEADER_RATE: 100}, clock=clock)
    part = _partition(LEADER_REPLICAS, ["0:0"], isr=(0, 1))
    assert not quota.should_leader_throttle(part, 2)     # under quota
    quota.record(1000)
    assert quota.should_leader_throttle(part, 2)         # out of sync, throttled
    assert not quota.should_leader_throttle(part, 1)     # in the ISR
    unlisted = _partition(LEADER_REPLICAS, ["0:5"], isr=(0,))
    assert not quota.should_leader_throttle(unlisted, 2)


def test_follower_throttles_only_when_not_in_sync_over_quota():
    clock = MockClock(0)
    quota = ReplicationQuota(FOLLOWER, 1, config={FOLLOWER_RATE: 100}, clock=clock)
    part = _partition(FOLLOWER_REPLICAS, ["*"])
    quota.record(1000)
    assert quota.should_follower_throttle(part, None)    # lag unknown yet
    assert quota.should_follower_throttle(part, 10)
    assert not quota.should_follower_throttle(part, 0)   # in sync


# -- the decisions applied, through real replicas ---------------------------------------------
@pytest.fixture
def cluster(tmp_path):
    # Small partition reads so a follower stays behind after one round.
    c = Cluster(tmp_path, node_ids=(A, B), config={"replica.fetch.max.bytes": 1000})
    yield c
    c.shutdown()


def _start_out_of_sync(cluster: Cluster, records: int = 10):
    """Leader A with B out of the ISR (the fake has no AlterPartition: it stays out)."""
    a, b = cluster.start_new(A)
    a.leader_and_isr(A, 1, [A])
    b.leader_and_isr(A, 1, [A])
    for i in range(records):
        a.produce(bytes([i]) * 600)
    return a, b


def _log_end(replica) -> int:
    return replica.partition().log.log_end_offset


def test_leader_leaves_out_a_throttled_partition_while_over_quota(cluster):
    async def run():
        a, b = _start_out_of_sync(cluster)
        cluster.config[LEADER_RATE] = 100
        a.partition().log.update_config({LEADER_REPLICAS: [f"0:{A}"]})
        await b.fetch_round()
        assert _log_end(b) == 1, "under quota: the first read passes"
        quota = a.replica_manager.leader_quota
        assert quota.rate() > 100, "the bytes sent were recorded"
        await b.fetch_rounds(3)
        assert _log_end(b) == 1, "over quota: no records for an out-of-sync follower"
        cluster.clock.advance(11_000)             # every sample expires
        await b.fetch_round()
        assert _log_end(b) == 2
        del cluster.config[LEADER_RATE]           # unthrottled: catches up
        await b.fetch_rounds(10)
        assert _log_end(b) == _log_end(a) == 10
    asyncio.run(run())


def test_leader_does_not_throttle_an_unlisted_partition_or_another_broker(cluster):
    async def run():
        a, b = _start_out_of_sync(cluster)
        cluster.config[LEADER_RATE] = 1
        a.partition().log.update_config({LEADER_REPLICAS: [f"0:{B}"]})  # names B, not A
        await b.fetch_rounds(10)
        assert _log_end(b) == 10
        assert a.replica_manager.leader_quota.rate() == 0.0, "nothing throttled"
    asyncio.run(run())


def test_follower_leaves_out_a_throttled_partition_while_over_quota(cluster):
    async def run():
        a, b = _start_out_of_sync(cluster)
        cluster.config[FOLLOWER_RATE] = 100
        b.partition().log.update_config({FOLLOWER_REPLICAS: ["*"]})
        await b.fetch_round()
        assert _log_end(b) == 1
        fetcher = b.fetchers.fetcher_of((TOPIC, 0))
        assert fetcher.partitions[(TOPIC, 0)].lag == 9
        requests = b.connections[-1].requests
        asked = len(requests)
        await b.fetch_rounds(3)
        assert _log_end(b) == 1
        assert b.fetchers.quota.rate() > 100
        assert all(not t.partitions for r in requests[asked:] for t in r.topics), \
            "the throttled partition is not asked for (the session forgets it)"
        cluster.clock.advance(11_000)
        await b.fetch_round()
        assert _log_end(b) == 2
        cluster.config[FOLLOWER_RATE] = LONG_MAX
        await b.fetch_rounds(10)
        assert _log_end(b) == 10
        assert fetcher.partitions[(TOPIC, 0)].lag == 0
    asyncio.run(run())


def test_an_in_sync_follower_is_not_throttled_but_counted(cluster):
    async def run():
        a, b = cluster.start_new(A)               # B in the ISR
        cluster.config[LEADER_RATE] = 100
        a.partition().log.update_config({LEADER_REPLICAS: ["*"]})
        for i in range(10):
            a.produce(bytes([i]) * 600)
        await b.fetch_rounds(10)
        assert _log_end(b) == 10
        assert a.replica_manager.leader_quota.is_exceeded()
    asyncio.run(run())


def test_a_caught_up_follower_is_in_sync_after_its_first_empty_answer(cluster):
    """Kafka's processFetchRequest sets the lag on the first answer even without records
    (``validBytes > 0 || lag.isEmpty``): a follower that starts caught up is in sync and
    never left out of its requests, however busy the follower quota is."""
    async def run():
        a, b = cluster.start_new(A)
        a.leader_and_isr(A, 1, [A])
        b.leader_and_isr(A, 1, [A])
        await b.fetch_round()                     # nothing to fetch: an empty answer
        fetcher = b.fetchers.fetcher_of((TOPIC, 0))
        assert fetcher.partitions[(TOPIC, 0)].lag == 0
        cluster.config[FOLLOWER_RATE] = 100
        b.partition().log.update_config({FOLLOWER_REPLICAS: ["*"]})
        b.fetchers.quota.record(1_000_000)   # other moves used the quota up
        assert b.fetchers.quota.is_exceeded()
        a.produce(b"x" * 10)
        await b.fetch_round()
        assert _log_end(b) == 1
    asyncio.run(run())
