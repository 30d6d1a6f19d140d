"""The classic group state machine on a MockClock: join, sync, heartbeat, expiry, static members.

The coordinator writes through a real ``Partition`` over a real ``Log`` in a
temp dir (one ``__consumer_offsets`` partition leading every group here);
deadlines run on the purgatory timer with no event loop, advanced by hand.
"""
from __future__ import annotations

import pytest

from kafkapy.clock import MockClock
from kafkapy.coordinator.group.coordinator import GroupCoordinator, GroupSettings
from kafkapy.coordinator.group.group import GroupState
from kafkapy.coordinator.group.offsets import OffsetAndMetadata
from kafkapy.coordinator.group.persistence import GroupStore, Loaded, load_partition
from kafkapy.coordinator.group.timers import Deadlines
from kafkapy.log.log import Log
from kafkapy.metadata.cache import PartitionState
from kafkapy.metadata.topics import OFFSETS_TOPIC
from kafkapy.protocol.errors import ErrorCode as E
from kafkapy.purgatory.timer import Timer
from kafkapy.replication.partition import Partition

SESSION = 10_000
REBALANCE = 30_000
PROTOCOLS = [("range", b"r-meta"), ("roundrobin", b"rr-meta")]


class _Replicas:
    """The two things GroupStore needs of a ReplicaManager."""

    def __init__(self, partition: Partition) -> None:
        self.partitions = {(OFFSETS_TOPIC, 0): partition}
        self.woken = 0

    def appended(self, key) -> None:
        self.woken += 1


class Harness:
    def __init__(self, tmp_path, **settings) -> None:
        self.clock = MockClock()
        self.timer = Timer(None, self.clock)
        log = Log.load(str(tmp_path / f"{OFFSETS_TOPIC}-0"), {"cleanup.policy": "compact"},
                       self.clock)
        self.log = log
        self.partition = Partition(OFFSETS_TOPIC, 0, log, PartitionState(0, [0], 0, 0, [0]), 0)
        self.replicas = _Replicas(self.partition)
        base = dict(num_partitions=1, initial_rebalance_delay_ms=0, min_session_timeout_ms=1000,
                    max_session_timeout_ms=60_000)
        base.update(settings)
        self.coordinator = self._new_coordinator(GroupSettings(**base))

    def _new_coordinator(self, settings: GroupSettings) -> GroupCoordinator:
        c = GroupCoordinator(settings, self.clock, Deadlines(self.timer),
                             GroupStore(self.replicas, self.clock))
        c.begin_loading(0)
        c.finish_loading(0, Loaded())
        return c

    def restart(self) -> GroupCoordinator:
        """A new coordinator that replays the partition (as after a broker restart)."""
        self.coordinator.shutdown()
        c = GroupCoordinator(self.coordinator.settings, self.clock, Deadlines(self.timer),
                             GroupStore(self.replicas, self.clock))
        c.begin_loading(0)
        c.finish_loading(0, load_partition(self.log))
        self.coordinator = c
        return c

    def advance(self, ms: int) -> None:
        self.clock.advance(ms)
        while self.timer.advance_clock():      # tasks re-added with no delay run next step
            pass

    def join(self, group="g", member_id="", instance_id=None, protocols=PROTOCOLS,
             session=SESSION, rebalance=REBALANCE, require_known=True, protocol_type="consumer"):
        out = []
        self.coordinator.join(group, member_id, instance_id, protocol_type, protocols, session,
                              rebalance, "client", "/127.0.0.1", require_known, out.append)
        return out

    def sync(self, member_id, generation, assignments=None, group="g", instance_id=None,
             protocol_type=None, protocol_name=None):
        out = []
        self.coordinator.sync(group, generation, member_id, instance_id, protocol_type,
                              protocol_name, assignments or {}, out.append)
        return out

    def heartbeat(self, member_id, generation, group="g", instance_id=None) -> int:
        return self.coordinator.heartbeat(group, member_id, instance_id, generation)

    def state(self, group="g") -> GroupState:
        return self.coordinator._groups[group].state

    def first_join(self, **kw):
        """KIP-394: the first join gets MEMBER_ID_REQUIRED and an id; rejoin with it."""
        first = self.join(**kw)
        assert first[0].error == E.MEMBER_ID_REQUIRED
        return self.join(member_id=first[0].member_id, **kw)

    def stable_group(self, n: int, **kw):
        """n members joined and synced; returns their member ids (leader first)."""
        pending = [self.first_join(**kw) for _ in range(n)]
        self.advance(0)
        results = [p[0] for p in pending]
        assert all(r.error == 0 for r in results)
        leader = next(r for r in results if r.member_id == r.leader_id)
        assignments = {r.member_id: r.member_id.encode() for r in results}
        followers = [self.sync(r.member_id, r.generation) for r in results if r is not leader]
        assert self.sync(leader.member_id, leader.generation, assignments)[0].error == 0
        assert all(f[0].error == 0 for f in followers)
        return [leader.member_id] + [r.member_id for r in results if r is not leader]


@pytest.fixture
def h(tmp_path):
    return Harness(tmp_path)


def test_first_join_requires_member_id_then_completes(h):
    first = h.join()
    assert first[0].error == E.MEMBER_ID_REQUIRED
    assert first[0].member_id.startswith("client-")
    assert h.state() is GroupState.EMPTY
    second = h.join(member_id=first[0].member_id)
    assert second == []                       # parked: initial rebalance delay
    assert h.state() is GroupState.PREPARING_REBALANCE
    h.advance(0)
    r = second[0]
    assert (r.error, r.generation, r.leader_id, r.protocol_name) == (0, 1, r.member_id, "range")
    assert [m[0] for m in r.members] == [r.member_id]
    assert h.state() is GroupState.COMPLETING_REBALANCE


def test_old_versions_join_without_member_id_round_trip(h):
    out = h.join(require_known=False)
    h.advance(0)
    assert out[0].error == 0 and out[0].generation == 1


def test_unknown_member_id_on_new_group(h):
    assert h.join(member_id="nobody")[0].error == E.UNKNOWN_MEMBER_ID


def test_invalid_session_timeout(h):
    assert h.join(session=500)[0].error == E.INVALID_SESSION_TIMEOUT
    assert h.join(session=70_000)[0].error == E.INVALID_SESSION_TIMEOUT


def test_invalid_group_id_and_not_coordinator(h):
    out = []
    h.coordinator.join("", "", None, "consumer", PROTOCOLS, SESSION, REBALANCE, "c", "/h",
                       True, out.append)
    assert out[0].error == E.INVALID_GROUP_ID
    h.coordinator.unload(0)
    assert h.join()[0].error == E.NOT_COORDINATOR


def test_inconsistent_protocols(h):
    h.stable_group(1)
    assert h.join(protocols=[("sticky", b"")])[0].error == E.INCONSISTENT_GROUP_PROTOCOL
    assert h.join(protocol_type="connect")[0].error == E.INCONSISTENT_GROUP_PROTOCOL


def test_initial_rebalance_delay_waits_for_more_members(tmp_path):
    h = Harness(tmp_path, initial_rebalance_delay_ms=3000)
    a = h.first_join()
    h.advance(2000)
    b = h.first_join()
    h.advance(1500)                            # first delay over, a new member arrived: extend
    assert a == [] and b == []
    h.advance(3000)
    assert a[0].error == 0 and b[0].error == 0
    assert a[0].generation == b[0].generation == 1
    assert {m[0] for m in (a[0].members or b[0].members)} == {a[0].member_id, b[0].member_id}


def test_leader_gets_members_followers_do_not_and_protocol_by_votes(h):
    pa = h.first_join(protocols=[("range", b"a"), ("roundrobin", b"a2")])
    pb = h.first_join(protocols=[("roundrobin", b"b"), ("range", b"b2")])
    pc = h.first_join(protocols=[("roundrobin", b"c"), ("sticky", b""), ("range", b"c2")])
    h.advance(0)
    results = [pa[0], pb[0], pc[0]]
    assert {r.protocol_name for r in results} == {"roundrobin"}
    leader = [r for r in results if r.members]
    assert len(leader) == 1 and leader[0].member_id == leader[0].leader_id == pa[0].member_id
    assert dict((m, d) for m, _, d in leader[0].members) == {
        pa[0].member_id: b"a2", pb[0].member_id: b"b", pc[0].member_id: b"c"}


def test_sync_hands_out_assignments_and_checks(h):
    a, b = (h.first_join() for _ in range(2))
    h.advance(0)
    leader, follower = (a[0], b[0]) if a[0].members else (b[0], a[0])
    gen = leader.generation
    assert h.sync(follower.member_id, gen + 1)[0].error == E.ILLEGAL_GENERATION
    assert h.sync("ghost", gen)[0].error == E.UNKNOWN_MEMBER_ID
    assert h.sync(follower.member_id, gen, protocol_name="sticky")[0].error == \
        E.INCONSISTENT_GROUP_PROTOCOL
    waiting = h.sync(follower.member_id, gen, protocol_type="consumer", protocol_name="range")
    assert waiting == []                       # waits for the leader
    done = h.sync(leader.member_id, gen, {leader.member_id: b"L", follower.member_id: b"F"})
    assert done[0].assignment == b"L" and waiting[0].assignment == b"F"
    assert h.state() is GroupState.STABLE
    again = h.sync(follower.member_id, gen)     # in Stable: answered at once
    assert again[0].assignment == b"F"


def test_heartbeat_errors(h):
    leader, follower = h.stable_group(2)
    assert h.heartbeat(leader, 1) == 0
    assert h.heartbeat(leader, 2) == E.ILLEGAL_GENERATION
    assert h.heartbeat("ghost", 1) == E.UNKNOWN_MEMBER_ID
    assert h.heartbeat(leader, 1, group="other") == E.UNKNOWN_MEMBER_ID
    h.join(member_id=leader)                   # the leader rejoining starts a rebalance
    assert h.state() is GroupState.PREPARING_REBALANCE
    assert h.heartbeat(follower, 1) == E.REBALANCE_IN_PROGRESS


def test_session_expiry_removes_member_and_rebalances(h):
    leader, follower = h.stable_group(2)
    h.advance(SESSION - 1000)
    assert h.heartbeat(leader, 1) == 0         # the follower stays silent
    assert h.state() is GroupState.STABLE
    h.advance(1000)
    assert h.state() is GroupState.PREPARING_REBALANCE
    assert follower not in h.coordinator._groups["g"].members
    assert h.heartbeat(leader, 1) == E.REBALANCE_IN_PROGRESS
    rejoin = h.join(member_id=leader)
    assert rejoin[0].generation == 2 and [m[0] for m in rejoin[0].members] == [leader]
    assert h.heartbeat(follower, 2) == E.UNKNOWN_MEMBER_ID


def test_member_that_does_not_rejoin_is_dropped_at_rebalance_timeout(h):
    leader, follower = h.stable_group(2)
    assert h.join(member_id=follower)[0].generation == 1   # same metadata: no rebalance
    out = h.join(member_id=follower, protocols=[("range", b"changed")])
    assert out == []
    for _ in range(REBALANCE // 5000 - 1):
        h.advance(5000)                        # the leader heartbeats but does not rejoin
        assert h.heartbeat(leader, 1) == E.REBALANCE_IN_PROGRESS
    assert out == []
    h.advance(5000)
    assert out[0].error == 0 and out[0].generation == 2
    assert out[0].leader_id == follower        # the old leader did not rejoin
    assert list(h.coordinator._groups["g"].members) == [follower]


def test_pending_member_id_expires(h):
    leader, = h.stable_group(1)
    first = h.join()
    assert first[0].error == E.MEMBER_ID_REQUIRED
    h.join(member_id=leader)                   # rebalance waits for the pending id too
    assert h.state() is GroupState.PREPARING_REBALANCE
    h.advance(SESSION)
    assert h.state() is GroupState.COMPLETING_REBALANCE
    assert h.join(member_id=first[0].member_id)[0].error == E.UNKNOWN_MEMBER_ID


def test_leave_group_triggers_rebalance_and_empty(h):
    leader, follower = h.stable_group(2)
    error, errors = h.coordinator.leave("g", [(follower, None), ("ghost", None)])
    assert (error, errors) == (0, [0, E.UNKNOWN_MEMBER_ID])
    assert h.state() is GroupState.PREPARING_REBALANCE
    h.join(member_id=leader)
    assert h.coordinator.leave("g", [(leader, None)]) == (0, [0])
    assert h.state() is GroupState.EMPTY


def test_rejoin_during_completing_rebalance_returns_current_generation(h):
    a = h.first_join()
    h.advance(0)
    again = h.join(member_id=a[0].member_id)
    assert again[0].generation == a[0].generation and again[0].members


def test_group_max_size(tmp_path):
    h = Harness(tmp_path, max_size=2)
    h.stable_group(2)
    assert h.join()[0].error == E.GROUP_MAX_SIZE_REACHED


def test_static_member_rejoins_without_rebalance(h):
    first = h.join(instance_id="i-1")          # static members need no MEMBER_ID_REQUIRED
    h.advance(0)
    old = first[0]
    assert old.error == 0
    h.sync(old.member_id, old.generation, {old.member_id: b"mine"})
    other = h.first_join(instance_id=None)
    h.join(member_id=old.member_id, instance_id="i-1")
    h.advance(0)
    gen = other[0].generation
    leader = old.member_id
    h.sync(other[0].member_id, gen)
    h.sync(leader, gen, {leader: b"A", other[0].member_id: b"B"})
    assert h.state() is GroupState.STABLE
    # The static member restarts (new process, no member id) within its session timeout.
    h.advance(SESSION // 2)
    h.heartbeat(other[0].member_id, gen)
    back = h.join(instance_id="i-1")
    assert back[0].error == 0 and back[0].generation == gen
    assert back[0].member_id != leader
    assert h.state() is GroupState.STABLE      # no rebalance
    assert back[0].skip_assignment and back[0].old_leader_id == leader
    assert h.sync(back[0].member_id, gen)[0].assignment == b"A"
    # The old incarnation is fenced everywhere.
    assert h.heartbeat(leader, gen, instance_id="i-1") == E.FENCED_INSTANCE_ID
    assert h.join(member_id=leader, instance_id="i-1")[0].error == E.FENCED_INSTANCE_ID
    assert h.sync(leader, gen, instance_id="i-1")[0].error == E.FENCED_INSTANCE_ID
    offsets = {("t", 0): OffsetAndMetadata(1, -1, "", 0)}
    assert h.coordinator.commit_offsets("g", leader, "i-1", gen, offsets)[("t", 0)] == \
        E.FENCED_INSTANCE_ID
    assert h.heartbeat(back[0].member_id, gen, instance_id="i-1") == 0


def test_static_member_leaves_by_instance_id(h):
    first = h.join(instance_id="i-1")
    h.advance(0)
    assert h.coordinator.leave("g", [("", "i-1")]) == (0, [0])
    assert h.state() is GroupState.EMPTY
    assert h.coordinator.leave("g", [("", "i-1")]) == (0, [E.UNKNOWN_MEMBER_ID])
    assert first[0].error == 0


def test_offset_commit_rules(h):
    tp = ("t", 0)
    c = h.coordinator
    om = OffsetAndMetadata(5, 2, "meta", h.clock.time_ms())
    assert c.commit_offsets("solo", "", None, -1, {tp: om}) == {tp: 0}      # standalone
    assert c.commit_offsets("new", "", None, 3, {tp: om}) == {tp: E.ILLEGAL_GENERATION}
    leader, = h.stable_group(1)
    assert c.commit_offsets("g", "", None, -1, {tp: om}) == {tp: E.UNKNOWN_MEMBER_ID}
    assert c.commit_offsets("g", leader, None, 7, {tp: om}) == {tp: E.ILLEGAL_GENERATION}
    assert c.commit_offsets("g", leader, None, 1, {tp: om}) == {tp: 0}
    big = OffsetAndMetadata(6, -1, "x" * 5000, 0)
    assert c.commit_offsets("g", leader, None, 1, {tp: big}) == {tp: E.OFFSET_METADATA_TOO_LARGE}
    assert c.fetch_offsets("g", [tp, ("t", 1)]) == (0, [(tp, om), (("t", 1), None)])
    assert c.fetch_offsets("solo", None) == (0, [(tp, om)])
    h.join(member_id=leader)
    h.advance(0)
    assert c.commit_offsets("g", leader, None, 2, {tp: om}) == {tp: E.REBALANCE_IN_PROGRESS}


def test_groups_and_offsets_survive_replay(h):
    leader, follower = h.stable_group(2)
    om = OffsetAndMetadata(42, 3, "m", h.clock.time_ms())
    h.coordinator.commit_offsets("g", leader, None, 1, {("t", 1): om})
    h.coordinator.commit_offsets("solo", "", None, -1, {("t", 0): om})
    assert h.coordinator.delete_groups(["solo"]) == {"solo": 0}
    c = h.restart()
    group = c._groups["g"]
    assert group.state is GroupState.STABLE and group.generation == 1
    assert set(group.members) == {leader, follower} and group.leader_id == leader
    assert group.get(follower).assignment == follower.encode()
    assert c.fetch_offsets("g", [("t", 1)]) == (0, [(("t", 1), om)])
    assert "solo" not in c._groups
    assert h.heartbeat(leader, 1) == 0
    h.advance(SESSION + 1)                     # nobody came back: both expire
    assert h.state() is GroupState.EMPTY


def test_describe_list_delete(h):
    leader, follower = h.stable_group(2)
    c = h.coordinator
    s = c.describe_group("g")
    assert (s.state, s.protocol_type, s.protocol) == ("Stable", "consumer", "range")
    assert {m.member_id: m.assignment for m in s.members} == {
        leader: leader.encode(), follower: follower.encode()}
    assert c.describe_group("nope").state == "Dead"
    assert [g.group_id for g in c.list_groups()[1]] == ["g"]
    assert c.list_groups(["empty"])[1] == []
    assert c.list_groups(["STABLE"], ["Classic"])[1][0].state == "Stable"
    assert c.list_groups(None, ["consumer"])[1] == []
    assert c.delete_groups(["g", "nope"]) == {"g": E.NON_EMPTY_GROUP,
                                              "nope": E.GROUP_ID_NOT_FOUND}


def test_offset_delete(h):
    leader, = h.stable_group(1)
    c = h.coordinator
    om = OffsetAndMetadata(1, -1, "", 0)
    c.commit_offsets("g", leader, None, 1, {("sub", 0): om, ("other", 0): om})
    # The member's metadata is not a parseable subscription: every topic counts as subscribed.
    assert c.delete_offsets("g", [("other", 0)]) == (0, {("other", 0): E.GROUP_SUBSCRIBED_TO_TOPIC})
    assert c.delete_offsets("nope", [("x", 0)])[0] == E.GROUP_ID_NOT_FOUND
    c.leave("g", [(leader, None)])
    assert c.delete_offsets("g", [("other", 0)]) == (0, {("other", 0): 0})
    assert c.fetch_offsets("g", None) == (0, [(("sub", 0), om)])


def test_offsets_of_empty_group_expire(tmp_path):
    h = Harness(tmp_path, offsets_retention_ms=60_000)
    c = h.coordinator
    c.commit_offsets("solo", "", None, -1, {("t", 0): OffsetAndMetadata(1, -1, "",
                                                                          h.clock.time_ms())})
    h.clock.advance(59_000)
    assert c.expire_offsets() == 0
    h.clock.advance(1_000)
    assert c.expire_offsets() == 1
    assert "solo" not in c._groups
    assert "solo" not in h.restart()._groups
