"""How the controller's log lines print brokers, topics and partitions, as Kafka's do:
``1,2,3`` (broker ids in the order given), ``a,b`` (topic names, sorted), ``t-0``
(a partition) and ``t-0,t-1`` (partitions in the order given)."""
from __future__ import annotations

from typing import Iterable

from kafkapy.protocol.topic_partition import TopicPartition


def ids_text(ids: Iterable[int]) -> str:
    return ",".join(str(i) for i in ids)


def names_text(names: Iterable[str]) -> str:
    return ",".join(sorted(names))


def tp_text(tp: TopicPartition) -> str:
    topic, partition = tp
    return f"{topic}-{partition}"


def tps_text(partitions: Iterable[TopicPartition]) -> str:
    return ",".join(tp_text(tp) for tp in partitions)
