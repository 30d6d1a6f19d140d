"""Broker start-to-ready: kafkapy in-process (``kafkapy.testing``) beside Apache Kafka 3.9.

What a test suite pays per fresh broker.  Every row starts a broker (or cluster) N times and
times from "start" to **ready**: the first moment the broker answers ApiVersions v0 with no
error *and* Metadata v1 lists every broker of the cluster and names a controller (one raw
request each over a fresh 127.0.0.1 socket, polled every 10 ms for child processes; the
in-process handles are probed once after their context manager entered, and polled if that
first probe is refused).  Stop time (context exit / SIGTERM until the process is gone) is
reported too.

Rows
- ``kafkapy in-process, async``: ``async with kafkapy.testing.broker()`` in this process's
  event loop (what ``async_kafka_broker`` does);
- ``kafkapy in-process, thread``: ``with broker()`` (background thread; the ``kafka_broker``
  fixture);
- ``kafkapy in-process cluster``: ``async with cluster(brokers=3)`` (one embedded metadata
  store shared in-process);
- ``kafkapy process``: ``python -m kafkapy config/server.properties`` (a new interpreter
  importing the broker), as ``tests/support/broker_process.py`` starts it;
- ``Kafka 3.9 KRaft``: ``bin/kafka-server-start.sh`` on Kafka's own
  ``config/kraft/server.properties`` (combined broker+controller, one node;
  ``bench/peers.py``'s ``KafkaBroker``); ``kafka-storage.sh format`` before each start is timed
  separately (column ``format``) and not included in start-to-ready;
- ``Kafka 3.9 ZK, 3 brokers``: three ``kafka-server-start.sh`` on Kafka's ZK-mode sample config
  (``bench/cluster.py``'s ``KafkaZkBroker``) launched together against an already running
  ZooKeeper (its start is not counted; a fresh chroot per run).

The first in-process start of a run also pays for importing the broker; it is run once before
the measured runs and reported on its own (``cold first start``).

Results: ``bench/results/startup-latest.md`` and ``.json``.  ``--runs`` (kafkapy rows, 20) and
``--kafka-runs`` (Kafka rows, 5: a JVM start is seconds), ``--skip-kafka``.  Invariants: every
listener is on 127.0.0.1; every file written is under a temporary work dir (removed after).
"""
from __future__ import annotations

import argparse
import asyncio
import json
import os
import shutil
import socket
import statistics
import struct
import subprocess
import sys
import tempfile
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))

from brokers import ROOT, KafkapyBroker  # noqa: E402

RESULTS = ROOT / "bench" / "results"
POLL_S = 0.01

# -- the readiness probe: raw ApiVersions v0 and Metadata v1 ---------------------------------


def _request(api_key: int, version: int, correlation_id: int, body: bytes) -> bytes:
    client = b"bench-startup"
    header = struct.pack(">hhih", api_key, version, correlation_id, len(client)) + client
    msg = header + body
    return struct.pack(">i", len(msg)) + msg


_API_VERSIONS = _request(18, 0, 1, b"")
_METADATA = _request(3, 1, 2, struct.pack(">i", -1))  # null topics: all


def _api_versions_ok(payload: bytes) -> bool:
    _corr, error = struct.unpack_from(">ih", payload, 0)
    return error == 0


def _metadata_brokers(payload: bytes) -> tuple[int, int]:
    """(number of brokers, controller id) of a Metadata v1 response body."""
    pos = 4  # correlation id
    (count,) = struct.unpack_from(">i", payload, pos)
    pos += 4
    for _ in range(count):
        pos += 4  # node id
        (host_len,) = struct.unpack_from(">h", payload, pos)
        pos += 2 + host_len + 4  # host, port
        (rack_len,) = struct.unpack_from(">h", payload, pos)
        pos += 2 + max(rack_len, 0)
    (controller,) = struct.unpack_from(">i", payload, pos)
    return count, controller


def _ready(api_payload: bytes, md_payload: bytes, brokers: int) -> bool:
    count, controller = _metadata_brokers(md_payload)
    return _api_versions_ok(api_payload) and count >= brokers and controller >= 0


def _recv_exact(sock: socket.socket, n: int) -> bytes:
    buf = b""
    while len(buf) < n:
        chunk = sock.recv(n - len(buf))
        if not chunk:
            raise ConnectionError("closed")
        buf += chunk
    return buf


def _roundtrip(sock: socket.socket, request: bytes) -> bytes:
    sock.sendall(request)
    (size,) = struct.unpack(">i", _recv_exact(sock, 4))
    return _recv_exact(sock, size)


def probe(port: int, brokers: int = 1) -> bool:
    """True when the broker on ``port`` is ready (see the module docstring)."""
    try:
        with socket.create_connection(("127.0.0.1", port), timeout=2.0) as s:
            return _ready(_roundtrip(s, _API_VERSIONS), _roundtrip(s, _METADATA), brokers)
    except (OSError, struct.error):
        return False


async def aprobe(port: int, brokers: int = 1) -> bool:
    """``probe`` in the event loop (the in-process broker runs in this same loop)."""
    try:
        reader, writer = await asyncio.wait_for(
            asyncio.open_connection("127.0.0.1", port), 2.0)
    except (OSError, asyncio.TimeoutError):
        return False
    try:
        payloads = []
        for req in (_API_VERSIONS, _METADATA):
            writer.write(req)
            (size,) = struct.unpack(">i", await asyncio.wait_for(reader.readexactly(4), 2.0))
            payloads.append(await asyncio.wait_for(reader.readexactly(size), 2.0))
        return _ready(payloads[0], payloads[1], brokers)
    except (OSError, asyncio.TimeoutError, asyncio.IncompleteReadError, struct.error):
        return False
    finally:
        writer.close()


def _wait(pred, timeout: float, what: str) -> None:
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        if pred():
            return
        time.sleep(POLL_S)
    raise RuntimeError(f"{what} not ready within {timeout}s")


async def _await(pred, timeout: float, what: str) -> None:
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        if await pred():
            return
        await asyncio.sleep(POLL_S)
    raise RuntimeError(f"{what} not ready within {timeout}s")


# -- one start of each kind: returns {"ready_ms": ..., "stop_ms": ..., extra...} -------------


async def _inprocess_async_once(n_brokers: int) -> dict:
    from kafkapy import testing

    t0 = time.perf_counter()
    manager = testing.broker() if n_brokers == 1 else testing.cluster(brokers=n_brokers)
    handle = await manager.__aenter__()
    try:
        ports = [handle.port] if n_brokers == 1 else [b.port for b in handle.brokers]
        await _await(lambda: aprobe(ports[0], n_brokers), 30, "in-process broker")
        for port in ports[1:]:
            await _await(lambda p=port: aprobe(p, 1), 30, "in-process broker")
        ready = time.perf_counter()
    finally:
        t_stop = time.perf_counter()
        await manager.__aexit__(None, None, None)
    return {"ready_ms": (ready - t0) * 1000, "stop_ms": (time.perf_counter() - t_stop) * 1000}


def inprocess_async(n_brokers: int) -> dict:
    return asyncio.run(_inprocess_async_once(n_brokers))


def inprocess_thread(n_brokers: int = 1) -> dict:
    from kafkapy import testing

    t0 = time.perf_counter()
    manager = testing.broker()
    handle = manager.__enter__()
    try:
        _wait(lambda: probe(handle.port, 1), 30, "in-process broker (thread)")
        ready = time.perf_counter()
    finally:
        t_stop = time.perf_counter()
        manager.__exit__(None, None, None)
    return {"ready_ms": (ready - t0) * 1000, "stop_ms": (time.perf_counter() - t_stop) * 1000}


def kafkapy_process(work: Path) -> dict:
    b = KafkapyBroker(work)
    b.work_dir.mkdir(parents=True, exist_ok=True)
    b.log_dir.mkdir(parents=True, exist_ok=True)
    t0 = time.perf_counter()
    b.launch()
    try:
        _wait(lambda: _alive_or_raise(b) and probe(b.port, 1), 60, "kafkapy process")
        ready = time.perf_counter()
    finally:
        t_stop = time.perf_counter()
        b.stop(30)
    return {"ready_ms": (ready - t0) * 1000, "stop_ms": (time.perf_counter() - t_stop) * 1000}


def _alive_or_raise(b) -> bool:
    if not b.alive():
        raise RuntimeError(f"{b.name} exited:\n{b.output_tail(3000)}")
    return True


def kafka_kraft(work: Path) -> dict:
    from peers import KafkaBroker

    b = KafkaBroker(work)
    b.work_dir.mkdir(parents=True, exist_ok=True)
    b.app_log_dir.mkdir(parents=True, exist_ok=True)
    tf = time.perf_counter()
    b.prepare_storage(120)
    format_ms = (time.perf_counter() - tf) * 1000
    t0 = time.perf_counter()
    b.launch()
    try:
        _wait(lambda: _alive_or_raise(b) and probe(b.port, 1), 120, "Kafka KRaft")
        ready = time.perf_counter()
    finally:
        t_stop = time.perf_counter()
        b.pid_is_java()
        b.stop(60)
        b.kill()
    return {"ready_ms": (ready - t0) * 1000, "stop_ms": (time.perf_counter() - t_stop) * 1000,
            "format_ms": format_ms}


def kafka_zk_cluster(work: Path, zk_connect: str, run: int) -> dict:
    from cluster import _kafka_zk_broker_class

    chroot = f"/startup-{run}"
    _ensure_znode(zk_connect, chroot)
    cls = _kafka_zk_broker_class()
    brokers = [cls(work / f"broker-{i}", i, zk_connect + chroot) for i in (1, 2, 3)]
    for b in brokers:
        b.work_dir.mkdir(parents=True, exist_ok=True)
        b.app_log_dir.mkdir(parents=True, exist_ok=True)
        b.prepare_storage(60)
    t0 = time.perf_counter()
    for b in brokers:
        b.launch()
    try:
        _wait(lambda: all(_alive_or_raise(b) for b in brokers) and probe(brokers[0].port, 3)
              and all(probe(b.port, 1) for b in brokers[1:]), 180, "Kafka ZK cluster")
        ready = time.perf_counter()
    finally:
        t_stop = time.perf_counter()
        for b in brokers:
            b.pid_is_java()
            b.stop(60)
            b.kill()
    return {"ready_ms": (ready - t0) * 1000, "stop_ms": (time.perf_counter() - t_stop) * 1000}


def _ensure_znode(connect: str, path: str) -> None:
    from kazoo.client import KazooClient

    zk = KazooClient(connect)
    zk.start(timeout=15)
    try:
        zk.ensure_path(path)
    finally:
        zk.stop()
        zk.close()


# -- driving and reporting -------------------------------------------------------------------


def _stats(samples: list[dict]) -> dict:
    out: dict = {"runs": len(samples)}
    for key in ("ready_ms", "stop_ms", "format_ms"):
        values = sorted(s[key] for s in samples if key in s)
        if values:
            out[key] = {"median": statistics.median(values), "p95": _p95(values),
                        "min": values[0], "max": values[-1]}
    return out


def _p95(sorted_values: list[float]) -> float:
    """Nearest-rank 95th percentile (the max for fewer than 20 runs)."""
    rank = max(1, -(-95 * len(sorted_values) // 100))
    return sorted_values[rank - 1]


def _series(label: str, runs: int, once, log) -> dict:
    samples = []
    for i in range(runs):
        samples.append(once(i))
        log(f"  {label} #{i + 1}: ready {samples[-1]['ready_ms']:.1f} ms")
    return _stats(samples)


def run(args) -> dict:
    def log(msg: str) -> None:
        print(msg, file=sys.stderr, flush=True)

    import logging

    logging.disable(logging.WARNING)  # the brokers' own warnings are not the figure
    work_root = Path(tempfile.mkdtemp(prefix="bench-startup-"))
    rows: dict[str, dict] = {}
    doc = {"when": time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime()), "rows": rows,
           "host": {"cpus": os.cpu_count(), "python": sys.version.split()[0]},
           "git_commit": _git_commit()}
    try:
        log("cold first start (imports the broker)")
        t0 = time.perf_counter()
        first = inprocess_async(1)
        doc["cold_first_start_ms"] = first["ready_ms"]
        doc["cold_first_start_wall_ms"] = (time.perf_counter() - t0) * 1000
        rows["kafkapy in-process, async, 1 broker"] = _series(
            "in-process async", args.runs, lambda i: inprocess_async(1), log)
        rows["kafkapy in-process, thread, 1 broker"] = _series(
            "in-process thread", args.runs, lambda i: inprocess_thread(), log)
        rows["kafkapy in-process cluster, 3 brokers"] = _series(
            "in-process cluster", args.runs, lambda i: inprocess_async(3), log)
        rows["kafkapy process (python -m kafkapy), 1 broker"] = _series(
            "kafkapy process", args.process_runs,
            lambda i: kafkapy_process(work_root / f"kafkapy-{i}"), log)
        if not args.skip_kafka:
            _kafka_rows(args, rows, work_root, log, doc)
    finally:
        shutil.rmtree(work_root, ignore_errors=True)
    return doc


def _kafka_rows(args, rows: dict, work_root: Path, log, doc: dict) -> None:
    from peers import PeerUnavailable, find_kafka_home, kafka_version

    try:
        home = find_kafka_home()
    except PeerUnavailable as e:
        doc["kafka_unavailable"] = str(e)
        log(f"Kafka unavailable: {e}")
        return
    doc["kafka_version"] = kafka_version(home)
    rows["Kafka 3.9 KRaft (combined), 1 node"] = _series(
        "Kafka KRaft", args.kafka_runs, lambda i: kafka_kraft(work_root / f"kraft-{i}"), log)
    if args.kafka_cluster_runs <= 0:
        return
    from cluster import ClusterUnavailable, zookeeper_classpath

    sys.path.insert(0, str(ROOT))
    try:
        from tests.support.zookeeper_server import ZooKeeperServer
    finally:
        sys.path.remove(str(ROOT))
    try:
        classpath = zookeeper_classpath()
    except ClusterUnavailable as e:
        doc["kafka_cluster_unavailable"] = str(e)
        return
    (work_root / "zookeeper").mkdir()
    zk = ZooKeeperServer(work_root / "zookeeper", classpath=classpath)
    zk.start(timeout=60)
    try:
        rows["Kafka 3.9 ZooKeeper mode, 3 brokers"] = _series(
            "Kafka ZK cluster", args.kafka_cluster_runs,
            lambda i: kafka_zk_cluster(work_root / f"zk-cluster-{i}", zk.connect_string, i), log)
    finally:
        zk.stop()


def _git_commit() -> str | None:
    try:
        return subprocess.run(["git", "rev-parse", "--short", "HEAD"], cwd=ROOT, text=True,
                              capture_output=True, timeout=10).stdout.strip() or None
    except OSError:
        return None


def report(doc: dict) -> str:
    def ms(stats: dict, key: str, field: str) -> str:
        return f"{stats[key][field]:,.1f}" if key in stats else "–"

    lines = [
        "# Broker start-to-ready (`bench/bench_startup.py`)",
        "",
        f"Run {doc['when']} at commit {doc.get('git_commit')}, {doc['host']['cpus']} CPUs, "
        f"Python {doc['host']['python']}"
        + (f", {doc['kafka_version']}" if doc.get("kafka_version") else "") + ".",
        "",
        "Start-to-ready: from starting the broker (entering the context manager / launching the "
        "process) to its first ApiVersions v0 answer without error *and* a Metadata v1 answer "
        "listing every broker and a controller. Times in milliseconds.",
        "",
        "| broker | runs | ready median | ready p95 | ready min | ready max | stop median |"
        " format median |",
        "|---|---:|---:|---:|---:|---:|---:|---:|",
    ]
    for name, stats in doc["rows"].items():
        lines.append(f"| {name} | {stats['runs']} | {ms(stats, 'ready_ms', 'median')} | "
                     f"{ms(stats, 'ready_ms', 'p95')} | {ms(stats, 'ready_ms', 'min')} | "
                     f"{ms(stats, 'ready_ms', 'max')} | {ms(stats, 'stop_ms', 'median')} | "
                     f"{ms(stats, 'format_ms', 'median')} |")
    lines += [
        "",
        f"Cold first start in-process (includes importing the broker, not in the rows): "
        f"{doc['cold_first_start_ms']:,.1f} ms.",
        "",
        "Notes: p95 is nearest-rank (the max when fewer than 20 runs). `format` is Kafka's "
        "`kafka-storage.sh format` (a JVM of its own) before each KRaft start, not included in "
        "its start-to-ready. The Kafka ZooKeeper-mode cluster's ZooKeeper was already running "
        "(its start is not counted); the in-process kafkapy cluster needs none (one embedded "
        "metadata store shared in-process). Kafka runs with its start script's defaults "
        "(`-Xmx1G -Xms1G`, G1).",
    ]
    if doc.get("kafka_unavailable"):
        lines += ["", f"Kafka rows missing: {doc['kafka_unavailable']}"]
    return "\n".join(lines) + "\n"


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--runs", type=int, default=20, help="starts per in-process row")
    parser.add_argument("--process-runs", type=int, default=5,
                        help="starts of kafkapy as a process")
    parser.add_argument("--kafka-runs", type=int, default=5, help="Kafka KRaft starts")
    parser.add_argument("--kafka-cluster-runs", type=int, default=3,
                        help="Kafka 3-broker (ZooKeeper mode) starts; 0 skips")
    parser.add_argument("--skip-kafka", action="store_true")
    parser.add_argument("--out", type=Path, default=RESULTS / "startup-latest.md")
    args = parser.parse_args(argv)
    doc = run(args)
    text = report(doc)
    args.out.parent.mkdir(parents=True, exist_ok=True)
    args.out.write_text(text)
    args.out.with_suffix(".json").write_text(json.dumps(doc, indent=2) + "\n")
    print(text)
    return 0


if __name__ == "__main__":
    sys.exit(main())
