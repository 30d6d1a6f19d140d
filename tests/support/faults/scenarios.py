"""Fault scenarios: a fresh cluster, workloads recording a history, a fault schedule, healing,
final reads, the replicas' logs, and the checker's report.

``run(name, kind, base, zk_server, net, timing)`` runs the scenario ``name`` (a key of
``SCENARIOS``) against a fresh ``FaultCluster`` of ``kind`` (``"kafkapy"`` or ``"kafka"``)
under ``base``, and returns an ``Outcome``.  The steps, each bounded in time:

1. start the cluster, create the topics (``DATA``: 3 partitions, RF 3, ``min.insync.replicas``
   2; the transactional scenarios also ``TXN_IN`` -> ``TXN_OUT``), wait for their leaders;
2. start the workloads (tests/support/faults/workloads.py): an idempotent acks=all producer
   writing unique values to ``DATA`` and a consumer group committing offsets on it; in the
   transactional scenarios also a producer into ``TXN_IN`` and a transactional copier from
   ``TXN_IN`` to ``TXN_OUT`` (read_committed);
3. let them run ``timing.settle`` seconds, then the scenario's fault schedule;
4. heal everything however the schedule ended (every cut lifted, paused brokers resumed,
   dead ones restarted), let the workloads run ``timing.settle`` seconds more, stop them;
5. wait until the cluster is whole (every broker registered, full ISRs, equal log ends),
   read every partition from offset 0 (both isolations) into the history, read each
   replica's log files, and check.

The history is written to ``<base>/history.jsonl``.  ``Outcome.notes`` says what the schedule
did and saw (which broker, when, whether the ISR shrank, how many writes the isolated side
acknowledged); ``Outcome.report`` is the checker's ``Report``.

``Timing``: ``SHORT`` (the tests: a fault held a few seconds past what it needs) and ``LONG``
(``bench/faults.py``).
"""
from __future__ import annotations

import json
import random
import time
from dataclasses import dataclass, field
from pathlib import Path
from typing import Callable

from tests.support import cluster_clients as clients
from tests.support.cluster import wait_for
from tests.support.faults import workloads as wl
from tests.support.faults.checker import check
from tests.support.faults.cluster import SESSION_S, ZK, FaultCluster
from tests.support.faults.history import History

DATA = "faults-data"
TXN_IN = "faults-txn-in"
TXN_OUT = "faults-txn-out"
PARTITIONS = 3
GROUP = "faults-group"


@dataclass(frozen=True)
class Timing:
    settle: float        # workload time before the first fault, and after healing
    hold: float          # how long a fault is held past the point it is waiting for
    flapping: float      # how long the flapping scenario flaps


SHORT = Timing(settle=1.5, hold=1.5, flapping=6.0)
LONG = Timing(settle=8.0, hold=15.0, flapping=45.0)


@dataclass
class Run:
    """What a fault schedule works with."""
    cluster: FaultCluster
    timing: Timing
    rng: random.Random
    history: History
    transactional_id: str | None = None
    started: float = field(default_factory=time.monotonic)
    notes: list[str] = field(default_factory=list)
    windows: list[tuple[str, float, float, set]] = field(default_factory=list)

    def note(self, text: str) -> None:
        self.notes.append(f"t={time.monotonic() - self.started:5.1f}s {text}")

    def hold(self, seconds: float | None = None) -> None:
        time.sleep(self.timing.hold if seconds is None else seconds)


@dataclass
class Scenario:
    schedule: Callable[[Run], None]
    transactional: bool = False
    assignment: dict[int, list[int]] | None = None      # DATA's, when not Kafka's choice
    data_configs: dict[str, str] | None = None           # DATA's topic configs
    doc: str = ""


@dataclass
class Outcome:
    name: str
    kind: str
    report: object
    notes: list[str]
    history_path: Path
    seconds: float


# --------------------------------------------------------------------------- schedules

def _leader_isolated(run: Run) -> None:
    """The leader of a DATA partition cut from both followers (ZooKeeper still reachable)
    until its ISR shrinks, then held: does the isolated side keep acknowledging?  The
    partition led by the controller is chosen when there is one (the controller shrinks its
    own ISR through ZooKeeper; another leader cannot reach the controller)."""
    c = run.cluster
    controller = c.controller_id()
    leaders = {p: c.leader(DATA, p) for p in range(PARTITIONS)}
    partition = next((p for p, l in leaders.items() if l == controller), 0)
    leader = leaders[partition]
    followers = [i for i in c.nodes if i != leader]
    run.note(f"isolate broker {leader} (leads {DATA}/{partition}; controller {controller}) "
             f"from brokers {followers}")
    c.isolate(leader, followers)
    shrunk_at = None
    try:
        if _wait_quietly(lambda: len(c.isr(DATA, partition)) < 3
                         or c.leader(DATA, partition) != leader, 20):
            shrunk_at = time.monotonic()
        run.note(f"{DATA}/{partition}: isr {c.isr(DATA, partition)} leader "
                 f"{c.leader(DATA, partition)}" + ("" if shrunk_at else " (no change in 20 s)"))
        run.hold()
    finally:
        c.heal()
        if shrunk_at is not None and c.leader(DATA, partition) == leader:
            run.windows.append(("isolated leader, ISR shrunk", shrunk_at, time.monotonic(),
                                {(DATA, partition)}))
        run.note("healed")


def _controller_zk_cut(run: Run) -> None:
    """The controller cut from ZooKeeper past its session: another broker takes over; the old
    one (still reachable by clients and brokers) must stop acting as controller and leader."""
    c = run.cluster
    controller = c.controller_id()
    run.note(f"cut controller {controller} from ZooKeeper")
    c.cut(controller, ZK)
    try:
        _controller_replaced(run, controller)
        run.hold()
    finally:
        c.heal()
        run.note("healed")


def _leader_paused(run: Run) -> None:
    """The leader of DATA/0 SIGSTOPped until ZooKeeper drops it, held, then SIGCONT."""
    def pause(leader: int) -> str:
        run.cluster.pause(leader)
        return ""
    _leader_paused_past_session(run, pause)


def _leader_paused_in_fsync(run: Run) -> None:
    """The leader of DATA/0 (``flush.messages=1``: every append synced) SIGSTOPped while one
    of its threads is inside fsync (it stops as the sync returns, before acting on it), held
    until ZooKeeper drops it and then the hold, then SIGCONT: it carries on from that sync
    as a broker that no longer leads."""
    def pause(leader: int) -> str:
        caught = run.cluster.pause_in_fsync(leader)
        return " during an fsync" if caught else " (no thread seen inside fsync)"
    _leader_paused_past_session(run, pause)


def _leader_paused_past_session(run: Run, pause: Callable[[int], str]) -> None:
    """The leader of DATA/0 paused by ``pause(leader)`` (which says how), held until
    ZooKeeper drops it and then the hold, then SIGCONT."""
    c = run.cluster
    leader = c.leader(DATA, 0)
    how = pause(leader)
    run.note(f"SIGSTOP broker {leader} (leads {DATA}/0){how}")
    try:
        c.wait_unregistered(leader)
        run.note(f"broker {leader} unregistered; {DATA}/0 leader {c.leader(DATA, 0)}")
        run.hold()
    finally:
        c.resume(leader)
        run.note(f"SIGCONT broker {leader}")


def _flapping(run: Run) -> None:
    """Cuts between random pairs (brokers and ZooKeeper) for up to 2 s each, healed and
    cut again, for ``timing.flapping`` seconds."""
    c = run.cluster
    members = [*sorted(c.nodes), ZK]
    deadline = time.monotonic() + run.timing.flapping
    cuts = 0
    try:
        while time.monotonic() < deadline:
            a, b = run.rng.sample(members, 2)
            c.cut(a, b)
            cuts += 1
            time.sleep(run.rng.uniform(0.5, 2.0))
            c.heal()
            time.sleep(run.rng.uniform(0.2, 1.0))
    finally:
        c.heal()
        run.note(f"{cuts} cuts in {run.timing.flapping:.0f} s")


_REASSIGNED = {0: [1, 2], 1: [2, 3], 2: [3, 1]}
_TARGET = [2, 3]


def _reassignment_partition(run: Run) -> None:
    """DATA/0 (RF 2 on [1, 2], led by 1) reassigned to [2, 3] while broker 3, the replica
    being added, is cut from the leader: the reassignment waits; healed, it must finish."""
    c = run.cluster
    leader = c.leader(DATA, 0)
    run.note(f"cut broker 3 from broker {leader} (leader of {DATA}/0), reassign to {_TARGET}")
    c.cut(3, leader)
    try:
        c.zk.create("/admin/reassign_partitions", json.dumps({"version": 1, "partitions": [
            {"topic": DATA, "partition": 0, "replicas": _TARGET}]}).encode())
        _wait_quietly(lambda: set(_TARGET) <= set(c.assignment(DATA)[0]), 15)
        run.note(f"{DATA}/0 replicas {c.assignment(DATA)[0]} isr {c.isr(DATA, 0)}")
        run.hold()
    finally:
        c.heal()
        run.note("healed")
    done = _wait_quietly(lambda: c.assignment(DATA)[0] == _TARGET
                         and not c.zk.exists("/admin/reassign_partitions"), 60)
    run.note(f"reassignment {'finished' if done else 'NOT finished in 60 s'}: "
             f"replicas {c.assignment(DATA)[0]} isr {c.isr(DATA, 0)}")


def _txn_commit_partition(run: Run) -> None:
    """The copier's transaction coordinator cut from the other brokers while it commits
    (its markers cannot reach the other leaders), held, healed."""
    c = run.cluster
    coordinator = c.txn_coordinator(run.transactional_id)
    others = [i for i in c.nodes if i != coordinator]
    run.note(f"isolate transaction coordinator {coordinator} from brokers {others}")
    c.isolate(coordinator, others)
    try:
        run.hold(run.timing.hold + 4)
    finally:
        c.heal()
        run.note("healed")


def _group_coordinator_killed(run: Run) -> None:
    """kill -9 of the consumer group's coordinator, restarted after a while."""
    _killed_and_restarted(run, run.cluster.group_coordinator(GROUP), "group coordinator")


def _txn_coordinator_killed(run: Run) -> None:
    """kill -9 of the copier's transaction coordinator in the middle of its transactions."""
    _killed_and_restarted(run, run.cluster.txn_coordinator(run.transactional_id),
                          "transaction coordinator")


def _killed_and_restarted(run: Run, broker: int, what: str) -> None:
    """kill -9 of ``broker``, held, started again."""
    run.note(f"kill -9 {what} {broker}")
    run.cluster.kill(broker)
    try:
        run.hold()
    finally:
        run.cluster.restart(broker)
        run.note(f"restarted broker {broker}")


def _controller_paused(run: Run) -> None:
    """The controller SIGSTOPped until another broker has taken over, held, then SIGCONT:
    the old controller wakes up believing it still controls, and must be fenced (its
    requests carry an old controller epoch)."""
    c = run.cluster
    controller = c.controller_id()
    run.note(f"SIGSTOP controller {controller}")
    c.pause(controller)
    try:
        _controller_replaced(run, controller)
        run.hold()
    finally:
        c.resume(controller)
        run.note(f"SIGCONT broker {controller}")


def _controller_replaced(run: Run, controller: int) -> None:
    """Wait (a session and more) until another broker controls, and note who does."""
    c = run.cluster
    moved = _wait_quietly(lambda: c.controller_id() not in (None, controller), SESSION_S + 20)
    run.note(f"controller now {c.controller_id()}" + ("" if moved else " (unchanged)"))


def _leader_session_expired(run: Run) -> None:
    """A leader (not the controller) cut from ZooKeeper until its session expires, healed:
    it registers again and rejoins as a follower."""
    c = run.cluster
    controller = c.controller_id()
    leader = next((c.leader(DATA, p) for p in range(PARTITIONS)
                   if c.leader(DATA, p) != controller), c.leader(DATA, 0))
    led = {(DATA, p) for p in range(PARTITIONS) if c.leader(DATA, p) == leader}
    run.note(f"expire broker {leader}'s ZooKeeper session (leads {sorted(led)})")
    c.expire_session(leader)
    run.note(f"healed; {DATA} leaders {[c.leader(DATA, p) for p in range(PARTITIONS)]}")


def _rolling_restart(run: Run) -> None:
    """Each broker in turn stopped cleanly (SIGTERM) and started again."""
    c = run.cluster
    for i in sorted(c.nodes):
        c.clean_restart(i)
        run.note(f"broker {i} restarted")
        c.wait_ready()


SCENARIOS: dict[str, Scenario] = {
    "leader-isolated": Scenario(_leader_isolated),
    "controller-zk-cut": Scenario(_controller_zk_cut),
    "leader-paused": Scenario(_leader_paused),
    "controller-paused": Scenario(_controller_paused),
    "leader-paused-in-fsync": Scenario(_leader_paused_in_fsync,
                                       data_configs={"flush.messages": "1"}),
    "leader-session-expired": Scenario(_leader_session_expired),
    "flapping": Scenario(_flapping),
    "reassignment-partition": Scenario(_reassignment_partition, assignment=_REASSIGNED),
    "txn-commit-partition": Scenario(_txn_commit_partition, transactional=True),
    "group-coordinator-killed": Scenario(_group_coordinator_killed),
    "txn-coordinator-killed": Scenario(_txn_coordinator_killed, transactional=True),
    "rolling-restart": Scenario(_rolling_restart),
}
for _s in SCENARIOS.values():
    _s.doc = " ".join((_s.schedule.__doc__ or "").split())


def _wait_quietly(condition, timeout: float) -> bool:
    """``wait_for`` that answers False at the deadline instead of raising."""
    try:
        return bool(wait_for(condition, timeout, "condition"))
    except AssertionError:
        return False


# --------------------------------------------------------------------------- running one

def run(name: str, kind: str, base: Path, zk_server, net, timing: Timing = SHORT,
        seed: int = 0) -> Outcome:
    """Run scenario ``name`` against a fresh cluster of ``kind``; see the module docstring."""
    scenario = SCENARIOS[name]
    base = Path(base)
    begun = time.monotonic()
    cluster = FaultCluster(base / "cluster", zk_server, net, kind=kind)
    history = History()
    r = Run(cluster, timing, random.Random(seed), history)
    topics = [DATA] + ([TXN_IN, TXN_OUT] if scenario.transactional else [])
    try:
        cluster.start()
        _create_topics(cluster, topics, scenario.assignment, scenario.data_configs)
        workloads = _workloads(scenario, r)
        for w in workloads:
            w.start(cluster.bootstrap_all(), history)
        try:
            time.sleep(timing.settle)
            r.started = time.monotonic()
            scenario.schedule(r)
        finally:
            _heal_all(cluster, r)
            try:
                time.sleep(timing.settle)
            finally:
                for w in reversed(workloads):
                    w.stop()
                    r.notes.extend(f"workload error: {e}" for e in w.errors)
        cluster.wait_healthy(topics)
        for topic in topics:
            wl.final_reads(cluster.bootstrap_all(), topic, history)
        logs = cluster.replica_logs(topics)
        r.notes.extend(_acknowledged_in_windows(history, r.windows))
        report = check(history, logs)
    finally:
        path = base / "history.jsonl"
        history.dump(path)
        cluster.stop()
    return Outcome(name, kind, report, r.notes, path, time.monotonic() - begun)


def _create_topics(c: FaultCluster, topics, assignment, data_configs) -> None:
    via = c.bootstrap(c.controller_id() or 1)
    for topic in topics:
        configs = data_configs if topic == DATA else None
        if topic == DATA and assignment is not None:
            clients.create_topic(via, topic, assignment=assignment, configs=configs)
        else:
            clients.create_topic(via, topic, partitions=PARTITIONS, replication=3,
                                 configs=configs)
        c.wait_topic(topic, PARTITIONS)


def _workloads(scenario: Scenario, r: Run) -> list:
    """Bounded in seconds well past any schedule (``stop()`` ends them); the transactional
    scenarios add a producer feeding ``TXN_IN``, one copier to ``TXN_OUT`` and a
    read_committed group on ``TXN_OUT``."""
    bound = dict(max_seconds=900.0)
    out = [wl.ProducerWorkload(DATA, interval=0.02, max_ops=100_000, name="producer", **bound),
           wl.GroupConsumerWorkload(DATA, group=GROUP, name="consumer", **bound)]
    if scenario.transactional:
        copier = wl.TxnCopierWorkload(TXN_IN, TXN_OUT, group=f"{GROUP}-copier", copiers=1,
                                      max_ops=100_000, name="copier", **bound)
        r.transactional_id = f"{copier.txn_prefix}-0"      # the one copier's id
        out += [wl.ProducerWorkload(TXN_IN, producers=1, interval=0.02, max_ops=100_000,
                                    name="feeder", **bound),
                copier,
                wl.GroupConsumerWorkload(TXN_OUT, group=f"{GROUP}-out", consumers=1,
                                         isolation="read_committed", name="reader", **bound)]
    return out


def _heal_all(c: FaultCluster, r: Run) -> None:
    """Lift every cut, resume paused brokers, start dead ones."""
    c.heal()
    for i in sorted(c.paused):
        c.resume(i)
    for i in sorted(c.nodes):
        if i not in c.running_ids():
            c.restart(i)
            r.note(f"broker {i} started again")


def _acknowledged_in_windows(history: History, windows) -> list[str]:
    """For each window in which the faulty side led partitions alone (ISR shrunk to it, its
    leadership unchanged): how many sends to them were acknowledged meanwhile (completion
    inside the window), which with ``min.insync.replicas`` 2 must be none."""
    notes = []
    for what, start, end, partitions in windows:
        acked = [op for op in history.ops if op["f"] == "send" and op["type"] == "ok"
                 and start <= op["time"] <= end
                 and (op.get("topic"), op.get("partition")) in partitions]
        notes.append(f"{what} window {end - start:.1f} s: {len(acked)} writes to "
                     f"{sorted(partitions)} acknowledged during it")
    return notes
