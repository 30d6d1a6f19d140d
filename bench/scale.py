"""Scale figures (issue 20): cost per partition and per connection, kafkapy beside Kafka 3.9.

One run starts each broker in turn on a free 127.0.0.1 port (kafkapy as
``python -m kafkapy config/server.properties --override ...`` with the embedded metadata store,
``bench/brokers.py``'s ``KafkapyBroker``; Apache Kafka 3.9 KRaft single node, ``bench/peers.py``'s
``KafkaBroker``) and measures, in this order:

(e) ``conns``: K idle plain-TCP connections, each sending one ApiVersions v0 and reading the
    answer; broker RSS before/after, and a producer's throughput and p99 delivery latency
    (100 B, 4-partition topic) before and while they are open.  Run first, on a broker with
    no big topic, so the RSS delta is the connections' cost alone.
(a) ``create``: CreateTopics of one topic with N partitions until Metadata lists a leader
    for every partition.
(b) ``produce``: 100 B records round-robin over all N partitions (confluent-kafka, a bounded
    count), throughput.
(d) ``metadata``: Metadata v1 for that topic over one connection, repeated; median/p99.
(c) ``restart``: clean stop (SIGTERM) then start, and kill -9 then start; seconds from spawn
    to listening and to Metadata showing all N partitions with a leader.  Kafka's restarts
    spawn the JVM again without ``kafka-storage.sh format`` (the data dir is formatted).

``--profile DIR`` (kafkapy only, no figures): py-spy (raw collapsed stacks, ``--nonblocking``)
on the create of N partitions and on the restart after kill -9, plus a summary of the top
functions (self and inclusive samples) in DIR/summary.txt.

Every wait is bounded; every process started is stopped in ``finally``.  Results: ``--out``
(default ``bench/results/scale-latest``) ``.md`` and ``.json``.
"""
from __future__ import annotations

import argparse
import collections
import json
import os
import resource
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

from brokers import ROOT, KafkapyBroker, _ChildBroker  # noqa: E402
from peers import KafkaBroker  # noqa: E402
from procstats import read_status_kb  # noqa: E402

PY = str(ROOT / ".venv" / "bin" / "python")
PYSPY = str(ROOT / ".venv" / "bin" / "py-spy")
TOPIC = "scale-big"
CONN_TOPIC = "scale-conn"


def log(msg: str) -> None:
    print(f"[scale {time.strftime('%H:%M:%S')}] {msg}", file=sys.stderr, flush=True)


def raise_nofile() -> int:
    soft, hard = resource.getrlimit(resource.RLIMIT_NOFILE)
    if soft < hard:
        resource.setrlimit(resource.RLIMIT_NOFILE, (hard, hard))
    return resource.getrlimit(resource.RLIMIT_NOFILE)[0]


# -- raw protocol: ApiVersions v0, Metadata v1 --------------------------------------------------


def _request(api_key: int, version: int, corr: int, body: bytes) -> bytes:
    client = b"bench-scale"
    msg = struct.pack(">hhih", api_key, version, corr, len(client)) + client + body
    return struct.pack(">i", len(msg)) + msg


API_VERSIONS = _request(18, 0, 1, b"")


def metadata_request(topic: str) -> bytes:
    name = topic.encode()
    return _request(3, 1, 2, struct.pack(">ih", 1, len(name)) + name)


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


def metadata_latency(port: int, topic: str, n: int, reps: int) -> dict:
    req = metadata_request(topic)
    lat = []
    with socket.create_connection(("127.0.0.1", port), timeout=30.0) as s:
        for _ in range(reps):
            t0 = time.perf_counter()
            payload = roundtrip(s, req)
            lat.append(time.perf_counter() - t0)
        known = leaders_known(payload, topic)
    return {"requests": reps, "partitions_in_response": known, "response_bytes": len(payload),
            "median_ms": statistics.median(lat) * 1000, "p99_ms": pct(lat, 99) * 1000}


def open_idle(port: int, k: int, timeout: float) -> tuple[list[socket.socket], dict]:
    """K connections, each sends ApiVersions v0 and reads its answer; left open (idle)."""
    socks: list[socket.socket] = []
    deadline = time.monotonic() + timeout
    t0 = time.monotonic()
    failed = 0
    for _ in range(k):
        if time.monotonic() > deadline:
            break
        try:
            s = socket.create_connection(("127.0.0.1", port), timeout=10.0)
            s.sendall(API_VERSIONS)
            socks.append(s)
        except OSError:
            failed += 1
    answered = 0
    for s in socks:
        try:
            s.settimeout(max(0.1, min(10.0, deadline - time.monotonic())))
            (size,) = struct.unpack(">i", _recv_exact(s, 4))
            _recv_exact(s, size)
            answered += 1
        except (OSError, ConnectionError, struct.error):
            pass
    return socks, {"requested": k, "connected": len(socks), "connect_failed": failed,
                   "answered": answered, "open_s": time.monotonic() - t0}


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


def run_broker(kind: str, args, work: Path) -> dict:
    out: dict = {"kind": kind}
    if kind == "kafkapy":
        b = KafkapyBroker(work / "kafkapy", python=PY)
    else:
        b = KafkaBroker(work / "kafka")
    try:
        t0 = time.monotonic()
        b.start(args.start_timeout)
        out["start_s"] = time.monotonic() - t0
        out["describe"] = b.describe()
        out["describe"].pop("settings", None)
        port = b.port
        if args.conns:
            from confluent_kafka.admin import AdminClient, NewTopic
            admin = AdminClient({"bootstrap.servers": b.bootstrap})  # alive until result()
            admin.create_topics([NewTopic(CONN_TOPIC, 4, 1)],
                                operation_timeout=30)[CONN_TOPIC].result(60)
            del admin  # else its reconnects to the stopped broker go on for the whole run
            wait_all_leaders(port, CONN_TOPIC, 4, 60)
            time.sleep(0.5)
            log(f"{kind}: producer without idle connections")
            base = produce(b.bootstrap, CONN_TOPIC, 4, args.conn_records, args.phase_timeout,
                           rr=False)
            rss0 = rss_mib(b.pid)
            log(f"{kind}: opening {args.conns} idle connections")
            socks, info = open_idle(port, args.conns, args.phase_timeout)
            try:
                time.sleep(1.0)
                rss1 = rss_mib(b.pid)
                log(f"{kind}: producer with {len(socks)} idle connections")
                during = produce(b.bootstrap, CONN_TOPIC, 4, args.conn_records,
                                 args.phase_timeout, rr=False)
                info["still_open_after_produce"] = still_open(socks)
                rss2 = rss_mib(b.pid)
            finally:
                for s in socks:
                    s.close()
            out["conns"] = dict(info, rss_before_mib=rss0, rss_open_mib=rss1,
                                rss_after_produce_mib=rss2,
                                rss_per_conn_kib=((rss1 - rss0) * 1024 / max(1, len(socks))
                                                  if rss0 and rss1 else None),
                                produce_alone=base, produce_during=during)
            log(f"{kind}: conns {out['conns']['rss_before_mib']:.0f} -> "
                f"{out['conns']['rss_open_mib']:.0f} MiB")
        n = args.partitions
        log(f"{kind}: create {n} partitions")
        out["create"] = create_topic(b.bootstrap, port, TOPIC, n, args.phase_timeout)
        out["rss_after_create_mib"] = rss_mib(b.pid)
        log(f"{kind}: create {out['create']['create_s']:.2f}s; produce {args.records}")
        out["produce"] = produce(b.bootstrap, TOPIC, n, args.records, args.phase_timeout)
        log(f"{kind}: produce {out['produce']['records_per_s']:.0f} rec/s; metadata")
        out["metadata"] = metadata_latency(port, TOPIC, n, args.metadata_reps)
        out["rss_before_restart_mib"] = rss_mib(b.pid)
        log(f"{kind}: clean stop + restart")
        t0 = time.monotonic()
        b.stop(args.phase_timeout)
        stop_s = time.monotonic() - t0
        out["restart_clean"] = dict(respawn(b, port, n, args.phase_timeout), stop_s=stop_s)
        time.sleep(1.0)
        log(f"{kind}: kill -9 + restart")
        hard_kill(b)
        out["restart_kill9"] = respawn(b, port, n, args.phase_timeout)
        out["rss_after_restart_mib"] = rss_mib(b.pid)
        log(f"{kind}: done {out['restart_kill9']}")
    except Exception as e:  # noqa: BLE001 - record and go on to the next broker
        out["error"] = f"{type(e).__name__}: {e}"
        out["output_tail"] = b.output_tail(3000)
        log(f"{kind}: FAILED {out['error']}")
    finally:
        b.stop(30)
        if b.alive():
            b.kill()
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


ROWS = [
    ("(a) create N partitions until all leaders known, s", ("create", "create_s"), False),
    ("(a) CreateTopics response, s", ("create", "create_ack_s"), False),
    ("(b) produce 100 B over all N partitions, records/s", ("produce", "records_per_s"), True),
    ("(b) produce delivery p99, ms", ("produce", "p99_ms"), False),
    ("(c) restart after clean stop: listening, s", ("restart_clean", "listen_s"), False),
    ("(c) restart after clean stop: Metadata all leaders, s", ("restart_clean", "serve_s"), False),
    ("(c) clean stop (SIGTERM until exit), s", ("restart_clean", "stop_s"), False),
    ("(c) restart after kill -9: listening, s", ("restart_kill9", "listen_s"), False),
    ("(c) restart after kill -9: Metadata all leaders, s", ("restart_kill9", "serve_s"), False),
    ("(d) Metadata (N partitions) median, ms", ("metadata", "median_ms"), False),
    ("(d) Metadata (N partitions) p99, ms", ("metadata", "p99_ms"), False),
    ("RSS after create, MiB", ("rss_after_create_mib",), False),
    ("RSS after restart (kill -9), MiB", ("rss_after_restart_mib",), False),
    ("(e) RSS before K idle connections, MiB", ("conns", "rss_before_mib"), False),
    ("(e) RSS with K idle connections open, MiB", ("conns", "rss_open_mib"), False),
    ("(e) RSS per idle connection, KiB", ("conns", "rss_per_conn_kib"), False),
    ("(e) time to open K connections (+ApiVersions), s", ("conns", "open_s"), False),
    ("(e) connections answered / still open after produce",
     ("conns", "answered"), None),
    ("(e) producer alone, records/s", ("conns", "produce_alone", "records_per_s"), True),
    ("(e) producer with K idle open, records/s", ("conns", "produce_during", "records_per_s"),
     True),
    ("(e) producer alone, p99 ms", ("conns", "produce_alone", "p99_ms"), False),
    ("(e) producer with K idle open, p99 ms", ("conns", "produce_during", "p99_ms"), False),
]


def _fmt(v) -> str:
    if v is None:
        return "-"
    if isinstance(v, float):
        return f"{v:,.0f}" if abs(v) >= 100 else f"{v:.3g}" if abs(v) < 1 else f"{v:.2f}"
    return f"{v:,}" if isinstance(v, int) else str(v)


def render(doc: dict) -> str:
    kp, kf = doc["brokers"].get("kafkapy", {}), doc["brokers"].get("kafka", {})
    a = doc["args"]
    lines = ["# Scale baseline: kafkapy vs Apache Kafka 3.9 (issue 20)", "",
             f"N = {a['partitions']:,} partitions, K = {a['conns']:,} idle connections, "
             f"{a['records']:,} records of 100 B over the N partitions; "
             f"{a['conn_records']:,} records for (e). {doc['when']}, {doc['host']}.", "",
             "Command: `" + doc["command"] + "`", "",
             "Ratio: kafkapy/Kafka for times, sizes and latencies (lower is better for "
             "kafkapy); Kafka/kafkapy for throughputs (so >1 always means kafkapy is worse).",
             "", "| figure | kafkapy | Kafka 3.9 | ratio |", "|---|---:|---:|---:|"]
    for label, path, higher_better in ROWS:
        v1, v2 = _g(kp, *path), _g(kf, *path)
        if higher_better is None:
            v1 = f"{_g(kp, 'conns', 'answered')} / {_g(kp, 'conns', 'still_open_after_produce')}"
            v2 = f"{_g(kf, 'conns', 'answered')} / {_g(kf, 'conns', 'still_open_after_produce')}"
            lines.append(f"| {label} | {v1} | {v2} | |")
            continue
        ratio = None
        if isinstance(v1, (int, float)) and isinstance(v2, (int, float)) and v1 and v2:
            ratio = v2 / v1 if higher_better else v1 / v2
        lines.append(f"| {label} | {_fmt(v1)} | {_fmt(v2)} | "
                     f"{'-' if ratio is None else f'{ratio:.2f}x'} |")
    for name, d in (("kafkapy", kp), ("Kafka", kf)):
        if d.get("error"):
            lines += ["", f"**{name} failed**: {d['error']}", "", "```",
                      d.get("output_tail", "")[-1500:], "```"]
    return "\n".join(lines) + "\n"


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--partitions", "-N", type=int, default=10_000)
    ap.add_argument("--conns", "-K", type=int, default=10_000)
    ap.add_argument("--records", type=int, default=200_000)
    ap.add_argument("--conn-records", type=int, default=100_000)
    ap.add_argument("--metadata-reps", type=int, default=50)
    ap.add_argument("--phase-timeout", type=float, default=300.0)
    ap.add_argument("--start-timeout", type=float, default=120.0)
    ap.add_argument("--only", choices=["kafkapy", "kafka"])
    ap.add_argument("--profile", help="kafkapy only: py-spy profiles into this dir")
    ap.add_argument("--out", default=str(ROOT / "bench" / "results" / "scale-latest"))
    args = ap.parse_args(argv)
    nofile = raise_nofile()
    log(f"open files limit {nofile}")
    work = Path(tempfile.mkdtemp(prefix="kafkapy-scale-"))
    try:
        if args.profile:
            profile(args, work)
            return 0
        brokers = {}
        for kind in ("kafkapy", "kafka"):
            if args.only and args.only != kind:
                continue
            brokers[kind] = run_broker(kind, args, work / kind)
        doc = {"when": time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime()),
               "host": f"{os.cpu_count()} CPUs, nofile {nofile}",
               "command": " ".join([".venv/bin/python", "bench/scale.py", *(argv or sys.argv[1:])]),
               "args": vars(args), "brokers": brokers}
        out = Path(args.out)
        out.with_suffix(".json").write_text(json.dumps(doc, indent=2, default=str) + "\n")
        out.with_suffix(".md").write_text(render(doc))
        print(render(doc))
        return 0 if not any(b.get("error") for b in brokers.values()) else 1
    finally:
        shutil.rmtree(work, ignore_errors=True)


if __name__ == "__main__":
    sys.exit(main())
