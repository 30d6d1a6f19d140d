"""The order of a commit's offset records matches what a real Kafka 3.9 wrote.

Each expected order was read with kafka-dump-log.sh from the ``__consumer_offsets`` of a
Kafka 3.9.0 broker after the same OffsetCommit / TxnOffsetCommit.
"""
from __future__ import annotations

import pytest

from kafkapy.coordinator.group.kafka_order import commit_order


def _parts(topic: str, n: int) -> list[tuple[str, int]]:
    return [(topic, i) for i in range(n)]


@pytest.mark.parametrize("asked,written", [
    (_parts("conf-multi", 3), [2, 1, 0]),                               # up to 4: Map1..Map4
    (_parts("ord12", 6), [1, 0, 3, 4, 5, 2]),                           # past 4: CHAMP order
    (_parts("ord12", 7), [1, 0, 3, 6, 4, 5, 2]),                        # a TxnOffsetCommit
    (_parts("ord12", 12), [1, 9, 8, 0, 3, 7, 6, 11, 4, 10, 5, 2]),
])
def test_one_topic(asked, written):
    assert [p for _, p in commit_order(asked)] == written


def test_two_topics():
    asked = _parts("ordb", 4) + _parts("ord12", 2)
    assert commit_order(asked) == [("ord12", 1), ("ordb", 1), ("ordb", 2), ("ordb", 0),
                                   ("ordb", 3), ("ord12", 0)]
