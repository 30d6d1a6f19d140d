"""The ``range`` assignor (kafkapy/coordinator/group/consumer/range.py).

1. Same answers as Kafka's own RangeAssignor (``tests/support/assignors.py``) over a few
   hundred random groups, homogeneous and heterogeneous, with static members (instance
   ids), member ids beyond ASCII (``String.compareTo`` on UTF-16 units), and next steps
   of each group: Kafka 3.9's jar (its RangeAssignor is 4.0's), and Kafka 4.0's source
   through its recorded answers (``tests/support/assignors.py`` records them again).
2. Properties (hypothesis): every partition of a subscribed topic goes to exactly one of
   its subscribers, as one contiguous range per member whose sizes differ by at most one,
   ranges rising in member order; same partition numbers of every topic for every member
   when co-partitioning is possible; the answer ignores current targets and racks; a
   static member keeps its ranges under a new member id.
3. Scale: 1,000 members over 10,000 partitions.
"""
from __future__ import annotations

import random
import uuid
from dataclasses import replace

from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from kafkapy.coordinator.group.consumer.assignor import ASSIGNORS
from kafkapy.coordinator.group.consumer.types import MemberSpec, TopicMetadata
from tests.support.assignors import (Case, check_assigned_once, groups, member_spec, mismatches,
                                     random_case, range_cases, recorded, recorded_mismatches)

RANGE = ASSIGNORS["range"]
ORACLE_CASES = 300


def _assign(case: Case):
    return RANGE.assign(case.specs(), case.topic_map)


# -- 1. Kafka's answers ----------------------------------------------------------------------
def test_groups_match_kafka_39(kafka39_assignors):
    cases = range_cases(11)
    assert sum(c.homogeneous for c in cases) > 50 and sum(not c.homogeneous for c in cases) > 50
    assert sum(m.instance_id is not None for c in cases for m in c.members) > 100
    assert mismatches(kafka39_assignors, cases, RANGE) == []


def test_groups_match_kafka_40():
    assert len(recorded("range")) >= ORACLE_CASES
    assert recorded_mismatches("range", RANGE) == []


# -- 2. properties ---------------------------------------------------------------------------
_SETTINGS = settings(max_examples=200, deadline=None, derandomize=True,
                     suppress_health_check=[HealthCheck.too_slow])


def _sort_key(member_id: str, spec) -> tuple:
    instance = getattr(spec, "instance_id", None)
    text = instance if instance is not None else member_id
    return (instance is None, text.encode("utf-16-be", "surrogatepass"))


@_SETTINGS
@given(groups())
def test_each_subscriber_gets_one_contiguous_range_in_member_order(case):
    specs, topics = case.specs(), case.topic_map
    result = RANGE.assign(specs, topics)
    check_assigned_once(result, specs, topics)
    order = sorted(specs, key=lambda m: _sort_key(m, specs[m]))
    for topic_id, topic in topics.items():
        subscribers = [m for m in order if topic_id in specs[m].subscribed_topic_ids]
        if not subscribers:
            continue
        ranges = [sorted(result[m].get(topic_id, ())) for m in subscribers]
        assert [p for r in ranges for p in r] == list(range(topic.num_partitions))
        sizes = [len(r) for r in ranges]
        assert max(sizes) - min(sizes) <= 1 and sizes == sorted(sizes, reverse=True)


@_SETTINGS
@given(groups(homogeneous=True), st.integers(1, 40))
def test_co_partitioned_when_topics_have_equal_counts(case, count):
    case = replace(case, topics=tuple(replace(t, num_partitions=count) for t in case.topics))
    for assigned in _assign(case).values():
        numbers = {frozenset(ps) for ps in assigned.values()}
        assert len(numbers) <= 1
        assert len(assigned) in (0, len(case.members[0].topics))


@_SETTINGS
@given(groups())
def test_current_targets_and_racks_do_not_matter(case):
    specs = case.specs()
    bare = {m: MemberSpec("rack-x", s.subscribed_topic_ids, {}) for m, s in specs.items()}
    assert RANGE.assign(specs, case.topic_map) == RANGE.assign(bare, case.topic_map)


def test_a_static_member_keeps_its_ranges_under_a_new_member_id():
    rng = random.Random(13)
    for _ in range(100):
        case = random_case(rng, homogeneous=rng.random() < 0.5, prior=False, static=True)
        static = [m for m in case.members if m.instance_id is not None]
        if not static:
            continue
        before = _assign(case)
        rejoined = replace(static[0], member_id=f"new-{static[0].member_id}")
        after = _assign(replace(case, members=tuple(rejoined if m is static[0] else m
                                                    for m in case.members)))
        assert after[rejoined.member_id] == before[static[0].member_id]


def test_static_members_come_first_by_instance_id():
    topic = TopicMetadata(uuid.uuid4(), "t", 6)
    subscribed = frozenset({topic.topic_id})
    specs = {"a": member_spec(subscribed, {}), "b": member_spec(subscribed, {}, instance_id="z"),
             "c": member_spec(subscribed, {}, instance_id="y")}
    result = RANGE.assign(specs, {topic.topic_id: topic})
    assert [sorted(result[m][topic.topic_id]) for m in ("c", "b", "a")] == [[0, 1], [2, 3], [4, 5]]


def test_more_members_than_partitions():
    topic = TopicMetadata(uuid.uuid4(), "t", 2)
    specs = {m: MemberSpec(None, frozenset({topic.topic_id}), {}) for m in ("a", "b", "c")}
    assert RANGE.assign(specs, {topic.topic_id: topic}) == {
        "a": {topic.topic_id: frozenset({0})}, "b": {topic.topic_id: frozenset({1})}, "c": {}}


# -- 3. scale --------------------------------------------------------------------------------
def test_a_thousand_members_over_ten_thousand_partitions():
    rng = random.Random(14)
    topics = {t.topic_id: t for t in (TopicMetadata(uuid.UUID(int=rng.getrandbits(128) | 1),
                                                    f"topic-{i}", 1000) for i in range(10))}
    ids = list(topics)
    for subscribe in (lambda: ids, lambda: rng.sample(ids, rng.randint(1, len(ids)))):
        specs = {f"member-{i:04d}": MemberSpec(None, frozenset(subscribe()), {}) for i in range(1000)}
        check_assigned_once(RANGE.assign(specs, topics), specs, topics)
