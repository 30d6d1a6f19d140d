"""Kafka's ``simple`` share group assignor: a partition shared when members outnumber
partitions, balance (counts differ by at most one), stickiness, heterogeneous
subscriptions balanced topic by topic, and only assignable partitions assigned."""
from __future__ import annotations

import uuid

import pytest

from kafkapy.coordinator.group.consumer.types import MemberSpec, TopicMetadata
from kafkapy.coordinator.group.share.assignor import SimpleAssignor

T1, T2 = uuid.UUID(int=0x11), uuid.UUID(int=0x22)
TOPICS = {T1: TopicMetadata(T1, "t1", 4), T2: TopicMetadata(T2, "t2", 2)}
ASSIGNOR = SimpleAssignor()


def _spec(*topics, assigned=None) -> MemberSpec:
    return MemberSpec(None, frozenset(topics), assigned or {})


def _assign(members, topics=TOPICS, homogeneous=True, assignable=None):
    return ASSIGNOR.assign(members, topics, homogeneous=homogeneous, assignable=assignable)


def _counts(result, topic_id=T1) -> dict[int, int]:
    """How many members hold each partition of the topic."""
    counts: dict[int, int] = {}
    for target in result.values():
        for p in target.get(topic_id, ()):
            counts[p] = counts.get(p, 0) + 1
    return counts


def test_five_members_share_one_partition():
    one = {T1: TopicMetadata(T1, "t1", 1)}
    result = _assign({f"m{i}": _spec(T1) for i in range(5)}, one)
    assert result == {f"m{i}": {T1: frozenset({0})} for i in range(5)}


def test_two_members_split_four_partitions():
    result = _assign({"a": _spec(T1), "b": _spec(T1)})
    assert sorted(len(r[T1]) for r in result.values()) == [2, 2]
    assert result["a"][T1] | result["b"][T1] == {0, 1, 2, 3}
    assert not result["a"][T1] & result["b"][T1]


@pytest.mark.parametrize("members,partitions", [(3, 4), (3, 7), (6, 4), (7, 3), (1, 5), (4, 4)])
def test_balanced_and_every_partition_covered_evenly(members, partitions):
    topics = {T1: TopicMetadata(T1, "t1", partitions)}
    result = _assign({f"m{i}": _spec(T1) for i in range(members)}, topics)
    sizes = [len(r.get(T1, ())) for r in result.values()]
    assert max(sizes) - min(sizes) <= 1
    sharing = -(-members // partitions)          # ceil
    assert set(_counts(result)) == set(range(partitions))
    assert set(_counts(result).values()) == {sharing}
    assert sum(sizes) == sharing * partitions


def test_a_joining_member_takes_only_from_the_overfull():
    before = _assign({"a": _spec(T1), "b": _spec(T1)})
    after = _assign({"a": _spec(T1, assigned=before["a"]), "b": _spec(T1, assigned=before["b"]),
                     "c": _spec(T1)})
    assert sorted(len(r[T1]) for r in after.values()) == [1, 1, 2]
    for m in ("a", "b"):        # sticky: each keeps part of what it had, takes nothing new
        assert after[m][T1] <= before[m][T1]
    assert after["c"][T1] and not after["c"][T1] & (after["a"][T1] | after["b"][T1])


def test_a_departed_members_partitions_go_to_those_left():
    before = _assign({f"m{i}": _spec(T1) for i in range(4)})
    after = _assign({m: _spec(T1, assigned=before[m]) for m in ("m0", "m1")})
    assert after["m0"][T1] >= before["m0"][T1] and after["m1"][T1] >= before["m1"][T1]
    assert after["m0"][T1] | after["m1"][T1] == {0, 1, 2, 3}


def test_an_unchanged_group_keeps_its_assignment():
    members = {f"m{i}": _spec(T1, T2) for i in range(3)}
    first = _assign(members)
    again = _assign({m: _spec(T1, T2, assigned=first[m]) for m in members})
    assert again == first


def test_heterogeneous_subscriptions_balance_topic_by_topic():
    result = _assign({"a": _spec(T1), "b": _spec(T2), "c": _spec(T1, T2)}, homogeneous=False)
    assert set(result["a"]) == {T1} and set(result["b"]) == {T2}
    assert len(result["a"][T1]) == 2 and len(result["c"][T1]) == 2
    assert len(result["b"][T2]) == 1 and len(result["c"][T2]) == 1
    assert _counts(result, T1) == {p: 1 for p in range(4)}
    assert _counts(result, T2) == {0: 1, 1: 1}


def test_an_unsubscribed_topic_leaves_the_target():
    held = {T1: frozenset({0, 1}), T2: frozenset({0, 1})}
    result = _assign({"a": _spec(T1, assigned=held)})
    assert result == {"a": {T1: frozenset({0, 1, 2, 3})}}


def test_only_assignable_partitions_are_assigned():
    members = {"a": _spec(T1), "b": _spec(T1)}
    assert _assign(members, assignable={}) == {"a": {}, "b": {}}
    result = _assign(members, assignable={T1: frozenset({1, 3})})
    assert sorted(p for r in result.values() for p in r[T1]) == [1, 3]
    held = {T1: frozenset({0, 1})}      # a held partition that is not assignable is dropped
    assert _assign({"a": _spec(T1, assigned=held)}, assignable={T1: frozenset({1})}) == \
        {"a": {T1: frozenset({1})}}


def test_no_members_or_no_topics():
    assert _assign({}) == {}
    assert _assign({"a": _spec()}) == {"a": {}}
    assert _assign({"a": _spec(uuid.UUID(int=9))}) == {"a": {}}   # a topic without metadata
