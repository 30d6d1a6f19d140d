"""Online migration between the classic and the consumer group protocols
(``group.consumer.migration.policy``), on the coordinator harness: a real
``__consumer_offsets`` log, a mock clock, classic members that send real consumer-protocol
metadata and assignments (``consumer.embedded``'s encoders, checked against Kafka's own in
test_embedded.py).

- upgrade: three classic members, then a member of the consumer protocol joins: the group
  becomes a consumer group holding the classic members at their generation with their
  assignments; a classic member parked in a join is told REBALANCE_IN_PROGRESS;
- the classic members heartbeat REBALANCE_IN_PROGRESS, rejoin (generation = member epoch)
  and sync their target; a cooperative member revoking first, a member waiting for a
  partition another still owns; no partition ever has two owners;
- join, sync and session deadlines of classic members fence them;
- classic LeaveGroup; offsets committed with the member epoch as generation;
- downgrade when the last consumer member leaves, is fenced, or (static) is replaced by a
  classic member; the classic group rebalances and its members keep their partitions;
- policies that forbid a direction answer as Kafka does (GROUP_ID_NOT_FOUND, no downgrade);
- a coordinator reloading the log mid-migration (either way) has the same group.
"""
from __future__ import annotations

import pytest

from kafkapy.coordinator.group.consumer.embedded import (assignment_bytes, decode_assignment,
                                                        subscription_bytes)
from kafkapy.coordinator.group.consumer.group import ConsumerGroup
from kafkapy.coordinator.group.consumer.settings import ConsumerSettings
from kafkapy.coordinator.group.consumer.types import GroupState, MemberState
from kafkapy.coordinator.group.group import GroupMetadata
from kafkapy.coordinator.group.group import GroupState as ClassicState
from kafkapy.coordinator.group.offsets import OffsetAndMetadata
from kafkapy.protocol.errors import ErrorCode as E
from tests.support.group_coordinator import REBALANCE, SESSION, Harness

pytestmark = pytest.mark.filterwarnings("ignore::DeprecationWarning")

SPLIT = ((0, 1), (2, 3), (4, 5))


def make(tmp_path, policy="bidirectional", **settings) -> Harness:
    h = Harness(tmp_path, ConsumerSettings(migration_policy=policy), **settings)
    h.tid = h.topics.create("t", 6)
    return h


@pytest.fixture
def h(tmp_path):
    return make(tmp_path)


def protocols(owned=None, version=3, names=("range", "cooperative-sticky")):
    data = subscription_bytes(["t"], None, owned or {}, -1, version)
    return [(name, data) for name in names]


def group(h) -> ConsumerGroup | GroupMetadata:
    return h.coordinator._groups["g"]


def classic_group(h, n=3, **kw) -> list[str]:
    """n classic members, Stable at generation 1, member i assigned SPLIT[i] of t."""
    pending = [h.first_join(protocols=protocols(), **kw) for _ in range(n)]
    h.advance(0)
    results = [p[0] for p in pending]
    assert all(r.error == 0 and r.generation == 1 for r in results)
    ids = [r.member_id for r in results]
    leader = next(r for r in results if r.member_id == r.leader_id)
    assignments = {m: assignment_bytes({"t": SPLIT[i]}) for i, m in enumerate(ids)}
    followers = [h.sync(m, 1) for m in ids if m != leader.member_id]
    assert h.sync(leader.member_id, 1, assignments)[0].error == 0
    assert all(f[0].error == 0 for f in followers)
    assert h.state() is ClassicState.STABLE
    return ids


def owners_are_unique(g: ConsumerGroup) -> None:
    seen = {}
    for m in g.members.values():
        for a in (m.assigned, m.pending_revocation):
            for t, ps in a.items():
                for p in ps:
                    assert (t, p) not in seen, f"{p} owned by {seen[(t, p)]} and {m.member_id}"
                    seen[(t, p)] = m.member_id


def synced_partitions(h, member_id, generation) -> set[int]:
    [r] = h.sync(member_id, generation, protocol_type="consumer", protocol_name="range")
    assert r.error == 0, r
    return {p for topic, ps in decode_assignment(r.assignment) for p in ps if topic == "t"}


def rejoin(h, member_id, owned=None):
    [r] = h.join(member_id=member_id, protocols=protocols(owned))
    return r


def consumer_settle(h, member_id, epoch) -> int:
    """The consumer member heartbeats, reporting what it owns, until it is stable."""
    for _ in range(5):
        m = group(h).members[member_id]
        r = h.consumer_heartbeat(member_id, epoch, owned=m.assigned)
        assert r.error == 0, r
        epoch = r.member_epoch
        if group(h).members[member_id].state is MemberState.STABLE:
            return epoch
    raise AssertionError("consumer member not stable")


def upgraded(h) -> tuple[list[str], str]:
    """Three classic members, then a consumer member joins: (classic ids, consumer id)."""
    ids = classic_group(h)
    r = h.consumer_heartbeat(topics=("t",))
    assert r.error == 0, r
    return ids, r.member_id


def migrated(h) -> tuple[list[str], str]:
    """upgraded, then every classic member rejoins and syncs and the consumer member
    takes its partitions: a Stable consumer group at epoch 2."""
    ids, new = upgraded(h)
    for member_id in ids:
        assert rejoin(h, member_id).generation == 2
        synced_partitions(h, member_id, 2)
    consumer_settle(h, new, 2)
    assert group(h).state is GroupState.STABLE
    return ids, new


# -- upgrade ------------------------------------------------------------------------------------
def test_a_consumer_member_joining_converts_the_classic_group(h):
    ids = classic_group(h)
    r = h.consumer_heartbeat(topics=("t",))
    assert r.error == 0 and r.member_epoch == 2
    g = group(h)
    assert isinstance(g, ConsumerGroup)
    assert (g.group_epoch, g.assignment_epoch) == (2, 2)
    assert len(g.members) == 4 and r.member_id in g.members
    for i, member_id in enumerate(ids):
        m = g.members[member_id]
        assert m.uses_classic_protocol and m.subscription.classic.session_timeout_ms == SESSION
        assert [p.name for p in m.subscription.classic.protocols] == ["range",
                                                                        "cooperative-sticky"]
        assert m.subscription.topic_names == ("t",)
        assert m.subscription.rebalance_timeout_ms == REBALANCE
        assert (m.member_epoch, m.state) == (1, MemberState.STABLE)
        assert m.assigned == {h.tid: frozenset(SPLIT[i])}
    # the new target splits the six partitions four ways; the newcomer waits for them
    targets = [g.target(m) for m in g.members]
    assert sorted(len(t.get(h.tid, ())) for t in targets) == [1, 1, 2, 2]
    assert set().union(*(t.get(h.tid, frozenset()) for t in targets)) == set(range(6))
    assert g.members[r.member_id].state is MemberState.UNRELEASED_PARTITIONS
    assert r.assignment == {}
    owners_are_unique(g)
    # the offsets stay with the group id
    om = OffsetAndMetadata(3, -1, "", 0)
    assert h.coordinator.commit_offsets("g", ids[0], None, 1, {("t", 0): om},
                                        api_version=8) == {("t", 0): 0}
    assert h.coordinator.commit_offsets("g", ids[0], None, 0, {("t", 0): om},
                                        api_version=8) == {("t", 0): E.ILLEGAL_GENERATION}
    error, overview = h.coordinator.list_groups()
    assert [(o.group_id, o.group_type) for o in overview] == [("g", "consumer")]


def test_a_classic_member_parked_in_a_join_is_told_to_rejoin(h):
    ids = classic_group(h)
    # new metadata: a rebalance, the join parked until the others rejoin
    parked = h.join(member_id=ids[1], protocols=protocols({"t": SPLIT[1]}))
    assert parked == [] and h.state() is ClassicState.PREPARING_REBALANCE
    assert h.consumer_heartbeat(topics=("t",)).error == 0
    assert [(r.error, r.member_id) for r in parked] == [(E.REBALANCE_IN_PROGRESS, ids[1])]
    # the classic group's rebalance deadline (30 s) went with it: nothing is removed, and
    # no classic group record is written over the consumer group's
    h.advance(5000)
    for _ in range(5):                  # their own join deadlines: 30 s from t = 5 s
        assert all(h.heartbeat(m, 1) == E.REBALANCE_IN_PROGRESS for m in ids)
        h.advance(5000)
    h.advance(1000)
    assert len(group(h).members) == 4
    h.restart()
    assert isinstance(group(h), ConsumerGroup) and len(group(h).members) == 4


def test_classic_members_rejoin_and_sync_their_target(h):
    ids, new = upgraded(h)
    g = group(h)
    for member_id in ids:
        assert h.heartbeat(member_id, 1) == E.REBALANCE_IN_PROGRESS
        assert h.heartbeat(member_id, 2) == E.ILLEGAL_GENERATION
    for member_id in ids:
        r = rejoin(h, member_id)                       # eager: it revoked everything
        assert (r.error, r.member_id, r.generation) == (0, member_id, 2)
        assert (r.protocol_type, r.protocol_name, r.leader_id, r.members) == (
            "consumer", "range", "", [])
        assert synced_partitions(h, member_id, 2) == set(g.target(member_id)[h.tid])
        assert h.heartbeat(member_id, 2) == 0
        owners_are_unique(g)
    assert consumer_settle(h, new, 2) == 2
    assert g.members[new].assigned == g.target(new)
    assert g.state is GroupState.STABLE
    # a SyncGroup naming another protocol, or an old generation, is refused
    assert h.sync(ids[0], 2, protocol_name="roundrobin")[0].error == \
        E.INCONSISTENT_GROUP_PROTOCOL
    assert h.sync(ids[0], 1)[0].error == E.ILLEGAL_GENERATION
    assert h.sync(new, 2)[0].error == E.UNKNOWN_MEMBER_ID          # not a classic member


def test_a_new_classic_member_joins_the_consumer_group(h):
    ids, new = migrated(h)
    first = h.join(protocols=protocols())[0]
    assert first.error == E.MEMBER_ID_REQUIRED
    r = rejoin(h, first.member_id)
    g = group(h)
    assert (r.error, r.generation) == (0, 3) and g.group_epoch == 3
    # its partitions are still owned: it waits, and is told to rejoin once they are free
    assert g.members[r.member_id].state is MemberState.UNRELEASED_PARTITIONS
    assert synced_partitions(h, r.member_id, 3) == set()
    assert h.heartbeat(r.member_id, 3) == 0
    for member_id in ids:
        rejoin(h, member_id)
        synced_partitions(h, member_id, 3)
    consumer_settle(h, new, 2)
    assert h.heartbeat(r.member_id, 3) == E.REBALANCE_IN_PROGRESS
    assert rejoin(h, r.member_id).generation == 3
    assert synced_partitions(h, r.member_id, 3) == set(g.target(r.member_id)[h.tid])
    owners_are_unique(g)
    assert g.state is GroupState.STABLE
    # protocols the classic members do not share are refused
    assert h.join(protocols=protocols(names=("roundrobin",)))[0].error == \
        E.INCONSISTENT_GROUP_PROTOCOL


def test_a_cooperative_member_revokes_before_its_epoch_moves(h):
    ids, new = upgraded(h)
    g = group(h)
    loser = next(m for m in ids if len(g.target(m).get(h.tid, ())) == 1)
    i = ids.index(loser)
    owned = {"t": SPLIT[i]}
    r = rejoin(h, loser, owned)                     # still owns what it must give up
    m = g.members[loser]
    assert (r.generation, m.state) == (1, MemberState.UNREVOKED_PARTITIONS)
    assert synced_partitions(h, loser, 1) == set(g.target(loser)[h.tid])
    assert h.heartbeat(loser, 1) == E.REBALANCE_IN_PROGRESS
    r = rejoin(h, loser, {"t": g.target(loser)[h.tid]})     # revoked: moves on
    assert (r.generation, g.members[loser].state) == (2, MemberState.STABLE)
    owners_are_unique(g)


# -- deadlines and leaving ----------------------------------------------------------------------
def test_a_classic_member_that_does_not_rejoin_in_time_is_fenced(h):
    ids, new = upgraded(h)
    for member_id in ids[1:]:
        rejoin(h, member_id)
        synced_partitions(h, member_id, 2)
    for _ in range(REBALANCE // 5000):               # heartbeats, but never rejoins
        assert h.heartbeat(ids[0], 1) == E.REBALANCE_IN_PROGRESS
        for member_id in ids[1:]:
            h.heartbeat(member_id, 2)
        h.consumer_heartbeat(new, 2)
        h.advance(5000)
    g = group(h)
    assert ids[0] not in g.members and set(ids[1:]) <= set(g.members)
    assert h.heartbeat(ids[0], 1) == E.UNKNOWN_MEMBER_ID


def test_a_classic_member_that_does_not_sync_in_time_is_fenced(h):
    ids, new = upgraded(h)
    rejoin(h, ids[0])
    for _ in range(5):
        assert h.heartbeat(ids[0], 2) in (0, E.REBALANCE_IN_PROGRESS)
        for member_id in ids[1:]:
            h.heartbeat(member_id, 1)
        h.consumer_heartbeat(new, 2)
        h.advance(5000)
    assert ids[0] in group(h).members
    h.advance(REBALANCE - 25_000)
    assert ids[0] not in group(h).members


def test_a_silent_classic_member_is_fenced_after_its_session_timeout(h):
    ids, new = upgraded(h)
    for _ in range(3):
        for member_id in ids[1:]:
            h.heartbeat(member_id, 1)
        h.advance(4000)
    g = group(h)
    assert ids[0] not in g.members and len(g.members) == 3 and g.group_epoch == 3


def test_classic_members_leave_the_consumer_group(h):
    ids, new = migrated(h)
    assert h.coordinator.leave("g", [(ids[0], None), ("nobody", None), (new, None)]) == (
        0, [0, E.UNKNOWN_MEMBER_ID, E.UNKNOWN_MEMBER_ID])
    g = group(h)
    assert ids[0] not in g.members and g.group_epoch == 3
    assert isinstance(g, ConsumerGroup)


# -- downgrade ----------------------------------------------------------------------------------
def test_the_last_consumer_member_leaving_converts_the_group_back(h):
    ids, new = migrated(h)
    g = group(h)
    targets = {m: set(g.target(m)[h.tid]) for m in ids}
    assert h.consumer_heartbeat(new, -1).error == 0
    classic = group(h)
    assert isinstance(classic, GroupMetadata)
    assert (classic.state, classic.generation, classic.protocol_type, classic.protocol_name) == (
        ClassicState.PREPARING_REBALANCE, 2, "consumer", "range")
    assert set(classic.members) == set(ids)
    for m in ids:
        parts = {p for t, ps in decode_assignment(classic.members[m].assignment) for p in ps}
        assert parts == targets[m]
    assert h.coordinator.list_groups()[1][0].group_type == "classic"
    # the members are told to rejoin, and the classic group goes on
    assert all(h.heartbeat(m, 2) == E.REBALANCE_IN_PROGRESS for m in ids)
    joins = [h.join(member_id=m, protocols=protocols()) for m in ids]
    assert all(j[0].error == 0 and j[0].generation == 3 for j in joins)
    assert h.state() is ClassicState.COMPLETING_REBALANCE


def test_the_last_consumer_member_fenced_converts_the_group_back(h):
    ids, new = migrated(h)
    for _ in range(10):                      # the consumer member falls silent
        for m in ids:
            h.heartbeat(m, 2)
        h.advance(5000)
    classic = group(h)
    assert isinstance(classic, GroupMetadata) and set(classic.members) == set(ids)


def test_a_classic_static_member_replacing_the_last_consumer_member(h):
    ids, new = migrated(h)
    s = h.consumer_heartbeat(topics=("t",), instance_id="i-1")
    assert h.consumer_heartbeat(new, -1).error == 0     # a consumer member is left: no downgrade
    g = group(h)
    assert isinstance(g, ConsumerGroup) and g.group_epoch == 4
    for m in ids:
        assert rejoin(h, m).generation == 4
        synced_partitions(h, m, 4)
    consumer_settle(h, s.member_id, s.member_epoch)
    kept = set(g.target(s.member_id)[h.tid])
    # the consumer member with instance i-1 goes (static leave); a classic one takes over
    h.consumer_heartbeat(s.member_id, -2, instance_id="i-1")
    [r] = h.join(instance_id="i-1", protocols=protocols())
    assert r.error == 0 and r.member_id != s.member_id
    classic = group(h)
    assert isinstance(classic, GroupMetadata) and classic.state is ClassicState.STABLE
    assert classic.generation == r.generation == 4
    assert set(classic.members) == set(ids) | {r.member_id}
    [sync] = h.sync(r.member_id, r.generation, instance_id="i-1")
    assert {p for _, ps in decode_assignment(sync.assignment) for p in ps} == kept


# -- policies -----------------------------------------------------------------------------------
@pytest.mark.parametrize("policy", ["downgrade", "disabled", "DISABLED", "nonsense"])
def test_no_upgrade_without_the_policy(tmp_path, policy):
    h = make(tmp_path, policy)
    ids = classic_group(h)
    r = h.consumer_heartbeat(topics=("t",))
    assert (r.error, r.message) == (E.GROUP_ID_NOT_FOUND, "Group g is not a consumer group")
    assert isinstance(group(h), GroupMetadata) and h.state() is ClassicState.STABLE
    assert all(h.heartbeat(m, 1) == 0 for m in ids)


@pytest.mark.parametrize("policy", ["upgrade", "disabled"])
def test_no_downgrade_without_the_policy(tmp_path, policy):
    h = make(tmp_path, "bidirectional")
    ids, new = migrated(h)
    h.coordinator.consumer = ConsumerSettings(migration_policy=policy)
    assert h.consumer_heartbeat(new, -1).error == 0
    g = group(h)
    assert isinstance(g, ConsumerGroup) and set(g.members) == set(ids) and g.group_epoch == 3


def test_groups_that_cannot_be_upgraded(h):
    classic_group(h, protocol_type="connect")
    assert h.consumer_heartbeat(topics=("t",)).error == E.GROUP_ID_NOT_FOUND
    pending = [h.first_join(group="bad", protocols=[("range", b"\x00")]) for _ in range(2)]
    h.advance(0)
    assert all(p[0].error == 0 for p in pending)
    r = h.consumer_heartbeat(group="bad", topics=("t",))
    assert r.error == E.GROUP_ID_NOT_FOUND and "malformed" in r.message
    assert isinstance(h.coordinator._groups["bad"], GroupMetadata)


def test_no_upgrade_beyond_the_consumer_group_maximum_size(tmp_path):
    h = Harness(tmp_path, ConsumerSettings(max_size=2))
    h.topics.create("t", 6)
    classic_group(h)
    assert h.consumer_heartbeat(topics=("t",)).error == E.GROUP_ID_NOT_FOUND


def test_a_refused_join_leaves_the_classic_group_as_it_was(tmp_path):
    """Three members fit a consumer group of three, the joining fourth does not: the
    conversion is dropped with the heartbeat, nothing is written."""
    h = Harness(tmp_path, ConsumerSettings(max_size=3))
    h.topics.create("t", 6)
    ids = classic_group(h)
    end = h.log.log_end_offset
    assert h.consumer_heartbeat(topics=("t",)).error == E.GROUP_MAX_SIZE_REACHED
    assert isinstance(group(h), GroupMetadata) and h.log.log_end_offset == end
    for _ in range(12):                 # past any session the conversion would have started
        assert all(h.heartbeat(m, 1) == 0 for m in ids)
        h.advance(5000)
    assert h.state() is ClassicState.STABLE and set(group(h).members) == set(ids)


# -- reloading mid-migration --------------------------------------------------------------------
def _snapshot(g: ConsumerGroup):
    return (g.group_epoch, g.assignment_epoch, dict(g.members), dict(g.targets),
            dict(g.partition_epochs), dict(g.static_members))


def test_a_reload_mid_upgrade_has_the_same_group(h):
    ids, new = upgraded(h)
    rejoin(h, ids[0])
    synced_partitions(h, ids[0], 2)
    before = _snapshot(group(h))
    h.restart()
    assert _snapshot(group(h)) == before
    # and the migration goes on from there
    assert h.heartbeat(ids[0], 2) == 0
    assert h.heartbeat(ids[1], 1) == E.REBALANCE_IN_PROGRESS
    assert rejoin(h, ids[1]).generation == 2
    assert synced_partitions(h, ids[1], 2) == set(group(h).target(ids[1])[h.tid])


def test_a_reload_after_the_downgrade_has_the_classic_group(h):
    ids, new = migrated(h)
    h.consumer_heartbeat(new, -1)
    before = group(h)
    assignments = {m: before.members[m].assignment for m in ids}
    h.restart()
    after = group(h)
    assert isinstance(after, GroupMetadata)
    assert (after.generation, after.protocol_type, after.protocol_name) == (2, "consumer",
                                                                           "range")
    assert {m: after.members[m].assignment for m in ids} == assignments
    assert h.coordinator.fetch_offsets("g", [("t", 0)])[0] == 0
