"""A partition leader adding a partition to a producer's transaction (transactions v2).

Kafka's AddPartitionsToTxnManager with the add-partition operation: a v2 client
(Produce v12, TxnOffsetCommit v5) sends no AddPartitionsToTxn; the leader of the
partition it writes asks the transaction coordinator to add the partition before the
append.  ``PartitionAdder.add(transactional_id, producer_id, epoch, tp)`` answers the
coordinator's error code for the partition (0: in the transaction now), at once or as a
future of it:
- the id's ``__transaction_state`` partition led here: the in-process coordinator's
  ``add_partitions`` with transaction version 2 (a future while the Ongoing state
  replicates);
- led by another broker: AddPartitionsToTxn v5 (the inter-broker batch form, one
  transaction, VerifyOnly false) to that broker, whose handler does the same; a failed
  connection or request, or a request timeout, answers NETWORK_EXCEPTION and the
  connection is replaced on the next call;
- no leader known: COORDINATOR_NOT_AVAILABLE.
Adds are batched per transaction (coordinator broker, transactional id, producer id,
epoch) as Kafka's manager batches them per broker: those asked in one loop turn go
together, and while one batch of a transaction is on its way the next one waits for it,
so a transaction's own adds (a Produce of several partitions, TxnOffsetCommit beside a
Produce) do not meet each other's pending write as CONCURRENT_TRANSACTIONS.
The caller maps the code for its client (``replication.txn_verification.failure``).

Also the replica manager's ``Verifier``: ``verify(transactional_id, producer_id, epoch,
tp)`` answers whether ``tp`` is in the producer's transaction without adding it
(transaction verification of v3-11 produces, KIP-890 part 1): the in-process
coordinator's ``verify_partitions``, or AddPartitionsToTxn v5 with VerifyOnly true to
another broker's (as Kafka's AddPartitionsToTxnManager).  One connection per coordinator
broker, requests pipelined on it; everything runs on the event loop.
"""
from __future__ import annotations

import asyncio
from dataclasses import dataclass, field
from typing import TYPE_CHECKING

import structlog

from kafkapy.coordinator.transaction.state import TV_2
from kafkapy.metadata.topics import TRANSACTION_STATE_TOPIC
from kafkapy.network.client import BrokerConnection, SharedConnections
from kafkapy.network.links import Links
from kafkapy.protocol.errors import ErrorCode as E
from kafkapy.protocol.messages import REQUESTS
from kafkapy.protocol.topic_partition import TopicPartition
from kafkapy.replication import acks

if TYPE_CHECKING:   # annotations only
    from kafkapy.coordinator.transaction.coordinator import TransactionCoordinator
    from kafkapy.metadata.cache import MetadataCache

_log = structlog.get_logger("kafkapy.coordinator.transaction.partition_adder")

ADD_PARTITIONS_VERSION = 5
_Request = REQUESTS[24][ADD_PARTITIONS_VERSION]
_Txn = _Request.AddPartitionsToTxnTransaction
_Topic = _Request.AddPartitionsToTxnTopic

# (coordinator broker, transactional id, producer id, epoch)
_AddKey = tuple[int, str, int, int]


@dataclass
class _Batch:
    """Partitions waiting to be added to one transaction, and the future of their codes."""
    future: asyncio.Future
    partitions: set = field(default_factory=set)


class PartitionAdder:
    """See the module docstring."""

    def __init__(self, node_id: int, cache: MetadataCache, coordinator: TransactionCoordinator,
                 *, request_timeout_ms: int = 30000, connect_timeout_ms: int = 10000,
                 links: Links | None = None) -> None:
        self._node_id = node_id
        self._cache = cache
        self._coordinator = coordinator
        self._client_id = f"broker-{node_id}-add-partitions"
        self._request_timeout_s = request_timeout_ms / 1000.0
        self._connections = SharedConnections(self._client_id, connect_timeout_ms / 1000.0,
                                              self._request_timeout_s, links)
        self._queued: dict[_AddKey, _Batch] = {}
        self._in_flight: set[_AddKey] = set()
        self._closed = False

    # -- the replica manager's Verifier ---------------------------------------------------
    def add(self, transactional_id: str, producer_id: int, epoch: int, tp: TopicPartition):
        """The coordinator's error code for adding ``tp`` (0: added), or a future of it."""
        leader = self._coordinator_node(transactional_id)
        if leader < 0:
            return E.COORDINATOR_NOT_AVAILABLE
        key = (leader, transactional_id, producer_id, epoch)
        batch = self._queued.get(key)
        if batch is None:
            loop = asyncio.get_running_loop()
            batch = self._queued[key] = _Batch(loop.create_future())
            if key not in self._in_flight:
                loop.call_soon(self._send, key)
        batch.partitions.add(tuple(tp))
        return acks.then(batch.future, lambda codes: codes.get(tuple(tp), E.UNKNOWN))

    def _send(self, key: _AddKey) -> None:
        """The queued batch of ``key`` to its coordinator; the next one once answered."""
        batch = self._queued.pop(key, None)
        if batch is None:
            return
        leader, transactional_id, producer_id, epoch = key
        partitions = sorted(batch.partitions)
        if self._closed:
            self._answer(key, batch, {tp: E.COORDINATOR_NOT_AVAILABLE for tp in partitions})
            return
        self._in_flight.add(key)
        if leader == self._node_id:
            try:
                added = self._coordinator.add_partitions(transactional_id, producer_id,
                                                         epoch, partitions, client_tv=TV_2)
            except Exception:  # noqa: BLE001 - answered, not left waiting
                _log.exception("adding partitions to a transaction failed",
                               transactional_id=transactional_id)
                added = E.UNKNOWN
            answer = acks.then(added, lambda code: {tp: code for tp in partitions})
        else:
            answer = asyncio.ensure_future(self._remote(
                leader, transactional_id, producer_id, epoch, partitions, verify_only=False))
        acks.then(answer, lambda codes: self._answer(key, batch, codes))

    def _answer(self, key: _AddKey, batch: _Batch, codes: dict) -> None:
        self._in_flight.discard(key)
        if not batch.future.done():
            batch.future.set_result(codes)
        if key in self._queued:
            self._send(key)

    def verify(self, transactional_id: str, producer_id: int, epoch: int, tp: TopicPartition):
        """The coordinator's error code for ``tp`` in the producer's transaction (0: it is,
        TRANSACTION_ABORTABLE: it is not), or a future of it; nothing is added."""
        leader = self._coordinator_node(transactional_id)
        if leader < 0:
            return E.COORDINATOR_NOT_AVAILABLE
        if leader == self._node_id:
            return self._coordinator.verify_partitions(transactional_id, producer_id, epoch,
                                                       [tp])[tp]
        answer = asyncio.ensure_future(self._remote(leader, transactional_id, producer_id,
                                                    epoch, [tuple(tp)], verify_only=True))
        return acks.then(answer, lambda codes: codes[tuple(tp)])

    def _coordinator_node(self, transactional_id: str) -> int:
        """The broker leading the id's ``__transaction_state`` partition; -1 when none is
        known alive (or the adder is closed)."""
        state = self._cache.partition(TRANSACTION_STATE_TOPIC,
                                      self._coordinator.partition_for(transactional_id or ""))
        if state is None or state.leader < 0:
            return -1
        if state.leader != self._node_id and (state.leader not in self._cache.brokers
                                              or self._closed):
            return -1
        return state.leader

    def close(self) -> None:
        self._closed = True
        for batch in self._queued.values():
            if not batch.future.done():
                batch.future.set_result({tp: E.COORDINATOR_NOT_AVAILABLE
                                         for tp in batch.partitions})
        self._queued.clear()
        self._connections.close()

    # -- another broker's coordinator -------------------------------------------------------
    async def _remote(self, node_id: int, transactional_id: str, producer_id: int, epoch: int,
                      partitions: list[TopicPartition], verify_only: bool) -> dict:
        """{partition: code} from AddPartitionsToTxn v5 to ``node_id``."""
        by_topic: dict[str, list[int]] = {}
        for topic, index in partitions:
            by_topic.setdefault(topic, []).append(index)
        request = _Request(transactions=[_Txn(
            transactional_id=transactional_id, producer_id=producer_id, producer_epoch=epoch,
            verify_only=verify_only,
            topics=[_Topic(name=t, partitions=ps) for t, ps in by_topic.items()])])
        try:
            conn = await self._connection(node_id)
            response = await conn.send(request, self._client_id, self._request_timeout_s)
            return {tp: _partition_error(response, transactional_id, tp) for tp in partitions}
        except (ConnectionError, asyncio.TimeoutError, OSError) as exc:
            self._connections.drop(node_id)
            _log.info("asking a transaction coordinator failed", coordinator=node_id,
                      transactional_id=transactional_id, partitions=partitions,
                      error=repr(exc))
        except Exception:  # noqa: BLE001 - an answer not understood: a new connection next
            self._connections.drop(node_id)
            _log.exception("transaction coordinator's answer not understood",
                           coordinator=node_id, transactional_id=transactional_id)
        return {tp: E.NETWORK_EXCEPTION for tp in partitions}

    async def _connection(self, node_id: int) -> BrokerConnection:
        endpoint = self._cache.brokers.get(node_id)
        if endpoint is None:
            raise ConnectionError(f"broker {node_id} is not alive")
        return await self._connections.get(node_id, endpoint.host, endpoint.port)


def _partition_error(response, transactional_id: str, tp: TopicPartition) -> int:
    """The answer's code for ``tp`` (the top-level error when there is one)."""
    if response.error_code:
        return response.error_code
    for txn in response.results_by_transaction:
        if txn.transactional_id != transactional_id:
            continue
        for topic in txn.topic_results:
            for p in topic.results_by_partition:
                if (topic.name, p.partition_index) == tuple(tp):
                    return p.partition_error_code
    return E.UNKNOWN
