"""A share group's target (only initialized partitions, a record per changed member, then
the epoch), a member's immediate step to it (Kafka's ShareGroupAssignmentBuilder), and the
subscribed topics' metadata hash."""
from __future__ import annotations

import uuid

from kafkapy.coordinator.group.consumer.types import MemberState, TopicMetadata
from kafkapy.coordinator.group.share.assignor import SimpleAssignor
from kafkapy.coordinator.group.share.group import (CurrentAssigned, MemberSubscribed, ShareGroup,
                                                  StatePartitionsSet, TargetAssigned, TargetEpoch)
from kafkapy.coordinator.group.share.target import metadata_hash, reconcile, target_changes
from kafkapy.coordinator.group.share.types import (InitTopic, ShareMember, ShareSubscription,
                                                  StatePartitions)

T1, T2 = uuid.UUID(int=0x11), uuid.UUID(int=0x22)
TOPICS = {"t1": TopicMetadata(T1, "t1", 2), "t2": TopicMetadata(T2, "t2", 1)}


def _subscribed(*names) -> ShareSubscription:
    return ShareSubscription("c", "/h", None, frozenset(names))


def _group(initialized: dict) -> ShareGroup:
    group = ShareGroup("g")
    for member_id in ("a", "b"):
        group.apply(MemberSubscribed(member_id, _subscribed("t1")))
    group.apply(StatePartitionsSet(StatePartitions(initialized={
        t: InitTopic(n, frozenset(p)) for t, (n, p) in initialized.items()})))
    return group


def test_only_initialized_partitions_are_targeted():
    group = _group({})
    assert target_changes(group, 1, SimpleAssignor(), TOPICS) == [
        TargetAssigned("a", {}), TargetAssigned("b", {}), TargetEpoch(1)]
    for change in target_changes(group, 1, SimpleAssignor(), TOPICS):
        group.apply(change)
    group.apply(StatePartitionsSet(StatePartitions(initialized={
        T1: InitTopic("t1", frozenset({0, 1}))})))
    changes = target_changes(group, 2, SimpleAssignor(), TOPICS)
    assert changes[-1] == TargetEpoch(2)
    targets = {c.member_id: c.assignment for c in changes[:-1]}
    assert sorted(targets) == ["a", "b"]
    assert targets["a"][T1] | targets["b"][T1] == {0, 1}
    for change in changes:
        group.apply(change)
    assert target_changes(group, 3, SimpleAssignor(), TOPICS) == [TargetEpoch(3)]  # unchanged


def test_a_member_takes_its_target_at_once():
    member = ShareMember("a", _subscribed("t1"), member_epoch=1, previous_member_epoch=0)
    target = {T1: frozenset({0}), T2: frozenset({0})}
    moved = reconcile(member, 3, target, TOPICS, False)
    # filtered to its subscription, the previous epoch kept
    assert moved == member.with_(member_epoch=3, previous_member_epoch=1,
                                 assigned={T1: frozenset({0})})
    assert reconcile(moved, 3, target, TOPICS, False) is moved
    resubscribed = moved.with_(subscription=_subscribed("t1", "t2"))
    assert reconcile(resubscribed, 3, target, TOPICS, True).assigned == target
    unknown = moved.with_(state=MemberState.UNKNOWN)
    assert reconcile(unknown, 3, target, TOPICS, False).state is MemberState.UNKNOWN


def test_the_metadata_hash_follows_the_topics():
    assert metadata_hash([]) == 0
    base = metadata_hash(TOPICS.values())
    assert base == metadata_hash(reversed(list(TOPICS.values())))    # order does not matter
    grown = TopicMetadata(T1, "t1", 3)
    assert metadata_hash([grown, TOPICS["t2"]]) != base
    racked = TopicMetadata(T1, "t1", 2, {0: frozenset({"r1"})})
    assert metadata_hash([racked, TOPICS["t2"]]) != base
    assert -2**63 <= base < 2**63


def test_changes_apply_to_the_group():
    group = _group({T1: ("t1", {0})})
    group.apply(CurrentAssigned(ShareMember("a", member_epoch=2, assigned={T1: frozenset({0})})))
    assert group.members["a"].subscription == _subscribed("t1")       # kept
    assert group.state.value == "Stable" and group.subscribed_topic_names() == {"t1": 2}
