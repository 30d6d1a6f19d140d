"""confluent-kafka (librdkafka) fetching outside the log: the Fetch error must reach it.

An errored Fetch partition must carry empty records, as Kafka's does.  With null
records librdkafka rejects the whole response ("Protocol parse failure for Fetch ...
invalid MessageSetSize -1"), never sees OFFSET_OUT_OF_RANGE, never applies
``auto.offset.reset`` and retries for ever.

- past the end: assigned at 105 of a 100-record partition with
  ``auto.offset.reset=latest`` and ``enable.partition.eof=true``, the consumer must
  report end-of-partition at 100, with no error and no protocol-error log line;
- before the log start (after DeleteRecords) with ``auto.offset.reset=earliest``,
  the consumer must resume at the new log start.

Loops are bounded by a number of polls, not timed: the old broker never gets there.
"""
from __future__ import annotations

import logging

import pytest
from confluent_kafka import Consumer, KafkaError, Producer, TopicPartition
from confluent_kafka.admin import AdminClient, NewTopic

from tests.support import client_common as common

pytestmark = pytest.mark.timeout(180)

MAX_POLLS = 60
RECORDS = 100


class _Lines(logging.Handler):
    """Every librdkafka log line, to look for protocol errors."""

    def __init__(self) -> None:
        super().__init__(logging.DEBUG)
        self.lines: list[str] = []

    def emit(self, record: logging.LogRecord) -> None:
        self.lines.append(record.getMessage())


def _logger(name: str) -> tuple[logging.Logger, _Lines]:
    lines = _Lines()
    logger = logging.getLogger(f"librdkafka.{name}")
    logger.handlers[:] = [lines]
    logger.propagate = False
    logger.setLevel(logging.DEBUG)
    return logger, lines


def _topic_with_records(bootstrap: str, name: str) -> str:
    topic = common.topic_name("confluent-fetch-errors", name)
    admin = AdminClient({"bootstrap.servers": bootstrap})
    futures = admin.create_topics([NewTopic(topic, num_partitions=1, replication_factor=1)])
    futures[topic].result(timeout=60)
    producer = Producer({"bootstrap.servers": bootstrap, "linger.ms": 5})
    for i in range(RECORDS):
        producer.produce(topic, key=b"k%d" % i, value=b"v%d" % i)
    assert producer.flush(60) == 0
    return topic


def _consumer(bootstrap: str, reset: str, logger: logging.Logger, errors: list) -> Consumer:
    return Consumer({
        "bootstrap.servers": bootstrap,
        "group.id": "fetch-errors",
        "enable.auto.commit": False,
        "auto.offset.reset": reset,
        "enable.partition.eof": True,
        "fetch.wait.max.ms": 100,
        "logger": logger,
        "error_cb": errors.append,
    })


def _protocol_errors(lines: list[str]) -> list[str]:
    return [line for line in lines if "parse" in line.lower() or "MessageSetSize" in line]


def test_past_the_end_resets_to_latest_and_reports_eof(broker):
    topic = _topic_with_records(broker.bootstrap, "past-end")
    logger, lines = _logger("past-end")
    errors: list = []
    consumer = _consumer(broker.bootstrap, "latest", logger, errors)
    consumer.assign([TopicPartition(topic, 0, RECORDS + 5)])
    eof = None
    try:
        for _ in range(MAX_POLLS):
            msg = consumer.poll(1.0)
            if msg is None:
                continue
            assert msg.error() is not None, f"unexpected record at {msg.offset()}"
            assert msg.error().code() == KafkaError._PARTITION_EOF, msg.error()
            eof = (msg.partition(), msg.offset())
            break
    finally:
        consumer.close()
    assert eof == (0, RECORDS), f"no end-of-partition at {RECORDS} in {MAX_POLLS} polls"
    assert errors == []
    assert _protocol_errors(lines.lines) == []


def test_before_log_start_resets_to_earliest(broker):
    topic = _topic_with_records(broker.bootstrap, "before-start")
    admin = AdminClient({"bootstrap.servers": broker.bootstrap})
    futures = admin.delete_records([TopicPartition(topic, 0, 50)])
    assert futures[TopicPartition(topic, 0, 50)].result(timeout=60).low_watermark == 50
    logger, lines = _logger("before-start")
    errors: list = []
    consumer = _consumer(broker.bootstrap, "earliest", logger, errors)
    consumer.assign([TopicPartition(topic, 0, 10)])
    offsets: list[int] = []
    try:
        for _ in range(MAX_POLLS):
            msg = consumer.poll(1.0)
            if msg is None:
                continue
            if msg.error() is not None:
                assert msg.error().code() == KafkaError._PARTITION_EOF, msg.error()
                break
            offsets.append(msg.offset())
    finally:
        consumer.close()
    assert offsets == list(range(50, RECORDS))
    assert errors == []
    assert _protocol_errors(lines.lines) == []
