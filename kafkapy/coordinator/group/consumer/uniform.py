"""Kafka's ``uniform`` server-side assignor (UniformAssignor, Kafka 4.0): balance first,
then stickiness.

When every member subscribes to the same topics (homogeneous) the homogeneous builder
runs, else the heterogeneous one; both keep a member's current target where balance
allows.  Racks play no part: Kafka removed rack awareness from its server-side assignors
in 3.8, and 4.0's uniform assignor ignores ``MemberSpec.rack_id`` and
``TopicMetadata.racks`` as this one does.

Homogeneous (UniformHomogeneousAssignmentBuilder): every member gets ``P // M`` partitions,
and the first ``P % M`` members in Kafka's member order one more, whatever they hold now.
Each member keeps its current partitions of the subscribed topics up to that quota, walking
its topics and partitions in Java's order; what it cannot keep, and what nobody holds, goes
in that order (unowned partitions first, topic by topic, ascending) to the members below
quota, in member order.  Partition counts differ by at most one.

Heterogeneous (UniformHeterogeneousAssignmentBuilder, as reworked for 4.0; 3.9's differs):
members are numbered in Kafka's member order; each keeps its current partitions of topics
it still subscribes to; unowned partitions go, topic by topic (most partitions per
subscriber first, then fewer subscribers, then topic id), ascending, round-robin over the
topic's least loaded subscribers; then each topic with two or more subscribers in that
order moves partitions from its most loaded to its least loaded subscribers until their
counts differ by at most one, for up to 16 rounds over the topics, stopping after a round
that moves nothing.  Only the member order matters here, and it is Java's (``_support``).

Only topics in ``topics`` count: subscribed ids without metadata, and partitions at or
past a topic's partition count, are ignored (Kafka fails such an assignment; its
coordinator never builds one).
"""
from __future__ import annotations

import uuid
from typing import Iterator, Mapping

from kafkapy.coordinator.group.consumer._support import (PartitionAssignorError, is_homogeneous,
                                                         member_order, partition_order,
                                                         subscribed_topic_order, topic_map_order,
                                                         uuid_key)
from kafkapy.coordinator.group.consumer.types import MemberSpec, TopicMetadata, assignment

#: Rounds over the topics the heterogeneous balancing makes at most (Kafka's
#: MAX_ITERATION_COUNT).
MAX_BALANCE_ROUNDS = 16


class UniformAssignor:
    """The ``uniform`` assignor; ``homogeneous`` overrides the test on the subscribed ids
    (Kafka decides it on topic names)."""
    name = "uniform"

    def assign(self, members: Mapping[str, MemberSpec], topics: Mapping[uuid.UUID, TopicMetadata],
               *, homogeneous: bool | None = None) -> dict[str, dict[uuid.UUID, frozenset[int]]]:
        if not members:
            return {}
        if homogeneous is None:
            homogeneous = is_homogeneous(s.subscribed_topic_ids for s in members.values())
        order = member_order(members)
        if homogeneous:
            targets = _assign_homogeneous(members, order, topics)
        else:
            targets = _Heterogeneous(members, order, topics).build()
        return {m: assignment(targets.get(m, {}).items()) for m in members}


def _current(spec: MemberSpec, topics: Mapping[uuid.UUID, TopicMetadata]
             ) -> Iterator[tuple[uuid.UUID, frozenset[int]]]:
    """A member's current target, topics in Java's order, partitions that exist only."""
    for topic_id in topic_map_order(spec.assigned):
        topic = topics.get(topic_id)
        if topic is not None:
            partitions = spec.assigned[topic_id]
            yield topic_id, frozenset(p for p in partitions if 0 <= p < topic.num_partitions)


# -- homogeneous -----------------------------------------------------------------------------
def _assign_homogeneous(members: Mapping[str, MemberSpec], order: list[str],
                        topics: Mapping[uuid.UUID, TopicMetadata]) -> dict[str, dict]:
    names = {t: m.name for t, m in topics.items()}
    subscribed = subscribed_topic_order(members[order[0]].subscribed_topic_ids, names)
    if not subscribed:
        return {}
    unassigned = _unowned(members, subscribed, topics)
    total = sum(topics[t].num_partitions for t in subscribed)
    minimum, extra = divmod(total, len(members))
    targets: dict[str, dict[uuid.UUID, list[int]]] = {}
    unfilled: list[tuple[str, int]] = []
    subscribed_set = set(subscribed)
    for member_id in order:
        quota = minimum + (1 if extra > 0 else 0)
        extra -= 1 if extra > 0 else 0
        kept, quota = _keep_within(members[member_id], topics, subscribed_set, quota, unassigned)
        targets[member_id] = kept
        if quota > 0:
            unfilled.append((member_id, quota))
    _fill(targets, unfilled, unassigned)
    return targets


def _unowned(members: Mapping[str, MemberSpec], subscribed: list[uuid.UUID],
             topics: Mapping[uuid.UUID, TopicMetadata]) -> list[tuple[uuid.UUID, int]]:
    """The partitions of the subscribed topics no member holds, topic by topic, ascending."""
    held: dict[uuid.UUID, set[int]] = {t: set() for t in subscribed}
    for spec in members.values():
        for topic_id, partitions in spec.assigned.items():
            if topic_id in held:
                held[topic_id].update(partitions)
    return [(t, p) for t in subscribed for p in range(topics[t].num_partitions)
            if p not in held[t]]


def _keep_within(spec: MemberSpec, topics: Mapping[uuid.UUID, TopicMetadata],
                 subscribed: set[uuid.UUID], quota: int,
                 unassigned: list[tuple[uuid.UUID, int]]) -> tuple[dict, int]:
    """What a member keeps of its target within ``quota`` (the rest is appended to
    ``unassigned``), and the quota left."""
    kept: dict[uuid.UUID, list[int]] = {}
    for topic_id, partitions in _current(spec, topics):
        if topic_id not in subscribed:
            continue
        if len(partitions) <= quota:
            kept[topic_id] = list(partitions)
            quota -= len(partitions)
        else:
            ordered = partition_order(partitions)
            kept[topic_id] = ordered[:quota]
            unassigned.extend((topic_id, p) for p in ordered[quota:])
            quota = 0
    return kept, quota


def _fill(targets: dict[str, dict[uuid.UUID, list[int]]], unfilled: list[tuple[str, int]],
          unassigned: list[tuple[uuid.UUID, int]]) -> None:
    position = 0
    for member_id, quota in unfilled:
        for topic_id, partition in unassigned[position:position + quota]:
            targets[member_id].setdefault(topic_id, []).append(partition)
        position += quota
        if position >= len(unassigned):
            return
    if position < len(unassigned):
        raise PartitionAssignorError("Partitions were left unassigned")


# -- heterogeneous ---------------------------------------------------------------------------
class _Balancer:
    """Kafka's MemberAssignmentBalancer: the members of one topic sorted by load, a range
    of least loaded members that partitions go to round-robin (growing as their count
    rises to the next members'), and a range of most loaded members partitions come from
    (growing downwards the same way; members with nothing left to give are swapped out
    of it).  ``sizes`` is the builder's live count per member."""

    def __init__(self, sizes: list[int]):
        self._sizes = sizes
        self._sorted: list[int] = []
        self._least_end = self._least_count = self._next_least = 0
        self._most_start = self._most_end = self._most_count = self._next_most = 0

    def initialize(self, members: list[int]) -> int:
        """Start over on ``members``; the spread of their counts."""
        sizes = self._sizes
        self._sorted = sorted(members, key=lambda m: (sizes[m], m))
        first, last = sizes[self._sorted[0]], sizes[self._sorted[-1]]
        self._least_end, self._least_count, self._next_least = 0, first - 1, 0
        count = len(self._sorted)
        self._most_start, self._most_end, self._most_count = count, count, last + 1
        self._next_most = count - 1
        return last - first

    def next_least_loaded(self) -> int:
        if self._next_least >= self._least_end:
            self._least_count += 1
            while (self._least_end < len(self._sorted)
                   and self._sizes[self._sorted[self._least_end]] == self._least_count):
                self._least_end += 1
            self._next_least = 0
        member = self._sorted[self._next_least]
        self._next_least += 1
        return member

    def next_most_loaded(self) -> int:
        """The next member to take a partition from; -1: none left."""
        if self._next_most < self._most_start:
            if self._most_end <= self._most_start and self._most_start > 0:
                self._most_count = self._sizes[self._sorted[self._most_start - 1]]
            else:
                self._most_count -= 1
            while (self._most_start > 0
                   and self._sizes[self._sorted[self._most_start - 1]] == self._most_count):
                self._most_start -= 1
            self._next_most = self._most_end - 1
        if self._next_most < 0:
            return -1
        member = self._sorted[self._next_most]
        self._next_most -= 1
        return member

    def exclude_most_loaded(self) -> None:
        """Drop the member ``next_most_loaded`` just gave from the most loaded range."""
        at, end = self._next_most + 1, self._most_end - 1
        self._sorted[at], self._sorted[end] = self._sorted[end], self._sorted[at]
        self._most_end -= 1

    def is_balanced(self) -> bool:
        return self._most_count - self._least_count <= 1


class _Heterogeneous:
    """One run of the heterogeneous builder; members are indexes into Kafka's order."""

    def __init__(self, members: Mapping[str, MemberSpec], order: list[str],
                 topics: Mapping[uuid.UUID, TopicMetadata]):
        self._specs = [members[m] for m in order]
        self._order = order
        self._topics = topics
        self._subscriptions = [frozenset(t for t in s.subscribed_topic_ids if t in topics)
                               for s in self._specs]
        self._subscribers: dict[uuid.UUID, list[int]] = {}
        for index, subscription in enumerate(self._subscriptions):
            for topic_id in subscription:
                self._subscribers.setdefault(topic_id, []).append(index)
        self._sizes = [0] * len(order)
        self._owners = {t: [-1] * topics[t].num_partitions for t in self._subscribers}
        self._targets: list[dict[uuid.UUID, set[int]]] = []

    def build(self) -> dict[str, dict[uuid.UUID, set[int]]]:
        if not self._subscribers:
            return {}
        self._keep_subscribed()
        self._assign_unowned()
        self._balance()
        return dict(zip(self._order, self._targets))

    def _topic_order(self, topic_ids) -> list[uuid.UUID]:
        """Most partitions per subscriber first, then fewer subscribers, then topic id."""
        def key(topic_id: uuid.UUID):
            subscribers = len(self._subscribers[topic_id])
            ratio = self._topics[topic_id].num_partitions / subscribers
            return -ratio, subscribers, uuid_key(topic_id)
        return sorted(topic_ids, key=key)

    def _keep_subscribed(self) -> None:
        for index, spec in enumerate(self._specs):
            kept: dict[uuid.UUID, set[int]] = {}
            for topic_id, partitions in _current(spec, self._topics):
                if topic_id in self._subscriptions[index]:
                    kept[topic_id] = set(partitions)
                    self._sizes[index] += len(partitions)
                    owners = self._owners[topic_id]
                    for partition in partitions:
                        owners[partition] = index
            self._targets.append(kept)

    def _assign_unowned(self) -> None:
        unowned = {t: [p for p, owner in enumerate(owners) if owner == -1]
                   for t, owners in self._owners.items()}
        balancer = _Balancer(self._sizes)
        for topic_id in self._topic_order(t for t, ps in unowned.items() if ps):
            balancer.initialize(self._subscribers[topic_id])
            for partition in unowned[topic_id]:
                self._move(topic_id, partition, balancer.next_least_loaded())

    def _balance(self) -> None:
        shared = self._topic_order(t for t, s in self._subscribers.items() if len(s) >= 2)
        if not shared:
            return
        balancer = _Balancer(self._sizes)
        last_moved = -1
        for _ in range(MAX_BALANCE_ROUNDS):
            for index, topic_id in enumerate(shared):
                if index == last_moved:
                    return
                if self._balance_topic(topic_id, balancer) > 0 or last_moved == -1:
                    last_moved = index

    def _balance_topic(self, topic_id: uuid.UUID, balancer: _Balancer) -> int:
        """Moves from the topic's most to its least loaded subscribers; how many."""
        if balancer.initialize(self._subscribers[topic_id]) <= 1:
            return 0
        owners = self._owners[topic_id]
        partitions = sorted(range(len(owners)), key=lambda p: (owners[p], p))
        start: dict[int, int] = {}
        end: dict[int, int] = {}
        for position, partition in enumerate(partitions):
            start.setdefault(owners[partition], position)
            end[owners[partition]] = position + 1
        moved = 0
        while not balancer.is_balanced():
            giver = self._next_giver(balancer, start, end)
            if giver == -1:
                break
            end[giver] -= 1
            partition = partitions[end[giver]]
            taker = balancer.next_least_loaded()
            if balancer.is_balanced():
                break
            self._move(topic_id, partition, taker)
            moved += 1
        return moved

    @staticmethod
    def _next_giver(balancer: _Balancer, start: dict[int, int], end: dict[int, int]) -> int:
        """The next most loaded member with a partition of the topic left; -1: none."""
        while True:
            member = balancer.next_most_loaded()
            if member == -1 or (member in end and end[member] - start[member] > 0):
                return member
            balancer.exclude_most_loaded()

    def _move(self, topic_id: uuid.UUID, partition: int, member: int) -> None:
        owners = self._owners[topic_id]
        previous = owners[partition]
        if previous != -1:
            held = self._targets[previous].get(topic_id)
            if held is not None:
                held.discard(partition)
                if not held:
                    del self._targets[previous][topic_id]
            self._sizes[previous] -= 1
        self._targets[member].setdefault(topic_id, set()).add(partition)
        owners[partition] = member
        self._sizes[member] += 1
