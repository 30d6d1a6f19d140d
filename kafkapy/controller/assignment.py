"""Replica assignment for new topics and partitions (Kafka's rack-unaware algorithm).

For n brokers, a random start index and a random shift: partition i's first
replica is broker ``(i + start) % n``; the shift grows by one every n
partitions; follower j sits at ``(first + 1 + (shift + j) % (n - 1)) % n``.
This spreads leaders and followers evenly.  Invariant: no broker appears twice
in one partition's replica list.
"""
from __future__ import annotations

import random

from kafkapy.protocol.errors import ErrorCode, KafkaError


def assign_replicas(brokers: list[int], partitions: int, replication_factor: int,
                    first_partition: int = 0, rng: random.Random | None = None,
                    start_index: int | None = None) -> dict[int, list[int]]:
    if partitions <= 0:
        raise KafkaError(ErrorCode.INVALID_PARTITIONS, "Number of partitions must be larger than 0.")
    if replication_factor <= 0:
        raise KafkaError(ErrorCode.INVALID_REPLICATION_FACTOR,
                         "Replication factor must be larger than 0.")
    if replication_factor > len(brokers):
        raise KafkaError(ErrorCode.INVALID_REPLICATION_FACTOR,
                         f"Replication factor: {replication_factor} larger than available "
                         f"brokers: {len(brokers)}.")
    rng = rng or random.Random()
    ordered = sorted(brokers)
    n = len(ordered)
    start = rng.randrange(n) if start_index is None else start_index
    shift = rng.randrange(n) if start_index is None else start_index
    result: dict[int, list[int]] = {}
    current = first_partition
    for i in range(partitions):
        if current > 0 and current % n == 0:
            shift += 1
        first = (current + start) % n
        replicas = [ordered[first]]
        for j in range(replication_factor - 1):
            replicas.append(ordered[(first + 1 + (shift + j) % (n - 1)) % n])
        result[first_partition + i] = replicas
        current += 1
    return result
