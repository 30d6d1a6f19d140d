"""Coordinator partition choice (Java's String.hashCode, Utils.abs) and record bytes."""
from __future__ import annotations

import struct

from kafkapy.coordinator.group import records as R
from kafkapy.coordinator.group.hashing import java_string_hash, partition_for
from kafkapy.coordinator.group.offsets import OffsetAndMetadata


def test_java_string_hash_vectors():
    assert java_string_hash("") == 0
    assert java_string_hash("a") == 97
    assert java_string_hash("console-consumer-49366") == 161434669
    assert java_string_hash("polygenelubricants") == -(2**31)   # Integer.MIN_VALUE
    assert java_string_hash("\U0001F600") == 0xD83D * 31 + 0xDE00  # two UTF-16 units


def test_partition_for():
    assert partition_for("console-consumer-49366", 50) == 19     # Kafka's partitionFor
    assert partition_for("polygenelubricants", 50) == 0          # Utils.abs(MIN_VALUE) == 0
    assert partition_for("hello", 50) == abs(java_string_hash("hello")) % 50


def test_offset_commit_bytes_are_kafkas():
    key = R.offset_key("g", "t", 3)
    assert key == struct.pack(">hh1sh1si", 1, 1, b"g", 1, b"t", 3)
    value = R.offset_value(OffsetAndMetadata(5, 7, "m", 1000))
    assert value == struct.pack(">hqih1sq", 3, 5, 7, 1, b"m", 1000)
    with_expiry = R.offset_value(OffsetAndMetadata(5, 7, "", 1000, 2000))
    assert with_expiry == struct.pack(">hqhqq", 1, 5, 0, 1000, 2000)


def test_group_metadata_bytes_are_kafkas():
    assert R.group_key("g") == struct.pack(">hh1s", 2, 1, b"g")
    stored = R.StoredGroup("consumer", 2, "range", "m", 9, [
        R.StoredMember("m", None, "c", "/h", 300, 10, b"S", b"A")])
    expected = (struct.pack(">hh8si", 3, 8, b"consumer", 2) + struct.pack(">h5s", 5, b"range")
                + struct.pack(">h1sq", 1, b"m", 9) + struct.pack(">i", 1)
                + struct.pack(">h1sh", 1, b"m", -1) + struct.pack(">h1sh2sii", 1, b"c", 2, b"/h",
                                                                 300, 10)
                + struct.pack(">i1si1s", 1, b"S", 1, b"A"))
    assert R.group_value(stored) == expected
    assert R.decode_group_value(expected) == stored
