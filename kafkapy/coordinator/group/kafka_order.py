"""The order in which Kafka's group coordinator lays out the records of an offset commit.

Kafka (Scala 2.13) collects a commit's partitions in a ``mutable.HashMap`` keyed by
``TopicIdPartition`` (topic id zero), then freezes it with ``toMap`` and writes one record
per entry in that map's order; the order is observable in ``__consumer_offsets``.

- ``TopicIdPartition.hashCode`` = 31 * (31 + 0) + ``TopicPartition.hashCode``, and
  ``TopicPartition.hashCode`` = 31 * (31 + partition) + ``String.hashCode(topic)``,
  all in 32-bit two's complement.
- ``mutable.HashMap``: buckets ``h ^ (h >>> 16)`` masked by the table size (16, doubled
  once the entries reach 0.75 of it), iterated by bucket, by hash within one.
- ``toMap`` keeps that order for up to 4 entries (Map1..Map4); past 4 it is an immutable
  CHAMP ``HashMap`` over ``Hashing.improve(h)``: each trie node lists the entries that
  end there (by 5-bit chunk, lowest bits first) before descending into its sub-nodes.
"""
from __future__ import annotations

from kafkapy.jvm import champ_improve, int32, scala_mutable_hash_order, topic_partition_hash
from kafkapy.protocol.topic_partition import TopicPartition


def topic_id_partition_hash(tp: TopicPartition) -> int:
    return int32(31 * 31 + topic_partition_hash(tp))


def _mutable_order(tps: list[TopicPartition]) -> list[TopicPartition]:
    return scala_mutable_hash_order(tps, topic_id_partition_hash)


def _champ_order(items: list[tuple[int, TopicPartition]], shift: int) -> list[TopicPartition]:
    by_chunk: dict[int, list] = {}
    for h, tp in items:
        by_chunk.setdefault(((h & 0xFFFFFFFF) >> shift) & 31, []).append((h, tp))
    ends = [group[0][1] for _, group in sorted(by_chunk.items()) if len(group) == 1]
    deeper = [group for _, group in sorted(by_chunk.items()) if len(group) > 1]
    if shift >= 30:  # a full hash collision: Kafka keeps such entries in insertion order
        return ends + [tp for group in deeper for _, tp in group]
    return ends + [tp for group in deeper for tp in _champ_order(group, shift + 5)]


def commit_order(tps: list[TopicPartition]) -> list[TopicPartition]:
    """``tps`` (distinct) in the order Kafka writes their offset records."""
    ordered = _mutable_order(list(tps))
    if len(ordered) <= 4:
        return ordered
    return _champ_order([(champ_improve(topic_id_partition_hash(tp)), tp) for tp in ordered], 0)
