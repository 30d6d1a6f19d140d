"""A transactional producer made of raw requests (``tests/support/wire.py``), so a test
controls every step: which request goes where and when, with which epoch and sequence.

``RawTxnProducer(cluster, transactional_id, protocol)`` speaks one of two protocols:
- ``V1``: AddPartitionsToTxn v3 before the first record to a partition (AddOffsetsToTxn
  v3 before the group's offsets), Produce v11, TxnOffsetCommit v4, EndTxn v4 (the
  producer epoch stays as InitProducerId gave it);
- ``V2``: Produce v12 and TxnOffsetCommit v5 (the partition's leader, the group's
  coordinator, adds its partition to the transaction), EndTxn v5, whose answer carries
  the producer epoch for the next transaction (sequences start again at 0 with a new
  epoch).
Each batch holds one record; sequences are counted per partition.  Coordinator calls are
retried while the coordinator answers a retriable error (a transaction still completing,
a coordinator loading), bounded in time.
"""
from __future__ import annotations

import time
from dataclasses import dataclass

from kafkapy.protocol.errors import ErrorCode
from kafkapy.protocol.messages import REQUESTS
from kafkapy.records.record import build_batch
from tests.support.request_fields import fields
from tests.support.wire import WireClient

Produce = REQUESTS[0]
_RETRIABLE = {ErrorCode.CONCURRENT_TRANSACTIONS, ErrorCode.COORDINATOR_LOAD_IN_PROGRESS,
              ErrorCode.COORDINATOR_NOT_AVAILABLE, ErrorCode.NOT_COORDINATOR}
TXN_TIMEOUT_MS = 60_000


@dataclass(frozen=True)
class Protocol:
    produce_version: int
    end_txn_version: int
    txn_offset_commit_version: int
    explicit_add: bool          # AddPartitionsToTxn / AddOffsetsToTxn before the first write


V1 = Protocol(produce_version=11, end_txn_version=4, txn_offset_commit_version=4,
              explicit_add=True)
V2 = Protocol(produce_version=12, end_txn_version=5, txn_offset_commit_version=5,
              explicit_add=False)


class RawTxnProducer:
    def __init__(self, cluster, transactional_id: str, protocol: Protocol) -> None:
        self.cluster = cluster
        self.transactional_id = transactional_id
        self.protocol = protocol
        self.coordinator = -1
        self.producer_id = -1
        self.epoch = -1
        self._sequences: dict[tuple[str, int], int] = {}
        self._clients: dict[int, WireClient] = {}

    def client(self, node: int) -> WireClient:
        if node not in self._clients:
            self._clients[node] = WireClient(self.cluster.bootstrap(node))
        return self._clients[node]

    def close(self) -> None:
        for c in self._clients.values():
            c.close()
        self._clients.clear()

    def _retry(self, node: int, api_key: int, version: int, error_of, timeout: float = 30.0,
               **values):
        deadline = time.monotonic() + timeout
        while True:
            response = self.client(node).request(api_key, version, **values)
            error = error_of(response)
            if error not in _RETRIABLE or time.monotonic() > deadline:
                return error, response
            time.sleep(0.05)

    # -- the transaction ---------------------------------------------------------------------
    def init(self) -> None:
        """FindCoordinator, then InitProducerId at the coordinator."""
        via = self.cluster.running_ids()[0]
        error, r = self._retry(via, 10, 3, lambda r: r.error_code, key=self.transactional_id,
                               key_type=1)
        assert error == 0, f"FindCoordinator: {ErrorCode(error).name}"
        node = r.node_id
        self.coordinator = node
        error, r = self._retry(node, 22, 4, lambda r: r.error_code,
                               transactional_id=self.transactional_id,
                               transaction_timeout_ms=TXN_TIMEOUT_MS, producer_id=-1,
                               producer_epoch=-1)
        assert error == 0, f"InitProducerId: {ErrorCode(error).name}"
        self.producer_id, self.epoch = r.producer_id, r.producer_epoch

    def add_partitions(self, partitions: list[tuple[str, int]]) -> int:
        """AddPartitionsToTxn v3 (protocol V1): the first error code of the answer, 0 if
        none.  Retried while the previous transaction completes."""
        topics: dict[str, list[int]] = {}
        for topic, index in partitions:
            topics.setdefault(topic, []).append(index)

        def first_error(r):
            codes = [p.partition_error_code for t in r.results_by_topic_v3_and_below
                     for p in t.results_by_partition]
            return next((c for c in codes if c), r.error_code)
        error, _ = self._retry(self.coordinator, 24, 3, first_error, **fields(
            24, v3_and_below_transactional_id=self.transactional_id,
            v3_and_below_producer_id=self.producer_id,
            v3_and_below_producer_epoch=self.epoch,
            v3_and_below_topics=[{"name": t, "partitions": ps} for t, ps in topics.items()]))
        return error

    def add_offsets(self, group: str) -> int:
        """AddOffsetsToTxn v3 (protocol V1): the error code, retried while the previous
        transaction completes."""
        error, _ = self._retry(self.coordinator, 25, 3, lambda r: r.error_code,
                               transactional_id=self.transactional_id,
                               producer_id=self.producer_id, producer_epoch=self.epoch,
                               group_id=group)
        return error

    def offset_commit_frame(self, client: WireClient, group: str, topic: str, index: int,
                            offset: int) -> tuple[int, bytes]:
        """TxnOffsetCommit of ``offset`` for (topic, index) in ``group`` (a group no member
        joined: generation -1), encoded for ``client``."""
        return client.encode(28, self.protocol.txn_offset_commit_version, **fields(
            28, transactional_id=self.transactional_id, group_id=group,
            producer_id=self.producer_id, producer_epoch=self.epoch, generation_id=-1,
            member_id="", group_instance_id=None, topics=[{"name": topic, "partitions": [
                {"partition_index": index, "committed_offset": offset,
                 "committed_leader_epoch": -1, "committed_metadata": ""}]}]))

    def offset_commit_answer(self, client: WireClient, correlation: int) -> int:
        r = client.read_response(28, self.protocol.txn_offset_commit_version, correlation)
        return r.topics[0].partitions[0].error_code

    def produce_frame(self, client: WireClient, topic: str, index: int,
                      value: bytes) -> tuple[int, bytes]:
        """The next Produce of one record to (topic, index), encoded for ``client`` (its
        correlation id, the framed bytes); the partition's sequence is taken."""
        sequence = self._sequences.get((topic, index), 0)
        self._sequences[(topic, index)] = sequence + 1
        batch = build_batch([(None, value, (), int(time.time() * 1000))],
                            producer_id=self.producer_id, producer_epoch=self.epoch,
                            base_sequence=sequence, is_transactional=True)
        return client.encode(
            0, self.protocol.produce_version, transactional_id=self.transactional_id, acks=-1,
            timeout_ms=10_000, topic_data=[Produce.TopicProduceData(name=topic, partition_data=[
                Produce.TopicProduceData.PartitionProduceData(index=index, records=batch)])])

    def produce_answer(self, client: WireClient, correlation: int) -> int:
        r = client.read_response(0, self.protocol.produce_version, correlation)
        return r.responses[0].partition_responses[0].error_code

    def produce(self, leader: int, topic: str, index: int, value: bytes) -> int:
        """One record to (topic, index) at broker ``leader``: the error code."""
        client = self.client(leader)
        correlation, frame = self.produce_frame(client, topic, index, value)
        client.send_raw(frame)
        return self.produce_answer(client, correlation)

    def end(self, commit: bool) -> int:
        """EndTxn at the coordinator; with EndTxn v5 the answer's epoch is the producer's
        from now on (and every partition's sequence starts again)."""
        error, r = self._retry(self.coordinator, 26, self.protocol.end_txn_version,
                               lambda r: r.error_code, transactional_id=self.transactional_id,
                               producer_id=self.producer_id, producer_epoch=self.epoch,
                               committed=commit)
        if error == 0 and self.protocol.end_txn_version >= 5 and r.producer_epoch != self.epoch:
            self.producer_id, self.epoch = r.producer_id, r.producer_epoch
            self._sequences.clear()
        return error

    def wait_complete(self, timeout: float = 30.0) -> str:
        """Until DescribeTransactions says the last transaction is complete (its markers
        written everywhere): the state."""
        deadline = time.monotonic() + timeout
        while True:
            r = self.client(self.coordinator).request(65, 0,
                                                      transactional_ids=[self.transactional_id])
            state = r.transaction_states[0].transaction_state
            if state in ("CompleteCommit", "CompleteAbort", "Empty"):
                return state
            assert time.monotonic() < deadline, f"{self.transactional_id} still {state}"
            time.sleep(0.05)


def set_cluster_config(cluster, name: str, value: str, timeout: float = 30.0) -> None:
    """IncrementalAlterConfigs v1 SET of the cluster-wide broker default ``name``, then
    until every running broker's DescribeConfigs reports ``value``."""
    client = WireClient(cluster.bootstrap(cluster.running_ids()[0]))
    try:
        r = client.request(44, 1, **fields(
            44, resources=[{"resource_type": 4, "resource_name": "", "configs": [
                {"name": name, "config_operation": 0, "value": value}]}], validate_only=False))
    finally:
        client.close()
    assert r.responses[0].error_code == 0, r.responses[0]
    deadline = time.monotonic() + timeout
    for node in cluster.running_ids():
        while _broker_config(cluster, node, name) != value:
            assert time.monotonic() < deadline, f"broker {node}: {name} is not {value}"
            time.sleep(0.1)


def _broker_config(cluster, node: int, name: str) -> str | None:
    client = WireClient(cluster.bootstrap(node))
    try:
        r = client.request(32, 4, **fields(32, resources=[
            {"resource_type": 4, "resource_name": str(node), "configuration_keys": [name]}],
            include_synonyms=False, include_documentation=False))
    finally:
        client.close()
    return next((c.value for c in r.results[0].configs if c.name == name), None)


def committed_offset(cluster, node: int, group: str, topic: str, index: int) -> tuple[int, int]:
    """OffsetFetch v8 with require_stable at broker ``node`` (the group's coordinator):
    (error code, committed offset); UNSTABLE_OFFSET_COMMIT while a transaction's offsets
    for the partition are pending."""
    client = WireClient(cluster.bootstrap(node))
    try:
        r = client.request(9, 8, **fields(9, groups=[{"group_id": group, "topics": [
            {"name": topic, "partition_indexes": [index]}]}], require_stable=True))
    finally:
        client.close()
    group_answer = r.groups[0]
    if group_answer.error_code:
        return group_answer.error_code, -1
    p = group_answer.topics[0].partitions[0]
    return p.error_code, p.committed_offset
