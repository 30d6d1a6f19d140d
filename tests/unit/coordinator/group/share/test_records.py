"""Share group records in ``__consumer_offsets`` (types 10-15): every change written and
read back as itself, Kafka's key and value layout, tombstones, and a load that replays a
partition's records into the same groups (``persistence.replay``)."""
from __future__ import annotations

import uuid

import pytest

from kafkapy.coordinator.group import records as classic
from kafkapy.coordinator.group.consumer.types import MemberState
from kafkapy.coordinator.group.persistence import replay
from kafkapy.coordinator.group.share import records as R
from kafkapy.coordinator.group.share.group import (CurrentAssigned, CurrentDeleted, GroupEpoch,
                                                  GroupEpochDeleted, MemberSubscribed,
                                                  MemberSubscriptionDeleted,
                                                  StatePartitionsDeleted, StatePartitionsSet,
                                                  TargetAssigned, TargetDeleted, TargetEpoch,
                                                  TargetEpochDeleted, group_deleted,
                                                  member_removed)
from kafkapy.coordinator.group.share.types import (InitTopic, ShareMember, ShareSubscription,
                                                  StatePartitions)

T1, T2 = uuid.UUID(int=0x11), uuid.UUID(int=0x22)
NOW = 1_700_000_000_000
SUBSCRIPTION = ShareSubscription("client", "/10.0.0.1", "rack-a", frozenset({"zeta", "alpha"}))
MEMBER = ShareMember("m1", member_epoch=4, previous_member_epoch=3,
                     assigned={T2: frozenset({1}), T1: frozenset({2, 0})})
PARTITIONS = StatePartitions(initializing={T2: InitTopic("t2", frozenset({1}), NOW)},
                             initialized={T1: InitTopic("t1", frozenset({0, 1}), NOW)},
                             deleting={uuid.UUID(int=0x33): "gone"})

CHANGES = [GroupEpoch(7, -123456789), MemberSubscribed("m1", SUBSCRIPTION),
           TargetEpoch(7), TargetAssigned("m1", {T1: frozenset({0, 2})}),
           CurrentAssigned(MEMBER), StatePartitionsSet(PARTITIONS),
           GroupEpochDeleted(), MemberSubscriptionDeleted("m1"), TargetEpochDeleted(),
           TargetDeleted("m1"), CurrentDeleted("m1"), StatePartitionsDeleted()]


@pytest.mark.parametrize("change", CHANGES, ids=lambda c: type(c).__name__)
def test_each_change_reads_back_as_itself(change):
    [(key, value)] = R.entries("g", [change])
    assert R.decode(key, value, NOW) == ("g", change)


def test_kafkas_key_and_value_layout():
    [(key, value)] = R.entries("g", [MemberSubscribed("m1", SUBSCRIPTION)])
    assert key == b"\x00\x0a" + b"\x00\x01g" + b"\x00\x02m1"   # type 10, group, member
    assert value[:2] == b"\x00\x00"                               # value version 0
    # names sorted as Java sorts them: alpha before zeta
    assert value.index(b"alpha") < value.index(b"zeta")
    [(key, value)] = R.entries("g", [GroupEpoch(1, 0)])
    assert key == b"\x00\x0b\x00\x01g" and value == b"\x00\x00" + b"\x00\x00\x00\x01" + bytes(8) + b"\x00"
    assert R.entries("g", [GroupEpochDeleted()]) == [(b"\x00\x0b\x00\x01g", None)]


def test_other_record_types_are_not_share_records():
    assert R.decode(classic.group_key("g"), None) is None
    assert R.decode(b"\x00\x09\x00\x01g", b"\x00\x00") is None      # Kafka 4.0's type 9
    assert R.decode(b"\x00\x03\x00\x01g", None) is None              # a consumer group's


def test_a_member_leaving_and_a_group_deleted_in_kafkas_order():
    assert [type(c).__name__ for c in member_removed("m")] == [
        "CurrentDeleted", "TargetDeleted", "MemberSubscriptionDeleted"]
    assert [type(c).__name__ for c in group_deleted(["a", "b"])] == [
        "CurrentDeleted", "CurrentDeleted", "TargetDeleted", "TargetDeleted",
        "TargetEpochDeleted", "MemberSubscriptionDeleted", "MemberSubscriptionDeleted",
        "StatePartitionsDeleted", "GroupEpochDeleted"]


def test_a_load_rebuilds_the_group():
    entries = R.entries("g", [GroupEpoch(3, 42), MemberSubscribed("m1", SUBSCRIPTION),
                              TargetAssigned("m1", {T1: frozenset({0})}), TargetEpoch(3),
                              CurrentAssigned(MEMBER.with_(assigned={T1: frozenset({0})})),
                              StatePartitionsSet(PARTITIONS)])
    loaded = replay(entries, now_ms=NOW + 5)
    assert set(loaded.share_groups) == {"g"} and loaded.group_ids() == {"g"}
    group = loaded.share_groups["g"]
    assert (group.group_epoch, group.metadata_hash, group.assignment_epoch) == (3, 42, 3)
    member = group.members["m1"]
    assert member.subscription == SUBSCRIPTION
    assert (member.member_epoch, member.previous_member_epoch, member.state, member.assigned) == (
        4, 3, MemberState.STABLE, {T1: frozenset({0})})
    # entries are stamped with the load's time, as Kafka's replay does
    assert group.state_partitions.initialized == {T1: InitTopic("t1", frozenset({0, 1}), NOW + 5)}
    assert group.initialized() == {T1: frozenset({0, 1})}


def test_a_member_that_left_and_a_deleted_group_are_gone_after_a_load():
    joined = R.entries("g", [GroupEpoch(1, 0), MemberSubscribed("m1", SUBSCRIPTION),
                             MemberSubscribed("m2", SUBSCRIPTION), CurrentAssigned(MEMBER)])
    left = replay(joined + R.entries("g", member_removed("m1")))
    assert set(left.share_groups["g"].members) == {"m2"}
    deleted = R.entries("g", group_deleted(["m2"]))
    assert replay(joined + R.entries("g", member_removed("m1")) + deleted).share_groups == {}


def test_share_and_classic_records_of_one_id():
    """The latest kind wins: a GroupMetadata record replaces a share group, a share record
    a classic group; a tombstone of a group that is not there is ignored."""
    share = R.entries("g", [GroupEpoch(1, 0)])
    value = classic.group_value(classic.StoredGroup("consumer", 1, "range", None, -1, []))
    as_classic = replay(share + [(classic.group_key("g"), value)])
    assert set(as_classic.groups) == {"g"} and as_classic.share_groups == {}
    as_share = replay([(classic.group_key("g"), value)] + share)
    assert as_share.groups == {} and set(as_share.share_groups) == {"g"}
    assert replay(R.entries("h", [StatePartitionsDeleted(), GroupEpochDeleted()])).share_groups == {}
