"""What the ACL tests share: kafka-acls.sh, and topic, Metadata and Fetch requests over the
wire."""
from __future__ import annotations

import os
import subprocess
import time
from pathlib import Path

from kafka.record.default_records import DefaultRecordBatchBuilder

from kafkapy.protocol.messages import REQUESTS
from tests.support.broker_process import ROOT
from tests.support.cluster import tool_env
from tests.support.request_fields import fields


KAFKA_HOME = Path(os.environ.get("KAFKA_HOME", ROOT.parent / "shared" / "kafka_2.13-3.9.0"))


ACLS_SH = KAFKA_HOME / "bin" / "kafka-acls.sh"


Produce = REQUESTS[0]


def _kafka_acls(*args: str) -> subprocess.CompletedProcess:
    """kafka-acls.sh with the JVM options every Kafka tool of the tests gets (``tool_env``)."""
    return subprocess.run([str(ACLS_SH), *args], capture_output=True, text=True, timeout=120,
                          env=tool_env(), stdin=subprocess.DEVNULL)


def _metadata(wire, names):
    topics = None if names is None else [dict(name=n) for n in names]
    r = wire.request(3, 9, **fields(3, topics=topics, allow_auto_topic_creation=False,
                                    include_cluster_authorized_operations=False,
                                    include_topic_authorized_operations=False))
    return {t.name: t.error_code for t in r.topics}


def _produce(wire, topic: str) -> int:
    builder = DefaultRecordBatchBuilder(2, 0, False, -1, -1, -1, 1 << 20)
    builder.append(0, 1_700_000_000_000, None, b"v", [])
    r = wire.request(0, 9, transactional_id=None, acks=1, timeout_ms=5000,
                     topic_data=[Produce.TopicProduceData(name=topic, partition_data=[
                         Produce.TopicProduceData.PartitionProduceData(
                             index=0, records=bytes(builder.build()))])])
    return r.responses[0].partition_responses[0].error_code


def _fetch(wire, topic: str, replica_id: int = -1) -> int:
    r = wire.request(1, 12, **fields(
        1, replica_id=replica_id, max_wait_ms=0, min_bytes=0, max_bytes=1 << 20, isolation_level=0,
        session_id=0, session_epoch=-1,
        topics=[dict(topic=topic, partitions=[dict(partition=0, current_leader_epoch=-1, fetch_offset=0,
                                                   last_fetched_epoch=-1, log_start_offset=-1,
                                                   partition_max_bytes=1 << 20)])],
        forgotten_topics_data=[], rack_id=""))
    return r.responses[0].partitions[0].error_code


def _until(call, want, timeout: float = 20.0):
    """``call()`` until it returns ``want`` (ACL changes reach the broker asynchronously)."""
    deadline = time.monotonic() + timeout
    while True:
        got = call()
        if got == want or time.monotonic() > deadline:
            return got
        time.sleep(0.2)


def _create_topic(wire, name: str) -> None:
    r = wire.request(19, 5, **fields(19, topics=[dict(name=name, num_partitions=1, replication_factor=1,
                                                     assignments=[], configs=[])],
                                     timeout_ms=10000, validate_only=False))
    assert r.topics[0].error_code == 0, r.topics[0]
    return r.topics[0]
