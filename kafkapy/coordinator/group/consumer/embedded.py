"""The classic consumer protocol's embedded bytes (Kafka's ConsumerProtocol): the
subscription a member sends in JoinGroup's protocol metadata and the assignment it gets in
SyncGroup, as a consumer group reads and writes them for the members that speak the classic
protocol (online migration) and as DescribeGroups shows a consumer group's members.

ConsumerProtocolSubscription (not flexible; big-endian, arrays prefixed by an int32 count,
strings by an int16 length, bytes by an int32 one; a negative length is a null):
int16 version, then
  v0+  [string topic], nullable bytes user data
  v1+  [owned (string topic, [int32 partition])]
  v2+  int32 generation (-1: none)
  v3+  nullable string rack.
ConsumerProtocolAssignment: int16 version, [(string topic, [int32 partition])], nullable
bytes user data -- the same fields at every version (0-3).

Reading follows Kafka: a version above 3 is read as version 3 (later versions only add
fields at the end), a negative one is refused, trailing bytes are ignored; a buffer too
short, a null topic or array, or a count beyond the bytes left raise ``MalformedProtocol``
(Kafka's SchemaException and its reader's errors).  Strings are read as Java reads them
(malformed UTF-8 replaced); an empty rack reads as none (Kafka's ``Utils.toOptional``).
Writing: topics in the order given (Kafka's own client sorts the subscription's); the
assignment's topics by name, each topic's partitions ascending (Kafka leaves that order to
its hash maps); user data null.
"""
from __future__ import annotations

import struct
from dataclasses import dataclass
from typing import Iterable, Mapping

HIGHEST_VERSION = 3


class MalformedProtocol(ValueError):
    """The embedded bytes are not a consumer protocol subscription or assignment."""


@dataclass(frozen=True, slots=True)
class EmbeddedSubscription:
    """A ConsumerProtocolSubscription, decoded (``owned``: (topic, partitions) as sent)."""
    version: int
    topics: tuple[str, ...]
    owned: tuple[tuple[str, tuple[int, ...]], ...] = ()
    generation: int = -1
    rack_id: str | None = None


# -- writing ----------------------------------------------------------------------------------
def _string(value: str) -> bytes:
    raw = value.encode()
    return struct.pack(">h", len(raw)) + raw


def _nullable_string(value: str | None) -> bytes:
    return struct.pack(">h", -1) if value is None else _string(value)


def _array(items: list[bytes]) -> bytes:
    return struct.pack(">i", len(items)) + b"".join(items)


def _topic_partitions(partitions: Mapping[str, Iterable[int]]) -> bytes:
    return _array([_string(t) + _array([struct.pack(">i", p) for p in sorted(ps)])
                   for t, ps in sorted(partitions.items())])


def subscription_bytes(topics: Iterable[str], rack: str | None = None,
                       owned: Mapping[str, Iterable[int]] | None = None, generation: int = -1,
                       version: int = HIGHEST_VERSION) -> bytes:
    """A ConsumerProtocolSubscription at ``version`` (0-3), user data null."""
    out = struct.pack(">h", version) + _array([_string(t) for t in topics]) + struct.pack(">i", -1)
    if version >= 1:
        out += _topic_partitions(owned or {})
    if version >= 2:
        out += struct.pack(">i", generation)
    if version >= 3:
        out += _nullable_string(rack)
    return out


def assignment_bytes(partitions: Mapping[str, Iterable[int]],
                     version: int = HIGHEST_VERSION) -> bytes:
    """A ConsumerProtocolAssignment; ``version`` as Kafka's serializeAssignment takes it
    (above 3: written as 3; negative: ``MalformedProtocol``)."""
    return (struct.pack(">h", _checked(version, "assignment")) + _topic_partitions(partitions)
            + struct.pack(">i", -1))


# -- reading ----------------------------------------------------------------------------------
class _Reader:
    def __init__(self, data: bytes) -> None:
        self._data = bytes(data)
        self._pos = 0

    def _take(self, fmt: str) -> int:
        try:
            (value,) = struct.unpack_from(fmt, self._data, self._pos)
        except struct.error:
            raise MalformedProtocol("buffer underflow") from None
        self._pos += struct.calcsize(fmt)
        return value

    def int16(self) -> int:
        return self._take(">h")

    def int32(self) -> int:
        return self._take(">i")

    def string(self, nullable: bool = False) -> str | None:
        length = self.int16()
        if length < 0:          # any negative length is a null, as Kafka reads it
            if nullable:
                return None
            raise MalformedProtocol("non-nullable string was serialized as null")
        raw = self._data[self._pos:self._pos + length]
        if len(raw) < length:
            raise MalformedProtocol("buffer underflow")
        self._pos += length
        return raw.decode(errors="replace")     # as Java's new String(bytes, UTF_8)

    def skip_bytes(self) -> None:
        length = self.int32()
        if self._pos + max(length, 0) > len(self._data):
            raise MalformedProtocol("buffer underflow")
        self._pos += max(length, 0)

    def count(self) -> int:
        n = self.int32()
        if n < 0 or n > len(self._data) - self._pos:
            raise MalformedProtocol("bad array length")
        return n

    def topic_partitions(self) -> tuple[tuple[str, tuple[int, ...]], ...]:
        out = []
        for _ in range(self.count()):
            topic = self.string()
            out.append((topic, tuple(self.int32() for _ in range(self.count()))))
        return tuple(out)


def _checked(version: int, what: str) -> int:
    if version < 0:
        raise MalformedProtocol(f"Unsupported {what} version: {version}")
    return min(version, HIGHEST_VERSION)


def protocol_version(data: bytes) -> int:
    """The int16 version that starts the bytes (Kafka's deserializeVersion)."""
    return _Reader(data).int16()


def decode_subscription(data: bytes) -> EmbeddedSubscription:
    r = _Reader(data)
    version = _checked(r.int16(), "subscription")
    topics = tuple(r.string() for _ in range(r.count()))
    r.skip_bytes()
    owned = r.topic_partitions() if version >= 1 else ()
    generation = r.int32() if version >= 2 else -1
    rack = r.string(nullable=True) if version >= 3 else None
    return EmbeddedSubscription(version, topics, owned, generation, rack or None)


def decode_assignment(data: bytes) -> tuple[tuple[str, tuple[int, ...]], ...]:
    """(topic, partitions) of a ConsumerProtocolAssignment, in its order."""
    r = _Reader(data)
    _checked(r.int16(), "assignment")
    partitions = r.topic_partitions()
    r.skip_bytes()
    return partitions
