"""The classic consumer protocol's embedded bytes, as DescribeGroups shows a consumer
group's members (Kafka's ConsumerProtocol.serializeSubscription / serializeAssignment at
their latest versions: ConsumerProtocolSubscription v3, ConsumerProtocolAssignment v3).

Subscription v3: int16 version, [string topic], nullable bytes user data (null),
[owned (string topic, [int32 partition])] (empty), int32 generation (-1), nullable
string rack.  Assignment v3: int16 version, [(string topic, [int32 partition])],
nullable bytes user data (null).  Big-endian, arrays prefixed by an int32 count.
"""
from __future__ import annotations

import struct
from typing import Iterable, Mapping

_VERSION = 3


def _string(value: str) -> bytes:
    raw = value.encode()
    return struct.pack(">h", len(raw)) + raw


def _nullable_string(value: str | None) -> bytes:
    return struct.pack(">h", -1) if value is None else _string(value)


def _array(items: list[bytes]) -> bytes:
    return struct.pack(">i", len(items)) + b"".join(items)


def subscription_bytes(topics: Iterable[str], rack: str | None) -> bytes:
    return (struct.pack(">h", _VERSION) + _array([_string(t) for t in topics])
            + struct.pack(">i", -1) + _array([]) + struct.pack(">i", -1)
            + _nullable_string(rack))


def assignment_bytes(partitions: Mapping[str, Iterable[int]]) -> bytes:
    topics = [_string(t) + _array([struct.pack(">i", p) for p in sorted(ps)])
              for t, ps in sorted(partitions.items())]
    return struct.pack(">h", _VERSION) + _array(topics) + struct.pack(">i", -1)
