"""Share groups (KIP-932): five consumers on one partition, acknowledged records a second and
the fetch-to-ack latency, beside a classic consumer group of five on five partitions.

Cases (``--cases``, comma-separated keys; default all):
  kafkapy-share-explicit   5 ``KafkaShareConsumer``s of one share group on a 1-partition topic,
                           ``share.acknowledgement.mode=explicit``: each record ACCEPTed, then
                           ``commitSync()`` after every poll
  kafkapy-share-implicit   the same in implicit mode: a poll's records are accepted by the
                           next poll's ShareFetch (the client's default)
  kafkapy-classic          5 ``KafkaConsumer``s of one classic group (range assignor) on a
                           5-partition topic, auto commit off, ``commitSync()`` after every poll
  kafka-classic            the classic case on Apache Kafka 3.9 (it has no share groups, so the
                           share cases run on kafkapy only)

Each run: a fresh topic gets ``--records`` (100,000) records of ``--record-size`` (1 KiB)
bytes (confluent-kafka producer, acks=1, spread evenly over the partitions), then one JVM runs
the 5 consumers as threads (``bench/ShareBench.java``, Apache Kafka Java client 4.3, compiled at
start) until every record is acknowledged (``--run-timeout``).  Figures, from the JVM's
``System.nanoTime()``:

- **acked records/s**: records acknowledged / (last acknowledgement answered - first poll
  that returned records);
- **fetch-to-ack p50 / p99**: per record, from the return of the poll that handed it out to
  the answer to its acknowledgement (explicit and classic: ``commitSync`` returning; implicit:
  the acknowledgement commit callback naming it, which runs inside a later poll);
- **all flowing after**: from the first poll with records until every consumer had one;
- **redelivered**: records handed out with a delivery count above 1 (share cases).
The broker's CPU time over the consumers' run (``/proc/<pid>/stat``) per 1,000 records
acknowledged is its cost.

The kafkapy broker runs as ``python -m kafkapy`` from a copy of the source taken at start
(``bench/brokers.py``), with share groups served and its defaults otherwise; Kafka 3.9 in
KRaft combined mode as ``bench/peers.py`` runs it.  Runs are interleaved per case
(``--repeat``, 3 by default: run 1 of each case, then run 2, ...); the report shows medians.

Invariants: every wait is bounded (broker start, produce, each run); every process started
is stopped in ``finally``; listeners on 127.0.0.1, files under a temporary work dir (removed
unless ``--keep``).  A case that cannot run (no Kafka, no java) is ``unavailable``; the exit
status is 1 when a case that could run finished no run.  Results: ``--out`` (default
``bench/results/share-latest``) ``.md`` and ``.json``.
"""
from __future__ import annotations

import argparse
import json
import os
import platform
import shutil
import statistics
import subprocess
import sys
import tempfile
import time
from dataclasses import dataclass
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))

from brokers import ROOT, KafkapyBroker, _git_commit, snapshot_source  # noqa: E402
from peers import JavaProgram, KafkaBroker, PeerUnavailable  # noqa: E402
from procstats import cpu_seconds, wait_until_quiet  # noqa: E402

JAVA_CLIENT = "4.3.0"
PROGRAM = Path(__file__).resolve().parent / "ShareBench.java"
JVM_OPTS = ["-Xms128m", "-Xmx512m", "-Dlog4j2.level=ERROR", "-Dlog4j2.StatusLogger.level=OFF"]
CONSUMERS = 5
#: share groups on (kafkapy serves them when the rebalance protocols list ``share``).
KAFKAPY_SHARE = {"group.coordinator.rebalance.protocols": "classic,consumer,share"}


def log(msg: str) -> None:
    print(f"[share {time.strftime('%H:%M:%S')}] {msg}", file=sys.stderr, flush=True)


# -- cases ------------------------------------------------------------------------------------

@dataclass(frozen=True)
class Case:
    key: str
    label: str
    broker: str          # "kafkapy" or "kafka"
    mode: str            # ShareBench's mode
    partitions: int


CASES = (
    Case("kafkapy-share-explicit", "kafkapy, share group, explicit ACCEPT + commitSync",
         "kafkapy", "share-explicit", 1),
    Case("kafkapy-share-implicit", "kafkapy, share group, implicit acknowledgement",
         "kafkapy", "share-implicit", 1),
    Case("kafkapy-classic", "kafkapy, classic group, commitSync", "kafkapy", "classic",
         CONSUMERS),
    Case("kafka-classic", "Kafka 3.9, classic group, commitSync", "kafka", "classic",
         CONSUMERS),
)


def select_cases(spec: str | None) -> list[Case]:
    if not spec:
        return list(CASES)
    keys = [k.strip() for k in spec.split(",") if k.strip()]
    known = {c.key: c for c in CASES}
    unknown = [k for k in keys if k not in known]
    if unknown:
        raise SystemExit(f"unknown case(s): {', '.join(unknown)}; known: {', '.join(known)}")
    return [known[k] for k in keys]


# -- the program's result line and the figures -------------------------------------------------

def parse_result(line: str) -> dict | None:
    """ShareBench's ``RESULT k=v ...`` line as a dict (numbers as int/float, ``per_member`` a
    list of ints); None for any other line."""
    if not line.startswith("RESULT "):
        return None
    out: dict = {}
    for item in line.split()[1:]:
        key, _, value = item.partition("=")
        if key == "per_member":
            out[key] = [int(v) for v in value.split(",") if v]
        elif key.endswith("_us"):
            out[key] = float(value)
        else:
            out[key] = int(value)
    return out


def figures(result: dict, records: int) -> dict:
    """One run's figures from its RESULT: ok when every record was acknowledged."""
    span_s = (result["last_ns"] - result["first_ns"]) / 1e9
    acked = result["acked"]
    ok = acked >= records and span_s > 0
    flowing = result["all_flowing_ns"]
    steady_s = (result["last_ns"] - flowing) / 1e9 if flowing >= 0 else 0.0
    steady = (round(result["acked_all_flowing"] / steady_s, 1)
              if steady_s > 0 and result["acked_all_flowing"] >= records // 2 else None)
    return {"ok": ok, "acked": acked,
            "records_per_s": round(acked / span_s, 1) if span_s > 0 else None,
            "all_flowing_records_per_s": steady,
            "span_s": round(span_s, 3),
            "all_flowing_s": (round((flowing - result["first_ns"]) / 1e9, 3)
                              if flowing >= 0 else None),
            "p50_ms": round(result["p50_us"] / 1e3, 3), "p99_ms": round(result["p99_us"] / 1e3, 3),
            "max_ms": round(result["max_us"] / 1e3, 3), "redelivered": result["redelivered"],
            "errors": result["errors"], "per_member": result.get("per_member", [])}


def summarize(runs: list[dict]) -> dict:
    """Medians over the runs that acknowledged every record (``None`` figures if none did)."""
    good = [r for r in runs if r.get("ok")]

    def med(key):
        values = [r[key] for r in good if r.get(key) is not None]
        return round(statistics.median(values), 3) if values else None

    return {"runs_ok": len(good), "runs": len(runs),
            **{k: med(k) for k in ("records_per_s", "all_flowing_records_per_s", "p50_ms",
                                   "p99_ms", "all_flowing_s", "broker_cpu_ms_per_1k")},
            "rate_range": ((min(r["records_per_s"] for r in good),
                            max(r["records_per_s"] for r in good)) if good else None),
            "redelivered": sum(r.get("redelivered", 0) for r in good)}


# -- report -----------------------------------------------------------------------------------

def _num(v, fmt="{:,.0f}") -> str:
    return "–" if v is None else fmt.format(v)


def table(doc: dict) -> list[str]:
    lines = ["| case | partitions | runs ok | acked records/s | (min–max) | records/s, all 5 "
             "flowing | fetch-to-ack p50, ms | p99, ms | all flowing after, s | redelivered "
             "| broker CPU ms / 1,000 records |",
             "|---|---:|---:|---:|---|---:|---:|---:|---:|---:|---:|"]
    for row in doc["rows"]:
        s = row.get("summary") or {}
        if row["status"] == "unavailable":
            lines.append(f"| {row['label']} | {row['partitions']} | unavailable: "
                         f"{row.get('error', '')} | | | | | | | | |")
            continue
        rng = s.get("rate_range")
        lines.append(
            f"| {row['label']} | {row['partitions']} | {s.get('runs_ok', 0)} of "
            f"{s.get('runs', 0)} | **{_num(s.get('records_per_s'))}** | "
            f"{_num(rng[0]) + '–' + _num(rng[1]) if rng else '–'} | "
            f"{_num(s.get('all_flowing_records_per_s'))} | "
            f"{_num(s.get('p50_ms'), '{:.1f}')} | **{_num(s.get('p99_ms'), '{:.1f}')}** | "
            f"{_num(s.get('all_flowing_s'), '{:.2f}')} | {s.get('redelivered', '–')} | "
            f"{_num(s.get('broker_cpu_ms_per_1k'), '{:,.1f}')} |")
    return lines


def render(doc: dict) -> str:
    a, h = doc["args"], doc["host"]
    lines = [
        "# Share groups: five consumers on one partition (`bench/bench_share.py`)", "",
        f"Run {doc['when']} at commit {doc.get('git_commit')}; {a['repeat']} runs per case, "
        "medians shown.", "",
        f"Machine: {h['cpus']} CPUs, {h['mem_gib']} GiB, {h['platform']}; Python "
        f"{h['python']}; {h['java']}; consumers: Apache Kafka Java client {JAVA_CLIENT}, "
        f"{CONSUMERS} threads of one JVM; producer: confluent-kafka {h['confluent_kafka']}; "
        f"{doc.get('kafka_version') or 'Kafka 3.9 not run'}.", "",
        f"Each run: a fresh topic holds {a['records']:,} records of {a['record_size']} B; "
        f"{CONSUMERS} consumers read and acknowledge all of them. **acked records/s**: records "
        "acknowledged / (last acknowledgement answered − first poll that returned records). "
        "**records/s, all 5 flowing**: the same from the moment every consumer had records "
        "(share members get their assignment in a heartbeat's answer, so they start apart; "
        "shown when at least half the records were acknowledged after it). "
        "**fetch-to-ack**: per record, from the return of the poll that handed it out to the "
        "answer to its acknowledgement (`commitSync` returning; implicit mode: the "
        "acknowledgement commit callback naming it). **all flowing after**: first poll with "
        "records until every consumer had one. **broker CPU**: the broker's CPU time from the "
        "consumers' start to their end (group joins included) per 1,000 records "
        "acknowledged.", "",
    ]
    lines += table(doc)
    busy = [q.get("busy_pct_before") for k, q in doc.items() if k.startswith("quiet_")]
    busy = [b for b in busy if b is not None and b >= 15]
    lines += [
        "", "Notes:", "",
        *([f"- The machine was up to {max(busy):.0f}% busy before the runs (other work "
           "sharing it): every figure here is disturbed by it."] if busy else []),
        "- A share row's p99 can reach the client's `fetch.max.wait.ms` (500 ms by default; "
        "with 100 ms, a 50,000-record probe gave p99 70–115 ms): an acknowledgement is "
        "answered only after that consumer's ShareFetch, parked at the broker while no record "
        "can be acquired, comes back (implicit mode: the acknowledgements ride on that very "
        "fetch). A share partition's in-flight records are capped "
        "(`group.share.partition.max.record.locks`, 2000) from its start offset on, so with "
        "five consumers fetches park whenever the oldest records are still acquired, and at "
        "the end of a run.",
        "- Kafka 3.9 has no share groups (KIP-932 is Kafka 4.x), so the share rows are "
        "kafkapy's alone; the comparison is the same load through a classic group, which "
        "needs one partition per consumer to spread it (a share group spreads one partition's "
        "records over every member).",
        "- A share group's records are acquired by the partition's leader in ranges of whole "
        "batches, each with its state, lock and delivery count (split only where "
        "acknowledgements differ), and each acknowledgement is written to "
        "`__share_group_state` before it is answered; a classic group's commit is one offset "
        "per partition.",
        "- 2 cores shared by the broker, the consumers' JVM and the producer (the producer "
        "runs before the consumers, not during): indicative figures; `make bench` reruns them.",
    ]
    bad = [f"- {row['label']}: {run.get('error')}" for row in doc["rows"]
           for run in row.get("runs", []) if not run.get("ok")]
    if bad:
        lines += ["", "Runs that did not finish:", ""] + bad
    return "\n".join(lines) + "\n"


# -- processes ----------------------------------------------------------------------------------

class JavaBench(JavaProgram):
    """ShareBench compiled against the Java client jars."""

    def __init__(self, work: Path) -> None:
        super().__init__(work, PROGRAM, JAVA_CLIENT, "share-bench-classes", "the consumers")

    def command(self, bootstrap: str, topic: str, group: str, mode: str, records: int,
                seconds: int) -> list[str]:
        return [*self.base_command(JVM_OPTS), bootstrap, topic, group, mode,
                str(CONSUMERS), str(records), str(seconds)]


def produce(bootstrap: str, topic: str, partitions: int, records: int, size: int,
            timeout: float) -> None:
    """``records`` records of ``size`` bytes spread evenly over ``partitions`` (bounded)."""
    from confluent_kafka import Producer
    value = os.urandom(size)
    producer = Producer({"bootstrap.servers": bootstrap, "acks": 1, "linger.ms": 5,
                         "batch.size": 65536, "queue.buffering.max.kbytes": 65536})
    deadline = time.monotonic() + timeout
    failed: list = []
    for i in range(records):
        while True:
            try:
                producer.produce(topic, value, partition=i % partitions,
                                 on_delivery=lambda err, _m: err and failed.append(err))
                break
            except BufferError:
                producer.poll(0.05)
                if time.monotonic() > deadline:
                    raise RuntimeError(f"producing to {topic} took over {timeout:.0f} s")
    left = producer.flush(max(1.0, deadline - time.monotonic()))
    if left or failed:
        raise RuntimeError(f"produce to {topic}: {left} unsent, errors {failed[:3]}")


def create_topic(bootstrap: str, topic: str, partitions: int, timeout: float = 60.0) -> None:
    from confluent_kafka.admin import AdminClient, NewTopic
    admin = AdminClient({"bootstrap.servers": bootstrap})
    admin.create_topics([NewTopic(topic, partitions, 1)],
                        operation_timeout=30)[topic].result(timeout)
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        t = admin.list_topics(topic, timeout=5).topics.get(topic)
        if t is not None and t.error is None and len(t.partitions) == partitions and all(
                p.leader >= 0 for p in t.partitions.values()):
            return
        time.sleep(0.2)
    raise RuntimeError(f"topic {topic} has no leaders after {timeout:.0f} s")


def one_run(case: Case, broker, java: JavaBench, args, n: int, work: Path) -> dict:
    topic = group = f"{case.key}-{n}"
    create_topic(broker.bootstrap, topic, case.partitions)
    produce(broker.bootstrap, topic, case.partitions, args.records, args.record_size,
            args.run_timeout)
    out_path = work / f"{topic}.out"
    cpu0 = cpu_seconds(broker.pid)
    with open(out_path, "w") as out:
        proc = subprocess.Popen(java.command(broker.bootstrap, topic, group, case.mode,
                                             args.records, int(args.run_timeout)),
                                stdout=out, stderr=subprocess.STDOUT, cwd=work)
        try:
            proc.wait(args.run_timeout + 90)
        except subprocess.TimeoutExpired:
            proc.kill()
            proc.wait()
    cpu1 = cpu_seconds(broker.pid)
    text = out_path.read_text(errors="replace")
    result = next((r for r in map(parse_result, text.splitlines()) if r is not None), None)
    if result is None:
        return {"ok": False, "error": f"no RESULT (exit {proc.returncode}): {text[-1500:]}"}
    run = figures(result, args.records)
    if cpu0 is not None and cpu1 is not None and run["acked"]:
        run["broker_cpu_ms_per_1k"] = round((cpu1 - cpu0) * 1e6 / run["acked"], 1)
    errors = [line for line in text.splitlines() if line.startswith("ERROR")]
    if not run["ok"]:
        run["error"] = (f"{run['acked']} of {args.records} acknowledged; "
                        f"{errors[:3] or text[-800:]}")
    run["error_lines"] = errors[:10]
    return run


def start_broker(kind: str, work: Path, args):
    if kind == "kafkapy":
        source = None
        if not args.no_snapshot:
            source = work / "kafkapy-src"
            snapshot_source(source)
        return KafkapyBroker(work / "kafkapy", overrides=KAFKAPY_SHARE,
                             source_dir=source).start(args.start_timeout)
    return KafkaBroker(work / "kafka").start(args.start_timeout)  # PeerUnavailable without it


def host() -> dict:
    import confluent_kafka
    mem = os.sysconf("SC_PAGE_SIZE") * os.sysconf("SC_PHYS_PAGES") / 2**30
    try:
        java = subprocess.run(["java", "-version"], capture_output=True, text=True,
                              timeout=30).stderr.splitlines()[0].strip()
    except (OSError, IndexError, subprocess.TimeoutExpired):
        java = "java ?"
    return {"cpus": os.cpu_count(), "mem_gib": round(mem, 1), "platform": platform.platform(),
            "python": platform.python_version(), "java": java,
            "confluent_kafka": confluent_kafka.__version__}


def run(args, work: Path) -> dict:
    cases = select_cases(args.cases)
    rows = {c.key: {"key": c.key, "label": c.label, "broker": c.broker, "mode": c.mode,
                    "partitions": c.partitions, "status": "ok", "runs": []} for c in cases}
    doc = {"when": time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime()),
           "git_commit": _git_commit(), "host": host(), "args": vars(args),
           "command": " ".join([".venv/bin/python", "bench/bench_share.py", *args.argv])}
    java = JavaBench(work)
    try:
        java.prepare()
    except PeerUnavailable as e:
        for row in rows.values():
            row.update(status="unavailable", error=str(e))
        cases = []
    t_start = time.monotonic()
    for kind in ("kafkapy", "kafka"):
        mine = [c for c in cases if c.broker == kind]
        if not mine:
            continue
        doc["quiet_" + kind] = wait_until_quiet(args.wait_quiet, log=log)
        try:
            broker = start_broker(kind, work, args)
        except PeerUnavailable as e:
            for c in mine:
                rows[c.key].update(status="unavailable", error=str(e))
            continue
        try:
            if kind == "kafka":
                doc["kafka_version"] = f"Apache Kafka {broker.home.name.split('-')[-1]}"
            for n in range(args.repeat):
                for c in mine:
                    log(f"{c.key} run {n + 1}/{args.repeat}")
                    try:
                        r = one_run(c, broker, java, args, n, work)
                    except Exception as e:  # noqa: BLE001 - recorded, the next run goes on
                        r = {"ok": False, "error": f"{type(e).__name__}: {e}"}
                    if not r.get("ok"):
                        r["broker_tail"] = broker.output_tail(3000)
                    log(f"  {json.dumps({k: v for k, v in r.items() if k != 'broker_tail'})[:400]}")
                    rows[c.key]["runs"].append(r)
        finally:
            broker.stop()
    for row in rows.values():
        if row["status"] == "ok":
            row["summary"] = summarize(row["runs"])
            if row["summary"]["runs_ok"] == 0:
                row["status"] = "failed"
    doc["rows"] = list(rows.values())
    doc["wall_s"] = round(time.monotonic() - t_start, 1)
    return doc


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--cases", help="comma-separated case keys (default: all)")
    ap.add_argument("--records", type=int, default=100_000)
    ap.add_argument("--record-size", type=int, default=1024)
    ap.add_argument("--repeat", type=int, default=3, help="runs per case (median reported)")
    ap.add_argument("--run-timeout", type=float, default=300.0,
                    help="seconds for one run's produce, and for its consumers")
    ap.add_argument("--start-timeout", type=float, default=120.0)
    ap.add_argument("--wait-quiet", type=float, default=30.0,
                    help="before each broker: wait up to SECS for the machine to be <15%% busy")
    ap.add_argument("--no-snapshot", action="store_true",
                    help="run the work tree's kafkapy, not a copy taken at start")
    ap.add_argument("--keep", action="store_true", help="keep the work dir")
    ap.add_argument("--out", default=str(ROOT / "bench" / "results" / "share-latest"))
    args = ap.parse_args(argv)
    args.argv = sys.argv[1:] if argv is None else list(argv)
    work = Path(tempfile.mkdtemp(prefix="bench-share-"))
    try:
        doc = run(args, work)
    finally:
        if args.keep:
            log(f"work dir kept: {work}")
        else:
            shutil.rmtree(work, ignore_errors=True)
    out = Path(args.out)
    out.parent.mkdir(parents=True, exist_ok=True)
    out.with_suffix(".json").write_text(json.dumps(doc, indent=2, default=str) + "\n")
    text = render(doc)
    out.with_suffix(".md").write_text(text)
    print(text)
    log(f"wrote {out.with_suffix('.md')} ({doc['wall_s']:.0f} s)")
    return 1 if any(r["status"] == "failed" for r in doc["rows"]) else 0


if __name__ == "__main__":
    sys.exit(main())
