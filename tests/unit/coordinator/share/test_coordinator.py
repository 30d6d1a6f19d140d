"""The share coordinator over its store (``ShareCoordinator``): routing by partition, loading
and unloading, records appended before they are replayed, answers given once replicated,
append errors as Kafka's runtime maps them, and the background work.  The store is
``tests.support.share.MemoryStore``, a log in memory whose replication the test completes
(the real one is tested over a broker in test_service.py)."""
from __future__ import annotations

import asyncio
import uuid

import pytest

from kafkapy.clock import MockClock
from kafkapy.coordinator.share.coordinator import ShareCoordinator, ShareSettings, partition_for
from kafkapy.coordinator.share.persister import StateBatch
from kafkapy.coordinator.share.state import RecordKind, ShareKey
from kafkapy.jvm import string_hash, utils_abs
from kafkapy.protocol.errors import ErrorCode as E
from tests.support.share import MemoryStore

TOPIC = uuid.UUID(int=0x1234)
KEY = ShareKey("g", TOPIC, 0)
SETTINGS = ShareSettings(num_partitions=3, updates_per_snapshot=2)


@pytest.fixture
def store():
    return MemoryStore()


@pytest.fixture
def coordinator(store):
    c = ShareCoordinator(SETTINGS, MockClock(1000), store, lambda t, p: True)
    for index in range(SETTINGS.num_partitions):
        c.begin_loading(index)
        c.finish_loading(index, c.new_shard())
    return c


def test_a_key_lives_where_kafka_hashes_its_coordinator_key():
    text = "g:AAAAAAAAAAAAAAAAAAASNA:0"
    assert KEY.coordinator_key() == text
    assert partition_for(KEY, 50) == utils_abs(string_hash(text)) % 50


async def test_a_partition_not_served_here_is_not_coordinator(store):
    c = ShareCoordinator(SETTINGS, MockClock(1000), store, lambda t, p: True)
    assert (await c.initialize(KEY, state_epoch=0, start_offset=0))[0] == E.NOT_COORDINATOR
    c.begin_loading(c.partition_for(KEY))
    loading = await c.read(KEY, leader_epoch=0)
    assert (loading.error, loading.state_epoch) == (E.COORDINATOR_LOAD_IN_PROGRESS, 0)
    assert loading.message
    c.finish_loading(c.partition_for(KEY), c.new_shard())
    assert await c.initialize(KEY, state_epoch=0, start_offset=0) == (0, None)
    c.unload(c.partition_for(KEY))
    assert (await c.read_summary(KEY)).error == E.NOT_COORDINATOR


def test_a_load_overtaken_by_an_unload_and_a_new_load_is_not_installed(store):
    c = ShareCoordinator(SETTINGS, MockClock(1000), store, lambda t, p: True)
    old = c.begin_loading(0)
    c.unload(0)
    new = c.begin_loading(0)
    assert not c.finish_loading(0, c.new_shard(), old)
    assert not c.loaded(0)
    assert c.finish_loading(0, c.new_shard(), new) and c.loaded(0)
    c.unload(0)
    assert not c.finish_loading(0, c.new_shard(), new)


async def test_operations_append_their_records_to_the_keys_partition(coordinator, store):
    index = coordinator.partition_for(KEY)
    assert await coordinator.initialize(KEY, state_epoch=1, start_offset=-1) == (0, None)
    assert (await coordinator.read(KEY, leader_epoch=3)).error == 0
    assert await coordinator.write(KEY, state_epoch=1, leader_epoch=3, start_offset=0,
                                   batches=[StateBatch(0, 4, 2, 1)]) == (0, None)
    assert await coordinator.delete(KEY) == (0, None)
    assert [r.kind for r in store.decoded(index)] == [
        RecordKind.SNAPSHOT, RecordKind.UPDATE, RecordKind.UPDATE, RecordKind.TOMBSTONE]
    assert list(store.logs) == [index]


async def test_the_answer_waits_for_replication(coordinator, store):
    await coordinator.initialize(KEY, state_epoch=0, start_offset=0)
    store.hold = True
    write = asyncio.ensure_future(coordinator.write(
        KEY, state_epoch=0, leader_epoch=0, start_offset=0, batches=[StateBatch(0, 1, 2, 1)]))
    await asyncio.sleep(0)
    assert not write.done()
    # a read that writes nothing waits for that write too, and sees it
    read = asyncio.ensure_future(coordinator.read(KEY, leader_epoch=-1))
    await asyncio.sleep(0)
    assert not read.done()
    store.release()
    assert await write == (0, None)
    assert (await read).batches == (StateBatch(0, 1, 2, 1),)


async def test_append_errors_are_answered_as_kafkas_runtime_maps_them(coordinator, store):
    await coordinator.initialize(KEY, state_epoch=0, start_offset=0)
    for appended, expected in ((E.NOT_LEADER_OR_FOLLOWER, E.NOT_COORDINATOR),
                               (E.NOT_ENOUGH_REPLICAS, E.COORDINATOR_NOT_AVAILABLE),
                               (E.REQUEST_TIMED_OUT, E.COORDINATOR_NOT_AVAILABLE),
                               (E.MESSAGE_TOO_LARGE, -1)):
        store.refuse = appended
        code, message = await coordinator.write(KEY, state_epoch=0, leader_epoch=0,
                                                start_offset=0, batches=[])
        assert code == expected and message


async def test_a_refused_append_leaves_the_state_as_the_log_has_it(coordinator, store):
    await coordinator.initialize(KEY, state_epoch=0, start_offset=0)
    store.refuse = E.NOT_ENOUGH_REPLICAS
    await coordinator.write(KEY, state_epoch=0, leader_epoch=0, start_offset=0,
                            batches=[StateBatch(0, 1, 2, 1)])
    assert (await coordinator.read(KEY, leader_epoch=-1)).batches == ()
    # appended but not replicated in time: the log has it, so does the state
    store.fail_after_append = E.REQUEST_TIMED_OUT
    await coordinator.write(KEY, state_epoch=0, leader_epoch=0, start_offset=0,
                            batches=[StateBatch(0, 1, 2, 1)])
    assert (await coordinator.read(KEY, leader_epoch=-1)).batches == (StateBatch(0, 1, 2, 1),)


async def test_fencing_and_invalid_requests_write_nothing(coordinator, store):
    index = coordinator.partition_for(KEY)
    assert (await coordinator.read(KEY, leader_epoch=0)).error == E.INVALID_REQUEST
    await coordinator.initialize(KEY, state_epoch=2, start_offset=0)
    assert (await coordinator.initialize(KEY, state_epoch=1, start_offset=0))[0] == \
        E.FENCED_STATE_EPOCH
    assert len(store.logs[index]) == 1


async def test_redundant_offsets_follow_the_snapshots(coordinator, store):
    keys = [ShareKey("g", TOPIC, p) for p in range(40)]
    same = [k for k in keys if coordinator.partition_for(k) == coordinator.partition_for(KEY)]
    a, b = same[:2]
    index = coordinator.partition_for(a)
    await coordinator.initialize(a, state_epoch=0, start_offset=0)      # offset 0
    await coordinator.initialize(b, state_epoch=0, start_offset=0)      # offset 1
    assert index not in coordinator.redundant_offsets()                # 0: nothing to prune
    await coordinator.initialize(a, state_epoch=0, start_offset=5)      # offset 2
    assert coordinator.redundant_offsets() == {index: 1}


async def test_cold_snapshots_and_deleted_topics(coordinator, store):
    clock = coordinator._clock
    await coordinator.initialize(KEY, state_epoch=0, start_offset=0)
    other = ShareKey("g", uuid.UUID(int=99), 1)
    await coordinator.initialize(other, state_epoch=0, start_offset=0)
    clock.advance(10_000)
    assert await coordinator.snapshot_cold_partitions(10_000) == 2
    assert await coordinator.snapshot_cold_partitions(10_000) == 0
    assert await coordinator.cleanup_deleted_topics({TOPIC}) == 1
    assert (await coordinator.read(KEY, leader_epoch=0)).error == E.INVALID_REQUEST
    assert (await coordinator.read(other, leader_epoch=0)).error == 0
