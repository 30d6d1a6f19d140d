"""Transactions v2 through the TransactionService over real collaborators
(tests/support/coordinator_services): Produce v12 has the partition added by the
in-process coordinator, the markers of EndTxn v5 carry the bumped epoch into the
partition's producer state, and the leader checks a v2 marker's epoch as Kafka 4 does.
"""
from __future__ import annotations

import asyncio
from types import SimpleNamespace

import pytest

from kafkapy.coordinator.transaction.service import TransactionService
from kafkapy.coordinator.transaction.state import TV_2, TxnState as S
from kafkapy.metadata.topics import TRANSACTION_STATE_TOPIC
from kafkapy.protocol.errors import ErrorCode as E
from kafkapy.records.record import build_batch
from tests.support.coordinator_services import TS, Node

TP = ("t", 0)


@pytest.fixture
async def node(tmp_path):
    n = Node(tmp_path, asyncio.get_running_loop())
    yield n
    n.close()


@pytest.fixture
async def txns(node):
    service = TransactionService(**node.collaborators(), producer_ids=node.producer_ids,
                                 groups=None)
    service.start()
    node.txn_coordinator = service.adder
    node.lead(TRANSACTION_STATE_TOPIC, partitions=(0, 1))
    node.lead(TP[0])
    yield service
    service.shutdown()


def _batch(producer_id: int, epoch: int, sequence: int = 0) -> bytes:
    return build_batch([(b"k", b"v", (), TS)], producer_id=producer_id, producer_epoch=epoch,
                       base_sequence=sequence, is_transactional=True)


async def _produce(node: Node, records: bytes, version: int = 12, txn_id: str = "tx"):
    entries = [(TP[0], SimpleNamespace(index=TP[1], records=records))]
    answer = node.replica_manager.append_records(
        entries, [None], required_acks=1, timeout_ms=30_000, produce_version=version,
        internal_topics_allowed=False, transactional_id=txn_id, respond=list)
    [(_, _, result)] = await answer if asyncio.isfuture(answer) else answer
    return result


async def _until(condition, what: str) -> None:
    for _ in range(500):
        if condition():
            return
        await asyncio.sleep(0.01)
    raise AssertionError(f"timed out waiting for {what}")


async def test_produce_v12_adds_the_partition_and_the_next_epoch_refuses_a_late_one(node, txns):
    coordinator = txns.coordinator
    _, pid, epoch = coordinator.init_producer_id("tx", 10_000)
    assert (await _produce(node, _batch(pid, epoch))).error_code == 0
    txn = coordinator.describe("tx")[1]
    assert (txn.state, txn.partitions, txn.client_tv) == (S.ONGOING, {TP}, TV_2)
    # A v11 produce of a producer without a transaction is only verified (not added).
    _, other, other_epoch = coordinator.init_producer_id("tx-v1", 10_000)
    refused = await _produce(node, _batch(other, other_epoch), version=11, txn_id="tx-v1")
    assert refused.error_code == E.TRANSACTION_ABORTABLE
    answer = coordinator.end_txn_v2("tx", pid, epoch, True)
    answer = await answer if asyncio.isfuture(answer) else answer
    assert answer == (0, pid, epoch + 1)
    await _until(lambda: coordinator.describe("tx")[1].state == S.COMPLETE_COMMIT, "commit")
    entry = node.replica_manager.partitions[TP].log.producer_state.last_entry(pid)
    assert (entry.epoch, entry.current_txn_first_offset) == (epoch + 1, -1)
    # The transaction's late record (its old epoch) is refused; the next one goes in.
    late = await _produce(node, _batch(pid, epoch, sequence=1))
    assert late.error_code == E.INVALID_PRODUCER_EPOCH
    assert (await _produce(node, _batch(pid, epoch + 1))).error_code == 0
    assert coordinator.describe("tx")[1].partitions == {TP}


async def test_a_v2_marker_must_be_above_the_producers_epoch(node, txns):
    _, pid, epoch = txns.coordinator.init_producer_id("tx", 10_000)
    assert (await _produce(node, _batch(pid, epoch))).error_code == 0   # open at ``epoch``
    log = node.replica_manager.partitions[TP].log
    for stale in (epoch, epoch - 1):
        assert txns.write_markers(pid, stale, 0, True, [TP], transaction_version=TV_2) == {
            TP: E.INVALID_PRODUCER_EPOCH}
    end = log.log_end_offset
    assert txns.write_markers(pid, epoch + 1, 0, True, [TP], transaction_version=TV_2) == {
        TP: 0}
    assert log.log_end_offset == end + 1
    # Its retry (same epoch, the transaction over) is written again, as Kafka 4 does.
    assert txns.write_markers(pid, epoch + 1, 0, True, [TP], transaction_version=TV_2) == {
        TP: 0}
    # A v1 marker may carry the epoch of the transaction it ends.
    _, other, other_epoch = txns.coordinator.init_producer_id("tx-v1", 10_000)
    assert txns.coordinator.add_partitions("tx-v1", other, other_epoch, [TP]) == 0
    assert (await _produce(node, _batch(other, other_epoch), version=9,
                           txn_id="tx-v1")).error_code == 0
    assert txns.write_markers(other, other_epoch, 0, False, [TP]) == {TP: 0}


async def test_a_produce_of_several_partitions_adds_them_in_one_write(node, txns):
    """The adds of one request go to the coordinator together, one state change: no
    partition meets another's pending write (CONCURRENT_TRANSACTIONS, NOT_ENOUGH_REPLICAS
    to the client, where followers must acknowledge the write)."""
    node.lead("u", partitions=(0, 1, 2))
    coordinator = txns.coordinator
    _, pid, epoch = coordinator.init_producer_id("tx", 10_000)
    entries = [("u", SimpleNamespace(index=i, records=_batch(pid, epoch))) for i in range(3)]
    answer = node.replica_manager.append_records(
        entries, [None] * 3, required_acks=1, timeout_ms=30_000, produce_version=12,
        internal_topics_allowed=False, transactional_id="tx", respond=list)
    results = await answer if asyncio.isfuture(answer) else answer
    assert [r.error_code for _, _, r in results] == [0, 0, 0]
    assert coordinator.describe("tx")[1].partitions == {("u", i) for i in range(3)}
    # One record for InitProducerId (Empty), one for the three partitions (Ongoing).
    state = node.replica_manager.partitions[(TRANSACTION_STATE_TOPIC,
                                             coordinator.partition_for("tx"))]
    assert state.log.log_end_offset == 2
