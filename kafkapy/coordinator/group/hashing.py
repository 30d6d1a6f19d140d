"""Which ``__consumer_offsets`` partition holds a group: Kafka's exact formula.

``Utils.abs(groupId.hashCode()) % offsets.topic.num.partitions``, where
``hashCode`` is Java's ``String.hashCode`` (``31*h + c`` over UTF-16 code units
with int32 overflow) and ``Utils.abs`` maps Integer.MIN_VALUE to 0 (unlike
``Math.abs``, which would leave it negative).  Both primitives live in
``kafkapy.jvm``; they are re-exported here under their historical names.
"""
from __future__ import annotations

from kafkapy.jvm import string_hash as java_string_hash
from kafkapy.jvm import utils_abs as java_utils_abs

__all__ = ["java_string_hash", "java_utils_abs", "partition_for"]


def partition_for(group_id: str, num_partitions: int) -> int:
    return java_utils_abs(java_string_hash(group_id)) % num_partitions
