"""A follower's Fetch sessions against a leader: the follower's settings and fetcher
manager, a connection that records what it sent and was answered, a topic to fetch."""
from __future__ import annotations

import asyncio
import time

from kafkapy.clock import SYSTEM_CLOCK
from kafkapy.metadata.cache import MetadataCache
from kafkapy.network.client import BrokerConnection
from kafkapy.replication.fetcher import Connect, ReplicaFetcherManager
from tests.support.request_fields import fields
from tests.support.wire import WireClient


TOPIC = "sessioned"


PARTITIONS = 4


FOLLOWER_CONFIG = {
    "replica.fetch.wait.max.ms": 200, "replica.fetch.min.bytes": 1,
    "replica.fetch.response.max.bytes": 10485760, "replica.fetch.max.bytes": 1048576,
    "replica.fetch.backoff.ms": 200, "replica.socket.timeout.ms": 30000,
    "num.replica.fetchers": 1,
}


def follower_fetchers(node_id: int, cache: MetadataCache, partitions: dict,
                      config: dict = FOLLOWER_CONFIG, *, broker_epoch: int = -1,
                      connect: Connect | None = None) -> ReplicaFetcherManager:
    """Broker ``node_id``'s fetcher manager over ``partitions`` (key -> Partition, what its
    replica manager would host), reaching the leaders at their PLAINTEXT endpoints in
    ``cache`` (or through ``connect``), on the system clock.  Nothing waits on a
    follower's high watermark here."""
    return ReplicaFetcherManager(
        node_id=node_id, broker_epoch=lambda: broker_epoch, config=config,
        clock=SYSTEM_CLOCK, cache=cache, listener="PLAINTEXT", partition_of=partitions.get,
        high_watermark_moved=lambda key: None, connect=connect)


class RecordingConnection:
    """A real BrokerConnection that keeps every (request, response) pair."""

    def __init__(self, conn: BrokerConnection) -> None:
        self._conn = conn
        self.exchanges: list = []

    @property
    def connected(self) -> bool:
        return self._conn.connected

    async def send(self, request, timeout_s=None):
        response = await self._conn.send(request, timeout_s=timeout_s)
        self.exchanges.append((request, response))
        return response

    def close(self) -> None:
        self._conn.close()


def _setup_topic(wire: WireClient, topic: str = TOPIC, partitions: int = PARTITIONS,
                 replicas: tuple[int, int] = (0, 1), timeout_ms: int = 10000,
                 attempts: int = 100):
    """CreateTopics with every partition on ``replicas``, then Metadata v12 until the
    first of them leads every partition: (topic id, {partition: leader epoch})."""
    response = wire.request(19, 7, **fields(19, topics=[dict(
        name=topic, num_partitions=-1, replication_factor=-1, configs=[],
        assignments=[dict(partition_index=i, broker_ids=list(replicas))
                     for i in range(partitions)])],
        timeout_ms=timeout_ms, validate_only=False))
    assert response.topics[0].error_code == 0, response
    for _ in range(attempts):
        response = wire.request(3, 12, **fields(3, topics=[dict(name=topic, topic_id=None)],
                                               allow_auto_topic_creation=False,
                                               include_topic_authorized_operations=False))
        [found] = response.topics
        if found.error_code == 0 and len(found.partitions) == partitions and all(
                p.leader_id == replicas[0] for p in found.partitions):
            return found.topic_id, {p.partition_index: p.leader_epoch for p in found.partitions}
        time.sleep(0.1)
    raise AssertionError(f"no leaders for {topic}: {response}")


async def _until(predicate, timeout_s: float = 20.0) -> None:
    deadline = time.monotonic() + timeout_s
    while not predicate():
        assert time.monotonic() < deadline, "condition not reached in time"
        await asyncio.sleep(0.05)


def _sent(request) -> set[int]:
    return {p.partition for t in request.topics for p in t.partitions}


def _answered(response) -> set[int]:
    return {p.partition_index for t in response.responses for p in t.partitions}
