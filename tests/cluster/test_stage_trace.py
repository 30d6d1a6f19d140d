"""The replication stage trace on three real broker processes: with KAFKAPY_STAGE_TRACE set,
every acks=all batch to a replication-factor-3 partition is traced along its whole path
(leader append, the reads for both followers, their appends and next fetches, the high
watermark, the answer), and ``bench/stage_breakdown.py`` joins the brokers' files into
one row per batch whose consecutive stages add up to the batch's total."""
from __future__ import annotations

import time

import pytest
from confluent_kafka import Producer
from confluent_kafka.admin import AdminClient, NewTopic

from tests.support.bench_scripts import load_bench_script
from tests.support.cluster import running_cluster

stage_breakdown = load_bench_script("stage_breakdown.py", "bench_stage_breakdown")

_BATCHES = 12
_CHAIN = ["leader append", "to fetch answer", "fetch transit", "follower append",
          "to next fetch", "next fetch transit", "HW to answer"]


@pytest.fixture
def traced(tmp_path, zookeeper_server, monkeypatch):
    """A cluster whose brokers were started with KAFKAPY_STAGE_TRACE; (cluster, trace dir)."""
    trace_dir = tmp_path / "trace"
    monkeypatch.setenv("KAFKAPY_STAGE_TRACE", str(trace_dir))
    for c in running_cluster(tmp_path / "cluster", zookeeper_server):
        monkeypatch.delenv("KAFKAPY_STAGE_TRACE")
        yield c, trace_dir


def test_every_acks_all_batch_is_traced_end_to_end(traced):
    cluster, trace_dir = traced
    bootstrap = cluster.bootstrap(1)
    admin = AdminClient({"bootstrap.servers": bootstrap})
    admin.create_topics([NewTopic("traced", 1, 3, config={"min.insync.replicas": "2"})],
                        operation_timeout=30)["traced"].result(60)
    cluster.wait_topic("traced", 1, timeout=60)
    producer = Producer({"bootstrap.servers": bootstrap, "acks": "all", "linger.ms": 0,
                         "enable.idempotence": True})
    acked = []
    t_from = time.monotonic()
    for i in range(_BATCHES):   # one record and one flush each: one batch per request
        producer.produce("traced", b"x" * 1000, partition=0,
                         on_delivery=lambda err, msg: acked.append(err is None))
        assert producer.flush(30) == 0
    t_to = time.monotonic()
    assert acked == [True] * _BATCHES
    # The brokers append their buffers at the first event a second after the last write;
    # idle followers fetch every replica.fetch.wait.max.ms (500 ms), so 3 s is plenty.
    deadline = time.monotonic() + 15
    rows = []
    while time.monotonic() < deadline and len(rows) < _BATCHES:
        time.sleep(0.5)
        rows = stage_breakdown.batches(stage_breakdown.load(trace_dir), t_from, t_to)
    assert len(rows) == _BATCHES
    for row in rows:
        assert all(row[name] >= 0 for name in stage_breakdown.STAGES if name in row), row
        assert sum(row[name] for name in _CHAIN) == row["total"]
        assert row["total"] < 30e9
    # Each batch but the last is followed by the next one's request: the producer's side
    # of the cycle splits into the client's turn and the leader's checks.
    for row in rows[:-1]:
        assert row["answer to next request"] + row["next request to append"] \
            == row["answer to next append"]
        assert row["answer to next request"] > 0 and row["next request to append"] > 0
    summary = stage_breakdown.summary(trace_dir, t_from, t_to)
    assert summary["batches"] == _BATCHES
    assert set(summary["stages"]) == set(stage_breakdown.STAGES)


def test_a_single_replica_batch_has_its_producer_cycle_traced(traced):
    """RF 1: no follower stages, but the cycle: append, answer, the next request."""
    cluster, trace_dir = traced
    bootstrap = cluster.bootstrap(1)
    admin = AdminClient({"bootstrap.servers": bootstrap})
    admin.create_topics([NewTopic("single", 1, 1)], operation_timeout=30)["single"].result(60)
    cluster.wait_topic("single", 1, timeout=60)
    producer = Producer({"bootstrap.servers": bootstrap, "acks": "all", "linger.ms": 0,
                         "enable.idempotence": True})
    t_from = time.monotonic()
    for _ in range(3):
        producer.produce("single", b"x" * 1000, partition=0)
        assert producer.flush(30) == 0
    t_to = time.monotonic()
    # Nothing else happens on this cluster: one more batch a second later is the event
    # at which the leader writes its buffer.
    time.sleep(1.1)
    producer.produce("single", b"x", partition=0)
    assert producer.flush(30) == 0
    deadline = time.monotonic() + 15
    rows = []
    while time.monotonic() < deadline and len(rows) < 3:
        time.sleep(0.5)
        rows = stage_breakdown.cycles(stage_breakdown.load(trace_dir), t_from, t_to)
    assert len(rows) == 3
    assert not stage_breakdown.batches(stage_breakdown.load(trace_dir), t_from, t_to)
    for row in rows:
        assert 0 <= row["leader append"] <= row["total"] < 30e9
    for row in rows[:-1]:
        assert row["answer to next request"] + row["next request to append"] \
            == row["answer to next append"] > 0
    assert stage_breakdown.summary(trace_dir, t_from, t_to, replicated=False)["batches"] == 3
