"""A share group's new target assignment (Kafka's ShareTargetAssignmentBuilder) and one
member's step towards it (Kafka's ShareGroupAssignmentBuilder).

Target: every member is described to the assignor by the ids of the topics it subscribes
to that exist and by its current target (the assignor is sticky); only the initialized
share partitions may be assigned.  The result becomes one ``TargetAssigned`` change per
member whose target changed (a new member's always), then the ``TargetEpoch``.

Reconciliation is immediate, unlike a consumer group's (no partition is revoked first,
since several members may hold one): a member behind the target epoch takes its target
at once, filtered to the topics it subscribes to now, its epoch moving to the target's
(the previous one kept); a member whose subscription changed gets its target filtered
again at the same epoch.

The subscribed topics' metadata is summed up in one 64-bit hash, stored in
ShareGroupMetadata: a heartbeat that finds another hash bumps the group epoch (a topic
created, deleted or grown, or its partitions' racks changed).  Kafka hashes with XXH3
over its own encoding; ``metadata_hash`` is BLAKE2b over the same facts (topic id, name,
partition count, each partition's sorted racks), the topics sorted by name: another
value than Kafka's, which nothing but this coordinator reads (0 for no topic, as Kafka).
"""
from __future__ import annotations

import hashlib
import uuid
from typing import Iterable, Mapping

from kafkapy.coordinator.group.consumer.types import (Assignment, MemberSpec, MemberState,
                                                     TopicMetadata)
from kafkapy.coordinator.group.modern import is_reconciled
from kafkapy.coordinator.group.share.assignor import SimpleAssignor
from kafkapy.coordinator.group.share.group import (Change, ShareGroup, TargetAssigned,
                                                  TargetEpoch)
from kafkapy.coordinator.group.share.types import ShareMember


def target_changes(group: ShareGroup, epoch: int, assignor: SimpleAssignor,
                   topics: Mapping[str, TopicMetadata]) -> list[Change]:
    """The changes that put the group's target at ``epoch``; ``topics``: the subscribed
    topics that exist, by name."""
    specs = {member_id: MemberSpec(member.subscription.rack_id,
                                   subscribed_ids(member, topics), group.target(member_id))
             for member_id, member in group.members.items()}
    by_id = {t.topic_id: t for t in topics.values()}
    # Kafka's subscription type: homogeneous when every member names the same topics
    homogeneous = len({m.subscription.topic_names for m in group.members.values()}) <= 1
    result = assignor.assign(specs, by_id, homogeneous=homogeneous,
                             assignable=group.initialized())
    changes: list[Change] = [TargetAssigned(member_id, new)
                             for member_id, new in group.changed_targets(specs, result)]
    return changes + [TargetEpoch(epoch)]


def subscribed_ids(member: ShareMember,
                   topics: Mapping[str, TopicMetadata]) -> frozenset[uuid.UUID]:
    """The ids of the member's subscribed topics that exist."""
    return frozenset(topics[n].topic_id for n in member.subscription.topic_names if n in topics)


def reconcile(member: ShareMember, target_epoch: int, target: Assignment,
              topics: Mapping[str, TopicMetadata], subscription_changed: bool) -> ShareMember:
    """The member after one step towards ``target`` (itself when nothing moves)."""
    if not subscription_changed and is_reconciled(member, target_epoch):
        return member
    if target_epoch != member.member_epoch:
        return member.with_(state=MemberState.STABLE, assigned=_filtered(target, member, topics),
                            member_epoch=target_epoch,
                            previous_member_epoch=member.member_epoch)
    if subscription_changed:
        return member.with_(assigned=_filtered(target, member, topics))
    return member


def _filtered(target: Assignment, member: ShareMember,
              topics: Mapping[str, TopicMetadata]) -> Assignment:
    ids = subscribed_ids(member, topics)
    return {t: p for t, p in target.items() if t in ids}


def metadata_hash(topics: Iterable[TopicMetadata]) -> int:
    """The hash of the subscribed topics' metadata, a signed 64-bit value (0: none)."""
    ordered = sorted(topics, key=lambda t: t.name)
    if not ordered:
        return 0
    digest = hashlib.blake2b(digest_size=8)
    for t in ordered:
        digest.update(t.topic_id.bytes + t.name.encode() + b"\0"
                      + t.num_partitions.to_bytes(4, "big"))
        for index in range(t.num_partitions):
            racks = sorted(t.racks.get(index, ()))
            digest.update(index.to_bytes(4, "big") + "\0".join(racks).encode() + b"\1")
    return int.from_bytes(digest.digest(), "big", signed=True)
