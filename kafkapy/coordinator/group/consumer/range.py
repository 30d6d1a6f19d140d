"""Kafka's ``range`` server-side assignor (RangeAssignor, Kafka 3.9 and 4.0): contiguous
ranges of each topic, co-partitioned when it can be.

Members are sorted: static members first by instance id, then the others by member id
(``String.compareTo``; ties, which only equal instance ids make, keep Kafka's member
order).  Each topic's subscribers, in that order, take consecutive ranges of it: ``P // S``
partitions each (``S`` subscribers), the first ``P % S`` of them one more.  When all
members subscribe to the same topics and those topics have the same partition count, a
member therefore gets the same partition numbers of every topic (co-partitioning, what
joins need).

Not sticky: Kafka's rewrite of this assignor (3.9) dropped the current target from its
inputs, so the answer depends only on the members' ids, instance ids and subscriptions and
on the partition counts; a static member that rejoins under a new member id keeps its
ranges through its instance id.  Racks play no part (as in Kafka).  Subscribed ids
without an entry in ``topics`` are ignored.
"""
from __future__ import annotations

import uuid
from typing import Mapping

from kafkapy.coordinator.group.consumer._support import member_order, utf16_key
from kafkapy.coordinator.group.consumer.types import MemberSpec, TopicMetadata


class RangeAssignor:
    """The ``range`` assignor; ``homogeneous`` overrides the test on the subscribed ids
    (Kafka decides it on topic names; with either answer the ranges are the same)."""
    name = "range"

    def assign(self, members: Mapping[str, MemberSpec], topics: Mapping[uuid.UUID, TopicMetadata],
               *, homogeneous: bool | None = None) -> dict[str, dict[uuid.UUID, frozenset[int]]]:
        order = _sorted_members(members)
        subscribers: dict[uuid.UUID, list[str]] = {}
        for member_id in order:
            for topic_id in members[member_id].subscribed_topic_ids:
                if topic_id in topics:
                    subscribers.setdefault(topic_id, []).append(member_id)
        result: dict[str, dict[uuid.UUID, frozenset[int]]] = {m: {} for m in members}
        for topic_id, taking in subscribers.items():
            for member_id, partitions in _ranges(topics[topic_id].num_partitions, taking):
                result[member_id][topic_id] = partitions
        return result


def _sorted_members(members: Mapping[str, MemberSpec]) -> list[str]:
    def key(member_id: str):
        instance = members[member_id].instance_id
        return (0, utf16_key(instance)) if instance is not None else (1, utf16_key(member_id))
    return sorted(member_order(members), key=key)   # stable, as Java's List.sort


def _ranges(num_partitions: int, members: list[str]):
    """(member, its range) for the members that get a non-empty one."""
    quota, extra = divmod(num_partitions, len(members))
    start = 0
    for position, member_id in enumerate(members):
        end = min(start + quota + (1 if position < extra else 0), num_partitions)
        if start < end:
            yield member_id, frozenset(range(start, end))
        start = end
