"""MarkerChannel (transaction markers to remote leaders) against fake brokers.

A fake broker (``tests.support.fake_broker_server``) decodes WriteTxnMarkers v1 with our
protocol classes and answers per partition with the code its ``codes`` map gives (default
0); it can hold answers or drop the connection on demand.  The metadata cache is a real
``MetadataCache`` filled by hand; local writes are recorded by a stub.  The coordinator's
polling is imitated by calling ``write`` again for what is still remaining.  Every wait is
bounded.
"""
from __future__ import annotations

import asyncio
import uuid

import pytest

from kafkapy.clock import MockClock
from kafkapy.coordinator.transaction.marker_channel import IN_FLIGHT, MarkerChannel
from kafkapy.metadata.cache import BrokerEndpoint, MetadataCache, PartitionState, TopicMetadata
from kafkapy.protocol.errors import ErrorCode as E
from kafkapy.protocol.messages import RESPONSES
from kafkapy.replication.partition import AppendResult
from tests.support.fake_broker_server import WAIT_S, FakeBrokerServer
LOCAL = 1
DONE = {0, E.UNKNOWN_TOPIC_OR_PARTITION, E.INVALID_PRODUCER_EPOCH,
        E.TRANSACTION_COORDINATOR_FENCED}
_Resp = RESPONSES[27][1]
_Versions = RESPONSES[18][0]
_Result = _Resp.WritableTxnMarkerResult
_TopicResult = _Result.WritableTxnMarkerTopicResult
_PartitionResult = _TopicResult.WritableTxnMarkerPartitionResult


class FakeBroker(FakeBrokerServer):
    """Answers ApiVersions (WriteTxnMarkers up to ``max_version``) and WriteTxnMarkers per
    partition with the code ``codes`` gives (default 0); ``requests`` are the
    WriteTxnMarkers ones."""

    def __init__(self, max_version: int = 2) -> None:
        super().__init__(respond=self._answer)
        self.codes: dict[tuple[str, int], int] = {}
        self.max_version = max_version

    @property
    def requests(self) -> list:
        return [r for r in super().requests if r.API_KEY == 27]

    async def wait_received(self, count: int) -> None:
        async with self.arrived:
            await asyncio.wait_for(self.arrived.wait_for(lambda: len(self.requests) >= count),
                                   WAIT_S)

    def _answer(self, request):
        if request.API_KEY == 18:
            return _Versions(error_code=0, api_keys=[_Versions.ApiVersion(
                api_key=27, min_version=0, max_version=self.max_version)])
        assert (request.API_KEY, request.API_VERSION) in ((27, 1), (27, 2))
        return _Resp(markers=[_Result(producer_id=m.producer_id, topics=[
            _TopicResult(name=t.name, partitions=[
                _PartitionResult(partition_index=p, error_code=self.codes.get((t.name, p), 0))
                for p in t.partition_indexes]) for t in m.topics]) for m in request.markers])


def markers_of(request) -> list[tuple]:
    """(pid, epoch, coordinator epoch, commit, sorted partitions) per marker."""
    return [(m.producer_id, m.producer_epoch, m.coordinator_epoch, m.transaction_result,
             sorted((t.name, p) for t in m.topics for p in t.partition_indexes))
            for m in request.markers]


class Harness:
    def __init__(self) -> None:
        self.cache = MetadataCache("cluster", LOCAL)
        self.clock = MockClock()
        self.local: list[tuple] = []
        self.local_codes: dict[tuple[str, int], int] = {}
        # Local partitions' high watermarks (or an ErrorCode); absent: far ahead (replicated).
        self.hw: dict[tuple[str, int], int] = {}
        self.log_end: dict[tuple[str, int], int] = {}
        self.channel = MarkerChannel(LOCAL, self.cache, self._local_write, self.clock,
                                     request_timeout_ms=5000, connect_timeout_ms=2000,
                                     high_watermark_of=lambda tp: self.hw.get(tp, 1 << 40))
        self.fakes: dict[int, FakeBroker] = {}

    def _local_write(self, pid, epoch, coordinator_epoch, commit, partitions, appended,
                     transaction_version=0):
        self.local.append((pid, epoch, coordinator_epoch, commit, sorted(partitions)))
        codes = {tp: self.local_codes.get(tp, 0) for tp in partitions}
        for tp, code in codes.items():
            if code == 0:       # the marker is one record at the log end
                offset = self.log_end.get(tp, 0)
                self.log_end[tp] = offset + 1
                appended[tp] = AppendResult(0, base_offset=offset, last_offset=offset)
        return codes

    async def add_broker(self, node_id: int, max_version: int = 2) -> FakeBroker:
        fake = await FakeBroker(max_version).start()
        self.fakes[node_id] = fake
        self.cache.put_broker(BrokerEndpoint(node_id, "127.0.0.1", fake.port), {})
        return fake

    def lead(self, topic: str, leaders: dict[int, int]) -> None:
        meta = self.cache.topics.get(topic) or TopicMetadata(topic, uuid.uuid4())
        for p, leader in leaders.items():
            meta.partitions[p] = PartitionState(p, [leader], leader, 0, [leader])
        self.cache.put_topic(meta)

    async def until_done(self, args: tuple, partitions, rounds: int = 200) -> dict:
        """Poll as the coordinator does until every partition has a done code."""
        remaining = set(partitions)
        final: dict = {}
        for _ in range(rounds):
            results = self.channel.write(*args, sorted(remaining))
            for tp, code in results.items():
                if code in DONE:
                    final[tp] = code
                    remaining.discard(tp)
            if not remaining:
                return final
            await asyncio.sleep(0.02)
        raise AssertionError(f"not done after {rounds} rounds: {sorted(remaining)}")


@pytest.fixture
async def h():
    harness = Harness()
    yield harness
    harness.channel.close()
    for fake in harness.fakes.values():
        await fake.stop()


async def test_local_partitions_written_at_once_remote_ones_sent_to_their_leaders(h):
    two, three = await h.add_broker(2), await h.add_broker(3)
    h.lead("t", {0: LOCAL, 1: 2, 2: 3, 3: 2})
    parts = [("t", p) for p in range(4)]

    first = h.channel.write(7, 3, 5, True, parts)
    assert first == {("t", 0): 0, ("t", 1): IN_FLIGHT, ("t", 2): IN_FLIGHT, ("t", 3): IN_FLIGHT}
    assert h.local == [(7, 3, 5, True, [("t", 0)])]
    await two.wait_received(1)
    await three.wait_received(1)
    # One request per broker, its partitions batched into one marker.
    assert markers_of(two.requests[0]) == [(7, 3, 5, True, [("t", 1), ("t", 3)])]
    assert markers_of(three.requests[0]) == [(7, 3, 5, True, [("t", 2)])]

    done = await h.until_done((7, 3, 5, True), [("t", 1), ("t", 2), ("t", 3)])
    assert done == {("t", 1): 0, ("t", 2): 0, ("t", 3): 0}
    assert len(two.requests) == 1 and len(three.requests) == 1   # answered once, not resent
    assert h.local == [(7, 3, 5, True, [("t", 0)])]
    assert h.channel.pending_keys() == 0                          # nothing kept once reported


async def test_markers_of_a_v2_transaction_go_as_write_txn_markers_v2(h):
    two = await h.add_broker(2)
    h.lead("t", {0: 2, 1: 2})
    h.channel.write(1, 4, 0, True, [("t", 0)], transaction_version=2)
    await two.wait_received(1)
    h.channel.write(2, 0, 0, True, [("t", 1)])
    await two.wait_received(2)
    v2, v1 = two.requests
    assert (v2.API_VERSION, [m.transaction_version for m in v2.markers]) == (2, [2])
    assert v1.API_VERSION == 1                      # a Kafka 3.9 leader gets what it reads
    assert await h.until_done((1, 4, 0, True), [("t", 0)]) == {("t", 0): 0}


async def test_a_broker_without_write_txn_markers_v2_gets_v1(h):
    """A Kafka 3.9 leader (WriteTxnMarkers v0-1 in its ApiVersions) is sent v1 even for a
    marker of a v2 transaction, as Kafka's NetworkClient picks the version."""
    old = await h.add_broker(2, max_version=1)
    h.lead("t", {0: 2})
    h.channel.write(1, 4, 0, True, [("t", 0)], transaction_version=2)
    await old.wait_received(1)
    assert [r.API_VERSION for r in old.requests] == [1]
    assert await h.until_done((1, 4, 0, True), [("t", 0)]) == {("t", 0): 0}


async def test_markers_of_several_transactions_share_one_request(h):
    two = await h.add_broker(2)
    h.lead("t", {0: 2, 1: 2})
    two.hold.clear()
    h.channel.write(1, 0, 0, True, [("t", 0)])          # goes out alone, held by the fake
    await two.wait_received(1)
    h.channel.write(2, 0, 0, False, [("t", 0), ("t", 1)])
    h.channel.write(3, 4, 0, True, [("t", 1)])
    two.hold.set()
    await two.wait_received(2)
    assert markers_of(two.requests[1]) == [(2, 0, 0, False, [("t", 0), ("t", 1)]),
                                           (3, 4, 0, True, [("t", 1)])]
    for args, parts in (((1, 0, 0, True), [("t", 0)]),
                        ((2, 0, 0, False), [("t", 0), ("t", 1)]),
                        ((3, 4, 0, True), [("t", 1)])):
        assert set((await h.until_done(args, parts)).values()) == {0}
    assert two.connections == 1                          # one connection, reused


async def test_in_flight_partition_is_not_sent_twice(h):
    two = await h.add_broker(2)
    h.lead("t", {0: 2})
    two.hold.clear()
    for _ in range(5):
        assert h.channel.write(1, 0, 0, True, [("t", 0)]) == {("t", 0): IN_FLIGHT}
        await asyncio.sleep(0.01)
    await two.wait_received(1)
    two.hold.set()
    assert await h.until_done((1, 0, 0, True), [("t", 0)]) == {("t", 0): 0}
    assert len(two.requests) == 1


async def test_not_leader_answer_is_resent_to_the_new_leader(h):
    two, three = await h.add_broker(2), await h.add_broker(3)
    h.lead("t", {0: 2})
    two.codes[("t", 0)] = E.NOT_LEADER_OR_FOLLOWER
    h.channel.write(9, 1, 2, False, [("t", 0)])
    await two.wait_received(1)
    # Answered NOT_LEADER: resent on a later call, still to broker 2 while the cache says so.
    for _ in range(1500):
        h.channel.write(9, 1, 2, False, [("t", 0)])
        if len(two.requests) >= 2:
            break
        await asyncio.sleep(0.02)
    assert len(two.requests) >= 2
    h.lead("t", {0: 3})                                   # leadership moved
    done = await h.until_done((9, 1, 2, False), [("t", 0)])
    assert done == {("t", 0): 0}
    assert markers_of(three.requests[0]) == [(9, 1, 2, False, [("t", 0)])]


async def test_remote_unknown_partition_is_retried_until_the_cache_forgets_it(h):
    two = await h.add_broker(2)
    h.lead("t", {0: 2})
    two.codes[("t", 0)] = E.UNKNOWN_TOPIC_OR_PARTITION    # e.g. LeaderAndIsr not there yet
    h.channel.write(4, 0, 0, True, [("t", 0)])
    await two.wait_received(1)
    for _ in range(1500):
        assert h.channel.write(4, 0, 0, True, [("t", 0)])[("t", 0)] not in DONE
        if len(two.requests) >= 2:
            break
        await asyncio.sleep(0.02)
    assert len(two.requests) >= 2
    h.cache.remove_topic("t")                              # deleted: the marker is skipped
    assert await h.until_done((4, 0, 0, True), [("t", 0)]) == {
        ("t", 0): E.UNKNOWN_TOPIC_OR_PARTITION}


async def test_fenced_answers_are_reported(h):
    two = await h.add_broker(2)
    h.lead("t", {0: 2, 1: 2})
    two.codes[("t", 0)] = E.INVALID_PRODUCER_EPOCH
    two.codes[("t", 1)] = E.TRANSACTION_COORDINATOR_FENCED
    assert await h.until_done((4, 0, 0, True), [("t", 0), ("t", 1)]) == {
        ("t", 0): E.INVALID_PRODUCER_EPOCH, ("t", 1): E.TRANSACTION_COORDINATOR_FENCED}


async def test_dropped_connection_is_resent_on_a_new_one(h):
    two = await h.add_broker(2)
    h.lead("t", {0: 2})
    two.drop_next = 1
    assert await h.until_done((5, 0, 0, True), [("t", 0)]) == {("t", 0): 0}
    assert len(two.requests) == 2 and two.connections == 2


async def test_unreachable_broker_then_its_new_endpoint(h):
    two = await h.add_broker(2)
    h.lead("t", {0: 2})
    await two.stop()
    for _ in range(10):     # refused connections: retried, never done
        assert h.channel.write(5, 0, 0, True, [("t", 0)])[("t", 0)] not in DONE
        await asyncio.sleep(0.02)
    moved = await h.add_broker(2)                          # broker 2 re-registered elsewhere
    assert await h.until_done((5, 0, 0, True), [("t", 0)]) == {("t", 0): 0}
    assert markers_of(moved.requests[-1]) == [(5, 0, 0, True, [("t", 0)])]


async def test_unknown_partition_and_missing_leader(h):
    h.lead("t", {0: -1, 1: 4})                             # no leader; leader not alive
    results = h.channel.write(1, 0, 0, True, [("t", 0), ("t", 1), ("gone", 0)])
    assert results == {("t", 0): E.LEADER_NOT_AVAILABLE, ("t", 1): E.LEADER_NOT_AVAILABLE,
                       ("gone", 0): E.UNKNOWN_TOPIC_OR_PARTITION}
    assert h.local == [] and h.channel.destinations() == []


async def test_local_codes_pass_through(h):
    h.lead("t", {0: LOCAL, 1: LOCAL})
    h.local_codes[("t", 1)] = E.NOT_LEADER_OR_FOLLOWER
    assert h.channel.write(1, 0, 0, False, [("t", 0), ("t", 1)]) == {
        ("t", 0): 0, ("t", 1): E.NOT_LEADER_OR_FOLLOWER}


async def test_answers_of_an_abandoned_job_are_dropped_after_idling(h):
    two = await h.add_broker(2)
    h.lead("t", {0: 2})
    h.channel.write(6, 0, 0, True, [("t", 0)])
    await two.wait_received(1)
    for _ in range(3000):      # wait for the answer to be recorded (no write call reports it)
        if not h.channel._keys[(6, 0, 0, True)].in_flight:
            break
        await asyncio.sleep(0.01)
    assert h.channel.pending_keys() == 1
    h.clock.advance(61_000)
    h.channel.write(7, 0, 0, True, [("gone", 0)])          # any call sweeps
    assert h.channel.pending_keys() == 0


async def test_close_stops_the_senders(h):
    two = await h.add_broker(2)
    h.lead("t", {0: 2})
    two.hold.clear()
    h.channel.write(1, 0, 0, True, [("t", 0)])
    await two.wait_received(1)
    tasks = [d.task for d in h.channel._destinations.values()]
    h.channel.close()
    await asyncio.wait_for(asyncio.gather(*tasks, return_exceptions=True), WAIT_S)
    assert all(t.done() for t in tasks)
    assert h.channel.write(1, 0, 0, True, [("t", 0)]) == {("t", 0): IN_FLIGHT}
    assert h.channel.destinations() == []


def test_write_markers_not_hosted_partition_known_to_the_cache_is_not_leader():
    """The receiving side (markers.write_markers): a partition the cache knows but this
    broker does not host (LeaderAndIsr not applied yet) must be retried, not dropped."""
    from kafkapy.coordinator.transaction.markers import write_markers

    class Replicas:
        partitions: dict = {}

        def __init__(self, cache) -> None:
            self.cache = cache

    cache = MetadataCache("cluster", LOCAL)
    meta = TopicMetadata("t", uuid.uuid4())
    meta.partitions[0] = PartitionState(0, [LOCAL], LOCAL, 0, [LOCAL])
    cache.put_topic(meta)
    results = write_markers(Replicas(cache), MockClock(), 1, 0, 0, True, [("t", 0), ("u", 0)])
    assert results == {("t", 0): E.NOT_LEADER_OR_FOLLOWER, ("u", 0): E.UNKNOWN_TOPIC_OR_PARTITION}


async def test_local_marker_done_once_replicated_rewritten_after_losing_leadership(h):
    h.lead("t", {0: LOCAL})
    h.hw[("t", 0)] = 0                       # followers have not fetched the marker yet
    args = (3, 1, 2, True)
    assert h.channel.write(*args, [("t", 0)]) == {("t", 0): IN_FLIGHT}
    assert h.channel.write(*args, [("t", 0)]) == {("t", 0): IN_FLIGHT}
    assert len(h.local) == 1                 # written once, waited for
    h.hw[("t", 0)] = E.NOT_LEADER_OR_FOLLOWER   # leadership lost before replication
    assert h.channel.write(*args, [("t", 0)]) == {("t", 0): E.NOT_LEADER_OR_FOLLOWER}
    h.hw[("t", 0)] = 1                       # led again here: written again, at offset 1
    assert h.channel.write(*args, [("t", 0)]) == {("t", 0): IN_FLIGHT}
    assert len(h.local) == 2
    h.hw[("t", 0)] = 2
    assert h.channel.write(*args, [("t", 0)]) == {("t", 0): 0}
    assert h.channel.pending_keys() == 0


async def test_the_coordinator_completes_a_transaction_through_the_channel(h):
    """The real TransactionCoordinator polling the channel: PrepareCommit until the remote
    leaders answered (the first answer NOT_LEADER), then CompleteCommit; the next
    transaction of the same producer is accepted again."""
    from kafkapy.coordinator.group.timers import Deadlines
    from kafkapy.coordinator.transaction.coordinator import (MARKER_RETRY_BACKOFF_MS,
                                                             TransactionCoordinator, TxnSettings)
    from kafkapy.coordinator.transaction.state import TxnState as S
    from kafkapy.purgatory.timer import Timer

    class Store:
        def write(self, index, key, value, timeout_ms=None):
            return 0

    two, three = await h.add_broker(2), await h.add_broker(3)
    h.lead("t", {0: LOCAL, 1: 2, 2: 3})
    three.codes[("t", 2)] = E.NOT_LEADER_OR_FOLLOWER
    timer = Timer(None, h.clock)
    deferred: list = []
    coord = TransactionCoordinator(TxnSettings(num_partitions=1), h.clock, Deadlines(timer),
                                   Store(), h.channel, iter(range(500, 600)).__next__,
                                   deferred.append)
    coord.begin_loading(0, coordinator_epoch=4)
    coord.finish_loading(0, [])
    _, pid, epoch = coord.init_producer_id("tx", 10000)
    parts = [("t", 0), ("t", 1), ("t", 2)]
    assert coord.add_partitions("tx", pid, epoch, parts) == 0
    assert coord.end_txn("tx", pid, epoch, True) == 0
    while deferred:
        deferred.pop(0)()
    for _ in range(3000):
        if coord.describe("tx")[1].state == S.COMPLETE_COMMIT:
            break
        if len(three.requests) == 1:
            three.codes.clear()              # the partition's leader is ready now
        await asyncio.sleep(0.01)
        h.clock.advance(MARKER_RETRY_BACKOFF_MS)
        timer.advance_clock()
    assert coord.describe("tx")[1].state == S.COMPLETE_COMMIT
    assert h.local[0] == (pid, epoch, 4, True, [("t", 0)])
    assert [markers_of(r) for r in two.requests] == [[(pid, epoch, 4, True, [("t", 1)])]]
    assert len(three.requests) >= 2
    assert coord.add_partitions("tx", pid, epoch, [("t", 1)]) == 0
    assert h.channel.pending_keys() == 0
    coord.shutdown()
