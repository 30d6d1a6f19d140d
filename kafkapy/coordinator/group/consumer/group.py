"""A consumer group (Kafka's ConsumerGroup): its epochs, members, target assignment and
the owner of each partition, changed only by applying ``Change`` values.

The changes are the group's records in ``__consumer_offsets`` (``changes.entries``
writes them): a heartbeat computes the changes it makes, the coordinator applies them
here and appends them, and a coordinator that loads the partition later rebuilds the
same group from the same records.  Invariants, as Kafka keeps them:
- ``group_epoch >= assignment_epoch``; the group epoch moves when a member joins, leaves
  or changes its subscription, or when a subscribed topic changes; the target assignment
  is then recomputed at that epoch by the next heartbeat;
- a partition is owned (assigned or pending revocation) by at most one member; its
  entry in ``partition_epochs`` is the owner's member epoch, so a member reconciling
  towards a partition still owned by another waits (UNRELEASED_PARTITIONS);
- the state is derived: Empty (no member), Assigning (group epoch ahead of the target),
  Reconciling (a member not yet at the target epoch, or not stable), Stable.
What it has alike with a share group is ``modern.ModernGroup``'s.
"""
from __future__ import annotations

import uuid
from dataclasses import dataclass
from typing import Mapping, Union

import structlog

from kafkapy.coordinator.group.consumer.types import (GroupState, Member, Subscription,
                                                     TopicMetadata)
from kafkapy.coordinator.group.modern import (CurrentAssigned, MemberSubscribed, ModernGroup,
                                              TargetAssigned, TargetEpoch, is_reconciled)
from kafkapy.protocol.errors import ErrorCode as E

_log = structlog.get_logger("kafkapy.coordinator.group")

PROTOCOL_TYPE = "consumer"


# -- the changes (one per record kind) ---------------------------------------------------
# MemberSubscribed, TargetAssigned, TargetEpoch and CurrentAssigned are ``modern``'s.
@dataclass(frozen=True, slots=True)
class GroupEpoch:
    epoch: int


@dataclass(frozen=True, slots=True)
class SubscriptionMetadata:
    """The subscribed topics that exist, by name (ConsumerGroupPartitionMetadata)."""
    topics: Mapping[str, TopicMetadata]


@dataclass(frozen=True, slots=True)
class MemberRemoved:
    """The member's subscription, target and current assignment tombstones."""
    member_id: str


@dataclass(frozen=True, slots=True)
class GroupDeleted:
    """The group's own tombstones (epoch, subscription metadata, target epoch)."""


@dataclass(frozen=True, slots=True)
class ClassicGroupDeleted:
    """The tombstone of the classic group an empty classic group id had before it
    became a consumer group."""


@dataclass(frozen=True, slots=True)
class ConvertedToClassic:
    """The group became a classic group (online downgrade): the tombstones of every record
    of the group, whose members were ``member_ids``, then the classic group's GroupMetadata
    value (``classic_value``).  The group object is left behind (``converted``)."""
    member_ids: tuple[str, ...]
    classic_value: bytes


Change = Union[GroupEpoch, SubscriptionMetadata, MemberSubscribed, MemberRemoved,
               TargetAssigned, TargetEpoch, CurrentAssigned, GroupDeleted, ClassicGroupDeleted,
               ConvertedToClassic]


class ConsumerGroup(ModernGroup[Member]):
    """One consumer group's state.  ``offsets`` and ``pending_offset_commits`` are the
    group's committed offsets, kept as for a classic group (the offset operations serve
    both kinds)."""

    protocol_type = PROTOCOL_TYPE
    group_type = "consumer"

    def __init__(self, group_id: str) -> None:
        super().__init__(group_id)
        self.topics: dict[str, TopicMetadata] = {}
        self.static_members: dict[str, str] = {}          # instance id -> member id
        self.partition_epochs: dict[tuple[uuid.UUID, int], int] = {}
        # Replaced by a classic group (online downgrade): no longer the group of its id.
        self.converted = False
        # Per member, besides the session deadline: the rebalance deadline (the
        # coordinator's), and for the members that speak the classic protocol the join and
        # sync deadlines.
        self.rebalance_tasks: dict[str, object] = {}
        self.join_tasks: dict[str, object] = {}
        self.sync_tasks: dict[str, object] = {}

    # -- derived state ----------------------------------------------------------------
    @property
    def state(self) -> GroupState:
        if self.dead:
            return GroupState.DEAD
        if not self.members:
            return GroupState.EMPTY
        if self.group_epoch > self.assignment_epoch:
            return GroupState.ASSIGNING
        epoch = self.assignment_epoch
        if any(not is_reconciled(m, epoch) for m in self.members.values()):
            return GroupState.RECONCILING
        return GroupState.STABLE

    def member(self, member_id: str) -> Member | None:
        return self.members.get(member_id)

    def is_static_member_fenced(self, instance_id: str | None, member_id: str) -> bool:
        owner = self.static_members.get(instance_id) if instance_id else None
        return owner is not None and owner != member_id

    def is_subscribed_to(self, topic: str) -> bool:
        return topic in self.topics

    def commit_error(self, member_id: str, epoch: int, transactional: bool,
                     api_version: int) -> tuple[int, str | None]:
        """Kafka's ConsumerGroup.validateOffsetCommit: (error code, message)."""
        if epoch < 0 and not self.members:
            return 0, None
        member = self.members.get(member_id)
        if member is None:
            return E.UNKNOWN_MEMBER_ID, (f"Member {member_id} is not a member of group "
                                         f"{self.group_id}.")
        if not transactional and not member.uses_classic_protocol and api_version < 9:
            return E.UNSUPPORTED_VERSION, ("OffsetCommit version 9 or above must be used by "
                                           "members using the modern group protocol")
        return _epoch_error(epoch, member)

    def fetch_error(self, member_id: str | None, epoch: int) -> tuple[int, str | None]:
        """Kafka's ConsumerGroup.validateOffsetFetch."""
        if member_id is None and epoch < 0:
            return 0, None
        member = self.members.get(member_id) if member_id is not None else None
        if member is None:
            return E.UNKNOWN_MEMBER_ID, (f"Member {member_id} is not a member of group "
                                         f"{self.group_id}.")
        return _epoch_error(epoch, member)

    def static_member(self, instance_id: str | None) -> Member | None:
        member_id = self.static_members.get(instance_id) if instance_id else None
        return self.members.get(member_id) if member_id else None

    def partition_epoch(self, topic_id: uuid.UUID, partition: int) -> int:
        """The epoch of the member owning the partition, -1 when no member owns it."""
        return self.partition_epochs.get((topic_id, partition), -1)

    def subscribed_names(self, regex_topics) -> set[str]:
        """Every topic name some member subscribes to (``regex_topics(pattern)``: the
        existing topics a regular expression matches)."""
        names: set[str] = set()
        for member in self.members.values():
            names.update(subscribed_names(member.subscription, regex_topics))
        return names

    def preferred_assignor(self) -> str | None:
        """The server assignor most members name (Kafka's computePreferredServerAssignor)."""
        counts: dict[str, int] = {}
        for member in self.members.values():
            name = member.subscription.server_assignor
            if name:
                counts[name] = counts.get(name, 0) + 1
        return max(counts, key=counts.__getitem__) if counts else None

    # -- applying changes --------------------------------------------------------------
    def apply(self, change: Change) -> None:
        match change:
            case GroupEpoch(epoch):
                self.group_epoch = epoch
            case SubscriptionMetadata(topics):
                self.topics = dict(topics)
            case MemberSubscribed(member_id, subscription):
                self._subscribe(member_id, subscription)
            case MemberRemoved(member_id):
                self._remove(member_id)
            case TargetAssigned(member_id, assignment):
                self.targets[member_id] = assignment
            case TargetEpoch(epoch):
                self.assignment_epoch = epoch
            case CurrentAssigned(member):
                self._update_current(member)
            case GroupDeleted():
                self.dead = True
            case ClassicGroupDeleted():
                pass
            case ConvertedToClassic():
                self.converted = True

    def _subscribe(self, member_id: str, subscription: Subscription) -> None:
        old = self.members.get(member_id)
        member = old.with_(subscription=subscription) if old else Member(member_id, subscription)
        self.members[member_id] = member
        if old is not None and old.instance_id and old.instance_id != subscription.instance_id:
            self.static_members.pop(old.instance_id, None)
        if subscription.instance_id:
            self.static_members[subscription.instance_id] = member_id

    def _remove(self, member_id: str) -> None:
        member = self.members.pop(member_id, None)
        self.targets.pop(member_id, None)
        if member is None:
            return
        self._release(member)
        if member.instance_id and self.static_members.get(member.instance_id) == member_id:
            del self.static_members[member.instance_id]

    def _update_current(self, member: Member) -> None:
        old = self.members.get(member.member_id)
        if old is not None:
            self._release(old)
            member = member.with_(subscription=old.subscription)
        self.members[member.member_id] = member
        for assignment in (member.assigned, member.pending_revocation):
            for topic_id, partitions in assignment.items():
                for p in partitions:
                    owner = self.partition_epochs.get((topic_id, p))
                    if owner is not None:   # Kafka throws: the records would be inconsistent
                        _log.warning("partition owned twice in consumer group",
                                     group_id=self.group_id, topic_id=str(topic_id),
                                     partition=p, member_id=member.member_id)
                    self.partition_epochs[(topic_id, p)] = member.member_epoch

    def _release(self, member: Member) -> None:
        for assignment in (member.assigned, member.pending_revocation):
            for topic_id, partitions in assignment.items():
                for p in partitions:
                    self.partition_epochs.pop((topic_id, p), None)


def _epoch_error(epoch: int, member: Member) -> tuple[int, str | None]:
    if epoch == member.member_epoch:
        return 0, None
    if member.uses_classic_protocol:
        return E.ILLEGAL_GENERATION, (f"The received generation id {epoch} does not match "
                                      f"the expected member epoch {member.member_epoch}.")
    return E.STALE_MEMBER_EPOCH, (f"The received member epoch {epoch} does not match the "
                                  f"expected member epoch {member.member_epoch}.")


def subscribed_names(subscription: Subscription, regex_topics) -> set[str]:
    names = set(subscription.topic_names)
    if subscription.topic_regex:
        names.update(regex_topics(subscription.topic_regex))
    return names
