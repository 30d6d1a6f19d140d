"""Share groups in the group coordinator (``share_ops``) on a mock clock, over a real
``__consumer_offsets`` log and an in-memory share coordinator: joining, assignment after
the share partitions are initialized, heartbeats, leaving, fencing, session expiry, the
group's size limit, a failover replaying the log, ShareGroupDescribe, DeleteGroups, and
what the other kinds of request get for a share group's id."""
from __future__ import annotations

import asyncio

import pytest

from kafkapy.coordinator.group.consumer.types import HeartbeatRequest
from kafkapy.coordinator.group.group import GroupState
from kafkapy.coordinator.group.offsets import OffsetAndMetadata
from kafkapy.coordinator.group.share.settings import ShareSettings
from kafkapy.coordinator.group.share.types import ShareHeartbeatRequest
from kafkapy.protocol.errors import ErrorCode as E
from tests.support.share import InMemoryPersister
from tests.support.share_group import ShareHarness

SESSION = ShareSettings().session_timeout_ms


@pytest.fixture
def h(tmp_path):
    return ShareHarness(tmp_path)


async def _turns(n: int = 5) -> None:
    for _ in range(n):
        await asyncio.sleep(0)


def _assigned(h, member_id: str, group: str = "g"):
    return h.group(group).members[member_id].assigned


# -- joining and assignment ---------------------------------------------------------------------
async def test_a_join_initializes_the_partitions_and_the_next_heartbeat_assigns_them(h):
    topic = h.topics.create("t", 2)
    first = await h.heartbeat("m1", 0, ["t"])
    # answered at once with what is initialized (nothing yet), as Kafka 4.2 answers
    assert (first.error, first.member_id, first.member_epoch, first.assignment,
            first.heartbeat_interval_ms) == (0, "m1", 1, {}, 5000)
    assert h.persister.calls == [
        ("initialize", "g", topic, p, {"state_epoch": 1, "start_offset": -1}) for p in (0, 1)]
    assert h.group().initialized() == {topic: frozenset({0, 1})}
    second = await h.heartbeat("m1", 1)
    assert (second.member_epoch, second.assignment) == (2, {topic: frozenset({0, 1})})
    third = await h.heartbeat("m1", 2)
    assert (third.member_epoch, third.assignment) == (2, None)     # unchanged: not sent
    assert len(h.persister.calls) == 2                              # initialized once


async def test_five_members_on_one_partition_all_get_it(h):
    topic = h.topics.create("t", 1)
    for i in range(5):
        await h.joined(f"m{i}", ["t"])
    for i in range(5):
        epoch = h.group().members[f"m{i}"].member_epoch
        result = await h.heartbeat(f"m{i}", epoch)
        assert result.error == 0 and _assigned(h, f"m{i}") == {topic: frozenset({0})}
    assert h.group().state.value == "Stable"


async def test_two_members_split_four_partitions(h):
    topic = h.topics.create("t", 4)
    await h.joined("a", ["t"])
    await h.joined("b", ["t"])
    await h.heartbeat("a", h.group().members["a"].member_epoch)
    a, b = _assigned(h, "a")[topic], _assigned(h, "b")[topic]
    assert (len(a), len(b), a | b, a & b) == (2, 2, {0, 1, 2, 3}, set())
    assert h.group().group_epoch == h.group().assignment_epoch


async def test_a_full_request_always_gets_its_assignment(h):
    topic = h.topics.create("t", 1)
    result = await h.joined("m", ["t"])
    again = await h.heartbeat("m", result.member_epoch, ["t"])
    assert again.assignment == {topic: frozenset({0})}
    rejoin = await h.heartbeat("m", 0, ["t"])          # epoch 0 again: kept, answered in full
    assert (rejoin.member_epoch, rejoin.assignment) == (result.member_epoch, {topic: frozenset({0})})


async def test_a_new_subscription_moves_the_assignment(h):
    t1, t2 = h.topics.create("t1", 1), h.topics.create("t2", 1)
    result = await h.joined("m", ["t1"])
    changed = await h.heartbeat("m", result.member_epoch, ["t2"])
    assert changed.assignment == {}                      # t2 is initialized after this one
    later = await h.heartbeat("m", changed.member_epoch)
    assert later.assignment == {t2: frozenset({0})} and t1 not in _assigned(h, "m")


async def test_a_topic_created_later_is_assigned(h):
    result = await h.heartbeat("m", 0, ["late"])
    assert (result.error, result.assignment) == (0, {})
    topic = h.topics.create("late", 1)
    h.coordinator.share_topics_changed({"late"})
    first = await h.heartbeat("m", result.member_epoch)   # the metadata moved: initialize
    second = await h.heartbeat("m", first.member_epoch)
    assert second.assignment == {topic: frozenset({0})}


# -- the share coordinator failing ---------------------------------------------------------------
async def test_a_failed_initialization_is_asked_again(h):
    topic = h.topics.create("t", 1)
    h.persister.fail_next("initialize", E.COORDINATOR_NOT_AVAILABLE)
    result = await h.heartbeat("m", 0, ["t"])
    state = h.group().state_partitions
    assert (state.initializing, state.initialized) == ({}, {})   # uninitialized again
    again = await h.heartbeat("m", result.member_epoch)
    assert h.group().initialized() == {topic: frozenset({0})}
    assigned = await h.heartbeat("m", again.member_epoch)
    assert assigned.assignment == {topic: frozenset({0})}
    assert [c[0] for c in h.persister.calls] == ["initialize", "initialize"]


async def test_partitions_initializing_too_long_are_asked_again(tmp_path):
    class Slow(InMemoryPersister):
        """Never answers: the partition stays initializing."""
        async def initialize(self, *args, **kwargs):
            self.calls.append(("initialize", *args))
            await asyncio.Event().wait()

    h = ShareHarness(tmp_path, persister=Slow())
    h.topics.create("t", 1)
    result = await h.coordinator.share_heartbeat(
        ShareHeartbeatRequest("g", "m", 0, "c", "/h", None, ("t",)))
    later = ShareHeartbeatRequest("g", "m", result.member_epoch, "c", "/h")
    await h.coordinator.share_heartbeat(later)
    await _turns()
    assert len(h.persister.calls) == 1                  # still initializing: not asked again
    h.advance(ShareSettings().initialize_retry_interval_ms)
    await h.coordinator.share_heartbeat(later)
    await _turns()
    assert len(h.persister.calls) == 2
    h.coordinator.shutdown()


async def test_without_a_persister_partitions_count_as_initialized(tmp_path):
    h = ShareHarness(tmp_path, with_persister=False)
    topic = h.topics.create("t", 1)
    result = await h.joined("m", ["t"])
    assert result.assignment == {topic: frozenset({0})}


# -- leaving, fencing, session expiry ----------------------------------------------------------
async def test_leaving_removes_the_member_and_bumps_the_epoch(h):
    topic = h.topics.create("t", 2)
    await h.joined("a", ["t"])
    await h.joined("b", ["t"])
    epoch = h.group().group_epoch
    left = await h.heartbeat("a", -1)
    assert (left.error, left.member_id, left.member_epoch, left.assignment) == (0, "a", -1, None)
    assert set(h.group().members) == {"b"} and h.group().group_epoch == epoch + 1
    b = await h.heartbeat("b", h.group().members["b"].member_epoch)
    assert b.assignment == {topic: frozenset({0, 1})}
    gone = await h.heartbeat("a", -1)
    assert (gone.error, gone.message) == (E.UNKNOWN_MEMBER_ID, "Member a is not a member of group g.")
    unknown_group = await h.heartbeat("x", -1, group="nope")
    assert (unknown_group.error, unknown_group.message) == (E.GROUP_ID_NOT_FOUND, "Group nope not found.")


async def test_epochs_are_checked(h):
    h.topics.create("t", 1)
    await h.joined("m", ["t"])
    await h.joined("other", ["t"])
    epoch = (await h.heartbeat("m", h.group().members["m"].member_epoch)).member_epoch
    assert h.group().members["m"].previous_member_epoch > 1
    ahead = await h.heartbeat("m", epoch + 1)
    assert ahead.error == E.FENCED_MEMBER_EPOCH and "greater member epoch" in ahead.message
    previous = h.group().members["m"].previous_member_epoch
    assert (await h.heartbeat("m", previous)).error == 0        # the answer may have been lost
    behind = await h.heartbeat("m", previous - 1)
    assert behind.error == E.FENCED_MEMBER_EPOCH and "smaller member epoch" in behind.message
    stranger = await h.heartbeat("x", 3)
    assert (stranger.error, stranger.message) == (E.UNKNOWN_MEMBER_ID,
                                                  "Member x is not a member of group g.")
    unknown = await h.heartbeat("x", 3, group="none")
    assert (unknown.error, unknown.message) == (E.GROUP_ID_NOT_FOUND, "Share group none not found.")


async def test_a_silent_member_is_fenced_at_its_session_timeout(h):
    topic = h.topics.create("t", 1)
    await h.joined("a", ["t"])
    await h.joined("b", ["t"])
    epoch = h.group().group_epoch
    h.advance(SESSION - 1000)
    await h.heartbeat("b", h.group().members["b"].member_epoch)    # b's session starts again
    h.advance(1000)
    assert set(h.group().members) == {"b"} and h.group().group_epoch == epoch + 1
    h.advance(SESSION - 2000)
    assert set(h.group().members) == {"b"}
    h.advance(1000)
    assert h.group().members == {} and h.group().state.value == "Empty"
    assert h.group().initialized() == {topic: frozenset({0})}      # the share state stays


async def test_the_groups_own_session_timeout(tmp_path):
    class Timeouts:
        def share_session_timeout_ms(self, group_id):
            return 50_000 if group_id == "long" else 45_000

        def share_heartbeat_interval_ms(self, group_id):
            return 7_000

    h = ShareHarness(tmp_path)
    h.coordinator.share_timeouts = Timeouts()
    h.topics.create("t", 1)
    result = await h.heartbeat("m", 0, ["t"], group="long")
    assert result.heartbeat_interval_ms == 7_000
    h.advance(45_000)
    assert "m" in h.group("long").members
    h.advance(5_000)
    assert h.group("long").members == {}


async def test_the_group_size_limit(tmp_path):
    h = ShareHarness(tmp_path, share=ShareSettings(max_size=2))
    h.topics.create("t", 1)
    await h.heartbeat("a", 0, ["t"])
    await h.heartbeat("b", 0, ["t"])
    full = await h.heartbeat("c", 0, ["t"])
    assert (full.error, full.message) == (
        E.GROUP_MAX_SIZE_REACHED, "The share group has reached its maximum capacity of 2 members.")
    assert (await h.heartbeat("a", h.group().members["a"].member_epoch)).error == 0


@pytest.mark.parametrize("fields,message", [
    (dict(member_id=""), "MemberId can't be empty."),
    (dict(group_id=" "), "GroupId can't be empty."),
    (dict(rack_id=""), "RackId can't be empty."),
    (dict(subscribed_topic_names=None), "SubscribedTopicNames must be set in first request."),
    (dict(subscribed_topic_names=()), "SubscribedTopicNames must be set in first request."),
    (dict(member_epoch=-2), "MemberEpoch is invalid."),
])
async def test_the_requests_own_checks(h, fields, message):
    values = dict(group_id="g", member_id="m", member_epoch=0, client_id="c", client_host="/h",
                  subscribed_topic_names=("t",))
    values.update(fields)
    result = await h.coordinator.share_heartbeat(ShareHeartbeatRequest(**values))
    assert (result.error, result.message) == (E.INVALID_REQUEST, message)


async def test_not_the_coordinator(h):
    h.coordinator.unload(0)
    result = await h.heartbeat("m", 0, ["t"])
    assert result.error == E.NOT_COORDINATOR
    h.coordinator.shutdown()
    assert (await h.heartbeat("m", 0, ["t"])).error == E.COORDINATOR_NOT_AVAILABLE


# -- a failover ------------------------------------------------------------------------------
async def test_a_failover_keeps_the_groups_members_and_sessions(h):
    topic = h.topics.create("t", 4)
    await h.joined("a", ["t"])
    await h.joined("b", ["t"])
    await h.heartbeat("a", h.group().members["a"].member_epoch)
    before = h.group()
    members = {m: (v.member_epoch, v.previous_member_epoch, v.assigned, v.subscription)
               for m, v in before.members.items()}
    epochs = (before.group_epoch, before.assignment_epoch, before.metadata_hash)
    h.restart()
    after = h.group()
    assert {m: (v.member_epoch, v.previous_member_epoch, v.assigned, v.subscription)
            for m, v in after.members.items()} == members
    assert (after.group_epoch, after.assignment_epoch, after.metadata_hash) == epochs
    assert after.initialized() == {topic: frozenset({0, 1, 2, 3})}
    assert after.targets == before.targets
    # heartbeats go on at the same epochs, without a new initialization
    result = await h.heartbeat("a", members["a"][0])
    assert (result.error, result.member_epoch) == (0, members["a"][0])
    assert [c[0] for c in h.persister.calls].count("initialize") == 4
    # sessions were scheduled again at the load: b, silent, is fenced
    h.advance(SESSION - 1)
    await h.heartbeat("a", members["a"][0])
    h.advance(1)
    assert set(h.group().members) == {"a"}


# -- ShareGroupDescribe ---------------------------------------------------------------------------
async def test_describe(h):
    topic = h.topics.create("t", 1)
    await h.joined("m", ["t"])
    h.coordinator.join("classic", "", None, "consumer", [("range", b"")], 10_000, 10_000,
                       "c", "/h", False, lambda r: None)
    [g, missing, classic, empty] = h.coordinator.describe_share_groups(["g", "x", "classic", ""])
    assert (g.error, g.state, g.group_epoch, g.assignment_epoch, g.assignor_name) == (
        0, "Stable", 2, 2, "simple")
    [m] = g.members
    assert (m.member_id, m.member_epoch, m.client_id, m.client_host, m.rack_id,
            m.subscribed_topic_names, m.assigned) == (
        "m", 2, "client", "/127.0.0.1", None, ("t",), {topic: frozenset({0})})
    assert (missing.error, missing.message) == (E.GROUP_ID_NOT_FOUND, "Group x not found.")
    assert (classic.error, classic.message) == (E.GROUP_ID_NOT_FOUND,
                                                "Group classic is not a share group.")
    assert empty.error == E.INVALID_GROUP_ID


# -- ListGroups, DescribeGroups, DeleteGroups ----------------------------------------------------
async def test_listed_as_a_share_group(h):
    h.topics.create("t", 1)
    await h.heartbeat("m", 0, ["t"])
    error, groups = h.coordinator.list_groups(None, ["share"])
    assert error == 0
    assert [(g.group_id, g.protocol_type, g.state, g.group_type) for g in groups] == [
        ("g", "share", "Stable", "share")]
    assert h.coordinator.list_groups(None, ["consumer"])[1] == []
    assert [g.group_id for g in h.coordinator.list_groups(["stable"], None)[1]] == ["g"]
    await h.heartbeat("m", -1)
    assert [g.state for g in h.coordinator.list_groups(["EMPTY"], None)[1]] == ["Empty"]
    summary = h.coordinator.describe_group("g")
    assert (summary.error, summary.state) == (E.GROUP_ID_NOT_FOUND, "Dead")


async def test_delete_an_empty_share_group_and_its_share_state(h):
    topic = h.topics.create("t", 2)
    await h.joined("m", ["t"])
    assert await h.coordinator.delete_share_groups(["g"]) == {"g": E.NON_EMPTY_GROUP}
    await h.heartbeat("m", -1)
    assert await h.coordinator.delete_share_groups(["g", "other"]) == {}
    assert [c[:4] for c in h.persister.calls if c[0] == "delete"] == [
        ("delete", "g", topic, 0), ("delete", "g", topic, 1)]
    assert h.group().state_partitions.deleting == {topic: "t"}
    assert h.coordinator.delete_groups(["g"]) == {"g": 0}
    assert "g" not in h.coordinator.groups
    h.restart()
    assert "g" not in h.coordinator.groups            # its tombstones were written


async def test_a_failed_state_deletion_keeps_the_group(h):
    h.topics.create("t", 1)
    await h.heartbeat("m", 0, ["t"])
    await h.heartbeat("m", -1)
    h.persister.fail_next("delete", E.COORDINATOR_NOT_AVAILABLE)
    assert await h.coordinator.delete_share_groups(["g"]) == {"g": E.COORDINATOR_NOT_AVAILABLE}
    assert "g" in h.coordinator.groups


async def test_an_empty_share_group_never_expires(h):
    h.topics.create("t", 1)
    await h.heartbeat("m", 0, ["t"])
    await h.heartbeat("m", -1)
    h.advance(h.coordinator.settings.offsets_retention_ms + 1)
    assert h.coordinator.expire_offsets() == 0 and "g" in h.coordinator.groups


async def test_a_deleted_topic_leaves_the_state_record(h):
    h.topics.create("t", 1)
    other = h.topics.create("u", 1)
    await h.heartbeat("m", 0, ["t", "u"])
    h.topics.delete("t")
    h.coordinator.share_topic_deleted("t")
    assert h.group().initialized() == {other: frozenset({0})}


# -- other kinds of request for a share group's id -------------------------------------------
async def test_classic_requests_to_a_share_group(h):
    h.topics.create("t", 1)
    await h.heartbeat("m", 0, ["t"])
    joined = []
    h.coordinator.join("g", "", None, "consumer", [("range", b"")], 10_000, 10_000,
                       "c", "/h", False, joined.append)
    assert (joined[0].error, joined[0].member_id) == (E.INCONSISTENT_GROUP_PROTOCOL, "")
    synced = []
    h.coordinator.sync("g", 1, "m", None, None, None, {}, synced.append)
    assert synced[0].error == E.UNKNOWN_MEMBER_ID
    assert h.coordinator.heartbeat("g", "m", None, 1) == E.UNKNOWN_MEMBER_ID
    assert h.coordinator.leave("g", [("m", None)]) == (0, [E.UNKNOWN_MEMBER_ID])
    offsets = {("t", 0): OffsetAndMetadata(1, -1, "", 0)}
    assert h.coordinator.commit_offsets("g", "", None, -1, offsets) == {("t", 0): E.GROUP_ID_NOT_FOUND}
    assert h.coordinator.commit_txn_offsets("g", 1, 0, "", None, -1, offsets) == {
        ("t", 0): E.GROUP_ID_NOT_FOUND}
    assert h.coordinator.fetch_offsets("g", [("t", 0)]) == (0, [(("t", 0), None)])
    assert h.coordinator.delete_offsets("g", [("t", 0)]) == (E.GROUP_ID_NOT_FOUND, {})
    consumer = await h.coordinator.consumer_heartbeat(HeartbeatRequest(
        group_id="g", member_id="c1", member_epoch=0, client_id="c", client_host="/h",
        version=1, rebalance_timeout_ms=30_000, subscribed_topic_names=("t",), owned={}))
    assert (consumer.error, consumer.message) == (E.GROUP_ID_NOT_FOUND,
                                                  "Group g is not a consumer group.")


async def test_a_share_heartbeat_to_another_kind_of_group(h):
    h.topics.create("t", 1)
    h.coordinator.join("classic", "", None, "consumer", [("range", b"")], 10_000, 10_000,
                       "c", "/h", False, lambda r: None)
    assert h.coordinator.groups["classic"].state is GroupState.PREPARING_REBALANCE
    result = await h.heartbeat("m", 0, ["t"], group="classic")
    assert (result.error, result.message) == (E.GROUP_ID_NOT_FOUND,
                                              "Group classic is not a share group.")
