"""What the assignors share: the error they raise, which groups are homogeneous, and the
iteration orders Kafka's server-side assignors see, for the assignors to reproduce.

A group is homogeneous when all its members subscribe to the same topics (Kafka's
``SubscriptionType.HOMOGENEOUS``); Kafka decides it on topic *names*
(``ModernGroup.subscriptionType``), which can differ from the ids when a member names a
topic that does not exist, so a caller that knows the names passes its answer in.

Kafka's assignors walk Java ``HashMap``/``HashSet``s, and where two orders give two
answers (which member gets the extra partition, which partitions an over-full member
keeps) kafkapy must walk them in Java's order.  What the assignors receive, and the
order assumed for each (what Kafka's coordinator holds after loading the group from
``__consumer_offsets``):

- the members: a ``HashMap<String, ..>`` (``TargetAssignmentBuilder``'s member specs)
  filled one put at a time in the order of the ``members`` mapping: ``member_order``;
- a member's target assignment: a ``HashMap<Uuid, ..>`` filled one put at a time in the
  order of its mapping (``Assignment.fromRecord``), each topic's partitions a
  ``HashSet<Integer>`` built from the ascending list (``new HashSet<>(list)``):
  ``topic_map_order``, ``partition_order``;
- a member's subscribed topic ids (``TopicIds``): its topic names as a
  ``HashSet<String>`` built from the client's list (``new HashSet<>(list)``), resolved to
  ids in that order; ties inside a bucket go by the client's order, which the assignors
  do not get: they are taken in name order here (``subscribed_topic_order``).

Java's order of a table: bucket by bucket (``(h ^ h >>> 16) & (capacity - 1)``), insertion
order inside a bucket.  Buckets of eight or more entries (tree bins) are not modelled; with
string and Uuid hashes at Java's 0.75 load they do not happen in practice.

Where a running Kafka can walk another order, and so answer differently: its member map
grows for members that a rebalance then removes (a larger table than the members left
need); its in-memory targets are the previous assignment's own sets (partitions of one
bucket in the order they were assigned, not ascending) until the group is loaded again;
and the client's order of topic names that share a bucket.  Only the homogeneous uniform
builder depends on the targets' and subscriptions' orders (which partitions an over-full
member keeps, which member gets which left-over partition); the other builders depend on
the member order alone.
"""
from __future__ import annotations

import uuid
from typing import Callable, Iterable, Mapping, TypeVar

from kafkapy.jvm import (hash_set_capacity, hashmap_spread, int32, java_hash_order, long_hash,
                         string_hash)

T = TypeVar("T")


class PartitionAssignorError(Exception):
    """Kafka's PartitionAssignorException: the assignor could not place every partition."""


def is_homogeneous(subscriptions: Iterable[frozenset[uuid.UUID]]) -> bool:
    """Whether every member subscribes to the same topics (true for no members)."""
    return len(set(subscriptions)) <= 1


_MASK64 = (1 << 64) - 1


def uuid_hash(topic_id: uuid.UUID) -> int:
    """Kafka's ``Uuid.hashCode``: the two halves xor-ed, folded like ``Long.hashCode``."""
    value = topic_id.int
    return long_hash((value >> 64) ^ (value & _MASK64))


def uuid_key(topic_id: uuid.UUID) -> tuple[int, int]:
    """A sort key in ``Uuid.compareTo``'s order (signed halves, most significant first)."""
    value = topic_id.int

    def signed(half: int) -> int:
        return half - (1 << 64) if half >> 63 else half
    return signed(value >> 64), signed(value & _MASK64)


def utf16_key(text: str) -> bytes:
    """A sort key in ``String.compareTo``'s order (UTF-16 code units)."""
    return text.encode("utf-16-be", "surrogatepass")


def _bucket_order(items: Iterable[T], hash_fn: Callable[[T], int], capacity: int) -> list[T]:
    def bucket(item: T) -> int:
        return hashmap_spread(hash_fn(item)) & (capacity - 1)
    return sorted(items, key=bucket)   # stable: insertion order inside a bucket


def member_order(members: Iterable[str]) -> list[str]:
    """Member ids in the order of a ``HashMap`` they were put into one by one."""
    return java_hash_order(members, string_hash)


def topic_map_order(topic_ids: Iterable[uuid.UUID]) -> list[uuid.UUID]:
    """Topic ids in the order of a ``HashMap`` they were put into one by one."""
    return java_hash_order(topic_ids, uuid_hash)


def partition_order(partitions: Iterable[int]) -> list[int]:
    """Partitions in the order of ``new HashSet<>(ascending list)``."""
    ordered = sorted(partitions)
    return _bucket_order(ordered, int32, hash_set_capacity(len(ordered)))


def topic_name_order(names: Iterable[str]) -> list[str]:
    """Topic names in the order of ``new HashSet<>(names)`` (a member's subscribed topic
    names as Kafka keeps and describes them), the names inserted in String order."""
    ordered = sorted(set(names), key=utf16_key)
    return _bucket_order(ordered, string_hash, hash_set_capacity(len(ordered)))


def subscribed_topic_order(topic_ids: Iterable[uuid.UUID],
                           names: Mapping[uuid.UUID, str]) -> list[uuid.UUID]:
    """A member's subscribed topic ids (those in ``names``) in the order of
    ``new HashSet<>(TopicIds)``: the ids of ``new HashSet<>(topic names)``, inserted in
    that set's order, both tables sized for the whole subscription."""
    topic_ids = list(topic_ids)
    capacity = hash_set_capacity(len(topic_ids))
    known = sorted((names[t], t) for t in topic_ids if t in names)
    by_name = _bucket_order(known, lambda pair: string_hash(pair[0]), capacity)
    return _bucket_order([t for _, t in by_name], uuid_hash, capacity)
