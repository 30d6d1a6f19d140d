"""``BrokerPersister``: the broker's ``Persister`` (Kafka's DefaultStatePersister and
PersisterStateManager), what share-partition leaders and the group coordinator call.

Each call names one key (group, topic id, partition).  It is routed to the share
coordinator of the key's ``__share_group_state`` partition, whose leader the metadata
cache names (the topic is created on first use, as FindCoordinator does):
- led by this broker: the ``ShareCoordinator`` is called in-process;
- led by another broker: one request (InitializeShareGroupState v0,
  ReadShareGroupState v0, WriteShareGroupState v1, DeleteShareGroupState v0,
  ReadShareGroupStateSummary v1) over a ``BrokerConnection`` to that broker's
  inter-broker endpoint; one connection per broker, reused by every call (requests are
  pipelined on it) and replaced after a failure.
NOT_COORDINATOR, COORDINATOR_NOT_AVAILABLE, COORDINATOR_LOAD_IN_PROGRESS, a partition
without a leader and a network failure (connection, timeout) are retried, the route
found afresh from the cache each time, after an exponential backoff (``backoff_ms``
doubling up to ``backoff_max_ms``), at most ``attempts`` times in all; the last answer
is then returned.  Every other answer (success, fencing, INVALID_REQUEST, ...) is
returned at once.  Nothing raises for a Kafka error.
"""
from __future__ import annotations

import asyncio
import uuid
from collections.abc import Awaitable, Callable, Sequence
from typing import TYPE_CHECKING, Any

import structlog

from kafkapy.coordinator.share.coordinator import ShareCoordinator
from kafkapy.coordinator.share.persister import (
    UNKNOWN_DELIVERY_COMPLETE_COUNT,
    ShareState,
    StateBatch,
)
from kafkapy.coordinator.share.state import ShareKey
from kafkapy.network.client import SharedConnections
from kafkapy.network.links import Links
from kafkapy.protocol.errors import ErrorCode as E
from kafkapy.protocol.errors import KafkaError
from kafkapy.protocol.share_group_apis import (
    DeleteShareGroupStateRequest,
    InitializeShareGroupStateRequest,
    ReadShareGroupStateRequest,
    ReadShareGroupStateSummaryRequest,
    WriteShareGroupStateRequest,
)

if TYPE_CHECKING:   # annotations only
    from kafkapy.coordinator.share.service import ShareService
    from kafkapy.metadata.cache import BrokerEndpoint

_log = structlog.get_logger("kafkapy.coordinator.share.persister")

_RETRIED = {E.NOT_COORDINATOR, E.COORDINATOR_NOT_AVAILABLE, E.COORDINATOR_LOAD_IN_PROGRESS}
_NETWORK = (ConnectionError, asyncio.TimeoutError, OSError)

_Init = InitializeShareGroupStateRequest[0]
_Read = ReadShareGroupStateRequest[0]
_Write = WriteShareGroupStateRequest[1]
_Delete = DeleteShareGroupStateRequest[0]
_Summary = ReadShareGroupStateSummaryRequest[1]


class BrokerPersister:
    """See the module docstring.  ``service``: this broker's ``ShareService`` (its
    coordinator, the topic and the leaders); ``client_id`` names this broker's
    connections."""

    def __init__(self, service: ShareService, *, node_id: int,
                 request_timeout_ms: int = 30000, connect_timeout_ms: int = 10000,
                 attempts: int = 8, backoff_ms: int = 50, backoff_max_ms: int = 2000,
                 links: Links | None = None) -> None:
        """``links``: which share coordinators are reachable (None: all)."""
        self._service = service
        self._node_id = node_id
        self._request_timeout_s = request_timeout_ms / 1000
        self._attempts = attempts
        self._backoff_ms = backoff_ms
        self._backoff_max_ms = backoff_max_ms
        self._connections = SharedConnections(f"share-persister-{node_id}",
                                              connect_timeout_ms / 1000, self._request_timeout_s,
                                              links)

    @property
    def _coordinator(self) -> ShareCoordinator:
        return self._service.coordinator

    # -- Persister ----------------------------------------------------------------------
    async def initialize(self, group_id: str, topic_id: uuid.UUID, partition: int, *,
                         state_epoch: int, start_offset: int) -> int:
        key = ShareKey(group_id, topic_id, partition)
        answer = await self._call(
            key, lambda: self._coordinator.initialize(
                key, state_epoch=state_epoch, start_offset=start_offset),
            lambda: _Init(group_id=group_id, topics=[_Init.InitializeStateData(
                topic_id=topic_id, partitions=[_Init.InitializeStateData.PartitionData(
                    partition=partition, state_epoch=state_epoch,
                    start_offset=start_offset)])]),
            _result_answer)
        return answer[0]

    async def read(self, group_id: str, topic_id: uuid.UUID, partition: int, *,
                   leader_epoch: int) -> ShareState:
        key = ShareKey(group_id, topic_id, partition)
        return await self._call(
            key, lambda: self._coordinator.read(key, leader_epoch=leader_epoch),
            lambda: _Read(group_id=group_id, topics=[_Read.ReadStateData(
                topic_id=topic_id, partitions=[_Read.ReadStateData.PartitionData(
                    partition=partition, leader_epoch=leader_epoch)])]),
            _read_answer)

    async def write(self, group_id: str, topic_id: uuid.UUID, partition: int, *,
                    state_epoch: int, leader_epoch: int, start_offset: int,
                    batches: Sequence[StateBatch],
                    delivery_complete_count: int = UNKNOWN_DELIVERY_COMPLETE_COUNT) -> int:
        key = ShareKey(group_id, topic_id, partition)
        batches = tuple(batches)
        answer = await self._call(
            key, lambda: self._coordinator.write(
                key, state_epoch=state_epoch, leader_epoch=leader_epoch,
                start_offset=start_offset, batches=batches,
                delivery_complete_count=delivery_complete_count),
            lambda: _write_request(key, state_epoch, leader_epoch, start_offset, batches,
                                   delivery_complete_count),
            _result_answer)
        return answer[0]

    async def delete(self, group_id: str, topic_id: uuid.UUID, partition: int) -> int:
        key = ShareKey(group_id, topic_id, partition)
        answer = await self._call(
            key, lambda: self._coordinator.delete(key),
            lambda: _Delete(group_id=group_id, topics=[_Delete.DeleteStateData(
                topic_id=topic_id, partitions=[_Delete.DeleteStateData.PartitionData(
                    partition=partition)])]),
            _result_answer)
        return answer[0]

    async def read_summary(self, group_id: str, topic_id: uuid.UUID, partition: int, *,
                           leader_epoch: int) -> ShareState:
        key = ShareKey(group_id, topic_id, partition)
        data = _Summary.ReadStateSummaryData
        return await self._call(
            key, lambda: self._coordinator.read_summary(key),
            lambda: _Summary(group_id=group_id, topics=[data(
                topic_id=topic_id, partitions=[data.PartitionData(
                    partition=partition, leader_epoch=leader_epoch)])]),
            _summary_answer)

    def close(self) -> None:
        """Close every connection to other brokers."""
        self._connections.close()

    # -- routing --------------------------------------------------------------------------
    async def _call(self, key: ShareKey, local: Callable[[], Awaitable[Any]],
                    request: Callable[[], Any], parse: Callable[[Any], Any]):
        """``local()`` while this broker is the key's coordinator, else ``request()``
        sent to it: the request is built only then (a write's request of many batches
        costs more to build than the local write does)."""
        delay_ms = self._backoff_ms
        answer: Any = None
        for attempt in range(self._attempts):
            if attempt:
                await asyncio.sleep(delay_ms / 1000)
                delay_ms = min(delay_ms * 2, self._backoff_max_ms)
            code, node = self._route(key)
            if code:
                answer = _failed(parse, code, "no share coordinator for the key")
                continue
            if node.node_id == self._node_id:
                answer = await local()
            else:
                answer = await self._remote(node, request(), parse)
            if _code(answer) not in _RETRIED:
                return answer
        return answer

    def _route(self, key: ShareKey) -> tuple[int, BrokerEndpoint | None]:
        try:
            self._service.ensure_topic()
        except KafkaError:
            return E.COORDINATOR_NOT_AVAILABLE, None
        return self._service.node_of_partition(self._coordinator.partition_for(key))

    async def _remote(self, node: BrokerEndpoint, request, parse):
        try:
            conn = await self._connections.get(node.node_id, node.host, node.port)
            response = await conn.send(request, timeout_s=self._request_timeout_s)
        except _NETWORK as err:
            self._connections.drop(node.node_id)
            _log.debug("share state request failed", broker=node.node_id, error=str(err))
            return _failed(parse, E.COORDINATOR_NOT_AVAILABLE, str(err))
        return parse(response)


def _write_request(key: ShareKey, state_epoch: int, leader_epoch: int, start_offset: int,
                   batches: Sequence[StateBatch], delivery_complete_count: int):
    data = _Write.WriteStateData
    return _Write(group_id=key.group_id, topics=[data(
        topic_id=key.topic_id, partitions=[data.PartitionData(
            partition=key.partition, state_epoch=state_epoch, leader_epoch=leader_epoch,
            start_offset=start_offset, delivery_complete_count=delivery_complete_count,
            state_batches=[data.PartitionData.StateBatch(
                first_offset=b.first_offset, last_offset=b.last_offset,
                delivery_state=b.delivery_state, delivery_count=b.delivery_count)
                for b in batches])])])


def _code(answer) -> int:
    return answer.error if isinstance(answer, ShareState) else answer[0]


def _failed(parse, code: int, message: str):
    if parse is _result_answer:
        return code, message
    return ShareState(code, message=message)


def _only_partition(response):
    """The one partition result of a one-key answer."""
    results = response.results
    if len(results) != 1 or len(results[0].partitions) != 1:
        return None
    return results[0].partitions[0]


def _result_answer(response) -> tuple[int, str | None]:
    p = _only_partition(response)
    if p is None:
        return E.COORDINATOR_NOT_AVAILABLE, "an answer without the key"
    return p.error_code, p.error_message


def _read_answer(response) -> ShareState:
    p = _only_partition(response)
    if p is None:
        return ShareState(E.COORDINATOR_NOT_AVAILABLE, message="an answer without the key")
    if p.error_code:
        return ShareState(p.error_code, message=p.error_message)
    return ShareState(0, state_epoch=p.state_epoch, start_offset=p.start_offset,
                      batches=tuple(StateBatch(b.first_offset, b.last_offset,
                                               b.delivery_state, b.delivery_count)
                                    for b in p.state_batches))


def _summary_answer(response) -> ShareState:
    p = _only_partition(response)
    if p is None:
        return ShareState(E.COORDINATOR_NOT_AVAILABLE, message="an answer without the key")
    if p.error_code:
        return ShareState(p.error_code, message=p.error_message)
    return ShareState(0, state_epoch=p.state_epoch, start_offset=p.start_offset,
                      leader_epoch=p.leader_epoch,
                      delivery_complete_count=p.delivery_complete_count)
