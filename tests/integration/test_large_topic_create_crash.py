"""Creating a many-partition topic batches its writes (one embedded-store multi per
batch, leader-epoch-checkpoint files written behind the LeaderAndIsr), and a kill -9 right
after the create loses nothing: after a restart every partition has its leader at epoch 0,
its state znode, its records, and a leader-epoch-checkpoint of ``0 0``; a clean stop right
after a create leaves every checkpoint written."""
from __future__ import annotations

import json
import time

from kafka import KafkaConsumer, KafkaProducer, TopicPartition

from kafkapy.log.checkpoint import read_leader_epoch_checkpoint
from tests.support.broker_process import BrokerProcess
from tests.support.request_fields import fields
from tests.support.wire import WireClient

TOPIC = "many"
PARTITIONS = 400
WITH_DATA = 8           # partitions that get a record before the kill
WAIT_S = 60.0


def _create(bootstrap: str) -> None:
    client = WireClient(bootstrap, timeout=WAIT_S)
    try:
        created = client.request(19, 7, **fields(19, topics=[dict(
            name=TOPIC, num_partitions=PARTITIONS, replication_factor=1, assignments=[],
            configs=[])], timeout_ms=int(WAIT_S * 1000), validate_only=False))
    finally:
        client.close()
    assert created.topics[0].error_code == 0, created
    assert created.topics[0].num_partitions == PARTITIONS


def _leaders(bootstrap: str) -> dict[int, tuple[int, int]]:
    """partition -> (leader, leader epoch) from Metadata v9."""
    client = WireClient(bootstrap, timeout=WAIT_S)
    try:
        md = client.request(3, 9, **fields(3, topics=[dict(name=TOPIC)],
                                           allow_auto_topic_creation=False,
                                           include_cluster_authorized_operations=False,
                                           include_topic_authorized_operations=False))
    finally:
        client.close()
    (topic,) = md.topics
    return {p.partition_index: (p.leader_id, p.leader_epoch) for p in topic.partitions
            if p.error_code == 0}


def _wait(condition, what: str):
    deadline = time.monotonic() + WAIT_S
    while True:
        got = condition()
        if got:
            return got
        if time.monotonic() > deadline:
            raise AssertionError(f"not within {WAIT_S}s: {what}")
        time.sleep(0.2)


def _epoch_files(log_dir) -> dict[int, list]:
    out = {}
    for p in range(PARTITIONS):
        path = log_dir / f"{TOPIC}-{p}" / "leader-epoch-checkpoint"
        out[p] = read_leader_epoch_checkpoint(str(path)) if path.exists() else None
    return out


def _all_leading(bootstrap):
    leaders = _leaders(bootstrap)
    return leaders if len(leaders) == PARTITIONS else None


def test_kill_9_after_a_large_create_keeps_states_epochs_and_records(tmp_path):
    broker = BrokerProcess(tmp_path / "logs").start()
    try:
        _create(broker.bootstrap)
        assert set(_leaders(broker.bootstrap).values()) == {(0, 0)}
        producer = KafkaProducer(bootstrap_servers=broker.bootstrap, acks=1, linger_ms=0)
        for p in range(WITH_DATA):
            producer.send(TOPIC, value=b"v%d" % p, partition=p).get(timeout=WAIT_S)
        producer.close()
        broker.kill()

        # The state znodes were persisted by the create's multis.
        store = json.loads((tmp_path / "logs" / "kafkapy-metadata.json").read_text())
        states = [k for k in store["nodes"] if k.startswith(f"/brokers/topics/{TOPIC}/")
                  and k.endswith("/state")]
        assert len(states) == PARTITIONS

        broker.start()
        leaders = _wait(lambda: _all_leading(broker.bootstrap), "all leaders after restart")
        assert set(leaders.values()) == {(0, 0)}
        files = _wait(lambda: (lambda f: f if all(v == [(0, 0)] for v in f.values()) else None)(
            _epoch_files(tmp_path / "logs")), "every leader-epoch-checkpoint is 0 0")
        assert len(files) == PARTITIONS
        consumer = KafkaConsumer(bootstrap_servers=broker.bootstrap, enable_auto_commit=False,
                                 consumer_timeout_ms=5000)
        tps = [TopicPartition(TOPIC, p) for p in range(WITH_DATA)]
        consumer.assign(tps)
        consumer.seek_to_beginning(*tps)
        got = {(r.partition, r.value) for r in consumer}
        consumer.close()
        assert got == {(p, b"v%d" % p) for p in range(WITH_DATA)}
    finally:
        broker.kill()


def test_clean_stop_right_after_a_large_create_writes_every_epoch_file(tmp_path):
    broker = BrokerProcess(tmp_path / "logs").start()
    try:
        _create(broker.bootstrap)
        assert broker.stop() == 0
        files = _epoch_files(tmp_path / "logs")
        assert all(v == [(0, 0)] for v in files.values()), \
            {p: v for p, v in files.items() if v != [(0, 0)]}
    finally:
        broker.kill()
