"""Truncation by leader epoch and follower fetch sessions, on real replicas stepped by
hand (``replication_steps``): a follower whose log has epochs the leader never had
converges in several fetches (Kafka's getOffsetTruncationState asking again); the
truncation decisions; incremental sessions carry only what changed, one session per
fetcher with ``num.replica.fetchers``."""
from __future__ import annotations

import asyncio

import pytest

from kafkapy.clock import MockClock
from kafkapy.log.log import Log
from kafkapy.records.batch import read_header
from kafkapy.records.record import build_batch
from kafkapy.replication import truncation
from kafkapy.replication.fetch_request import ReplicaFetchRequest
from kafkapy.replication.fetch_response import ReplicaFetchResponse
from kafkapy.replication.fetcher import fetcher_id
from tests.support.replication_steps import TOPIC, TS, Cluster

A, B = 0, 1


def write_log(path, runs) -> None:
    """A log of one-record batches: ``runs`` = [(epoch, count), ...], then closed."""
    log = Log.load(str(path), {}, MockClock(TS))
    offset = 0
    for epoch, count in runs:
        for _ in range(count):
            batch = build_batch([(None, b"e%d-%d" % (epoch, offset), [], TS)],
                                base_offset=offset, partition_leader_epoch=epoch)
            log.append_as_follower(batch, read_header(batch))
            offset += 1
    log.close()


def epochs_log(tmp_path, runs) -> Log:
    write_log(tmp_path / "x-0", runs)
    return Log.load(str(tmp_path / "x-0"), {}, MockClock(TS))


@pytest.fixture
def cluster(tmp_path):
    c = Cluster(tmp_path, node_ids=(A, B))
    yield c
    c.shutdown()


@pytest.mark.parametrize("runs, leader_epoch, leader_end, expected", [
    ([(1, 5), (2, 5)], 2, 7, 7),      # same epoch, the leader's ends first
    ([(1, 5), (3, 5)], 1, 5, 5),      # the leader's epoch ends where ours does
    ([(1, 5), (3, 5)], 2, 8, 5),      # epoch 2 unknown here: end of our epoch 1, ask again
    ([(2, 4), (3, 4)], 1, 6, 0),      # below all our epochs: Kafka's endOffsetFor gives
                                      # epoch 1 ending where our first epoch starts
    ([(-1, 6)], 4, 3, 3),             # no epochs here: the leader's end
    ([(1, 4)], 1, 9, 4),              # never beyond the log end
    ([(1, 6)], -1, 2, 2),             # the leader names no epoch: its end
])
def test_diverged_offset(tmp_path, runs, leader_epoch, leader_end, expected):
    log = epochs_log(tmp_path, runs)
    try:
        assert truncation.diverged_offset(log, leader_epoch, leader_end) == expected
    finally:
        log.close()


def test_no_leader_end_keeps_what_is_below_the_hw(tmp_path):
    log = epochs_log(tmp_path, [(1, 6)])
    log.high_watermark = 4
    try:
        assert truncation.diverged_offset(log, 1, -1) == 4
    finally:
        log.close()


def test_follower_with_epochs_the_leader_never_had_converges(cluster, tmp_path):
    """Leader A: epochs 0 (offsets 0-1), 1 (2-3), 3 (4-5).  Follower B: epochs 0 (0-2),
    2 (3-6), which A never had.  B's fetches: last epoch 2 -> A answers diverging
    (1, 4); B knows no epoch 1, cuts at the end of its epoch 0 (3) and asks again with
    epoch 0 -> A answers (0, 2); B cuts at 2 and then copies A's log byte for byte."""
    write_log(cluster.replicas[A].dir / f"{TOPIC}-0", [(0, 2), (1, 2)])
    write_log(cluster.replicas[B].dir / f"{TOPIC}-0", [(0, 3), (2, 4)])

    async def run():
        a, b = cluster.replicas[A], cluster.replicas[B]
        cluster.start()
        a.leader_and_isr(A, 3, [A])
        b.leader_and_isr(A, 3, [A])
        a.produce(b"m4")
        a.produce(b"m5")
        assert a.partition().log.leader_epoch_cache.entries == [(0, 0), (1, 2), (3, 4)]
        assert b.partition().log.leader_epoch_cache.entries == [(0, 0), (2, 3)]
        assert b.partition().log.log_end_offset == 7, "becoming follower cut nothing"
        ends = []
        for _ in range(4):
            await b.fetch_round()
            ends.append(b.partition().log.log_end_offset)
        assert ends == [3, 2, 6, 6]
        assert b.log_bytes() == a.log_bytes()
        assert b.partition().log.leader_epoch_cache.entries == [(0, 0), (1, 2), (3, 4)]
        fetches = [r for c in b.connections for r in c.requests if r.API_KEY == 1]
        sent = [(p.fetch_offset, p.last_fetched_epoch)
                for r in fetches[:3] for t in r.topics for p in t.partitions]
        assert sent == [(7, 2), (3, 0), (2, 0)]
        # Each request is the fetcher's own record as the leader read it; the diverging
        # answers carry a tagged field, so they are kafka-python's objects, the others
        # the hand-encoded answer to a follower.
        assert all(isinstance(r, ReplicaFetchRequest) for r in fetches)
        answers = [a for c in b.connections for a in c.answers]
        assert [isinstance(a, ReplicaFetchResponse) for a in answers] == \
            [False, False, True, True]
        assert [a.responses[0].partitions[0].diverging_epoch is not None
                for a in answers[:2]] == [True, True]
    asyncio.run(run())


def test_a_follower_that_led_an_epoch_nobody_else_has_truncates_it(cluster):
    """B led epoch 1 alone and wrote two records; A, with epoch 2 now, never saw them."""
    async def run():
        a, b = cluster.start_new(A)
        a.produce(b"m0")
        await b.fetch_round()
        b.leader_and_isr(B, 1, [B])
        b.produce(b"lost-1")
        b.produce(b"lost-2")
        a.leader_and_isr(A, 2, [A])
        a.produce(b"m1")
        b.leader_and_isr(A, 2, [A, B])
        await b.fetch_rounds(3)
        assert b.records() == a.records() == [(0, b"m0"), (1, b"m1")]
    asyncio.run(run())


# -- fetch sessions -----------------------------------------------------------------------

def _partitions_sent(request) -> list[tuple[int, int]]:
    return [(p.partition, p.fetch_offset) for t in request.topics for p in t.partitions]


def test_incremental_fetches_carry_only_changed_partitions(cluster):
    async def run():
        parts = (0, 1, 2)
        a, b = cluster.start_new(A, partitions=parts)
        for index in parts:
            a.produce(b"x", index)
        await b.fetch_rounds(4)         # copy, then learn the HW: nothing left to say
        a.produce(b"y", 1)
        await b.fetch_round()
        await b.fetch_round()
        [conn] = b.connections
        requests = [r for r in conn.requests if r.API_KEY == 1]
        first = requests[0]
        assert (first.session_id, first.session_epoch) == (0, 0)
        assert _partitions_sent(first) == [(0, 0), (1, 0), (2, 0)]
        session = requests[1].session_id
        assert session != 0
        assert [r.session_id for r in requests[1:]] == [session] * 5
        assert [r.session_epoch for r in requests[1:]] == [1, 2, 3, 4, 5]
        assert _partitions_sent(requests[1]) == [(0, 1), (1, 1), (2, 1)]
        assert [_partitions_sent(r) for r in requests[2:]] == [[], [], [], [(1, 2)]]
        assert all(r.forgotten_topics_data == [] for r in requests)
        assert [b.partition(i).log.log_end_offset for i in parts] == [1, 2, 1]
        assert [b.partition(i).high_watermark for i in parts] == [1, 1, 1]
        # The leader's session holds all three; the follower counts as fetching all.
        cached = a.services.fetch_manager.cache.get(session)
        assert cached is not None and cached.privileged and len(cached.partitions) == 3
    asyncio.run(run())


def test_a_partition_that_stops_being_fetched_is_forgotten(cluster):
    async def run():
        a, b = cluster.start_new(A, partitions=(0, 1))
        await b.fetch_round()
        b.fetchers.remove_partitions([(TOPIC, 1)])
        await b.fetch_round()
        [conn] = b.connections
        last = conn.requests[-1]
        assert _partitions_sent(last) == []
        assert [(f.topic_id, f.partitions) for f in last.forgotten_topics_data] == \
            [(a.cache.topics[TOPIC].topic_id, [1])]
        session = a.services.fetch_manager.cache.get(last.session_id)
        assert [c.partition for c in session.partitions.values()] == [0]
    asyncio.run(run())


def test_num_replica_fetchers_splits_partitions_into_sessions(tmp_path):
    cluster = Cluster(tmp_path, node_ids=(A, B), config={"num.replica.fetchers": 3})
    parts = tuple(range(8))
    expected = {}
    for index in parts:
        expected.setdefault(fetcher_id(TOPIC, index, 3), []).append(index)

    async def run():
        a, b = cluster.start_new(A, partitions=parts)
        for index in parts:
            a.produce(b"v%d" % index, index)
        await b.fetch_round()
        await b.fetch_round()
        owners = {}
        for index in parts:
            fetcher = b.fetchers.fetcher_of((TOPIC, index))
            owners.setdefault(fetcher.fetcher_id, []).append(index)
            assert fetcher.leader_id == A
        assert owners == expected
        assert len(b.connections) == len(expected), "one connection per fetcher"
        sessions = {c.requests[-1].session_id for c in b.connections}
        assert len(sessions) == len(expected) and 0 not in sessions
        assert all(b.partition(i).log.log_end_offset == 1 for i in parts)
    try:
        asyncio.run(run())
    finally:
        cluster.shutdown()


def test_becoming_follower_truncates_to_the_hw_only_a_log_without_epochs(tmp_path):
    """Kafka 3.9: a partition with no latest epoch cannot be checked by epoch; its fetcher
    starts Truncating and cuts to the HW.  A log with epochs keeps everything."""
    from kafkapy.metadata.cache import PartitionState
    from kafkapy.replication.partition import Partition
    follow = PartitionState(0, [0, 1], 0, 5, [0, 1])
    kept = {}
    for name, runs in (("epochs", [(1, 6)]), ("none", [(-1, 6)])):
        write_log(tmp_path / name / "x-0", runs)
        log = Log.load(str(tmp_path / name / "x-0"), {}, MockClock(TS), high_watermark=4)
        partition = Partition("x", 0, log, follow, 1)
        assert partition.make_follower(follow)
        kept[name] = log.log_end_offset
        log.close()
    assert kept == {"epochs": 6, "none": 4}


def test_a_lost_session_starts_over_with_a_full_fetch(cluster):
    """The leader forgot the session (evicted, restarted): FETCH_SESSION_ID_NOT_FOUND,
    no partition is touched, the next fetch is full and opens a new session."""
    async def run():
        a, b = cluster.start_new(A, partitions=(0, 1))
        a.produce(b"x", 0)
        await b.fetch_round()
        [conn] = b.connections
        old = b.fetchers.fetcher_of((TOPIC, 0)).session.session_id
        assert old != 0
        a.services.fetch_manager.cache.remove(old)
        a.produce(b"y", 1)
        await b.fetch_round()          # refused: nothing applied
        assert b.partition(1).log.log_end_offset == 0
        await b.fetch_round()          # full again
        full = conn.requests[-1]
        assert (full.session_id, full.session_epoch) == (0, 0)
        assert _partitions_sent(full) == [(0, 1), (1, 0)]
        assert b.partition(1).log.log_end_offset == 1
        await b.fetch_round()
        assert conn.requests[-1].session_id not in (0, old)
    asyncio.run(run())


def test_resizing_the_fetchers_moves_partitions_with_their_offsets(cluster):
    parts = tuple(range(6))

    async def run():
        a, b = cluster.start_new(A, partitions=parts)
        for index in parts:
            a.produce(b"v", index)
        await b.fetch_round()
        b.fetchers.resize(3)
        for index in parts:
            fetcher = b.fetchers.fetcher_of((TOPIC, index))
            assert fetcher.fetcher_id == fetcher_id(TOPIC, index, 3)
            assert fetcher.partitions[(TOPIC, index)].fetch_offset == 1
        for index in parts:
            a.produce(b"w", index)
        await b.fetch_round()
        assert all(b.partition(i).log.log_end_offset == 2 for i in parts)
        b.fetchers.resize(1)
        assert {f.fetcher_id for f in b.fetchers._fetchers.values()} == {0}
    asyncio.run(run())
