"""What the two kinds of group with server-side assignment have alike (Kafka's
ModernGroup): the consumer group (KIP-848, ``consumer.group.ConsumerGroup``) and the share
group (KIP-932, ``share.group.ShareGroup``).

Both keep a group epoch, an assignment epoch, their members by id and each member's
target assignment, and both change only by applying their own ``Change`` values, four of
which they make alike (``MemberSubscribed``, ``TargetAssigned``, ``TargetEpoch``,
``CurrentAssigned``: here; each kind writes them as its own records).  The
coordinator's operations for every kind of group (offsets, ListGroups, DeleteGroups,
expiry) read them in the classic group's words (``is_``, ``generation``, ``has``,
``transition_to``): Dead, Empty and Stable mean the same for every kind, and a group with
server-side assignment is never in a classic rebalance state.
"""
from __future__ import annotations

from dataclasses import dataclass
from typing import Generic, Iterable, Iterator, Mapping, TypeVar

from kafkapy.coordinator.group.consumer.types import Assignment, MemberState
from kafkapy.coordinator.group.offsets import OffsetAndMetadata
from kafkapy.protocol.topic_partition import TopicPartition

MemberT = TypeVar("MemberT")
SubscriptionT = TypeVar("SubscriptionT")


# -- the changes both kinds make alike ------------------------------------------------------
@dataclass(frozen=True, slots=True)
class MemberSubscribed(Generic[SubscriptionT]):
    """A member's subscription (ConsumerGroupMemberMetadata, ShareGroupMemberMetadata)."""
    member_id: str
    subscription: SubscriptionT


@dataclass(frozen=True, slots=True)
class TargetAssigned:
    """A member's target assignment (ConsumerGroupTargetAssignmentMember,
    ShareGroupTargetAssignmentMember)."""
    member_id: str
    assignment: Assignment


@dataclass(frozen=True, slots=True)
class TargetEpoch:
    """The target assignment's epoch (ConsumerGroupTargetAssignmentMetadata,
    ShareGroupTargetAssignmentMetadata)."""
    epoch: int


@dataclass(frozen=True, slots=True)
class CurrentAssigned(Generic[MemberT]):
    """A member's epochs, state and partitions (ConsumerGroupCurrentMemberAssignment,
    ShareGroupCurrentMemberAssignment); its subscription is left as it is."""
    member: MemberT


class ModernGroup(Generic[MemberT]):
    """The state both kinds keep; a subclass derives ``state`` (an enum whose Dead,
    Empty and Stable members are named ``DEAD``, ``EMPTY``, ``STABLE``) and applies its
    changes."""

    def __init__(self, group_id: str) -> None:
        self.group_id = group_id
        self.group_epoch = 0
        self.assignment_epoch = 0
        self.members: dict[str, MemberT] = {}
        self.targets: dict[str, Assignment] = {}
        self.offsets: dict[TopicPartition, OffsetAndMetadata] = {}
        self.pending_offset_commits: dict[TopicPartition, int] = {}
        self.dead = False
        # When membership last changed (offsets of an Empty group expire from then).
        self.state_timestamp = 0
        # The subscribed topics must be looked at again (after a load, or a topic was
        # created, deleted or grew): the next heartbeat recomputes what it knows of them.
        self.metadata_stale = False
        # Per member: its session deadline (the coordinator's).
        self.session_tasks: dict[str, object] = {}

    def is_(self, classic_state) -> bool:
        """For the operations every kind of group shares (see the module docstring)."""
        name = classic_state.name
        if name == "DEAD":
            return self.dead
        if name == "EMPTY":
            return not self.dead and not self.members
        if name == "STABLE":
            return self.state.name == "STABLE"
        return False

    @property
    def generation(self) -> int:
        return self.group_epoch

    def has(self, member_id: str) -> bool:
        return member_id in self.members

    def transition_to(self, classic_state, now_ms: int) -> None:
        """Dead is the only state taken (the others are derived); ``state_timestamp``
        becomes ``now_ms`` either way."""
        if classic_state.name == "DEAD":
            self.dead = True
        self.state_timestamp = now_ms

    def target(self, member_id: str) -> Assignment:
        return self.targets.get(member_id, {})

    def changed_targets(self, member_ids: Iterable[str], new: Mapping[str, Assignment]
                        ) -> Iterator[tuple[str, Assignment]]:
        """Each of ``member_ids`` whose target ``new`` (an assignor's result: member id ->
        target, a member left out having none) changes, with its new target; a member
        without a target yet is always listed."""
        for member_id in member_ids:
            target = new.get(member_id, {})
            if member_id not in self.targets or dict(target) != dict(self.targets[member_id]):
                yield member_id, target


def is_reconciled(member, epoch: int) -> bool:
    """Whether the member is stable at ``epoch`` (a consumer group's or a share group's)."""
    return member.state is MemberState.STABLE and member.member_epoch == epoch
