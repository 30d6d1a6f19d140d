"""Replicas of one partition on several 'brokers' in one process, stepped by the test.

Each ``Replica`` is one broker's real pieces: a LogManager over its own tmp dir (a
restart reloads the logs, recovery and the high-watermark checkpoint), a
ReplicaManager applying LeaderAndIsr as the handler does, the real Fetch and
ListOffsets handlers serving followers (requests and answers go through their wire
encoding), a FetchManager with its session cache, and a ReplicaFetcherManager whose
fetchers only run when the test calls ``fetch_round()``.  The test plays the
controller (``leader_and_isr``) and the producers (``produce``: an acks=1 append on
the leader).  Nothing waits: followers fetch with max_wait_ms = 0.
"""
from __future__ import annotations

import inspect
import uuid
from pathlib import Path

from kafkapy.clock import MockClock
from kafkapy.handlers import fetch as fetch_handler
from kafkapy.handlers import list_offsets as list_offsets_handler
from kafkapy.log.manager import LogManager
from kafkapy.metadata.cache import BrokerEndpoint, MetadataCache, PartitionState, TopicMetadata
from kafkapy.network.zero_copy import PartsResponse, ZeroCopyResponse
from kafkapy.protocol.messages import REQUESTS, RESPONSES
from kafkapy.records.record import build_batch
from kafkapy.replication.fetch_session import FetchManager, FetchSessionCache
from kafkapy.replication.fetcher import ReplicaFetcherManager
from kafkapy.replication.replica_manager import PartitionChange, ReplicaManager
from tests.support.services import context, services

TS = 1_700_000_000_000
TOPIC = "t"
TOPIC_ID = uuid.UUID(int=0xABCDEF)
_HANDLERS = {1: fetch_handler, 2: list_offsets_handler}
CONFIG = {
    "replica.fetch.wait.max.ms": 0, "replica.fetch.min.bytes": 1,
    "replica.fetch.response.max.bytes": 10485760, "replica.fetch.max.bytes": 1048576,
    "replica.fetch.backoff.ms": 1000, "replica.socket.timeout.ms": 30000,
    "fetch.max.bytes": 57671680, "num.replica.fetchers": 1,
}


class LocalConnection:
    """A follower's 'connection' to a leader replica: encode, decode and handle there (by
    the handler's own request decoder), encode the answer and decode it (by the request's
    own decoder, as ``BrokerConnection``)."""

    def __init__(self, cluster: "Cluster", leader_id: int) -> None:
        self._cluster = cluster
        self._leader_id = leader_id
        self.connected = True
        self.requests: list = []   # (decoded) requests the leader received
        self.answers: list = []    # the leader handler's answers, before encoding

    async def send(self, request, timeout_s=None):
        leader = self._cluster.replicas[self._leader_id]
        if not leader.running:
            self.connected = False
            raise ConnectionError(f"broker {self._leader_id} is down")
        key, version = request.API_KEY, request.API_VERSION
        handler = _HANDLERS[key]
        decoded = getattr(handler, "REQUEST_CLS", REQUESTS[key]).decode(
            bytes(request.encode()), version=version)
        self.requests.append(decoded)
        ctx = context(leader.services, key, version, correlation_id=len(self.requests),
                      client_id="follower", peer="local", listener="PLAINTEXT")
        response = handler.handle(ctx, decoded)
        if inspect.isawaitable(response):
            response = await response
        if isinstance(response, (ZeroCopyResponse, PartsResponse)):  # not a zero-copy context
            response = response.response
        self.answers.append(response)
        body = bytes(response.encode())
        # As BrokerConnection reads it: the request's own decoder first, else kafka-python.
        decode = getattr(request, "decode_response", None)
        decoded = decode(memoryview(body)) if decode is not None else None
        return decoded if decoded is not None else RESPONSES[key][version].decode(body)

    def close(self) -> None:
        self.connected = False


class Replica:
    def __init__(self, cluster: "Cluster", node_id: int, root: Path) -> None:
        self.cluster = cluster
        self.node_id = node_id
        self.dir = root / f"broker-{node_id}"
        self.running = False
        self.connections: list[LocalConnection] = []

    # -- life ----------------------------------------------------------------------------
    def start(self) -> "Replica":
        clock = self.cluster.clock
        self.logs = LogManager([str(self.dir)], clock, {})
        self.logs.load("cluster", self.node_id)
        cache = MetadataCache("cluster", self.node_id)
        for node in self.cluster.node_ids:
            endpoint = BrokerEndpoint(node, "127.0.0.1", 9000 + node)
            cache.put_broker(endpoint, {"PLAINTEXT": endpoint})
        self.cache = cache
        # Made before the replica manager, which gets them; they reach it through the
        # two callables (as the server wires them).
        self.fetchers = ReplicaFetcherManager(
            node_id=self.node_id, broker_epoch=lambda: 100 + self.node_id,
            config=self.cluster.config, clock=clock, cache=cache, listener="PLAINTEXT",
            partition_of=lambda key: self.replica_manager.partitions.get(key),
            high_watermark_moved=lambda key: self.replica_manager.appended(key),
            connect=self._connect, autostart=False)
        self.replica_manager = ReplicaManager(self.logs, self.node_id, lambda name: {},
                                              fetchers=self.fetchers,
                                              cache=cache, config=self.cluster.config)
        # What the leader's Fetch and ListOffsets handlers reach for a follower's request.
        self.services = services(node_id=self.node_id, config=self.cluster.config, clock=clock,
                                 cache=cache, replica_manager=self.replica_manager,
                                 fetch_manager=FetchManager(FetchSessionCache(1000)))
        self.running = True
        return self

    def stop(self) -> None:
        """A clean stop: the high watermarks and recovery points are checkpointed."""
        self.running = False
        self.fetchers.remove_partitions(list(self.replica_manager.partitions))
        self.logs.shutdown()

    async def _connect(self, leader_id: int) -> LocalConnection:
        conn = LocalConnection(self.cluster, leader_id)
        self.connections.append(conn)
        return conn

    # -- what the controller and clients do --------------------------------------------
    def leader_and_isr(self, leader: int, leader_epoch: int, isr: list[int],
                       is_new: bool = False, partitions=(0,)) -> dict:
        states = []
        for index in partitions:
            state = PartitionState(index, list(self.cluster.node_ids), leader, leader_epoch,
                                   list(isr), controller_epoch=1)
            states.append(state)
        # Partitions not named keep their metadata, as with the controller's UpdateMetadata.
        known = self.cache.topic(TOPIC)
        self.cache.put_topic(TopicMetadata(TOPIC, TOPIC_ID, {
            **(known.partitions if known is not None else {}),
            **{s.partition: s for s in states}}))
        return self.replica_manager.become_leader_or_follower(
            self.cluster.controller_id, 1,
            [PartitionChange(TOPIC, TOPIC_ID, s, is_new) for s in states])

    def partition(self, index: int = 0):
        return self.replica_manager.partitions[(TOPIC, index)]

    def produce(self, value: bytes, index: int = 0) -> int:
        """An acks=1 produce of one record; returns its offset."""
        batch = build_batch([(None, value, [], TS)])
        result = self.partition(index).append_as_leader(bytes(batch), 9)
        assert result.error_code == 0, result
        return result.base_offset

    async def fetch_round(self) -> None:
        await self.fetchers.fetch_round()

    async def fetch_rounds(self, count: int) -> None:
        for _ in range(count):
            await self.fetchers.fetch_round()

    # -- what the test reads back --------------------------------------------------------
    def records(self, index: int = 0) -> list[tuple[int, bytes]]:
        """(offset, value) of every record in the log, read from its files."""
        from kafka.record.default_records import DefaultRecordBatch
        log = self.partition(index).log
        raw = log.read_bytes(log.log_start_offset, 1 << 30)
        out, pos = [], 0
        while pos + 12 <= len(raw):
            size = int.from_bytes(raw[pos + 8:pos + 12], "big") + 12
            batch = DefaultRecordBatch(bytes(raw[pos:pos + size]))
            out.extend((r.offset, r.value) for r in batch)
            pos += size
        return out

    def log_bytes(self, index: int = 0) -> bytes:
        log = self.partition(index).log
        return bytes(log.read_bytes(log.log_start_offset, 1 << 30))


class Cluster:
    def __init__(self, root: Path, node_ids=(0, 1), controller_id: int = 0,
                 config: dict | None = None) -> None:
        self.clock = MockClock(TS)
        self.config = {**CONFIG, **(config or {})}
        self.node_ids = list(node_ids)
        self.controller_id = controller_id
        self.replicas = {n: Replica(self, n, root) for n in node_ids}

    def start(self, *node_ids) -> None:
        for n in node_ids or self.node_ids:
            self.replicas[n].start()

    def start_new(self, leader: int, partitions=(0,)) -> list[Replica]:
        """Start every replica and create ``partitions`` on each as the controller does:
        a first LeaderAndIsr (is_new, epoch 0) led by ``leader``, every replica in the
        ISR.  Returns the replicas in ``node_ids`` order."""
        self.start()
        for replica in self.replicas.values():
            replica.leader_and_isr(leader, 0, self.node_ids, is_new=True, partitions=partitions)
        return list(self.replicas.values())

    def shutdown(self) -> None:
        for replica in self.replicas.values():
            if replica.running:
                replica.stop()
