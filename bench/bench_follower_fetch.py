"""Follower fetch round bench: the CPU one replica fetch round costs a follower.

What it drives: a real ``ReplicaFetcherManager`` (one ``_LeaderFetcher``, real
``BrokerConnection`` over TCP on 127.0.0.1, real ``MetadataCache``, ``Partition`` and
``Log`` in a temp dir) following one partition from a fake leader.  The fake leader is
a separate process (``--serve``, a blocking socket loop) so its CPU is not counted: it
answers every Fetch v17 with a FetchResponse v17 carrying the next 64 KiB batch (63 x
1 KiB records of an idempotent producer, leader epoch 5) at the offset the request
asked, in an incremental fetch session (session id 1), high watermark = that batch's
end.  Each round is ``await manager.fetch_round()``: build, encode, write, wait, read,
decode, session bookkeeping, the follower append (segment write, indexes, producer
state, epoch cache), the high watermark.

What it reports: the follower's CPU per round in microseconds (``time.thread_time``:
the event loop's thread, split into user and system time; ``time.process_time``
beside it), median of ``--repeats`` runs of ``--rounds`` rounds; then one run with
each stage wrapped in a CPU-time accumulator (adds ~1 us per wrapped call) giving the
per-stage split: ``build`` (the Fetch request object), ``encode``, ``decode``, ``session`` (response_keys, handle_response),
``append`` (Partition.append_as_follower, of which ``log`` is Log.append_as_follower),
``apply`` (the rest of applying the answer) and ``rest`` (asyncio, socket reads and
writes, send/dispatch: what is left of the round).

Usage: python bench/bench_follower_fetch.py [--rounds N] [--repeats R] [--no-stages]
    [--chunks C] [--profile FILE] [--idle N]
(``--idle 100``: the follower also follows 100 more partitions of the topic that get
nothing, in the same fetch session: the cost that grows with the session.)
(``--chunks 4``: the leader writes each answer in 4 pieces, 0.2 ms apart, so the
follower reads it in several chunks as over a real network; default 1, one read.)
(uvloop, as the broker runs; the log goes to a temp dir removed at the end).
"""
from __future__ import annotations

import argparse
import asyncio
import contextlib
import os
import resource
import shutil
import socket
import statistics
import struct
import subprocess
import sys
import tempfile
import time
import uuid

sys.path.insert(0, os.path.dirname(os.path.dirname(os.path.abspath(__file__))))

from kafkapy.clock import SYSTEM_CLOCK  # noqa: E402
from kafkapy.log.log import Log  # noqa: E402
from kafkapy.metadata.cache import (BrokerEndpoint, MetadataCache, PartitionState,  # noqa: E402
                                    TopicMetadata)
from kafkapy.network import client  # noqa: E402
from kafkapy.protocol.headers import peek_api, read_request_header  # noqa: E402
from kafkapy.protocol.messages import REQUESTS, RESPONSES  # noqa: E402
from kafkapy.records.record import build_batch  # noqa: E402
from kafkapy.replication import fetcher as fetcher_module  # noqa: E402
from kafkapy.replication.fetch_session_handler import FetchSessionHandler  # noqa: E402
from kafkapy.replication.partition import Partition  # noqa: E402
from kafkapy.log import log as log_module  # noqa: E402

TOPIC = "bench"
TOPIC_ID = uuid.UUID("6f1c1a2e-3b4d-4e5f-8a9b-0c1d2e3f4a5b")
EPOCH = 5
RECORDS = 63
VALUE = b"x" * 1024
TS = 1_700_000_000_000
_THREAD = getattr(resource, "RUSAGE_THREAD", resource.RUSAGE_SELF)
CONFIG = {"replica.fetch.wait.max.ms": 500, "replica.fetch.min.bytes": 1,
          "replica.fetch.response.max.bytes": 10485760, "replica.fetch.max.bytes": 1048576,
          "replica.fetch.backoff.ms": 1000, "replica.socket.timeout.ms": 30000,
          "num.replica.fetchers": 1}


# -- the fake leader (its own process) ------------------------------------------------------
def _batch(base_offset: int) -> bytes:
    return build_batch([(None, VALUE, [], TS + i) for i in range(RECORDS)],
                       base_offset=base_offset, producer_id=1000, producer_epoch=0,
                       base_sequence=base_offset % (2**31), partition_leader_epoch=EPOCH)


def _response(correlation_id: int, fetch_offset: int, idle: list[int]) -> bytes:
    """The next batch of partition 0 at ``fetch_offset``, and an empty answer for each of
    the ``idle`` partitions (named only in a full fetch: an incremental answer leaves
    out a partition with nothing new)."""
    cls = RESPONSES[1][17]
    resp = cls.FetchableTopicResponse
    part = resp.PartitionData
    batch = _batch(fetch_offset)
    quiet = [part(partition_index=index, error_code=0, high_watermark=0, last_stable_offset=0,
                  log_start_offset=0, aborted_transactions=None, preferred_read_replica=-1,
                  records=None) for index in idle]
    body = cls(throttle_time_ms=0, error_code=0, session_id=1, responses=[resp(
        topic_id=TOPIC_ID, partitions=[part(
            partition_index=0, error_code=0, high_watermark=fetch_offset + RECORDS,
            last_stable_offset=fetch_offset + RECORDS, log_start_offset=0,
            aborted_transactions=None, preferred_read_replica=-1, records=batch)] + quiet)],
        node_endpoints=[])
    payload = struct.pack(">i", correlation_id) + b"\x00" + bytes(body.encode())
    return struct.pack(">i", len(payload)) + payload


def _read_exactly(sock: socket.socket, n: int) -> bytes:
    buf = bytearray()
    while len(buf) < n:
        chunk = sock.recv(n - len(buf))
        if not chunk:
            raise EOFError
        buf += chunk
    return bytes(buf)


def serve(port_file: str, chunks: int) -> None:
    """Answer Fetch requests on one connection at a time until the client leaves; each
    answer written in ``chunks`` pieces 0.2 ms apart (as a 64 KiB answer reaches a
    follower over a real network: in several reads)."""
    listener = socket.socket()
    listener.bind(("127.0.0.1", 0))
    listener.listen(1)
    with open(port_file + ".tmp", "w") as f:
        f.write(str(listener.getsockname()[1]))
    os.rename(port_file + ".tmp", port_file)
    while True:
        sock, _ = listener.accept()
        sock.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)
        try:
            while True:
                size = struct.unpack(">i", _read_exactly(sock, 4))[0]
                frame = _read_exactly(sock, size)
                api_key, version, correlation_id = peek_api(frame)
                _, pos = read_request_header(memoryview(frame), api_key, version)
                request = REQUESTS[api_key][version].decode(memoryview(frame)[pos:])
                named = {p.partition: p.fetch_offset
                         for t in request.topics for p in t.partitions}
                if request.session_epoch > 1 and 0 not in named:
                    raise AssertionError("incremental fetch without the partition")
                idle = [index for index in named if index] if request.session_epoch <= 0 else []
                answer = _response(correlation_id, named.get(0, 0), idle)
                step = -(-len(answer) // chunks)
                for start in range(0, len(answer), step):
                    if start:
                        time.sleep(0.0002)
                    sock.sendall(answer[start:start + step])
        except (EOFError, ConnectionError):
            sock.close()


# -- the follower (this process) ------------------------------------------------------------
class Stages:
    """CPU-time accumulators around named callables (thread CPU time)."""

    def __init__(self) -> None:
        self.totals: dict[str, float] = {}
        self._undo: list = []

    def wrap(self, owner, attr: str, name: str) -> None:
        original = getattr(owner, attr)
        totals = self.totals
        totals.setdefault(name, 0.0)
        clock = time.thread_time
        if asyncio.iscoroutinefunction(original):
            raise TypeError(f"{attr} is a coroutine function")

        def timed(*args, **kwargs):
            start = clock()
            try:
                return original(*args, **kwargs)
            finally:
                totals[name] += clock() - start
        setattr(owner, attr, timed)
        self._undo.append((owner, attr, original))

    def undo(self) -> None:
        for owner, attr, original in reversed(self._undo):
            setattr(owner, attr, original)
        self._undo.clear()


def _follower(root: str, port: int, idle: int):
    """The follower of partition 0 and of ``idle`` more partitions of the topic that get
    nothing: (the fetcher manager, {key: partition})."""
    cache = MetadataCache("c", 1)
    endpoint = BrokerEndpoint(0, "127.0.0.1", port)
    cache.put_broker(endpoint, {"PLAINTEXT": endpoint})
    state = PartitionState(0, [0, 1, 2], 0, EPOCH, [0, 1, 2])
    cache.put_topic(TopicMetadata(TOPIC, TOPIC_ID, {i: state for i in range(idle + 1)}))
    partitions = {}
    for index in range(idle + 1):
        log = Log.load(os.path.join(root, f"{TOPIC}-{index}"), {}, SYSTEM_CLOCK)
        partitions[(TOPIC, index)] = partition = Partition(TOPIC, index, log, state, 1)
        partition.make_follower(state)
    manager = fetcher_module.ReplicaFetcherManager(
        node_id=1, broker_epoch=lambda: 77, config=CONFIG, clock=SYSTEM_CLOCK, cache=cache,
        listener="PLAINTEXT", partition_of=partitions.get,
        high_watermark_moved=lambda key: None, autostart=False)
    manager.add_partitions({key: (0, p.log.log_end_offset) for key, p in partitions.items()})
    return manager, partitions


async def _run(port: int, rounds: int, warmup: int, stages: Stages | None, idle: int = 0):
    root = tempfile.mkdtemp(prefix="bench-follower-")
    manager, partitions = _follower(root, port, idle)
    partition = partitions[(TOPIC, 0)]
    try:
        for _ in range(warmup):
            await manager.fetch_round()
        if stages is not None:
            _wrap_stages(stages)
        start_offset = partition.log.log_end_offset
        t0, p0, u0 = time.thread_time(), time.process_time(), resource.getrusage(_THREAD)
        for _ in range(rounds):
            await manager.fetch_round()
        thread_s, process_s = time.thread_time() - t0, time.process_time() - p0
        u1 = resource.getrusage(_THREAD)
        user_s, system_s = u1.ru_utime - u0.ru_utime, u1.ru_stime - u0.ru_stime
        if stages is not None:
            stages.undo()
        taken = partition.log.log_end_offset - start_offset
        if taken != rounds * RECORDS:
            raise AssertionError(f"took {taken} records in {rounds} rounds")
        return (thread_s / rounds * 1e6, process_s / rounds * 1e6, user_s / rounds * 1e6,
                system_s / rounds * 1e6)
    finally:
        await manager.shutdown()
        for each in partitions.values():
            each.log.close()
        shutil.rmtree(root, ignore_errors=True)


def _wrap_stages(stages: Stages) -> None:
    stages.wrap(fetcher_module._LeaderFetcher, "_build", "build")
    stages.wrap(client, "_encode", "encode")
    stages.wrap(client, "_decode", "decode")
    stages.wrap(FetchSessionHandler, "response_keys", "session")
    stages.wrap(FetchSessionHandler, "handle_response", "session")
    stages.wrap(fetcher_module._LeaderFetcher, "_apply_data", "apply")
    stages.wrap(Partition, "append_as_follower", "append")
    stages.wrap(log_module.Log, "append_as_follower", "log")


@contextlib.contextmanager
def fake_leader(chunks: int = 1):
    """The fake leader (``serve``) in a process of its own for the ``with`` block; gives
    its port."""
    workdir = tempfile.mkdtemp(prefix="bench-leader-")
    port_file = os.path.join(workdir, "port")
    leader = subprocess.Popen([sys.executable, os.path.abspath(__file__), "--serve", port_file,
                               "--chunks", str(chunks)])
    try:
        deadline = time.monotonic() + 30
        while not os.path.exists(port_file):     # written whole (renamed into place)
            if time.monotonic() > deadline or leader.poll() is not None:
                raise RuntimeError("the fake leader did not start")
            time.sleep(0.05)
        yield int(open(port_file).read())
    finally:
        leader.kill()
        leader.wait()
        shutil.rmtree(workdir, ignore_errors=True)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--rounds", type=int, default=2000)
    parser.add_argument("--repeats", type=int, default=5)
    parser.add_argument("--warmup", type=int, default=200)
    parser.add_argument("--no-stages", action="store_true")
    parser.add_argument("--profile", metavar="FILE",
                        help="also write a cProfile (CPU-time timer) of one run to FILE")
    parser.add_argument("--chunks", type=int, default=1,
                        help="the leader writes each answer in this many pieces")
    parser.add_argument("--idle", type=int, default=0,
                        help="more partitions in the fetch session that get nothing")
    parser.add_argument("--serve", metavar="PORT_FILE", help=argparse.SUPPRESS)
    args = parser.parse_args()
    if args.serve:
        serve(args.serve, args.chunks)
        return
    import uvloop  # optional dependency: the broker's event loop
    with fake_leader(args.chunks) as port:
        runs = [uvloop.run(_run(port, args.rounds, args.warmup, None, args.idle))
                for _ in range(args.repeats)]
        thread_us = statistics.median(r[0] for r in runs)
        process_us = statistics.median(r[1] for r in runs)
        user_us = statistics.median(r[2] for r in runs)
        system_us = statistics.median(r[3] for r in runs)
        print(f"round: {thread_us:7.1f} us thread CPU ({user_us:.0f} user, {system_us:.0f} "
              f"system), {process_us:7.1f} us process CPU (median of {args.repeats} x "
              f"{args.rounds} rounds; runs {', '.join(f'{r[0]:.0f}' for r in runs)})")
        if args.profile:
            import cProfile
            profiler = cProfile.Profile(time.thread_time)
            profiler.enable()
            uvloop.run(_run(port, args.rounds, args.warmup, None, args.idle))
            profiler.disable()
            profiler.dump_stats(args.profile)
        if not args.no_stages:
            stages = Stages()
            total, *_ = uvloop.run(_run(port, args.rounds, args.warmup, stages, args.idle))
            per = {k: v / args.rounds * 1e6 for k, v in stages.totals.items()}
            per["apply"] -= per["append"]
            per["append"] -= per["log"]
            per["rest"] = total - sum(per.values())
            print(f"stages (wrapped run, {total:.1f} us/round): " + ", ".join(
                f"{k} {v:.1f}" for k, v in per.items()))


if __name__ == "__main__":
    main()
