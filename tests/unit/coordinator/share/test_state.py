"""One ``__share_group_state`` partition's keys (``ShareStateShard``), the cases of Kafka's
ShareCoordinatorShardTest: what each operation answers and which records it asks for,
and what replaying them leaves (fences, snapshots and updates, pruning offsets)."""
from __future__ import annotations

import uuid

import pytest

from kafkapy.coordinator.share.persister import StateBatch
from kafkapy.coordinator.share.state import (
    RecordKind,
    ShareGroupOffset,
    ShareKey,
    ShareStateShard,
    StateRecord,
)
from kafkapy.protocol.errors import ErrorCode as E

TOPIC = uuid.UUID("7f1c2d3e-4a5b-4c6d-8e9f-a0b1c2d3e4f5")
KEY = ShareKey("group1", TOPIC, 0)
NOW = 1_700_000_000_000


class Clock:
    def __init__(self) -> None:
        self.now = NOW

    def __call__(self) -> int:
        return self.now


def shard(updates_per_snapshot: int = 500, clock=None, exists=lambda t, p: True):
    return ShareStateShard(updates_per_snapshot=updates_per_snapshot,
                           time_ms=clock or Clock(), partition_exists=exists)


def apply(s: ShareStateShard, decision, offset: int = -1):
    for i, record in enumerate(decision.records):
        s.replay(record, offset + i if offset >= 0 else -1)
    return decision


def initialized(s: ShareStateShard, state_epoch: int = 0, start_offset: int = -1):
    assert apply(s, s.initialize(KEY, state_epoch=state_epoch,
                                 start_offset=start_offset)).answer == 0
    return s


def write(s, *, start=0, leader=0, state=0, batches=(StateBatch(0, 10, 0, 1),), dcc=-1):
    return apply(s, s.write(KEY, state_epoch=state, leader_epoch=leader, start_offset=start,
                            batches=list(batches), delivery_complete_count=dcc))


# -- initialize -----------------------------------------------------------------------------
def test_initialize_writes_a_snapshot_without_a_leader_epoch():
    s = shard()
    decision = s.initialize(KEY, state_epoch=5, start_offset=10)
    [record] = decision.records
    assert decision.answer == 0 and record.kind is RecordKind.SNAPSHOT
    assert record.value == ShareGroupOffset(
        snapshot_epoch=0, state_epoch=5, leader_epoch=-1, start_offset=10, batches=(),
        delivery_complete_count=0, create_timestamp=NOW, write_timestamp=NOW)
    assert s.state(KEY) is None         # nothing changes before the replay
    apply(s, decision)
    assert s.state(KEY) == record.value


def test_initialize_without_a_start_offset_has_an_unknown_delivery_count():
    [record] = shard().initialize(KEY, state_epoch=0, start_offset=-1).records
    assert (record.value.start_offset, record.value.delivery_complete_count) == (-1, -1)


def test_initialize_again_takes_the_next_snapshot_epoch_and_drops_the_batches():
    s = initialized(shard())
    write(s, leader=1)
    [record] = s.initialize(KEY, state_epoch=1, start_offset=50).records
    assert (record.value.snapshot_epoch, record.value.batches, record.value.leader_epoch) == (
        s.state(KEY).snapshot_epoch + 1, (), -1)


def test_initialize_with_an_older_state_epoch_is_fenced():
    s = initialized(shard(), state_epoch=5)
    decision = s.initialize(KEY, state_epoch=0, start_offset=-1)
    assert (decision.answer, decision.records) == (E.FENCED_STATE_EPOCH, ())


def test_initialize_checks_the_partition_and_the_topic():
    assert shard().initialize(ShareKey("g", TOPIC, -1), state_epoch=0,
                              start_offset=0).answer == E.INVALID_REQUEST
    decision = shard(exists=lambda t, p: False).initialize(KEY, state_epoch=0, start_offset=0)
    assert (decision.answer, decision.records) == (E.UNKNOWN_TOPIC_OR_PARTITION, ())


# -- read -----------------------------------------------------------------------------------
def test_read_of_a_partition_never_initialized_is_an_invalid_request():
    decision = shard().read(KEY, leader_epoch=1)
    assert decision.answer.error == E.INVALID_REQUEST and decision.records == ()


def test_a_new_leader_epoch_is_written_by_the_read():
    s = initialized(shard())
    decision = s.read(KEY, leader_epoch=2)
    assert (decision.answer.error, decision.answer.start_offset,
            decision.answer.state_epoch, decision.answer.batches) == (0, -1, 0, ())
    [record] = decision.records
    assert record.kind is RecordKind.UPDATE
    assert (record.value.leader_epoch, record.value.start_offset, record.value.snapshot_epoch,
            record.value.batches, record.value.delivery_complete_count) == (2, -1, 0, (), -1)
    apply(s, decision)
    assert s.state(KEY).leader_epoch == 2
    # -1 and the same epoch write nothing
    assert s.read(KEY, leader_epoch=-1).records == ()
    assert s.read(KEY, leader_epoch=2).records == ()


def test_an_older_leader_epoch_is_fenced_on_read_and_write():
    s = initialized(shard())
    apply(s, s.read(KEY, leader_epoch=5))
    write(s, leader=5)
    assert s.read(KEY, leader_epoch=3).answer.error == E.FENCED_LEADER_EPOCH
    decision = s.write(KEY, state_epoch=0, leader_epoch=3, start_offset=0, batches=[])
    assert (decision.answer, decision.records) == (E.FENCED_LEADER_EPOCH, ())


def test_read_answers_the_stored_state():
    s = initialized(shard())
    apply(s, s.read(KEY, leader_epoch=0))
    write(s)
    answer = s.read(KEY, leader_epoch=1).answer
    assert (answer.error, answer.start_offset, answer.state_epoch, answer.batches) == (
        0, 0, 0, (StateBatch(0, 10, 0, 1),))


# -- write ----------------------------------------------------------------------------------
def test_write_of_a_partition_never_initialized_is_an_invalid_request():
    decision = shard().write(KEY, state_epoch=0, leader_epoch=0, start_offset=0, batches=[])
    assert (decision.answer, decision.records) == (E.INVALID_REQUEST, ())
    assert decision.message


def test_write_with_an_older_state_epoch_is_fenced():
    s = initialized(shard(), state_epoch=1)
    decision = s.write(KEY, state_epoch=0, leader_epoch=5, start_offset=0, batches=[])
    assert (decision.answer, decision.records) == (E.FENCED_STATE_EPOCH, ())
    # Kafka's Errors.FENCED_STATE_EPOCH.message(), as kafka-clients 4.3 has it
    assert decision.message == ("The share coordinator rejected the request because the "
                                "share-group state epoch did not match.")


def test_the_leader_epoch_is_checked_before_the_state_epoch():
    s = initialized(shard(), state_epoch=1)
    apply(s, s.read(KEY, leader_epoch=4))
    assert s.write(KEY, state_epoch=0, leader_epoch=3, start_offset=0,
                   batches=[]).answer == E.FENCED_LEADER_EPOCH


def test_updates_are_combined_into_the_stored_state():
    s = initialized(shard())
    apply(s, s.read(KEY, leader_epoch=0))
    first = write(s, dcc=11)
    assert first.records[0].kind is RecordKind.UPDATE
    write(s, batches=[StateBatch(11, 20, 0, 1)], dcc=21)
    stored = s.state(KEY)
    assert stored.batches == (StateBatch(0, 20, 0, 1),)
    assert (stored.start_offset, stored.delivery_complete_count, stored.snapshot_epoch) == (
        0, 21, 0)


def test_an_update_carries_only_the_written_batches_cut_at_its_start_offset():
    s = initialized(shard())
    write(s, batches=[StateBatch(0, 10, 2, 1)])
    [record] = s.write(KEY, state_epoch=0, leader_epoch=0, start_offset=5,
                       batches=[StateBatch(3, 8, 0, 2), StateBatch(7, 9, 0, 2)]).records
    assert record.kind is RecordKind.UPDATE
    assert record.value.batches == (StateBatch(5, 9, 0, 2),)


def test_a_snapshot_follows_once_the_update_count_reaches_the_setting():
    # Kafka's count: none until the first update, which counts 0.
    s = initialized(shard(updates_per_snapshot=2))
    kinds = [write(s, start=i).records[0].kind for i in range(5)]
    assert kinds == [RecordKind.UPDATE, RecordKind.UPDATE, RecordKind.UPDATE,
                     RecordKind.SNAPSHOT, RecordKind.UPDATE]
    assert s.state(KEY).snapshot_epoch == 1


def test_every_write_is_a_snapshot_at_zero_and_no_batch_is_lost():
    # Kafka's testNonSequentialBatchUpdates
    s = initialized(shard(updates_per_snapshot=0))
    apply(s, s.read(KEY, leader_epoch=0))
    write(s)
    decision = write(s, start=100, dcc=0, batches=[
        StateBatch(100, 109, 1, 1), StateBatch(110, 119, 1, 2), StateBatch(120, 129, 1, 0)])
    assert decision.records[0].kind is RecordKind.SNAPSHOT
    assert decision.records[0].value.snapshot_epoch == 3
    write(s, start=-1, dcc=10, batches=[StateBatch(100, 109, 2, 1)])
    final = write(s, start=110, dcc=10, batches=[StateBatch(120, 129, 2, 1)]).records[0].value
    assert (final.snapshot_epoch, final.start_offset, final.delivery_complete_count,
            final.leader_epoch, final.state_epoch) == (5, 110, 10, 0, 0)
    assert final.batches == (StateBatch(110, 119, 1, 2), StateBatch(120, 129, 2, 1))
    assert s.state(KEY) == final


def test_write_checks_the_topic_after_the_fences():
    s = initialized(shard())
    s.partition_exists = lambda t, p: False
    assert s.write(KEY, state_epoch=0, leader_epoch=0, start_offset=0,
                   batches=[]).answer == E.UNKNOWN_TOPIC_OR_PARTITION


# -- summary and delete ---------------------------------------------------------------------
def test_summary_of_an_unknown_key_is_no_error():
    answer = shard().read_summary(KEY)
    assert (answer.error, answer.start_offset, answer.state_epoch, answer.leader_epoch) == (
        0, -1, 0, -1)


def test_summary_answers_epochs_start_offset_and_delivery_count():
    s = initialized(shard(), state_epoch=3)
    apply(s, s.read(KEY, leader_epoch=7))
    write(s, leader=7, state=3, start=4, dcc=9)
    answer = s.read_summary(KEY)
    assert (answer.error, answer.state_epoch, answer.leader_epoch, answer.start_offset,
            answer.delivery_complete_count, answer.batches) == (0, 3, 7, 4, 9, ())


def test_delete_writes_a_tombstone_and_forgets_the_key():
    s = initialized(shard())
    decision = s.delete(KEY)
    assert decision.answer == 0 and decision.records == (StateRecord(RecordKind.TOMBSTONE, KEY),)
    apply(s, decision)
    assert s.state(KEY) is None
    assert s.read(KEY, leader_epoch=0).answer.error == E.INVALID_REQUEST
    # the fences went with it
    assert apply(s, s.initialize(KEY, state_epoch=0, start_offset=0)).answer == 0


def test_delete_of_an_unknown_key_writes_nothing():
    decision = shard().delete(KEY)
    assert (decision.answer, decision.records) == (0, ())


# -- replay ---------------------------------------------------------------------------------
def test_replayed_snapshots_keep_the_highest_epochs_as_fences():
    s = shard()
    s.replay(StateRecord(RecordKind.SNAPSHOT, KEY, ShareGroupOffset(0, 3, 9, 0)))
    s.replay(StateRecord(RecordKind.SNAPSHOT, KEY, ShareGroupOffset(1, 1, 2, 0)))
    assert s.state(KEY).leader_epoch == 2
    assert s.write(KEY, state_epoch=2, leader_epoch=9, start_offset=0,
                   batches=[]).answer == E.FENCED_STATE_EPOCH
    assert s.write(KEY, state_epoch=3, leader_epoch=8, start_offset=0,
                   batches=[]).answer == E.FENCED_LEADER_EPOCH


def test_an_update_without_a_snapshot_is_the_state():
    s = shard()
    s.replay(StateRecord(RecordKind.UPDATE, KEY, ShareGroupOffset(
        0, -1, 1, 5, (StateBatch(5, 6, 2, 1),))))
    assert s.state(KEY).batches == (StateBatch(5, 6, 2, 1),)


def test_the_last_redundant_offset_is_the_oldest_latest_snapshot():
    s = shard()
    keys = [ShareKey("g", TOPIC, p) for p in range(3)]

    def snap(key, offset):
        s.replay(StateRecord(RecordKind.SNAPSHOT, key, ShareGroupOffset(0, 0, 0, 0)), offset)

    assert s.last_redundant_offset() is None
    snap(keys[0], 1)
    snap(keys[1], 2)
    snap(keys[2], 3)
    assert s.last_redundant_offset() == 1
    snap(keys[0], 4)
    assert s.last_redundant_offset() == 2
    s.replay(StateRecord(RecordKind.UPDATE, keys[1], ShareGroupOffset(0, -1, 0, 0)), 5)
    assert s.last_redundant_offset() == 2      # updates need their snapshot
    snap(keys[1], 6)
    assert s.last_redundant_offset() == 3
    s.replay(StateRecord(RecordKind.TOMBSTONE, keys[2]), 7)
    assert s.last_redundant_offset() == 4
    snap(keys[0], 8)
    assert s.last_redundant_offset() == 6       # the deleted key holds nothing back


def test_cold_snapshots_rewrite_idle_keys_once():
    clock = Clock()
    s = initialized(shard(clock=clock))
    clock.now += 5_000
    assert s.cold_snapshots(10_000) == []
    clock.now += 7_000
    [record] = s.cold_snapshots(10_000)
    assert record.kind is RecordKind.SNAPSHOT
    assert (record.value.snapshot_epoch, record.value.create_timestamp,
            record.value.write_timestamp) == (1, NOW, NOW + 12_000)
    s.replay(record)
    clock.now += 12_000
    assert s.cold_snapshots(10_000) == []      # every key had its cold snapshot


def test_a_deleted_topic_gets_tombstones_for_its_keys():
    s = initialized(shard())
    other = ShareKey("group1", uuid.uuid4(), 0)
    apply(s, s.initialize(other, state_epoch=0, start_offset=0))
    assert s.deleted_topic_tombstones({TOPIC}) == [StateRecord(RecordKind.TOMBSTONE, KEY)]


# -- keys -----------------------------------------------------------------------------------
def test_the_coordinator_key_names_the_topic_id_as_kafka_writes_it():
    key = ShareKey("g1", uuid.UUID(int=1), 7)
    assert key.coordinator_key() == "g1:AAAAAAAAAAAAAAAAAAAAAQ:7"
    assert ShareKey.parse("g1:AAAAAAAAAAAAAAAAAAAAAQ:7") == key


@pytest.mark.parametrize("text", ["", "s", "g:AAAAAAAAAAAAAAAAAAAAAQ", "g::1",
                                  " :AAAAAAAAAAAAAAAAAAAAAQ:1", "g:nope:1",
                                  "g:AAAAAAAAAAAAAAAAAAAAAQ:x", "g:AAAAAAAAAAAAAAAAAAAAAQ:1:2",
                                  "g:AAAAAAAAAAAAAAAAAAAAAQ:2147483648"])
def test_malformed_coordinator_keys_are_refused(text):
    with pytest.raises(ValueError):
        ShareKey.parse(text)
