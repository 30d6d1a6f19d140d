"""The consumer group protocol in the group coordinator, driven by heartbeats over a real
``__consumer_offsets`` log on a mock clock: joins, incremental rebalances (revoke before
assign, never two owners), leaves, session and rebalance timeouts, static members, epoch
checks, offsets with member epochs, classic requests, and a reload from the log."""
from __future__ import annotations

import asyncio
from dataclasses import replace

import pytest

from kafkapy.coordinator.group.consumer.group import ConsumerGroup
from kafkapy.coordinator.group.consumer.types import (GroupState, HeartbeatRequest, MemberState,
                                                     STATIC_LEAVE_EPOCH, assignment)
from kafkapy.coordinator.group.offsets import OffsetAndMetadata
from kafkapy.jvm import java_hash_order, string_hash
from kafkapy.protocol.errors import ErrorCode as E
from tests.support.group_coordinator import Harness

pytestmark = pytest.mark.filterwarnings("ignore::DeprecationWarning")


@pytest.fixture
def h(tmp_path):
    harness = Harness(tmp_path)
    harness.tid = harness.topics.create("t", 6)
    return harness


def group(h, name="g") -> ConsumerGroup:
    return h.coordinator._groups[name]


def owners_are_unique(g: ConsumerGroup) -> None:
    seen = {}
    for m in g.members.values():
        for a in (m.assigned, m.pending_revocation):
            for t, ps in a.items():
                for p in ps:
                    assert (t, p) not in seen, f"{(t, p)} owned by {seen[(t, p)]} and {m.member_id}"
                    seen[(t, p)] = m.member_id


def settle(h, members: dict[str, int], rounds=10) -> dict[str, int]:
    """Heartbeat every member, reporting exactly what it owns, until all are stable;
    members: id -> epoch.  Checks after each heartbeat that no partition has two owners."""
    g = group(h)
    for _ in range(rounds):
        for member_id in list(members):
            m = g.members[member_id]
            owned = {t: ps for t, ps in m.assigned.items()}
            for t, ps in m.pending_revocation.items():
                owned[t] = owned.get(t, frozenset()) | ps
            # the client revokes what it was told to revoke before the next heartbeat
            owned = assignment((t, ps - m.pending_revocation.get(t, frozenset()))
                               for t, ps in owned.items())
            r = h.consumer_heartbeat(member_id, members[member_id], owned=owned)
            assert r.error == 0, r
            members[member_id] = r.member_epoch
            owners_are_unique(g)
        if g.state is GroupState.STABLE:
            return members
    raise AssertionError(f"not stable: {g.state}")


def test_a_first_member_gets_every_partition(h):
    r = h.consumer_heartbeat(topics=("t",))
    assert r.error == 0 and r.member_id and r.member_epoch == 1
    assert r.assignment == {h.tid: frozenset(range(6))}
    g = group(h)
    assert (g.group_epoch, g.assignment_epoch, g.state) == (1, 1, GroupState.STABLE)
    assert r.heartbeat_interval_ms == 5000


def test_a_second_member_gets_half_after_the_first_revokes(h):
    first = h.consumer_heartbeat(topics=("t",))
    second = h.consumer_heartbeat(topics=("t",))
    assert second.member_epoch == 2 or second.assignment == {}
    g = group(h)
    assert g.group_epoch == 2 and g.state is GroupState.RECONCILING
    # the first member is asked to revoke three partitions, keeping the others
    r = h.consumer_heartbeat(first.member_id, 1, owned={h.tid: frozenset(range(6))})
    m = g.members[first.member_id]
    assert m.state is MemberState.UNREVOKED_PARTITIONS and r.member_epoch == 1
    assert len(r.assignment[h.tid]) == 3
    members = settle(h, {first.member_id: 1, second.member_id: second.member_epoch})
    assert set(members.values()) == {2}
    sizes = sorted(len(g.members[i].assigned[h.tid]) for i in members)
    assert sizes == [3, 3]


def test_a_leaving_member_gives_its_partitions_to_the_others(h):
    a = h.consumer_heartbeat(topics=("t",))
    b = h.consumer_heartbeat(topics=("t",))
    members = settle(h, {a.member_id: 1, b.member_id: b.member_epoch})
    left = h.consumer_heartbeat(b.member_id, -1)
    assert (left.error, left.member_epoch) == (0, -1)
    g = group(h)
    assert b.member_id not in g.members and g.group_epoch == 3
    settle(h, {a.member_id: members[a.member_id]})
    assert g.members[a.member_id].assigned == {h.tid: frozenset(range(6))}


def test_a_member_whose_session_expires_is_fenced(h):
    a = h.consumer_heartbeat(topics=("t",))
    b = h.consumer_heartbeat(topics=("t",))
    h.advance(30_000)
    h.consumer_heartbeat(a.member_id, 1, owned={h.tid: frozenset(range(6))})
    h.advance(20_000)                      # b silent for 50 s > 45 s
    g = group(h)
    assert b.member_id not in g.members and a.member_id in g.members


def test_a_member_that_does_not_revoke_in_time_is_fenced(h):
    a = h.consumer_heartbeat(topics=("t",), rebalance_timeout_ms=10_000)
    h.consumer_heartbeat(topics=("t",))
    r = h.consumer_heartbeat(a.member_id, 1, owned={h.tid: frozenset(range(6))})
    assert group(h).members[a.member_id].state is MemberState.UNREVOKED_PARTITIONS
    assert r.error == 0
    h.advance(10_001)
    assert a.member_id not in group(h).members


def test_epochs_are_checked(h):
    a = h.consumer_heartbeat(topics=("t",))
    assert h.consumer_heartbeat(a.member_id, 5).error == E.FENCED_MEMBER_EPOCH
    assert h.consumer_heartbeat("nobody", 1).error == E.UNKNOWN_MEMBER_ID
    assert h.consumer_heartbeat("", 1).error == E.INVALID_REQUEST
    assert h.consumer_heartbeat(a.member_id, 1).error == 0
    assert h.consumer_heartbeat(topics=("t",), owned={h.tid: frozenset([1])}).error == \
        E.INVALID_REQUEST
    assert h.consumer_heartbeat(topics=("t",), server_assignor="sticky").error == \
        E.UNSUPPORTED_ASSIGNOR
    assert h.consumer_heartbeat("x", 1, group="unknown").error == E.GROUP_ID_NOT_FOUND


def test_a_heartbeat_at_the_previous_epoch_is_accepted_when_it_owns_no_more(h):
    """The answer that moved the member to its epoch was lost: it retries at the old one."""
    a = h.consumer_heartbeat(topics=("t",))
    b = h.consumer_heartbeat(topics=("t",))
    members = settle(h, {a.member_id: 1, b.member_id: b.member_epoch})
    m = group(h).members[a.member_id]
    assert m.previous_member_epoch == 1 and members[a.member_id] == 2
    assert h.consumer_heartbeat(a.member_id, 1, owned=m.assigned).error == 0
    assert h.consumer_heartbeat(a.member_id, 1,
                                owned={h.tid: frozenset(range(6))}).error == E.FENCED_MEMBER_EPOCH


def test_a_static_member_keeps_its_partitions_across_a_restart(h):
    a = h.consumer_heartbeat(topics=("t",), instance_id="i-1")
    b = h.consumer_heartbeat(topics=("t",), instance_id="i-2")
    members = settle(h, {a.member_id: 1, b.member_id: b.member_epoch})
    kept = group(h).members[a.member_id].assigned
    assert h.consumer_heartbeat(a.member_id, STATIC_LEAVE_EPOCH,
                                instance_id="i-1").member_epoch == STATIC_LEAVE_EPOCH
    # while it is away its instance id cannot be taken by a live member
    assert h.consumer_heartbeat(topics=("t",), instance_id="i-2").error == E.UNRELEASED_INSTANCE_ID
    back = h.consumer_heartbeat(topics=("t",), instance_id="i-1")
    assert back.error == 0 and back.member_id != a.member_id
    assert back.assignment == kept
    assert group(h).group_epoch == members[b.member_id]     # no rebalance
    assert h.consumer_heartbeat(a.member_id, 2, instance_id="i-1").error == \
        E.FENCED_INSTANCE_ID


def test_new_partitions_and_regex_subscriptions_trigger_a_new_target(h):
    a = h.consumer_heartbeat(topics=("t",))
    r = h.consumer_heartbeat(topics=None, subscribed_topic_regex="orders-.*")
    assert r.error == 0
    g = group(h)
    epoch = g.group_epoch
    uid = h.topics.create("orders-eu", 2)
    h.coordinator.consumer_topics_changed({"orders-eu"})
    h.topics.create("t", 8)
    h.coordinator.consumer_topics_changed({"t"})
    again = h.consumer_heartbeat(r.member_id, r.member_epoch, owned={})
    assert g.group_epoch == epoch + 1
    assert again.assignment.get(uid) == frozenset({0, 1})
    assert g.target(a.member_id) == {h.tid: frozenset(range(8))}


def test_an_invalid_regex_is_refused(h):
    r = h.consumer_heartbeat(topics=None, subscribed_topic_regex="orders-(")
    assert r.error == 128          # INVALID_REGULAR_EXPRESSION


def test_offset_commits_carry_the_member_epoch(h):
    a = h.consumer_heartbeat(topics=("t",))
    om = OffsetAndMetadata(5, -1, "", 0)
    c = h.coordinator
    assert c.commit_offsets("g", a.member_id, None, 1, {("t", 0): om}) == {("t", 0): 0}
    assert c.commit_offsets("g", a.member_id, None, 0, {("t", 0): om}) == {
        ("t", 0): E.STALE_MEMBER_EPOCH}
    assert c.commit_offsets("g", a.member_id, None, 1, {("t", 0): om}, api_version=8) == {
        ("t", 0): E.UNSUPPORTED_VERSION}
    assert c.commit_offsets("g", "nobody", None, 1, {("t", 0): om}) == {
        ("t", 0): E.UNKNOWN_MEMBER_ID}
    assert c.fetch_offsets("g", [("t", 0)], member_id=a.member_id, member_epoch=1)[1][0][1].offset == 5
    assert c.fetch_offsets("g", [("t", 0)], member_id=a.member_id, member_epoch=0)[0] == \
        E.STALE_MEMBER_EPOCH
    assert c.fetch_offsets("g", [("t", 0)])[0] == 0        # the admin client's fetch


def test_classic_requests_to_a_consumer_group(h):
    a = h.consumer_heartbeat(topics=("t",))
    # a classic member is served by the consumer group (test_migration.py); not with
    # metadata that is not the consumer protocol's, nor with another protocol type
    first = h.join(member_id="")[0]
    assert first.error == E.MEMBER_ID_REQUIRED
    assert h.join(member_id=first.member_id)[0].error == E.UNKNOWN
    assert h.join(member_id="", protocol_type="connect")[0].error == \
        E.INCONSISTENT_GROUP_PROTOCOL
    assert h.heartbeat(a.member_id, 1) == E.UNKNOWN_MEMBER_ID
    assert h.coordinator.leave("g", [(a.member_id, None)]) == (0, [E.UNKNOWN_MEMBER_ID])
    summary = h.coordinator.describe_group("g")
    assert (summary.state, summary.protocol_type, summary.protocol) == (
        "Stable", "consumer", "uniform")
    assert [m.member_id for m in summary.members] == [a.member_id]
    error, overview = h.coordinator.list_groups(types=["consumer"])
    assert [(o.group_id, o.group_type, o.state) for o in overview] == [("g", "consumer", "Stable")]
    assert h.coordinator.list_groups(types=["classic"])[1] == []
    assert h.coordinator.delete_groups(["g"]) == {"g": E.NON_EMPTY_GROUP}
    h.consumer_heartbeat(a.member_id, -1)
    assert h.coordinator.delete_groups(["g"]) == {"g": 0}
    assert "g" not in h.coordinator._groups


def test_an_empty_classic_group_becomes_a_consumer_group_with_its_offsets(h):
    om = OffsetAndMetadata(7, -1, "", 0)
    assert h.coordinator.commit_offsets("g", "", None, -1, {("t", 1): om}) == {("t", 1): 0}
    r = h.consumer_heartbeat(topics=("t",))
    assert r.error == 0 and isinstance(group(h), ConsumerGroup)
    assert h.coordinator.fetch_offsets("g", [("t", 1)])[1][0][1].offset == 7


def test_describe_consumer_groups(h):
    a = h.consumer_heartbeat(topics=("t",), rack_id="r1")
    [d] = h.coordinator.describe_consumer_groups(["g"])
    assert (d.error, d.state, d.group_epoch, d.assignment_epoch, d.assignor_name) == (
        0, "Stable", 1, 1, "uniform")
    [m] = d.members
    assert (m.member_id, m.rack_id, m.member_epoch, m.subscribed_topic_names, m.member_type) == (
        a.member_id, "r1", 1, ("t",), 1)
    assert m.assigned == m.target == {h.tid: frozenset(range(6))}
    h.join(group="classic")
    assert h.coordinator.describe_consumer_groups(["classic", "none"])[0].error == \
        E.GROUP_ID_NOT_FOUND


def test_a_reloaded_coordinator_has_the_same_groups(h):
    a = h.consumer_heartbeat(topics=("t",))
    b = h.consumer_heartbeat(topics=("t",), instance_id="i")
    members = settle(h, {a.member_id: 1, b.member_id: b.member_epoch})
    before = group(h)
    snapshot = (before.group_epoch, before.assignment_epoch, dict(before.members),
                dict(before.targets), dict(before.partition_epochs), dict(before.static_members))
    h.restart()
    after = group(h)
    assert (after.group_epoch, after.assignment_epoch, dict(after.members), dict(after.targets),
            dict(after.partition_epochs), dict(after.static_members)) == snapshot
    # and it goes on from there: the members heartbeat at their epochs
    assert h.consumer_heartbeat(a.member_id, members[a.member_id]).error == 0


def test_requests_are_checked_before_routing(h):
    """Kafka 4.x: from v1 a join names its member id; an empty group id is an invalid
    request, not an unknown coordinator."""
    join = HeartbeatRequest(group_id="g", member_id="", member_epoch=0, client_id="c",
                            client_host="/h", version=1, rebalance_timeout_ms=1000,
                            subscribed_topic_names=("t",), owned={})
    r = asyncio.run(h.coordinator.consumer_heartbeat(join))
    assert (r.error, r.message) == (E.INVALID_REQUEST, "MemberId can't be empty.")
    v0 = asyncio.run(h.coordinator.consumer_heartbeat(replace(join, version=0)))
    assert v0.error == 0 and v0.member_id and len(v0.member_id) == 22    # Kafka's Uuid text
    unnamed = asyncio.run(h.coordinator.consumer_heartbeat(replace(join, group_id="",
                                                                   member_id="m")))
    assert (unnamed.error, unnamed.message) == (E.INVALID_REQUEST, "GroupId can't be empty.")


def test_a_member_is_described_as_kafka_keeps_it(h):
    """Subscribed topic names in Kafka's HashSet order, no regex as Kafka's default ""."""
    names = tuple(f"topic-{i}" for i in range(14))
    for name in names:
        h.topics.create(name, 1)
    h.consumer_heartbeat(topics=names)
    [d] = h.coordinator.describe_consumer_groups(["g"])
    [m] = d.members
    assert m.subscribed_topic_regex == ""
    # new HashSet<>(14 names): 32 buckets, as adding them one by one would give
    assert m.subscribed_topic_names == tuple(java_hash_order(sorted(names), string_hash))
    assert list(m.subscribed_topic_names) != sorted(names)
