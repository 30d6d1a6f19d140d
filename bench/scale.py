"""Scale figures: cost per partition and per connection, kafkapy beside Kafka 3.9.

``make bench`` runs it with N = K = 10,000 (``bench/results/scale-latest.md`` / ``.json``).
One run starts each broker in turn on a free 127.0.0.1 port (kafkapy as
``python -m kafkapy config/server.properties --override ...`` with the embedded metadata store,
from a copy of its source taken at start, ``bench/brokers.py``'s ``KafkapyBroker``; Apache
Kafka 3.9 KRaft single node on its own sample config, ``bench/peers.py``'s ``KafkaBroker``)
and measures, in this order:

(e) ``conns``: K idle plain-TCP connections, each sending one ApiVersions v0 and reading the
    answer; broker RSS before/after, and a producer's throughput and p50/p99 delivery latency
    (100 B, 4-partition topic) before and while they are open.  Run first, on a broker with
    no big topic, so the RSS delta is the connections' cost alone.  The opener is paced: at
    most ``--conn-window`` connections (default 32) are connecting or waiting for their
    ApiVersions answer at once, a new one starts as one is answered.  Kafka's
    ``socket.listen.backlog.size`` is 50: an unpaced burst of connects overflows it and the
    client's SYN retries (1 s, 3 s, ...) then dominate the time, which measures the burst,
    not the broker (167 s for 10,000 before pacing).
(a) ``create``: CreateTopics of one topic with N partitions until Metadata lists a leader
    for every partition.  Kafka 3.9 KRaft refuses one CreateTopics of 10,000 partitions
    (POLICY_VIOLATION: QuorumController's 10,000 records per user operation): the topic is
    then created with N/2 partitions and CreatePartitions brings it to N, timed together;
    the report says so.
(b) ``produce``: 100 B records round-robin over all N partitions (confluent-kafka, a bounded
    count, acks=all), throughput and delivery p50/p99.
(d) ``metadata``: Metadata v1 for that topic over one connection, repeated; median/p99.
    ``list_offsets``: ListOffsets v1 (latest) for all N partitions, repeated; median/p99.
(c) ``restart``: clean stop (SIGTERM) then start, and kill -9 then start; seconds from spawn
    to listening and to Metadata showing all N partitions with a leader.  Kafka's restarts
    spawn the JVM again without ``kafka-storage.sh format`` (the data dir is formatted).

``--profile DIR`` (kafkapy only, no figures): py-spy (raw collapsed stacks, ``--nonblocking``)
on the create of N partitions and on the restart after kill -9, plus a summary of the top
functions (self and inclusive samples) in DIR/summary.txt.

Invariants: every wait is bounded (each phase by ``--phase-timeout``, each broker's whole run
by ``--broker-budget``; a phase that would start past the budget is skipped and reported);
every process started is stopped in ``finally`` (SIGTERM, then SIGKILL to its process group)
and every socket opened is closed.  A broker that cannot be had (no Kafka dir, no java) is
reported as unavailable; any other failure is reported and makes the exit status 1.
Results: ``--out`` (default ``bench/results/scale-latest``) ``.md`` and ``.json``.
"""
from __future__ import annotations

import argparse
import collections
import errno
import json
import os
import resource
import selectors
import shutil
import signal
import socket
import statistics
import struct
import subprocess
import sys
import tempfile
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))

from brokers import ROOT, KafkapyBroker, _ChildBroker, snapshot_source  # noqa: E402
from peers import KafkaBroker, PeerUnavailable  # noqa: E402
from procstats import read_status_kb, wait_until_quiet  # noqa: E402

PY = str(ROOT / ".venv" / "bin" / "python")
PYSPY = str(ROOT / ".venv" / "bin" / "py-spy")
TOPIC = "scale-big"
CONN_TOPIC = "scale-conn"
# Connections connecting or awaiting their ApiVersions answer at once: below Kafka's default
# socket.listen.backlog.size (50), so neither broker's accept backlog overflows.
CONN_WINDOW = 32
CONN_TIMEOUT_S = 10.0  # one connection: connect + ApiVersions answered, else counted failed


class BudgetExhausted(RuntimeError):
    """The broker's whole-run budget (``--broker-budget``) is spent."""


class Budget:
    """A deadline for one broker's run; each phase waits ``left(cap)`` at most."""

    def __init__(self, seconds: float) -> None:
        self.deadline = time.monotonic() + seconds

    def left(self, cap: float, need: str = "") -> float:
        remaining = self.deadline - time.monotonic()
        if remaining <= 1.0:
            raise BudgetExhausted(f"broker budget spent before {need or 'a phase'}")
        return min(cap, remaining)


def log(msg: str) -> None:
    print(f"[scale {time.strftime('%H:%M:%S')}] {msg}", file=sys.stderr, flush=True)


def raise_nofile() -> int:
    soft, hard = resource.getrlimit(resource.RLIMIT_NOFILE)
    if soft < hard:
        resource.setrlimit(resource.RLIMIT_NOFILE, (hard, hard))
    return resource.getrlimit(resource.RLIMIT_NOFILE)[0]


# -- raw protocol: ApiVersions v0, Metadata v1, ListOffsets v1 --------------------------------------------------


def _request(api_key: int, version: int, corr: int, body: bytes) -> bytes:
    client = b"bench-scale"
    msg = struct.pack(">hhih", api_key, version, corr, len(client)) + client + body
    return struct.pack(">i", len(msg)) + msg


API_VERSIONS = _request(18, 0, 1, b"")


def metadata_request(topic: str) -> bytes:
    name = topic.encode()
    return _request(3, 1, 2, struct.pack(">ih", 1, len(name)) + name)


def list_offsets_request(topic: str, n: int) -> bytes:
    """ListOffsets v1, replica -1, timestamp -1 (latest) for partitions 0..n-1 of ``topic``."""
    name = topic.encode()
    parts = b"".join(struct.pack(">iq", p, -1) for p in range(n))
    body = struct.pack(">iih", -1, 1, len(name)) + name + struct.pack(">i", n) + parts
    return _request(2, 1, 3, body)


def list_offsets_ok(payload: bytes, topic: str) -> tuple[int, int]:
    """(partitions of ``topic`` answered with no error, sum of their offsets) in a v1 answer."""
    pos = 4  # correlation id
    (nt,) = struct.unpack_from(">i", payload, pos)
    pos += 4
    ok = total = 0
    for _ in range(nt):
        (nl,) = struct.unpack_from(">h", payload, pos)
        name = payload[pos + 2:pos + 2 + nl].decode()
        pos += 2 + nl
        (np_,) = struct.unpack_from(">i", payload, pos)
        pos += 4
        for _ in range(np_):
            _pid, err, _ts, offset = struct.unpack_from(">ihqq", payload, pos)
            pos += 22
            if name == topic and err == 0 and offset >= 0:
                ok += 1
                total += offset
    return ok, total


def _recv_exact(sock: socket.socket, n: int) -> bytes:
    buf = bytearray()
    while len(buf) < n:
        chunk = sock.recv(n - len(buf))
        if not chunk:
            raise ConnectionError("closed")
        buf += chunk
    return bytes(buf)


def roundtrip(sock: socket.socket, req: bytes) -> bytes:
    sock.sendall(req)
    (size,) = struct.unpack(">i", _recv_exact(sock, 4))
    return _recv_exact(sock, size)


def leaders_known(payload: bytes, topic: str) -> int:
    """Partitions of ``topic`` with no error and a leader, in a Metadata v1 response."""
    pos = 4
    (n,) = struct.unpack_from(">i", payload, pos)
    pos += 4
    for _ in range(n):
        pos += 4
        (hl,) = struct.unpack_from(">h", payload, pos)
        pos += 2 + hl + 4
        (rl,) = struct.unpack_from(">h", payload, pos)
        pos += 2 + max(rl, 0)
    pos += 4  # controller
    (nt,) = struct.unpack_from(">i", payload, pos)
    pos += 4
    known = 0
    for _ in range(nt):
        terr, nl = struct.unpack_from(">hh", payload, pos)
        pos += 4
        name = payload[pos:pos + nl].decode()
        pos += nl + 1  # is_internal
        (np_,) = struct.unpack_from(">i", payload, pos)
        pos += 4
        for _ in range(np_):
            perr, _pid, leader = struct.unpack_from(">hii", payload, pos)
            pos += 10
            for _arr in range(2):  # replicas, isr
                (c,) = struct.unpack_from(">i", payload, pos)
                pos += 4 + 4 * max(c, 0)
            if name == topic and terr == 0 and perr == 0 and leader >= 0:
                known += 1
    return known


def wait_all_leaders(port: int, topic: str, n: int, timeout: float) -> float:
    """Poll Metadata until all ``n`` partitions have a leader; returns the monotonic time."""
    deadline = time.monotonic() + timeout
    req = metadata_request(topic)
    last = 0
    while time.monotonic() < deadline:
        try:
            with socket.create_connection(("127.0.0.1", port), timeout=5.0) as s:
                s.settimeout(max(1.0, min(30.0, deadline - time.monotonic())))
                while time.monotonic() < deadline:
                    last = leaders_known(roundtrip(s, req), topic)
                    if last >= n:
                        return time.monotonic()
                    time.sleep(0.02)
        except (OSError, struct.error, ConnectionError):
            time.sleep(0.05)
    raise RuntimeError(f"{topic}: {last}/{n} leaders known after {timeout}s")


def rss_mib(pid: int | None) -> float | None:
    if pid is None:
        return None
    try:
        return read_status_kb(pid).get("VmRSS", 0) / 1024
    except Exception:
        return None


def pct(values: list[float], p: float) -> float | None:
    if not values:
        return None
    s = sorted(values)
    return s[min(len(s) - 1, int(round(p / 100 * (len(s) - 1))))]


# -- phases ---------------------------------------------------------------------------------------


def create_topic(bootstrap: str, port: int, topic: str, n: int, timeout: float) -> dict:
    from confluent_kafka import KafkaError, KafkaException
    from confluent_kafka.admin import AdminClient, NewPartitions, NewTopic

    admin = AdminClient({"bootstrap.servers": bootstrap})
    t0 = time.monotonic()
    note = None
    try:
        admin.create_topics([NewTopic(topic, n, 1)], operation_timeout=timeout,
                            request_timeout=timeout)[topic].result(timeout)
    except KafkaException as e:
        # Kafka 3.9 KRaft refuses one user operation of more than 10,000 metadata records
        # (QuorumController MAX_RECORDS_PER_USER_OP): a topic of >= 10,000 partitions is
        # created with half the partitions, then CreatePartitions to n (timed together).
        if e.args[0].code() != KafkaError.POLICY_VIOLATION or n < 2:
            raise
        first = n // 2
        admin.create_topics([NewTopic(topic, first, 1)], operation_timeout=timeout,
                            request_timeout=timeout)[topic].result(timeout)
        admin.create_partitions([NewPartitions(topic, n)], operation_timeout=timeout,
                                request_timeout=timeout)[topic].result(timeout)
        note = (f"POLICY_VIOLATION for {n} in one CreateTopics: created {first} then "
                f"CreatePartitions to {n}")
    t_ack = time.monotonic()
    del admin
    t_ready = wait_all_leaders(port, topic, n, max(1.0, timeout - (t_ack - t0)))
    return {"partitions": n, "create_ack_s": t_ack - t0, "create_s": t_ready - t0,
            "note": note}


def produce(bootstrap: str, topic: str, partitions: int, count: int, timeout: float,
            rr: bool = True) -> dict:
    """``count`` 100 B records (round-robin over partitions); throughput and delivery p99."""
    from confluent_kafka import Producer

    p = Producer({"bootstrap.servers": bootstrap, "linger.ms": 5, "acks": "all",
                  "queue.buffering.max.messages": 1_000_000})
    value = b"x" * 100
    lat: list[float] = []
    errors = [0]

    def cb(err, _msg, t=None):
        if err is not None:
            errors[0] += 1

    t0 = time.monotonic()
    deadline = t0 + timeout
    sent = 0
    for i in range(count):
        if time.monotonic() > deadline:
            break
        ts = time.monotonic()
        while True:
            try:
                p.produce(topic, value, partition=(i % partitions) if rr else -1,
                          on_delivery=lambda e, m, ts=ts: (lat.append(time.monotonic() - ts),
                                                            cb(e, m)))
                break
            except BufferError:
                p.poll(0.01)
                if time.monotonic() > deadline:
                    break
        sent += 1
        if i % 1000 == 0:
            p.poll(0)
    left = p.flush(max(1.0, deadline - time.monotonic()))
    del p
    el = time.monotonic() - t0
    ok = len(lat) - errors[0]
    return {"records": count, "sent": sent, "delivered": ok, "errors": errors[0],
            "undelivered": left, "seconds": el, "records_per_s": ok / el,
            "mb_per_s": ok * 100 / el / 1e6,
            "p50_ms": (pct(lat, 50) or 0) * 1000, "p99_ms": (pct(lat, 99) or 0) * 1000}


def _repeat(port: int, req: bytes, reps: int, timeout: float) -> tuple[list[float], bytes]:
    """``req`` up to ``reps`` times over one connection (fewer if ``timeout`` runs out)."""
    lat: list[float] = []
    payload = b""
    deadline = time.monotonic() + timeout
    with socket.create_connection(("127.0.0.1", port), timeout=min(30.0, timeout)) as s:
        for _ in range(reps):
            left = deadline - time.monotonic()
            if left <= 0:
                break
            s.settimeout(max(0.1, min(30.0, left)))
            t0 = time.perf_counter()
            payload = roundtrip(s, req)
            lat.append(time.perf_counter() - t0)
    return lat, payload


def _latency(lat: list[float]) -> dict:
    return {"requests": len(lat),
            "median_ms": statistics.median(lat) * 1000 if lat else None,
            "p99_ms": pct(lat, 99) * 1000 if lat else None}


def metadata_latency(port: int, topic: str, n: int, reps: int, timeout: float) -> dict:
    lat, payload = _repeat(port, metadata_request(topic), reps, timeout)
    return dict(_latency(lat), partitions_in_response=leaders_known(payload, topic),
                response_bytes=len(payload))


def list_offsets_latency(port: int, topic: str, n: int, reps: int, timeout: float) -> dict:
    lat, payload = _repeat(port, list_offsets_request(topic, n), reps, timeout)
    ok, total = list_offsets_ok(payload, topic)
    return dict(_latency(lat), partitions_ok=ok, end_offsets_sum=total,
                response_bytes=len(payload))


class _Pending:
    """One connection on its way: connecting, then waiting for its ApiVersions answer."""

    __slots__ = ("sock", "t0", "sent", "buf")

    def __init__(self, sock: socket.socket) -> None:
        self.sock = sock
        self.t0 = time.monotonic()
        self.sent = False
        self.buf = bytearray()

    def answered(self) -> bool:
        return len(self.buf) >= 4 and len(self.buf) >= 4 + struct.unpack_from(">i", self.buf)[0]


def open_idle(port: int, k: int, timeout: float, window: int = CONN_WINDOW,
              conn_timeout: float = CONN_TIMEOUT_S) -> tuple[list[socket.socket], dict]:
    """K connections, each sends ApiVersions v0 and reads its answer; left open (idle).

    Paced: at most ``window`` connections are connecting or awaiting their answer at once;
    one that is not answered within ``conn_timeout`` s (or is refused/closed) is closed and
    counted failed.  Returns the answered sockets (the caller closes them) and the figures.
    """
    sel = selectors.DefaultSelector()
    pending: dict[socket.socket, _Pending] = {}
    socks: list[socket.socket] = []
    lat: list[float] = []
    started = failed = max_in_flight = 0
    t0 = time.monotonic()
    deadline = t0 + timeout

    def drop(p: _Pending) -> None:
        nonlocal failed
        failed += 1
        pending.pop(p.sock, None)
        try:
            sel.unregister(p.sock)
        except (KeyError, ValueError):
            pass
        p.sock.close()

    try:
        while (started < k or pending) and time.monotonic() < deadline:
            while started < k and len(pending) < window:
                started += 1
                s = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
                s.setblocking(False)
                rc = s.connect_ex(("127.0.0.1", port))
                if rc not in (0, errno.EINPROGRESS):
                    s.close()
                    failed += 1
                    continue
                p = _Pending(s)
                pending[s] = p
                sel.register(s, selectors.EVENT_WRITE, p)
            max_in_flight = max(max_in_flight, len(pending))
            for key, _mask in sel.select(timeout=max(0.0, min(0.2, deadline - time.monotonic()))):
                _step(key.data, sel, socks, lat, pending, drop)
            now = time.monotonic()
            for p in [p for p in pending.values() if now - p.t0 > conn_timeout]:
                drop(p)
    finally:
        for p in list(pending.values()):
            drop(p)
        sel.close()
    return socks, {"requested": k, "connect_failed": failed,
                   "answered": len(socks), "open_s": time.monotonic() - t0, "window": window,
                   "max_in_flight": max_in_flight,
                   "conn_median_ms": statistics.median(lat) * 1000 if lat else None,
                   "conn_p99_ms": pct(lat, 99) * 1000 if lat else None}


def _step(p: _Pending, sel, socks: list, lat: list, pending: dict, drop) -> None:
    """One readiness event of a pending connection: send its request or read its answer."""
    try:
        if not p.sent:
            if p.sock.getsockopt(socket.SOL_SOCKET, socket.SO_ERROR):
                drop(p)
                return
            if p.sock.send(API_VERSIONS) != len(API_VERSIONS):  # 29 bytes: never partial
                drop(p)
                return
            p.sent = True
            sel.modify(p.sock, selectors.EVENT_READ, p)
            return
        data = p.sock.recv(65536)
    except (BlockingIOError, InterruptedError):
        return
    except OSError:
        drop(p)
        return
    if not data:
        drop(p)
        return
    p.buf += data
    if p.answered():
        sel.unregister(p.sock)
        del pending[p.sock]
        socks.append(p.sock)
        lat.append(time.monotonic() - p.t0)


def still_open(socks: list[socket.socket]) -> int:
    """Connections the broker has not closed (no EOF readable)."""
    alive = 0
    for s in socks:
        try:
            s.setblocking(False)
            data = s.recv(1)
            alive += 1 if data else 0
        except BlockingIOError:
            alive += 1
        except OSError:
            pass
    return alive


# -- one broker through all phases --------------------------------------------------------------


def respawn(b, port: int, n: int, timeout: float) -> dict:
    """Spawn the broker process again (no storage format) and time listen and all-leaders."""
    if isinstance(b, KafkaBroker):
        b._java_pid = None
    t0 = time.monotonic()
    _ChildBroker.start(b, timeout)
    t_listen = time.monotonic()
    t_ready = wait_all_leaders(port, TOPIC, n, max(1.0, timeout - (t_listen - t0)))
    if isinstance(b, KafkaBroker):
        b.pid_is_java()
    return {"listen_s": t_listen - t0, "serve_s": t_ready - t0}


def hard_kill(b) -> None:
    pid = b.pid
    if isinstance(b, KafkaBroker):
        b.kill()
    elif pid is not None:
        os.kill(pid, signal.SIGKILL)
        b.proc.wait(30)


def _make_broker(kind: str, args, work: Path):
    if kind == "kafka":
        return KafkaBroker(work / "kafka")  # PeerUnavailable: no Kafka dir or no java
    src = None
    if not args.no_snapshot:  # edits to the work tree during the run cannot reach the broker
        src = Path(snapshot_source(work / "kafkapy-src")["dir"])
    return KafkapyBroker(work / "kafkapy", python=PY, source_dir=src)


def _conns_phase(kind: str, b, args, budget: Budget) -> dict:
    from confluent_kafka.admin import AdminClient, NewTopic

    t = budget.left(args.phase_timeout, "conns")
    admin = AdminClient({"bootstrap.servers": b.bootstrap})  # alive until result()
    admin.create_topics([NewTopic(CONN_TOPIC, 4, 1)], operation_timeout=min(30, t),
                        request_timeout=t)[CONN_TOPIC].result(t)
    del admin  # else its reconnects to the stopped broker go on for the whole run
    wait_all_leaders(b.port, CONN_TOPIC, 4, budget.left(60, "conns"))
    time.sleep(0.5)
    log(f"{kind}: producer without idle connections")
    base = produce(b.bootstrap, CONN_TOPIC, 4, args.conn_records,
                   budget.left(args.phase_timeout, "conns produce"), rr=False)
    rss0 = rss_mib(b.pid)
    log(f"{kind}: opening {args.conns} idle connections, <= {args.conn_window} at once")
    socks, info = open_idle(b.port, args.conns, budget.left(args.phase_timeout, "conns open"),
                            window=args.conn_window)
    try:
        log(f"{kind}: {info['answered']} answered in {info['open_s']:.1f}s")
        time.sleep(1.0)
        rss1 = rss_mib(b.pid)
        log(f"{kind}: producer with {len(socks)} idle connections")
        during = produce(b.bootstrap, CONN_TOPIC, 4, args.conn_records,
                         budget.left(args.phase_timeout, "conns produce"), rr=False)
        info["still_open_after_produce"] = still_open(socks)
        rss2 = rss_mib(b.pid)
    finally:
        for s in socks:
            s.close()
    per_conn = (rss1 - rss0) * 1024 / max(1, len(socks)) if rss0 and rss1 else None
    log(f"{kind}: conns RSS {fmt(rss0)} -> {fmt(rss1)} MiB")
    return dict(info, rss_before_mib=rss0, rss_open_mib=rss1, rss_after_produce_mib=rss2,
                rss_per_conn_kib=per_conn, produce_alone=base, produce_during=during)


def _phases(kind: str, b, args, budget: Budget, out: dict) -> None:
    """Every phase in order; each figure lands in ``out`` as soon as it is measured."""
    t0 = time.monotonic()
    b.start(budget.left(args.start_timeout, "start"))
    out["start_s"] = time.monotonic() - t0
    out["describe"] = b.describe()
    out["describe"].pop("settings", None)
    port, n = b.port, args.partitions
    if args.conns:
        out["conns"] = _conns_phase(kind, b, args, budget)
    log(f"{kind}: create {n} partitions")
    out["create"] = create_topic(b.bootstrap, port, TOPIC, n,
                                 budget.left(args.phase_timeout, "create"))
    out["rss_after_create_mib"] = rss_mib(b.pid)
    log(f"{kind}: create {out['create']['create_s']:.2f}s; produce {args.records}")
    out["produce"] = produce(b.bootstrap, TOPIC, n, args.records,
                             budget.left(args.phase_timeout, "produce"))
    log(f"{kind}: produce {out['produce']['records_per_s']:.0f} rec/s; Metadata, ListOffsets")
    out["metadata"] = metadata_latency(port, TOPIC, n, args.metadata_reps,
                                       budget.left(args.phase_timeout, "metadata"))
    out["list_offsets"] = list_offsets_latency(port, TOPIC, n, args.metadata_reps,
                                               budget.left(args.phase_timeout, "list_offsets"))
    out["rss_before_restart_mib"] = rss_mib(b.pid)
    log(f"{kind}: clean stop + restart")
    t0 = time.monotonic()
    b.stop(budget.left(args.phase_timeout, "clean stop"))
    stop_s = time.monotonic() - t0
    out["restart_clean"] = dict(respawn(b, port, n, budget.left(args.phase_timeout, "restart")),
                                stop_s=stop_s)
    time.sleep(1.0)
    log(f"{kind}: kill -9 + restart")
    budget.left(args.phase_timeout, "kill -9 restart")
    hard_kill(b)
    out["restart_kill9"] = respawn(b, port, n, budget.left(args.phase_timeout, "restart"))
    out["rss_after_restart_mib"] = rss_mib(b.pid)
    log(f"{kind}: done {out['restart_kill9']}")


def _stop_all(b) -> None:
    """SIGTERM then SIGKILL to the broker's process group (its own session): nothing left."""
    if b is None or b.proc is None:
        return
    try:
        b.stop(30)
    except Exception:  # noqa: BLE001 - the kill below still runs
        pass
    if b.alive():
        b.kill()
    try:
        os.killpg(b.proc.pid, signal.SIGKILL)  # a child the broker may have left
    except (ProcessLookupError, PermissionError):
        pass


def run_broker(kind: str, args, work: Path) -> dict:
    out: dict = {"kind": kind, "status": "ok"}
    b = None
    t_start = time.monotonic()
    try:
        if args.wait_quiet > 0:
            out["quiet"] = wait_until_quiet(args.wait_quiet, log=log)
        budget = Budget(args.broker_budget)
        b = _make_broker(kind, args, work)
        _phases(kind, b, args, budget, out)
    except PeerUnavailable as e:
        out.update(status="unavailable", error=str(e))
        log(f"{kind}: unavailable: {e}")
    except BudgetExhausted as e:  # too slow is a result, not a crash: the figures so far stand
        out.update(status="incomplete", error=str(e))
        log(f"{kind}: {e}")
    except Exception as e:  # noqa: BLE001 - record and go on to the next broker
        out.update(status="failed", error=f"{type(e).__name__}: {e}",
                   output_tail=b.output_tail(3000) if b is not None else "")
        log(f"{kind}: FAILED {out['error']}")
    finally:
        _stop_all(b)
    out["wall_s"] = time.monotonic() - t_start
    return out


# -- profiling (kafkapy only) -------------------------------------------------------------------


class _SpyBroker(KafkapyBroker):
    """kafkapy started under ``py-spy record`` (SIGINT to the group writes the profile)."""

    spy_out: Path | None = None

    def command(self) -> list[str]:
        cmd = super().command()
        if self.spy_out is None:
            return cmd
        return [PYSPY, "record", "--nonblocking", "-r", "200", "-f", "raw",
                "-o", str(self.spy_out), "--"] + cmd


def _stop_spy(proc: subprocess.Popen, timeout: float = 60.0) -> None:
    try:
        os.killpg(proc.pid, signal.SIGINT)
        proc.wait(timeout)
    except (ProcessLookupError, subprocess.TimeoutExpired):
        try:
            os.killpg(proc.pid, signal.SIGKILL)
        except ProcessLookupError:
            pass
        proc.wait(10)


def summarize(raw: Path, top: int = 25) -> str:
    self_c: collections.Counter = collections.Counter()
    incl: collections.Counter = collections.Counter()
    total = 0
    for line in raw.read_text(errors="replace").splitlines():
        stack, _, cnt = line.rpartition(" ")
        if not cnt.isdigit():
            continue
        c = int(cnt)
        total += c
        frames = [f.split(" (", 1)[0] + " (" + f.split(" (", 1)[1].rsplit(":", 1)[0] + ")"
                  if " (" in f else f for f in stack.split(";")]
        if frames:
            self_c[frames[-1]] += c
        for f in set(frames):
            incl[f] += c
    lines = [f"{raw.name}: {total} samples (200 Hz)", "", "self:"]
    lines += [f"  {c / total * 100:5.1f}%  {f}" for f, c in self_c.most_common(top)]
    lines += ["", "inclusive:"]
    lines += [f"  {c / total * 100:5.1f}%  {f}" for f, c in incl.most_common(top * 2)]
    return "\n".join(lines)


def profile(args, work: Path) -> None:
    pdir = Path(args.profile)
    pdir.mkdir(parents=True, exist_ok=True)
    n = args.partitions
    b = _SpyBroker(work / "spy", python=PY)
    summaries = []
    try:
        b.spy_out = pdir / f"create-{n}.raw"
        b.start(args.start_timeout)
        t = create_topic(b.bootstrap, b.port, TOPIC, n, args.phase_timeout)
        log(f"profile create (under py-spy): {t}")
        produce(b.bootstrap, TOPIC, n, min(args.records, 50_000), args.phase_timeout)
        _stop_spy(b.proc)
        summaries.append(summarize(b.spy_out))
        # a plain start, then kill -9, then a start under py-spy until all leaders are known
        b.spy_out = None
        respawn(b, b.port, n, args.phase_timeout)
        hard_kill(b)
        b.spy_out = pdir / f"restart-kill9-{n}.raw"
        r = respawn(b, b.port, n, args.phase_timeout)
        log(f"profile restart after kill -9 (under py-spy): {r}")
        _stop_spy(b.proc)
        summaries.append(summarize(b.spy_out))
    finally:
        if b.proc is not None and b.proc.poll() is None:
            _stop_spy(b.proc)
    (pdir / "summary.txt").write_text("\n\n".join(summaries) + "\n")
    print("\n\n".join(summaries))


# -- report -------------------------------------------------------------------------------------


def _g(d: dict, *path):
    for p in path:
        if not isinstance(d, dict) or p not in d:
            return None
        d = d[p]
    return d


# (label, path in a broker's result, higher is better: True / False / None = not a ratio)
ROWS = [
    ("(a) create N partitions until all leaders known, s", ("create", "create_s"), False),
    ("(a) CreateTopics response, s", ("create", "create_ack_s"), False),
    ("(b) produce 100 B over all N partitions, records/s", ("produce", "records_per_s"), True),
    ("(b) produce delivery p50, ms", ("produce", "p50_ms"), False),
    ("(b) produce delivery p99, ms", ("produce", "p99_ms"), False),
    ("(c) clean stop (SIGTERM until exit), s", ("restart_clean", "stop_s"), False),
    ("(c) restart after clean stop: listening, s", ("restart_clean", "listen_s"), False),
    ("(c) restart after clean stop: Metadata all leaders, s", ("restart_clean", "serve_s"), False),
    ("(c) restart after kill -9: listening, s", ("restart_kill9", "listen_s"), False),
    ("(c) restart after kill -9: Metadata all leaders, s", ("restart_kill9", "serve_s"), False),
    ("(d) Metadata (N partitions) median, ms", ("metadata", "median_ms"), False),
    ("(d) Metadata (N partitions) p99, ms", ("metadata", "p99_ms"), False),
    ("(d) ListOffsets latest (N partitions) median, ms", ("list_offsets", "median_ms"), False),
    ("(d) ListOffsets latest (N partitions) p99, ms", ("list_offsets", "p99_ms"), False),
    ("RSS after create, MiB", ("rss_after_create_mib",), False),
    ("RSS after restart (kill -9), MiB", ("rss_after_restart_mib",), False),
    ("(e) RSS before K idle connections, MiB", ("conns", "rss_before_mib"), False),
    ("(e) RSS with K idle connections open, MiB", ("conns", "rss_open_mib"), False),
    ("(e) RSS per idle connection, KiB", ("conns", "rss_per_conn_kib"), False),
    ("(e) time to open K connections (paced, +ApiVersions each), s", ("conns", "open_s"), False),
    ("(e) one connection: connect + ApiVersions answered p99, ms", ("conns", "conn_p99_ms"),
     False),
    ("(e) connections answered / still open after produce",
     (("conns", "answered"), ("conns", "still_open_after_produce")), None),
    ("(e) producer alone, records/s", ("conns", "produce_alone", "records_per_s"), True),
    ("(e) producer with K idle open, records/s", ("conns", "produce_during", "records_per_s"),
     True),
    ("(e) producer alone, p50 ms", ("conns", "produce_alone", "p50_ms"), False),
    ("(e) producer with K idle open, p50 ms", ("conns", "produce_during", "p50_ms"), False),
    ("(e) producer alone, p99 ms", ("conns", "produce_alone", "p99_ms"), False),
    ("(e) producer with K idle open, p99 ms", ("conns", "produce_during", "p99_ms"), False),
]


def fmt(v) -> str:
    """A figure for the table: 3 significant digits below 100, thousands separators above."""
    if v is None:
        return "-"
    if isinstance(v, float):
        return f"{v:,.0f}" if abs(v) >= 100 else f"{v:.3g}" if abs(v) < 1 else f"{v:.2f}"
    return f"{v:,}" if isinstance(v, int) else str(v)


def ratio(kafkapy, kafka, higher_better: bool) -> float | None:
    """>1 always means kafkapy is worse: kafkapy/Kafka for times and sizes, Kafka/kafkapy
    for throughputs; None when either figure is missing or zero."""
    if not (isinstance(kafkapy, (int, float)) and isinstance(kafka, (int, float))
            and kafkapy and kafka):
        return None
    return kafka / kafkapy if higher_better else kafkapy / kafka


def table_row(label: str, path: tuple, higher_better: bool | None, kp: dict, kf: dict) -> str:
    if higher_better is None:  # a pair of counts, no ratio
        v1, v2 = (" / ".join(fmt(_g(d, *sub)) for sub in path) for d in (kp, kf))
        return f"| {label} | {v1} | {v2} | |"
    v1, v2 = _g(kp, *path), _g(kf, *path)
    r = ratio(v1, v2, higher_better)
    return f"| {label} | {fmt(v1)} | {fmt(v2)} | {'-' if r is None else f'{r:.2f}x'} |"


def notes(doc: dict) -> list[str]:
    """What a reader needs beside the table: fallbacks, pacing, skipped or failed brokers."""
    a = doc["args"]
    lines = [f"- (e) connections are opened paced: at most {a['conn_window']} connecting or "
             "awaiting their ApiVersions answer at once (Kafka's socket.listen.backlog.size is "
             "50; an unpaced burst overflows it and SYN retries dominate)."]
    for name, d in (("kafkapy", doc["brokers"].get("kafkapy", {})),
                    ("Kafka 3.9", doc["brokers"].get("kafka", {}))):
        if _g(d, "create", "note"):
            lines.append(f"- {name} (a): {d['create']['note']}; (a) times both requests "
                         "together.")
        for what, key in (("Metadata", "metadata"), ("ListOffsets", "list_offsets")):
            got = _g(d, key, "requests")
            if got is not None and got < a["metadata_reps"]:
                lines.append(f"- {name} (d): only {got} of {a['metadata_reps']} {what} requests "
                             "within the phase timeout.")
        lo, delivered = d.get("list_offsets"), _g(d, "produce", "delivered")
        if lo and (lo["partitions_ok"] < a["partitions"] or lo["end_offsets_sum"] != delivered):
            lines.append(f"- {name} (d): ListOffsets answered {lo['partitions_ok']} of "
                         f"{a['partitions']} partitions; end offsets sum "
                         f"{lo['end_offsets_sum']}, records delivered in (b) {delivered}.")
        if d.get("wall_s") is not None:
            busy = _g(d, "quiet", "busy_pct_before")
            lines.append(f"- {name}: whole run {d['wall_s']:.0f} s (status {d.get('status')})"
                         + (f"; machine {busy:.0f}% busy before its start." if busy is not None
                            else "."))
    return lines


def render(doc: dict) -> str:
    kp, kf = doc["brokers"].get("kafkapy", {}), doc["brokers"].get("kafka", {})
    a = doc["args"]
    lines = ["# Scale: kafkapy vs Apache Kafka 3.9", "",
             f"N = {a['partitions']:,} partitions, K = {a['conns']:,} idle connections, "
             f"{a['records']:,} records of 100 B over the N partitions; "
             f"{a['conn_records']:,} records for (e); {a['metadata_reps']} requests each for "
             f"(d). {doc['when']}, {doc['host']}. One run per figure.", "",
             "Command: `" + doc["command"] + "`", "",
             "Ratio: kafkapy/Kafka for times, sizes and latencies (lower is better for "
             "kafkapy); Kafka/kafkapy for throughputs (so >1 always means kafkapy is worse).",
             "", "| figure | kafkapy | Kafka 3.9 | ratio |", "|---|---:|---:|---:|"]
    lines += [table_row(label, path, hb, kp, kf) for label, path, hb in ROWS]
    lines += ["", "Notes:", ""] + notes(doc)
    for name, d in (("kafkapy", kp), ("Kafka 3.9", kf)):
        if d.get("status") == "unavailable":
            lines += ["", f"**{name} unavailable**: {d['error']}"]
        elif d.get("status") == "incomplete":
            lines += ["", f"**{name} incomplete** (--broker-budget): {d['error']}; the figures "
                      "after it are missing."]
        elif d.get("error"):
            lines += ["", f"**{name} failed**: {d['error']}", "", "```",
                      d.get("output_tail", "")[-1500:], "```"]
    return "\n".join(lines) + "\n"


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--partitions", "-N", type=int, default=10_000)
    ap.add_argument("--conns", "-K", type=int, default=10_000, help="0: skip (e)")
    ap.add_argument("--records", type=int, default=100_000, help="(b): over the N partitions")
    ap.add_argument("--conn-records", type=int, default=100_000, help="(e): each producer run")
    ap.add_argument("--conn-window", type=int, default=CONN_WINDOW,
                    help="(e): connections connecting/awaiting ApiVersions at once")
    ap.add_argument("--metadata-reps", type=int, default=50, help="(d): requests of each API")
    ap.add_argument("--phase-timeout", type=float, default=300.0)
    ap.add_argument("--start-timeout", type=float, default=120.0)
    ap.add_argument("--broker-budget", type=float, default=600.0,
                    help="seconds for one broker's whole run; later phases are skipped")
    ap.add_argument("--wait-quiet", type=float, default=60.0,
                    help="before each broker: wait up to SECS for the machine to be <15%% busy")
    ap.add_argument("--no-snapshot", action="store_true",
                    help="run the work tree's kafkapy, not a copy taken at start")
    ap.add_argument("--only", choices=["kafkapy", "kafka"])
    ap.add_argument("--profile", help="kafkapy only: py-spy profiles into this dir")
    ap.add_argument("--out", default=str(ROOT / "bench" / "results" / "scale-latest"))
    args = ap.parse_args(argv)
    nofile = raise_nofile()
    log(f"open files limit {nofile}")
    if args.conns + 100 > nofile:
        log(f"K={args.conns} needs more open files than {nofile}: lower -K or raise ulimit -n")
        return 2
    work = Path(tempfile.mkdtemp(prefix="kafkapy-scale-"))
    try:
        if args.profile:
            profile(args, work)
            return 0
        t0 = time.monotonic()
        brokers = {}
        for kind in ("kafkapy", "kafka"):
            if args.only and args.only != kind:
                continue
            brokers[kind] = run_broker(kind, args, work / kind)
        doc = {"when": time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime()),
               "host": f"{os.cpu_count()} CPUs, nofile {nofile}",
               "command": " ".join([".venv/bin/python", "bench/scale.py",
                                    *(sys.argv[1:] if argv is None else argv)]),
               "wall_s": time.monotonic() - t0, "args": vars(args), "brokers": brokers}
        out = Path(args.out)
        out.parent.mkdir(parents=True, exist_ok=True)
        out.with_suffix(".json").write_text(json.dumps(doc, indent=2, default=str) + "\n")
        out.with_suffix(".md").write_text(render(doc))
        print(render(doc))
        log(f"wrote {out.with_suffix('.md')} ({doc['wall_s']:.0f} s)")
        return 1 if any(b.get("status") == "failed" for b in brokers.values()) else 0
    finally:
        shutil.rmtree(work, ignore_errors=True)


if __name__ == "__main__":
    sys.exit(main())
