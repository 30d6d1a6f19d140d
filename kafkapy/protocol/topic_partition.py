"""A partition's name: ``TopicPartition(topic, partition)`` (Kafka's
``org.apache.kafka.common.TopicPartition``), the one vocabulary every layer uses for
"which partition" -- the log manager's and the replica manager's keys, the fetchers',
the coordinators' and the controller's.

Invariant: it is a plain tuple (a ``NamedTuple``), so a ``(topic, partition)`` tuple
built anywhere (a request decoder, a test) is equal to it, hashes the same and finds
the same dict entry.  Building one is a call (a little more than a tuple literal):
per-record and per-partition hot paths may go on building plain tuples as keys.
"""
from __future__ import annotations

from typing import NamedTuple


class TopicPartition(NamedTuple):
    topic: str
    partition: int
