"""The two anomalies of high-watermark truncation (KIP-101; the reference material's
'HW和LEO异常案例'), reproduced step by step on two real replicas, and the leader-epoch
truncation of Kafka 3.9 that prevents both.

Replicas A (broker 0) and B (broker 1) of one partition, each with its own log dir,
LogManager and ReplicaManager; B's fetcher sends real Fetch requests (wire-encoded)
to A's real Fetch handler and back, one round at a time; the test plays the
controller (LeaderAndIsr) and an acks=1 producer (min.insync.replicas = 1).

Each scenario runs twice: with ``Partition.truncate_to_hw`` (the test hook: a new
follower truncates to its HW and fetches without epochs, as before Kafka 0.11) the
assertions must fail -- the test checks that they do -- and with Kafka 3.9's epochs
they hold.  The assertions read records (offset, value) and bytes back from the logs.
"""
from __future__ import annotations

import asyncio

import pytest

from kafkapy.replication.partition import Partition
from tests.support.replication_steps import Cluster

A, B = 0, 1


@pytest.fixture
def cluster(tmp_path):
    c = Cluster(tmp_path, node_ids=(A, B))
    yield c
    c.shutdown()


def _hook(monkeypatch, hw_truncation: bool) -> None:
    monkeypatch.setattr(Partition, "truncate_to_hw", hw_truncation, raising=False)


def _data_loss(cluster) -> tuple[list, list, bool]:
    """Scenario 1: an acknowledged record lost on both replicas.

    A leads (epoch 0) with B in the ISR; m0 and m1 are acknowledged and replicated,
    A's HW reaches 2 but B's HW is still 1 (it learns the HW one fetch later).  B
    restarts; A fails before B fetches again; B becomes leader (epoch 1); A returns
    as follower and catches up; then m2 is written.  Returns the (offset, value)
    records of B's log and of A's log, and whether their bytes are the same."""
    async def run():
        a, b = cluster.start_new(A)
        a.produce(b"m0")
        await b.fetch_round()                       # B: LEO 1, HW 0
        a.produce(b"m1")
        await b.fetch_round()                       # A: HW 1; B: LEO 2, HW 0
        await b.fetch_round()                       # A: HW 2; B: HW 1
        assert (a.partition().high_watermark, b.partition().high_watermark) == (2, 1)
        assert b.partition().log.log_end_offset == 2
        b.stop()
        b.start()
        b.leader_and_isr(A, 0, [A, B])              # B follows A again after its restart
        a.stop()                                    # A fails before B fetches
        b.leader_and_isr(B, 1, [B])                 # the controller elects B (in the ISR)
        a.start()
        a.leader_and_isr(B, 1, [B])                 # A returns as B's follower
        await a.fetch_rounds(4)
        b.produce(b"m2")
        await a.fetch_rounds(4)
        return b.records(), a.records(), b.log_bytes() == a.log_bytes()

    return asyncio.run(run())


def _divergence(cluster) -> tuple[list, list, bool]:
    """Scenario 2: two replicas with different records at the same offset.

    A leads (epoch 0) with B; m0 is replicated (both HW 1).  B fails: the controller
    takes it out of the ISR (A leads epoch 1, ISR [A]); m1 is acknowledged by A alone
    (HW 2).  A fails too.  B comes back first and becomes leader (epoch 2, as an
    unclean election or a power failure would make it), and m2 is written to it at
    offset 1.  A returns as follower with its HW 2."""
    async def run():
        a, b = cluster.start_new(A)
        a.produce(b"m0")
        await b.fetch_rounds(3)
        assert (a.partition().high_watermark, b.partition().high_watermark) == (1, 1)
        b.stop()
        a.leader_and_isr(A, 1, [A])
        a.produce(b"m1")
        assert a.partition().high_watermark == 2
        a.stop()
        b.start()
        b.leader_and_isr(B, 2, [B])
        b.produce(b"m2")
        a.start()
        a.leader_and_isr(B, 2, [B])
        await a.fetch_rounds(4)
        return b.records(), a.records(), b.log_bytes() == a.log_bytes()

    return asyncio.run(run())


HW_HOOK = pytest.param(True, id="hw-truncation",
                       marks=pytest.mark.xfail(strict=True, raises=AssertionError,
                                               reason="the anomaly: HW truncation"))
EPOCHS = pytest.param(False, id="leader-epochs")


@pytest.mark.parametrize("hw_truncation", [EPOCHS, HW_HOOK])
def test_an_acknowledged_record_survives_failover(cluster, monkeypatch, hw_truncation):
    _hook(monkeypatch, hw_truncation)
    leader, follower, same = _data_loss(cluster)
    assert leader == [(0, b"m0"), (1, b"m1"), (2, b"m2")]
    assert follower == leader and same


@pytest.mark.parametrize("hw_truncation", [EPOCHS, HW_HOOK])
def test_replicas_agree_at_every_offset(cluster, monkeypatch, hw_truncation):
    _hook(monkeypatch, hw_truncation)
    leader, follower, same = _divergence(cluster)
    # m1 was acknowledged by A alone before B's (unclean) election: it goes, but the
    # replicas agree on every offset.
    assert leader == [(0, b"m0"), (1, b"m2")]
    assert follower == leader and same


# -- what exactly goes wrong with HW truncation -----------------------------------------------

def test_hw_truncation_loses_m1_on_both_replicas(cluster, monkeypatch):
    """B truncated m1 away at its restart, became leader without it; A, returning, finds
    itself past the leader's end (OFFSET_OUT_OF_RANGE) and truncates to it as well."""
    _hook(monkeypatch, True)
    leader, follower, same = _data_loss(cluster)
    assert leader == [(0, b"m0"), (1, b"m2")]
    assert follower == leader and same


def test_hw_truncation_leaves_different_records_at_offset_1(cluster, monkeypatch):
    """A's HW (2) covers its whole log: nothing is truncated, and its fetch at the
    leader's end offset succeeds, so m1 stays where the leader has m2."""
    _hook(monkeypatch, True)
    leader, follower, same = _divergence(cluster)
    assert leader == [(0, b"m0"), (1, b"m2")]
    assert follower == [(0, b"m0"), (1, b"m1")]
    assert not same
