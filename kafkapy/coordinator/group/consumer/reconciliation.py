"""Moving one member from its current assignment towards its target (Kafka's
CurrentAssignmentBuilder).

A member reconciles in steps, one epoch at a time:
- partitions it has that the target does not are *revoked* first: it stays at its epoch
  in UNREVOKED_PARTITIONS until a heartbeat's owned partitions no longer include them;
- then it moves to the target epoch and gets the target's partitions that no other
  member still owns (``partition_epoch`` is -1 for them); those still owned elsewhere
  wait (UNRELEASED_PARTITIONS) and are given once released;
- with nothing to revoke and nothing left to take, it is STABLE at the target epoch.
So no partition is ever given to a member while another may still be consuming it.
"""
from __future__ import annotations

import uuid
from typing import Callable

from kafkapy.coordinator.group.consumer.types import (Assignment, Member, MemberState,
                                                     assignment)


class FencedMember(Exception):
    """The member must give up every partition and rejoin (FENCED_MEMBER_EPOCH)."""


PartitionEpoch = Callable[[uuid.UUID, int], int]


def reconcile(member: Member, target_epoch: int, target: Assignment,
              partition_epoch: PartitionEpoch, owned: Assignment | None) -> Member:
    """The member's next state; ``owned``: the partitions its heartbeat reported (None:
    not reported, so revoked partitions count as still owned)."""
    state = member.state
    if state is MemberState.STABLE:
        if member.member_epoch == target_epoch:
            return member
        return _next(member, member.member_epoch, target_epoch, target, partition_epoch, owned)
    if state is MemberState.UNREVOKED_PARTITIONS:
        if _owns_any(owned, member.pending_revocation):
            return member
        return _next(member, member.member_epoch + 1, target_epoch, target, partition_epoch,
                     owned)
    if state is MemberState.UNRELEASED_PARTITIONS:
        return _next(member, member.member_epoch, target_epoch, target, partition_epoch, owned)
    if owned is None or owned:   # UNKNOWN: start again from nothing
        raise FencedMember("The consumer group member is in a unknown state. "
                           "The member must abandon all its partitions and rejoin.")
    return _next(member, target_epoch, target_epoch, target, partition_epoch, owned)


def _next(member: Member, epoch: int, target_epoch: int, target: Assignment,
          partition_epoch: PartitionEpoch, owned: Assignment | None) -> Member:
    kept, revoke, take, unreleased = [], [], [], False
    for topic_id in set(target) | set(member.assigned):
        wanted = target.get(topic_id, frozenset())
        current = member.assigned.get(topic_id, frozenset())
        keep = current & wanted
        free = {p for p in wanted - keep if partition_epoch(topic_id, p) == -1}
        unreleased = unreleased or len(free) < len(wanted - keep)
        kept.append((topic_id, keep))
        revoke.append((topic_id, current - keep))
        take.append((topic_id, free))
    kept_a, revoke_a, take_a = assignment(kept), assignment(revoke), assignment(take)
    if revoke_a and _owns_any(owned, revoke_a):
        return member.with_(state=MemberState.UNREVOKED_PARTITIONS,
                            **_epochs(member, epoch), assigned=kept_a,
                            pending_revocation=revoke_a)
    state = MemberState.UNRELEASED_PARTITIONS if unreleased else MemberState.STABLE
    return member.with_(state=state, **_epochs(member, target_epoch),
                        assigned=assignment([*kept_a.items(), *take_a.items()]),
                        pending_revocation={})


def _epochs(member: Member, epoch: int) -> dict:
    """Kafka's updateMemberEpoch: the previous epoch is kept for a retried heartbeat."""
    return {"member_epoch": epoch, "previous_member_epoch": member.member_epoch}


def _owns_any(owned: Assignment | None, partitions: Assignment) -> bool:
    if owned is None:
        return True
    return any(owned.get(t, frozenset()) & p for t, p in partitions.items())
