"""The share group protocol's values (KIP-932): what a member asked for and holds, what
a heartbeat brings, how ShareGroupDescribe shows a group, and which share partitions
have their state initialized in the share coordinator.

Every value is immutable; the group replaces a member, it never changes one.  The values
the consumer group protocol has too are its own (``consumer.types``), named here as well:
an ``Assignment`` (topic id -> partitions; empty topics are never kept), ``MemberState``,
the epochs a heartbeat carries with a meaning of their own, the heartbeat's answer
(``HeartbeatResult``) and a described group (``DescribedGroup``, its members here
``DescribedShareMember``).  Unlike a consumer group, a share group may assign one
partition to several members at once.
"""
from __future__ import annotations

import enum
import uuid
from dataclasses import dataclass, field, replace
from typing import Mapping

from kafkapy.coordinator.group.consumer.types import (JOIN_EPOCH, LEAVE_EPOCH, Assignment,
                                                     DescribedGroup, HeartbeatResult,
                                                     MemberState)

__all__ = ["Assignment", "MemberState", "ShareGroupState", "ShareSubscription", "ShareMember",
           "InitTopic", "StatePartitions", "ShareHeartbeatRequest", "HeartbeatResult",
           "DescribedShareMember", "DescribedGroup", "JOIN_EPOCH", "LEAVE_EPOCH",
           "NO_SUBSCRIPTION"]


class ShareGroupState(enum.Enum):
    """Kafka's ShareGroup.ShareGroupState, with the names ListGroups and
    ShareGroupDescribe answer: Empty without members, else Stable."""
    EMPTY = "Empty"
    STABLE = "Stable"
    DEAD = "Dead"


@dataclass(frozen=True, slots=True)
class ShareSubscription:
    """What a member asked for (ShareGroupMemberMetadataValue's fields)."""
    client_id: str = ""
    client_host: str = ""
    rack_id: str | None = None
    topic_names: frozenset[str] = frozenset()


#: Kafka's ShareGroupMember.Builder defaults: a member known only from its current
#: assignment record.
NO_SUBSCRIPTION = ShareSubscription()


@dataclass(frozen=True, slots=True)
class ShareMember:
    """Kafka's ShareGroupMember: its subscription, its epochs and the partitions it is
    assigned (ShareGroupCurrentMemberAssignmentValue's fields)."""
    member_id: str
    subscription: ShareSubscription = NO_SUBSCRIPTION
    member_epoch: int = 0
    previous_member_epoch: int = -1
    state: MemberState = MemberState.STABLE
    assigned: Assignment = field(default_factory=dict)

    def with_(self, **changes) -> "ShareMember":
        return replace(self, **changes)


@dataclass(frozen=True, slots=True)
class InitTopic:
    """One topic's share partitions in ShareGroupStatePartitionMetadata (Kafka's
    InitMapValue): its name, partitions, and when they were added (the coordinator's
    clock; a load replays every entry at the loading time, as Kafka does)."""
    name: str
    partitions: frozenset[int]
    timestamp: int = -1


@dataclass(frozen=True, slots=True)
class StatePartitions:
    """Which share partitions of the group have state in the share coordinator
    (ShareGroupStatePartitionMetadataValue): being initialized, initialized (only these
    are assigned), or being deleted (topic id -> name)."""
    initializing: Mapping[uuid.UUID, InitTopic] = field(default_factory=dict)
    initialized: Mapping[uuid.UUID, InitTopic] = field(default_factory=dict)
    deleting: Mapping[uuid.UUID, str] = field(default_factory=dict)


# -- what the handlers hand the coordinator, and what ShareGroupDescribe gets back ------------
@dataclass(frozen=True, slots=True)
class ShareHeartbeatRequest:
    """A ShareGroupHeartbeat, decoded: ``None`` fields were not sent (null: unchanged
    since the last heartbeat)."""
    group_id: str
    member_id: str
    member_epoch: int
    client_id: str
    client_host: str
    rack_id: str | None = None
    subscribed_topic_names: tuple[str, ...] | None = None


@dataclass(frozen=True, slots=True)
class DescribedShareMember:
    """One member as ShareGroupDescribe shows it (topic names in Kafka's HashSet order)."""
    member_id: str
    rack_id: str | None
    member_epoch: int
    client_id: str
    client_host: str
    subscribed_topic_names: tuple[str, ...]
    assigned: Assignment
