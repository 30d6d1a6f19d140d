"""``make bench``: throughput, latency, CPU and memory of kafkapy, Apache Kafka 3.9 and tansu.

The three brokers run one after another in the same invocation, interleaved per workload
(``bench/brokers.py``: kafkapy; ``bench/peers.py``: Kafka from ``<repo>/../shared/`` in
KRaft combined mode with its default 1 GiB heap, and tansu); ``--only`` picks one.

Workloads (names for ``--workloads``):

``1k``       1 KiB x 300,000 records, 1 partition, acks=all, linger.ms=5, batch.size=64 KiB
``100b``     100 B x 1,000,000 records, same producer settings
             Each: produce throughput (records/s, MiB/s) and per-record delivery latency
             p50/p99 from ``--producer-procs`` confluent-kafka processes splitting the records,
             then consume throughput reading the whole topic back with fresh assign()-only
             consumers (``--consumer-procs``, splitting the offset range).
``e2e``      end-to-end latency: one producer at ``--e2e-rate`` (1,000) records/s for
             ``--e2e-seconds`` (10) s, one long-polling consumer (fetch.wait.max.ms=500);
             produce->consume latency p50/p99 from a monotonic timestamp in the payload.
``rf3``      (3-broker clusters only: kafkapy3, kafka3) 1 KiB x 300,000 records to a
             topic with 3 partitions (one leader per broker), replication factor 3,
             min.insync.replicas=2, acks=all, idempotent producer (else the 1k settings);
             the report's "acks=all, replication factor 3" section puts the two clusters
             side by side with the kafkapy / Kafka ratio (and per-repetition pairs).
             Then, on the same cluster: the same producers on an RF 1 topic, and RF 3
             paced at half the RF 3 throughput (latency below saturation); kafkapy's
             brokers run with KAFKAPY_STAGE_TRACE and the section ends with the stage
             breakdown of one batch (``stage_breakdown.py``).
``sendfile`` (kafkapy only; hook) after each throughput workload, restart the broker on the
             same log dir with ``kafkapy.fetch.sendfile.enable=false`` and consume again.

For every phase the broker's CPU (% of one core) and RSS (``/proc/<pid>/status`` VmRSS sampled
every 50 ms; VmHWM) are recorded.  Each throughput workload gets a fresh broker (fresh temp
log dir) unless ``--shared-broker``.  The machine has 2 cores shared by broker and driver, so
the driver's CPU is reported too.  ``--profile`` samples the kafkapy broker with py-spy during
each phase and puts the hottest functions in the report (kafkapy3: broker 1, which leads one
partition and follows the other two).

Results: ``bench/results/latest.json`` and ``latest.md`` plus timestamped copies
(``bench/results/<UTC time>.json|md``).  ``--records-scale 0.1`` makes a quick run.
Exit code: 0 when every broker asked for produced numbers, 1 otherwise (the results are
written either way).
"""
from __future__ import annotations

import argparse
import datetime as _dt
import json
import multiprocessing as mp
import os
import platform
import queue as _queue
import shutil
import sys
import tempfile
import time
import traceback
from array import array
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))

import java_producer  # noqa: E402
import stage_breakdown  # noqa: E402
import workloads as wl  # noqa: E402
from brokers import ROOT, ExistingBroker, KafkapyBroker, snapshot_source  # noqa: E402
from procstats import RssSampler, sched_figures, wait_until_quiet  # noqa: E402

RESULTS_DIR = ROOT / "bench" / "results"
MIB = 1024 * 1024

THROUGHPUT_WORKLOADS = {
    "1k": {"record_size": 1024, "records": 300_000},
    "100b": {"record_size": 100, "records": 1_000_000},
    # acks=all on three replicas.  3 partitions (the controller places one leader
    # on each broker), replication factor 3, min.insync.replicas=2, an idempotent producer
    # with otherwise the same settings as 1k; run only on the 3-broker clusters.
    "rf3": {"record_size": 1024, "records": 300_000, "partitions": 3, "replication_factor": 3,
            "topic_config": {"min.insync.replicas": "2"},
            "producer_conf": {"enable.idempotence": True}, "clusters_only": True},
}
# rf3's latency run: RF 3 paced at this share of the flat-out RF 3 throughput.
RATE_LIMITED_SHARE = 0.5
ALL_WORKLOADS = ["1k", "100b", "e2e", "rf3", "sendfile"]
# Result keys, in run and report order; "peer" is tansu (the key predates Kafka's column).
KINDS = ("kafkapy", "kafka", "peer", "kafkapy3", "kafka3")
LABELS = {"kafkapy": "kafkapy", "kafka": "Kafka 3.9", "peer": "tansu (peer)",
          "kafkapy3": "kafkapy 3 brokers", "kafka3": "Kafka 3.9 3 brokers (ZK)"}
# Partitions of the benchmark topics per kind: the 3-broker cluster gets one partition per
# broker (RF 1, so each broker leads one) and the records spread over them.
PARTITIONS = {"kafkapy3": 3, "kafka3": 3}
CLUSTER_KINDS = ("kafkapy3", "kafka3")
DEFAULT_WORKLOADS = ["1k", "100b", "e2e", "rf3"]


def runs_workload(kind: str, name: str, bootstrap: str | None = None) -> bool:
    """Whether ``kind`` runs workload ``name`` (rf3 needs three brokers we started)."""
    spec = THROUGHPUT_WORKLOADS.get(name, {})
    return not spec.get("clusters_only") or (kind in CLUSTER_KINDS and not bootstrap)

_ctx = mp.get_context("spawn")


def log(msg: str) -> None:
    print(f"[bench {time.strftime('%H:%M:%S')}] {msg}", flush=True)


def _kv(items: list[str]) -> dict:
    out = {}
    for it in items or []:
        k, sep, v = it.partition("=")
        if not sep:
            raise SystemExit(f"expected key=value, got {it!r}")
        out[k.strip()] = v.strip()
    return out


# --------------------------------------------------------------------------- phases

def _run_procs(target, argsets: list[tuple], timeout: float) -> list[dict]:
    """Start one process per argset (each gets (barrier, results) appended), collect results."""
    barrier = _ctx.Barrier(len(argsets))
    results = _ctx.Queue()
    procs = [_ctx.Process(target=target, args=(*a, barrier, results, timeout), daemon=True)
             for a in argsets]
    for p in procs:
        p.start()
    out = []
    deadline = time.monotonic() + timeout + 180
    for _ in procs:
        try:
            out.append(results.get(timeout=max(1.0, deadline - time.monotonic())))
        except _queue.Empty:
            out.append({"ok": False, "error": "driver process gave no result in time"})
            break
    for p in procs:
        p.join(10)
        if p.is_alive():
            p.terminate()
            p.join(5)
    return out


def _merge_latencies(chunks: list[bytes], typecode: str = "f") -> list[float]:
    vals = array(typecode)
    for c in chunks:
        if c:
            vals.frombytes(c)
    return vals.tolist()


def produce_phase(bootstrap: str, topic: str, count: int, size: int, nprocs: int,
                  conf: dict, timeout: float, partitions: int = 1, rate: float = 0.0) -> dict:
    """With several ``partitions``: at least one producer process per partition, process i
    writing to partition i % partitions, so every partition gets an equal share.  ``rate``
    (records/s over all processes, 0 = as fast as they go) paces each process at its share."""
    if partitions > 1:
        nprocs = partitions * -(-nprocs // partitions)
    per = [count // nprocs + (1 if i < count % nprocs else 0) for i in range(nprocs)]
    if rate:
        argsets = [(i, bootstrap, topic, i % partitions, n, size, conf, rate * n / count)
                   for i, n in enumerate(per) if n]
        res = _run_procs(wl.paced_produce_worker, argsets, timeout)
    else:
        argsets = [(i, bootstrap, topic, i % partitions, n, size, conf)
                   for i, n in enumerate(per) if n]
        res = _run_procs(wl.produce_worker, argsets, timeout)
    errors = [r.get("error") for r in res if r.get("error")]
    acked = sum(r.get("acked", 0) for r in res)
    out: dict = {"processes": len(argsets), "records_requested": count, "records_acked": acked,
                 "warmup_records": sum(r.get("warmup_records", 0) for r in res),
                 "delivery_errors": sum(r.get("errors") or 0 for r in res),
                 "first_delivery_error": next((r["first_error"] for r in res
                                               if r.get("first_error")), None),
                 "errors": errors}
    timed = [r for r in res if "t_start" in r]
    if timed:
        secs = max(r["t_end"] for r in timed) - min(r["t_start"] for r in timed)
        out.update(seconds=round(secs, 3), t_start=min(r["t_start"] for r in timed),
                   t_end=max(r["t_end"] for r in timed),
                   records_per_s=round(acked / secs, 1) if secs > 0 else None,
                   mib_per_s=round(acked * size / MIB / secs, 2) if secs > 0 else None,
                   driver_cpu_s=round(sum(r.get("driver_cpu_s", 0) for r in timed), 2),
                   driver_process_cpu_s=round(sum(r.get("process_cpu_s", 0) for r in timed), 2),
                   driver_nice=max((r.get("nice", 0) for r in timed), default=0),
                   driver_sched=_summed_sched([r["sched"] for r in timed if r.get("sched")]),
                   latency_ms=wl.percentiles(_merge_latencies(
                       [r.get("latencies", b"") for r in res])))
    if rate:
        out["target_records_per_s"] = round(rate, 1)
    out["ok"] = not errors and acked == count
    return out


def _waits(w: dict, sched_of) -> str:
    """``wait_per_switch_us`` of the RF 3 and the RF 1 produce phase, as "a / b"."""
    return " / ".join(_fmt((sched_of(w.get(k) or {}) or {}).get("wait_per_switch_us"), 0)
                      for k in ("produce", "rf1_produce"))


def _summed_sched(each: list[dict]) -> dict:
    """The producers' ``procstats.sched_delta`` figures added up."""
    if not each:
        return {}
    return sched_figures(round(sum(d["run_s"] for d in each) * 1e9),
                         round(sum(d["runnable_wait_s"] for d in each) * 1e9),
                         sum(d["switches"] for d in each))


def _run_consumers(out: dict, argsets: list[tuple], total: int, timeout: float) -> dict:
    """Runs one consume_worker process per argument set; ``out`` gains their summary, ``ok``
    when every one of ``total`` records came back without an error."""
    if not argsets:
        out.update(ok=False, errors=["topic is empty"], records=0)
        return out
    res = _run_procs(wl.consume_worker, argsets, timeout)
    errors = [r.get("error") for r in res if r.get("error")]
    got = sum(r.get("records", 0) for r in res)
    nbytes = sum(r.get("bytes", 0) for r in res)
    timed = [r for r in res if "t_start" in r]
    out.update(processes=len(argsets), records=got, bytes=nbytes, errors=errors)
    if timed:
        # Clock from assign() to the last record (a fresh consumer reading the topic);
        # first_record_ms = assign + first fetch round trip.
        t_start = min(r["t_start"] for r in timed)
        t_first = min(r["t_first"] for r in timed)
        secs = max(r["t_end"] for r in timed) - t_start
        out.update(seconds=round(secs, 3),
                   first_record_ms=round((t_first - t_start) * 1000, 1),
                   records_per_s=round(got / secs, 1) if secs > 0 else None,
                   mib_per_s=round(nbytes / MIB / secs, 2) if secs > 0 else None,
                   driver_cpu_s=round(sum(r.get("driver_cpu_s", 0) for r in timed), 2),
                   driver_process_cpu_s=round(sum(r.get("process_cpu_s", 0) for r in timed), 2))
    out["ok"] = not errors and got == total
    return out


def consume_phase(bootstrap: str, topic: str, size: int, nprocs: int, conf: dict,
                  timeout: float, expected: int | None = None) -> dict:
    lo, hi = wl.high_watermark(bootstrap, topic)
    total = hi - lo
    out: dict = {"low": lo, "high": hi}
    if expected is not None and total != expected:
        out["watermark_note"] = f"high-low={total}, produced {expected}"
    nprocs = max(1, min(nprocs, total or 1))
    bounds = [lo + total * i // nprocs for i in range(nprocs + 1)]
    argsets = [(i, bootstrap, topic, 0, bounds[i], bounds[i + 1], conf)
               for i in range(nprocs) if bounds[i + 1] > bounds[i]]
    return _run_consumers(out, argsets, total, timeout)


def consume_partitions_phase(bootstrap: str, topic: str, partitions: int, conf: dict,
                             timeout: float, expected: int | None = None) -> dict:
    """Read every partition of ``topic`` back, one fresh assign() consumer process per
    partition (for the 3-broker cluster: one per leader)."""
    marks = {p: wl.high_watermark(bootstrap, topic, p) for p in range(partitions)}
    total = sum(hi - lo for lo, hi in marks.values())
    out: dict = {"watermarks": {p: list(m) for p, m in marks.items()}, "low": 0, "high": total}
    if expected is not None and total != expected:
        out["watermark_note"] = f"sum of high-low={total}, produced {expected}"
    argsets = [(p, bootstrap, topic, p, lo, hi, conf) for p, (lo, hi) in marks.items() if hi > lo]
    return _run_consumers(out, argsets, total, timeout)


def e2e_phase(bootstrap: str, topic: str, rate: int, seconds: float, size: int,
              pconf: dict, cconf: dict) -> dict:
    ready = _ctx.Event()
    results = _ctx.Queue()
    count = int(rate * seconds)
    cons = _ctx.Process(target=wl.e2e_consumer_worker,
                        args=(bootstrap, topic, count, cconf, ready, results, seconds + 60),
                        daemon=True)
    prod = _ctx.Process(target=wl.e2e_producer_worker,
                        args=(bootstrap, topic, rate, seconds, size, pconf, ready, results),
                        daemon=True)
    cons.start()
    prod.start()
    got = {}
    deadline = time.monotonic() + seconds + 150
    while len(got) < 2 and time.monotonic() < deadline:
        try:
            k, v = results.get(timeout=max(1.0, deadline - time.monotonic()))
            got[k] = v
        except _queue.Empty:
            break
    for p in (prod, cons):
        p.join(10)
        if p.is_alive():
            p.terminate()
            p.join(5)
    c, p = got.get("consumer", {}), got.get("producer", {})
    out = {
        "rate": rate, "seconds": seconds, "record_size": size, "expected": count,
        "consumer_fetch_wait_max_ms": int(cconf.get("fetch.wait.max.ms", 500)),
        "received": c.get("received"), "achieved_rate": round(p.get("achieved_rate", 0), 1),
        "late_sends": p.get("late_sends"),
        "driver_process_cpu_s": round((p.get("process_cpu_s") or 0) + (c.get("process_cpu_s") or 0), 2),
        "latency_ms": wl.percentiles(_merge_latencies([c.get("latencies", b"")], "d")),
        "produce_ack_latency_ms": wl.percentiles(
            _merge_latencies([p.get("ack_latencies", b"")])),
        "errors": [e for e in (p.get("error"), c.get("error"), p.get("first_error"),
                               c.get("first_error")) if e],
    }
    if "consumer" not in got or "producer" not in got:
        out["errors"].append(f"missing result from {sorted({'consumer', 'producer'} - set(got))}")
    out["ok"] = bool(c.get("ok")) and bool(p.get("ok"))
    return out


def smoke_test(bootstrap: str, topic: str, timeout: float = 30.0) -> dict:
    """10 records in and out: does this broker serve produce and fetch at all?"""
    from confluent_kafka import Consumer, Producer, TopicPartition
    from confluent_kafka.admin import AdminClient
    t0 = time.monotonic()
    try:
        md = AdminClient({"bootstrap.servers": bootstrap, "log_level": 3}).list_topics(
            timeout=min(15.0, timeout))
        brokers = {b.id: str(b) for b in md.brokers.values()}
    except Exception as e:  # noqa: BLE001
        return {"ok": False, "errors": [f"metadata request failed: {e}"],
                "seconds": round(time.monotonic() - t0, 2)}
    how = wl.create_topic(bootstrap, topic, 1, timeout=timeout)
    errs: list[str] = []
    acked = [0]

    def cb(err, msg):
        if err:
            errs.append(str(err))
        else:
            acked[0] += 1
    p = Producer({"bootstrap.servers": bootstrap, "acks": "all", "linger.ms": 0,
                  "message.timeout.ms": int(timeout * 1000), "log_level": 3})
    for i in range(10):
        p.produce(topic, f"smoke-{i}".encode(), partition=0, on_delivery=cb)
    left = p.flush(timeout)
    got = 0
    if acked[0]:
        c = Consumer({"bootstrap.servers": bootstrap, "group.id": "kafkapy-bench-smoke",
                      "enable.auto.commit": False, "log_level": 3})
        c.assign([TopicPartition(topic, 0, 0)])
        end = time.monotonic() + timeout
        while got < acked[0] and time.monotonic() < end:
            m = c.poll(0.5)
            if m is None:
                continue
            if m.error():
                errs.append(str(m.error()))
                continue
            got += 1
        c.close()
    ok = acked[0] == 10 and got == 10 and left == 0
    return {"ok": ok, "brokers": brokers, "topic_created_by": how, "acked": acked[0],
            "consumed": got,
            "errors": errs[:5], "seconds": round(time.monotonic() - t0, 2)}


# --------------------------------------------------------------------------- per broker

def _run_key(name: str, r: dict) -> float:
    if name == "e2e":
        return r.get("latency_ms", {}).get("p50") or float("inf")
    return r.get("produce", {}).get("records_per_s") or 0.0


def _median_run(name: str, runs: list[dict]) -> dict:
    """The repetition with the median headline number (produce rec/s; e2e p50), plus a
    compact list of every repetition's numbers under "repeats"."""
    if len(runs) == 1:
        return runs[0]
    ordered = sorted(runs, key=lambda r: _run_key(name, r))
    med = dict(ordered[(len(ordered) - 1) // 2])
    med["repeats"] = [_compact(name, r) for r in runs]
    return med


def _compact(name: str, r: dict) -> dict:
    if name == "e2e":
        lat = r.get("latency_ms", {})
        return {"rep": r.get("repetition"), "p50": lat.get("p50"), "p99": lat.get("p99"),
                "other_load_pct": r.get("other_load_pct"), "ok": r.get("ok")}
    p, c = r.get("produce", {}), r.get("consume", {})
    out = {"rep": r.get("repetition"), "produce_rps": p.get("records_per_s"),
           "p50": p.get("latency_ms", {}).get("p50"), "p99": p.get("latency_ms", {}).get("p99"),
           "consume_rps": c.get("records_per_s"),
           "other_load_pct": [p.get("other_load_pct"), c.get("other_load_pct")],
           "ok": r.get("ok")}
    for key in ("rf1_produce", "java_rf3", "java_rf1"):
        if key in r:
            out[f"{key}_rps"] = r[key].get("records_per_s")
    return out


class BrokerRun:
    """Runs the selected workloads against one kind of broker and collects a result dict."""

    def __init__(self, kind: str, args: argparse.Namespace, work_root: Path, run_id: str):
        self.kind = kind
        self.args = args
        self.work_root = work_root
        self.run_id = run_id
        self.result: dict = {"kind": kind, "status": "not run", "workloads": {}, "notes": []}
        self.broker = None
        self.sampler: RssSampler | None = None
        self.profile_dir = Path(args.results_dir) / "profiles"
        self.rep = 0
        self.runs: dict[str, list[dict]] = {}
        self.source_dir: Path | None = None
        self.trace_dir: Path | None = None    # the brokers' stage traces (rf3, kafkapy3)
        if kind in ("kafkapy", "kafkapy3") and not args.bootstrap and not args.no_snapshot:
            snap = snapshot_source(work_root / "kafkapy-src")
            self.source_dir = Path(snap["dir"])
            self.result["source_snapshot"] = snap

    # broker lifecycle ------------------------------------------------------
    def _new_broker(self, label: str, log_dir: Path | None = None, extra: dict | None = None):
        wd = self.work_root / f"{self.kind}-{label}"
        if self.args.bootstrap:
            return ExistingBroker(self.args.bootstrap, self.args.broker_pid)
        if self.kind == "kafkapy":
            overrides = _kv(self.args.broker_override)
            overrides.update(extra or {})
            return KafkapyBroker(wd, overrides=overrides, log_dir=log_dir,
                                 source_dir=self.source_dir)
        if self.kind == "kafkapy3":
            from cluster import KafkapyCluster
            overrides = _kv(self.args.broker_override)
            overrides.update(extra or {})
            return KafkapyCluster(wd, overrides=overrides, source_dir=self.source_dir)
        if self.kind == "kafka3":
            from cluster import KafkaZkCluster
            return KafkaZkCluster(wd, overrides=_kv(self.args.kafka_override),
                                  heap_opts=self.args.kafka_heap_opts or None)
        if self.kind == "kafka":
            from peers import KafkaBroker
            return KafkaBroker(wd, overrides=_kv(self.args.kafka_override),
                               heap_opts=self.args.kafka_heap_opts or None)
        from peers import TansuBroker
        return TansuBroker(wd)

    def _start(self, label: str, **kw):
        if self.args.wait_quiet > 0:
            q = wait_until_quiet(self.args.wait_quiet, log=log)
            self.result.setdefault("quiet_checks", []).append({"before": label, **q})
        b = self._new_broker(label, **kw)
        log(f"{self.kind}: starting broker ({label})")
        b.start(timeout=self.args.start_timeout)
        self.broker = b
        # A cluster samples all its brokers (sums); a broker, its one process.
        make = getattr(b, "make_sampler", None)
        self.sampler = (make() if make is not None else RssSampler(b.pid)).start()
        if "broker" not in self.result:
            self.result["broker"] = b.describe()
        return b

    def _traces(self, name: str) -> bool:
        """kafkapy's 3 brokers trace replication stages during rf3 (``stage_breakdown``)."""
        return (name == "rf3" and self.kind == "kafkapy3" and not self.args.bootstrap
                and not self.args.no_stage_trace)

    def _start_traced(self, label: str):
        """Start the brokers with KAFKAPY_STAGE_TRACE set to a fresh dir of the work dir."""
        self.trace_dir = self.work_root / f"stage-trace-{label}"
        os.environ["KAFKAPY_STAGE_TRACE"] = str(self.trace_dir)
        try:
            return self._start(label)
        finally:
            os.environ.pop("KAFKAPY_STAGE_TRACE", None)

    def _stop(self) -> dict:
        info: dict = {}
        if self.sampler is not None:
            info["after"] = self.sampler.snapshot()
            info["rss_peak_mib"] = round(self.sampler.overall_peak_mib, 1)
            self.sampler.stop()
            self.sampler = None
        if self.broker is not None:
            alive = self.broker.alive()
            rc = self.broker.stop()
            info["exit_code"] = rc
            if not alive:
                info["died"] = True
                info["output_tail"] = self.broker.output_tail(4000)
            self.broker = None
        return info

    def _topic(self, name: str) -> str:
        return f"bench-{name}-{self.run_id}-{self.rep + 1}"

    @property
    def partitions(self) -> int:
        return 1 if self.args.bootstrap else PARTITIONS.get(self.kind, 1)

    def _create_topic(self, topic: str, spec: dict | None = None) -> str:
        spec = spec or {}
        fallback = getattr(self.broker, "create_topic", None)
        return wl.create_topic(self.broker.bootstrap, topic,
                               spec.get("partitions", self.partitions), fallback=fallback,
                               replication_factor=spec.get("replication_factor", 1),
                               config=spec.get("topic_config"))

    def _profiler(self, name: str):
        # kafkapy3: broker 1 (the cluster's pid), leader of one partition and follower of
        # the other two.
        if not (self.args.profile and self.kind in ("kafkapy", "kafkapy3") and self.broker.pid):
            return None
        from profiling import PySpy
        fmt = "flamegraph" if self.args.profile_svg else "raw"
        ext = "svg" if fmt == "flamegraph" else "txt"
        out = self.profile_dir / f"{self.run_id}-{name}-r{self.rep + 1}.{ext}"
        return PySpy(self.broker.pid, out, fmt=fmt).start()

    def _phase(self, name: str, fn):
        prof = self._profiler(name)
        self.sampler.phase_start(name)
        own0 = time.process_time()
        try:
            res = fn()
        finally:
            stats = self.sampler.phase_end()
        own = time.process_time() - own0
        res["broker"] = stats.as_dict()
        # CPU burnt by anything but the broker and our driver (other sessions, tests, ...),
        # in % of one core: large values mean the numbers of this phase are disturbed.
        # Driver = the worker processes' whole CPU (start-up included) + this process.
        drv = res.get("driver_process_cpu_s") or res.get("driver_cpu_s") or 0
        other = stats.machine_busy_cpu_s - stats.cpu_seconds - drv - own
        res["other_load_pct"] = round(max(0.0, 100.0 * other / stats.seconds), 1) \
            if stats.seconds else None
        if prof is not None:
            res["profile"] = prof.stop()
        if self.broker is not None and not self.broker.alive():
            res["ok"] = False
            res.setdefault("errors", []).append(
                "broker died: " + self.broker.output_tail(3000))
        return res

    # workloads -------------------------------------------------------------
    def prepare(self) -> bool:
        """Check the broker can be had; start the shared broker if asked. False: skip it."""
        try:
            if self.kind in ("kafkapy3", "kafka3") and not self.args.bootstrap:
                from cluster import ClusterUnavailable, zookeeper_classpath
                import peers
                try:
                    zookeeper_classpath()
                    if self.kind == "kafka3":
                        peers.find_kafka_home()
                except (ClusterUnavailable, peers.PeerUnavailable) as e:
                    self.result.update(status="unavailable", error=str(e))
                    log(f"{self.kind} unavailable: {e}")
                    return False
            if self.kind in ("peer", "kafka") and not self.args.bootstrap:
                import peers
                find = peers.find_tansu if self.kind == "peer" else peers.find_kafka_home
                try:
                    find()
                except peers.PeerUnavailable as e:
                    self.result.update(status="unavailable", error=str(e))
                    log(f"{self.kind} unavailable: {e}")
                    return False
            if self.shared:
                self._start("shared")
            return True
        except Exception as e:  # noqa: BLE001
            self._fail(e)
            return False

    @property
    def shared(self) -> bool:
        return bool(self.args.shared_broker or self.args.bootstrap)

    def _fail(self, e: Exception) -> None:
        self.result.update(status="failed", error=f"{type(e).__name__}: {e}",
                           traceback=traceback.format_exc()[-4000:])
        log(f"{self.kind}: FAILED {e}")
        try:
            self.result["broker_process"] = self._stop()
        except Exception:  # noqa: BLE001
            pass

    def run_one(self, name: str, rep: int = 0) -> dict:
        """One repetition of one workload (fresh broker unless shared)."""
        self.rep = rep
        label = name if self.args.repeat == 1 else f"{name}-r{rep + 1}"
        nice = self.args.driver_nice if name == "rf3" else 0
        os.environ[wl.DRIVER_NICE_ENV] = str(nice)   # read by the driver processes it spawns
        try:
            if not self.shared:
                self._start_traced(label) if self._traces(name) else self._start(label)
            if name == "e2e":
                res = self._e2e()
            else:
                res = self._throughput(name)
        except Exception as e:  # noqa: BLE001 - record and go on
            log(f"{self.kind} {name}: FAILED {e}")
            res = {"ok": False, "errors": [f"{type(e).__name__}: {e}"],
                   "traceback": traceback.format_exc()[-3000:]}
        finally:
            if not self.shared:
                try:
                    bp = self._stop()
                except Exception as e:  # noqa: BLE001
                    bp = {"error": str(e)}
        if not self.shared:
            res["broker_process"] = bp
        res["repetition"] = rep + 1
        self.runs.setdefault(name, []).append(res)
        self.result["workloads"][name] = _median_run(name, self.runs[name])
        return res

    def finish(self) -> dict:
        if self.shared:
            try:
                self.result["broker_process"] = self._stop()
            except Exception:  # noqa: BLE001
                pass
        if self.result.get("status") in ("unavailable", "failed") and not self.runs:
            return self.result
        if not self.runs:
            self.result["status"] = "skipped"
            self.result["notes"].append("none of the selected workloads applies to this broker "
                                        "(rf3 runs on the 3-broker clusters only)")
            return self.result
        wls = self.result["workloads"].values()
        oks = [w.get("ok") for w in wls]
        self.result["status"] = "ok" if oks and all(oks) else "partial" if any(
            w.get("produce", {}).get("records_per_s") or w.get("latency_ms", {}).get("count")
            for w in wls) else "failed"
        return self.result

    def _throughput(self, name: str) -> dict:
        args = self.args
        spec = THROUGHPUT_WORKLOADS[name]
        size = spec["record_size"]
        count = max(1, int(spec["records"] * args.records_scale))
        partitions = spec.get("partitions", self.partitions)
        pconf = {**spec.get("producer_conf", {}), **_kv(args.producer_conf)}
        out: dict = {"record_size": size, "records": count, "partitions": partitions,
                     "replication_factor": spec.get("replication_factor", 1),
                     "topic_config": spec.get("topic_config", {}),
                     "producer_config": {**{k: v for k, v in wl.PRODUCER_DEFAULTS.items()},
                                         **pconf},
                     "consumer_config": {**wl.CONSUMER_DEFAULTS, **_kv(args.consumer_conf)}}
        bs = self.broker.bootstrap
        smoke = smoke_test(bs, self._topic(f"smoke-{name}"))
        out["smoke"] = smoke
        if not smoke["ok"]:
            out.update(ok=False, errors=[f"smoke test failed: {smoke}"])
            log(f"{self.kind} {name}: smoke test failed: {smoke}")
            return out
        topic = self._topic(name)
        out["topic"] = topic
        out["topic_created_by"] = self._create_topic(topic, spec)
        spread = partitions > 1
        if spread and hasattr(self.broker, "leaders"):
            out["leaders"] = self.broker.leaders(topic)
        log(f"{self.kind} {name}: producing {count} x {size} B with {args.producer_procs} procs"
            + (f" (at least one per partition) over {partitions} partitions"
               f" RF {out['replication_factor']}, leaders {out.get('leaders')}"
               if spread else ""))
        out["produce"] = self._phase(f"{name}-produce", lambda: produce_phase(
            bs, topic, count, size, args.producer_procs, pconf,
            args.phase_timeout, partitions=partitions))
        p = out["produce"]
        log(f"{self.kind} {name}: produce {p.get('records_per_s')} rec/s "
            f"{p.get('mib_per_s')} MiB/s p50 {p.get('latency_ms', {}).get('p50')} ms "
            f"p99 {p.get('latency_ms', {}).get('p99')} ms, broker cpu "
            f"{p['broker']['cpu_pct']:.0f}% rss peak {p['broker']['rss_peak_mib']:.0f} MiB "
            f"{'' if p['ok'] else 'ERRORS ' + str(p.get('errors'))[:300]}")
        time.sleep(1.0)
        if spread:
            # The topic also holds the idempotent producers' warm-up records (one each).
            out["consume"] = self._phase(f"{name}-consume", lambda: consume_partitions_phase(
                bs, topic, partitions, _kv(args.consumer_conf), args.phase_timeout,
                expected=(p.get("records_acked") or 0) + p.get("warmup_records", 0)))
        else:
            out["consume"] = self._phase(f"{name}-consume", lambda: consume_phase(
                bs, topic, size, args.consumer_procs, _kv(args.consumer_conf),
                args.phase_timeout, expected=p.get("records_acked")))
        c = out["consume"]
        log(f"{self.kind} {name}: consume {c.get('records_per_s')} rec/s "
            f"{c.get('mib_per_s')} MiB/s, broker cpu {c['broker']['cpu_pct']:.0f}% "
            f"{'' if c['ok'] else 'ERRORS ' + str(c.get('errors'))[:300]}")
        if name == "rf3":
            self._rf3_extras(out, spec, size, count, pconf)
        time.sleep(2.0)
        out["after_idle_2s"] = self.sampler.snapshot()
        if ("sendfile" in args.workloads and self.kind == "kafkapy" and not args.bootstrap
                and not args.shared_broker):
            out["consume_sendfile_off"] = self._sendfile_off(topic, size, p.get("records_acked"))
        out["ok"] = bool(p.get("ok")) and bool(c.get("ok"))
        return out

    def _rf3_extras(self, out: dict, spec: dict, size: int, count: int, pconf: dict) -> None:
        """On the same cluster after the RF 3 run: the same producers on an RF 1 topic
        (``rf1_produce``), then RF 3 paced at RATE_LIMITED_SHARE of the RF 3 throughput
        (``rate_limited``, half the records), then the stage breakdown of both RF 3 runs
        from the brokers' traces (kafkapy; ``stages``)."""
        args = self.args
        bs = self.broker.bootstrap
        partitions = spec["partitions"]
        topic = self._topic("rf3-rf1")
        out["rf1_topic_created_by"] = self._create_topic(
            topic, {**spec, "replication_factor": 1, "topic_config": {}})
        out["rf1_produce"] = self._phase("rf3-rf1-produce", lambda: produce_phase(
            bs, topic, count, size, args.producer_procs, pconf, args.phase_timeout,
            partitions=partitions))
        r = out["rf1_produce"]
        log(f"{self.kind} rf3: same producers on RF 1: {r.get('records_per_s')} rec/s p99 "
            f"{r.get('latency_ms', {}).get('p99')} ms, broker cpu {r['broker']['cpu_pct']:.0f}%")
        full = out["produce"].get("records_per_s")
        if full:
            topic = self._topic("rf3-paced")
            self._create_topic(topic, spec)
            rate = full * RATE_LIMITED_SHARE
            out["rate_limited"] = self._phase("rf3-paced-produce", lambda: produce_phase(
                bs, topic, max(1, count // 2), size, args.producer_procs, pconf,
                args.phase_timeout, partitions=partitions, rate=rate))
            r = out["rate_limited"]
            log(f"{self.kind} rf3: paced at {rate:.0f} rec/s: {r.get('records_per_s')} rec/s "
                f"p50 {r.get('latency_ms', {}).get('p50')} ms p99 "
                f"{r.get('latency_ms', {}).get('p99')} ms")
        if not args.no_java_producer and java_producer.available():
            self._rf3_java(out, spec, size, count, out["producer_config"])
        if self.trace_dir is not None:
            time.sleep(2.0)   # the brokers write their trace buffers about once a second
            out["stages"] = {key: stage_breakdown.summary(self.trace_dir, ph.get("t_start"),
                                                          ph.get("t_end"), key != "rf1")
                             for key, ph in (("rf3", out["produce"]),
                                             ("rf1", out.get("rf1_produce", {})),
                                             ("rate_limited", out.get("rate_limited", {})))
                             if ph.get("t_start") is not None}
            for key, st in out["stages"].items():
                log(f"{self.kind} rf3 stages ({key}): " + ", ".join(
                    f"{n} {v['p50_ms']}" for n, v in st["stages"].items()) + " ms (p50)")

    def _rf3_java(self, out: dict, spec: dict, size: int, count: int, pconf: dict) -> None:
        """Kafka's Java producer, one process, the same records to a fresh RF 3 topic
        (``java_rf3``) and a fresh RF 1 topic (``java_rf1``) of the same cluster; ``pconf``
        is the librdkafka drivers' whole configuration (defaults included), of which it
        takes the settings both clients have."""
        for key, topic_spec in (("java_rf3", spec),
                                ("java_rf1", {**spec, "replication_factor": 1,
                                              "topic_config": {}})):
            topic = self._topic(f"rf3-{key.replace('_', '-')}")
            self._create_topic(topic, topic_spec)
            out[key] = self._phase(f"rf3-{key}", lambda: java_producer.produce(
                self.broker.bootstrap, topic, count, size, pconf, self.args.phase_timeout))
            r = out[key]
            log(f"{self.kind} rf3: Java producer on RF {topic_spec['replication_factor']}: "
                f"{r.get('records_per_s')} rec/s p99 {r.get('latency_ms', {}).get('p99')} ms, "
                f"broker cpu {r['broker']['cpu_pct']:.0f}% "
                f"{'' if r['ok'] else 'ERRORS ' + str(r.get('errors'))[:300]}")

    def _sendfile_off(self, topic: str, size: int, expected) -> dict:
        """Restart on the same log dir with sendfile disabled and consume again."""
        log_dir = self.broker.log_dir
        label = self.broker.work_dir.name.split("-", 1)[-1]
        self.result.setdefault("restarts", []).append(self._stop())
        self._start(f"{label}-nosendfile", log_dir=log_dir,
                    extra={"kafkapy.fetch.sendfile.enable": "false"})
        res = self._phase(f"{label}-consume-nosendfile", lambda: consume_phase(
            self.broker.bootstrap, topic, size, self.args.consumer_procs,
            _kv(self.args.consumer_conf), self.args.phase_timeout, expected=expected))
        log(f"{self.kind} {label}: consume (sendfile off) {res.get('records_per_s')} rec/s "
            f"{res.get('mib_per_s')} MiB/s, broker cpu {res['broker']['cpu_pct']:.0f}%")
        return res

    def _e2e(self) -> dict:
        args = self.args
        bs = self.broker.bootstrap
        smoke = smoke_test(bs, self._topic("smoke-e2e"))
        if not smoke["ok"]:
            return {"ok": False, "smoke": smoke, "errors": [f"smoke test failed: {smoke}"]}
        topic = self._topic("e2e")
        how = self._create_topic(topic)
        log(f"{self.kind} e2e: {args.e2e_rate} rec/s for {args.e2e_seconds}s")
        cconf = {"fetch.wait.max.ms": 500, **_kv(args.consumer_conf)}
        res = self._phase("e2e", lambda: e2e_phase(
            bs, topic, args.e2e_rate, args.e2e_seconds, args.e2e_size,
            _kv(args.producer_conf), cconf))
        res["topic_created_by"] = how
        lat = res["latency_ms"]
        log(f"{self.kind} e2e: p50 {lat.get('p50')} ms p99 {lat.get('p99')} ms "
            f"received {res.get('received')}/{res.get('expected')} "
            f"{'' if res['ok'] else 'ERRORS ' + str(res.get('errors'))[:300]}")
        return res


# --------------------------------------------------------------------------- report

def _fmt(v, nd=0):
    if v is None:
        return "—"
    if isinstance(v, float):
        return f"{v:,.{nd}f}"
    if isinstance(v, int):
        return f"{v:,}"
    return str(v)


def _side_metrics(w: dict, name: str) -> list[tuple[str, object, int]]:
    """(row label, value, decimals) of one workload's headline numbers for one broker."""
    if name == "e2e":
        lat, b = w.get("latency_ms", {}), w.get("broker", {})
        return [("e2e p50 ms", lat.get("p50"), 2), ("e2e p99 ms", lat.get("p99"), 2),
                ("e2e broker CPU %", b.get("cpu_pct"), 0),
                ("e2e broker RSS peak MiB", b.get("rss_peak_mib"), 0)]
    p, c = w.get("produce", {}), w.get("consume", {})
    peaks = [x for x in (p.get("broker", {}).get("rss_peak_mib"),
                         c.get("broker", {}).get("rss_peak_mib")) if x is not None]
    return [(f"{name} produce rec/s", p.get("records_per_s"), 0),
            (f"{name} produce p99 ms", p.get("latency_ms", {}).get("p99"), 1),
            (f"{name} consume rec/s", c.get("records_per_s"), 0),
            (f"{name} broker CPU % produce", p.get("broker", {}).get("cpu_pct"), 0),
            (f"{name} broker CPU % consume", c.get("broker", {}).get("cpu_pct"), 0),
            (f"{name} broker RSS peak MiB", max(peaks) if peaks else None, 0)]


def _side_by_side_lines(brokers: dict) -> list[str]:
    """One column per broker, one row per headline number (median runs)."""
    kinds = list(brokers)
    rows: dict[str, dict[str, str]] = {}
    for kind in kinds:
        for name, w in brokers[kind].get("workloads", {}).items():
            for label, value, nd in _side_metrics(w, name):
                rows.setdefault(label, {})[kind] = _fmt(value, nd)
    if not rows:
        return []
    head = " | ".join(LABELS.get(k, k) for k in kinds)
    out = ["## Side by side (median run of each workload)", "",
           f"| | {head} |", "|---|" + "---:|" * len(kinds)]
    for label, vals in rows.items():
        out.append(f"| {label} | " + " | ".join(vals.get(k, "—") for k in kinds) + " |")
    return out + [""]


def _ratio_lines(brokers: dict) -> list[str]:
    """kafkapy's records/s divided by each other broker's, per throughput phase."""
    others = [k for k in brokers if k != "kafkapy"]
    if "kafkapy" not in brokers or not others:
        return []
    rows = []
    for name in THROUGHPUT_WORKLOADS:
        k = brokers["kafkapy"].get("workloads", {}).get(name)
        if not k:
            continue
        for phase in ("produce", "consume"):
            a = k.get(phase, {}).get("records_per_s")
            cells = []
            for o in others:
                b = brokers[o].get("workloads", {}).get(name, {}).get(phase, {}).get(
                    "records_per_s")
                cells.append(f"{a / b:.2f}x" if a and b else "—")
            if any(c != "—" for c in cells):
                rows.append(f"| {name} {phase} | " + " | ".join(cells) + " |")
    if not rows:
        return []
    head = " | ".join(f"kafkapy / {LABELS.get(o, o)}" for o in others)
    return ["## kafkapy relative to the others (records/s)", "", f"| phase | {head} |",
            "|---|" + "---:|" * len(others), *rows, ""]


RF3_ROWS = (
    # (label, getter, decimals, ratio sense: "higher" / "lower" is better, None: no ratio)
    ("records", lambda w: w.get("records"), 0, None),
    ("produce rec/s", lambda w: w.get("produce", {}).get("records_per_s"), 0, "higher"),
    ("produce MiB/s", lambda w: w.get("produce", {}).get("mib_per_s"), 1, "higher"),
    ("produce p50 ms", lambda w: w.get("produce", {}).get("latency_ms", {}).get("p50"), 1,
     "lower"),
    ("produce p99 ms", lambda w: w.get("produce", {}).get("latency_ms", {}).get("p99"), 1,
     "lower"),
    ("consume rec/s", lambda w: w.get("consume", {}).get("records_per_s"), 0, "higher"),
    ("consume MiB/s", lambda w: w.get("consume", {}).get("mib_per_s"), 1, "higher"),
    ("broker CPU % produce (sum of 3)",
     lambda w: w.get("produce", {}).get("broker", {}).get("cpu_pct"), 0, "lower"),
    ("broker CPU % consume (sum of 3)",
     lambda w: w.get("consume", {}).get("broker", {}).get("cpu_pct"), 0, "lower"),
    ("broker RSS peak MiB (sum of 3)", lambda w: max(
        [x for x in (w.get("produce", {}).get("broker", {}).get("rss_peak_mib"),
                     w.get("consume", {}).get("broker", {}).get("rss_peak_mib"))
         if x is not None] or [None], key=lambda x: x or 0), 0, "lower"),
    ("other load % produce", lambda w: w.get("produce", {}).get("other_load_pct"), 0, None),
    ("other load % consume", lambda w: w.get("consume", {}).get("other_load_pct"), 0, None),
    ("driver CPU % produce (3 producers, nice)", lambda w: _driver_cpu(w.get("produce")), 0,
     None),
    ("broker wait for a CPU per wake-up µs, RF 3 / RF 1", lambda w: _waits(
        w, lambda ph: ph.get("broker", {}).get("sched")), 0, None),
    ("driver wait for a CPU per wake-up µs, RF 3 / RF 1", lambda w: _waits(
        w, lambda ph: ph.get("driver_sched")), 0, None),
    ("RF 1, same producers: produce rec/s",
     lambda w: w.get("rf1_produce", {}).get("records_per_s"), 0, "higher"),
    ("RF 1: produce p50 ms", lambda w: w.get("rf1_produce", {}).get("latency_ms", {}).get("p50"),
     1, "lower"),
    ("RF 1: produce p99 ms", lambda w: w.get("rf1_produce", {}).get("latency_ms", {}).get("p99"),
     1, "lower"),
    ("RF 1: broker CPU % produce",
     lambda w: w.get("rf1_produce", {}).get("broker", {}).get("cpu_pct"), 0, "lower"),
    ("RF 3 / RF 1 produce rec/s", lambda w: _share(w.get("produce"), w.get("rf1_produce")), 2,
     "higher"),
    ("RF 3 paced: target rec/s",
     lambda w: w.get("rate_limited", {}).get("target_records_per_s"), 0, None),
    ("RF 3 paced: produce rec/s", lambda w: w.get("rate_limited", {}).get("records_per_s"), 0,
     None),
    ("RF 3 paced: produce p50 ms",
     lambda w: w.get("rate_limited", {}).get("latency_ms", {}).get("p50"), 1, "lower"),
    ("RF 3 paced: produce p99 ms",
     lambda w: w.get("rate_limited", {}).get("latency_ms", {}).get("p99"), 1, "lower"),
    ("RF 3 paced: broker CPU %",
     lambda w: w.get("rate_limited", {}).get("broker", {}).get("cpu_pct"), 0, "lower"),
    ("other load % RF 1 / paced", lambda w: "/".join(
        _fmt(w.get(k, {}).get("other_load_pct"), 0) for k in ("rf1_produce", "rate_limited")),
     0, None),
    ("broker CPU ms per 1,000 records, RF 3 / RF 1",
     lambda w: _cpu_per_records(w, "produce", "rf1_produce"), 0, None),
    ("Java producer, RF 3: produce rec/s",
     lambda w: w.get("java_rf3", {}).get("records_per_s"), 0, "higher"),
    ("Java producer, RF 3: produce p99 ms",
     lambda w: w.get("java_rf3", {}).get("latency_ms", {}).get("p99"), 0, "lower"),
    ("Java producer, RF 1: produce rec/s",
     lambda w: w.get("java_rf1", {}).get("records_per_s"), 0, "higher"),
    ("Java producer: RF 3 / RF 1 produce rec/s",
     lambda w: _share(w.get("java_rf3"), w.get("java_rf1")), 2, None),
    ("Java producer: broker CPU ms per 1,000 records, RF 3 / RF 1",
     lambda w: _cpu_per_records(w, "java_rf3", "java_rf1"), 0, None),
    ("Java producer: its CPU % RF 3 / RF 1 (1 process)", lambda w: " / ".join(
        _fmt(_java_cpu_pct(w.get(k)), 0) for k in ("java_rf3", "java_rf1")), 0, None),
)


def _cpu_per_records(w: dict, *keys: str) -> str | None:
    """The brokers' CPU ms per 1,000 acknowledged records in each phase, as "a / b"."""
    cells = []
    for key in keys:
        ph = w.get(key) or {}
        cpu, acked = ph.get("broker", {}).get("cpu_seconds"), ph.get("records_acked")
        cells.append(_fmt(1e6 * cpu / acked, 1) if cpu is not None and acked else "—")
    return None if all(c == "—" for c in cells) else " / ".join(cells)


def _java_cpu_pct(phase: dict | None):
    """The Java producer's CPU over its process's life (JVM start-up included), % of one
    core."""
    phase = phase or {}
    cpu, secs = phase.get("driver_process_cpu_s"), phase.get("wall_s")
    return 100 * cpu / secs if cpu is not None and secs else None


def _driver_cpu(phase: dict | None):
    """The producer processes' CPU % of one core over the phase, with their niceness."""
    phase = phase or {}
    cpu, secs = phase.get("driver_cpu_s"), phase.get("seconds")
    if cpu is None or not secs:
        return None
    return f"{100 * cpu / secs:.0f} (nice {phase.get('driver_nice', 0)})"


def _share(a: dict | None, b: dict | None):
    """a's produce rec/s over b's, or None."""
    ra, rb = (a or {}).get("records_per_s"), (b or {}).get("records_per_s")
    return ra / rb if ra and rb else None

RF3_LEGEND = [
    "- Columns: one per 3-broker cluster (kafkapy brokers 1-3 on ZooKeeper; Kafka 3.9 brokers "
    "1-3 in ZooKeeper mode on its sample config/server.properties, start-script heap), and "
    "**kafkapy / Kafka** = the kafkapy cluster's number divided by Kafka's (throughput: above "
    "1 = kafkapy faster; latency, CPU, RSS: below 1 = kafkapy lower/better).",
    "- Rows: *records* = 1 KiB records produced in the timed part (records scale applied; "
    "each idempotent producer first gets one warm-up record acknowledged, so InitProducerId "
    "is outside the clock, and the read-back includes those); *produce rec/s, MiB/s* "
    "= acknowledged records (values only, MiB = 2^20 B) / wall time from the first produce() "
    "to the last delivery report over all producer processes; *produce p50/p99 ms* = "
    "librdkafka's per-record produce()->acks=all delivery report time (includes time queued "
    "in the client, as kafka-producer-perf-test reports it); *consume rec/s, MiB/s* = the "
    "topic read back by one fresh assign() consumer per partition (from the leaders), "
    "assign() to last record; *broker CPU %* = CPU seconds of the three broker processes "
    "together / phase wall time (100 = one core; ZooKeeper not counted); *broker RSS peak* = "
    "peak of the sum of the three brokers' VmRSS sampled every 50 ms; *other load* = CPU of "
    "processes other than the brokers and the driver (% of one core; above ~50 the numbers "
    "are disturbed); *driver CPU* = CPU of the producer processes over the timed part (% of "
    "one core) and the niceness they ran at; *wait for a CPU per wake-up* = the time the "
    "processes' threads were runnable but not running over the times they were switched in "
    "(`/proc/<pid>/task/<tid>/schedstat`, summed over the three brokers, resp. the three "
    "producer processes): how long a wake-up waited for a core. A producer thread that polls "
    "with a zero timeout is always runnable, so its figure is how long it waits to get back "
    "on a core, answer or not.",
    "- The driver shares the 2 cores with the brokers and runs at nice 19 (`--driver-nice`): "
    "an idempotent librdkafka producer waits for its one in-flight Produce by polling its "
    "socket with a zero timeout, so a flat-out acks=all producer keeps a core busy while it "
    "waits and, at the brokers' priority, takes that CPU from them (clients on machines of "
    "their own would not). Niced, the producers get the CPU the brokers leave.",
    "- *RF 1, same producers*: after the RF 3 run, on the same cluster, the same producer "
    "processes and settings (idempotent) write the same number of records to a 3-partition "
    "RF 1 topic. *RF 3 paced*: then half the records to a fresh RF 3 topic, each producer "
    "paced so that together they offer half the RF 3 run's throughput: produce latency below "
    "saturation. The `1k` workload's 3-broker RF 1 figure uses non-idempotent producers, "
    "which librdkafka pipelines (many requests in flight per partition); an idempotent "
    "librdkafka producer keeps one Produce request per partition in flight (its limit of 5 "
    "in-flight requests is compared with the count of in-flight *messages*), so its "
    "throughput per partition is one batch per acknowledgement round trip.",
    "- *Java producer*: then, on the same cluster, Kafka 3.9's `kafka-producer-perf-test.sh` "
    "(kafka-clients 3.9, one process, 512 MiB heap, at normal priority: it sleeps while it "
    "waits, so unlike the librdkafka producers it is not niced) sends the same "
    "number of records, flat out, with the same acks, enable.idempotence, linger.ms, "
    "batch.size and compression, to every partition of a fresh RF 3 topic, then of a fresh "
    "RF 1 topic (`bench/java_producer.py`). An idempotent Java producer keeps up to 5 "
    "requests in flight per connection, so its figures show replication when the client "
    "pipelines; its rate and p99 are the tool's own (from its first send, JVM warm-up "
    "included), *broker CPU ms per 1,000 records* = the three brokers' CPU over the phase / "
    "acknowledged records, *its CPU* = the JVM's over its life. One Java producer process "
    "can be the limit at RF 1: compare its CPU with the cores the brokers leave.",
]


def _rf3_lines(brokers: dict, run: dict) -> list[str]:
    """The replicated headline: acks=all RF 3 on kafkapy's 3 brokers vs Kafka's, with ratios."""
    cols = [k for k in CLUSTER_KINDS if "rf3" in brokers.get(k, {}).get("workloads", {})]
    if not cols:
        return []
    ws = {k: brokers[k]["workloads"]["rf3"] for k in cols}
    pair = cols == list(CLUSTER_KINDS)
    spec = THROUGHPUT_WORKLOADS["rf3"]
    w0 = next(iter(ws.values()))
    pconf = w0.get("producer_config", {})
    scales = {k: (ws[k].get("run_info") or brokers[k].get("run_info") or {}).get(
        "records_scale", run.get("records_scale")) for k in cols}
    out = ["## acks=all, replication factor 3, on 3 brokers (workload rf3)", "",
           f"{spec['record_size']} B records, topic with {spec['partitions']} partitions "
           f"(one leader per broker), replication factor {spec['replication_factor']}, "
           f"min.insync.replicas={spec['topic_config']['min.insync.replicas']}; producer "
           f"acks={pconf.get('acks')}, enable.idempotence={pconf.get('enable.idempotence')}, "
           f"linger.ms={pconf.get('linger.ms')}, batch.size={pconf.get('batch.size')}, "
           f"compression {pconf.get('compression.type')}; {w0.get('produce', {}).get('processes')} "
           "producer processes, each writing its own partition, bootstrapped from broker 1. "
           "Records scale: " + ", ".join(f"{LABELS[k]} {scales[k]}" for k in cols) + ".", ""]
    head = " | ".join(LABELS[k] for k in cols) + (" | kafkapy / Kafka |" if pair else " |")
    out += [f"| | {head}", "|---|" + "---:|" * (len(cols) + (1 if pair else 0))]
    for label, get, nd, sense in RF3_ROWS:
        vals = [get(ws[k]) for k in cols]
        cells = [_fmt(v, nd) for v in vals]
        if pair:
            a, b = vals
            cells.append(f"{a / b:.2f}x" if sense and a and b else "")
        out.append(f"| {label} | " + " | ".join(cells) + " |")
    oks = " | ".join("yes" if ws[k].get("ok") else "NO" for k in cols)
    out.append(f"| all records acknowledged and read back | {oks} |" + (" |" if pair else ""))
    out.append("")
    if pair:
        a = ws["kafkapy3"].get("produce", {}).get("records_per_s")
        b = ws["kafka3"].get("produce", {}).get("records_per_s")
        pa = ws["kafkapy3"].get("produce", {}).get("latency_ms", {}).get("p99")
        pb = ws["kafka3"].get("produce", {}).get("latency_ms", {}).get("p99")
        if a and b:
            out += [f"**Ratio kafkapy / Kafka 3.9, acks=all RF 3 produce: {a / b:.2f}x** "
                    f"({_fmt(a)} vs {_fmt(b)} rec/s; p99 {_fmt(pa, 1)} vs {_fmt(pb, 1)} ms) — "
                    + ("at or above Kafka." if a >= b else "below Kafka.")
                    + (" Medians of each cluster's repetitions." if ws["kafkapy3"].get("repeats")
                       else ""), ""]
        out += _rf3_repeat_lines(ws)
    out += _rf3_goal_lines(ws)
    out += _stage_lines(ws.get("kafkapy3", {}).get("stages"))
    return out + RF3_LEGEND + [""]


def _rf3_goal_lines(ws: dict) -> list[str]:
    """kafkapy RF 3 against its RF 1 (same producers), against Kafka's RF 3, and its paced
    p99; then the same ratios with the Java producer."""
    w = ws.get("kafkapy3")
    if not w:
        return []
    kafka = ws.get("kafka3")
    rf3 = w.get("produce", {}).get("records_per_s")
    parts = _ratio_parts(w, kafka, "produce", "rf1_produce", " (same producers)")
    paced = w.get("rate_limited", {})
    if paced.get("latency_ms", {}).get("p99") is not None:
        parts.append(f"paced at {_fmt(paced.get('target_records_per_s'))} rec/s: p99 "
                     f"{_fmt(paced['latency_ms']['p99'], 1)} ms")
    out = [f"kafkapy acks=all RF 3: {_fmt(rf3)} rec/s; " + "; ".join(parts) + ".", ""] \
        if rf3 and parts else []
    java = w.get("java_rf3", {}).get("records_per_s")
    if java:
        parts = _ratio_parts(w, kafka, "java_rf3", "java_rf1", "")
        cpu = _cpu_per_records(w, "java_rf3", "java_rf1")
        if cpu:
            parts.append(f"brokers' CPU ms per 1,000 records RF 3 / RF 1 {cpu}")
        out += [f"With Kafka's Java producer (one process): kafkapy RF 3 {_fmt(java)} rec/s"
                + "".join(f"; {p}" for p in parts) + ".", ""]
    return out


def _ratio_parts(w: dict, kafka: dict | None, rf3: str, rf1: str, rf1_label: str) -> list[str]:
    """kafkapy's phase ``rf3`` over its phase ``rf1`` and over Kafka's phase ``rf3``."""
    parts = []
    share = _share(w.get(rf3), w.get(rf1))
    if share:
        parts.append(f"RF 3 / RF 1{rf1_label} {share:.2f}")
    over_kafka = _share(w.get(rf3), (kafka or {}).get(rf3))
    if over_kafka:
        parts.append(f"RF 3 / Kafka 3.9 RF 3 {over_kafka:.2f}x")
    return parts


def _stage_lines(stages: dict | None) -> list[str]:
    """The per-stage latency of one batch (kafkapy, from the brokers' stage traces)."""
    if not stages:
        return []
    cols = [k for k in ("rf3", "rate_limited", "rf1") if stages.get(k, {}).get("batches")]
    if not cols:
        return []
    names = {"rf3": "RF 3 flat out", "rate_limited": "RF 3 paced", "rf1": "RF 1 flat out"}
    out = ["Stage breakdown of one acks=all batch on kafkapy (brokers' stage traces, "
           "`bench/stage_breakdown.py`; ms, p50 / p90 / p99 / max, mean; " + ", ".join(
               f"{names[k]}: {stages[k]['batches']:,} batches" for k in cols) + "):", "",
           "| stage | " + " | ".join(names[k] for k in cols) + " |",
           "|---|" + "---:|" * len(cols)]
    for stage in stage_breakdown.STAGES:
        cells = []
        for k in cols:
            v = stages[k]["stages"].get(stage)
            cells.append(f"{v['p50_ms']:.2f} / {v['p90_ms']:.2f} / {v['p99_ms']:.2f} / "
                         f"{v['max_ms']:.2f}" + (f", {v['mean_ms']:.2f}" if "mean_ms" in v else "")
                         if v and "p99_ms" in v else "—")
        out.append(f"| {stage} | " + " | ".join(cells) + " |")
    return out + ["", "- " + stage_breakdown.LEGEND, ""]


def _rf3_repeat_lines(ws: dict) -> list[str]:
    """Repetition n of kafkapy3 beside repetition n of kafka3 (run back to back, so they
    saw similar load), with each one's other load and the pair's ratio."""
    reps = {k: {r.get("rep"): r for r in ws[k].get("repeats") or []} for k in CLUSTER_KINDS}
    common = sorted(set(reps["kafkapy3"]) & set(reps["kafka3"]), key=lambda x: x or 0)
    if len(common) < 2:
        return []
    out = ["Each repetition (kafkapy's run n, then Kafka's run n; produce rec/s, p99 ms, other "
           "load % during produce; the least disturbed pair is the fairest comparison):", "",
           "| repetition | kafkapy 3 brokers | Kafka 3.9 3 brokers (ZK) | kafkapy / Kafka |",
           "|---:|---|---|---:|"]
    for n in common:
        a, b = reps["kafkapy3"][n], reps["kafka3"][n]
        cell = lambda r: (f"{_fmt(r.get('produce_rps'))} rec/s, p99 {_fmt(r.get('p99'), 0)} ms, "
                          f"other {_fmt((r.get('other_load_pct') or [None])[0], 0)}%")
        out.append(f"| {n} | {cell(a)} | {cell(b)} | "
                   f"{_times(a.get('produce_rps'), b.get('produce_rps'))} |")
    return out + [""] + _java_repeat_lines(reps, common)


def _java_repeat_lines(reps: dict, common: list) -> list[str]:
    """The Java producer's RF 3 and RF 1 rec/s of each repetition, both clusters."""
    if not any(reps[k][n].get("java_rf3_rps") for k in CLUSTER_KINDS for n in common):
        return []
    out = ["The Java producer in each repetition (RF 3 rec/s, RF 1 rec/s):", "",
           "| repetition | kafkapy 3 brokers | Kafka 3.9 3 brokers (ZK) | kafkapy / Kafka, RF 3 |",
           "|---:|---|---|---:|"]
    for n in common:
        a, b = reps["kafkapy3"][n], reps["kafka3"][n]
        cell = lambda r: f"{_fmt(r.get('java_rf3_rps'))}, {_fmt(r.get('java_rf1_rps'))}"
        out.append(f"| {n} | {cell(a)} | {cell(b)} | "
                   f"{_times(a.get('java_rf3_rps'), b.get('java_rf3_rps'))} |")
    return out + [""]


def _times(a, b) -> str:
    """``a / b`` as a ratio cell ("2.50x"), or "—" without both."""
    return f"{a / b:.2f}x" if a and b else "—"


def rf3_summary(brokers: dict) -> str | None:
    """One line for the console: kafkapy3 vs kafka3 on rf3."""
    w = {k: brokers.get(k, {}).get("workloads", {}).get("rf3") for k in CLUSTER_KINDS}
    if not all(w.values()):
        return None
    a, b = (w[k].get("produce", {}) for k in CLUSTER_KINDS)
    ra, rb = a.get("records_per_s"), b.get("records_per_s")
    ratio = f"{ra / rb:.2f}x" if ra and rb else "—"
    return (f"rf3 (acks=all, RF 3, min ISR 2, idempotent): kafkapy3 {_fmt(ra)} rec/s "
            f"p99 {_fmt(a.get('latency_ms', {}).get('p99'), 1)} ms; kafka3 {_fmt(rb)} rec/s "
            f"p99 {_fmt(b.get('latency_ms', {}).get('p99'), 1)} ms; ratio {ratio}")


def render_markdown(doc: dict) -> str:
    run = doc["run"]
    lines = [f"# kafkapy benchmark — {run['started_utc']}", ""]
    lines.append(f"Machine: {run['cpus']} CPUs, {run['mem_gib']} GiB, {run['platform']}; "
                 f"Python {run['python']}; confluent-kafka {run['confluent_kafka']} "
                 f"(librdkafka {run['librdkafka']}). "
                 + (f"Records scale {run['records_scale']}. " if not run.get("merged_with") else
                    "Results of several runs (each broker's run and records scale below). ")
                 + f"Driver: {run['producer_procs']} producer / {run['consumer_procs']} consumer "
                 f"process(es), separate from the broker; broker and driver share the cores.")
    lines.append("")
    brokers = doc["brokers"]
    for kind, res in brokers.items():
        b = res.get("broker", {})
        desc = b.get("version") or b.get("git_commit") or ""
        snap = res.get("source_snapshot") or {}
        if snap:
            desc += f" (source snapshot {snap.get('sha1')})"
        ri = res.get("run_info")
        if ri:   # a result merged from another run (--merge-latest)
            desc += f" [run {ri.get('started_utc')}, records scale {ri.get('records_scale')}]"
            older: dict = {}
            for n, w in res.get("workloads", {}).items():
                wri = w.get("run_info")
                if wri and wri != ri:
                    older.setdefault((wri.get("started_utc"), wri.get("records_scale")),
                                     []).append(n)
            for (t, sc), names in older.items():
                desc += f" [{', '.join(names)} from run {t}, records scale {sc}]"
        lines.append(f"- **{kind}**: status `{res.get('status')}` {desc} "
                     f"{('storage ' + b['storage_engine']) if b.get('storage_engine') else ''}"
                     f"{(b['mode'] + ', heap ' + b['heap_opts']) if b.get('mode') else ''}"
                     f"{(' git ' + b['git_commit']) if b.get('git_commit') else ''}"
                     + (f" — {res['error']}" if res.get("error") else ""))
    lines.append("")
    lines += _side_by_side_lines(brokers)
    lines += _rf3_lines(brokers, run)
    lines.append("## Throughput (acks=all, linger 5 ms, batch 64 KiB, 1 partition; "
                 "3-broker runs: 3 partitions, RF 1, one leader per broker; rf3: RF 3, "
                 "min.insync.replicas=2, idempotent producer)")
    lines.append("")
    lines.append("| broker | workload | records | produce rec/s | produce MiB/s | p50 ms | p99 ms "
                 "| consume rec/s | consume MiB/s | broker CPU produce / consume | "
                 "broker RSS peak MiB (produce / consume / after) | other load % | ok |")
    lines.append("|---|---|---:|---:|---:|---:|---:|---:|---:|---|---|---|---|")
    for kind, res in brokers.items():
        for name, w in res.get("workloads", {}).items():
            if name == "e2e":
                continue
            p, c = w.get("produce", {}), w.get("consume", {})
            pb, cb = p.get("broker", {}), c.get("broker", {})
            lat = p.get("latency_ms", {})
            after = w.get("after_idle_2s", {})
            lines.append(
                f"| {kind} | {name} ({w.get('record_size')} B"
                f"{', %d partitions' % w['partitions'] if w.get('partitions', 1) > 1 else ''}"
                f"{', RF %d' % w['replication_factor'] if w.get('replication_factor', 1) > 1 else ''}) "
                f"| {_fmt(w.get('records'))} "
                f"| {_fmt(p.get('records_per_s'))} | {_fmt(p.get('mib_per_s'), 1)} "
                f"| {_fmt(lat.get('p50'), 1)} | {_fmt(lat.get('p99'), 1)} "
                f"| {_fmt(c.get('records_per_s'))} | {_fmt(c.get('mib_per_s'), 1)} "
                f"| {_fmt(pb.get('cpu_pct'))}% / {_fmt(cb.get('cpu_pct'))}% "
                f"| {_fmt(pb.get('rss_peak_mib'))} / {_fmt(cb.get('rss_peak_mib'))} / "
                f"{_fmt(after.get('rss_mib'))} (HWM {_fmt(after.get('hwm_mib'))}) "
                f"| {_fmt(p.get('other_load_pct'))} / {_fmt(c.get('other_load_pct'))} "
                f"| {'yes' if w.get('ok') else 'NO'} |")
            ns = w.get("consume_sendfile_off")
            if ns:
                lines.append(
                    f"| {kind} | {name} consume, sendfile **off** | | | | | "
                    f"| {_fmt(ns.get('records_per_s'))} | {_fmt(ns.get('mib_per_s'), 1)} "
                    f"| — / {_fmt(ns.get('broker', {}).get('cpu_pct'))}% "
                    f"| — / {_fmt(ns.get('broker', {}).get('rss_peak_mib'))} / — "
                    f"| {_fmt(ns.get('other_load_pct'))} "
                    f"| {'yes' if ns.get('ok') else 'NO'} |")
    lines.append("")
    rep_lines = []
    for kind, res in brokers.items():
        for name, w in res.get("workloads", {}).items():
            reps = w.get("repeats")
            if not reps:
                continue
            if name == "e2e":
                txt = "; ".join(f"p50 {_fmt(r.get('p50'), 2)} / p99 {_fmt(r.get('p99'), 1)} ms"
                                f" (other {_fmt(r.get('other_load_pct'))}%)" for r in reps)
            else:
                txt = "; ".join(
                    f"{_fmt(r.get('produce_rps'))} / {_fmt(r.get('consume_rps'))}"
                    f" (other {'/'.join(_fmt(x) for x in r.get('other_load_pct') or [])}%)"
                    for r in reps)
            rep_lines.append(f"- {kind} {name}: {txt}")
    if rep_lines:
        lines += ["Every repetition (throughput: produce / consume rec/s; the table shows the "
                  "median run):", "", *rep_lines, ""]
    e2e_rows = [(k, r["workloads"]["e2e"]) for k, r in brokers.items()
                if "e2e" in r.get("workloads", {})]
    if e2e_rows:
        lines.append("## End-to-end latency (fixed rate, long-polling consumer, "
                     "fetch.wait.max.ms=500, acks=all, linger 0)")
        lines.append("")
        lines.append("| broker | rate rec/s | seconds | received | e2e p50 ms | e2e p99 ms | "
                     "e2e max ms | produce ack p50 / p99 ms | broker CPU | broker RSS peak MiB | other load % | ok |")
        lines.append("|---|---:|---:|---:|---:|---:|---:|---|---:|---:|---:|---|")
        for kind, w in e2e_rows:
            lat, ack = w.get("latency_ms", {}), w.get("produce_ack_latency_ms", {})
            lines.append(
                f"| {kind} | {_fmt(w.get('achieved_rate'))} | {_fmt(w.get('seconds'))} "
                f"| {_fmt(w.get('received'))}/{_fmt(w.get('expected'))} "
                f"| {_fmt(lat.get('p50'), 2)} | {_fmt(lat.get('p99'), 2)} "
                f"| {_fmt(lat.get('max'), 1)} | {_fmt(ack.get('p50'), 2)} / "
                f"{_fmt(ack.get('p99'), 2)} | {_fmt(w.get('broker', {}).get('cpu_pct'))}% "
                f"| {_fmt(w.get('broker', {}).get('rss_peak_mib'))} "
                f"| {_fmt(w.get('other_load_pct'))} "
                f"| {'yes' if w.get('ok') else 'NO'} |")
        lines.append("")
    lines += _ratio_lines(brokers)
    # errors
    errs = []
    for kind, res in brokers.items():
        if res.get("error"):
            errs.append(f"- {kind}: {res['error']}")
        for name, w in res.get("workloads", {}).items():
            for ph in ("", "produce", "consume", "consume_sendfile_off"):
                part = w.get(ph, {}) if ph else w
                for e in part.get("errors", []) or []:
                    errs.append(f"- {kind} {name} {ph}: {str(e)[:500]}")
    if errs:
        lines += ["## Errors", "", *errs, ""]
    # profiles
    for kind, res in brokers.items():
        for name, w in res.get("workloads", {}).items():
            for ph in ("produce", "consume", ""):
                part = w.get(ph, {}) if ph else w
                prof = part.get("profile")
                if not prof:
                    continue
                title = f"{kind} {name} {ph}".strip()
                if prof.get("error"):
                    lines += [f"### Profile {title}: {prof['error']}", ""]
                    continue
                if not prof.get("self"):
                    lines += [f"### Profile {title}: {prof.get('file')}", ""]
                    continue
                lines += [f"### Profile {title} ({prof['samples']} samples, "
                          f"`{Path(prof['file']).name}`)", "",
                          "| self % | function | | inclusive % | function |",
                          "|---:|---|---|---:|---|"]
                for i in range(min(15, len(prof["self"]))):
                    s = prof["self"][i]
                    inc = prof["inclusive"][i] if i < len(prof["inclusive"]) else {}
                    lines.append(f"| {s['pct']} | `{s['function']}` | | {inc.get('pct', '')} "
                                 f"| `{inc.get('function', '')}` |")
                lines.append("")
    lines += ["Notes: MiB = 2^20 bytes of record values. Produce latency = librdkafka "
              "per-record produce()->delivery-report time (includes client queueing, as in "
              "kafka-producer-perf-test). Consume rate is timed from assign() to the last record "
              "(time to the first record: first_record_ms in the JSON). CPU % is of one core. RSS from /proc/<pid>/status "
              "sampled every 50 ms (Kafka: the java process, default heap -Xmx1G -Xms1G, "
              "so its RSS includes the heap it has touched). tansu runs with in-memory storage "
              "(no disk); kafkapy and Kafka write a real log. 'other load' = CPU used by processes other than broker and driver "
              "during the phase (% of one core; e.g. tests running in parallel): high values "
              "mean disturbed numbers.", ""]
    return "\n".join(lines)


def _first(v):
    return v[0] if isinstance(v, tuple) else v


def _run_info(args) -> dict:
    import confluent_kafka
    try:
        mem = os.sysconf("SC_PAGE_SIZE") * os.sysconf("SC_PHYS_PAGES") / 2 ** 30
    except (ValueError, OSError):
        mem = 0
    return {
        "started_utc": _dt.datetime.now(_dt.timezone.utc).strftime("%Y-%m-%dT%H:%M:%SZ"),
        "cpus": os.cpu_count(), "mem_gib": round(mem, 1), "platform": platform.platform(),
        "python": platform.python_version(), "confluent_kafka": _first(confluent_kafka.version()),
        "librdkafka": _first(confluent_kafka.libversion()), "records_scale": args.records_scale,
        "producer_procs": args.producer_procs, "consumer_procs": args.consumer_procs,
        "workloads": args.workloads, "argv": sys.argv[1:],
    }


def write_results(doc: dict, results_dir: Path, stamp: str, latest: bool) -> list[Path]:
    results_dir.mkdir(parents=True, exist_ok=True)
    md = render_markdown(doc)
    js = json.dumps(doc, indent=2, default=str)
    paths = []
    names = [stamp] + (["latest"] if latest else [])
    for n in names:
        for ext, text in (("json", js), ("md", md)):
            p = results_dir / f"{n}.{ext}"
            tmp = p.with_suffix(p.suffix + ".tmp")
            tmp.write_text(text)
            os.replace(tmp, p)
            paths.append(p)
    return paths


def parse_args(argv: list[str] | None) -> argparse.Namespace:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0],
                                 formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--only", default="all", metavar="KINDS",
                    help="which brokers to benchmark, a comma list of kafkapy, kafka, peer "
                         "(= tansu), kafkapy3, kafka3, or all (default: all). kafkapy3 = "
                         "three kafkapy brokers on a ZooKeeper (topics with 3 partitions, RF 1; "
                         "rf3: RF 3); kafka3 = the same with Kafka 3.9 in ZooKeeper mode; "
                         "e.g. --only kafkapy3,kafka3 --workloads rf3")
    ap.add_argument("--workloads", default=",".join(DEFAULT_WORKLOADS),
                    help=f"comma list from {ALL_WORKLOADS} (default %(default)s; "
                         "'sendfile' adds a sendfile-off consume pass for kafkapy)")
    ap.add_argument("--records-scale", type=float, default=1.0,
                    help="multiply record counts (0.1 = quick run)")
    ap.add_argument("--repeat", type=int, default=1,
                    help="repetitions of every workload, brokers interleaved; the report "
                         "shows the median run (by produce rec/s; e2e by p50) and all runs")
    ap.add_argument("--producer-procs", type=int, default=2)
    ap.add_argument("--consumer-procs", type=int, default=1)
    ap.add_argument("--producer-conf", action="append", default=[], metavar="K=V",
                    help="extra librdkafka producer setting (repeatable)")
    ap.add_argument("--consumer-conf", action="append", default=[], metavar="K=V",
                    help="extra librdkafka consumer setting (repeatable)")
    ap.add_argument("--broker-override", action="append", default=[], metavar="K=V",
                    help="extra kafkapy --override (repeatable)")
    ap.add_argument("--kafka-override", action="append", default=[], metavar="K=V",
                    help="extra Kafka server property (repeatable)")
    ap.add_argument("--kafka-heap-opts", default="", metavar="OPTS",
                    help="KAFKA_HEAP_OPTS for Kafka (default: the start script's "
                         "-Xmx1G -Xms1G, what a user gets)")
    ap.add_argument("--bootstrap", help="benchmark an already running broker (not started or "
                                        "stopped by us; with --only kafkapy, kafka or peer)")
    ap.add_argument("--broker-pid", type=int, help="pid of the --bootstrap broker, for RSS/CPU")
    ap.add_argument("--shared-broker", action="store_true",
                    help="one broker for all workloads instead of a fresh one per workload")
    ap.add_argument("--e2e-rate", type=int, default=1000)
    ap.add_argument("--e2e-seconds", type=float, default=10.0)
    ap.add_argument("--e2e-size", type=int, default=100)
    ap.add_argument("--profile", action="store_true",
                    help="py-spy the kafkapy broker during each phase (hot functions in report)")
    ap.add_argument("--profile-svg", action="store_true",
                    help="with --profile: write flamegraph SVGs instead of the raw tables")
    ap.add_argument("--wait-quiet", type=float, default=60.0, metavar="SECS",
                    help="before each broker start wait up to SECS for the machine to be "
                         "under 15%% busy (0: don't wait); other load is recorded per phase")
    ap.add_argument("--driver-nice", type=int, default=19,
                    help="rf3: the driver processes lower their CPU priority by this much "
                         "(os.nice) so that librdkafka's idempotent producers, which poll "
                         "with a zero timeout while their one request is in flight, do not "
                         "take the brokers' CPU (default 19; 0: same priority)")
    ap.add_argument("--phase-timeout", type=float, default=600.0)
    ap.add_argument("--start-timeout", type=float, default=60.0)
    ap.add_argument("--results-dir", default=str(RESULTS_DIR))
    ap.add_argument("--work-dir", help="where brokers' log dirs go (default: a new temp dir)")
    ap.add_argument("--no-snapshot", action="store_true",
                    help="run kafkapy from the work tree instead of a copy taken at start")
    ap.add_argument("--keep", action="store_true", help="keep the work dir (logs, broker output)")
    ap.add_argument("--no-java-producer", action="store_true",
                    help="rf3: skip the runs with Kafka's Java producer "
                         "(kafka-producer-perf-test)")
    ap.add_argument("--no-stage-trace", action="store_true",
                    help="rf3: start kafkapy's brokers without KAFKAPY_STAGE_TRACE (no stage "
                         "breakdown)")
    ap.add_argument("--no-latest", action="store_true",
                    help="write only the timestamped copy, not latest.json/md")
    ap.add_argument("--merge-latest", action="store_true",
                    help="keep the other brokers' results of the current latest.json and "
                         "add (or replace) the ones run now, each marked with its run's "
                         "time and records scale (e.g. --only kafkapy3 beside a full run)")
    args = ap.parse_args(argv)
    args.workloads = [w.strip() for w in args.workloads.split(",") if w.strip()]
    bad = set(args.workloads) - set(ALL_WORKLOADS)
    if bad:
        ap.error(f"unknown workloads {sorted(bad)}; choose from {ALL_WORKLOADS}")
    only = [k.strip() for k in args.only.split(",") if k.strip()]
    only = ["peer" if k == "tansu" else k for k in only]
    bad = set(only) - set(KINDS) - {"all"}
    if bad or not only:
        ap.error(f"unknown --only {sorted(bad)}; choose from {list(KINDS)}, tansu or all")
    args.only = "all" if "all" in only else ",".join(dict.fromkeys(only))
    if args.bootstrap and (args.only == "all" or "," in args.only):
        ap.error("--bootstrap needs --only kafkapy, kafka or peer")
    if args.profile_svg:
        args.profile = True
    return args


def _previous_latest(results_dir: Path) -> dict | None:
    try:
        return json.loads((results_dir / "latest.json").read_text())
    except (OSError, ValueError):
        return None


def _merged(doc: dict, previous: dict | None) -> dict:
    """``doc`` plus the brokers of ``previous`` it did not run, in report order; every
    broker's result then says which run (time, records scale) it comes from."""
    if not previous:
        return doc
    def info(run: dict) -> dict:
        return {"started_utc": run.get("started_utc"), "records_scale": run.get("records_scale")}
    brokers: dict = {}
    order = list(KINDS) + [k for k in {**previous.get("brokers", {}), **doc["brokers"]}
                           if k not in KINDS]
    for kind in order:
        if kind in doc["brokers"]:
            new = dict(doc["brokers"][kind], run_info=info(doc["run"]))
            old = previous.get("brokers", {}).get(kind)
            if old and old.get("workloads") and new.get("status") != "unavailable":
                # Workloads of this broker not run now stay, each marked with its run.
                old_info = old.get("run_info") or info(previous["run"])
                kept = {n: dict(w, run_info=w.get("run_info") or old_info)
                        for n, w in old["workloads"].items() if n not in new["workloads"]}
                if kept:
                    new["workloads"] = {**kept, **{n: dict(w, run_info=new["run_info"])
                                                   for n, w in new["workloads"].items()}}
            brokers[kind] = new
        elif kind in previous.get("brokers", {}):
            old = previous["brokers"][kind]
            brokers[kind] = dict(old, run_info=old.get("run_info") or info(previous["run"]))
    return {"run": dict(doc["run"], merged_with=info(previous.get("run", {}))),
            "brokers": brokers}


def main(argv: list[str] | None = None) -> int:
    args = parse_args(argv)
    stamp = _dt.datetime.now(_dt.timezone.utc).strftime("%Y%m%dT%H%M%SZ")
    run_id = stamp.lower()
    if args.work_dir:
        work_root = Path(args.work_dir)
        work_root.mkdir(parents=True, exist_ok=True)
    else:
        work_root = Path(tempfile.mkdtemp(prefix="kafkapy-bench-"))
    log(f"work dir {work_root}")
    doc = {"run": _run_info(args), "brokers": {}}
    previous = _previous_latest(Path(args.results_dir)) if args.merge_latest else None
    kinds = list(KINDS) if args.only == "all" else args.only.split(",")
    runs = {kind: BrokerRun(kind, args, work_root, run_id) for kind in kinds}
    try:
        live = [k for k in kinds if runs[k].prepare()]
        for kind in kinds:
            doc["brokers"][kind] = runs[kind].result
        # Interleaved: rep 1 of workload A on every broker, then B, ..., then rep 2: both
        # brokers see the same share of whatever else loads the machine.
        for rep in range(args.repeat):
            for name in args.workloads:
                if name == "sendfile":
                    continue
                for kind in live:
                    if not runs_workload(kind, name, args.bootstrap):
                        continue
                    runs[kind].run_one(name, rep)
                    write_results(_merged(doc, previous), Path(args.results_dir), stamp,
                                  latest=not args.no_latest)
        for kind in kinds:
            doc["brokers"][kind] = runs[kind].finish()
    finally:
        doc["run"]["finished_utc"] = _dt.datetime.now(_dt.timezone.utc).strftime(
            "%Y-%m-%dT%H:%M:%SZ")
        doc = _merged(doc, previous)
        paths = write_results(doc, Path(args.results_dir), stamp, latest=not args.no_latest)
        if args.keep:
            log(f"kept work dir {work_root}")
        elif not args.work_dir:
            shutil.rmtree(work_root, ignore_errors=True)
    print(render_markdown(doc))
    summary = rf3_summary(doc["brokers"])
    if summary:
        log(summary)
    log("wrote " + ", ".join(str(p.relative_to(ROOT)) if p.is_relative_to(ROOT) else str(p)
                             for p in paths))
    ok = all(doc["brokers"][k].get("status") in ("ok", "skipped") for k in kinds)
    return 0 if ok else 1


if __name__ == "__main__":
    sys.exit(main())
