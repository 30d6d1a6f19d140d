"""What the group and transaction coordinators share about their internal topics.

Both keep their state in a compacted internal topic (``__consumer_offsets``,
``__transaction_state``) created on first use, find the coordinator of a key
as the leader of the key's partition, and rebuild state at load by reading the
partition from its log start to its log end (not the high watermark, which may
lag after a crash, as Kafka does).
"""
from __future__ import annotations

from typing import Iterator

import structlog

from kafkapy.protocol.errors import ErrorCode, KafkaError
from kafkapy.records.batch import BatchHeader, iter_headers

_READ_CHUNK = 1 << 20
_log = structlog.get_logger("kafkapy.coordinator")


def ensure_internal_topic(broker, name: str, partitions: int, replication_factor: int,
                          configs: dict[str, str]) -> None:
    """Create the topic unless this broker's metadata cache has it, from any broker, as
    Kafka's ZooKeeper-mode auto topic creation does: the znodes are written and the
    controller brings the topic online; nothing waits for that.  The replication factor
    is the configured one: with fewer live brokers the creation fails
    (INVALID_REPLICATION_FACTOR), which the coordinators answer COORDINATOR_NOT_AVAILABLE,
    as Kafka does, until enough brokers are up."""
    if broker.cache.topic(name) is not None:
        return
    try:
        broker.admin.create_topic(name, partitions, replication_factor, configs=configs)
    except KafkaError as err:
        if err.code != ErrorCode.TOPIC_ALREADY_EXISTS:
            raise


def coordinator_node(broker, topic: str, partition: int):
    """(error, node): the BrokerEndpoint leading ``partition`` of ``topic``."""
    state = broker.cache.partition(topic, partition)
    node = broker.cache.brokers.get(state.leader) if state is not None else None
    local = broker.replica_manager.partitions.get((topic, partition))
    if node is None or (local is not None and local.log.offline):
        # An offline log dir leaves the partition without a leader, as in Kafka.
        return ErrorCode.COORDINATOR_NOT_AVAILABLE, None
    return 0, node


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
