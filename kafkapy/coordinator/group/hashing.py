"""Which ``__consumer_offsets`` partition holds a group: Kafka's exact formula.

``Utils.abs(groupId.hashCode()) % offsets.topic.num.partitions``, where
``hashCode`` is Java's ``String.hashCode`` (``31*h + c`` over UTF-16 code units
with int32 overflow) and ``Utils.abs`` maps Integer.MIN_VALUE to 0 (unlike
``Math.abs``, which would leave it negative).
"""
from __future__ import annotations

_INT_MIN = -(1 << 31)


def java_string_hash(text: str) -> int:
    """Java's ``String.hashCode`` as a signed 32-bit int."""
    data = text.encode("utf-16-be", "surrogatepass")
    h = 0
    for i in range(0, len(data), 2):
        h = (31 * h + ((data[i] << 8) | data[i + 1])) & 0xFFFFFFFF
    return h - (1 << 32) if h & 0x80000000 else h


def java_utils_abs(n: int) -> int:
    """Kafka's ``Utils.abs``: ``|n|``, but 0 for Integer.MIN_VALUE."""
    return 0 if n == _INT_MIN else abs(n)


def partition_for(group_id: str, num_partitions: int) -> int:
    return java_utils_abs(java_string_hash(group_id)) % num_partitions
