"""Garbage in a storage file takes its log dir offline with a line naming the file, as
Kafka's LogManager does: with no dir left the broker stops with one line; with another
dir it starts and serves what that dir holds.  A log dir is never adopted on the strength
of a garbage meta.properties."""
from __future__ import annotations

import os

import pytest
from kafka import KafkaConsumer, KafkaProducer, TopicPartition

from tests.support.broker_process import BrokerProcess

GARBAGE = bytes(range(0x80, 0x100)) + os.urandom(16)


def _produce(bootstrap: str, topic: str, partition: int = 0) -> None:
    producer = KafkaProducer(bootstrap_servers=bootstrap)
    producer.send(topic, b"kept", partition=partition).get(timeout=30)
    producer.close()


def _start_fails(broker: BrokerProcess) -> str:
    with pytest.raises(RuntimeError) as failed:
        broker.start(timeout=30)
    return str(failed.value)


@pytest.mark.parametrize("victim", ["t-0/leader-epoch-checkpoint", "t-0/partition.metadata",
                                    "meta.properties"])
def test_garbage_in_the_only_dir_stops_start_up_naming_the_file(tmp_path, victim):
    broker = BrokerProcess(tmp_path / "logs").start()
    _produce(broker.bootstrap, "t")
    broker.stop()
    path = tmp_path / "logs" / victim
    path.write_bytes(GARBAGE)
    output = _start_fails(broker)
    assert "Traceback" not in output, output
    assert str(path) in output, output
    assert path.read_bytes() == GARBAGE         # nothing was "repaired" over it


def test_garbage_in_one_dir_of_two_leaves_the_other_serving(tmp_path):
    dirs = [tmp_path / "d1", tmp_path / "d2"]
    broker = BrokerProcess(dirs[0], overrides={"log.dirs": ",".join(map(str, dirs)),
                                               "num.partitions": "2"}).start()
    _produce(broker.bootstrap, "t", 0)
    _produce(broker.bootstrap, "t", 1)
    broker.stop()
    placed = {d: [p for p in os.listdir(d) if p.startswith("t-")] for d in dirs}
    assert all(len(parts) == 1 for parts in placed.values()), placed
    (dirs[1] / placed[dirs[1]][0] / "leader-epoch-checkpoint").write_bytes(GARBAGE)
    broker.start()
    try:
        assert "Error while loading log dir" in broker.output()
        healthy = int(placed[dirs[0]][0].split("-")[1])
        consumer = KafkaConsumer(bootstrap_servers=broker.bootstrap, auto_offset_reset="earliest",
                                 consumer_timeout_ms=10000)
        consumer.assign([TopicPartition("t", healthy)])
        assert [r.value for r in consumer] == [b"kept"]
        consumer.close()
    finally:
        broker.stop()
    assert "Traceback" not in broker.output()
