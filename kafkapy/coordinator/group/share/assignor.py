"""Kafka's ``simple`` share group assignor (SimpleAssignor, Kafka 4.2: its homogeneous and
heterogeneous assignment builders): balance first, then stickiness, and a partition may go
to several members.

One pool of partitions is shared by the members subscribed to it: the whole group's
assignable partitions when every member subscribes to the same topics (homogeneous), else
each topic's own partitions among that topic's subscribers (heterogeneous).  For a pool of
P partitions and N members:
- each partition should have ``sharing = ceil(N / P)`` members (0 for no partition), and
  member j of the pool (Kafka's member order) ``ceil(s * (j + 1)) - ceil(s * j)``
  partitions with ``s = sharing * P / N``: with 5 members and 1 partition, all 5 get it;
  with 2 members and 4 partitions, 2 each;
- every member keeps what its current target holds of the pool; partitions held by more
  than ``sharing`` members lose members (the over-full ones first), members holding more
  than their count lose partitions (the homogeneous builder trims shared partitions first,
  the heterogeneous one over-full members first, as Kafka's);
- the partitions still short of ``sharing`` go, in Kafka's partition order, to the members
  still short of their count, in member order, round and round until no member can take
  one (a member never holds a partition twice).
Only assignable partitions are in a pool: the initialized share partitions (Kafka's
``isPartitionAssignable``); a current target's partitions outside the pool are dropped.

Orders are Java's where they decide ties (``consumer._support``): members as a HashMap of
member ids, a member's topics and partitions as its target's HashMap/HashSet, a pool's
partitions as Kafka's HashMap keyed by TopicIdPartition (``31 * Uuid.hashCode() +
partition``, a record's hash) or by partition index.  Kafka's homogeneous builder forgets
to take a trimmed partition out of an over-full member's result; this one takes it out.
"""
from __future__ import annotations

import math
import uuid
from typing import Callable, Hashable, Iterable, Mapping

from kafkapy.coordinator.group.consumer._support import (member_order, partition_order,
                                                         subscribed_topic_order, topic_map_order,
                                                         uuid_hash)
from kafkapy.coordinator.group.consumer.types import (Assignment, MemberSpec, TopicMetadata,
                                                     assignment)
from kafkapy.jvm import int32, java_hash_order

NAME = "simple"
#: Kafka's class name of the assignor, as ``group.share.assignors`` names it.
CLASS_NAME = "org.apache.kafka.coordinator.group.assignor.SimpleAssignor"

Key = Hashable


class SimpleAssignor:
    name = NAME

    def assign(self, members: Mapping[str, MemberSpec],
               topics: Mapping[uuid.UUID, TopicMetadata], *, homogeneous: bool,
               assignable: Mapping[uuid.UUID, frozenset[int]] | None = None
               ) -> dict[str, Assignment]:
        """The new target of every member; ``assignable`` (topic id -> partitions), when
        given, limits the pools to those partitions."""
        if not members:
            return {}
        order = member_order(members)
        names = {t: m.name for t, m in topics.items()}

        def allowed(topic_id: uuid.UUID, partition: int) -> bool:
            return assignable is None or partition in assignable.get(topic_id, ())

        build = _homogeneous if homogeneous else _heterogeneous
        result = build(members, order, topics, names, allowed)
        return {m: assignment(result.get(m, {}).items()) for m in members}


def _partitions(topic_id: uuid.UUID, topics, allowed) -> list[int]:
    topic = topics.get(topic_id)
    if topic is None:
        return []
    return [p for p in range(topic.num_partitions) if allowed(topic_id, p)]


def _homogeneous(members, order, topics, names, allowed) -> dict[str, dict]:
    subscribed = subscribed_topic_order(members[order[0]].subscribed_topic_ids, names)
    if not subscribed:
        return {}
    pool = [(t, p) for t in subscribed for p in _partitions(t, topics, allowed)]
    held = [[(t, p) for t in topic_map_order(members[m].assigned) if t in subscribed
             for p in partition_order(members[m].assigned[t])] for m in order]
    result = _Pool(pool, list(range(len(order))), held, _tp_hash).build(trim_shared_first=True)
    out: dict[str, dict] = {m: {} for m in order}
    for index, keys in result.items():
        for t, p in keys:
            out[order[index]].setdefault(t, set()).add(p)
    return out


def _heterogeneous(members, order, topics, names, allowed) -> dict[str, dict]:
    out: dict[str, dict] = {m: {} for m in order}
    subscribed = set().union(*(members[m].subscribed_topic_ids for m in order))
    for topic_id in sorted(subscribed):     # topics are independent: any order gives the same
        subscribers = [i for i, m in enumerate(order)
                       if topic_id in members[m].subscribed_topic_ids]
        held = [list(partition_order(members[order[i]].assigned.get(topic_id, ())))
                for i in subscribers]
        pool = _Pool(_partitions(topic_id, topics, allowed), list(range(len(subscribers))),
                     held, int32)
        for j, partitions in pool.build(trim_shared_first=False).items():
            if partitions:
                out[order[subscribers[j]]][topic_id] = set(partitions)
    return out


def _tp_hash(key: tuple[uuid.UUID, int]) -> int:
    """The hash of Kafka's TopicIdPartition record: ``31 * topicId.hashCode() + partition``."""
    return int32(31 * uuid_hash(key[0]) + key[1])


def _map_capacity(mappings: int) -> int:
    """The table length of Kafka's ``newHashMap(n)``: ``new HashMap<>((n + 1) / .75f + 1)``."""
    wanted = int((mappings + 1) / 0.75 + 1)
    return 1 << max(wanted - 1, 0).bit_length()


class _Pool:
    """One pool's assignment: ``keys`` the assignable partitions (in Kafka's order of
    computing them), ``members`` the members' indices, ``held`` each member's current
    target within the pool (in its Java order)."""

    def __init__(self, keys: list[Key], members: list[int], held: list[list[Key]],
                 key_hash: Callable[[Key], int]) -> None:
        self._keys = keys
        self._in_pool = set(keys)
        self._members = members
        self._hash = key_hash
        self._capacity = _map_capacity(len(keys))
        n, p = len(members), len(keys)
        self._sharing = (n + p - 1) // p if p else 0
        share = self._sharing * p / n if n else 0.0
        self._wanted = [math.ceil(share * (j + 1)) - math.ceil(share * j) for j in range(n)]
        self._by_key: dict[Key, dict[int, None]] = {}    # insertion-ordered sets
        self._by_member: dict[int, dict[Key, None]] = {j: {} for j in members}
        self._held = held
        self._unfilled: set[int] = set()
        self._overfilled: set[int] = set()

    def build(self, trim_shared_first: bool) -> dict[int, list[Key]]:
        self._keep_held()
        if trim_shared_first:
            self._trim_shared()
            self._trim_overfilled()
        else:
            self._trim_overfilled()
            self._trim_shared()
        for key in self._keys:
            self._by_key.setdefault(key, {})
        self._assign_remaining()
        return {j: list(self._by_member[j]) for j in self._members}

    # -- the steps --------------------------------------------------------------------------
    def _keep_held(self) -> None:
        for j in self._members:
            for key in self._held[j]:
                if key in self._in_pool:
                    self._by_key.setdefault(key, {})[j] = None
                    self._by_member[j][key] = None
            count = len(self._by_member[j])
            if count < self._wanted[j]:
                self._unfilled.add(j)
            elif count > self._wanted[j]:
                self._overfilled.add(j)

    def _trim_shared(self) -> None:
        """Partitions held by more members than ``sharing`` lose members: over-full ones
        first, then the others, each in Java's order of the partition's member set."""
        for key in self._key_order():
            holders = self._by_key[key]
            for prefer_overfilled in (True, False):
                if len(holders) <= self._sharing:
                    break
                for j in _int_set_order(holders):
                    if len(holders) <= self._sharing:
                        break
                    if (j in self._overfilled) == prefer_overfilled:
                        self._drop(j, key)
                        self._unfilled.add(j)

    def _trim_overfilled(self) -> None:
        for j in sorted(self._overfilled):
            held = self._by_member[j]
            for key in java_hash_order(held, self._hash):
                if len(held) <= self._wanted[j]:
                    break
                self._drop(j, key)

    def _assign_remaining(self) -> None:
        """Kafka's loop: one pass over the partitions, the short members taken round and
        round (a round that gives nothing ends the partition's turn)."""
        unfilled = {j for j in self._members if len(self._by_member[j]) < self._wanted[j]}
        queue, position, gave = sorted(unfilled), 0, False
        for key in self._key_order():
            holders = self._by_key[key]
            while unfilled and len(holders) < self._sharing:
                if position >= len(queue):
                    if not gave:
                        break
                    queue, position, gave = sorted(unfilled), 0, False
                j = queue[position]
                position += 1
                if j not in unfilled or j in holders:
                    continue
                holders[j] = None
                self._by_member[j][key] = None
                gave = True
                if len(self._by_member[j]) >= self._wanted[j]:
                    unfilled.discard(j)
            if not unfilled:
                break

    # -- helpers ------------------------------------------------------------------------
    def _drop(self, j: int, key: Key) -> None:
        self._by_key[key].pop(j, None)
        self._by_member[j].pop(key, None)

    def _key_order(self) -> list[Key]:
        """The pool's partitions in the order of Kafka's HashMap of them."""
        return java_hash_order(list(self._by_key), self._hash, self._capacity)


def _int_set_order(values: Iterable[int]) -> list[int]:
    """Member indices in the order of a ``new HashSet<Integer>()`` they were added to."""
    return java_hash_order(list(values), int32)
