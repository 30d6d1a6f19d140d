"""Replica fetcher pieces over real logs: the truncation offset of a diverged follower,
the Fetch request a follower sends, and which fetcher a partition belongs to."""
from __future__ import annotations

import asyncio
import uuid

import pytest

from kafkapy.clock import MockClock
from kafkapy.log.log import Log
from kafkapy.metadata.cache import MetadataCache, PartitionState, TopicMetadata
from kafkapy.records.batch import read_header
from kafkapy.records.record import build_batch
from kafkapy.replication.fetcher import ReplicaFetcherManager
from kafkapy.replication.truncation import diverged_offset as truncation_offset
from kafkapy.replication.partition import Partition

TS = 1_700_000_000_000
CONFIG = {"replica.fetch.wait.max.ms": 500, "replica.fetch.min.bytes": 1,
          "replica.fetch.response.max.bytes": 10485760, "replica.fetch.max.bytes": 1048576,
          "replica.fetch.backoff.ms": 1000, "replica.socket.timeout.ms": 30000}


def epochs_log(tmp_path, name, runs) -> Log:
    """A log of one-record batches: ``runs`` = [(epoch, count), ...]."""
    log = Log.load(str(tmp_path / name), {}, MockClock(TS))
    offset = 0
    for epoch, count in runs:
        for _ in range(count):
            batch = build_batch([(None, b"v", [], TS)], base_offset=offset,
                                partition_leader_epoch=epoch)
            log.append_as_follower(batch, read_header(batch))
            offset += 1
    return log


@pytest.mark.parametrize("runs, leader_epoch, leader_end, expected", [
    # Same epoch, the leader's ends earlier: its end.
    ([(1, 5), (2, 5)], 2, 7, 7),
    # The leader's largest epoch <= ours is 1, ending at 5: ours ends at 5 too.
    ([(1, 5), (3, 5)], 1, 5, 5),
    # The leader names epoch 2, unknown here; our largest below it (1) ends at 5:
    # keep up to 5 and ask again.
    ([(1, 5), (3, 5)], 2, 8, 5),
    # No epochs known at all: the leader's end.
    ([(-1, 6)], 4, 3, 3),
    # Never beyond the log end.
    ([(1, 4)], 1, 9, 4),
])
def test_truncation_offset(tmp_path, runs, leader_epoch, leader_end, expected):
    log = epochs_log(tmp_path, "t-0", runs)
    assert truncation_offset(log, leader_epoch, leader_end) == expected


def test_no_leader_end_truncates_to_the_high_watermark(tmp_path):
    log = epochs_log(tmp_path, "t-0", [(1, 6)])
    log.high_watermark = 4
    assert truncation_offset(log, -1, -1) == 4


def _follower(tmp_path, topic_id, autostart: bool = False):
    """Broker 1 (epoch 77): follows t-0 from broker 0 and leads t-1; its fetcher manager
    over those partitions (``autostart=False``: nothing runs unless stepped) and its
    metadata cache."""
    cache = MetadataCache("c", 1)
    state = PartitionState(0, [0, 1], 0, 3, [0, 1])
    cache.put_topic(TopicMetadata("t", topic_id, {0: state, 1: state}))
    log = epochs_log(tmp_path, "t-0", [(2, 3), (3, 2)])
    log.high_watermark = 5   # (make_follower keeps what is below the HW)
    follower = Partition("t", 0, log, state, 1)
    follower.make_follower(state)
    lead_state = PartitionState(1, [0, 1], 1, 3, [0, 1])
    leading = Partition("t", 1, epochs_log(tmp_path, "t-1", []), lead_state, 1)
    leading.make_leader(lead_state)
    partitions = {("t", 0): follower, ("t", 1): leading}
    manager = ReplicaFetcherManager(
        node_id=1, broker_epoch=lambda: 77, config=CONFIG, clock=MockClock(TS), cache=cache,
        listener="PLAINTEXT", partition_of=partitions.get,
        high_watermark_moved=lambda key: None, autostart=autostart)
    return manager, cache


def test_fetch_request_of_a_follower(tmp_path):
    topic_id = uuid.uuid4()
    manager, _ = _follower(tmp_path, topic_id)
    manager.add_partitions({
        ("t", 0): (0, 5),
        ("t", 1): (0, 0),   # led here now: not fetched
        ("t", 9): (0, 0),   # not hosted here: not fetched
    })
    fetcher = manager.fetcher_of(("t", 0))
    request, sent = fetcher._build(fetcher.partitions)
    assert request.API_VERSION == 17
    assert (request.replica_state.replica_id, request.replica_state.replica_epoch) == (1, 77)
    assert (request.max_wait_ms, request.min_bytes, request.max_bytes) == (500, 1, 10485760)
    assert (request.isolation_level, request.session_id, request.session_epoch) == (0, 0, 0)
    [topic] = request.topics
    assert topic.topic_id == topic_id
    [p] = topic.partitions
    assert (p.partition, p.fetch_offset, p.current_leader_epoch, p.last_fetched_epoch,
            p.log_start_offset, p.partition_max_bytes) == (0, 5, 3, 3, 0, 1048576)
    assert list(sent) == [("t", 0)]
    # Encodes as Kafka 3.9's replica fetch.
    assert bytes(request.encode())


def test_fetch_request_names_topics_without_an_id(tmp_path):
    manager, cache = _follower(tmp_path, uuid.uuid4())
    cache.topics["t"].topic_id = None
    manager.add_partitions({("t", 0): (0, 5)})
    fetcher = manager.fetcher_of(("t", 0))
    request, _ = fetcher._build(fetcher.partitions)
    assert request.API_VERSION == 12 and request.replica_id == 1
    assert request.topics[0].topic == "t"


def test_nothing_to_fetch(tmp_path):
    manager, _ = _follower(tmp_path, uuid.uuid4())
    manager.add_partitions({("t", 1): (0, 0)})
    fetcher = manager.fetcher_of(("t", 1))
    assert fetcher._build(fetcher.partitions) is None


def test_manager_moves_partitions_between_leaders_and_stops_idle_fetchers(tmp_path):
    async def run() -> None:
        manager, _ = _follower(tmp_path, uuid.uuid4(), autostart=True)
        manager.add_partitions({("t", 0): (0, 5), ("t", 2): (0, 0)})
        assert manager.fetch_state(("t", 0))[0] == 0
        manager.add_partitions({("t", 0): (2, 5)})
        assert manager.fetch_state(("t", 0))[0] == 2
        assert {leader for leader, _ in manager._fetchers} == {0, 2}
        manager.remove_partitions([("t", 2)])
        assert {leader for leader, _ in manager._fetchers} == {2}, "a fetcher left without partitions stops"
        assert manager.fetch_state(("t", 2)) is None
        await asyncio.wait_for(manager.shutdown(), 10)
        assert manager._fetchers == {}
        manager.add_partitions({("t", 0): (0, 5)})
        assert manager._fetchers == {}, "nothing starts after shutdown"
    asyncio.run(run())


def test_a_partition_backing_off_sits_out_rounds_until_its_backoff_ends(tmp_path):
    manager, _ = _follower(tmp_path, uuid.uuid4())
    manager.add_partitions({("t", 0): (0, 5)})
    fetcher = manager.fetcher_of(("t", 0))
    assert list(fetcher._ready()) == [("t", 0)]
    state = fetcher.partitions[("t", 0)]
    fetcher._delay(("t", 0), state, 6)      # NOT_LEADER_OR_FOLLOWER: back off 1000 ms
    assert fetcher._ready() == {}
    assert fetcher._next_ready_in_ms() == 1000
    fetcher._clock.advance(999)
    assert fetcher._ready() == {}
    fetcher._clock.advance(1)
    assert list(fetcher._ready()) == [("t", 0)]
    request, sent = fetcher._build(fetcher._ready())
    assert list(sent) == [("t", 0)]
