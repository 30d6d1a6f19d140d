"""kafkapy.jvm: Java/Scala hash-table semantics that Kafka's printed orders depend on."""

from __future__ import annotations

from kafkapy import jvm


def test_scala_mutable_table_grows_when_an_add_reaches_three_quarters():
    # Scala 2.13 mutable.HashSet.addElem: grow before the add when size + 1 >= 0.75 * length.
    assert [jvm.scala_mutable_table_length(n) for n in (0, 11, 12, 23, 24, 47, 48)] == \
        [16, 16, 32, 32, 64, 64, 128]


def test_scala_mutable_order_defaults_to_the_grown_table():
    items = [f"topic-{i}" for i in range(30)]
    assert jvm.scala_mutable_hash_order(items, jvm.string_hash) == \
        jvm.scala_mutable_hash_order(items, jvm.string_hash, 64)
    assert jvm.scala_mutable_hash_order(items, jvm.string_hash) != \
        jvm.scala_mutable_hash_order(items, jvm.string_hash, 32)
