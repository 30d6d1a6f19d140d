"""Replica assignment against Kafka's AdminUtils worked examples (rack-unaware and rack-aware)."""
from __future__ import annotations

import random
from collections import Counter

import pytest

from kafkapy.admin.assignment import (
    RACK_INFO_MISSING, RACK_INFO_MISSING_ENFORCED, RackInfoMissing, assign_replicas,
    check_rack_enforced, rack_alternated)
from kafkapy.protocol.errors import ErrorCode, KafkaError

BROKERS = [1000, 1001, 1002, 1003, 1004]


def test_spec_worked_example_start_0_shift_3():
    # Kafka's assignReplicasToBrokersRackUnaware with a fixed start index 0 and replica
    # shift 3: 5 brokers, 10 partitions, RF 3; the shift grows by one after 5 partitions.
    got = assign_replicas(BROKERS, 10, 3, start_index=0, replica_shift=3)
    assert got == {
        0: [1000, 1004, 1001], 1: [1001, 1000, 1002], 2: [1002, 1001, 1003],
        3: [1003, 1002, 1004], 4: [1004, 1003, 1000], 5: [1000, 1001, 1002],
        6: [1001, 1002, 1003], 7: [1002, 1003, 1004], 8: [1003, 1004, 1000],
        9: [1004, 1000, 1001]}


@pytest.mark.parametrize("start, leaders", [
    (0, {1000: [0, 5], 1001: [1, 6], 1002: [2, 7], 1003: [3, 8], 1004: [4, 9]}),
    (2, {1000: [3, 8], 1001: [4, 9], 1002: [0, 5], 1003: [1, 6], 1004: [2, 7]}),
])
def test_spec_leader_placement(start, leaders):
    got = assign_replicas(list(reversed(BROKERS)), 10, 1, start_index=start)
    by_leader: dict[int, list[int]] = {}
    for p, replicas in sorted(got.items()):
        by_leader.setdefault(replicas[0], []).append(p)
    assert by_leader == leaders


def test_adminutils_javadoc_table_rack_unaware():
    # AdminUtils' javadoc table: 5 brokers, 10 partitions, 3 replicas, start 0, shift 0...
    got = assign_replicas([0, 1, 2, 3, 4], 10, 3, start_index=0)
    second = {b: sorted(p for p, r in got.items() if r[1] == b) for b in range(5)}
    assert second == {0: [4, 8], 1: [0, 9], 2: [1, 5], 3: [2, 6], 4: [3, 7]}


def test_added_partitions_continue_numbering_and_shift():
    got = assign_replicas(BROKERS, 3, 2, first_partition=5, start_index=0)
    assert sorted(got) == [5, 6, 7]
    whole = assign_replicas(BROKERS, 8, 2, start_index=0)
    assert got == {p: whole[p] for p in (5, 6, 7)}


def test_no_duplicates_and_even_leaders_random():
    rng = random.Random(7)
    for n in range(1, 7):
        for rf in range(1, n + 1):
            got = assign_replicas(list(range(n)), 3 * n, rf, rng=rng)
            assert all(len(set(r)) == rf for r in got.values())
            assert set(Counter(r[0] for r in got.values()).values()) == {3}


@pytest.mark.parametrize("args, code, message", [
    ((BROKERS, 0, 1), ErrorCode.INVALID_PARTITIONS, "Number of partitions must be larger than 0."),
    ((BROKERS, 1, 0), ErrorCode.INVALID_REPLICATION_FACTOR,
     "Replication factor must be larger than 0."),
    ((BROKERS, 1, 6), ErrorCode.INVALID_REPLICATION_FACTOR,
     "Replication factor: 6 larger than available brokers: 5."),
    (([], 1, 1), ErrorCode.INVALID_REPLICATION_FACTOR,
     "Replication factor: 1 larger than available brokers: 0."),
])
def test_errors(args, code, message):
    with pytest.raises(KafkaError) as e:
        assign_replicas(*args)
    assert (e.value.code, e.value.message) == (code, message)


RACKS = {0: "rack1", 1: "rack3", 2: "rack3", 3: "rack2", 4: "rack2", 5: "rack1"}


def test_rack_alternated_list():
    # AdminRackAwareTest.testGetRackAlternatedBrokerListAndAssignReplicasToBrokers
    assert rack_alternated(RACKS) == [0, 3, 1, 5, 4, 2]
    assert rack_alternated({b: r for b, r in RACKS.items() if b != 5}) == [0, 3, 1, 4, 2]
    assert rack_alternated({0: "a", 1: "a", 2: "a", 3: "b", 4: "b", 5: "b", 6: "c", 7: "c",
                            8: "c"}) == [0, 3, 6, 1, 4, 7, 2, 5, 8]


def test_rack_aware_worked_example():
    got = assign_replicas(list(RACKS), 7, 3, start_index=0, racks=RACKS)
    assert got == {0: [0, 3, 1], 1: [3, 1, 5], 2: [1, 5, 4], 3: [5, 4, 2], 4: [4, 2, 0],
                   5: [2, 0, 3], 6: [0, 4, 2]}


@pytest.mark.parametrize("partitions, rf", [(6, 3), (12, 2), (13, 3), (6, 2)])
def test_rack_aware_spreads_racks(partitions, rf):
    racks = {0: "rack1", 1: "rack2", 2: "rack2", 3: "rack3", 4: "rack3", 5: "rack1"}
    rng = random.Random(3)
    got = assign_replicas(list(racks), partitions, rf, rng=rng, racks=racks)
    for replicas in got.values():
        assert len(set(replicas)) == rf
        assert len({racks[b] for b in replicas}) == min(rf, 3)   # one replica per rack


def test_rack_aware_more_replicas_than_racks():
    racks = {0: "a", 1: "a", 2: "b", 3: "b"}
    got = assign_replicas(list(racks), 4, 3, start_index=0, racks=racks)
    for replicas in got.values():
        assert len(set(replicas)) == 3 and {racks[b] for b in replicas} == {"a", "b"}


def test_some_brokers_without_rack():
    with pytest.raises(RackInfoMissing) as e:
        assign_replicas([0, 1, 2], 1, 1, racks={0: "a", 1: None, 2: "b"})
    # Kafka's AdminOperationException: UNKNOWN_SERVER_ERROR, no message on the wire.
    assert (e.value.code, e.value.message, e.value.reason) == (-1, None, RACK_INFO_MISSING)
    # no rack at all: rack-unaware
    assert assign_replicas([0, 1], 2, 2, start_index=0, racks={0: None, 1: None}) == {
        0: [0, 1], 1: [1, 0]}


def test_rack_enforced_check():
    check_rack_enforced([0, 1], {0: None, 1: None})
    check_rack_enforced([0, 1], {0: "a", 1: "b"})
    with pytest.raises(RackInfoMissing) as e:
        check_rack_enforced([0, 1], {0: "a", 1: None})
    assert e.value.reason == RACK_INFO_MISSING_ENFORCED
