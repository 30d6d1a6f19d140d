"""The share groups' offsets admin operations of the group coordinator (``ShareAdminOps``):
DescribeShareGroupOffsets, AlterShareGroupOffsets, DeleteShareGroupOffsets, over the
coordinator harness (a real ``__consumer_offsets`` log) and ``InMemoryPersister`` (the share
coordinator's own rules)."""
from __future__ import annotations

import asyncio

import pytest

from kafkapy.coordinator.group.share.group import ShareGroup
from kafkapy.coordinator.group.share.types import ShareHeartbeatRequest
from kafkapy.coordinator.group.share_admin_ops import (NO_OFFSET_INFORMATION, AlteredTopic,
                                                       PartitionResult, PartitionStartOffset)
from kafkapy.coordinator.share.persister import StateBatch
from kafkapy.protocol.errors import ErrorCode as E
from kafkapy.protocol.topic_partition import TopicPartition
from tests.support.group_coordinator import Harness
from tests.support.share import InMemoryPersister

UNKNOWN = "This server does not host this topic-partition."


class Ends:
    """End offsets by partition; a partition missing answers NOT_LEADER_OR_FOLLOWER."""

    def __init__(self, offsets: dict[tuple[str, int], int] | None = None) -> None:
        self.offsets = offsets or {}
        self.asked: list[list[TopicPartition]] = []

    async def latest_offsets(self, partitions):
        self.asked.append(list(partitions))
        return {tp: (0, self.offsets[tp]) if tp in self.offsets
                else (E.NOT_LEADER_OR_FOLLOWER, -1) for tp in partitions}


@pytest.fixture
def h(tmp_path):
    harness = Harness(tmp_path)
    harness.persister = InMemoryPersister()
    harness.coordinator.persister = harness.persister
    harness.orders = harness.topics.create("orders", 3)
    harness.audit = harness.topics.create("audit", 1)
    return harness


def run(coro):
    return asyncio.run(coro)


def group(h, group_id="g") -> ShareGroup:
    return h.coordinator._groups[group_id]


async def join(h, member_id="m1", group_id="g", topics=("orders",)):
    result = await h.coordinator.share_heartbeat(ShareHeartbeatRequest(
        group_id=group_id, member_id=member_id, member_epoch=0, client_id="c",
        client_host="/127.0.0.1", subscribed_topic_names=topics))
    assert result.error == 0
    for _ in range(5):          # the share state's initialization runs after the answer
        await asyncio.sleep(0)
    return result


async def leave(h, member_id="m1", group_id="g", epoch=1):
    result = await h.coordinator.share_heartbeat(ShareHeartbeatRequest(
        group_id=group_id, member_id=member_id, member_epoch=-1, client_id="c",
        client_host="/127.0.0.1"))
    assert result.error == 0


# -- AlterShareGroupOffsets ----------------------------------------------------------------

def test_alter_creates_the_group_and_initializes_the_state_at_the_offsets(h):
    result = run(h.coordinator.alter_share_group_offsets(
        "g", [("orders", [(0, 5), (2, 7)])]))
    assert result.error == 0
    assert result.topics == (AlteredTopic("orders", h.orders, (PartitionResult(0),
                                                              PartitionResult(2))),)
    assert h.persister.stored("g", h.orders, 0).start_offset == 5
    assert h.persister.stored("g", h.orders, 2).start_offset == 7
    assert h.persister.stored("g", h.orders, 1) is None
    g = group(h)
    assert isinstance(g, ShareGroup) and g.state.value == "Empty"
    assert g.initialized() == {h.orders: frozenset({0, 2})}
    assert not g.state_partitions.initializing
    _, groups = h.coordinator.list_groups(types=["share"])
    assert [(o.group_id, o.state) for o in groups] == [("g", "Empty")]


def test_a_group_made_by_alter_is_loaded_again_with_its_initialized_partitions(h):
    run(h.coordinator.alter_share_group_offsets("g", [("orders", [(1, 3)])]))
    c = h.restart()
    assert isinstance(c._groups["g"], ShareGroup)
    assert c._groups["g"].initialized() == {h.orders: frozenset({1})}


def test_alter_uses_the_group_epoch_as_state_epoch(h):
    async def scenario():
        await join(h)
        await leave(h)
        epoch = group(h).group_epoch
        assert epoch >= 2
        result = await h.coordinator.alter_share_group_offsets("g", [("orders", [(0, 4)])])
        assert result.error == 0
        return epoch
    epoch = run(scenario())
    stored = h.persister.stored("g", h.orders, 0)
    assert (stored.state_epoch, stored.start_offset) == (epoch, 4)


def test_alter_refuses_a_group_with_members(h):
    async def scenario():
        await join(h)
        return await h.coordinator.alter_share_group_offsets("g", [("orders", [(0, 4)])])
    result = run(scenario())
    assert (result.error, result.message) == (E.NON_EMPTY_GROUP, "The group is not empty.")
    assert not [c for c in h.persister.calls if c[0] == "initialize" and c[4]["start_offset"] == 4]


def test_alter_refuses_a_group_of_another_kind(h):
    h.first_join(group="classic")
    result = run(h.coordinator.alter_share_group_offsets("classic", [("orders", [(0, 1)])]))
    assert (result.error, result.message) == (E.GROUP_ID_NOT_FOUND,
                                              "Group classic is not a share group.")


def test_alter_answers_unknown_topics_and_partitions_per_partition(h):
    result = run(h.coordinator.alter_share_group_offsets(
        "g", [("nosuch", [(0, 1)]), ("orders", [(3, 1), (1, 2)])]))
    assert result.error == 0
    assert result.topics == (
        AlteredTopic("nosuch", None, (PartitionResult(0, E.UNKNOWN_TOPIC_OR_PARTITION, UNKNOWN),)),
        AlteredTopic("orders", h.orders, (PartitionResult(3, E.UNKNOWN_TOPIC_OR_PARTITION, UNKNOWN),
                                          PartitionResult(1))))
    assert group(h).initialized() == {h.orders: frozenset({1})}


def test_alter_with_nothing_to_set_creates_no_group(h):
    result = run(h.coordinator.alter_share_group_offsets("g", [("nosuch", [(0, 1)])]))
    assert result.topics[0].partitions[0].error == E.UNKNOWN_TOPIC_OR_PARTITION
    assert "g" not in h.coordinator._groups


def test_a_partition_the_persister_refuses_carries_its_error_and_stays_initializing(h):
    h.persister.fail_next("initialize", E.FENCED_STATE_EPOCH)
    result = run(h.coordinator.alter_share_group_offsets("g", [("audit", [(0, 9)])]))
    assert result.error == 0
    (row,) = result.topics[0].partitions
    assert (row.partition, row.error) == (0, E.FENCED_STATE_EPOCH)
    assert row.message.startswith("The share coordinator rejected")
    g = group(h)
    assert g.initialized() == {}
    assert set(g.state_partitions.initializing) == {h.audit}


@pytest.mark.parametrize("group_id,error", [("", E.INVALID_GROUP_ID)])
def test_alter_refuses_an_empty_group_id(h, group_id, error):
    result = run(h.coordinator.alter_share_group_offsets(group_id, [("orders", [(0, 1)])]))
    assert (result.error, result.message) == (error, "The configured groupId is invalid.")


def test_alter_on_a_partition_not_led_here_answers_not_coordinator(h):
    h.coordinator.unload(0)
    result = run(h.coordinator.alter_share_group_offsets("g", [("orders", [(0, 1)])]))
    assert (result.error, result.message) == (E.NOT_COORDINATOR,
                                              "This is not the correct coordinator.")


# -- DescribeShareGroupOffsets ---------------------------------------------------------------

def test_describe_named_partitions_reads_the_share_state(h):
    run(h.coordinator.alter_share_group_offsets("g", [("orders", [(0, 5)])]))
    ends = Ends({TopicPartition("orders", 0): 9})
    described = run(h.coordinator.describe_share_group_offsets(
        "g", [("orders", [0, 1]), ("nosuch", [2])], ends))
    assert described.error == 0
    orders, nosuch = described.topics
    assert (orders.name, orders.topic_id) == ("orders", h.orders)
    assert (orders.partitions[0].start_offset, orders.partitions[0].lag) == (5, 9 - 5)
    assert orders.partitions[1].start_offset == -1       # no state: absence of data
    assert ends.asked == [[TopicPartition("orders", 0)]]
    assert (nosuch.name, nosuch.topic_id, nosuch.partitions) == (
        "nosuch", None, (PartitionStartOffset(2),))


def test_describe_named_partitions_does_not_look_at_the_group(h):
    described = run(h.coordinator.describe_share_group_offsets(
        "nobody", [("orders", [0])], Ends()))
    assert described.error == 0
    assert described.topics[0].partitions == (PartitionStartOffset(0, -1, -1),)


def test_describe_all_lists_the_initialized_partitions_only(h):
    run(h.coordinator.alter_share_group_offsets("g", [("orders", [(2, 1), (0, 3)])]))
    h.persister.fail_next("initialize", E.FENCED_STATE_EPOCH)
    run(h.coordinator.alter_share_group_offsets("g", [("audit", [(0, 1)])]))
    ends = Ends({TopicPartition("orders", p): 10 for p in range(3)})
    described = run(h.coordinator.describe_share_group_offsets("g", None, ends))
    assert [(t.name, [(p.partition, p.start_offset) for p in t.partitions])
            for t in described.topics] == [("orders", [(0, 3), (2, 1)])]


def test_describe_all_of_an_unknown_group_has_no_topics(h):
    described = run(h.coordinator.describe_share_group_offsets("nobody", None, Ends()))
    assert (described.error, described.topics) == (0, ())


def test_describe_all_needs_the_group_partition(h):
    h.coordinator.unload(0)
    described = run(h.coordinator.describe_share_group_offsets("g", None, Ends()))
    assert (described.error, described.message) == (E.NOT_COORDINATOR,
                                                    "This is not the correct coordinator.")


def test_lag_is_the_end_offset_minus_the_start_minus_the_delivered_records(h):
    run(h.coordinator.alter_share_group_offsets("g", [("orders", [(0, 0), (1, 0)])]))
    for p, dcc in ((0, 4), (1, -1)):
        assert run(h.persister.write("g", h.orders, p, state_epoch=0, leader_epoch=3,
                                     start_offset=10, delivery_complete_count=dcc,
                                     batches=[StateBatch(10, 12, 2, 1)])) == 0
    ends = Ends({TopicPartition("orders", 0): 30})
    described = run(h.coordinator.describe_share_group_offsets("g", None, ends))
    rows = {p.partition: p for p in described.topics[0].partitions}
    assert (rows[0].start_offset, rows[0].leader_epoch, rows[0].lag) == (10, 3, 30 - 10 - 4)
    assert (rows[1].start_offset, rows[1].lag) == (10, -1)     # delivered count unknown
    assert ends.asked == [[TopicPartition("orders", 0)]]


def test_a_partition_whose_end_offset_fails_carries_the_error(h):
    run(h.coordinator.alter_share_group_offsets("g", [("audit", [(0, 0)])]))
    run(h.persister.write("g", h.audit, 0, state_epoch=0, leader_epoch=0, start_offset=2,
                          delivery_complete_count=0, batches=[]))
    described = run(h.coordinator.describe_share_group_offsets("g", [("audit", [0])], Ends()))
    (row,) = described.topics[0].partitions
    assert (row.error, row.start_offset, row.lag) == (E.NOT_LEADER_OR_FOLLOWER, -1, -1)


def test_a_failed_summary_is_the_absence_of_data(h):
    run(h.coordinator.alter_share_group_offsets("g", [("audit", [(0, 6)])]))
    h.persister.fail_next("read_summary", E.COORDINATOR_NOT_AVAILABLE)
    described = run(h.coordinator.describe_share_group_offsets("g", [("audit", [0])], Ends()))
    assert described.topics[0].partitions == (PartitionStartOffset(0),)


def test_an_inactive_coordinator_answers_coordinator_not_available(h):
    h.coordinator.shutdown()
    described = run(h.coordinator.describe_share_group_offsets("g", [("orders", [0])], Ends()))
    assert described.error == E.COORDINATOR_NOT_AVAILABLE


# -- DeleteShareGroupOffsets -----------------------------------------------------------------

def test_delete_removes_the_state_of_initialized_topics(h):
    run(h.coordinator.alter_share_group_offsets("g", [("orders", [(0, 1), (1, 1)]),
                                                      ("audit", [(0, 1)])]))
    result = run(h.coordinator.delete_share_group_offsets("g", ["orders"]))
    assert result.error == 0
    assert [(t.name, t.topic_id, t.error) for t in result.topics] == [("orders", h.orders, 0)]
    assert h.persister.stored("g", h.orders, 0) is None
    assert h.persister.stored("g", h.audit, 0) is not None
    g = group(h)
    assert g.initialized() == {h.audit: frozenset({0})}
    assert not g.state_partitions.deleting


def test_delete_refuses_unknown_topics_and_topics_without_state(h):
    run(h.coordinator.alter_share_group_offsets("g", [("orders", [(0, 1)])]))
    result = run(h.coordinator.delete_share_group_offsets("g", ["nosuch", "audit"]))
    assert [(t.name, t.topic_id, t.error, t.message) for t in result.topics] == [
        ("nosuch", None, E.UNKNOWN_TOPIC_OR_PARTITION, UNKNOWN),
        ("audit", None, E.UNKNOWN_TOPIC_OR_PARTITION, NO_OFFSET_INFORMATION)]


def test_a_group_without_share_partitions_answers_no_topics(h):
    async def scenario():
        await join(h, topics=("nosuch",))
        await leave(h)
        return await h.coordinator.delete_share_group_offsets("g", ["orders"])
    result = run(scenario())
    assert (result.error, result.topics) == (0, ())


def test_delete_needs_an_empty_share_group(h):
    async def scenario():
        await join(h)
        return await h.coordinator.delete_share_group_offsets("g", ["orders"])
    assert run(scenario()).error == E.NON_EMPTY_GROUP
    result = run(h.coordinator.delete_share_group_offsets("nobody", ["orders"]))
    assert (result.error, result.message) == (E.GROUP_ID_NOT_FOUND, "Group nobody not found.")


def test_a_failed_deletion_leaves_the_topic_deleting_and_a_retry_deletes_every_partition(h):
    run(h.coordinator.alter_share_group_offsets("g", [("orders", [(1, 1)])]))
    h.persister.fail_next("delete", E.COORDINATOR_NOT_AVAILABLE)
    result = run(h.coordinator.delete_share_group_offsets("g", ["orders"]))
    assert [(t.name, t.topic_id, t.error) for t in result.topics] == [
        ("orders", h.orders, E.COORDINATOR_NOT_AVAILABLE)]
    assert group(h).state_partitions.deleting == {h.orders: "orders"}
    h.persister.calls.clear()
    result = run(h.coordinator.delete_share_group_offsets("g", ["orders"]))
    assert [(t.name, t.error) for t in result.topics] == [("orders", 0)]
    assert sorted(c[3] for c in h.persister.calls if c[0] == "delete") == [0, 1, 2]
    assert not group(h).state_partitions.deleting
    assert h.persister.stored("g", h.orders, 1) is None


def test_alter_after_delete_takes_the_topic_out_of_deleting(h):
    run(h.coordinator.alter_share_group_offsets("g", [("orders", [(0, 1)])]))
    h.persister.fail_next("delete", E.COORDINATOR_NOT_AVAILABLE)
    run(h.coordinator.delete_share_group_offsets("g", ["orders"]))
    run(h.coordinator.alter_share_group_offsets("g", [("orders", [(0, 8)])]))
    g = group(h)
    assert not g.state_partitions.deleting
    assert g.initialized() == {h.orders: frozenset({0})}
    assert h.persister.stored("g", h.orders, 0).start_offset == 8
