"""Poisoned batches are refused and never stored (Kafka's LogValidator).

Each batch has a valid CRC but contents a reader cannot use: records that do not parse, a
count beyond the offsets, a truncated or mislabelled compressed payload, keyless records
on a compacted topic.  Sent with raw Produce frames, each gets the code Kafka 3.9 answers
(tests/support/batchcheck_craft.py, checked against a real Kafka in tests/conformance) and
nothing is appended; afterwards kafka-python and confluent-kafka consumers read each
partition to its end and find only the good records.
"""
from __future__ import annotations

import pytest
from confluent_kafka import Consumer, TopicPartition as CTopicPartition
from kafka import KafkaAdminClient, KafkaConsumer, KafkaProducer, TopicPartition
from kafka.admin import NewTopic

from kafkapy.protocol.messages import REQUESTS
from tests.support.broker_process import BrokerProcess
from tests.support.wire import WireClient
from tests.support.batchcheck_craft import POISON

# These three are readable batches refused for their timestamps under topic settings of
# their own; they cannot poison a reader and are covered by the unit tests.
_READABLE = {"log-append-time-no-timestamp", "timestamp-in-future", "timestamp-too-old"}
CASES = sorted(set(POISON) - _READABLE)
GOOD = [b"good-0", b"good-1", b"good-2"]


@pytest.fixture(scope="module")
def broker(tmp_path_factory):
    b = BrokerProcess(tmp_path_factory.mktemp("poison") / "logs").start()
    admin = KafkaAdminClient(bootstrap_servers=b.bootstrap)
    admin.create_topics([NewTopic("poison", 1, 1),
                         NewTopic("poison-compact", 1, 1,
                                  topic_configs={"cleanup.policy": "compact"})])
    admin.close()
    yield b
    b.stop()


def _produce_raw(bootstrap: str, topic: str, batch: bytes) -> int:
    cls = REQUESTS[0]
    data = cls.TopicProduceData(version=9, name=topic, partition_data=[
        cls.TopicProduceData.PartitionProduceData(version=9, index=0, records=batch)])
    client = WireClient(bootstrap)
    try:
        response = client.request(0, 9, transactional_id=None, acks=1, timeout_ms=5000,
                                  topic_data=[data])
    finally:
        client.close()
    return response.responses[0].partition_responses[0].error_code


def _end_offset(bootstrap: str, topic: str) -> int:
    consumer = KafkaConsumer(bootstrap_servers=bootstrap)
    try:
        tp = TopicPartition(topic, 0)
        return consumer.end_offsets([tp])[tp]
    finally:
        consumer.close()


def test_every_poison_is_refused_and_readers_read_to_the_end(broker):
    for name in CASES:
        batch, compacted, code = POISON[name]
        topic = "poison-compact" if compacted else "poison"
        assert _produce_raw(broker.bootstrap, topic, batch) == code, name
    for topic in ("poison", "poison-compact"):
        assert _end_offset(broker.bootstrap, topic) == 0, topic    # nothing was stored
        producer = KafkaProducer(bootstrap_servers=broker.bootstrap)
        for i, value in enumerate(GOOD):
            producer.send(topic, key=b"k%d" % i, value=value, partition=0).get(timeout=30)
        producer.close()
        assert _read_kafka_python(broker.bootstrap, topic) == GOOD
        assert _read_confluent(broker.bootstrap, topic) == GOOD
    assert "Traceback" not in broker.output()


def _read_kafka_python(bootstrap: str, topic: str) -> list[bytes]:
    consumer = KafkaConsumer(bootstrap_servers=bootstrap, auto_offset_reset="earliest",
                             consumer_timeout_ms=5000)
    consumer.assign([TopicPartition(topic, 0)])
    try:
        return [record.value for record in consumer]
    finally:
        consumer.close()


def _read_confluent(bootstrap: str, topic: str) -> list[bytes]:
    consumer = Consumer({"bootstrap.servers": bootstrap, "group.id": "poison-reader",
                         "enable.partition.eof": True, "auto.offset.reset": "earliest"})
    consumer.assign([CTopicPartition(topic, 0, 0)])
    values = []
    try:
        for _ in range(100):        # bounded: eof arrives after the good records
            message = consumer.poll(1.0)
            if message is None:
                continue
            assert message.error() is None or message.error().code() == -191, message.error()
            if message.error():
                return values
            values.append(message.value())
        raise AssertionError(f"no end of partition after {values}")
    finally:
        consumer.close()
