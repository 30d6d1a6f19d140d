"""GroupService and TransactionService over their real collaborators
(tests/support/coordinator_services): the internal topic created through the admin
manager, partitions loaded once the cache names this broker leader and the replica
manager leads them, durable writes answered once replicated, and the replica manager
asking the transaction coordinator to verify transactional produces.
"""
from __future__ import annotations

import asyncio
from types import SimpleNamespace

import pytest

from kafkapy.coordinator.group.offsets import OffsetAndMetadata
from kafkapy.coordinator.group.service import GroupService
from kafkapy.coordinator.transaction.service import TransactionService
from kafkapy.metadata import paths
from kafkapy.metadata.topics import OFFSETS_TOPIC, TRANSACTION_STATE_TOPIC
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
async def groups(node):
    service = GroupService(**node.collaborators())
    service.start()
    yield service
    service.shutdown()


@pytest.fixture
async def txns(node, groups):
    service = TransactionService(**node.collaborators(), producer_ids=node.producer_ids,
                                 groups=groups)
    service.start()
    node.txn_coordinator = service.adder    # what server.py hands the replica manager
    yield service
    service.shutdown()


async def settled() -> None:
    """Run the callbacks chained on resolved futures."""
    for _ in range(5):
        await asyncio.sleep(0)


def stored_partitions(node: Node, topic: str) -> int:
    data, _ = node.store.get(paths.topic_path(topic))
    return len(paths.decode_topic_assignment(data, topic).partitions)


# -- the group coordinator ------------------------------------------------------------------

async def test_offsets_topic_is_created_on_lookup_and_served_once_led(node, groups):
    assert groups.coordinator_node("g") == (E.COORDINATOR_NOT_AVAILABLE, None)
    assert stored_partitions(node, OFFSETS_TOPIC) == 2      # offsets.topic.num.partitions
    assert not groups.coordinator.serves(0)
    node.lead(OFFSETS_TOPIC, partitions=(0, 1))            # the controller's LeaderAndIsr
    assert groups.coordinator.serves(0) and groups.coordinator.serves(1)
    assert groups.coordinator_node("g") == (0, node.endpoint)


async def test_offset_commit_is_written_to_the_led_partition(node, groups):
    node.lead(OFFSETS_TOPIC, partitions=(0, 1))
    offsets = {TP: OffsetAndMetadata(42, -1, "", TS)}
    assert groups.coordinator.commit_offsets("g", "", None, -1, offsets) == {TP: 0}
    index = groups.coordinator.partition_for("g")
    assert node.replica_manager.partitions[(OFFSETS_TOPIC, index)].log.log_end_offset == 1
    _, found = groups.coordinator.fetch_offsets("g", [TP])
    assert found[0][1].offset == 42


async def test_commits_wait_for_the_followers_in_sync(node, groups):
    node.lead(OFFSETS_TOPIC, partitions=(0, 1), replicas=(0, 1))    # the follower lags
    offsets = {TP: OffsetAndMetadata(42, -1, "", TS)}
    out = groups.coordinator.commit_offsets("g", "", None, -1, offsets)
    assert isinstance(out, asyncio.Future) and not out.done()
    node.advance(node.config["offsets.commit.timeout.ms"])
    await settled()
    assert out.result() == {TP: E.REQUEST_TIMED_OUT}


# -- the transaction coordinator ------------------------------------------------------------

async def test_transaction_state_topic_is_created_on_lookup(node, txns):
    assert txns.coordinator_node("tx") == (E.COORDINATOR_NOT_AVAILABLE, None)
    assert stored_partitions(node, TRANSACTION_STATE_TOPIC) == 2
    node.lead(TRANSACTION_STATE_TOPIC, partitions=(0, 1))
    assert txns.coordinator_node("tx") == (0, node.endpoint)


async def test_init_producer_id_takes_an_id_block_and_is_durable(node, txns):
    node.lead(TRANSACTION_STATE_TOPIC, partitions=(0, 1))
    error, producer_id, epoch = txns.coordinator.init_producer_id("tx", 10_000)
    assert (error, epoch) == (0, 0) and producer_id >= 0
    index = txns.coordinator.partition_for("tx")
    assert node.replica_manager.partitions[
        (TRANSACTION_STATE_TOPIC, index)].log.log_end_offset == 1


def produce(node: Node, records: bytes, version: int = 9):
    entries = [(TP[0], SimpleNamespace(index=TP[1], records=records))]
    [(_, _, result)] = node.replica_manager.append_records(
        entries, [None], required_acks=1, timeout_ms=30_000, produce_version=version,
        internal_topics_allowed=False, transactional_id="tx", respond=list)
    return result


async def test_the_replica_manager_verifies_with_this_coordinator(node, txns):
    node.lead(TRANSACTION_STATE_TOPIC, partitions=(0, 1))
    node.lead(TP[0])
    _, producer_id, epoch = txns.coordinator.init_producer_id("tx", 10_000)
    records = build_batch([(b"k", b"v", (), TS)], producer_id=producer_id,
                          producer_epoch=epoch, base_sequence=0, is_transactional=True)
    # Not added to the transaction: the coordinator says so (Produce v9's answer).
    refused = produce(node, records)
    assert (refused.error_code, refused.error_message) == (
        E.INVALID_TXN_STATE, "Partition was not added to the transaction")
    assert txns.coordinator.add_partitions("tx", producer_id, epoch, [TP]) == 0
    assert produce(node, records).error_code == 0


async def test_markers_to_a_partition_led_here_are_written_at_once(node, txns):
    node.lead(TP[0])
    assert txns.write_markers(77, 0, 0, True, [TP]) == {TP: 0}
    assert node.replica_manager.partitions[TP].log.log_end_offset == 1
