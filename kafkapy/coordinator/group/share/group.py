"""A share group (Kafka's ShareGroup): its epochs, members, target assignment and which
share partitions are initialized, changed only by applying ``Change`` values.

Each change is exactly one of the group's records in ``__consumer_offsets`` (a value or
a tombstone; ``records`` has their bytes): a heartbeat applies its changes at once (the
next heartbeat, even before this one is written, sees them) and appends them, and a
coordinator that loads the partition later rebuilds the same group by applying the same
records in order.  Invariants, as Kafka keeps them:
- ``group_epoch >= assignment_epoch``; the group epoch moves when a member joins, leaves
  or changes its subscription, when a subscribed topic changes, or when initialized
  share partitions are not yet in the target; the target is then recomputed at that
  epoch by the next heartbeat;
- only initialized share partitions (``state_partitions.initialized``) are assigned;
  several members may hold one partition;
- the state is derived: Empty without members, else Stable; Dead once deleted.

A share group keeps no offsets (its progress is the share coordinator's state), so
``offsets`` stays empty; the attributes the coordinator's other operations read of any
group (``group_type``, ``protocol_type``, ``is_``, ``state_timestamp`` ...) are here so
that they treat it as the kind of group it is.  What it has alike with a consumer group is
``modern.ModernGroup``'s.
"""
from __future__ import annotations

import uuid
from dataclasses import dataclass
from typing import Iterable, Union

from kafkapy.coordinator.group.modern import (CurrentAssigned, MemberSubscribed, ModernGroup,
                                              TargetAssigned, TargetEpoch)
from kafkapy.coordinator.group.share.types import (LEAVE_EPOCH, ShareGroupState, ShareMember,
                                                  StatePartitions)

PROTOCOL_TYPE = "share"


# -- the changes (one per record: a value or its tombstone) ------------------------------------
# MemberSubscribed, TargetAssigned, TargetEpoch and CurrentAssigned are ``modern``'s.
@dataclass(frozen=True, slots=True)
class GroupEpoch:
    """ShareGroupMetadata: the group epoch and the hash of the subscribed topics' metadata."""
    epoch: int
    metadata_hash: int


@dataclass(frozen=True, slots=True)
class GroupEpochDeleted:
    """ShareGroupMetadata's tombstone, the last of a deleted group's records."""


@dataclass(frozen=True, slots=True)
class MemberSubscriptionDeleted:
    member_id: str


@dataclass(frozen=True, slots=True)
class TargetEpochDeleted:
    pass


@dataclass(frozen=True, slots=True)
class TargetDeleted:
    member_id: str


@dataclass(frozen=True, slots=True)
class CurrentDeleted:
    member_id: str


@dataclass(frozen=True, slots=True)
class StatePartitionsSet:
    """ShareGroupStatePartitionMetadata."""
    partitions: StatePartitions


@dataclass(frozen=True, slots=True)
class StatePartitionsDeleted:
    pass


Change = Union[GroupEpoch, GroupEpochDeleted, MemberSubscribed, MemberSubscriptionDeleted,
               TargetEpoch, TargetEpochDeleted, TargetAssigned, TargetDeleted, CurrentAssigned,
               CurrentDeleted, StatePartitionsSet, StatePartitionsDeleted]


_TOMBSTONES = (GroupEpochDeleted, MemberSubscriptionDeleted, TargetEpochDeleted, TargetDeleted,
               CurrentDeleted, StatePartitionsDeleted)


def is_tombstone(change: Change) -> bool:
    """Whether the change is a record without value."""
    return isinstance(change, _TOMBSTONES)


def member_removed(member_id: str) -> list[Change]:
    """A member leaving, in Kafka's order: current assignment, target, subscription."""
    return [CurrentDeleted(member_id), TargetDeleted(member_id),
            MemberSubscriptionDeleted(member_id)]


def group_deleted(member_ids: Iterable[str]) -> list[Change]:
    """Every record of the group as tombstones, in Kafka's order
    (ShareGroup.createGroupTombstoneRecords)."""
    ids = list(member_ids)
    return ([CurrentDeleted(m) for m in ids] + [TargetDeleted(m) for m in ids]
            + [TargetEpochDeleted()] + [MemberSubscriptionDeleted(m) for m in ids]
            + [StatePartitionsDeleted(), GroupEpochDeleted()])


class ShareGroup(ModernGroup[ShareMember]):
    """One share group's state (see the module docstring)."""

    protocol_type = PROTOCOL_TYPE
    group_type = "share"

    def __init__(self, group_id: str) -> None:
        super().__init__(group_id)
        self.metadata_hash = 0
        self.state_partitions: StatePartitions | None = None

    # -- derived state ----------------------------------------------------------------
    @property
    def state(self) -> ShareGroupState:
        if self.dead:
            return ShareGroupState.DEAD
        return ShareGroupState.STABLE if self.members else ShareGroupState.EMPTY

    def subscribed_topic_names(self) -> dict[str, int]:
        """Every topic name some member subscribes to, with how many do (Kafka's
        subscribedTopicNames)."""
        counts: dict[str, int] = {}
        for member in self.members.values():
            for name in member.subscription.topic_names:
                counts[name] = counts.get(name, 0) + 1
        return counts

    def initialized(self) -> dict[uuid.UUID, frozenset[int]]:
        """The initialized share partitions, by topic id: what may be assigned."""
        if self.state_partitions is None:
            return {}
        return {t: v.partitions for t, v in self.state_partitions.initialized.items()}

    # -- applying changes --------------------------------------------------------------
    def apply(self, change: Change) -> None:
        match change:
            case GroupEpoch(epoch, metadata_hash):
                self.group_epoch, self.metadata_hash = epoch, metadata_hash
            case GroupEpochDeleted():
                self.dead = True
            case MemberSubscribed(member_id, subscription):
                old = self.members.get(member_id) or ShareMember(member_id)
                self.members[member_id] = old.with_(subscription=subscription)
            case MemberSubscriptionDeleted(member_id):
                self.members.pop(member_id, None)
            case TargetEpoch(epoch):
                self.assignment_epoch = epoch
            case TargetEpochDeleted():
                self.assignment_epoch = -1
            case TargetAssigned(member_id, assignment):
                self.targets[member_id] = assignment
            case TargetDeleted(member_id):
                self.targets.pop(member_id, None)
            case CurrentAssigned(member):
                self._update_current(member)
            case CurrentDeleted(member_id):
                old = self.members.get(member_id)
                if old is not None:  # it stays until its subscription goes
                    self.members[member_id] = old.with_(
                        member_epoch=LEAVE_EPOCH, previous_member_epoch=LEAVE_EPOCH,
                        assigned={})
            case StatePartitionsSet(partitions):
                self.state_partitions = partitions
            case StatePartitionsDeleted():
                self.state_partitions = None

    def _update_current(self, member: ShareMember) -> None:
        old = self.members.get(member.member_id)
        subscription = old.subscription if old is not None else member.subscription
        self.members[member.member_id] = member.with_(subscription=subscription)
