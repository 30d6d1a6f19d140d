"""The group's target assignment at a new epoch (Kafka's TargetAssignmentBuilder).

Every member is described to the assignor by its rack, the ids of the topics it
subscribes to that exist, and its current *target* (what it should keep: the assignors
are sticky); a static member that replaced a departed one inherits that one's target.
The result becomes one ``TargetAssigned`` change per member whose target changed, then
the ``TargetEpoch``: a member learns its new target as it reconciles.
"""
from __future__ import annotations

from typing import Callable, Iterable, Mapping

from kafkapy.coordinator.group.consumer.assignor import PartitionAssignor
from kafkapy.coordinator.group.consumer.group import (Change, ConsumerGroup, TargetAssigned,
                                                     TargetEpoch, subscribed_names)
from kafkapy.coordinator.group.consumer.types import Member, MemberSpec, TopicMetadata


def target_changes(group: ConsumerGroup, epoch: int, assignor: PartitionAssignor,
                   regex_topics: Callable[[str], Iterable[str]],
                   inherited: Mapping[str, str] | None = None) -> list[Change]:
    """The changes that put the group's target at ``epoch``; ``inherited``: member id ->
    the departed member id whose target it takes over (a replaced static member)."""
    topics = group.topics
    specs = {member_id: _spec(member, topics, regex_topics,
                              group.target((inherited or {}).get(member_id, member_id)))
             for member_id, member in group.members.items()}
    by_id = {t.topic_id: t for t in topics.values()}
    # Kafka's subscription type: homogeneous when every member names the same topics
    named = {frozenset(subscribed_names(m.subscription, regex_topics))
             for m in group.members.values()}
    result = assignor.assign(specs, by_id, homogeneous=len(named) <= 1)
    changes: list[Change] = [TargetAssigned(member_id, new)
                             for member_id, new in group.changed_targets(specs, result)]
    return changes + [TargetEpoch(epoch)]


def _spec(member: Member, topics: Mapping[str, TopicMetadata],
          regex_topics: Callable[[str], Iterable[str]], current) -> MemberSpec:
    names = subscribed_names(member.subscription, regex_topics)
    ids = frozenset(topics[n].topic_id for n in names if n in topics)
    return MemberSpec(member.subscription.rack_id, ids, current, member.instance_id)
