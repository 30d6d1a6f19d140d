"""The ``uniform`` assignor (kafkapy/coordinator/group/consumer/uniform.py).

1. Same answers as Kafka's own UniformAssignor (``tests/support/assignors.py`` runs it in
   one JVM over a few hundred random groups: 1 to 30 members, 1 to 17 topics of 0 to 257
   partitions, random current targets with partitions held by unsubscribed members or
   nobody, and next steps of each group with members joining, leaving and changing
   subscriptions):
   - Kafka 4.0's source: every case, against its recorded answers
     (``tests/support/assignors.py`` records them again from a Kafka source tree).
   - Kafka 3.9's jar: its homogeneous builder is 4.0's, so every homogeneous case; its
     heterogeneous builder is the one 4.0 replaced, which answers differently in most
     groups, so only the cases both agree on by construction: every topic has at most one
     subscriber (it takes the whole topic), and current targets that are complete, held
     by subscribers only and within one partition of each other (nothing moves).
2. Properties over random groups (hypothesis): every partition of a subscribed topic
   goes to exactly one of its subscribers; homogeneous groups are balanced to one
   partition; an unchanged group keeps its target; when members join or leave a
   homogeneous group, each remaining member keeps at least ``min(held, P // M)`` of its
   partitions.
3. Scale: 1,000 members over 10,000 partitions, homogeneous and heterogeneous, from
   nothing and after a member joins (the builders are O((P + M) log(P + M)) per round).
"""
from __future__ import annotations

import random
import uuid
from dataclasses import replace

from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from kafkapy.coordinator.group.consumer.assignor import ASSIGNORS
from kafkapy.coordinator.group.consumer.types import MemberSpec, TopicMetadata
from tests.support.assignors import (Case, check_assigned_once, evolve, groups, mismatches,
                                     random_case, recorded, recorded_mismatches, uniform_cases)

UNIFORM = ASSIGNORS["uniform"]
ORACLE_CASES = 300


def _assign(case: Case):
    return UNIFORM.assign(case.specs(), case.topic_map)


# -- 1. Kafka's answers ----------------------------------------------------------------------
def test_homogeneous_groups_match_kafka_39(kafka39_assignors):
    cases = uniform_cases(1, homogeneous=True)
    assert len(cases) >= ORACLE_CASES
    assert mismatches(kafka39_assignors, cases, UNIFORM) == []


def test_homogeneous_groups_match_kafka_40():
    assert len(recorded("uniform-homogeneous")) >= ORACLE_CASES
    assert recorded_mismatches("uniform-homogeneous", UNIFORM) == []


def test_heterogeneous_groups_match_kafka_40():
    cases = recorded("uniform-heterogeneous")
    assert len(cases) >= ORACLE_CASES * 9 // 10
    assert not any(case.homogeneous for case, _ in cases)
    assert recorded_mismatches("uniform-heterogeneous", UNIFORM) == []


def _single_subscriber_case(rng: random.Random) -> Case:
    case = random_case(rng, homogeneous=False, prior=rng.random() < 0.5)
    names = [t.name for t in case.topics]
    owners = {n: rng.choice(case.members).member_id for n in names if rng.random() < 0.8}
    return replace(case, members=tuple(
        replace(m, topics=tuple(n for n, owner in owners.items() if owner == m.member_id))
        for m in case.members))


def _settled_case(rng: random.Random) -> Case | None:
    """A heterogeneous group whose current targets (kafkapy's answer for it) are within
    one partition of each other, or None."""
    case = random_case(rng, homogeneous=False, prior=False)
    targets = _assign(case)
    counts = [sum(len(p) for p in a.values()) for a in targets.values()]
    return case.with_targets(targets) if max(counts) - min(counts) <= 1 else None


def test_heterogeneous_groups_match_kafka_39_where_39_and_40_agree(kafka39_assignors):
    rng = random.Random(4)
    single = [c for c in (_single_subscriber_case(rng) for _ in range(150)) if not c.homogeneous]
    settled: list[Case] = []
    while len(settled) < 150:
        settled += [c for c in [_settled_case(rng)] if c is not None and not c.homogeneous]
    assert len(single) > 100
    assert mismatches(kafka39_assignors, single + settled, UNIFORM) == []


# -- 2. properties ---------------------------------------------------------------------------
_SETTINGS = settings(max_examples=200, deadline=None, derandomize=True,
                     suppress_health_check=[HealthCheck.too_slow])


@_SETTINGS
@given(groups())
def test_every_subscribed_partition_goes_to_one_subscriber(case):
    specs, topics = case.specs(), case.topic_map
    result = UNIFORM.assign(specs, topics)
    check_assigned_once(result, specs, topics)


@_SETTINGS
@given(groups(homogeneous=True))
def test_homogeneous_groups_are_balanced_to_one_partition(case):
    counts = [sum(len(p) for p in a.values()) for a in _assign(case).values()]
    assert max(counts) - min(counts) <= 1


@_SETTINGS
@given(groups())
def test_an_unchanged_group_keeps_its_target(case):
    first = _assign(case)
    assert _assign(case.with_targets(first)) == first


@_SETTINGS
@given(groups(homogeneous=True), st.randoms(use_true_random=False))
def test_members_joining_or_leaving_move_only_what_balance_needs(case, rng):
    """Each remaining member keeps ``min(held, P // M)`` partitions of its own."""
    before = _assign(case)
    after_case = evolve(rng, case, before, homogeneous=True)
    after = _assign(after_case)
    total = sum(t.num_partitions for t in case.topics
                if t.name in case.members[0].topics)
    floor = total // len(after_case.members)
    for member_id, now in after.items():
        held = before.get(member_id, {})
        kept = sum(len(ps & now.get(t, frozenset())) for t, ps in held.items())
        assert kept >= min(sum(len(ps) for ps in held.values()), floor), member_id


def test_rack_ids_change_nothing():
    rng = random.Random(6)
    for _ in range(50):
        case = random_case(rng, homogeneous=rng.random() < 0.5, prior=True)
        specs = case.specs()
        no_racks = {m: MemberSpec(None, s.subscribed_topic_ids, s.assigned) for m, s in specs.items()}
        assert UNIFORM.assign(specs, case.topic_map) == UNIFORM.assign(no_racks, case.topic_map)


def test_unknown_topics_and_partitions_are_ignored():
    topic, gone = TopicMetadata(uuid.uuid4(), "a", 4), uuid.uuid4()
    specs = {"m1": MemberSpec(None, frozenset({topic.topic_id, gone}),
                              {topic.topic_id: frozenset({0, 9}), gone: frozenset({1})}),
             "m2": MemberSpec(None, frozenset({topic.topic_id}), {})}
    result = UNIFORM.assign(specs, {topic.topic_id: topic})
    assert {p for a in result.values() for p in a.get(topic.topic_id, ())} == {0, 1, 2, 3}
    assert all(set(a) <= {topic.topic_id} for a in result.values())
    assert 0 in result["m1"][topic.topic_id]


# -- 3. scale --------------------------------------------------------------------------------
def _large_group(rng: random.Random, members: int, subscribe) -> tuple[dict, dict]:
    topics = {t.topic_id: t for t in (TopicMetadata(uuid.UUID(int=rng.getrandbits(128) | 1),
                                                    f"topic-{i}", 1000) for i in range(10))}
    ids = list(topics)
    specs = {f"member-{i:04d}": MemberSpec(None, frozenset(subscribe(rng, ids)), {})
             for i in range(members)}
    return specs, topics


def test_a_thousand_members_over_ten_thousand_partitions():
    rng = random.Random(8)
    for subscribe in (lambda r, ids: ids, lambda r, ids: r.sample(ids, r.randint(1, len(ids)))):
        specs, topics = _large_group(rng, 1000, subscribe)
        first = UNIFORM.assign(specs, topics)
        check_assigned_once(first, specs, topics)
        joined = {m: MemberSpec(None, s.subscribed_topic_ids, first[m]) for m, s in specs.items()}
        joined["member-new"] = MemberSpec(None, frozenset(topics), {})
        second = UNIFORM.assign(joined, topics)
        check_assigned_once(second, joined, topics)
        assert sum(len(p) for p in second["member-new"].values()) > 0
