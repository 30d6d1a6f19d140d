"""acks=all and min.insync.replicas on one real broker.

Kafka 3.9 caps min.insync.replicas by the replication factor (Partition.effectiveMinIsr),
so on a single broker nothing changes: a topic at RF 1 with min.insync.replicas=3 takes
acks=all and acks=1 writes, answered at once; ``__transaction_state`` is created with
min.insync.replicas = transaction.state.log.min.isr as Kafka writes it (2 here, not
capped by its RF 1) and the transaction coordinator's acks=-1 writes still succeed;
offset commits are answered at once.  The refusals themselves (an ISR below min ISR)
need more brokers: tests/cluster/test_acks_min_isr.py.
"""
from __future__ import annotations

import time

import pytest
from kafka.record.default_records import DefaultRecordBatchBuilder

from kafkapy.protocol.messages import REQUESTS
from tests.support.broker_process import BrokerProcess
from tests.support.request_fields import fields
from tests.support.wire import WireClient

Produce = REQUESTS[0]
TOPIC = "min-isr-3"
RETRIABLE = (14, 15, 16, 51)   # loading, not available, not coordinator, concurrent


@pytest.fixture(scope="module")
def wire(tmp_path_factory):
    broker = BrokerProcess(tmp_path_factory.mktemp("acks") / "logs",
                           overrides={"transaction.state.log.min.isr": "2"}).start()
    client = WireClient(broker.bootstrap, timeout=30)
    created = client.request(19, 7, **fields(19, topics=[dict(
        name=TOPIC, num_partitions=1, replication_factor=1, assignments=[],
        configs=[dict(name="min.insync.replicas", value="3")])],
        timeout_ms=10000, validate_only=False))
    assert created.topics[0].error_code == 0
    yield client
    client.close()
    broker.stop()


def _produce(wire, value: bytes, acks: int):
    builder = DefaultRecordBatchBuilder(2, 0, False, -1, -1, -1, 1 << 20)
    builder.append(0, 1_700_000_000_000, None, value, [])
    r = wire.request(0, 9, transactional_id=None, acks=acks, timeout_ms=5000,
                     topic_data=[Produce.TopicProduceData(name=TOPIC, partition_data=[
                         Produce.TopicProduceData.PartitionProduceData(
                             index=0, records=bytes(builder.build()))])])
    p = r.responses[0].partition_responses[0]
    return p.error_code, p.base_offset


def _retry(call, timeout: float = 30.0):
    """``call()`` until its error code is not a retriable coordinator error (bounded)."""
    deadline = time.monotonic() + timeout
    while True:
        result = call()
        if result[0] not in RETRIABLE or time.monotonic() > deadline:
            return result
        time.sleep(0.1)


def test_min_isr_above_the_replication_factor_takes_acks_all(wire):
    assert _produce(wire, b"all", acks=-1) == (0, 0)
    assert _produce(wire, b"one", acks=1) == (0, 1)
    assert _produce(wire, b"all-again", acks=-1) == (0, 2)


def test_transaction_log_min_isr_is_kafkas_and_its_writes_succeed(wire):
    found = _retry(lambda: (wire.request(10, 3, key="tx-acks", key_type=1).error_code,))
    assert found == (0,)
    init = _retry(lambda: (lambda r: (r.error_code, r.producer_id, r.producer_epoch))(
        wire.request(22, 1, transactional_id="tx-acks", transaction_timeout_ms=60000)))
    assert init[0] == 0 and init[1] >= 0 and init[2] == 0
    r = wire.request(32, 4, **fields(32, resources=[
        dict(resource_type=2, resource_name="__transaction_state",
             configuration_keys=["min.insync.replicas"])],
        include_synonyms=False, include_documentation=False))
    assert [(c.name, c.value) for c in r.results[0].configs] == [("min.insync.replicas", "2")]


def test_offset_commit_is_answered_at_once(wire):
    found = _retry(lambda: (wire.request(10, 3, key="g-acks", key_type=0).error_code,))
    assert found == (0,)

    def commit():
        r = wire.request(8, 8, **fields(8, group_id="g-acks", generation_id_or_member_epoch=-1,
                                        member_id="", group_instance_id=None, topics=[dict(
                                            name=TOPIC, partitions=[dict(
                                                partition_index=0, committed_offset=2,
                                                committed_leader_epoch=-1,
                                                committed_metadata="")])]))
        return (r.topics[0].partitions[0].error_code,)
    assert _retry(commit) == (0,)
    r = wire.request(9, 7, **fields(9, group_id="g-acks", topics=[dict(
        name=TOPIC, partition_indexes=[0])], require_stable=False))
    assert r.topics[0].partitions[0].committed_offset == 2
