"""The broker side of AlterPartition (Kafka's DefaultAlterPartitionManager): changes of one
loop turn go in one AlterPartition v3 (topic ids, broker epochs), one request in flight,
a top-level error keeps everything and sends it again, answers reach the partitions
(which wake the purgatories when the high watermark moved), a second change for a queued
partition is refused.  Real partitions and logs; the active controller is a recorder
answering in-process (the network path runs in tests/cluster/test_alter_partition.py)."""
from __future__ import annotations

import asyncio
import uuid
from dataclasses import dataclass, field

from kafka.record.default_records import DefaultRecordBatchBuilder

from kafkapy.clock import MockClock
from kafkapy.log.log import Log
from kafkapy.metadata.cache import BrokerEndpoint, MetadataCache, PartitionState, TopicMetadata
from kafkapy.protocol.errors import ErrorCode
from kafkapy.protocol.inter_broker import AlterPartitionResponse
from kafkapy.replication.alter_partition import AlterPartitionManager
from kafkapy.replication.partition import Partition

TS = 1_700_000_000_000
TOPIC_ID = uuid.UUID(int=42)
_T = AlterPartitionResponse.TopicData
_P = _T.PartitionData


class Controller:
    """Active controller stand-in: answers from ``script`` (top-level codes), then
    accepts every proposed ISR at partition epoch + 1."""

    def __init__(self, script=()) -> None:
        self.is_active = True
        self.requests: list = []
        self.script = list(script)

    async def alter_partition(self, request, version):
        self.requests.append(request)
        await asyncio.sleep(0)
        if self.script:
            return AlterPartitionResponse[version](throttle_time_ms=0,
                                                   error_code=self.script.pop(0), topics=[])
        return AlterPartitionResponse[version](throttle_time_ms=0, error_code=0, topics=[
            _T(topic_id=t.topic_id, partitions=[
                _P(partition_index=p.partition_index, error_code=0, leader_id=request.broker_id,
                   leader_epoch=p.leader_epoch, isr=[b.broker_id for b in p.new_isr_with_epochs],
                   leader_recovery_state=0, partition_epoch=p.partition_epoch + 1)
                for p in t.partitions]) for t in request.topics])


@dataclass
class Leader:
    """Broker 0 leading t-0 and t-1 (replicas 0, 1, 2), and its AlterPartitionManager."""
    manager: AlterPartitionManager
    partitions: dict
    woken: list = field(default_factory=list)     # high_watermark_moved calls


def cache() -> MetadataCache:
    """Broker 0's metadata: brokers 0-2 alive, broker 0 the controller, topic t."""
    cache = MetadataCache("cluster", 0, "PLAINTEXT")
    cache.controller_id = 0
    for b in (0, 1, 2):
        endpoint = BrokerEndpoint(b, "localhost", 9092 + b)
        cache.put_broker(endpoint, {"PLAINTEXT": endpoint})
    cache.put_topic(TopicMetadata("t", TOPIC_ID))
    return cache


def leader(tmp_path, clock, controller) -> Leader:
    """The manager, given to the partitions as the replica manager gives it to each
    partition it creates."""
    woken: list = []
    manager = AlterPartitionManager(
        config={"replica.lag.time.max.ms": 10_000, "controller.socket.timeout.ms": 3000,
                "request.timeout.ms": 3000},
        cache=cache(), node_id=0, broker_epoch=lambda: 77, inter_broker_listener="PLAINTEXT",
        controller=lambda: controller, shrink_isrs=lambda: 0,
        high_watermark_moved=woken.append)
    partitions = {}
    for index in (0, 1):
        log = Log.load(str(tmp_path / f"t-{index}"), {}, clock)
        p = Partition("t", index, log, PartitionState(index, [0, 1, 2], -1, -1, []), 0,
                      isr_manager=manager)
        p.make_leader(PartitionState(index, [0, 1, 2], 0, 3, [0, 1, 2], zk_version=4))
        partitions[("t", index)] = p
    return Leader(manager, partitions, woken)


def produce(p) -> None:
    builder = DefaultRecordBatchBuilder(2, 0, False, -1, -1, -1, 1 << 20)
    builder.append(0, TS, None, b"v", [])
    assert p.append_as_leader(bytes(builder.build()), 9).error_code == 0


async def settle(check, what: str) -> None:
    for _ in range(3000):
        if check():
            return
        await asyncio.sleep(0.01)
    raise AssertionError(f"timed out waiting for {what}")


async def test_batched_retried_and_applied(tmp_path):
    clock = MockClock(TS)
    controller = Controller(script=[ErrorCode.NOT_CONTROLLER])
    b = leader(tmp_path, clock, controller)
    manager = b.manager
    p0, p1 = b.partitions.values()
    for p in (p0, p1):
        produce(p)
        p.update_follower_fetch(1, 1, clock.time_ms())
    clock.advance(10_001)
    assert b.partitions and all(p.maybe_shrink_isr() for p in (p0, p1))
    assert manager.submit(p0, p0.pending_isr) is False, "one queued change per partition"
    await settle(lambda: p0.pending_isr is None and p1.pending_isr is None, "answers applied")
    first, second = controller.requests
    assert first.to_dict() == second.to_dict(), "the NOT_CONTROLLER batch is sent again"
    assert (first.broker_id, first.broker_epoch) == (0, 77)
    [topic] = first.topics
    assert topic.topic_id == TOPIC_ID
    assert [(p.partition_index, p.leader_epoch, p.partition_epoch,
             [(s.broker_id, s.broker_epoch) for s in p.new_isr_with_epochs])
            for p in topic.partitions] == [(0, 3, 4, [(0, 77), (1, -1)]),
                                           (1, 3, 4, [(0, 77), (1, -1)])]
    for p in (p0, p1):
        assert (p.state.isr, p.partition_epoch, p.high_watermark) == ([0, 1], 5, 1)
    assert sorted(b.woken) == [("t", 0), ("t", 1)], "HW moved: purgatories woken"
    manager.close()


async def test_refused_expansion_goes_back_to_the_committed_isr(tmp_path):
    clock = MockClock(TS)

    class Refusing(Controller):
        async def alter_partition(self, request, version):
            self.requests.append(request)
            return AlterPartitionResponse[version](throttle_time_ms=0, error_code=0, topics=[
                _T(topic_id=t.topic_id, partitions=[
                    _P(partition_index=p.partition_index,
                       error_code=ErrorCode.INELIGIBLE_REPLICA) for p in t.partitions])
                for t in request.topics])
    controller = Refusing()
    b = leader(tmp_path, clock, controller)
    manager = b.manager
    p0 = b.partitions[("t", 0)]
    p0.make_leader(PartitionState(0, [0, 1, 2], 0, 4, [0, 1], zk_version=5))
    p0.update_follower_fetch(2, 0, clock.time_ms())
    assert p0.pending_isr is not None and p0.maximal_isr == [0, 1, 2]
    await settle(lambda: p0.pending_isr is None, "the refusal applied")
    assert p0.state.isr == [0, 1] and len(controller.requests) == 1
    manager.close()


async def test_isr_expiration_task_runs_the_shrink_check():
    checks: list = []
    manager = AlterPartitionManager(
        config={"replica.lag.time.max.ms": 20, "controller.socket.timeout.ms": 3000,
                "request.timeout.ms": 3000},
        cache=cache(), node_id=0, broker_epoch=lambda: 77, inter_broker_listener="PLAINTEXT",
        controller=lambda: None, shrink_isrs=lambda: checks.append(1),
        high_watermark_moved=lambda key: None)
    manager.start()
    await settle(lambda: len(checks) >= 2, "two shrink checks (every 10 ms)")
    manager.close()
    count = len(checks)
    await asyncio.sleep(0.05)
    assert len(checks) == count, "no check after close"
