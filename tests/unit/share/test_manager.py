"""The share-partition leader over a real broker's replica manager and log (``broker()``)
and the in-memory persister: records acquired from the log and answered as whole batches,
acknowledgements written before they are answered, releases and lock expiry redelivered,
the delayed share fetch woken by appends and releases, auto offset reset, read_committed,
state loaded afresh after leadership moves, fencing by the persisted state, sessions."""
from __future__ import annotations

import asyncio
import os
from dataclasses import dataclass

import pytest

from kafkapy.coordinator.share.persister import StateBatch
from kafkapy.log.segment import FetchSlice
from kafkapy.protocol.errors import ErrorCode
from kafkapy.records.batch import iter_headers
from kafkapy.records.record import CONTROL_ABORT, build_batch, build_control_batch, decode_records
from kafkapy.replication.fetch_session import TopicIdPartition
from kafkapy.share.dead_letters import DeadLetterSource, DeadLetterWriter, dead_letter_headers
from kafkapy.share.manager import (PartitionFetch, ShareFetchParams, SharePartitionManager,
                                   _batch_headers)
from kafkapy.share.partition import AcknowledgementBatch, AcknowledgeType
from kafkapy.testing import MockClock, broker
from tests.support.share import InMemoryPersister
from tests.support.share_configs import LOCK_MS, StaticGroupConfigs

GROUP = "g"
TOPIC = "events"
ACCEPT, RELEASE, REJECT = AcknowledgeType.ACCEPT, AcknowledgeType.RELEASE, AcknowledgeType.REJECT


@dataclass
class _Data:
    index: int
    records: bytes


class Leader:
    """A broker, its topic, and a SharePartitionManager over its parts."""

    def __init__(self, b, persister: InMemoryPersister, configs: StaticGroupConfigs) -> None:
        self.b = b
        server = b.server
        self.server = server
        self.persister = persister
        self.configs = configs
        self.topic_id = server.cache.topic(TOPIC).topic_id
        self.tip = TopicIdPartition(self.topic_id, TOPIC, 0)
        self.manager = SharePartitionManager(
            config=server.config, clock=server.clock, replica_manager=server.replica_manager,
            cache=server.cache, persister=persister, group_configs=configs, timer=server.timer)

    def produce(self, *values: bytes, topic: str = TOPIC, index: int = 0, **batch) -> None:
        now = self.server.clock.time_ms()
        records = build_batch([(b"k", v, [("h", b"v")], now) for v in values], **batch)
        self.append(records, topic, index)

    def append(self, records: bytes, topic: str = TOPIC, index: int = 0) -> None:
        [(_, _, result)] = self.server.replica_manager.append_records(
            [(topic, _Data(index, records))], [None], required_acks=1, timeout_ms=1000,
            produce_version=9, internal_topics_allowed=False, transactional_id=None,
            respond=lambda r: r, origin="coordinator")
        assert result.error_code == 0

    async def fetch(self, member: str = "m1", max_wait_ms: int = 0, max_records: int = 500,
                    min_bytes: int = 1) -> PartitionFetch:
        params = ShareFetchParams(max_wait_ms=max_wait_ms, min_bytes=min_bytes,
                                  max_bytes=1 << 20, max_records=max_records, batch_size=500)
        answers = await self.manager.fetch_messages(GROUP, member, params, [self.tip])
        return answers[self.tip]

    async def loaded_fetch(self, member: str = "m1", **kw) -> PartitionFetch:
        """A fetch after the share partition's state is loaded."""
        await self.fetch(member, max_wait_ms=0)
        await _settle()
        return await self.fetch(member, **kw)

    async def ack(self, first: int, last: int, kind: int, member: str = "m1") -> int:
        answers = await self.manager.acknowledge(GROUP, member, {
            self.tip: [AcknowledgementBatch(first, last, (int(kind),))]})
        return answers[self.tip]

    def stored(self):
        return self.persister.stored(GROUP, self.topic_id, 0)


async def _settle(rounds: int = 10) -> None:
    for _ in range(rounds):
        await asyncio.sleep(0)


def offsets(answer: PartitionFetch) -> list[int]:
    data = answer.read_bytes()
    return [r.offset for h in iter_headers(data) for r in decode_records(data, h.position)]


@pytest.fixture
async def leader():
    async with broker(clock=MockClock()) as b:
        await b.create_topic(TOPIC, 1)
        persister = InMemoryPersister()
        node = Leader(b, persister, StaticGroupConfigs())
        await persister.initialize(GROUP, node.topic_id, 0, state_epoch=0, start_offset=-1)
        yield node
        node.manager.shutdown()


async def test_records_are_acquired_once_and_answered_as_whole_batches(leader):
    leader.produce(b"a", b"b", b"c")
    leader.produce(b"d", b"e")
    answer = await leader.loaded_fetch()
    assert answer.error_code == 0
    assert [tuple(a) for a in answer.acquired] == [(0, 4, 1)]
    assert offsets(answer) == [0, 1, 2, 3, 4]
    again = await leader.fetch("m2")
    assert again.acquired == [] and again.records == []


async def test_first_use_reads_the_state_with_the_leader_epoch_and_persists_the_reset(leader):
    leader.produce(b"a", b"b")
    await leader.loaded_fetch()
    reads = [c for c in leader.persister.calls if c[0] == "read"]
    assert reads == [("read", GROUP, leader.topic_id, 0, {"leader_epoch": 0})]
    assert leader.stored().start_offset == 0


async def test_latest_reset_skips_what_was_there(leader):
    leader.configs.set(auto_offset_reset="latest")
    leader.produce(b"old", b"older")
    assert (await leader.loaded_fetch()).acquired == []
    leader.produce(b"new")
    answer = await leader.fetch()
    assert [tuple(a) for a in answer.acquired] == [(2, 2, 1)]
    assert leader.stored().start_offset == 2


async def test_by_duration_reset_uses_the_time_index(leader):
    leader.configs.set(auto_offset_reset="by_duration:PT1H")
    now = leader.server.clock.time_ms()
    leader.append(build_batch([(None, b"old", (), now - 7_200_000)]))
    leader.append(build_batch([(None, b"recent", (), now - 60_000)]))
    answer = await leader.loaded_fetch()
    assert [tuple(a) for a in answer.acquired] == [(1, 1, 1)]


async def test_accept_is_persisted_before_it_is_answered_and_moves_the_start(leader):
    leader.produce(b"a", b"b", b"c")
    await leader.loaded_fetch()
    writes_before = len([c for c in leader.persister.calls if c[0] == "write"])
    assert await leader.ack(0, 2, ACCEPT) == 0
    writes = [c for c in leader.persister.calls if c[0] == "write"]
    assert len(writes) == writes_before + 1
    assert leader.stored().start_offset == 3


async def test_release_redelivers_with_the_next_delivery_count(leader):
    leader.produce(b"a", b"b")
    await leader.loaded_fetch()
    assert await leader.ack(0, 1, RELEASE) == 0
    answer = await leader.fetch("m2")
    assert [tuple(a) for a in answer.acquired] == [(0, 1, 2)]
    assert offsets(answer) == [0, 1]


async def test_acknowledging_records_of_another_member_is_an_invalid_record_state(leader):
    leader.produce(b"a")
    await leader.loaded_fetch()
    assert await leader.ack(0, 0, ACCEPT, member="intruder") == ErrorCode.INVALID_RECORD_STATE


async def test_acknowledging_a_partition_never_fetched_here(leader):
    assert await leader.ack(0, 0, ACCEPT) == ErrorCode.UNKNOWN_TOPIC_OR_PARTITION


async def test_lock_expiry_on_the_timing_wheel_redelivers(leader):
    leader.produce(b"a")
    await leader.loaded_fetch()
    await leader.b.advance(LOCK_MS - 1)
    assert (await leader.fetch("m2")).acquired == []
    await leader.b.advance(1)
    await _settle()
    answer = await leader.fetch("m2")
    assert [tuple(a) for a in answer.acquired] == [(0, 0, 2)]


async def test_a_waiting_fetch_is_woken_by_an_append(leader):
    await leader.loaded_fetch()
    waiting = asyncio.ensure_future(leader.fetch(max_wait_ms=10_000))
    await _settle()
    assert not waiting.done()
    leader.produce(b"late")
    await _settle()
    answer = await asyncio.wait_for(waiting, 1)
    assert [tuple(a) for a in answer.acquired] == [(0, 0, 1)]


async def test_a_waiting_fetch_is_woken_by_a_release(leader):
    leader.produce(b"a")
    await leader.loaded_fetch()
    waiting = asyncio.ensure_future(leader.fetch("m2", max_wait_ms=10_000))
    await _settle()
    assert not waiting.done()
    assert await leader.ack(0, 0, RELEASE) == 0
    answer = await asyncio.wait_for(waiting, 1)
    assert [tuple(a) for a in answer.acquired] == [(0, 0, 2)]


async def test_a_waiting_fetch_answers_empty_at_its_deadline(leader):
    await leader.loaded_fetch()
    waiting = asyncio.ensure_future(leader.fetch(max_wait_ms=500))
    await _settle()
    await leader.b.advance(500)
    answer = await asyncio.wait_for(waiting, 1)
    assert answer.error_code == 0 and answer.acquired == []


async def test_min_bytes_holds_the_fetch_until_enough_is_there(leader):
    await leader.loaded_fetch()
    waiting = asyncio.ensure_future(leader.fetch(max_wait_ms=10_000, min_bytes=300))
    leader.produce(b"x")
    await _settle()
    assert not waiting.done()
    leader.produce(b"y" * 400)
    answer = await asyncio.wait_for(waiting, 1)
    assert [tuple(a) for a in answer.acquired] == [(0, 1, 1)]


async def test_max_records_is_shared_and_soft_at_batch_ends(leader):
    leader.produce(b"a", b"b", b"c")
    leader.produce(b"d", b"e")
    answer = await leader.loaded_fetch(max_records=2)
    assert [tuple(a) for a in answer.acquired] == [(0, 2, 1)]
    assert offsets(answer) == [0, 1, 2]



def test_the_header_walk_stops_once_the_in_flight_and_max_records_offsets_are_covered(tmp_path):
    path = tmp_path / "batches.log"
    path.write_bytes(b"".join(build_batch([(None, b"v", (), 0)] * 4, base_offset=base)
                              for base in range(0, 400, 4)))
    fd = os.open(path, os.O_RDONLY)
    try:
        found = [FetchSlice(fd, 0, path.stat().st_size, 0)]
        assert len(_batch_headers(found)) == 100
        # offsets 0-9 in flight, 6 new ones wanted: batches 0-3, 4-7, 8-11 (2 new), 12-15
        walked = _batch_headers(found, 10, 6)
        assert [h.base_offset for _, h in walked] == [0, 4, 8, 12]
        assert [h.base_offset for _, h in _batch_headers(found, 0, 1)] == [0]
    finally:
        os.close(fd)

async def test_read_committed_leaves_aborted_records_out(leader):
    leader.configs.set(isolation_level="read_committed")
    leader.produce(b"committed")
    now = leader.server.clock.time_ms()
    leader.append(build_batch([(None, b"aborted", (), now)], producer_id=7, producer_epoch=0,
                              base_sequence=0, is_transactional=True))
    leader.append(build_control_batch(CONTROL_ABORT, 0, 7, 0, now))
    leader.produce(b"after")
    answer = await leader.loaded_fetch()
    acquired = [o for a in answer.acquired for o in range(a.first_offset, a.last_offset + 1)]
    assert 0 in acquired and 3 in acquired and 1 not in acquired


async def test_leadership_lost_drops_the_share_partition(leader):
    leader.produce(b"a")
    await leader.loaded_fetch()
    rm = leader.server.replica_manager
    partition = rm.partitions[(TOPIC, 0)]
    state = partition.state
    moved = type(state)(**{**vars(state), "leader": 1, "leader_epoch": state.leader_epoch + 1,
                           "replicas": [0, 1]})
    partition.state = moved         # as a LeaderAndIsr to follower leaves it
    rm.appended((TOPIC, 0))
    assert leader.manager.share_partition(GROUP, leader.topic_id, 0) is None
    answer = await leader.fetch()
    assert answer.error_code == ErrorCode.NOT_LEADER_OR_FOLLOWER


async def test_a_fenced_write_drops_the_share_partition(leader):
    leader.produce(b"a")
    await leader.loaded_fetch()
    leader.persister.fail_next("write", ErrorCode.FENCED_STATE_EPOCH)
    assert await leader.ack(0, 0, ACCEPT) == ErrorCode.NOT_LEADER_OR_FOLLOWER
    assert leader.manager.share_partition(GROUP, leader.topic_id, 0) is None


async def test_a_new_share_partition_reads_the_persisted_state(leader):
    leader.produce(b"a", b"b", b"c")
    await leader.loaded_fetch()
    assert await leader.ack(0, 0, ACCEPT) == 0
    again = Leader(leader.b, leader.persister, leader.configs)    # another leader's view
    leader.manager.shutdown()
    answer = await again.loaded_fetch("m9")
    # acquired but unacknowledged at the change: persisted with the delivery count before
    assert [tuple(a) for a in answer.acquired] == [(1, 2, 1)]
    again.manager.shutdown()


async def test_closing_a_session_releases_the_members_records(leader):
    leader.produce(b"a")
    manager = leader.manager
    manager.new_context(GROUP, "m1", 0, [leader.tip], [], False)
    await leader.loaded_fetch()
    assert manager.release_session(GROUP, "m1")
    assert not manager.release_session(GROUP, "m1")
    # The group's last session here: its share partition is loaded afresh for the next.
    assert manager.share_partition(GROUP, leader.topic_id, 0) is None
    answer = await leader.fetch("m2", max_wait_ms=5000)
    assert [tuple(a) for a in answer.acquired] == [(0, 0, 1)]


# -- dead letters --------------------------------------------------------------------------
DLQ = "dlq.events"


async def dead_letter_leader(leader, **dlq_configs) -> Leader:
    """``leader``'s broker with a dead-letter topic and a manager that writes to it."""
    server = leader.server
    await leader.b.create_topic(DLQ, 1, **dlq_configs)
    leader.configs.set(dead_letter_topic=DLQ, delivery_count_limit=2)
    leader.manager.shutdown()
    node = Leader(leader.b, leader.persister, leader.configs)
    node.manager = SharePartitionManager(
        config=server.config, clock=server.clock, replica_manager=server.replica_manager,
        cache=server.cache, persister=leader.persister, group_configs=leader.configs,
        timer=server.timer, dead_letters=DeadLetterWriter(
            replica_manager=server.replica_manager, cache=server.cache, config=server.config,
            topic_config_of=lambda n: server.topic_config(n) if server.cache.topic(n) else None,
            clock=server.clock, endpoint_of=lambda broker: None))
    return node


async def dead_letters(node) -> list:
    for _ in range(50):
        await _settle()
    return await node.b.records(DLQ)


def headers(record) -> dict[str, bytes]:
    return {k: v for k, v in record.headers if k.startswith("__dlq.")}


async def test_a_rejected_record_is_copied_to_the_dead_letter_topic_then_archived(leader):
    node = await dead_letter_leader(leader, **{"errors.deadletterqueue.group.enable": "true"})
    node.produce(b"a", b"b")
    await node.loaded_fetch()
    assert await node.ack(0, 0, REJECT) == 0
    assert await node.ack(1, 1, ACCEPT) == 0
    [record] = await dead_letters(node)
    assert (record.key, record.value) == (b"k", b"a")
    assert ("h", b"v") in record.headers
    assert headers(record) == {
        "__dlq.errors.topic": TOPIC.encode(), "__dlq.errors.partition": b"0",
        "__dlq.errors.offset": b"0", "__dlq.errors.group": GROUP.encode(),
        "__dlq.errors.delivery.count": b"1", "__dlq.errors.reason": b"rejected"}
    assert node.stored().start_offset == 2
    node.manager.shutdown()


async def test_the_delivery_count_limit_dead_letters_with_its_reason(leader):
    node = await dead_letter_leader(leader, **{"errors.deadletterqueue.group.enable": "true"})
    node.produce(b"poison")
    await node.loaded_fetch()
    assert await node.ack(0, 0, RELEASE) == 0
    await node.fetch()
    assert await node.ack(0, 0, RELEASE) == 0           # second delivery: the limit
    [record] = await dead_letters(node)
    assert headers(record)["__dlq.errors.reason"] == b"delivery_count_limit"
    assert headers(record)["__dlq.errors.delivery.count"] == b"2"
    assert (await node.fetch("m2")).acquired == []
    node.manager.shutdown()


async def test_a_topic_not_enabled_for_dead_letters_is_not_written(leader):
    node = await dead_letter_leader(leader)
    node.produce(b"a")
    await node.loaded_fetch()
    assert await node.ack(0, 0, REJECT) == 0
    assert await dead_letters(node) == []
    assert node.stored().start_offset == 1
    node.manager.shutdown()


async def test_a_failover_after_the_append_does_not_append_again(leader):
    node = await dead_letter_leader(leader, **{"errors.deadletterqueue.group.enable": "true"})
    node.produce(b"a", b"b")
    # The last leader persisted offsets 0-1 pending (AVAILABLE at the limit) and appended
    # offset 0 before it died; offset 1 was not appended.
    source = DeadLetterSource(GROUP, TOPIC, 0)
    now = node.server.clock.time_ms()
    node.append(build_batch([(b"k", b"a", dead_letter_headers(source, 0, 2, "rejected"), now)]),
                topic=DLQ)
    await node.persister.write(GROUP, node.topic_id, 0, state_epoch=0, leader_epoch=0,
                               start_offset=0, batches=[StateBatch(0, 1, 0, 2)])
    await node.loaded_fetch()
    records = await dead_letters(node)
    assert [headers(r)["__dlq.errors.offset"] for r in records] == [b"0", b"1"]
    assert node.stored().start_offset == 2
    node.manager.shutdown()
