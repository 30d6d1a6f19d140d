"""One classic group: its members, generation, protocol and committed offsets.

States and the transitions Kafka allows (``transition_to`` enforces them):

    Empty               <- PreparingRebalance
    PreparingRebalance  <- Stable, CompletingRebalance, Empty
    CompletingRebalance <- PreparingRebalance
    Stable              <- CompletingRebalance
    Dead                <- any state

Invariants: ``leader_id`` is a member id of ``members`` (or None when there
are none); ``static_members`` maps each static member's instance id to its
current member id; ``pending_members`` are member ids handed out with
MEMBER_ID_REQUIRED that have not joined yet; ``pending_sync`` are members of
the current generation that have not yet sent SyncGroup.  This object holds
state only; the coordinator decides when to change it.
"""
from __future__ import annotations

import enum
import struct
from collections import Counter

from kafkapy.coordinator.group.member import MemberMetadata, Protocols
from kafkapy.coordinator.group.offsets import OffsetAndMetadata
from kafkapy.protocol.topic_partition import TopicPartition

CONSUMER_PROTOCOL_TYPE = "consumer"


class GroupState(enum.Enum):
    EMPTY = "Empty"
    PREPARING_REBALANCE = "PreparingRebalance"
    COMPLETING_REBALANCE = "CompletingRebalance"
    STABLE = "Stable"
    DEAD = "Dead"


_S = GroupState
_VALID_PREVIOUS = {
    _S.EMPTY: {_S.PREPARING_REBALANCE},
    _S.PREPARING_REBALANCE: {_S.STABLE, _S.COMPLETING_REBALANCE, _S.EMPTY},
    _S.COMPLETING_REBALANCE: {_S.PREPARING_REBALANCE},
    _S.STABLE: {_S.COMPLETING_REBALANCE},
    _S.DEAD: set(_S),
}


class IllegalTransition(RuntimeError):
    pass


class GroupMetadata:
    group_type = "classic"

    def __init__(self, group_id: str, now_ms: int, state: GroupState = GroupState.EMPTY) -> None:
        self.group_id = group_id
        self.state = state
        self.state_timestamp = now_ms
        self.protocol_type: str | None = None
        self.protocol_name: str | None = None
        self.generation = 0
        self.leader_id: str | None = None
        self.members: dict[str, MemberMetadata] = {}
        self.static_members: dict[str, str] = {}
        self.pending_members: set[str] = set()
        self.pending_sync: set[str] = set()
        self.new_member_added = False
        self.offsets: dict[TopicPartition, OffsetAndMetadata] = {}
        # Offset commits written but not yet replicated (Kafka's pendingOffsetCommits):
        # partition -> how many; they keep an Empty group from being removed.
        self.pending_offset_commits: dict[TopicPartition, int] = {}
        self.join_task = None      # the delayed join of the current rebalance
        self.join_initial = False  # join_task is the initial (delay) join: never completes early
        self.pending_tasks: dict = {}  # MEMBER_ID_REQUIRED ids -> their expiry task
        self.sync_task = None      # the deadline for SyncGroups of this generation

    # -- state ----------------------------------------------------------------------
    def is_(self, state: GroupState) -> bool:
        return self.state is state

    def transition_to(self, state: GroupState, now_ms: int) -> None:
        if self.state not in _VALID_PREVIOUS[state]:
            raise IllegalTransition(f"group {self.group_id}: {self.state.value} -> {state.value}")
        self.state = state
        self.state_timestamp = now_ms

    @property
    def can_rebalance(self) -> bool:
        return self.state in (_S.STABLE, _S.COMPLETING_REBALANCE, _S.EMPTY)

    # -- members --------------------------------------------------------------------
    def has(self, member_id: str) -> bool:
        return member_id in self.members

    def get(self, member_id: str) -> MemberMetadata:
        return self.members[member_id]

    @property
    def size(self) -> int:
        return len(self.members)

    @property
    def num_awaiting_join(self) -> int:
        return sum(1 for m in self.members.values() if m.awaiting_join)

    def is_leader(self, member_id: str) -> bool:
        return self.leader_id == member_id

    def add(self, member: MemberMetadata, join_waiter=None) -> None:
        if not self.members:
            self.protocol_type = member.protocol_type
        if self.leader_id is None:
            self.leader_id = member.member_id
        self.members[member.member_id] = member
        if member.is_static:
            self.static_members[member.group_instance_id] = member.member_id
        member.join_waiter = join_waiter
        self.pending_members.discard(member.member_id)

    def remove(self, member_id: str) -> MemberMetadata | None:
        member = self.members.pop(member_id, None)
        if member is None:
            return None
        if member.is_static and self.static_members.get(member.group_instance_id) == member_id:
            del self.static_members[member.group_instance_id]
        self.pending_sync.discard(member_id)
        if self.leader_id == member_id:
            self.leader_id = next(iter(self.members), None)
        return member

    def static_member_id(self, instance_id: str | None) -> str | None:
        return self.static_members.get(instance_id) if instance_id is not None else None

    def is_static_member_fenced(self, instance_id: str | None, member_id: str) -> bool:
        """A known instance id whose current member id is a different one."""
        current = self.static_member_id(instance_id)
        return current is not None and current != member_id

    def replace_static_member(self, instance_id: str, old_id: str, new_id: str) -> MemberMetadata:
        member = self.members.pop(old_id)
        member.member_id = new_id
        self.members[new_id] = member
        self.static_members[instance_id] = new_id
        if self.leader_id == old_id:
            self.leader_id = new_id
        if old_id in self.pending_sync:
            self.pending_sync.discard(old_id)
            self.pending_sync.add(new_id)
        return member

    def update_member(self, member: MemberMetadata, protocols: Protocols,
                      rebalance_timeout_ms: int, session_timeout_ms: int, join_waiter) -> None:
        member.protocols = list(protocols)
        member.rebalance_timeout_ms = rebalance_timeout_ms
        member.session_timeout_ms = session_timeout_ms
        member.join_waiter = join_waiter

    def all_members_joined(self) -> bool:
        return self.num_awaiting_join == len(self.members) and not self.pending_members

    def not_yet_rejoined(self) -> list[MemberMetadata]:
        return [m for m in self.members.values() if not m.awaiting_join]

    def maybe_elect_new_joined_leader(self) -> bool:
        """Keep a leader that rejoined, else pick the first rejoined member; False if none."""
        leader = self.members.get(self.leader_id) if self.leader_id else None
        if leader is not None and leader.awaiting_join:
            return True
        for member in self.members.values():
            if member.awaiting_join:
                self.leader_id = member.member_id
                return True
        return False

    @property
    def rebalance_timeout_ms(self) -> int:
        return max((m.rebalance_timeout_ms for m in self.members.values()), default=0)

    # -- protocols ------------------------------------------------------------------
    def candidate_protocols(self) -> list[str]:
        """Protocols every member supports, in the first member's preference order."""
        members = list(self.members.values())
        if not members:
            return []
        common = set(members[0].protocol_names)
        for m in members[1:]:
            common &= set(m.protocol_names)
        return [name for name in members[0].protocol_names if name in common]

    def supports_protocols(self, protocol_type: str, names: list[str]) -> bool:
        if not self.members:
            return bool(protocol_type) and bool(names)
        return protocol_type == self.protocol_type and bool(set(names) & set(self.candidate_protocols()))

    def select_protocol(self) -> str:
        """The common protocol with most first-choice votes among the members."""
        candidates = self.candidate_protocols()
        if not candidates:
            raise IllegalTransition(f"group {self.group_id}: no common protocol")
        allowed = set(candidates)
        votes = Counter(m.vote(allowed) for m in self.members.values())
        return max(candidates, key=lambda name: (votes[name], -candidates.index(name)))

    def init_next_generation(self, now_ms: int) -> None:
        self.generation += 1
        if self.members:
            self.protocol_name = self.select_protocol()
            self.pending_sync = set(self.members)
            self.transition_to(GroupState.COMPLETING_REBALANCE, now_ms)
        else:
            self.protocol_name = None
            self.pending_sync = set()
            self.transition_to(GroupState.EMPTY, now_ms)

    def current_member_metadata(self) -> list[tuple[MemberMetadata, bytes]]:
        """(member, its metadata for the chosen protocol): what the leader gets."""
        return [(m, m.metadata(self.protocol_name)) for m in self.members.values()]

    def subscribed_topics(self) -> set[str] | None:
        """Topics the members subscribe to (consumer protocol), None when unknown."""
        if self.protocol_type != CONSUMER_PROTOCOL_TYPE or self.protocol_name is None:
            return None
        topics: set[str] = set()
        for member in self.members.values():
            try:
                topics |= parse_subscription_topics(member.metadata(self.protocol_name))
            except (KeyError, ValueError, struct.error):
                return None
        return topics

    def is_subscribed_to(self, topic: str) -> bool:
        topics = self.subscribed_topics()
        return topics is None or topic in topics


def parse_subscription_topics(data: bytes) -> set[str]:
    """Topics of a ConsumerProtocolSubscription (any version: int16 version, []string)."""
    (count,) = struct.unpack_from(">i", data, 2)
    if count < 0:
        raise ValueError("negative topic count")
    pos, topics = 6, set()
    for _ in range(count):
        (length,) = struct.unpack_from(">h", data, pos)
        pos += 2
        if length < 0 or pos + length > len(data):
            raise ValueError("bad topic string")
        topics.add(data[pos:pos + length].decode())
        pos += length
    return topics
