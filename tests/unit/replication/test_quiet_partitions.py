"""A follower's quiet partitions at the leader: a partition its incremental fetch does not
name, with nothing to send and nothing the session would answer, is not read; the
follower's fetch and caught-up times still move, and any change (records, high
watermark, log start, leadership, the ISR) gets it read and answered again.  The read
that ends a fetch's wait records nothing, so there only the partition's own state counts.

Two real replicas (``tests.support.replication_steps``): broker B follows broker A's
three partitions with real Fetch requests through A's handler and fetch sessions.
"""
from __future__ import annotations

import asyncio
import os
from collections import Counter

import pytest

from kafkapy.clock import SYSTEM_CLOCK
from kafkapy.log.log import Log
from kafkapy.protocol.errors import ErrorCode
from kafkapy.purgatory.purgatory import Purgatory
from kafkapy.purgatory.timer import Timer
from tests.support.replication_steps import TOPIC, Cluster

A, B = 0, 1
PARTITIONS = (0, 1, 2)


@pytest.fixture
def cluster(tmp_path):
    c = Cluster(tmp_path, node_ids=(A, B))
    yield c
    c.shutdown()


@pytest.fixture
def reads(monkeypatch):
    """Reads of each partition's log made for fetches, by partition directory name."""
    counts: Counter = Counter()
    real = Log.read_for_fetch

    def counted(self, *args, **kwargs):
        counts[os.path.basename(self.dir)] += 1
        return real(self, *args, **kwargs)

    monkeypatch.setattr(Log, "read_for_fetch", counted)
    return counts


def _started(cluster) -> tuple:
    """A leads the three partitions, B follows, each partition has a record and B has
    them all, with A's high watermarks."""
    a, b = cluster.start_new(A, partitions=PARTITIONS)
    asyncio.run(_settled(a, b))
    return a, b


async def _settled(a, b) -> None:
    for index in PARTITIONS:
        a.produce(b"first", index)
    await b.fetch_rounds(3)
    for index in PARTITIONS:
        assert b.partition(index).log.log_end_offset == 1
        assert b.partition(index).high_watermark == a.partition(index).high_watermark == 1


def _answered(b) -> list[set]:
    """The partitions in each of A's answers to B, in order."""
    return [{(t.topic, p.partition_index) for t in answer.responses for p in t.partitions}
            for conn in b.connections for answer in conn.answers]


def _last_answer(b) -> list:
    """The partitions of A's last answer to B."""
    return [p for t in b.connections[-1].answers[-1].responses for p in t.partitions]


def _dir(index: int) -> str:
    return f"{TOPIC}-{index}"


def test_quiet_partitions_are_not_read_and_their_follower_stays_caught_up(cluster, reads):
    a, b = _started(cluster)
    reads.clear()
    cluster.clock.advance(10_000)
    a.produce(b"second", 0)
    asyncio.run(b.fetch_rounds(3))
    assert reads[_dir(0)] == 3
    assert reads[_dir(1)] == reads[_dir(2)] == 0
    assert b.partition(0).log.log_end_offset == 2
    now = cluster.clock.time_ms()
    for index in (1, 2):
        follower = a.partition(index).followers[B]
        assert (follower.last_fetch_ms, follower.last_caught_up_ms) == (now, now)
        assert follower.log_end_offset == 1
    assert a.partition(1).out_of_sync_replicas(now + 29_000) == []


def test_records_on_a_quiet_partition_are_read_and_sent(cluster, reads):
    a, b = _started(cluster)
    asyncio.run(b.fetch_round())
    reads.clear()
    a.produce(b"second", 2)
    asyncio.run(b.fetch_round())
    assert reads[_dir(2)] == 1 and reads[_dir(1)] == 0
    assert b.records(2) == [(0, b"first"), (1, b"second")]
    # B's next fetch names partition 2 (its offset moved), which moves A's high
    # watermark; the fetch after names nothing, but the new high watermark is answered.
    asyncio.run(b.fetch_rounds(2))
    assert a.partition(2).high_watermark == 2
    assert b.partition(2).high_watermark == 2
    assert _answered(b)[-1] == {(TOPIC, 2)}


def test_a_new_log_start_on_a_quiet_partition_is_answered(cluster, reads):
    a, b = _started(cluster)
    a.produce(b"second", 1)
    asyncio.run(b.fetch_rounds(3))
    assert b.partition(1).high_watermark == 2
    reads.clear()
    a.partition(1).log.maybe_increment_log_start_offset(1)
    asyncio.run(b.fetch_round())
    assert reads[_dir(1)] == 1 and reads[_dir(2)] == 0
    assert _answered(b)[-1] == {(TOPIC, 1)}
    assert b.partition(1).log.log_start_offset == 1


def test_a_quiet_partition_no_longer_led_here_answers_its_error(cluster, reads):
    a, b = _started(cluster)
    asyncio.run(b.fetch_round())
    # A follows B for partition 1 from epoch 1; B has not been told yet.
    a.leader_and_isr(B, 1, [A, B], partitions=(1,))
    reads.clear()
    asyncio.run(b.fetch_round())
    answer = _last_answer(b)
    assert [(p.partition_index, p.error_code != 0) for p in answer] == [(1, True)]


def test_a_follower_outside_the_isr_is_read_on_every_fetch(cluster, reads):
    a, b = _started(cluster)
    for replica in (a, b):              # B leaves the ISR of partition 2 (epoch 1)
        replica.leader_and_isr(A, 1, [A], partitions=(2,))
    asyncio.run(b.fetch_rounds(2))
    reads.clear()
    asyncio.run(b.fetch_rounds(2))
    # Kafka tries to take the follower back into the ISR on each of its fetches: the
    # partition is read and the fetch recorded, not skipped.
    assert reads[_dir(2)] == 2 and reads[_dir(1)] == 0
    assert a.partition(2).followers[B].log_end_offset == 1


@pytest.fixture
def waiting_cluster(tmp_path):
    """A fetch with nothing new waits at the leader (300 ms) once ``_waiting`` is set."""
    c = Cluster(tmp_path, node_ids=(A, B), config={"replica.fetch.wait.max.ms": 300})
    yield c
    c.shutdown()


def _waiting(a) -> Purgatory:
    """A's fetch purgatory: a fetch with nothing new waits."""
    loop = asyncio.get_running_loop()
    timer = Timer(loop, SYSTEM_CLOCK)
    waiting = Purgatory("Fetch", timer)
    a.replica_manager.attach_purgatories(waiting, Purgatory("Produce", timer), loop)
    return waiting


def _with_waiting_fetches(cluster, steps):
    """Start A (leader) and B with fetches that wait, settle them, run ``steps(a, b,
    waiting)``; returns B."""
    async def run():
        a, b = cluster.start_new(A, partitions=PARTITIONS)
        waiting = _waiting(a)
        await _settled(a, b)
        await steps(a, b, waiting)
        return b

    return asyncio.run(run())


async def _wait_then_append(a, b, waiting: Purgatory, reads, index: int) -> None:
    """B's next fetch waits at A (nothing is new); then a record on partition ``index``
    ends the wait.  ``reads`` counts from just before the fetch was sent (its read when
    taken in, and the read that ends the wait)."""
    reads.clear()
    fetch = asyncio.ensure_future(b.fetch_round())
    for _ in range(5):
        await asyncio.sleep(0)
    assert not fetch.done(), "the fetch waits at the leader: nothing is new"
    expired = waiting.expirations
    a.produce(b"second", index)
    a.replica_manager.appended((TOPIC, index))     # as an append through the replica manager
    await fetch
    assert waiting.expirations == expired, "answered by the append, not the timeout"


def test_a_waiting_fetch_is_answered_when_a_quiet_partition_gets_records(waiting_cluster, reads):
    async def steps(a, b, waiting):
        await _wait_then_append(a, b, waiting, reads, 1)
        assert reads[_dir(1)] == 1 and reads[_dir(0)] == reads[_dir(2)] == 0

    b = _with_waiting_fetches(waiting_cluster, steps)
    assert b.records(1) == [(0, b"first"), (1, b"second")]


def test_the_read_that_ends_a_wait_leaves_an_unchanged_partition_unread(waiting_cluster, reads):
    """Nothing is recorded when a wait ends (Kafka's readFromPurgatory), so whether the
    follower is in the ISR no longer matters then: partition 2, read when the fetch came
    because B is outside its ISR, is not read again; the answer is the same."""
    async def steps(a, b, waiting):
        for replica in (a, b):          # B leaves the ISR of partition 2 (epoch 1)
            replica.leader_and_isr(A, 1, [A], partitions=(2,))
        await b.fetch_rounds(2)
        await _wait_then_append(a, b, waiting, reads, 1)
        assert reads[_dir(2)] == 1, "read when the fetch came, not when its wait ended"
        assert reads[_dir(1)] == 1 and reads[_dir(0)] == 0
        assert _answered(b)[-1] == {(TOPIC, 1)}

    b = _with_waiting_fetches(waiting_cluster, steps)
    assert b.records(1) == [(0, b"first"), (1, b"second")]


def test_a_quiet_partition_led_here_at_a_new_epoch_fences_the_old_one(cluster, reads):
    a, b = _started(cluster)
    asyncio.run(b.fetch_round())
    a.leader_and_isr(A, 1, [A, B], partitions=(1,))   # B has not been told yet
    reads.clear()
    asyncio.run(b.fetch_round())
    answer = _last_answer(b)
    assert [(p.partition_index, p.error_code) for p in answer] == [
        (1, ErrorCode.FENCED_LEADER_EPOCH)]
