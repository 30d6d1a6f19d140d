"""The streaming job's input topics exist before Spark's Kafka source looks them up.

Spark 4's Kafka source finds the partitions of ``subscribe``/``assign`` topics
with Admin.describeTopics, which fails with UnknownTopicOrPartition on a
topic that does not exist yet, so a job started before any event was sent (the
README's order) would die. A Kafka consumer in the same place asks for the
topic's metadata with auto-creation allowed and the broker creates it when
``auto.create.topics.enable`` is true (with ``num.partitions`` partitions);
``ensure_input_topics`` does the same through kafka-python's producer metadata
request and waits until the topic has partitions. A broker that does not
auto-create leaves the topic missing: that is reported in one line.

``subscribePattern`` needs nothing: Spark's pattern source matches what exists,
and picks up matching topics created later. Only the bootstrap servers are used
here: ``kafka_options`` (security settings and the like) are Spark client
settings and are not translated to kafka-python's.
"""
from __future__ import annotations

import json

from kafka import KafkaProducer
from kafka.errors import KafkaError, KafkaTimeoutError

from kafkapy.pipeline.settings import PipelineSettings, SettingsError, assign_json

WAIT_MS = 30_000


class TopicMissingError(SettingsError):
    """An input topic does not exist and the broker did not create it."""


def input_topics(s: PipelineSettings) -> list[str]:
    """The topics ``subscribe`` or ``assign`` names (none for a pattern)."""
    if s.subscribe:
        return [t.strip() for t in s.subscribe.split(",") if t.strip()]
    if s.assign:
        return sorted(json.loads(assign_json(s.assign)))
    return []


def ensure_input_topics(s: PipelineSettings, wait_ms: int = WAIT_MS) -> dict[str, int]:
    """Partition counts of the input topics, asking the broker to auto-create missing ones."""
    names = input_topics(s)
    if not names:
        return {}
    try:
        producer = KafkaProducer(bootstrap_servers=s.bootstrap, max_block_ms=wait_ms,
                                 allow_auto_create_topics=True,
                                 client_id="kafkapy-pipeline-topics")
    except KafkaError as err:
        raise TopicMissingError(f"cannot reach {s.bootstrap} to look up the input topics: "
                                f"{err}") from None
    try:
        return {name: _partitions(producer, name, s.bootstrap, wait_ms) for name in names}
    finally:
        producer.close(timeout=5)


def _partitions(producer, name: str, bootstrap: str, wait_ms: int) -> int:
    try:
        return len(producer.partitions_for(name))
    except KafkaTimeoutError:
        raise TopicMissingError(
            f"input topic {name!r} does not exist on {bootstrap} and was not created within "
            f"{wait_ms // 1000} s (is auto.create.topics.enable false? create it with "
            f"kafkapy-topics --create --topic {name})") from None
