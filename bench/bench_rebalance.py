"""Rebalance latency: a 4th member joins a 3-member group of 60 partitions, until every
partition is consumed again; kafkapy beside Apache Kafka 3.9, per group protocol.

The figure (one row per case, the median of ``--repeat`` runs, 3 by default):

- ``4th assigned``: from the 4th member's ``subscribe()`` (t0) to its first non-empty
  assignment (the start of its ``onPartitionsAssigned``);
- ``all assigned``: t0 to the moment every partition is owned by its final owner (for a
  partition that never stopped, t0 itself);
- ``all consumed again``: t0 to the moment every partition has had a record consumed by its
  final owner after t0 and after that owner (re)acquired it; the max over the partitions,
  i.e. the time until all of them are flowing again;
- ``revoked``: partitions revoked or lost by some member after t0 (every one for eager);
  ``moved``: partitions whose owner after the rebalance is not their owner at t0.

A run is: a fresh group; ``--members`` (3) consumers subscribe and the run waits until they
own the ``--partitions`` (60) partitions, balanced, every one flowing (``--settle-timeout``),
then ``--steady`` seconds more; the 4th consumer, already constructed, subscribes at t0 and
the others mark t0; the run ends once the 4 members own every partition, balanced, every one
flowing again (``--measure-timeout``).  A run that does not finish in time fails; the row
shows how many ran to the end.  One producer process writes ``--rate`` records a second to
every partition (16 B, acks=1) for the whole time the broker is up, so every partition
always has new data; a new owner starts from the committed offset (the client's defaults:
auto commit, also on revocation; ``auto.offset.reset=earliest``).

Cases (``--cases``, comma-separated keys; default all):
  kafkapy-eager, kafkapy-coop     classic protocol, RangeAssignor (eager) and
                                  CooperativeStickyAssignor (incremental), broker defaults
  kafkapy-consumer                ``group.protocol=consumer``, ``group.remote.assignor=uniform``,
                                  broker defaults (heartbeat interval 5 s)
  kafkapy-consumer-hb1s           the same with ``group.consumer.heartbeat.interval.ms=1000``
                                  (and its minimum lowered to allow it)
  kafka-eager, kafka-coop         Kafka 3.9 KRaft, its sample config (classic only)
  kafka-consumer-preview          Kafka 3.9 with ``group.coordinator.rebalance.protocols=
                                  classic,consumer``: 3.9's *preview* of the protocol
                                  (ConsumerGroupHeartbeat v0)
  kafka-consumer-preview-hb1s     the same with the 1 s heartbeat interval
Each broker is started once for its cases (kafkapy as ``python -m kafkapy`` from a copy of its
source taken at start, ``bench/brokers.py``; Kafka 3.9 KRaft combined mode as
``bench/peers.py`` runs it for ``run_bench.py``: its sample config with only addresses, dirs,
``num.partitions=1`` and ``group.initial.rebalance.delay.ms=0`` changed, the delay only ever
applies to an empty group's first join, never to the 4th member's); the repeats of its cases
are interleaved (run 1 of each case, then run 2, ...).

Clients: every member is the Apache Kafka Java client 4.3 (``bench/RebalanceMember.java``,
compiled at start against ``.cache/java-clients/4.3.0``, one JVM per member: ``-Xmx256m``,
serial GC, C1 only), the same in every row; it is the client that works with both protocols on
both brokers (librdkafka 2.16 needs ConsumerGroupHeartbeat v1, which Kafka 3.9 lacks).  The
producer is confluent-kafka.  Members report times from ``System.nanoTime()`` (CLOCK_MONOTONIC
on Linux, what ``time.monotonic()`` reads here; checked on every member start).

Invariants: every wait is bounded (broker start, topic, producer, settle, measure, member
stop); every process started is stopped in ``finally`` (members: "stop" then SIGKILL;
brokers: SIGTERM then SIGKILL to their process group); every listener is on 127.0.0.1 and
every file is under a temporary work dir (removed at the end unless ``--keep``).  A broker that cannot be had
(no Kafka dir, no java) makes its rows ``unavailable``; the exit status is 1 when a row that
could run finished no run.  Results: ``--out`` (default ``bench/results/rebalance-latest``)
``.md`` and ``.json`` (every run with its assignment timeline; a failed run with the
producer's last status, the broker's output tail and the members' last words).
"""
from __future__ import annotations

import argparse
import collections
import json
import os
import platform
import shutil
import signal
import statistics
import subprocess
import sys
import tempfile
import threading
import time
import uuid
from dataclasses import dataclass, field
from pathlib import Path
from typing import NamedTuple

sys.path.insert(0, str(Path(__file__).resolve().parent))

from brokers import ROOT, KafkapyBroker, _git_commit, snapshot_source  # noqa: E402
from peers import JavaProgram, KafkaBroker, PeerUnavailable  # noqa: E402
from procstats import system_cpu_seconds, wait_until_quiet  # noqa: E402

PY = sys.executable
TOPIC = "rebalance"
JAVA_CLIENT = "4.3.0"
MEMBER_SOURCE = Path(__file__).resolve().parent / "RebalanceMember.java"
JVM_OPTS = ["-Xms64m", "-Xmx256m", "-XX:+UseSerialGC", "-XX:TieredStopAtLevel=1",
            "-Dlog4j2.level=ERROR", "-Dlog4j2.StatusLogger.level=OFF"]
RANGE = "org.apache.kafka.clients.consumer.RangeAssignor"
COOPERATIVE = "org.apache.kafka.clients.consumer.CooperativeStickyAssignor"
CONSUMER = {"group.protocol": "consumer", "group.remote.assignor": "uniform"}
HEARTBEAT_1S = {"group.consumer.heartbeat.interval.ms": "1000",
                "group.consumer.min.heartbeat.interval.ms": "1000"}
PREVIEW = {"group.coordinator.rebalance.protocols": "classic,consumer"}
GO_AHEAD_S = 0.3      # t0 is this far after the mark and go lines are sent
POLL_S = 0.02


class RunFailed(RuntimeError):
    """One run could not finish (a wait ran out, a member died); the message says where."""


def log(msg: str) -> None:
    print(f"[rebalance {time.strftime('%H:%M:%S')}] {msg}", file=sys.stderr, flush=True)


# -- cases ------------------------------------------------------------------------------------


@dataclass(frozen=True)
class Broker:
    key: str
    kind: str                      # "kafkapy" or "kafka"
    overrides: dict = field(default_factory=dict)


@dataclass(frozen=True)
class Case:
    key: str
    label: str
    broker: Broker
    consumer: dict
    heartbeat: str                 # what bounds the members' discovery of a rebalance
    preview: bool = False


_KAFKAPY = Broker("kafkapy", "kafkapy")
_KAFKAPY_HB1S = Broker("kafkapy-hb1s", "kafkapy", HEARTBEAT_1S)
_KAFKA = Broker("kafka", "kafka")
_KAFKA_PREVIEW = Broker("kafka-preview", "kafka", PREVIEW)
_KAFKA_PREVIEW_HB1S = Broker("kafka-preview-hb1s", "kafka", {**PREVIEW, **HEARTBEAT_1S})

CASES = [
    Case("kafkapy-eager", "kafkapy, classic, eager (range)", _KAFKAPY,
         {"partition.assignment.strategy": RANGE}, "client 3 s"),
    Case("kafkapy-coop", "kafkapy, classic, cooperative-sticky", _KAFKAPY,
         {"partition.assignment.strategy": COOPERATIVE}, "client 3 s"),
    Case("kafkapy-consumer", "kafkapy, consumer protocol (uniform)", _KAFKAPY, CONSUMER,
         "broker 5 s"),
    Case("kafkapy-consumer-hb1s", "kafkapy, consumer protocol (uniform), heartbeat 1 s",
         _KAFKAPY_HB1S, CONSUMER, "broker 1 s"),
    Case("kafka-eager", "Kafka 3.9, classic, eager (range)", _KAFKA,
         {"partition.assignment.strategy": RANGE}, "client 3 s"),
    Case("kafka-coop", "Kafka 3.9, classic, cooperative-sticky", _KAFKA,
         {"partition.assignment.strategy": COOPERATIVE}, "client 3 s"),
    Case("kafka-consumer-preview", "Kafka 3.9, consumer protocol PREVIEW (v0, uniform)",
         _KAFKA_PREVIEW, CONSUMER, "broker 5 s", preview=True),
    Case("kafka-consumer-preview-hb1s",
         "Kafka 3.9, consumer protocol PREVIEW (v0, uniform), heartbeat 1 s",
         _KAFKA_PREVIEW_HB1S, CONSUMER, "broker 1 s", preview=True),
]


def select_cases(keys: str | None, only: str | None = None) -> list[Case]:
    """The cases named in ``keys`` (comma-separated; None: all), of broker kind ``only``."""
    wanted = [k.strip() for k in keys.split(",") if k.strip()] if keys else None
    known = {c.key for c in CASES}
    unknown = [k for k in wanted or () if k not in known]
    if unknown:
        raise ValueError(f"unknown case(s) {', '.join(unknown)}; known: {', '.join(sorted(known))}")
    return [c for c in CASES if (wanted is None or c.key in wanted)
            and (only is None or c.broker.kind == only)]


# -- member events and their analysis ----------------------------------------------------------


class Event(NamedTuple):
    t: float                       # seconds, CLOCK_MONOTONIC
    kind: str                      # START SUBSCRIBE ASSIGNED REVOKED LOST FIRST CLOSED ERROR
    parts: tuple[int, ...] = ()
    text: str = ""


KINDS = ("START", "SUBSCRIBE", "ASSIGNED", "REVOKED", "LOST", "FIRST", "CLOSED", "ERROR")


def parse_line(line: str) -> Event | None:
    """A RebalanceMember stdout line as an Event; None for anything else (a client's log)."""
    words = line.strip().split(" ", 2)
    if len(words) < 2 or words[0] not in KINDS or not words[1].lstrip("-").isdigit():
        return None
    t = int(words[1]) / 1e9
    rest = words[2] if len(words) > 2 else ""
    if words[0] == "ERROR":
        return Event(t, "ERROR", (), rest)
    try:
        parts = tuple(int(p) for p in rest.split(",") if p)
    except ValueError:
        return None
    return Event(t, words[0], parts)


def analyse(events: dict[str, list[Event]], partitions: int, since: float,
            newcomer: str | None = None) -> dict:
    """Where the group stands after ``since`` from its members' events.

    ``complete``: the members named in ``events`` own every partition exactly once, balanced
    (counts differ by at most 1, none empty), and each partition's owner has consumed a record
    of it after ``since`` and after acquiring it; otherwise ``missing`` says what is not yet
    so.  Times are seconds after ``since``.
    """
    owned: dict[str, set[int]] = {}
    acquired: dict[tuple[str, int], float] = {}
    first: dict[tuple[str, int], float] = {}
    at_since: dict[int, str] = {}
    revoked: set[int] = set()
    newcomer_assigned = None
    for member, evs in events.items():
        mine: set[int] = set()
        before = True
        for e in sorted(evs, key=lambda e: e.t):
            if before and e.t >= since:
                before = False
                at_since.update((p, member) for p in mine)
            if e.kind == "ASSIGNED":
                mine.update(e.parts)
                acquired.update(((member, p), e.t) for p in e.parts)
                if member == newcomer and e.parts and newcomer_assigned is None and not before:
                    newcomer_assigned = e.t - since
            elif e.kind in ("REVOKED", "LOST"):
                mine.difference_update(e.parts)
                if not before:
                    revoked.update(e.parts)
            elif e.kind == "FIRST":
                first.update(((member, p), e.t) for p in e.parts)
        if before:
            at_since.update((p, member) for p in mine)
        owned[member] = mine
    out = {"complete": False, "owned": {m: len(s) for m, s in sorted(owned.items())},
           "newcomer_assigned_s": newcomer_assigned, "revoked": len(revoked)}
    owner: dict[int, str] = {}
    for member, mine in owned.items():
        for p in mine:
            if p in owner:
                return dict(out, missing=f"partition {p} owned by {owner[p]} and {member}")
            owner[p] = member
    unowned = [p for p in range(partitions) if p not in owner]
    if unowned:
        return dict(out, missing=f"{len(unowned)} partitions unowned, e.g. {unowned[:5]}")
    counts = [len(s) for s in owned.values()]
    if min(counts) == 0 or max(counts) - min(counts) > 1:
        return dict(out, missing=f"not balanced: {out['owned']}")
    flowing, assigned, waiting = [], [], []
    for p, member in sorted(owner.items()):
        start = max(acquired.get((member, p), since), since)
        assigned.append(start - since)
        f = first.get((member, p))
        if f is None or f < start:
            waiting.append(p)
        else:
            flowing.append(f - since)
    if waiting:
        return dict(out, missing=f"{len(waiting)} partitions not consumed yet by their owner, "
                                 f"e.g. {waiting[:5]}")
    return dict(out, complete=True, missing=None, all_assigned_s=max(assigned),
                all_flowing_s=max(flowing),
                moved=sum(1 for p, m in owner.items() if at_since.get(p) != m))


def timeline(events: dict[str, list[Event]], since: float) -> list[list]:
    """The assignment changes from ``since - 0.5`` s on, in time order: [ms after since,
    member, kind, partitions] (FIRST events left out: there is one per partition)."""
    rows = [[round((e.t - since) * 1000, 1), member, e.kind, list(e.parts)]
            for member, evs in events.items() for e in evs
            if e.t >= since - 0.5 and e.kind in ("SUBSCRIBE", "ASSIGNED", "REVOKED", "LOST")]
    return sorted(rows)


# -- summaries and the report ------------------------------------------------------------------

FIGURES = ("newcomer_assigned_s", "all_assigned_s", "all_flowing_s", "revoked", "moved",
           "machine_busy_pct")


def summarise(runs: list[dict]) -> dict:
    """Median (and min, max) of every figure over the runs that finished."""
    ok = [r for r in runs if r.get("status") == "ok"]
    out: dict = {"runs": len(runs), "ok": len(ok)}
    for key in FIGURES:
        values = sorted(r[key] for r in ok if r.get(key) is not None)
        if values:
            out[key] = {"median": statistics.median(values), "min": values[0],
                        "max": values[-1]}
    return out


def fmt_s(v) -> str:
    return "-" if v is None else f"{v:.2f}"


def _median(stats: dict, key: str, fmt=fmt_s) -> str:
    return fmt(stats[key]["median"]) if key in stats else "-"


def _spread(stats: dict, key: str) -> str:
    if key not in stats:
        return "-"
    return f"{fmt_s(stats[key]['min'])}–{fmt_s(stats[key]['max'])}"


def _count(v) -> str:
    return f"{v:.0f}" if v == int(v) else f"{v:.1f}"


def table(doc: dict) -> list[str]:
    p = doc["args"]["partitions"]
    lines = [f"| case | heartbeat | runs ok | 4th assigned, s | all {p} assigned, s | "
             f"all {p} consumed again, s | (min–max) | revoked | moved | machine busy % |",
             "|---|---|---:|---:|---:|---:|---|---:|---:|---:|"]
    for row in doc["rows"]:
        s = row.get("summary") or {}
        if row.get("status") == "unavailable":
            lines.append(f"| {row['label']} | {row['heartbeat']} | unavailable | - | - | - | - "
                         "| - | - | - |")
            continue
        lines.append(
            f"| {row['label']} | {row['heartbeat']} | {s.get('ok', 0)} of {s.get('runs', 0)} | "
            f"{_median(s, 'newcomer_assigned_s')} | {_median(s, 'all_assigned_s')} | "
            f"**{_median(s, 'all_flowing_s')}** | {_spread(s, 'all_flowing_s')} | "
            f"{_median(s, 'revoked', _count)} | {_median(s, 'moved', _count)} | "
            f"{_median(s, 'machine_busy_pct', lambda v: f'{v:.0f}')} |")
    return lines


def failures(doc: dict) -> list[str]:
    lines = []
    for row in doc["rows"]:
        if row.get("error"):
            lines.append(f"- {row['label']}: {row.get('status')}: {row['error']}")
        for i, run in enumerate(row.get("runs", ()), 1):
            if run.get("status") != "ok":
                producer = run.get("producer")
                lines.append(f"- {row['label']}, run {i}: {run.get('error')}"
                             + (f" (producer then: {json.dumps(producer)})"
                                if isinstance(producer, dict) else ""))
    return lines


def render(doc: dict) -> str:
    a, h = doc["args"], doc["host"]
    p, m = a["partitions"], a["members"]
    lines = [
        "# Rebalance: a member joins a group until every partition is consumed again "
        "(`bench/bench_rebalance.py`)", "",
        f"Run {doc['when']} at commit {doc.get('git_commit')}; {a['repeat']} runs per case, "
        "medians shown.", "",
        f"Machine: {h['cpus']} CPUs, {h['mem_gib']} GiB, {h['platform']}; Python "
        f"{h['python']}; {h['java']}; members: Apache Kafka Java client {JAVA_CLIENT} (one JVM "
        f"each); producer: confluent-kafka {h['confluent_kafka']}; "
        f"{doc.get('kafka_version') or 'Kafka 3.9 not run'}.", "",
        f"A topic of {p} partitions gets {a['rate']:g} records/s on every partition from one "
        f"producer throughout. {m} members consume it, balanced and every partition flowing; "
        f"then a member joins: t0 is its `subscribe()`. **4th assigned**: t0 to its first "
        f"non-empty assignment. **all {p} assigned**: t0 until every partition is owned by its "
        f"final owner. **all {p} consumed again**: t0 until, for every partition, its final "
        "owner has consumed a record of it after t0 and after acquiring it (the max over the "
        f"partitions). **revoked**: partitions revoked from a member after t0; **moved**: "
        "partitions whose owner changed. Machine busy: all cores, during the measured window "
        "(the broker, the members and the producer included).", "",
    ]
    lines += table(doc)
    lines += [
        "", "Notes:", "",
        "- The consumer protocol's latency is bounded by its heartbeat interval "
        "(`group.consumer.heartbeat.interval.ms`, Kafka's default 5 s): a member learns of its "
        "new target assignment only in a heartbeat's answer, so the members giving partitions "
        "up learn of the join up to one interval after it, and the new member is handed the "
        "freed partitions in its next heartbeat after they were released (up to about two "
        "intervals). The `heartbeat 1 s` rows lower the broker's interval (and its minimum, "
        "`group.consumer.min.heartbeat.interval.ms`) to 1000 ms; everything else is each "
        "broker's default.",
        "- The classic protocol's members learn of the join from their next heartbeat "
        "(the client's `heartbeat.interval.ms`, 3 s by default); eager revokes every "
        "partition and waits for every member to rejoin, cooperative-sticky revokes only the "
        "moving ones and needs a second rebalance to hand them over.",
        "- Kafka 3.9's consumer protocol is a **preview** (ConsumerGroupHeartbeat v0, enabled "
        "by `group.coordinator.rebalance.protocols=classic,consumer`; Kafka says it must not be "
        "used in production); kafkapy serves the protocol as Kafka 4.x does. The Kafka 3.9 "
        "classic rows run on its sample config (classic protocol only).",
        "- The 4th member's JVM is started and its consumer constructed before t0, but its "
        "first join still loads classes and JIT-compiles (C1 only) inside the measured window, "
        "the same for every row.",
        f"- {h['cpus']} cores shared by the broker, {m + 1} member JVMs and the producer"
        + (", and by other work running on the machine at the same time (tests of other "
           "sessions): these figures are indicative; `make bench` reruns them."
           if doc.get("shared_machine") else "."),
    ]
    bad = failures(doc)
    if bad:
        lines += ["", "Runs that did not finish:", ""] + bad
    return "\n".join(lines) + "\n"


# -- processes: members, producer, brokers ------------------------------------------------------


class JavaMembers(JavaProgram):
    """RebalanceMember compiled against the Java client jars; ``command`` for one member."""

    def __init__(self, work: Path) -> None:
        super().__init__(work, MEMBER_SOURCE, JAVA_CLIENT, "member-classes", "the members")

    def command(self, bootstrap: str, group: str, settings: dict, wait_go: bool) -> list[str]:
        return ([*self.base_command(JVM_OPTS), bootstrap, group, TOPIC]
                + (["--wait-go"] if wait_go else [])
                + [f"{k}={v}" for k, v in settings.items()])


def java_version() -> str:
    try:
        out = subprocess.run(["java", "-version"], capture_output=True, text=True, timeout=30)
        return out.stderr.splitlines()[0].strip()
    except (OSError, IndexError, subprocess.TimeoutExpired):
        return "java ?"


class Member:
    """One member process; its stdout read into ``events`` by a thread."""

    def __init__(self, name: str, command: list[str], stderr_path: Path) -> None:
        self.name = name
        self.stderr_path = stderr_path
        self._events: list[Event] = []
        self._lock = threading.Lock()
        self.spawned = time.monotonic()
        with open(stderr_path, "wb") as err:
            self.proc = subprocess.Popen(command, stdin=subprocess.PIPE, stdout=subprocess.PIPE,
                                         stderr=err, text=True, bufsize=1, cwd=ROOT,
                                         start_new_session=True)
        self.start_read: float | None = None
        self.other: collections.deque[str] = collections.deque(maxlen=10)  # not events
        self._reader = threading.Thread(target=self._read, daemon=True)
        self._reader.start()

    def _read(self) -> None:
        for line in self.proc.stdout:
            e = parse_line(line)
            if e is None:
                self.other.append(line.rstrip()[:300])
                continue
            with self._lock:
                self._events.append(e)
            if e.kind == "START":
                self.start_read = time.monotonic()

    def events(self) -> list[Event]:
        with self._lock:
            return list(self._events)

    def send(self, line: str) -> None:
        try:
            self.proc.stdin.write(line + "\n")
            self.proc.stdin.flush()
        except (BrokenPipeError, OSError, ValueError):
            pass

    def check(self) -> None:
        """RunFailed if the member reported an error or exited."""
        errors = [e.text for e in self.events() if e.kind == "ERROR"]
        if errors or self.proc.poll() is not None:
            raise RunFailed(f"member {self.name} " + (f"failed: {errors[0]}" if errors else
                            f"exited {self.proc.returncode}") + f"; stderr: {self.stderr_tail()}")

    def last_words(self) -> dict:
        """For a failed run: the member's last events, other output and stderr."""
        return {"events": [list(e) for e in self.events()[-8:]], "other": list(self.other),
                "stderr": self.stderr_tail(), "returncode": self.proc.poll()}

    def stderr_tail(self, n: int = 600) -> str:
        try:
            return self.stderr_path.read_text(errors="replace")[-n:].replace("\n", " | ")
        except OSError:
            return ""

    def started_at(self) -> float | None:
        """The member's START time, once its clock was found to be the driver's."""
        start = next((e.t for e in self.events() if e.kind == "START"), None)
        if start is None:
            return None
        if not (self.spawned - 0.01 <= start <= (self.start_read or time.monotonic()) + 0.01):
            raise RuntimeError(f"member {self.name}'s clock is not CLOCK_MONOTONIC: START "
                               f"{start:.3f}, spawned {self.spawned:.3f}")
        return start

    def stop(self) -> None:
        self.send("stop")
        try:
            self.proc.stdin.close()
        except OSError:
            pass

    def reap(self, deadline: float) -> None:
        try:
            self.proc.wait(max(0.1, deadline - time.monotonic()))
        except subprocess.TimeoutExpired:
            try:
                os.killpg(self.proc.pid, signal.SIGKILL)
            except ProcessLookupError:
                pass
            self.proc.wait(10)


def _wait(pred, timeout: float, what: str, members: list[Member]):
    """Poll ``pred`` until it returns something true; RunFailed after ``timeout``."""
    deadline = time.monotonic() + timeout
    while True:
        for m in members:
            m.check()
        got = pred()
        if got:
            return got
        if time.monotonic() > deadline:
            raise RunFailed(f"{what} not within {timeout:.0f} s")
        time.sleep(POLL_S)


def _complete(members: list[Member], partitions: int, since: float,
              newcomer: str | None = None, last: dict | None = None):
    got = analyse({m.name: m.events() for m in members}, partitions, since, newcomer)
    if last is not None:
        last.update(got)
    return got if got["complete"] else None


def run_once(case: Case, java: JavaMembers, bootstrap: str, args, work: Path, rep: int,
             diagnose=dict) -> dict:
    """One run of ``case``: settle the first members, the 4th joins, time until all flow.
    A run that fails carries what ``diagnose()`` returns (the producer's and broker's state)
    and the members' last words."""
    group = f"rebalance-{case.key}-{rep}-{uuid.uuid4().hex[:8]}"
    logs = work / "members"
    logs.mkdir(parents=True, exist_ok=True)
    everyone: list[Member] = []
    state: dict = {}
    try:
        for i in range(args.members + 1):
            name = f"m{i + 1}" if i < args.members else "new"
            everyone.append(Member(name, java.command(bootstrap, group, case.consumer,
                                                      i == args.members),
                                   logs / f"{group}-{name}.err"))
        _wait(lambda: all(m.started_at() for m in everyone), args.start_timeout,
              "member JVMs started", everyone)
        settle_s = _settle(everyone[:-1], args, state, everyone)
        time.sleep(args.steady)
        return dict(_join(everyone, args, state), settle_s=settle_s)
    except RunFailed as e:
        return dict(diagnose(), status="failed",
                    error=f"{e}; last state: {state.get('missing')} {state.get('owned')}",
                    members={m.name: m.last_words() for m in everyone})
    finally:
        for m in everyone:
            m.stop()
        deadline = time.monotonic() + 20
        for m in everyone:
            m.reap(deadline)


def _settle(members: list[Member], args, state: dict, everyone: list[Member]) -> float:
    """Seconds until the first members own every partition, balanced, each one flowing."""
    t = time.monotonic()
    _wait(lambda: _complete(members, args.partitions, float("-inf"), last=state),
          args.settle_timeout, f"{args.members} members settled", everyone)
    return time.monotonic() - t


def _join(everyone: list[Member], args, state: dict) -> dict:
    """The last member subscribes at t0 (the others mark it); the figures once all flow."""
    members, newcomer = everyone[:-1], everyone[-1]
    busy0 = system_cpu_seconds()
    t0 = time.monotonic() + GO_AHEAD_S
    for m in members:
        m.send(f"mark {int(t0 * 1e9)}")
    newcomer.send(f"go {int(t0 * 1e9)}")
    state.clear()
    got = _wait(lambda: _complete(everyone, args.partitions, t0, newcomer.name, state),
                args.measure_timeout, f"all {args.partitions} flowing on {len(everyone)} "
                "members", everyone)
    busy1 = system_cpu_seconds()
    # The figures count from the newcomer's subscribe(), which can come a little after the
    # planned t0 the others marked (the analysis's origin).
    late = next((e.t for e in newcomer.events() if e.kind == "SUBSCRIBE"), t0) - t0
    for key in ("newcomer_assigned_s", "all_assigned_s", "all_flowing_s"):
        if got.get(key) is not None:
            got[key] -= late
    return dict(got, status="ok", subscribe_late_ms=late * 1000,
                timeline=timeline({m.name: m.events() for m in everyone}, t0 + late),
                machine_busy_pct=100 * (busy1[0] - busy0[0]) / max(1e-9, busy1[1] - busy0[1]))


def produce_forever(bootstrap: str, partitions: int, rate: float) -> int:
    """The producer process: ``rate`` records a second to every partition until stdin ends.

    Prints READY once the first round is delivered, a STATUS line (JSON) every 5 s and
    another at the end: rounds sent, records delivered, delivery errors, seconds since the
    last delivery.  A round that cannot be queued (a full local queue: the broker not
    acknowledging; or a client error, kept in ``last_error``) is skipped rather than ending
    the process, and shows as ``skipped`` and a growing ``since_delivery_s``."""
    from confluent_kafka import KafkaException, Producer

    stop = threading.Event()
    threading.Thread(target=lambda: (sys.stdin.read(), stop.set()), daemon=True).start()
    counts = {"rounds": 0, "skipped": 0, "delivered": 0, "errors": 0}
    last = [time.monotonic()]

    def done(err, _msg) -> None:
        counts["errors" if err is not None else "delivered"] += 1
        last[0] = time.monotonic()

    def status() -> None:
        print("STATUS " + json.dumps(dict(counts, since_delivery_s=round(
            time.monotonic() - last[0], 1))), flush=True)

    p = Producer({"bootstrap.servers": bootstrap, "linger.ms": 5, "acks": 1})
    if not _first_round(p, partitions, done, counts):
        return 1
    interval, next_t, next_status = 1.0 / rate, time.monotonic(), time.monotonic() + 5
    while not stop.is_set():
        try:
            for part in range(partitions):
                p.produce(TOPIC, b"r" * 16, partition=part, on_delivery=done)
            counts["rounds"] += 1
        except (BufferError, KafkaException) as e:
            counts["skipped"] += 1
            counts["last_error"] = f"{type(e).__name__}: {e}"[:200]
        p.poll(0)
        if time.monotonic() >= next_status:
            status()
            next_status += 5
        next_t = max(next_t + interval, time.monotonic() - 1.0)  # no catch-up burst
        stop.wait(max(0.0, next_t - time.monotonic()))
    p.flush(10)
    status()
    return 0


def _first_round(p, partitions: int, done, counts: dict) -> bool:
    for part in range(partitions):
        p.produce(TOPIC, b"r" * 16, partition=part, on_delivery=done)
    counts["rounds"] += 1
    p.flush(60)
    if counts["delivered"] < partitions:
        print(f"FAILED first round: {counts['delivered']} of {partitions} delivered", flush=True)
        return False
    print("READY", flush=True)
    return True


class ProducerProcess:
    """``produce_forever`` in a process of its own, its output in a file."""

    def __init__(self, bootstrap: str, args, out: Path) -> None:
        self.out = out
        with open(out, "wb") as f:
            self.proc = subprocess.Popen(
                [PY, __file__, "--produce", bootstrap, "--partitions", str(args.partitions),
                 "--rate", str(args.rate)], stdin=subprocess.PIPE, stdout=f,
                stderr=subprocess.STDOUT, cwd=ROOT, start_new_session=True)

    def wait_ready(self, timeout: float) -> None:
        deadline = time.monotonic() + timeout
        while time.monotonic() < deadline:
            text = self.out.read_text(errors="replace")
            if "READY" in text:
                return
            if self.proc.poll() is not None or "FAILED" in text:
                raise RuntimeError(f"producer failed: {text[-1500:]}")
            time.sleep(0.1)
        raise RuntimeError("producer's first round not delivered in time")

    def status(self) -> dict | str | None:
        """The producer's last STATUS, or its output's tail if it exited."""
        text = self.out.read_text(errors="replace")
        for line in reversed(text.splitlines()):
            if line.startswith("STATUS "):
                got = json.loads(line[len("STATUS "):])
                return got if self.proc.poll() is None else dict(got, exited=self.proc.returncode)
        return text[-800:] if self.proc.poll() is not None else None

    def stop(self) -> dict | str | None:
        try:
            self.proc.stdin.close()
            self.proc.wait(20)
        except (OSError, subprocess.TimeoutExpired):
            os.killpg(self.proc.pid, signal.SIGKILL)
            self.proc.wait(10)
        return self.status()


def create_topic(bootstrap: str, partitions: int, timeout: float) -> None:
    from confluent_kafka.admin import AdminClient, NewTopic

    admin = AdminClient({"bootstrap.servers": bootstrap})
    admin.create_topics([NewTopic(TOPIC, partitions, 1)], operation_timeout=timeout,
                        request_timeout=timeout)[TOPIC].result(timeout)
    del admin


def make_broker(b: Broker, args, work: Path):
    if b.kind == "kafka":
        return KafkaBroker(work / b.key, overrides=b.overrides)  # PeerUnavailable without it
    src = None
    if not args.no_snapshot:  # edits to the work tree during the run cannot reach the broker
        src = Path(snapshot_source(work / "kafkapy-src")["dir"])
    return KafkapyBroker(work / b.key, python=PY, source_dir=src, overrides=b.overrides)


def stop_broker(b) -> None:
    if b is None or b.proc is None:
        return
    try:
        b.stop(30)
    except Exception:  # noqa: BLE001 - the kill below still runs
        pass
    if b.alive():
        b.kill()
    try:
        os.killpg(b.proc.pid, signal.SIGKILL)
    except (ProcessLookupError, PermissionError):
        pass


def run_broker(broker: Broker, cases: list[Case], java: JavaMembers, args, work: Path,
               rows: dict) -> dict:
    """Start ``broker``, run its cases' repeats interleaved into ``rows``; its description."""
    info: dict = {"key": broker.key, "overrides": broker.overrides}
    b = producer = None
    try:
        if args.wait_quiet > 0:
            info["quiet"] = wait_until_quiet(args.wait_quiet, log=log)
        b = make_broker(broker, args, work)
        log(f"{broker.key}: starting")
        b.start(args.start_timeout)
        info["describe"] = {k: v for k, v in b.describe().items() if k != "settings"}
        create_topic(b.bootstrap, args.partitions, 60)
        producer = ProducerProcess(b.bootstrap, args, work / f"{broker.key}-producer.out")
        producer.wait_ready(60)
        for rep in range(args.repeat):
            for case in cases:
                log(f"{case.key}: run {rep + 1} of {args.repeat}")
                run = run_once(case, java, b.bootstrap, args, work, rep,
                               lambda: {"producer": producer.status(),
                                        "broker_tail": b.output_tail(1500)})
                rows[case.key]["runs"].append(run)
                log(f"{case.key}: " + (f"all flowing after {run['all_flowing_s']:.2f} s, 4th "
                                       f"assigned after {fmt_s(run['newcomer_assigned_s'])} s"
                                       if run["status"] == "ok" else f"FAILED {run['error']}"))
    except PeerUnavailable as e:
        for case in cases:
            rows[case.key].update(status="unavailable", error=str(e))
        log(f"{broker.key}: unavailable: {e}")
    except Exception as e:  # noqa: BLE001 - its rows fail, the other brokers still run
        error = f"{type(e).__name__}: {e}"
        for case in cases:
            rows[case.key].setdefault("error", error)
        info["error"] = error
        info["output_tail"] = b.output_tail(2000) if b is not None else ""
        log(f"{broker.key}: FAILED {error}")
    finally:
        if producer is not None:
            info["producer"] = producer.stop()
        stop_broker(b)
    return info


def host() -> dict:
    import confluent_kafka

    mem = os.sysconf("SC_PAGE_SIZE") * os.sysconf("SC_PHYS_PAGES") / 2**30
    return {"cpus": os.cpu_count(), "mem_gib": round(mem, 1), "platform": platform.platform(),
            "python": platform.python_version(), "java": java_version(),
            "confluent_kafka": confluent_kafka.__version__}


def run(args, work: Path) -> dict:
    cases = select_cases(args.cases, args.only)
    rows = {c.key: {"key": c.key, "label": c.label, "heartbeat": c.heartbeat,
                    "broker": c.broker.key, "consumer": c.consumer, "preview": c.preview,
                    "status": "ok", "runs": []} for c in cases}
    doc = {"when": time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime()),
           "git_commit": _git_commit(), "host": host(), "args": vars(args),
           "command": " ".join([".venv/bin/python", "bench/bench_rebalance.py", *args.argv]),
           "brokers": {}, "shared_machine": False}
    java = JavaMembers(work)
    try:
        java.prepare()
    except PeerUnavailable as e:
        for row in rows.values():
            row.update(status="unavailable", error=str(e))
        cases = []
    t_start = time.monotonic()
    brokers = {c.broker.key: c.broker for c in cases}
    for broker in brokers.values():
        mine = [c for c in cases if c.broker.key == broker.key]
        doc["brokers"][broker.key] = run_broker(broker, mine, java, args, work, rows)
        quiet = doc["brokers"][broker.key].get("quiet") or {}
        if quiet.get("busy_pct_before", 0) >= 15:
            doc["shared_machine"] = True
        if broker.kind == "kafka" and "describe" in doc["brokers"][broker.key]:
            doc["kafka_version"] = doc["brokers"][broker.key]["describe"].get("version")
    for row in rows.values():
        row["summary"] = summarise(row["runs"])
        if row["status"] == "ok" and row["summary"]["ok"] == 0:
            row["status"] = "failed"
    doc["rows"] = list(rows.values())
    doc["wall_s"] = time.monotonic() - t_start
    doc["shared_machine"] = doc["shared_machine"] or args.shared_machine
    return doc


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--repeat", type=int, default=3, help="runs per case (median reported)")
    ap.add_argument("--cases", help="comma-separated case keys (default: all)")
    ap.add_argument("--only", choices=["kafkapy", "kafka"], help="one broker kind's cases")
    ap.add_argument("--partitions", type=int, default=60)
    ap.add_argument("--members", type=int, default=3, help="members before the join")
    ap.add_argument("--rate", type=float, default=20.0, help="records/s to every partition")
    ap.add_argument("--steady", type=float, default=2.0,
                    help="seconds the settled group consumes before the join")
    ap.add_argument("--settle-timeout", type=float, default=120.0)
    ap.add_argument("--measure-timeout", type=float, default=60.0)
    ap.add_argument("--start-timeout", type=float, default=120.0,
                    help="a broker's start, and the member JVMs' start")
    ap.add_argument("--wait-quiet", type=float, default=30.0,
                    help="before each broker: wait up to SECS for the machine to be <15%% busy")
    ap.add_argument("--shared-machine", action="store_true",
                    help="say in the report that other work shared the machine")
    ap.add_argument("--no-snapshot", action="store_true",
                    help="run the work tree's kafkapy, not a copy taken at start")
    ap.add_argument("--keep", action="store_true",
                    help="keep the work dir (brokers', members' and producer's output)")
    ap.add_argument("--out", default=str(ROOT / "bench" / "results" / "rebalance-latest"))
    ap.add_argument("--produce", metavar="BOOTSTRAP", help=argparse.SUPPRESS)
    args = ap.parse_args(argv)
    if args.produce:
        return produce_forever(args.produce, args.partitions, args.rate)
    args.argv = sys.argv[1:] if argv is None else list(argv)
    work = Path(tempfile.mkdtemp(prefix="bench-rebalance-"))
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
