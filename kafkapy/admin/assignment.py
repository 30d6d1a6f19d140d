"""Replica assignment for new topics and partitions (Kafka's AdminUtils.assignReplicasToBrokers).

Brokers are taken in id order.  Rack-unaware (no broker has a rack): a start
index and a replica shift (random unless fixed); partition i's first replica
is broker ``(i + start) % n``; the shift grows by one every n partitions;
follower j sits at ``(first + 1 + (shift + j) % (n - 1)) % n``.

Rack-aware (some broker has a rack): every broker must have one, else Kafka's
AdminOperationException (``RackInfoMissing``: UNKNOWN_SERVER_ERROR (-1) without a
message on the wire, as Kafka's ApiError.fromThrowable answers it).  The brokers
are interleaved by rack (racks sorted, brokers of a rack by id), the leader is
picked round-robin over that list, and each follower is the next candidate
(shift ``nextReplicaShift * numRacks``) that adds a rack without a replica,
then a broker without one, until every rack / broker has one.

Invariant: no broker appears twice in one partition's replica list.
"""
from __future__ import annotations

import random
from typing import Mapping

from kafkapy.protocol.errors import ErrorCode, KafkaError

RACK_INFO_MISSING = "Not all brokers have rack information for replica rack aware assignment."
RACK_INFO_MISSING_ENFORCED = ("Not all brokers have rack information. Add --disable-rack-aware "
                              "in command line to make replica assignment without rack "
                              "information.")


class RackInfoMissing(KafkaError):
    """Kafka's AdminOperationException about racks: not an ApiException, so clients see
    UNKNOWN_SERVER_ERROR with no message; ``reason`` keeps Kafka's text for the log."""

    def __init__(self, reason: str) -> None:
        super().__init__(ErrorCode.UNKNOWN, None)
        self.reason = reason


def assign_replicas(brokers: list[int], partitions: int, replication_factor: int,
                    first_partition: int = 0, rng: random.Random | None = None,
                    start_index: int | None = None,
                    racks: Mapping[int, str | None] | None = None,
                    replica_shift: int | None = None) -> dict[int, list[int]]:
    """``{partition: replicas}`` for ``partitions`` new partitions numbered from
    ``first_partition``; ``start_index`` fixes both the start and the shift (Kafka's
    fixedStartIndex); ``replica_shift`` overrides the shift alone (for tests of the
    published worked examples); ``racks`` maps broker id to rack (None: no rack)."""
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
    racks = racks or {}
    if not any(racks.get(b) is not None for b in ordered):
        return _rack_unaware(ordered, partitions, replication_factor, first_partition, rng,
                             start_index, replica_shift)
    if any(racks.get(b) is None for b in ordered):
        raise RackInfoMissing(RACK_INFO_MISSING)
    return _rack_aware({b: racks[b] for b in ordered}, partitions, replication_factor,
                       first_partition, rng, start_index, replica_shift)


def check_rack_enforced(brokers: list[int], racks: Mapping[int, str | None]) -> None:
    """AdminZkClient.getBrokerMetadatas(Enforced): some but not all brokers with a rack."""
    with_rack = [b for b in brokers if racks.get(b) is not None]
    if with_rack and len(with_rack) < len(brokers):
        raise RackInfoMissing(RACK_INFO_MISSING_ENFORCED)


def _start(n: int, rng: random.Random, start_index: int | None,
           replica_shift: int | None) -> tuple[int, int]:
    if start_index is not None and start_index >= 0:
        start, shift = start_index, start_index
    else:
        # Kafka draws the start index first, then the shift.
        start = rng.randrange(n)
        shift = rng.randrange(n)
    return start, shift if replica_shift is None else replica_shift


def _replica_index(first: int, shift: int, j: int, n: int) -> int:
    return (first + 1 + (shift + j) % (n - 1)) % n


def _rack_unaware(ordered: list[int], partitions: int, rf: int, first_partition: int,
                  rng: random.Random, start_index: int | None,
                  replica_shift: int | None) -> dict[int, list[int]]:
    n = len(ordered)
    return {current: [ordered[first]] + [ordered[_replica_index(first, shift, j, n)]
                                         for j in range(rf - 1)]
            for current, first, shift in _first_replicas(n, partitions, first_partition, rng,
                                                         start_index, replica_shift)}


def _first_replicas(n: int, partitions: int, first_partition: int, rng: random.Random,
                    start_index: int | None, replica_shift: int | None):
    """(partition, index of its first replica, shift) for each new partition: Kafka's
    start index, and a shift that grows by one every ``n`` partitions."""
    start, shift = _start(n, rng, start_index, replica_shift)
    current = max(0, first_partition)
    for _ in range(partitions):
        if current > 0 and current % n == 0:
            shift += 1
        yield current, (current + start) % n, shift
        current += 1


def rack_alternated(rack_of: Mapping[int, str]) -> list[int]:
    """Brokers interleaved by rack: racks in name order, each rack's brokers by id
    (Kafka's getRackAlternatedBrokerList)."""
    by_rack: dict[str, list[int]] = {}
    for broker, rack in rack_of.items():
        by_rack.setdefault(rack, []).append(broker)
    queues = [sorted(by_rack[r]) for r in sorted(by_rack)]
    result: list[int] = []
    depth = 0
    while len(result) < len(rack_of):
        result.extend(q[depth] for q in queues if depth < len(q))
        depth += 1
    return result


def _rack_aware(rack_of: dict[int, str], partitions: int, rf: int, first_partition: int,
                rng: random.Random, start_index: int | None,
                replica_shift: int | None) -> dict[int, list[int]]:
    arranged = rack_alternated(rack_of)
    n = len(arranged)
    num_racks = len(set(rack_of.values()))
    result: dict[int, list[int]] = {}
    for current, first, shift in _first_replicas(n, partitions, first_partition, rng,
                                                 start_index, replica_shift):
        leader = arranged[first]
        replicas = [leader]
        racks_used, brokers_used = {rack_of[leader]}, {leader}
        k = 0
        for _ in range(rf - 1):
            while True:
                broker = arranged[_replica_index(first, shift * num_racks, k, n)]
                rack = rack_of[broker]
                k += 1
                # Skip a broker whose rack already has a replica while some rack has none,
                # or that already has one while some broker has none.
                if ((rack not in racks_used or len(racks_used) == num_racks)
                        and (broker not in brokers_used or len(brokers_used) == n)):
                    replicas.append(broker)
                    racks_used.add(rack)
                    brokers_used.add(broker)
                    break
        result[current] = replicas
    return result
