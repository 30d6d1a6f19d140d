"""PartitionAdder: a partition leader asking the transaction coordinator about a partition,
in-process when the coordinator runs on this broker, else with AddPartitionsToTxn v5 to a
fake broker (``tests.support.fake_broker_server``) that answers per partition with the
code its ``codes`` map gives.  ``verify`` (KIP-890 part 1) sends VerifyOnly true, ``add``
(transactions v2) VerifyOnly false.  Every wait is bounded."""
from __future__ import annotations

import asyncio
import uuid

import pytest

from kafkapy.coordinator.transaction.partition_adder import PartitionAdder
from kafkapy.metadata.cache import BrokerEndpoint, MetadataCache, PartitionState, TopicMetadata
from kafkapy.metadata.topics import TRANSACTION_STATE_TOPIC
from kafkapy.protocol.errors import ErrorCode as E
from kafkapy.protocol.messages import RESPONSES
from tests.support.fake_broker_server import WAIT_S, FakeBrokerServer

LOCAL, REMOTE = 1, 2
TP = ("t", 3)
_Resp = RESPONSES[24][5]
_TxnResult = _Resp.AddPartitionsToTxnResult
_TopicResult = _TxnResult.AddPartitionsToTxnTopicResult
_PartitionResult = _TopicResult.AddPartitionsToTxnPartitionResult


class Coordinator:
    """The in-process TransactionCoordinator's surface the adder uses."""

    def __init__(self) -> None:
        self.asked: list[tuple] = []

    def partition_for(self, transactional_id: str) -> int:
        return 0

    def verify_partitions(self, transactional_id, producer_id, epoch, partitions):
        self.asked.append(("verify", transactional_id, producer_id, epoch, list(partitions)))
        return {tp: E.TRANSACTION_ABORTABLE for tp in partitions}

    def add_partitions(self, transactional_id, producer_id, epoch, partitions, client_tv):
        self.asked.append(("add", transactional_id, producer_id, epoch, list(partitions)))
        return 0


class FakeCoordinatorBroker(FakeBrokerServer):
    def __init__(self) -> None:
        super().__init__(respond=self._answer)
        self.codes: dict[tuple[str, int], int] = {}

    def _answer(self, request):
        assert (request.API_KEY, request.API_VERSION) == (24, 5)
        return _Resp(throttle_time_ms=0, error_code=0, results_by_transaction=[
            _TxnResult(transactional_id=t.transactional_id, topic_results=[
                _TopicResult(name=topic.name, results_by_partition=[
                    _PartitionResult(partition_index=p,
                                     partition_error_code=self.codes.get((topic.name, p), 0))
                    for p in topic.partitions]) for topic in t.topics])
            for t in request.transactions])


@pytest.fixture
async def setup():
    cache = MetadataCache("cluster", LOCAL)
    fake = await FakeCoordinatorBroker().start()
    cache.put_broker(BrokerEndpoint(REMOTE, "127.0.0.1", fake.port), {})
    coordinator = Coordinator()
    adder = PartitionAdder(LOCAL, cache, coordinator, request_timeout_ms=5000,
                           connect_timeout_ms=2000)

    def lead(leader: int) -> None:
        cache.put_topic(TopicMetadata(TRANSACTION_STATE_TOPIC, uuid.uuid4(), {
            0: PartitionState(0, [leader], leader, 0, [leader])}))
    yield adder, coordinator, fake, lead
    adder.close()
    await fake.stop()


async def _answer(value):
    return await asyncio.wait_for(value, WAIT_S) if asyncio.isfuture(value) else value


async def test_verify_asks_the_coordinator_here_in_process(setup):
    adder, coordinator, fake, lead = setup
    lead(LOCAL)
    assert adder.verify("tx", 7, 3, TP) == E.TRANSACTION_ABORTABLE
    assert coordinator.asked == [("verify", "tx", 7, 3, [TP])]
    assert fake.received == []


async def test_verify_asks_another_brokers_coordinator_verify_only(setup):
    adder, coordinator, fake, lead = setup
    lead(REMOTE)
    fake.codes[TP] = E.TRANSACTION_ABORTABLE
    assert await _answer(adder.verify("tx", 7, 3, TP)) == E.TRANSACTION_ABORTABLE
    fake.codes[TP] = 0
    assert await _answer(adder.verify("tx", 7, 3, TP)) == 0
    [first, second] = fake.requests
    for request in (first, second):
        [txn] = request.transactions
        assert (txn.transactional_id, txn.producer_id, txn.producer_epoch, txn.verify_only) == \
            ("tx", 7, 3, True)
        assert [(t.name, list(t.partitions)) for t in txn.topics] == [("t", [3])]
    assert coordinator.asked == []


async def test_add_to_another_brokers_coordinator_is_not_verify_only(setup):
    adder, _, fake, lead = setup
    lead(REMOTE)
    assert await _answer(adder.add("tx", 7, 3, TP)) == 0
    [request] = fake.requests
    assert request.transactions[0].verify_only is False


async def test_no_coordinator_known(setup):
    adder, _, fake, lead = setup
    assert adder.verify("tx", 7, 3, TP) == E.COORDINATOR_NOT_AVAILABLE   # no leader at all
    lead(4)                                                               # not a live broker
    assert adder.verify("tx", 7, 3, TP) == E.COORDINATOR_NOT_AVAILABLE
    assert fake.received == []
