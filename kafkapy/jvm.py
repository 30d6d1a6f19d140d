"""Java/Scala semantics kafkapy must reproduce byte-for-byte.

Kafka's observable output depends on a few JVM details: which partition of
``__consumer_offsets`` / ``__transaction_state`` holds an id, which replica fetcher
serves a partition, the key order of a znode's JSON and of Java ``HashSet``s printed
by the tools, the spelling of a Scala ``Set`` in an error message.  This module holds
the primitives those computations share, with no kafkapy imports (light enough for
every CLI tool):

- ``int32``: Java's ``int`` overflow (two's complement wrap to a signed 32-bit value).
- ``string_hash``: ``String.hashCode`` (``31*h + c`` over UTF-16 code units, wrapped).
- ``int_hash`` / ``topic_partition_hash``: ``Integer.hashCode`` and Kafka's
  ``TopicPartition.hashCode`` (``31 * (31 + partition) + topic.hashCode()``).
- ``utils_abs``: Kafka's ``Utils.abs`` (0 for Integer.MIN_VALUE, unlike ``Math.abs``).
- ``hashmap_spread``: the bucket hash of Java's ``HashMap``/``HashSet`` and Scala 2.13's
  ``mutable.HashMap`` (``h ^ (h >>> 16)``), as an unsigned 32-bit value.
- ``champ_improve``: ``scala.collection.Hashing.improve``, the hash Scala 2.13's
  immutable CHAMP ``HashMap``/``HashSet`` index by (5 bits per trie level), unsigned.
- ``scala_set``: how a Scala immutable ``Set`` prints (``Set(..)`` up to four elements,
  ``HashSet(..)`` beyond, or when filtered from a HashSet).

The iteration orders built on them stay next to their users: Scala 2.13 ``mutable`` and
``immutable.HashMap`` and ``java.util.Properties`` (``metadata.paths.mutable_map_order``,
``immutable_map_order``, ``properties_order``), the offset-commit record order
(``coordinator.group.kafka_order``), ``java.util.HashSet`` (``cli._common.java_set_order``).

Invariants: every hash is computed on exact Java ``int`` values; results documented as
signed are in [-2**31, 2**31), unsigned ones in [0, 2**32).
"""
from __future__ import annotations

from typing import Iterable

_MASK32 = 0xFFFFFFFF
INT_MIN = -(1 << 31)


def int32(value: int) -> int:
    """``value`` wrapped like a Java ``int`` (signed 32-bit)."""
    value &= _MASK32
    return value - (1 << 32) if value >= 1 << 31 else value


def string_hash(text: str) -> int:
    """Java's ``String.hashCode`` as a signed 32-bit int."""
    # surrogatepass: a lone surrogate is one UTF-16 unit in Java too.
    data = text.encode("utf-16-be", "surrogatepass")
    h = 0
    for i in range(0, len(data), 2):
        h = (31 * h + ((data[i] << 8) | data[i + 1])) & _MASK32
    return int32(h)


def int_hash(value: int) -> int:
    """``Integer.hashCode``: the value itself."""
    return int32(value)


def topic_partition_hash(tp: tuple[str, int]) -> int:
    """Kafka's ``TopicPartition.hashCode``: ``31 * (31 + partition) + topic.hashCode()``."""
    return int32(31 * (31 + tp[1]) + string_hash(tp[0]))


def utils_abs(n: int) -> int:
    """Kafka's ``Utils.abs``: ``|n|``, but 0 for Integer.MIN_VALUE."""
    return 0 if n == INT_MIN else abs(n)


def hashmap_spread(h: int) -> int:
    """``h ^ (h >>> 16)`` of a Java int hash, unsigned (mask it with the table size)."""
    h &= _MASK32
    return h ^ (h >> 16)


def champ_improve(h: int) -> int:
    """``scala.collection.Hashing.improve`` of a Java int hash, unsigned."""
    h &= _MASK32
    h = (h + (~(h << 9) & _MASK32)) & _MASK32
    h ^= h >> 14
    h = (h + (h << 4)) & _MASK32
    return h ^ (h >> 10)


def scala_set(items: Iterable[object], hashed: bool = False) -> str:
    """A Scala immutable ``Set`` as Kafka's messages print it: ``Set(a, b)``; more than
    four elements (or ``hashed``: a set filtered from a HashSet) print as ``HashSet(..)``.
    Elements keep the given order; duplicates are dropped."""
    shown = [str(i) for i in dict.fromkeys(items)]
    name = "Set" if len(shown) <= 4 and not hashed else "HashSet"
    return f"{name}({', '.join(shown)})"
