"""confluent-kafka (librdkafka): a compacted topic refuses records without a key.

Kafka's LogValidator fails the whole batch with INVALID_RECORD and names each
keyless record in ``record_errors``; librdkafka then fails those records with
INVALID_RECORD and the keyed records of the same batch with
INVALID_DIFFERENT_RECORD.  Nothing of the batch is stored, so the partition's
high watermark stays 0; keyed records sent afterwards are stored from offset 0.

Set KAFKAPY_E2E_BOOTSTRAP to run it against another broker (e.g. Kafka 3.9).
"""
from __future__ import annotations

import os

import pytest
from confluent_kafka import KafkaError, Producer, TopicPartition
from confluent_kafka.admin import AdminClient, NewTopic

from tests.support import client_common as common

pytestmark = pytest.mark.timeout(120)


def _topic(name: str) -> str:
    suffix = f"-{os.getpid()}" if os.environ.get("KAFKAPY_E2E_BOOTSTRAP") else ""
    return name + suffix


def _create_compacted(bootstrap: str, topic: str) -> None:
    admin = AdminClient({"bootstrap.servers": bootstrap})
    futures = admin.create_topics([NewTopic(topic, num_partitions=1, replication_factor=1,
                                            config={"cleanup.policy": "compact"})],
                                  operation_timeout=30, request_timeout=60)
    futures[topic].result(timeout=60)


def _produce_one_batch(bootstrap: str, topic: str, keys: list[bytes | None]) -> list:
    """Send the records in one batch (linger, then a single flush); the delivery errors."""
    producer = Producer({"bootstrap.servers": bootstrap, "linger.ms": 1000,
                         "batch.num.messages": len(keys), "enable.idempotence": False,
                         "retries": 0, "message.timeout.ms": 30000})
    errors: list = [None] * len(keys)
    delivered = []

    def report(index):
        def on_delivery(err, msg):
            errors[index] = err
            delivered.append(index)
        return on_delivery

    for i, key in enumerate(keys):
        producer.produce(topic, key=key, value=b"value-%d" % i, partition=0,
                         on_delivery=report(i))
    assert producer.flush(60) == 0, "undelivered records left after flush"
    assert sorted(delivered) == list(range(len(keys)))
    return errors


def _high_watermark(bootstrap: str, topic: str) -> int:
    from confluent_kafka import Consumer
    consumer = Consumer({"bootstrap.servers": bootstrap, "group.id": "keyless-check",
                         "enable.auto.commit": False})
    try:
        low, high = consumer.get_watermark_offsets(TopicPartition(topic, 0), timeout=30)
        return high
    finally:
        consumer.close()


def test_keyless_records_fail_with_invalid_record_and_nothing_is_stored(broker):
    topic = _topic("compacted-keyless")
    _create_compacted(broker.bootstrap, topic)
    keys = [b"k0", None, b"k2", None, b"k4"]
    errors = _produce_one_batch(broker.bootstrap, topic, keys)
    codes = [e.code() if e is not None else None for e in errors]
    assert codes == [KafkaError._INVALID_DIFFERENT_RECORD, KafkaError.INVALID_RECORD,
                     KafkaError._INVALID_DIFFERENT_RECORD, KafkaError.INVALID_RECORD,
                     KafkaError._INVALID_DIFFERENT_RECORD], codes
    assert _high_watermark(broker.bootstrap, topic) == 0, "a refused batch stored records"

    assert _produce_one_batch(broker.bootstrap, topic, [b"a", b"b"]) == [None, None]
    assert _high_watermark(broker.bootstrap, topic) == 2
    assert common.read_values(broker.bootstrap, topic, 2) == [b"value-0", b"value-1"]
