"""File descriptors under a small ``ulimit -n``: a partition costs one descriptor (its
active segment's .log; indexes are mapped without one), partitions the process could not
open are refused up front, and the broker keeps serving and restarts, after a clean stop
or a kill -9, on the same data."""
from __future__ import annotations

import os

import pytest
from kafka import KafkaAdminClient, KafkaProducer
from kafka.admin import NewTopic
from kafka.errors import PolicyViolationError

from tests.support.broker_process import BrokerProcess

LIMIT = 1024


def _descriptors(broker: BrokerProcess) -> int:
    return len(os.listdir(f"/proc/{broker.proc.pid}/fd"))


def test_5000_partitions_under_ulimit_1024(tmp_path):
    broker = BrokerProcess(tmp_path / "logs", open_files_limit=LIMIT).start()
    try:
        admin = KafkaAdminClient(bootstrap_servers=broker.bootstrap)
        with pytest.raises(PolicyViolationError, match="file descriptors"):
            admin.create_topics([NewTopic("big", 5000, 1)])
        before = _descriptors(broker)
        admin.create_topics([NewTopic("fits", 500, 1)])
        admin.close()
        assert _descriptors(broker) - before <= 510     # about one per partition
        producer = KafkaProducer(bootstrap_servers=broker.bootstrap)
        producer.send("fits", b"kept", partition=499).get(timeout=30)
        producer.close()
        broker.restart(hard=True)                       # kill -9, then start again
        broker.restart()                                # and a clean stop and start
        assert _descriptors(broker) < 600                # the 500 logs and a few more
    finally:
        broker.stop()
    assert "all log dirs have failed" not in broker.output()
