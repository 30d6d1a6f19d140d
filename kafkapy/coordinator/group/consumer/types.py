"""The consumer group protocol's values (KIP-848), shared by the state machine, the
assignors and the records: what a member is, what it owns, what a topic looks like to
an assignor.

An ``Assignment`` maps a topic id to the partition indexes of it; empty topics are never
kept (``assignment`` drops them), so two equal assignments compare equal.  Every value
here is immutable: the state machine replaces a member, it never changes one.
"""
from __future__ import annotations

import enum
import uuid
from dataclasses import dataclass, field, replace
from typing import Iterable, Mapping

Assignment = Mapping[uuid.UUID, frozenset[int]]


def assignment(pairs: Iterable[tuple[uuid.UUID, Iterable[int]]]) -> dict[uuid.UUID, frozenset[int]]:
    """An Assignment from (topic id, partitions) pairs; pairs of one topic are merged,
    empty topics dropped."""
    out: dict[uuid.UUID, set[int]] = {}
    for topic_id, partitions in pairs:
        out.setdefault(topic_id, set()).update(partitions)
    return {t: frozenset(p) for t, p in out.items() if p}


class MemberState(enum.IntEnum):
    """Kafka's MemberState, with the byte its CurrentMemberAssignment record stores."""
    STABLE = 0
    UNREVOKED_PARTITIONS = 1
    UNRELEASED_PARTITIONS = 2
    UNKNOWN = 127


class GroupState(enum.Enum):
    """Kafka's ConsumerGroup.ConsumerGroupState, with the names ListGroups and
    DescribeGroups answer."""
    EMPTY = "Empty"
    ASSIGNING = "Assigning"
    RECONCILING = "Reconciling"
    STABLE = "Stable"
    DEAD = "Dead"


#: Member epochs a heartbeat carries with a meaning of their own.
JOIN_EPOCH = 0
LEAVE_EPOCH = -1
STATIC_LEAVE_EPOCH = -2


@dataclass(frozen=True, slots=True)
class ClassicProtocol:
    name: str
    metadata: bytes


@dataclass(frozen=True, slots=True)
class ClassicMemberMetadata:
    """A member that speaks the classic protocol inside a consumer group (migration)."""
    session_timeout_ms: int
    protocols: tuple[ClassicProtocol, ...]


@dataclass(frozen=True, slots=True)
class Subscription:
    """What a member asked for (ConsumerGroupMemberMetadata's fields)."""
    client_id: str
    client_host: str
    instance_id: str | None = None
    rack_id: str | None = None
    topic_names: tuple[str, ...] = ()
    topic_regex: str | None = None
    rebalance_timeout_ms: int = -1
    server_assignor: str | None = None
    classic: ClassicMemberMetadata | None = None


@dataclass(frozen=True, slots=True)
class Member:
    """Kafka's ConsumerGroupMember: the member's subscription and where its
    reconciliation stands (ConsumerGroupCurrentMemberAssignment's fields)."""
    member_id: str
    subscription: Subscription
    member_epoch: int = 0
    previous_member_epoch: int = -1
    state: MemberState = MemberState.STABLE
    assigned: Assignment = field(default_factory=dict)
    pending_revocation: Assignment = field(default_factory=dict)

    def with_(self, **changes) -> "Member":
        return replace(self, **changes)

    @property
    def instance_id(self) -> str | None:
        return self.subscription.instance_id

    @property
    def uses_classic_protocol(self) -> bool:
        return self.subscription.classic is not None


@dataclass(frozen=True, slots=True)
class TopicMetadata:
    """A subscribed topic as the assignors see it: its name, partition count, and the
    racks of each partition's replicas (empty when no broker has a rack)."""
    topic_id: uuid.UUID
    name: str
    num_partitions: int
    racks: Mapping[int, frozenset[str]] = field(default_factory=dict)


@dataclass(frozen=True, slots=True)
class MemberSpec:
    """One member as an assignor sees it (Kafka's MemberSubscription plus the member's
    current target assignment)."""
    rack_id: str | None
    subscribed_topic_ids: frozenset[uuid.UUID]
    assigned: Assignment
    instance_id: str | None = None


# -- what the handlers hand the coordinator, and what they get back --------------------------
@dataclass(frozen=True, slots=True)
class HeartbeatRequest:
    """A ConsumerGroupHeartbeat, decoded: ``None`` fields were not sent (null), which
    means "unchanged since the last heartbeat" for the subscription fields and "not
    reported" for ``owned`` (the member's owned partitions, ``TopicPartitions``)."""
    group_id: str
    member_id: str
    member_epoch: int
    client_id: str
    client_host: str
    version: int
    instance_id: str | None = None
    rack_id: str | None = None
    rebalance_timeout_ms: int = -1
    subscribed_topic_names: tuple[str, ...] | None = None
    subscribed_topic_regex: str | None = None
    server_assignor: str | None = None
    owned: Assignment | None = None


@dataclass(frozen=True, slots=True)
class HeartbeatResult:
    """The ConsumerGroupHeartbeat answer; ``assignment`` None: not sent (unchanged)."""
    error: int = 0
    message: str | None = None
    member_id: str | None = None
    member_epoch: int = 0
    heartbeat_interval_ms: int = 0
    assignment: Assignment | None = None


@dataclass(frozen=True, slots=True)
class DescribedMember:
    """One member as ConsumerGroupDescribe shows it (``member_type``: 0 classic, 1 consumer)."""
    member_id: str
    instance_id: str | None
    rack_id: str | None
    member_epoch: int
    client_id: str
    client_host: str
    subscribed_topic_names: tuple[str, ...]
    subscribed_topic_regex: str | None
    assigned: Assignment
    target: Assignment
    member_type: int


@dataclass(frozen=True, slots=True)
class DescribedGroup:
    """One group as ConsumerGroupDescribe or ShareGroupDescribe shows it (``members``:
    ``DescribedMember`` values, or a share group's ``share.types.DescribedShareMember``);
    ``error`` non-zero: nothing else set (GROUP_ID_NOT_FOUND for a group that is not of
    the kind asked for, NOT_COORDINATOR, ...)."""
    group_id: str
    error: int = 0
    message: str | None = None
    state: str = "Dead"
    group_epoch: int = 0
    assignment_epoch: int = 0
    assignor_name: str = ""
    members: tuple = ()
