"""One of two log dirs fills up: its partitions go offline, the rest keep serving.

The second log dir is a 4 MiB tmpfs, so the segment write that overflows it
fails with ENOSPC from the kernel -- a real full disk.  As in Kafka, that dir
goes offline and the broker keeps running on the other: produce to a
partition there answers KAFKA_STORAGE_ERROR, Metadata shows it without a
leader and with this broker in offline_replicas, DescribeLogDirs reports the
dir with KAFKA_STORAGE_ERROR, and partitions in the healthy dir take writes.
Once the operator makes room and restarts the broker, recovery truncates the
torn tail, every acknowledged record of the full dir is served, and it takes
writes again.
Mounting tmpfs needs root (as CI runs); elsewhere the test is skipped.
"""
from __future__ import annotations

import subprocess

from kafka import KafkaConsumer, KafkaProducer, TopicPartition
from kafka.admin import KafkaAdminClient, NewTopic
from kafka.errors import KafkaStorageError

from tests.support.broker_process import BrokerProcess
from tests.support.log_dirs import small_dir  # noqa: F401 (fixtures)
from tests.support.wire import WireClient, partition_metadata

KAFKA_STORAGE_ERROR, LEADER_NOT_AVAILABLE = 56, 5


def _fill(bootstrap: str, topic: str, partition: int) -> tuple[list[tuple[int, bytes]], Exception]:
    producer = KafkaProducer(bootstrap_servers=bootstrap, acks=1, retries=0, linger_ms=0)
    acked = []
    try:
        for i in range(10_000):
            value = b"%06d" % i + b"x" * 994
            try:
                acked.append((producer.send(topic, value=value, partition=partition).get(10).offset,
                              value))
            except Exception as err:   # the write that overflowed the dir
                return acked, err
        raise AssertionError("10 MB went into a 4 MiB dir without an error")
    finally:
        producer.close()


def _log_dir_errors(bootstrap: str) -> dict[str, int]:
    client = WireClient(bootstrap)
    try:
        response = client.request(35, 4, topics=None)
    finally:
        client.close()
    return {r.log_dir: r.error_code for r in response.results}


def test_full_log_dir_goes_offline_and_the_other_keeps_serving(tmp_path, small_dir):
    big = tmp_path / "big"
    broker = BrokerProcess(big, overrides={
        "log.dirs": f"{big},{small_dir}",
        # no index entries: an mmap'd index page on a full tmpfs would be SIGBUS, not ENOSPC
        "log.index.interval.bytes": str(1 << 30)}).start()
    try:
        admin = KafkaAdminClient(bootstrap_servers=broker.bootstrap)
        admin.create_topics([NewTopic("split", 2, 1)])
        admin.close()
        on_small = [p for p in (0, 1) if (small_dir / f"split-{p}").is_dir()]
        assert len(on_small) == 1, list(small_dir.iterdir())
        full, healthy = on_small[0], 1 - on_small[0]

        acked, error = _fill(broker.bootstrap, "split", full)
        assert isinstance(error, KafkaStorageError), repr(error)
        assert len(acked) > 1000
        assert broker.proc.poll() is None, broker.output()

        metadata = partition_metadata(broker.bootstrap, "split")
        assert metadata[full] == (LEADER_NOT_AVAILABLE, -1, [0])
        assert metadata[healthy] == (0, 0, [])
        assert _log_dir_errors(broker.bootstrap) == {str(big): 0, str(small_dir): KAFKA_STORAGE_ERROR}
        producer = KafkaProducer(bootstrap_servers=broker.bootstrap, acks="all")
        assert producer.send("split", value=b"fine", partition=healthy).get(30).offset == 0
        producer.close()

        assert broker.stop() == 0
        assert (big / ".kafka_cleanshutdown").exists()
        assert not (small_dir / ".kafka_cleanshutdown").exists()   # left to recovery
        # The operator makes room, then restarts.
        subprocess.run(["mount", "-o", "remount,size=64m", str(small_dir)], check=True)
        broker.start()
        consumer = KafkaConsumer(bootstrap_servers=broker.bootstrap, enable_auto_commit=False,
                                 consumer_timeout_ms=5000)
        tp = TopicPartition("split", full)
        consumer.assign([tp])
        consumer.seek_to_beginning(tp)
        stored = [(r.offset, r.value) for r in consumer]
        consumer.close()
        assert stored == acked
        producer = KafkaProducer(bootstrap_servers=broker.bootstrap, acks="all")
        assert producer.send("split", value=b"again", partition=full).get(30).offset == len(acked)
        producer.close()
    finally:
        broker.kill()
