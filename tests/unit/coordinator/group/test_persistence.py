"""Replaying ``__consumer_offsets``: consumer groups (record types 3-8) beside classic groups
and offsets, by Kafka's GroupMetadataManager.replay rules (the module docstring of
``kafkapy/coordinator/group/persistence.py``): last write wins per key, tombstones delete,
a member leaves in Kafka's three tombstones, a group in Kafka's sequence, and a group id
moves between classic and consumer as Kafka's conversions write it.  The records are
written through ``GroupStore`` into a real log and read back with ``load_partition``
where the test is about what a restart finds."""
from __future__ import annotations

import uuid

from kafkapy.clock import MockClock
from kafkapy.coordinator.group import records as R
from kafkapy.coordinator.group.consumer import records as C
from kafkapy.coordinator.group.consumer.types import (LEAVE_EPOCH, Member, MemberState,
                                                      Subscription, TopicMetadata)
from kafkapy.coordinator.group.offsets import OffsetAndMetadata
from kafkapy.coordinator.group.persistence import GroupStore, load_partition, replay
from kafkapy.log.log import Log
from kafkapy.metadata.cache import PartitionState
from kafkapy.metadata.topics import OFFSETS_TOPIC
from kafkapy.replication.partition import Partition

T1, T2 = uuid.UUID(int=11), uuid.UUID(int=22)
TOPICS = {T1: TopicMetadata(T1, "a", 3), T2: TopicMetadata(T2, "b", 2)}


def _sub(client: str = "c", names: tuple[str, ...] = ("a", "b")) -> Subscription:
    return Subscription(client_id=client, client_host="/10.0.0.1", topic_names=names,
                        rebalance_timeout_ms=30_000, server_assignor="uniform")


def _member(member_id: str, epoch: int, assigned, pending=None,
            state: MemberState = MemberState.STABLE) -> Member:
    return Member(member_id, C.NO_SUBSCRIPTION, member_epoch=epoch,
                  previous_member_epoch=epoch - 1, state=state, assigned=assigned,
                  pending_revocation=pending or {})


def _join(group: str, member_id: str, epoch: int, assigned) -> list:
    """What Kafka writes when a member joins and the group settles at ``epoch``."""
    return [C.member_record(group, member_id, _sub()),
            C.partition_metadata_record(group, TOPICS),
            C.group_epoch_record(group, epoch),
            C.target_member_record(group, member_id, assigned),
            C.target_epoch_record(group, epoch),
            C.current_assignment_record(group, _member(member_id, epoch, assigned))]


def _classic(group: str) -> list:
    stored = R.StoredGroup("consumer", 3, "range", "m", 5, [
        R.StoredMember("m", None, "c", "/h", 300, 10, b"S", b"A")])
    return [(R.group_key(group), R.group_value(stored))]


A1 = {T1: frozenset({0, 1, 2})}
A2 = {T2: frozenset({0, 1})}


def test_a_group_as_its_records_left_it():
    loaded = replay(_join("g", "m1", 1, {**A1, **A2})
                    + [C.member_record("g", "m2", _sub("c2", ("b",)))])
    group = loaded.consumer_groups["g"]
    assert (group.group_epoch, group.assignment_epoch, group.topics) == (1, 1, TOPICS)
    assert group.subscriptions == {"m1": _sub(), "m2": _sub("c2", ("b",))}
    assert group.targets == {"m1": {**A1, **A2}}
    assert group.current["m1"] == _member("m1", 1, {**A1, **A2}).with_(subscription=_sub())
    # A member known only by its subscription has Kafka's defaults for the rest.
    assert group.current["m2"] == Member("m2", _sub("c2", ("b",)))
    assert loaded.group_ids() == {"g"} and not loaded.groups


def test_last_write_wins_per_key():
    entries = _join("g", "m1", 1, A1) + [
        C.member_record("g", "m1", _sub("c-new", ("a",))),
        C.group_epoch_record("g", 2),
        C.partition_metadata_record("g", {T1: TOPICS[T1]}),
        C.target_member_record("g", "m1", A2),
        C.target_epoch_record("g", 2),
        C.current_assignment_record("g", _member("m1", 2, A1, A2,
                                                 MemberState.UNREVOKED_PARTITIONS))]
    group = replay(entries).consumer_groups["g"]
    assert (group.group_epoch, group.assignment_epoch) == (2, 2)
    assert group.topics == {T1: TOPICS[T1]}
    assert group.targets == {"m1": A2}
    member = group.current["m1"]
    assert member.subscription == _sub("c-new", ("a",))
    assert (member.member_epoch, member.state, member.assigned, member.pending_revocation) \
        == (2, MemberState.UNREVOKED_PARTITIONS, A1, A2)


def test_a_current_assignment_before_its_subscription_gets_it():
    entries = [C.current_assignment_record("g", _member("m1", 4, A1)),
               C.member_record("g", "m1", _sub())]
    assert replay(entries).consumer_groups["g"].current["m1"] == \
        _member("m1", 4, A1).with_(subscription=_sub())
    alone = replay(entries[:1]).consumer_groups["g"].current["m1"]
    assert alone.subscription == C.NO_SUBSCRIPTION and alone.assigned == A1


def test_a_member_leaving():
    entries = _join("g", "m1", 1, A1) + _join("g", "m2", 2, A2)
    group = replay(entries + C.member_tombstones("g", "m1")).consumer_groups["g"]
    assert set(group.current) == set(group.subscriptions) == set(group.targets) == {"m2"}
    # The current assignment's tombstone alone leaves the member, fenced (Kafka's replay).
    group = replay(entries + [C.current_assignment_tombstone("g", "m1")]).consumer_groups["g"]
    left = group.current["m1"]
    assert (left.member_epoch, left.previous_member_epoch, left.assigned,
            left.pending_revocation, left.subscription) == (LEAVE_EPOCH, LEAVE_EPOCH, {}, {},
                                                            _sub())
    # Its subscription's tombstone removes it; the target is its own key.
    group = replay(entries + [C.member_tombstone("g", "m1")]).consumer_groups["g"]
    assert "m1" not in group.current and "m1" not in group.subscriptions
    assert group.targets["m1"] == A1


def test_tombstones_of_the_group_level_records():
    entries = _join("g", "m1", 1, A1)
    group = replay(entries + [C.target_epoch_tombstone("g"),
                              C.partition_metadata_tombstone("g")]).consumer_groups["g"]
    assert (group.assignment_epoch, group.topics, group.group_epoch) == (-1, {}, 1)


def test_a_group_deleted_and_created_again():
    entries = _join("g", "m1", 1, A1) + _join("g", "m2", 2, A2)
    deleted = entries + C.group_tombstones("g", ["m1", "m2"])
    loaded = replay(deleted)
    assert loaded.consumer_groups == {} and loaded.group_ids() == set()
    # The group epoch's tombstone alone removes the whole group (Kafka would refuse it).
    assert replay(entries + [C.group_epoch_tombstone("g")]).consumer_groups == {}
    again = replay(deleted + [C.member_record("g", "m3", _sub())]).consumer_groups["g"]
    assert set(again.current) == {"m3"} and again.group_epoch == 0 and not again.targets


def test_tombstones_of_an_unknown_group_create_nothing():
    loaded = replay(C.group_tombstones("g", ["m1"]) + C.member_tombstones("h", "m"))
    assert loaded.consumer_groups == {} and loaded.group_ids() == set()


def test_classic_to_consumer_and_back():
    classic = _classic("g")
    # Upgrade, as Kafka writes it: the classic group's tombstone, then the consumer records.
    upgraded = classic + [(R.group_key("g"), None)] + _join("g", "m1", 1, A1)
    loaded = replay(upgraded)
    assert set(loaded.consumer_groups) == {"g"} and loaded.groups == {}
    # Downgrade: the consumer group's tombstones, then the classic group's record.
    downgraded = upgraded + C.group_tombstones("g", ["m1"]) + classic
    loaded = replay(downgraded)
    assert set(loaded.groups) == {"g"} and loaded.consumer_groups == {}
    assert loaded.groups["g"].members[0].member_id == "m"
    # A classic record replaces a consumer group even without its tombstones; a classic
    # tombstone removes it; a consumer record replaces a classic group.
    assert replay(_join("g", "m1", 1, A1) + classic).consumer_groups == {}
    gone = replay(_join("g", "m1", 1, A1) + [(R.group_key("g"), None)])
    assert gone.consumer_groups == {} and gone.groups == {}
    taken = replay(classic + [C.group_epoch_record("g", 7)])
    assert taken.groups == {} and taken.consumer_groups["g"].group_epoch == 7
    # A consumer tombstone does not touch a classic group.
    assert set(replay(classic + [C.group_epoch_tombstone("g")]).groups) == {"g"}


def test_offsets_stay_apart_and_other_record_types_are_skipped():
    offset = OffsetAndMetadata(5, -1, "", 1000)
    entries = ([(R.offset_key("g", "t", 0), R.offset_value(offset))]
               + _join("g", "m1", 1, A1)
               + [(b"\x00\x09\x00\x01s", b"\x00\x00\x00\x00\x00\x01\x00"),  # Kafka 4.0's type 9
                  (R.offset_key("only-offsets", "t", 0), R.offset_value(offset))])
    loaded = replay(entries)
    assert loaded.offsets["g"] == {("t", 0): offset}
    assert set(loaded.consumer_groups) == {"g"} and loaded.groups == {}
    assert loaded.group_ids() == {"g", "only-offsets"}


def test_a_restart_finds_what_was_written(tmp_path):
    clock = MockClock()
    log = Log.load(str(tmp_path / f"{OFFSETS_TOPIC}-0"), {"cleanup.policy": "compact"}, clock)
    partition = Partition(OFFSETS_TOPIC, 0, log, PartitionState(0, [0], 0, 0, [0]), 0)

    class Replicas:
        partitions = {(OFFSETS_TOPIC, 0): partition}

        def appended(self, key) -> None:
            pass

    store = GroupStore(Replicas(), clock)
    for batch in (_join("g", "m1", 1, A1), _join("g", "m2", 2, A2),
                  C.member_tombstones("g", "m1"), _join("h", "x", 9, A1),
                  C.group_tombstones("h", ["x"])):
        assert store.write(0, batch, for_offsets=False) == 0
    loaded = load_partition(log)
    assert set(loaded.consumer_groups) == {"g"}
    group = loaded.consumer_groups["g"]
    assert set(group.current) == {"m2"} and group.group_epoch == 2
    assert group.current["m2"] == _member("m2", 2, A2).with_(subscription=_sub())
