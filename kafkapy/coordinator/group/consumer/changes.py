"""A consumer group's changes as the records Kafka writes for them to ``__consumer_offsets``
(``records`` has the byte formats), and the group rebuilt from what a load read back.

A member's removal is three tombstones (current assignment, target, subscription, in
Kafka's order); a group's deletion the tombstones of every record it has, in Kafka's
order (``records.group_tombstones``); a conversion to a classic group those tombstones
followed by the classic group's GroupMetadata record (Kafka's convertToClassicGroup).
"""
from __future__ import annotations

from typing import Iterable

from kafkapy.coordinator.group import records as classic_records
from kafkapy.coordinator.group.consumer import records as R
from kafkapy.coordinator.group.consumer.group import (Change, ClassicGroupDeleted,
                                                     ConsumerGroup, ConvertedToClassic,
                                                     CurrentAssigned,
                                                     GroupDeleted, GroupEpoch, MemberRemoved,
                                                     MemberSubscribed, SubscriptionMetadata,
                                                     TargetAssigned, TargetEpoch)

Entry = tuple[bytes, bytes | None]


def entries(group_id: str, changes: Iterable[Change]) -> list[Entry]:
    out: list[Entry] = []
    for change in changes:
        out.extend(_entries(group_id, change))
    return out


def _entries(group_id: str, change: Change) -> list[Entry]:
    match change:
        case GroupEpoch(epoch):
            return [R.group_epoch_record(group_id, epoch)]
        case SubscriptionMetadata(topics):
            return [R.partition_metadata_record(
                group_id, {t.topic_id: t for t in topics.values()})]
        case MemberSubscribed(member_id, subscription):
            return [R.member_record(group_id, member_id, subscription)]
        case MemberRemoved(member_id):
            return R.member_tombstones(group_id, member_id)
        case TargetAssigned(member_id, assignment):
            return [R.target_member_record(group_id, member_id, assignment)]
        case TargetEpoch(epoch):
            return [R.target_epoch_record(group_id, epoch)]
        case CurrentAssigned(member):
            return [R.current_assignment_record(group_id, member)]
        case GroupDeleted():
            return R.group_tombstones(group_id, ())
        case ClassicGroupDeleted():
            return [(classic_records.group_key(group_id), None)]
        case ConvertedToClassic(member_ids, classic_value):
            return (R.group_tombstones(group_id, member_ids)
                    + [(classic_records.group_key(group_id), classic_value)])
    raise TypeError(f"not a consumer group change: {change!r}")


def deletion_entries(group: ConsumerGroup) -> list[Entry]:
    """Every record of the group, as tombstones (Kafka's createGroupTombstoneRecords)."""
    return R.group_tombstones(group.group_id, group.members)


def rebuilt(group_id: str, stored: R.StoredConsumerGroup) -> ConsumerGroup:
    """The group a load read back: its changes applied in the order the live group
    would have made them."""
    group = ConsumerGroup(group_id)
    group.apply(GroupEpoch(stored.group_epoch))
    group.apply(SubscriptionMetadata({t.name: t for t in stored.topics.values()}))
    for member_id, subscription in stored.subscriptions.items():
        group.apply(MemberSubscribed(member_id, subscription))
    for member_id, target in stored.targets.items():
        group.apply(TargetAssigned(member_id, target))
    group.apply(TargetEpoch(stored.assignment_epoch))
    for member in stored.current.values():
        if member.member_id in group.members:
            group.apply(CurrentAssigned(member))
    return group
