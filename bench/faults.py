"""Fault scenarios, long, against kafkapy and Apache Kafka 3.9: checked histories.

Runs every scenario of ``tests/support/faults/scenarios.py`` (network partitions with
iptables, pauses past the ZooKeeper session, session expiry, kill -9 and clean restarts,
a reassignment and transaction commits under partition) ``--repeat`` times against each
implementation (``--kinds``), each run on a fresh three-broker cluster of one shared
ZooKeeper, with the ``LONG`` timing (faults held 15 s past what they wait for, flapping for
45 s) unless ``--short``.  The default (2 repeats, both implementations, long) runs for
more than 20 minutes; ``--short --repeat 1`` is a try of a few minutes.

Writes ``--out`` (``bench/results/faults-latest.md``): the duration it ran and its
settings, then per scenario and implementation: runs, operations, acknowledged writes,
each anomaly's count (summed over the runs), and the longest unavailability (seconds without
a successful op, per f, the max over the runs); then what each run's schedule did and saw.
A run the harness could not finish (the cluster did not heal in time, say) is listed with
its error and counts in ``failed runs``.  Each run's history is kept under ``--keep`` when
given.  Needs root (iptables), Java and ZooKeeper's jars, and ``../shared/kafka_2.13-3.9.0``
for Kafka.
"""
from __future__ import annotations

import argparse
import shutil
import sys
import tempfile
import time
import traceback
from collections import defaultdict
from datetime import datetime, timezone
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

from tests.support.faults import scenarios  # noqa: E402
from tests.support.faults.checker import ANOMALIES  # noqa: E402
from tests.support.faults.cluster import KINDS, ZK  # noqa: E402
from tests.support.faults.net import Net  # noqa: E402
from tests.support.zookeeper_server import ZooKeeperServer  # noqa: E402

FS = ("send", "poll", "commit", "txn")
SHORT_NAMES = {"lost-write": "lost", "duplicate": "dup", "inconsistent-offsets": "incons",
               "nonmonotonic-poll": "nonmono", "poll-skip": "skip", "aborted-read": "aborted",
               "uncommitted-read": "uncommitted", "commit-backwards": "backwards",
               "divergent-replicas": "divergent"}


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--kinds", default=",".join(KINDS))
    ap.add_argument("--scenarios", default=",".join(scenarios.SCENARIOS))
    ap.add_argument("--repeat", type=int, default=2)
    ap.add_argument("--short", action="store_true", help="the tests' short timing")
    ap.add_argument("--seed", type=int, default=1)
    ap.add_argument("--out", default=str(ROOT / "bench" / "results" / "faults-latest.md"))
    ap.add_argument("--keep", help="a directory to keep each run's history in")
    args = ap.parse_args(argv)
    kinds = args.kinds.split(",")
    names = args.scenarios.split(",")
    for k in kinds:
        assert k in KINDS, k
    for n in names:
        assert n in scenarios.SCENARIOS, n
    timing = scenarios.SHORT if args.short else scenarios.LONG

    rows: dict = defaultdict(lambda: {"runs": 0, "failed": 0, "ops": 0, "acked": 0,
                                      "counts": defaultdict(int), "unavail": {}, "seconds": 0.0})
    details: list[str] = []
    began = time.monotonic()
    started_at = datetime.now(timezone.utc).strftime("%Y-%m-%d %H:%M UTC")
    work = Path(tempfile.mkdtemp(prefix="kafkapy-faults-"))
    with Net() as net:
        zk = ZooKeeperServer(work / "zk", gid=net.gid(ZK)).start()
        try:
            for rep in range(args.repeat):
                for name in names:
                    for kind in kinds:
                        base = work / f"{name}-{kind}-{rep}"
                        row = rows[(name, kind)]
                        t0 = time.monotonic()
                        print(f"[{time.monotonic() - began:7.1f}s] {name} {kind} #{rep + 1}",
                              flush=True)
                        try:
                            outcome = scenarios.run(name, kind, base, zk, net, timing,
                                                    seed=args.seed + rep)
                        except Exception as exc:  # noqa: BLE001 - recorded in the table
                            row["failed"] += 1
                            row["seconds"] += time.monotonic() - t0
                            details.append(f"- {name} / {kind} #{rep + 1}: harness error "
                                           f"{type(exc).__name__}: {str(exc)[:300]}")
                            traceback.print_exc()
                        else:
                            _add(row, outcome)
                            details.append(f"- {name} / {kind} #{rep + 1} "
                                           f"({outcome.seconds:.0f} s): "
                                           + "; ".join(outcome.notes or ["-"])
                                           + _anomaly_examples(outcome.report))
                        if args.keep:
                            dest = Path(args.keep) / base.name
                            dest.mkdir(parents=True, exist_ok=True)
                            if (base / "history.jsonl").exists():
                                shutil.copy(base / "history.jsonl", dest / "history.jsonl")
                        shutil.rmtree(base, ignore_errors=True)
        finally:
            zk.stop()
            shutil.rmtree(work, ignore_errors=True)
    elapsed = time.monotonic() - began
    text = _markdown(rows, details, names, kinds, args, timing, started_at, elapsed)
    Path(args.out).parent.mkdir(parents=True, exist_ok=True)
    Path(args.out).write_text(text)
    print(text)
    return 0


def _add(row: dict, outcome) -> None:
    report = outcome.report
    row["runs"] += 1
    row["ops"] += report.ops
    row["acked"] += report.acked
    row["seconds"] += outcome.seconds
    for k, v in report.counts.items():
        row["counts"][k] += v
    for f, s in report.longest_unavailability.items():
        row["unavail"][f] = max(row["unavail"].get(f, 0.0), s)


def _anomaly_examples(report) -> str:
    found = {k: v for k, v in report.counts.items() if v}
    if not found:
        return ""
    parts = [f"{k}={v} e.g. {report.examples[k][:1]}" for k, v in found.items()]
    return " **ANOMALIES: " + "; ".join(parts)[:1500] + "**"


def _markdown(rows, details, names, kinds, args, timing, started_at, elapsed) -> str:
    lines = [
        "# Fault scenarios: checked histories, kafkapy beside Kafka 3.9",
        "",
        f"Ran {started_at} for **{elapsed / 60:.1f} minutes**: `python bench/faults.py "
        + " ".join(_argv(args)) + "`; "
        f"{'short' if args.short else 'long'} timing (settle {timing.settle:g} s, faults held "
        f"{timing.hold:g} s past what they wait for, flapping {timing.flapping:g} s), "
        f"{args.repeat} run(s) per scenario and implementation, a fresh 3-broker cluster each "
        "(ZooKeeper session 6 s, RF 3, min.insync.replicas 2).",
        "",
        "Anomaly columns count what the checker (tests/support/faults/checker.py) found, summed "
        "over the runs: lost = acknowledged write lost, dup = duplicate, incons = inconsistent "
        "offsets, nonmono = non-monotonic poll, skip = poll skip, aborted = aborted read, "
        "uncommitted = uncommitted read, backwards = committed offset going backwards, "
        "divergent = divergent replicas.  Unavailable: the longest time without a successful "
        "op, per f (send/poll/commit/txn), max over the runs, seconds.",
        "",
        "| scenario | impl | runs | failed runs | ops | acked | "
        + " | ".join(SHORT_NAMES.get(a, a) for a in ANOMALIES)
        + " | unavailable s (send/poll/commit/txn) |",
        "|---|---|---:|---:|---:|---:|" + "---:|" * len(ANOMALIES) + "---|",
    ]
    for name in names:
        for kind in kinds:
            r = rows[(name, kind)]
            counts = [str(r["counts"].get(a, 0)) for a in ANOMALIES]
            unavail = "/".join(f"{r['unavail'][f]:.1f}" if f in r["unavail"] else "-"
                               for f in FS)
            lines.append(f"| {name} | {kind} | {r['runs']} | {r['failed']} | {r['ops']} | "
                         f"{r['acked']} | " + " | ".join(counts) + f" | {unavail} |")
    lines += ["", "## Scenarios", ""]
    lines += [f"- **{n}**: {scenarios.SCENARIOS[n].doc}" for n in names]
    lines += ["", "## Runs", ""] + details + [""]
    return "\n".join(lines)


def _argv(args) -> list[str]:
    out = [f"--kinds {args.kinds}", f"--repeat {args.repeat}"]
    if args.short:
        out.append("--short")
    if args.scenarios != ",".join(scenarios.SCENARIOS):
        out.append(f"--scenarios {args.scenarios}")
    return out


if __name__ == "__main__":
    sys.exit(main())
