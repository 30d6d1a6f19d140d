"""The leader's CPU per follower fetch round in acks=all replication (RF 3), in-process.

One leader (broker 1) of one partition whose replicas are 1, 2 and 3, all in the ISR,
with the broker's real pieces: a LogManager in a temporary dir, the ReplicaManager
with its fetch and produce purgatories on one timing wheel, the fetch session cache,
and one real ``KafkaConnection`` per follower over a socketpair (so a follower's Fetch
goes through the listener's decode, the Fetch handler, and its answer through the
encoding, the zero-copy splice and ``os.sendfile``).  Each round:

1. ``append``: a 64 KiB batch (63 records of 1 KiB) is appended with acks=-1 through
   ``ReplicaManager.append_records`` (its DelayedProduce parks in the produce purgatory);
   the append wakes the fetch purgatory, where each follower's Fetch waits (``wake``:
   try_complete, the second read, the handler's answer, and the connection encoding and
   sending it, the records by sendfile: a parked fetch's answer is a ``LateAnswer``, sent
   inside the append);
2. ``answer``: the event loop runs what the append left to its callbacks (before answers
   were sent in place, the encoding and sending of each);
3. (untimed) the followers' sockets are drained;
4. ``fetch``: each follower sends its next incremental Fetch v17 at the new log end:
   decoded, handled, read (nothing new), its fetch offset recorded (the second one moves
   the high watermark and completes the produce), parked in the fetch purgatory.

A round is one batch and two follower fetch rounds.  CPU is ``time.thread_time`` of
the timed parts (the bench runs on one thread), reported per batch and per stage
(``wake`` is inside ``append``: ``append`` alone is the rest).  ``--digest`` hashes every
byte the followers receive (the session ids come from a seeded generator): the wire
bytes of two builds can be compared.  ``--profile FILE`` writes a cProfile (CPU-time
timer) of the timed rounds.  ``--idle N`` gives the topic N more partitions, led here
and followed by both followers, that receive nothing: each follower's first (full) fetch
puts them in its session, so every round's checks of the partitions its fetch does not
name (read only when something changed) and the session's walk also go over them, as in a
cluster where a follower's session holds quiet partitions.
On a shared machine the CPU time of the same code varies by half with what else runs
(caches, frequency); ``follower/append``, the follower stages' CPU over the append's (the
produce path, which changes of the follower path leave as it is), is the steadier figure
to compare builds by, best run side by side.

Usage: python bench/bench_replica_fetch.py [--rounds N] [--warmup N] [--repeat N]
       [--digest] [--profile FILE] [--idle N]
"""
from __future__ import annotations

import argparse
import asyncio
import cProfile
import hashlib
import os
import random
import socket
import sys
import tempfile
import time
import uuid
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

from kafkapy.clock import SYSTEM_CLOCK  # noqa: E402
from kafkapy.config.broker import BrokerConfig  # noqa: E402
from kafkapy.handlers import build_registry  # noqa: E402
from kafkapy.log.manager import LogManager  # noqa: E402
from kafkapy.metadata.cache import (BrokerEndpoint, MetadataCache, PartitionState,  # noqa: E402
                                    TopicMetadata)
from kafkapy.network.client import _encode  # noqa: E402
from kafkapy.network.connection import KafkaConnection  # noqa: E402
from kafkapy.protocol.messages import REQUESTS, RESPONSES  # noqa: E402
from kafkapy.purgatory.purgatory import Purgatory  # noqa: E402
from kafkapy.purgatory.timer import Timer  # noqa: E402
from kafkapy.records.record import build_batch  # noqa: E402
from kafkapy.replication.fetch_session import FetchManager, FetchSessionCache  # noqa: E402
from kafkapy.replication.replica_manager import PartitionChange, ReplicaManager  # noqa: E402
from tests.support.services import services  # noqa: E402

TOPIC = "bench"
TOPIC_ID = uuid.UUID(int=0xB3_0C_4)
LEADER, FOLLOWERS = 1, (2, 3)
RECORDS, RECORD_SIZE = 63, 1024
TS = 1_700_000_000_000
_STAGES = ("append", "wake", "answer", "fetch")
_Fetch = REQUESTS[1][17]
_FetchResponse = RESPONSES[1][17]


class _Listener:
    """What a KafkaConnection asks of its listener (``kafkapy.network.server``)."""

    def __init__(self, services) -> None:
        self.services = services
        self.apis = services.apis
        self.config = services.config
        self.max_request_bytes = 104857600
        self.max_inflight = 100
        self.zero_copy = True
        self.security_protocol = "PLAINTEXT"
        self.listener = "PLAINTEXT"
        self.authorizer_enabled = False
        self.request_quota = None

    @staticmethod
    def now() -> float:
        return time.monotonic()

    def connection_opened(self, conn) -> None:
        pass

    def connection_closed(self, conn) -> None:
        pass

    def unsupported_api_versions(self, correlation_id):
        raise AssertionError("the bench sends supported versions only")


class _Follower:
    """One follower's end: its socket, session and the Fetch it sends."""

    def __init__(self, node_id: int, conn: KafkaConnection, sock: socket.socket,
                 idle: int = 0) -> None:
        self.node_id = node_id
        self.conn = conn
        self.sock = sock
        self.idle = idle
        self.session_id = 0
        self.epoch = 0
        self.correlation_id = 0
        self.received = 0

    def frame(self, fetch_offset: int) -> bytes:
        """The follower's next Fetch v17 as a frame body: full while it has no session
        (partition 0 and the idle ones), then incremental (partition 0, which moved)."""
        self.correlation_id += 1
        partitions = [_Fetch.FetchTopic.FetchPartition(
            partition=0, current_leader_epoch=0, fetch_offset=fetch_offset,
            last_fetched_epoch=0, log_start_offset=0, partition_max_bytes=1048576)]
        if self.session_id == 0:
            partitions += [_Fetch.FetchTopic.FetchPartition(
                partition=index, current_leader_epoch=0, fetch_offset=0,
                last_fetched_epoch=-1, log_start_offset=0, partition_max_bytes=1048576)
                for index in range(1, self.idle + 1)]
        request = _Fetch(
            replica_id=self.node_id,
            replica_state=_Fetch.ReplicaState(replica_id=self.node_id,
                                              replica_epoch=100 + self.node_id),
            max_wait_ms=500, min_bytes=1, max_bytes=10485760, isolation_level=0,
            session_id=self.session_id, session_epoch=self.epoch,
            topics=[_Fetch.FetchTopic(topic=TOPIC, topic_id=TOPIC_ID, partitions=partitions)],
            forgotten_topics_data=[], rack_id="")
        return _encode(request, self.correlation_id, f"broker-{self.node_id}-fetcher-0")

    def drain(self, digest) -> bytes:
        """Everything the leader sent so far."""
        chunks = []
        while True:
            try:
                chunk = self.sock.recv(1 << 20)
            except BlockingIOError:
                break
            chunks.append(chunk)
        data = b"".join(chunks)
        self.received += len(data)
        if digest is not None:
            digest.update(data)
        return data


class Bench:
    def __init__(self, root: Path, loop, idle: int = 0) -> None:
        self.loop = loop
        self.idle = idle
        self.logs = LogManager([str(root)], SYSTEM_CLOCK, {})
        self.logs.load("cluster", LEADER)
        cache = MetadataCache("cluster", LEADER)
        for node in (LEADER, *FOLLOWERS):
            endpoint = BrokerEndpoint(node, "127.0.0.1", 9000 + node)
            cache.put_broker(endpoint, {"PLAINTEXT": endpoint})
        states = {index: PartitionState(index, [LEADER, *FOLLOWERS], LEADER, 0,
                                        [LEADER, *FOLLOWERS], controller_epoch=1)
                  for index in range(idle + 1)}
        cache.put_topic(TopicMetadata(TOPIC, TOPIC_ID, states))
        config = BrokerConfig.from_properties({"broker.id": str(LEADER)})
        self.replicas = ReplicaManager(self.logs, LEADER, lambda name: {}, cache=cache,
                                       config=config, clock=SYSTEM_CLOCK)
        self.timer = Timer(loop, SYSTEM_CLOCK)
        self.fetch_purgatory = Purgatory("Fetch", self.timer)
        self.replicas.attach_purgatories(self.fetch_purgatory,
                                         Purgatory("Produce", self.timer), loop)
        errors = self.replicas.become_leader_or_follower(
            LEADER, 1, [PartitionChange(TOPIC, TOPIC_ID, state, is_new=True)
                        for state in states.values()])
        assert set(errors.values()) == {0}, errors
        self.services = services(
            node_id=LEADER, config=config, clock=SYSTEM_CLOCK, cache=cache,
            replica_manager=self.replicas,
            fetch_manager=FetchManager(FetchSessionCache(1000, rng=random.Random(7))),
            apis=build_registry())
        self.listener = _Listener(self.services)
        self.followers: list[_Follower] = []
        self.batch = build_batch([(None, bytes([65 + i % 26]) * RECORD_SIZE, [], TS + i)
                                  for i in range(RECORDS)])
        self.wake_cpu = 0.0
        self._wrap_fetch_wake()

    def _wrap_fetch_wake(self) -> None:
        """Time the fetch purgatory's part of an append (its listener, on the partition's
        key, and the replica manager's check of the followers' key)."""
        listeners = self.replicas._append_listeners
        check = self.fetch_purgatory.check_and_complete

        def timed(key):
            started = time.thread_time()
            try:
                return check(key)
            finally:
                self.wake_cpu += time.thread_time() - started
        listeners[listeners.index(check)] = timed
        self.fetch_purgatory.check_and_complete = timed

    async def connect(self) -> None:
        for node in FOLLOWERS:
            leader_end, follower_end = socket.socketpair()
            for end in (leader_end, follower_end):
                end.setblocking(False)
                end.setsockopt(socket.SOL_SOCKET, socket.SO_SNDBUF, 4 << 20)
                end.setsockopt(socket.SOL_SOCKET, socket.SO_RCVBUF, 4 << 20)
            conn = KafkaConnection(self.listener, peer=f"127.0.0.1:{9000 + node}")
            await self.loop.connect_accepted_socket(lambda c=conn: c, leader_end)
            self.followers.append(_Follower(node, conn, follower_end, self.idle))

    @property
    def log_end(self) -> int:
        return self.replicas.partitions[(TOPIC, 0)].log.log_end_offset

    def append(self):
        """An acks=-1 append of one batch (a Produce's partition, as the handler passes it)."""
        data = _Data(bytes(self.batch))
        return self.replicas.append_records(
            [(TOPIC, data)], [None], required_acks=-1, timeout_ms=30000, produce_version=9,
            internal_topics_allowed=False, transactional_id=None, respond=lambda r: r)

    async def settle(self) -> None:
        for _ in range(3):
            await asyncio.sleep(0)

    async def open_sessions(self, digest) -> None:
        """Each follower's full fetch (epoch 0) creates its session; it then parks."""
        self.append()
        for f in self.followers:
            f.conn.data_received(f.frame(0))
        await self.settle()
        await asyncio.sleep(0.05)
        for f in self.followers:
            data = f.drain(digest)
            response = _decode_response(data)
            f.session_id, f.epoch = response.session_id, 1
            assert response.responses[0].partitions[0].high_watermark == 0, response
        end = self.log_end
        for f in self.followers:        # the produce completes once both have fetched
            f.conn.data_received(f.frame(end))
            f.epoch += 1
        await self.settle()

    async def rounds(self, count: int, digest=None, check: bool = False) -> dict:
        cpu = {"append": 0.0, "wake": 0.0, "answer": 0.0, "fetch": 0.0}
        clock = time.thread_time
        self.wake_cpu = 0.0
        for _ in range(count):
            t0 = clock()
            produce = self.append()
            t1 = clock()
            await self.settle()
            t2 = clock()
            end = self.log_end
            frames = []
            for f in self.followers:
                data = f.drain(digest)
                if check:
                    _check_answer(data, end)
                elif len(data) < len(self.batch):
                    raise AssertionError(f"follower {f.node_id} got {len(data)} bytes")
                frames.append(f.frame(end))
                f.epoch += 1
            t3 = clock()
            for f, frame in zip(self.followers, frames):
                f.conn.data_received(frame)
            await self.settle()
            t4 = clock()
            assert produce.done() and produce.result()[0][2].error_code == 0, produce
            cpu["append"] += t1 - t0
            cpu["answer"] += t2 - t1
            cpu["fetch"] += t4 - t3
        cpu["wake"] = self.wake_cpu
        cpu["append"] -= self.wake_cpu
        return cpu

    def close(self) -> None:
        for f in self.followers:
            f.conn.close()
            f.sock.close()
        self.logs.shutdown()


class _Data:
    """A Produce partition's data as the handler passes it: index and records."""

    __slots__ = ("index", "records")

    def __init__(self, records: bytes) -> None:
        self.index = 0
        self.records = records


def _decode_response(data: bytes):
    size = int.from_bytes(data[:4], "big")
    assert len(data) == 4 + size, (len(data), size)
    # header v1: correlation id, then tagged fields (none)
    assert data[8] == 0
    return _FetchResponse.decode(memoryview(data)[9:])


def _check_answer(data: bytes, end: int) -> None:
    """One answer: no error, the session's partition with one batch ending at ``end``."""
    response = _decode_response(data)
    assert response.error_code == 0, response
    (topic,) = response.responses
    (partition,) = topic.partitions
    assert partition.error_code == 0, partition
    records = bytes(partition.records)
    base = int.from_bytes(records[:8], "big")
    last_delta = int.from_bytes(records[23:27], "big")
    assert base + last_delta + 1 == end, (base, last_delta, end)


async def _run(args) -> None:
    loop = asyncio.get_running_loop()
    with tempfile.TemporaryDirectory(prefix="bench-replica-fetch-") as root:
        bench = Bench(Path(root), loop, args.idle)
        await bench.connect()
        digest = hashlib.sha256() if args.digest else None
        await bench.open_sessions(digest)
        await bench.rounds(args.warmup, digest, check=True)
        results = []
        for _ in range(args.repeat):
            if args.profile:
                profile = cProfile.Profile(time.thread_time)
                profile.enable()
            cpu = await bench.rounds(args.rounds, digest)
            if args.profile:
                profile.disable()
                profile.dump_stats(args.profile)
            results.append(cpu)
        await asyncio.sleep(0.05)
        for f in bench.followers:
            f.drain(digest)
        bench.close()
    best = min(results, key=lambda c: sum(c.values()))
    per = {k: best[k] / args.rounds * 1e6 for k in _STAGES}
    total = sum(per.values())
    print(f"rounds {args.rounds} x {args.repeat} (best), CPU us per batch "
          f"(2 follower rounds): total {total:.1f}")
    for name, value in per.items():
        print(f"  {name:7s} {value:8.1f}")
    print("  totals of each repeat: " + ", ".join(
        f"{sum(c[s] for s in _STAGES) / args.rounds * 1e6:.1f}" for c in results))
    print("  follower/append of each repeat: " + ", ".join(
        f"{(c['wake'] + c['answer'] + c['fetch']) / c['append']:.2f}" for c in results))
    if digest is not None:
        print(f"  digest of the followers' bytes: {digest.hexdigest()}")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--rounds", type=int, default=2000)
    parser.add_argument("--warmup", type=int, default=200)
    parser.add_argument("--repeat", type=int, default=3)
    parser.add_argument("--digest", action="store_true")
    parser.add_argument("--profile", metavar="FILE")
    parser.add_argument("--idle", type=int, default=0,
                        help="more partitions in the followers' sessions that get nothing")
    args = parser.parse_args()
    try:
        import uvloop   # the broker's loop (optional here)
        runner = uvloop.run
    except ImportError:
        runner = asyncio.run
    runner(_run(args))


if __name__ == "__main__":
    main()
