"""The assignor registry (kafkapy/coordinator/group/consumer/assignor.py) and the Java
orders the assignors reproduce (``_support``); that the orders are Java's in practice is
what test_uniform.py's comparisons with Kafka's assignors show."""
from __future__ import annotations

import uuid

from kafkapy.coordinator.group.consumer import _support
from kafkapy.coordinator.group.consumer.assignor import ASSIGNORS, DEFAULT, PartitionAssignor
from kafkapy.coordinator.group.consumer.types import MemberSpec, TopicMetadata
from kafkapy.jvm import hash_set_capacity


def test_kafkas_assignors_by_name():
    assert sorted(ASSIGNORS) == ["range", "uniform"] and DEFAULT == "uniform"
    for name, assignor in ASSIGNORS.items():
        assert assignor.name == name
        assert isinstance(assignor, PartitionAssignor)


def test_every_member_gets_an_entry():
    topic = TopicMetadata(uuid.uuid4(), "t", 3)
    specs = {"a": MemberSpec(None, frozenset(), {}), "b": MemberSpec(None, frozenset(), {}),
             "c": MemberSpec(None, frozenset({topic.topic_id}), {})}
    for assignor in ASSIGNORS.values():
        assert assignor.assign({}, {}) == {}
        assert assignor.assign(specs, {topic.topic_id: topic}) == {
            "a": {}, "b": {}, "c": {topic.topic_id: frozenset({0, 1, 2})}}
        assert assignor.assign(specs, {}) == {"a": {}, "b": {}, "c": {}}


def test_uuid_hash_and_order_are_kafkas():
    assert _support.uuid_hash(uuid.UUID(int=(1 << 64) | 2)) == 3
    assert _support.uuid_hash(uuid.UUID(int=((1 << 64) - 1) << 64)) == 0     # -1 ^ -1
    high = uuid.UUID(int=1 << 127)       # negative most significant half
    assert sorted([uuid.UUID(int=5), high], key=_support.uuid_key) == [high, uuid.UUID(int=5)]


def test_hash_set_of_a_collection_sizes_its_table_like_java():
    # new HashSet<>(c): tableSizeFor(max((int) (c.size() / .75f) + 1, 16))
    assert [hash_set_capacity(n) for n in (0, 11, 12, 13, 24, 25, 96, 97)] == \
        [16, 16, 32, 32, 64, 64, 256, 256]


def test_partitions_in_hash_set_order():
    assert _support.partition_order([20, 5, 3]) == [3, 20, 5]
    assert _support.partition_order([3, 17]) == [17, 3]       # buckets 3 and 1 of 16
    assert _support.partition_order(range(40)) == list(range(40))   # a 64-bucket table


def test_member_ids_compare_by_utf16_units():
    # Java: "\uffff" > "\U00010000" (0xFFFF > 0xD800); Python compares code points
    assert _support.utf16_key("\U00010000") < _support.utf16_key("\uffff")


def test_homogeneous_means_equal_subscriptions():
    a, b = uuid.uuid4(), uuid.uuid4()
    assert _support.is_homogeneous([])
    assert _support.is_homogeneous([frozenset({a, b}), frozenset({b, a})])
    assert not _support.is_homogeneous([frozenset({a}), frozenset({a, b})])
