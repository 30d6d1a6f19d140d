"""What the group and transaction coordinators share about their internal topics.

Both keep their state in a compacted internal topic (``__consumer_offsets``,
``__transaction_state``) created on first use, find the coordinator of a key
as the leader of the key's partition, and rebuild state at load by reading the
partition from its log start to its log end (not the high watermark, which may
lag after a crash, as Kafka does).  Their durable writes wait for the high watermark
through the replica manager (``replicated``).
"""
from __future__ import annotations

from typing import TYPE_CHECKING, Iterator

import structlog

from kafkapy.protocol.errors import ErrorCode, KafkaError
from kafkapy.records.batch import BatchHeader, iter_headers

if TYPE_CHECKING:   # annotations only
    from kafkapy.admin.manager import AdminManager
    from kafkapy.metadata.cache import BrokerEndpoint, MetadataCache
    from kafkapy.protocol.topic_partition import TopicPartition
    from kafkapy.replication.partition import AppendResult
    from kafkapy.replication.replica_manager import ReplicaManager

_READ_CHUNK = 1 << 20
_log = structlog.get_logger("kafkapy.coordinator")


def ensure_internal_topic(cache: MetadataCache, admin: AdminManager, name: str,
                          partitions: int, replication_factor: int,
                          configs: dict[str, str]) -> None:
    """Create the topic unless this broker's metadata cache has it, from any broker, as
    Kafka's ZooKeeper-mode auto topic creation does: the znodes are written and the
    controller brings the topic online; nothing waits for that.  The replication factor
    is the configured one: with fewer live brokers the creation fails
    (INVALID_REPLICATION_FACTOR), which the coordinators answer COORDINATOR_NOT_AVAILABLE,
    as Kafka does, until enough brokers are up."""
    if cache.topic(name) is not None:
        return
    try:
        admin.create_topic(name, partitions, replication_factor, configs=configs)
    except KafkaError as err:
        if err.code != ErrorCode.TOPIC_ALREADY_EXISTS:
            raise


def coordinator_node(cache: MetadataCache, replicas: ReplicaManager, topic: str,
                     partition: int) -> tuple[int, BrokerEndpoint | None]:
    """(error, node): the BrokerEndpoint leading ``partition`` of ``topic``."""
    state = cache.partition(topic, partition)
    node = cache.brokers.get(state.leader) if state is not None else None
    local = replicas.partitions.get((topic, partition))
    if node is None or (local is not None and local.log.offline):
        # An offline log dir leaves the partition without a leader, as in Kafka.
        return ErrorCode.COORDINATOR_NOT_AVAILABLE, None
    return 0, node


def replicated(replicas: ReplicaManager, key: TopicPartition, result: AppendResult,
               timeout_ms: int):
    """One coordinator write (``result`` its AppendResult) with acks=-1: its final error
    code, at once when it failed or the high watermark already covers it, else a future
    of it (REQUEST_TIMED_OUT at ``timeout_ms``)."""
    if result.error_code:
        return result.error_code
    topic, index = key
    return replicas.await_replication([(topic, index, result)], timeout_ms,
                                      lambda done: done[0][2].error_code)


def scan_batches(log, end: int | None = None) -> Iterator[tuple[bytes, BatchHeader]]:
    """Every batch of ``log`` up to ``end`` (its end offset by default), with the chunk
    holding it."""
    offset = log.log_start_offset
    end = log.log_end_offset if end is None else end
    while offset < end:
        chunk = log.read_bytes(offset, _READ_CHUNK, end, True)
        if not chunk:
            return
        for header in iter_headers(chunk):
            offset = header.next_offset
            yield chunk, header


class PartitionLoads:
    """Background loads of coordinator partitions: read off the loop, install on it.

    ``start`` reads ``log`` with ``read`` in an executor and hands the result to
    ``finish`` back on the event loop (``empty`` when the log is empty or the
    read failed); ``finish`` must itself ignore a partition it no longer serves.
    """

    def __init__(self, loop, what: str) -> None:
        self._loop = loop
        self._what = what
        self._tasks: set = set()

    def start(self, index: int, log, read, finish, empty) -> None:
        if log.log_end_offset == 0:
            finish(empty)
            return
        task = self._loop.create_task(self._run(index, log, read, finish, empty))
        self._tasks.add(task)
        task.add_done_callback(self._tasks.discard)

    async def _run(self, index: int, log, read, finish, empty) -> None:
        try:
            value = await self._loop.run_in_executor(None, read, log)
        except Exception:
            _log.exception("loading coordinator partition failed", topic=self._what,
                           partition=index)
            value = empty
        finish(value)

    def cancel(self) -> None:
        for task in self._tasks:
            task.cancel()
