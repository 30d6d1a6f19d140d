"""A log dir whose writes fail (full disk) halts a single-dir broker without losing data.

The broker runs under RLIMIT_FSIZE, so the segment write that crosses the
limit fails in the kernel (EFBIG, after a short write) exactly where a full
disk would fail with ENOSPC.  Kafka's answer, which kafkapy follows: the log
dir goes offline, and with no live log dir left the broker halts (exit 1, no
clean-shutdown marker).  On restart, recovery truncates the torn tail; every
acknowledged record is there, offsets run without a gap, and the broker
takes writes again.  (Several dirs, one failing: tests/unit/log/test_manager.py.)
"""
from __future__ import annotations

import pytest
from kafka import KafkaConsumer, KafkaProducer, TopicPartition
from kafka.admin import KafkaAdminClient, NewTopic

from tests.support.broker_process import BrokerProcess

LIMIT = 12 << 20          # above the 10 MiB preallocated indexes, below the segment size
VALUE = 1000


def _produce_until_broken(bootstrap: str, topic: str) -> list[tuple[int, bytes]]:
    acked: list[tuple[int, bytes]] = []
    producer = KafkaProducer(bootstrap_servers=bootstrap, acks=1, retries=0, linger_ms=5,
                             request_timeout_ms=5000, max_block_ms=5000)
    try:
        for i in range(4 * LIMIT // VALUE):
            value = b"%08d" % i + b"v" * (VALUE - 8)
            future = producer.send(topic, value=value)
            future.add_callback(lambda md, value=value: acked.append((md.offset, value)))
            if i % 500 == 499:
                producer.flush(10)
                if future.failed():
                    break
    except Exception:   # the broker halted under the producer: unsent records were never acked
        pass
    finally:
        try:
            producer.close(timeout=2)
        except Exception:
            pass
    return acked


# kafka-python's KafkaProducer.__del__ retries the flush that close() gave up on
# once the broker halted; that second timeout is expected here, not a fault.
@pytest.mark.filterwarnings("ignore::pytest.PytestUnraisableExceptionWarning")
def test_full_disk_halts_the_broker_and_loses_no_acknowledged_record(tmp_path):
    broker = BrokerProcess(tmp_path / "logs", file_size_limit=LIMIT,
                           overrides={"log.segment.bytes": str(64 << 20)}).start()
    try:
        admin = KafkaAdminClient(bootstrap_servers=broker.bootstrap)
        admin.create_topics([NewTopic("disk", 1, 1)])
        admin.close()
        acked = _produce_until_broken(broker.bootstrap, "disk")
        assert broker.proc.wait(30) == 1, broker.output()
        assert "all log dirs have failed" in broker.output()
        assert len(acked) > LIMIT // VALUE // 2, f"only {len(acked)} records acknowledged"
        assert not (tmp_path / "logs" / ".kafka_cleanshutdown").exists()

        broker.file_size_limit = None
        broker.start()
        consumer = KafkaConsumer(bootstrap_servers=broker.bootstrap, enable_auto_commit=False,
                                 consumer_timeout_ms=5000)
        tp = TopicPartition("disk", 0)
        consumer.assign([tp])
        consumer.seek_to_beginning(tp)
        stored = [(r.offset, r.value) for r in consumer]
        consumer.close()
        assert [o for o, _ in stored] == list(range(len(stored)))
        missing = set(acked) - set(stored)
        assert not missing, f"{len(missing)} acknowledged records lost, e.g. {sorted(missing)[:3]}"

        producer = KafkaProducer(bootstrap_servers=broker.bootstrap, acks="all")
        assert producer.send("disk", value=b"after").get(30).offset == len(stored)
        producer.close()
    finally:
        broker.kill()
