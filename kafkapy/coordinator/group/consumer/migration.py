"""Online migration between the classic and the consumer group protocols (Kafka 4.x's
``group.consumer.migration.policy``): the conversions of a group from one kind to the
other, and what a consumer group needs to know of its members that speak the classic
protocol.  Pure: the coordinator (``migration_ops``, ``classic_members``) applies them.

Upgrade (Kafka's ConsumerGroup.fromClassicGroup): a non-empty classic group of the
``consumer`` protocol type becomes a consumer group at group epoch = target epoch = its
generation; each classic member becomes a member at that epoch, STABLE, that still speaks
the classic protocol (``Subscription.classic``: its session timeout and protocols), its
subscribed topics and rack read from its metadata for the group's protocol, its assigned
partitions (= its target) from its last assignment -- topics that no longer exist are
dropped.  The changes are, in Kafka's record order: the classic group's tombstone, every
member's subscription, the group epoch, every member's target, the target epoch, every
member's current assignment.

Downgrade (Kafka's ClassicGroup.fromConsumerGroup): a consumer group whose members, but the
one leaving, all speak the classic protocol becomes a Stable classic group at generation =
its group epoch, protocol type ``consumer``, the protocol most of them prefer, the leader
the first member; each member keeps its target assignment, serialized at the version of its
metadata.  One change: every consumer group record's tombstone, then the classic group's
record.

Topic names and ids are translated through the callables the coordinator hands in (its
metadata), so a topic that no longer exists is left out as Kafka leaves it out.
"""
from __future__ import annotations

import uuid
from dataclasses import dataclass
from typing import Callable, Iterable

from kafkapy.coordinator.group import records as classic_records
from kafkapy.coordinator.group.consumer.embedded import (EmbeddedSubscription,
                                                        MalformedProtocol, assignment_bytes,
                                                        decode_assignment, decode_subscription,
                                                        protocol_version)
from kafkapy.coordinator.group.consumer.group import (PROTOCOL_TYPE, Change,
                                                     ClassicGroupDeleted, ConsumerGroup,
                                                     ConvertedToClassic, CurrentAssigned,
                                                     GroupEpoch, MemberSubscribed,
                                                     TargetAssigned, TargetEpoch)
from kafkapy.coordinator.group.consumer.types import (Assignment, ClassicMemberMetadata,
                                                     ClassicProtocol, Member, MemberState,
                                                     Subscription, assignment)
from kafkapy.coordinator.group.group import GroupMetadata, GroupState, IllegalTransition
from kafkapy.coordinator.group.member import MemberMetadata, Protocols

TopicId = Callable[[str], "uuid.UUID | None"]
TopicName = Callable[[uuid.UUID], "str | None"]

_UPGRADE = frozenset({"bidirectional", "upgrade"})
_DOWNGRADE = frozenset({"bidirectional", "downgrade"})


def upgrade_enabled(policy: str) -> bool:
    """Kafka's ConsumerGroupMigrationPolicy (an unknown name is ``disabled``)."""
    return policy.lower() in _UPGRADE


def downgrade_enabled(policy: str) -> bool:
    return policy.lower() in _DOWNGRADE


# -- classic members inside a consumer group ---------------------------------------------------
def classic_metadata(session_timeout_ms: int, protocols: Protocols) -> ClassicMemberMetadata:
    return ClassicMemberMetadata(session_timeout_ms,
                                 tuple(ClassicProtocol(n, bytes(m)) for n, m in protocols))


def classic_subscription(old: Subscription, decoded: EmbeddedSubscription, *, client_id: str,
                         client_host: str, instance_id: str | None, session_timeout_ms: int,
                         rebalance_timeout_ms: int, protocols: Protocols) -> Subscription:
    """A classic member's subscription after a JoinGroup (Kafka's classicGroupJoinToConsumer
    Group: instance id, rack, rebalance timeout kept when not sent; the topics of its
    metadata; no server assignor; its classic metadata)."""
    return Subscription(
        client_id=client_id, client_host=client_host,
        instance_id=instance_id if instance_id is not None else old.instance_id,
        rack_id=decoded.rack_id if decoded.rack_id is not None else old.rack_id,
        topic_names=tuple(sorted(set(decoded.topics))), topic_regex=old.topic_regex,
        rebalance_timeout_ms=(rebalance_timeout_ms if rebalance_timeout_ms != -1
                              else old.rebalance_timeout_ms),
        server_assignor=old.server_assignor,
        classic=classic_metadata(session_timeout_ms, protocols))


def by_id(partitions: Iterable[tuple[str, Iterable[int]]], topic_id: TopicId) -> Assignment:
    """(topic name, partitions) as an Assignment; unknown topics dropped, a topic named
    twice keeps its last entry (Kafka's toTopicPartitionMap)."""
    out: dict[uuid.UUID, frozenset[int]] = {}
    for name, ps in partitions:
        tid = topic_id(name)
        if tid is not None:
            out[tid] = frozenset(ps)
    return assignment(out.items())


def by_name(a: Assignment, topic_name: TopicName) -> dict[str, frozenset[int]]:
    out = {}
    for tid, ps in a.items():
        name = topic_name(tid)
        if name is not None:
            out[name] = ps
    return out


def supports_classic_protocols(group: ConsumerGroup, protocol_type: str,
                               names: list[str]) -> bool:
    """Kafka's ConsumerGroup.supportsClassicProtocols: the consumer protocol type, and (in a
    non-empty group) a protocol every classic member supports."""
    if protocol_type != PROTOCOL_TYPE:
        return False
    if not group.members:
        return bool(names)
    supported = [{p.name for p in m.subscription.classic.protocols}
                 for m in group.members.values() if m.uses_classic_protocol]
    return any(all(name in s for s in supported) for name in names)


def all_classic_except(group: ConsumerGroup, member_id: str) -> bool:
    """Kafka's allMembersUseClassicProtocolExcept: ``member_id`` speaks the consumer
    protocol and every other member the classic one."""
    member = group.members.get(member_id)
    classic = sum(1 for m in group.members.values() if m.uses_classic_protocol)
    return (member is not None and not member.uses_classic_protocol
            and classic == len(group.members) - 1)


def waiting_on_unreleased(group: ConsumerGroup, member: Member) -> bool:
    """Kafka's waitingOnUnreleasedPartition: a partition of its target it does not have is
    still owned by another member."""
    if member.state is not MemberState.UNRELEASED_PARTITIONS:
        return False
    for topic_id, partitions in group.target(member.member_id).items():
        have = member.assigned.get(topic_id, frozenset())
        if any(p not in have and group.partition_epoch(topic_id, p) != -1 for p in partitions):
            return True
    return False


def assignment_of(member: Member, topic_name: TopicName) -> bytes:
    """A classic member's assigned partitions as SyncGroup hands them out: at the version
    of its first protocol's metadata (Kafka's prepareAssignment)."""
    version = protocol_version(member.subscription.classic.protocols[0].metadata)
    return assignment_bytes(by_name(member.assigned, topic_name), version)


# -- upgrade -----------------------------------------------------------------------------------
def upgrade_changes(classic: GroupMetadata, topic_id: TopicId) -> list[Change]:
    """The changes that make ``classic`` a consumer group (see the module's docstring);
    ``MalformedProtocol`` when a member's metadata or assignment is not the consumer
    protocol's.  The group has a protocol (it had a generation)."""
    epoch = classic.generation
    members: list[Member] = []
    for m in classic.members.values():
        decoded = decode_subscription(m.metadata(classic.protocol_name))
        assigned = by_id(decode_assignment(m.assignment), topic_id)
        subscription = Subscription(
            client_id=m.client_id, client_host=m.client_host, instance_id=m.group_instance_id,
            rack_id=decoded.rack_id, topic_names=tuple(sorted(set(decoded.topics))),
            rebalance_timeout_ms=m.rebalance_timeout_ms,
            classic=classic_metadata(m.session_timeout_ms, m.protocols))
        members.append(Member(m.member_id, subscription, member_epoch=epoch,
                              previous_member_epoch=epoch, state=MemberState.STABLE,
                              assigned=assigned))
    return ([ClassicGroupDeleted()]
            + [MemberSubscribed(m.member_id, m.subscription) for m in members]
            + [GroupEpoch(epoch)]
            + [TargetAssigned(m.member_id, m.assigned) for m in members]
            + [TargetEpoch(epoch)]
            + [CurrentAssigned(m) for m in members])


# -- downgrade ---------------------------------------------------------------------------------
@dataclass(frozen=True)
class Downgrade:
    """The classic group a consumer group becomes, and the change that records it."""
    group: GroupMetadata
    change: ConvertedToClassic


def downgraded(group: ConsumerGroup, leaving: str | None, now_ms: int,
               topic_name: TopicName) -> Downgrade:
    """The classic group of every member of ``group`` but ``leaving``, each with its
    target assignment; ``MalformedProtocol`` when a member's metadata has no version or
    the members have no protocol in common."""
    classic = GroupMetadata(group.group_id, now_ms, GroupState.STABLE)
    classic.generation = group.group_epoch
    classic.protocol_type = PROTOCOL_TYPE
    for member in group.members.values():
        if member.member_id != leaving:
            classic.add(_classic_member(member))
    try:
        classic.protocol_name = classic.select_protocol()
    except IllegalTransition as err:
        raise MalformedProtocol(str(err)) from None
    for m in classic.members.values():
        version = protocol_version(m.metadata(classic.protocol_name))
        m.assignment = assignment_bytes(by_name(group.target(m.member_id), topic_name), version)
    value = classic_records.group_value(classic_records.StoredGroup(
        PROTOCOL_TYPE, classic.generation, classic.protocol_name, classic.leader_id, now_ms,
        [classic_records.StoredMember(m.member_id, m.group_instance_id, m.client_id,
                                      m.client_host, m.rebalance_timeout_ms,
                                      m.session_timeout_ms, m.metadata(classic.protocol_name),
                                      m.assignment)
         for m in classic.members.values()]))
    return Downgrade(classic, ConvertedToClassic(tuple(group.members), value))


def _classic_member(member: Member) -> MemberMetadata:
    s = member.subscription
    return MemberMetadata(member.member_id, s.instance_id, s.client_id, s.client_host,
                          s.rebalance_timeout_ms, s.classic.session_timeout_ms, PROTOCOL_TYPE,
                          [(p.name, p.metadata) for p in s.classic.protocols])
