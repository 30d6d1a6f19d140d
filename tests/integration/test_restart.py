"""Data survives restarts: a graceful SIGTERM and a kill -9.

kafka-python produces with acks=all, the broker is stopped (gracefully or
with SIGKILL) and started again on the same log directory, and every
acknowledged record is read back in order with no gaps or duplicates.
"""
from __future__ import annotations

import pytest
from kafka import KafkaConsumer, KafkaProducer, TopicPartition
from kafka.admin import KafkaAdminClient, NewTopic

RECORDS = 3000


def _produce(bootstrap, topic, start, count):
    producer = KafkaProducer(bootstrap_servers=bootstrap, acks="all", linger_ms=2,
                             batch_size=16384)
    futures = [producer.send(topic, key=b"%06d" % i, value=b"value-%06d" % i)
               for i in range(start, start + count)]
    producer.flush()
    offsets = [f.get(timeout=30).offset for f in futures]
    producer.close()
    return offsets


def _read_all(bootstrap, topic):
    consumer = KafkaConsumer(bootstrap_servers=bootstrap, enable_auto_commit=False,
                             consumer_timeout_ms=3000)
    tp = TopicPartition(topic, 0)
    consumer.assign([tp])
    consumer.seek_to_beginning(tp)
    records = list(consumer)
    consumer.close()
    return records


def _create(bootstrap, topic):
    admin = KafkaAdminClient(bootstrap_servers=bootstrap)
    admin.create_topics([NewTopic(topic, 1, 1, topic_configs={"segment.bytes": "65536"})])
    admin.close()


@pytest.mark.parametrize("hard", [False, True], ids=["sigterm", "kill-9"])
def test_records_survive_restart(fresh_broker, hard):
    topic = "restart-hard" if hard else "restart-clean"
    _create(fresh_broker.bootstrap, topic)
    offsets = _produce(fresh_broker.bootstrap, topic, 0, RECORDS)
    assert offsets == list(range(RECORDS))
    if hard:
        fresh_broker.kill()
    else:
        assert fresh_broker.stop() == 0
        marker = fresh_broker.log_dir / ".kafka_cleanshutdown"
        assert marker.exists(), "a graceful stop leaves the clean-shutdown marker"
    fresh_broker.start()
    more = _produce(fresh_broker.bootstrap, topic, RECORDS, 500)
    assert more == list(range(RECORDS, RECORDS + 500))
    records = _read_all(fresh_broker.bootstrap, topic)
    assert [r.offset for r in records] == list(range(RECORDS + 500))
    assert [r.value for r in records] == [b"value-%06d" % i for i in range(RECORDS + 500)]
    segments = sorted((fresh_broker.log_dir / f"{topic}-0").glob("*.log"))
    assert len(segments) > 1, "segment.bytes=65536 rolls several segments"
