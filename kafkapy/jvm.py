"""Java/Scala semantics kafkapy must reproduce byte-for-byte.

Kafka's observable output depends on a few JVM details: which partition of
``__consumer_offsets`` / ``__transaction_state`` holds an id, which replica fetcher
serves a partition, the key order of a znode's JSON and of Java ``HashSet``s printed
by the tools, the spelling of a Scala ``Set`` in an error message.  This module holds
the primitives those computations share, with no kafkapy imports (light enough for
every CLI tool):

- ``int32``: Java's ``int`` overflow (two's complement wrap to a signed 32-bit value).
- ``string_hash``: ``String.hashCode`` (``31*h + c`` over UTF-16 code units, wrapped).
- ``int_hash`` / ``long_hash`` / ``topic_partition_hash``: ``Integer.hashCode``,
  ``Long.hashCode`` (``(int) (v ^ (v >>> 32))``) and Kafka's ``TopicPartition.hashCode``
  (``31 * (31 + partition) + topic.hashCode()``).
- ``utils_abs``: Kafka's ``Utils.abs`` (0 for Integer.MIN_VALUE, unlike ``Math.abs``).
- ``hashmap_spread``: the bucket hash of Java's ``HashMap``/``HashSet`` and Scala 2.13's
  ``mutable.HashMap`` (``h ^ (h >>> 16)``), as an unsigned 32-bit value.
- ``champ_improve``: ``scala.collection.Hashing.improve``, the hash Scala 2.13's
  immutable CHAMP ``HashMap``/``HashSet`` index by (5 bits per trie level), unsigned.
- ``java_hash_order``: the iteration order of a ``java.util.HashSet``/``HashMap`` filled
  one by one (bucket by bucket, insertion order inside one).
- ``scala_mutable_hash_order``: the iteration order of a Scala 2.13 ``mutable.HashSet``/
  ``HashMap`` of a given table length (bucket by bucket, by signed spread hash inside one).
- ``scala_set``: how a Scala immutable ``Set`` prints (``Set(..)`` up to four elements,
  ``HashSet(..)`` beyond, or when filtered from a HashSet).

Orders with more rules stay next to their users: Scala 2.13 map sizing, the CHAMP
``immutable.HashMap`` and ``java.util.Properties`` (``metadata.paths``), the
offset-commit record order (``coordinator.group.kafka_order``).

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


def long_hash(value: int) -> int:
    """``Long.hashCode``: ``(int) (value ^ (value >>> 32))``."""
    value &= 0xFFFFFFFFFFFFFFFF
    return int32(value ^ (value >> 32))


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


def java_hash_order(items, hash_fn, capacity: int = 16) -> list:
    """``items`` (distinct, in insertion order) in the iteration order of a java.util.HashSet
    (or HashMap's keys) of ``capacity`` buckets filled by adding them one by one: by bucket
    ``(h ^ h >>> 16) & (capacity - 1)`` (doubled past a 0.75 load), ties in insertion order
    (small sets never become tree bins)."""
    items = list(dict.fromkeys(items))
    while len(items) > capacity * 3 // 4:
        capacity *= 2

    def bucket(item) -> int:
        return hashmap_spread(hash_fn(item)) & (capacity - 1)
    return sorted(items, key=bucket)   # sorted() is stable: insertion order within a bucket


def sized_map_capacity(size: int) -> int:
    """The first table length of ``new HashMap<>(size)`` (HashMap.tableSizeFor: the
    smallest power of two at least ``size``); ``java_hash_order`` grows it as adds do."""
    return 1 << max(size - 1, 0).bit_length()


def hash_set_capacity(size: int) -> int:
    """The table length of ``new HashSet<>(collection)`` / ``new HashMap<>(initial)`` with
    ``initial = (int) (size / .75f) + 1`` (JDK 17): at least 16, a power of two."""
    wanted = max(4 * size // 3 + 1, 16)    # exact for sizes below 3 * 2**20
    return 1 << (wanted - 1).bit_length()


def scala_mutable_table_length(count: int) -> int:
    """Buckets of a Scala 2.13 ``mutable.HashSet``/``HashMap`` after ``count`` adds: 16,
    doubled whenever an add brings the size to the 0.75 load threshold."""
    length = 16
    while count >= length * 3 // 4:
        length *= 2
    return length


def scala_mutable_hash_order(items, hash_fn, length: int | None = None) -> list:
    """``items`` in the iteration order of a Scala 2.13 ``mutable.HashSet``/``HashMap`` whose
    table has ``length`` buckets (default: the table that adding ``items`` one by one
    grows): bucket by bucket (``improved & (length - 1)``), ascending signed improved hash
    (``h ^ (h >>> 16)``) inside one (``put0`` keeps buckets sorted)."""
    items = list(items)
    if length is None:
        length = scala_mutable_table_length(len(items))

    def improved(item) -> int:
        return int32(hashmap_spread(hash_fn(item)))
    return sorted(items, key=lambda item: (improved(item) & (length - 1), improved(item)))


def scala_set(items: Iterable[object], hashed: bool = False) -> str:
    """A Scala immutable ``Set`` as Kafka's messages print it: ``Set(a, b)``; more than
    four elements (or ``hashed``: a set filtered from a HashSet) print as ``HashSet(..)``.
    Elements keep the given order; duplicates are dropped."""
    shown = [str(i) for i in dict.fromkeys(items)]
    name = "Set" if len(shown) <= 4 and not hashed else "HashSet"
    return f"{name}({', '.join(shown)})"
