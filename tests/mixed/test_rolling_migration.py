"""A rolling migration: three Kafka 3.9 brokers replaced by kafkapy one at a time
under traffic, then back to Kafka one at a time.

The cluster: brokers 1, 2, 3 of Apache Kafka 3.9 (ZooKeeper mode,
``inter.broker.protocol.version=3.9``) on one ZooKeeper chroot.  Topics, all RF=3 with
``min.insync.replicas=2`` and small segments (several segments and indexes in every log dir):

- ``migrate`` (3 partitions, one preferred leader per broker): Kafka's own
  ``kafka-verifiable-producer.sh`` (kafka-clients 3.9, ``enable.idempotence=true``, acks=-1,
  retries, 100 repeating keys so every partition gets records) writes "0", "1", ... at a
  bounded rate from before the first replacement to after the last;
  ``kafka-verifiable-consumer.sh`` consumes it in group ``live-group``, committing
  synchronously after every poll.
- ``settled`` (3 partitions): written once before the migration; group ``settled-group``
  commits known offsets on it and never again.  Its partitions get no writes, so a broker
  leading one of them for the length of a step leads an epoch without appending, and the
  preferred election after the step makes it follow again.

Each step replaces one broker in place: SIGTERM (a controlled shutdown through whichever
broker is the controller, so leaderships move away first), wait for the exit, start the
other implementation with the same ``broker.id``, ``log.dirs`` and port, wait until it is back in
the ISR of every partition (ZooKeeper's state and every broker's Metadata), restore the
preferred leaders (ElectLeaders, so both kinds lead partitions in the mixed steps) and see
the producer's acknowledgements move on.  Forward 1, 2, 3 become kafkapy; then 1, 2, 3
become Kafka again.  Between the two directions the verifiable consumer is stopped and a
new one joins the same group: it must start every partition at the group's committed
offset (the group resumes where it left off).

Afterwards: no acknowledged record lost (each at the partition and offset it was
acknowledged with), no value twice in the log (idempotence held across every leader move
and every replacement), no send error (but the one send the producer's own shutdown may
cut before it reaches a broker), ``settled-group``'s offsets unchanged, every
partition fully replicated with byte-identical replicas, and Kafka's
``kafka-topics.sh --describe`` and ``kafka-consumer-groups.sh --describe`` correct against
the final cluster.  Every wait is bounded; traffic to 127.0.0.1 only.
"""
from __future__ import annotations

import pytest

from tests.support.cluster_clients import (audit_acked, commit_offsets, committed_offsets,
                                   create_topic, describe_topic, elect_preferred,
                                   produce_confluent)
from tests.support.mixed import PARTITIONS, consumer_groups_describe, read_log
from tests.support.verifiable import JsonLinesTool
from tests.support.mixed import CLUSTER_SETTINGS, Mixed, kafka_tool, wait_for

SETTINGS = dict(CLUSTER_SETTINGS, **{
    "inter.broker.protocol.version": "3.9",
    # A JVM on a busy 2-core machine can pause for seconds: 6 s sessions, as the scouting.
    "zookeeper.session.timeout.ms": "6000",
    "replica.fetch.wait.max.ms": "200",
})
IDS = (1, 2, 3)
ASSIGNMENT = {0: [1, 2, 3], 1: [2, 3, 1], 2: [3, 1, 2]}   # one preferred leader per broker
TOPIC_CONFIGS = {"min.insync.replicas": "2", "segment.bytes": "16384"}
SETTLED_RECORDS = 50
SETTLED_COMMITS = {0: 7, 1: 23, 2: 50}
THROUGHPUT = 150              # records/s
MAX_MESSAGES = 60_000         # bounds the producer to ~400 s even if the test forgot it
PROGRESS = 150                # acknowledgements each step must see after the replacement
STEP_S = 120                  # bound for any one wait of a step
PREFERRED_TOPICS = ("migrate", "settled")


# The error Kafka's producer gives a send() that runs while the producer is closing.
CLOSING_SEND = "Producer closed while send in progress"


# --------------------------------------------------------------------------- cluster views

def _send_errors(errors: list[dict], acked: dict, logged: set) -> list[dict]:
    """The producer's send errors but the one its own shutdown can cause: on SIGTERM
    Kafka's VerifiableProducer sets its stop flag and closes the producer from its shutdown
    hook, and a send() its main thread is already in fails with ``CLOSING_SEND`` before the
    record is batched.  Such a record is the last one sent, never acknowledged and not in
    the log; anything else (two of them, an earlier value, a logged one) counts."""
    last_acked = max((int(v) for v in acked), default=-1)
    cut = [e for e in errors if e.get("message") == CLOSING_SEND
           and int(e["value"]) > last_acked and e["value"] not in logged]
    return errors if len(cut) > 1 else [e for e in errors if e not in cut]


def _all_topics(m: Mixed) -> list[str]:
    return ["migrate", "settled", "__consumer_offsets"]


def _full_isr_everywhere(m: Mixed) -> bool:
    """Every partition of every topic has all three brokers in its ISR, in ZooKeeper and in
    each running broker's Metadata (the replacement's own cache included)."""
    for topic in _all_topics(m):
        for state in m.states(topic).values():
            if sorted(state["isr"]) != list(IDS) or state["leader"] not in IDS:
                return False
    for i in m.running_ids():
        view = m.metadata(i, _all_topics(m))
        for topic in _all_topics(m):
            parts = view.topics.get(topic, {})
            if len(parts) != len(m.assignment(topic)):
                return False
            if any(p.error or sorted(p.isr) != list(IDS) for p in parts.values()):
                return False
    return True


def _preferred_leaders(m: Mixed) -> None:
    """ElectLeaders (preferred) for both topics through any broker, until every broker's
    Metadata shows the preferred leaders: after a step each kind leads a partition.  For
    the idle ``settled`` this takes leadership from a broker that led an epoch without
    appending, which must then follow again (what
    ``test_mixed_cluster.py::test_leader_of_an_empty_epoch_follows_again`` pins)."""
    def elected():
        elect_preferred(m.bootstrap(m.running_ids()[0]), list(PREFERRED_TOPICS))
        return all(m.metadata(i, [t]).leaders(t) == {p: rs[0] for p, rs in ASSIGNMENT.items()}
                   for i in m.running_ids() for t in PREFERRED_TOPICS)
    wait_for(elected, 60, lambda: f"preferred leaders of {PREFERRED_TOPICS}: "
                                  f"{[m.states(t) for t in PREFERRED_TOPICS]}\n" + m.summary())


def _kinds(m: Mixed) -> str:
    return " ".join(f"{i}={m.kinds[i]}" for i in IDS)


# --------------------------------------------------------------------------- records


def _committed(bootstrap: str, group: str, topic: str) -> dict[int, int]:
    return committed_offsets(bootstrap, group, topic, range(PARTITIONS))


def _last_commits(consumer: JsonLinesTool) -> dict[int, int]:
    """The verifiable consumer's last successful commit per partition."""
    out: dict[int, int] = {}
    for e in consumer.named("offsets_committed"):
        if e.get("success"):
            for o in e["offsets"]:
                out[o["partition"]] = o["offset"]
    return out


def _first_offsets(consumer: JsonLinesTool) -> dict[int, int]:
    out: dict[int, int] = {}
    for e in consumer.named("record_data"):
        out.setdefault(e["partition"], e["offset"])
    return out


def _segments_bytes(m: Mixed, node_id: int, topic: str, partition: int) -> bytes:
    d = m.log_dir(node_id) / f"{topic}-{partition}"
    return b"".join(p.read_bytes() for p in sorted(d.glob("*.log")))


def _replicas_identical(m: Mixed, topic: str) -> bool:
    for p in range(PARTITIONS):
        logs = [_segments_bytes(m, i, topic, p) for i in IDS]
        if not logs[0] or any(log != logs[0] for log in logs):
            return False
    return True


def _check_describe(m: Mixed, bootstrap: str, topic: str) -> dict[int, dict]:
    """kafka-topics.sh --describe: the assignment, a full ISR, ZooKeeper's leaders."""
    rows = describe_topic(bootstrap, topic)
    assert {p: r["Replicas"] for p, r in rows.items()} == ASSIGNMENT, rows
    assert all(sorted(r["Isr"]) == list(IDS) for r in rows.values()), rows
    states = m.states(topic)
    assert {p: r["Leader"] for p, r in rows.items()} == \
        {p: s["leader"] for p, s in states.items()}, (rows, states)
    return rows


def _check_group_describe(bootstrap: str, group: str, topic: str, offsets: dict[int, int],
                          ends: dict[int, int]) -> None:
    """kafka-consumer-groups.sh --describe: committed offset, log end and lag per partition."""
    rows = consumer_groups_describe(bootstrap, group)
    got = {p: (int(rows[(topic, p)]["CURRENT-OFFSET"]), int(rows[(topic, p)]["LOG-END-OFFSET"]),
               int(rows[(topic, p)]["LAG"])) for p in range(PARTITIONS)}
    assert got == {p: (offsets[p], ends[p], ends[p] - offsets[p]) for p in range(PARTITIONS)}, \
        (group, rows)


# --------------------------------------------------------------------------- the test

class _Traffic:
    """The verifiable producer and consumer(s) of ``migrate``, and their accounting."""

    def __init__(self, m: Mixed, tmp_path) -> None:
        self.m = m
        self.tmp_path = tmp_path
        self.bootstrap = ",".join(m.bootstrap(i) for i in IDS)
        config = tmp_path / "producer.properties"
        config.write_text("enable.idempotence=true\nretries=2147483647\n"
                          "max.in.flight.requests.per.connection=5\n"
                          "delivery.timeout.ms=120000\nlinger.ms=5\n")
        self.producer = JsonLinesTool("kafka-verifiable-producer.sh", [
            "--bootstrap-server", self.bootstrap, "--topic", "migrate", "--acks", "-1",
            "--max-messages", str(MAX_MESSAGES), "--throughput", str(THROUGHPUT),
            "--repeating-keys", "100", "--producer.config", str(config)], tmp_path / "producer")
        self.consumers: list[JsonLinesTool] = []
        self.start_consumer()

    def start_consumer(self) -> JsonLinesTool:
        c = JsonLinesTool("kafka-verifiable-consumer.sh", [
            "--bootstrap-server", self.bootstrap, "--topic", "migrate",
            "--group-id", "live-group", "--verbose", "--reset-policy", "earliest",
            "--session-timeout", "10000"], self.tmp_path / f"consumer-{len(self.consumers)}")
        self.consumers.append(c)
        return c

    def acked_values(self) -> set[str]:
        return {e["value"] for e in self.producer.named("producer_send_success")}

    def wait_consumed(self, consumer: JsonLinesTool, values: set[str], what: str) -> None:
        wait_for(lambda: values <= {e["value"] for e in consumer.named("record_data")},
                 STEP_S, lambda: f"the consumer reading {len(values)} acknowledged values "
                                 f"{what}\n{consumer.stderr_tail()}")

    def acked(self) -> int:
        return len(self.producer.named("producer_send_success"))

    def wait_progress(self, what: str, count: int = PROGRESS) -> None:
        before = self.acked()
        wait_for(lambda: self.acked() >= before + count or self.producer.proc.poll() is not None,
                 STEP_S, lambda: f"{count} acknowledgements {what} (had {before}, now "
                                 f"{self.acked()})\n{self.producer.stderr_tail()}\n"
                                 + self.m.summary())
        assert self.producer.proc.poll() is None, \
            f"the verifiable producer exited early\n{self.producer.stderr_tail()}"

    def stop(self) -> None:
        self.producer.stop()
        for c in self.consumers:
            c.stop()


def _replace_in_place(m: Mixed, node_id: int, kind: str) -> None:
    """``Mixed.replace`` on the old node's port too: the same host:port, broker.id and
    log.dirs, as an operator swaps the software on one server (clients keep their
    bootstrap list)."""
    port = m.nodes[node_id].port
    node = m.replace(node_id, kind)
    if kind == "kafka":
        node.port = port
    else:
        node.process.port = port
        node.process.output_path = node.process.log_dir.parent / f"broker-{port}.out"


def _replace(m: Mixed, traffic: _Traffic, node_id: int, kind: str) -> None:
    """One step: controlled shutdown of ``node_id``, the other kind on its dir, back in
    every ISR, preferred leaders restored, traffic flowing."""
    wait_for(lambda: _full_isr_everywhere(m), STEP_S,
             lambda: f"full ISRs before replacing {node_id}\n" + m.summary())
    code = m.terminate(node_id, timeout=90)
    assert code in (0, 143), f"broker {node_id} ({m.kinds[node_id]}) exit code {code}\n" \
                             + m.log_text(node_id)[-3000:]
    _replace_in_place(m, node_id, kind)
    m.launch_all(timeout=STEP_S)
    m.wait_ready(timeout=STEP_S)
    wait_for(lambda: _full_isr_everywhere(m), STEP_S,
             lambda: f"{kind} broker {node_id} in every ISR ({_kinds(m)}): "
                     f"{ {t: m.states(t) for t in _all_topics(m)} }\n" + m.summary())
    _preferred_leaders(m)
    traffic.wait_progress(f"after broker {node_id} became {kind} ({_kinds(m)})")
    controller = m.controller_id()
    print(f"broker {node_id} -> {kind}: {_kinds(m)}, controller {controller} "
          f"({m.kinds.get(controller)})")


@pytest.fixture
def kafka_cluster(tmp_path, zookeeper_server):  # noqa: F811
    from tests.support.mixed import _require_kafka
    _require_kafka()
    m = Mixed(tmp_path / "rolling", zookeeper_server, SETTINGS)
    m.ensure_chroot()
    for i in IDS:
        m.add(i, "kafka")
    try:
        m.launch_all(timeout=150)
        m.wait_ready(timeout=STEP_S)
        yield m
    finally:
        m.stop()


def test_rolling_migration_kafka_to_kafkapy_and_back(kafka_cluster, tmp_path):
    m = kafka_cluster
    via = m.bootstrap(1)
    for topic in ("migrate", "settled"):
        create_topic(via, topic, assignment=ASSIGNMENT, configs=TOPIC_CONFIGS)
    settled = {p: [f"settled-{p}-{i}".encode() for i in range(SETTLED_RECORDS)]
               for p in range(PARTITIONS)}
    produce_confluent(via, "settled", settled)
    commit_offsets(via, "settled-group", "settled", SETTLED_COMMITS)
    assert _committed(via, "settled-group", "settled") == SETTLED_COMMITS

    traffic = _Traffic(m, tmp_path)
    try:
        wait_for(lambda: traffic.acked() >= 2 * PROGRESS, STEP_S,
                 lambda: f"the verifiable producer's first acknowledgements\n"
                         f"{traffic.producer.stderr_tail()}")
        first = traffic.consumers[0]
        wait_for(lambda: sorted(_last_commits(first)) == list(range(PARTITIONS)), STEP_S,
                 lambda: f"the consumer committing every partition\n{first.stderr_tail()}")
        for i in IDS:
            _replace(m, traffic, i, "kafkapy")
        assert _committed(m.bootstrap(2), "settled-group", "settled") == SETTLED_COMMITS
        # Kafka's tools against the all-kafkapy cluster, mid-way.
        _check_describe(m, m.bootstrap(2), "settled")
        _check_group_describe(m.bootstrap(3), "settled-group", "settled", SETTLED_COMMITS,
                              {p: SETTLED_RECORDS for p in range(PARTITIONS)})

        # The group resumes where it left off: the consumer leaves, a new one joins.
        traffic.wait_consumed(first, traffic.acked_values(), "after the forward migration")
        first.stop()
        left_at = _last_commits(first)
        assert sorted(left_at) == list(range(PARTITIONS)), first.named("offsets_committed")[-3:]
        assert _committed(m.bootstrap(3), "live-group", "migrate") == left_at
        second = traffic.start_consumer()
        wait_for(lambda: sorted(_first_offsets(second)) == list(range(PARTITIONS)), STEP_S,
                 lambda: f"the second consumer reading every partition\n{second.stderr_tail()}")
        assert _first_offsets(second) == left_at, "the group did not resume at its commits"

        for i in IDS:
            _replace(m, traffic, i, "kafka")
        traffic.producer.proc.terminate()        # its shutdown hook flushes and closes
        traffic.producer.proc.wait(60)
        acked = {e["value"]: (e["partition"], e["offset"])
                 for e in traffic.producer.named("producer_send_success")}
        errors = traffic.producer.named("producer_send_error")

        def consumed_all():
            seen = {e["value"] for c in traffic.consumers for e in c.named("record_data")}
            return all(v in seen for v in acked)
        wait_for(consumed_all, STEP_S, lambda: f"the consumers to read all {len(acked)} "
                 f"acknowledged values\n{second.stderr_tail()}")
        second.stop()
    finally:
        traffic.stop()

    # Lost acknowledged records = 0, duplicates = 0, no send errors.
    log = read_log(m.bootstrap(1), "migrate")
    lost, moved, where = audit_acked(acked, ((value, p, off) for p, off, value in log))
    duplicated = sorted((v, w) for v, w in where.items() if len(w) > 1)
    sent = len(traffic.producer.named("producer_send_success")) + len(errors)
    errors = _send_errors(errors, acked, {value for _, _, value in log})
    summary = (f"sent {sent}, acknowledged {len(acked)}, errors {len(errors)} {errors[:3]}, "
               f"in the log {len(log)}, lost {len(lost)} {lost[:10]}, moved {moved[:5]}, "
               f"duplicated {len(duplicated)} {duplicated[:5]}")
    print(summary)
    assert len(acked) > 6 * PROGRESS, summary
    assert not lost and not moved and not duplicated and not errors, summary
    # The consumers saw each acknowledged value at its acknowledged place.
    for c in traffic.consumers:
        for e in c.named("record_data"):
            assert where.get(e["value"]) == [(e["partition"], e["offset"])], e

    # Committed offsets preserved: the idle group's untouched, the live group's at the end.
    assert _committed(m.bootstrap(2), "settled-group", "settled") == SETTLED_COMMITS
    live = _last_commits(second)
    ends = {p: max(off for q, off, _ in log if q == p) + 1 for p in range(PARTITIONS)}
    assert live == ends, (live, ends)
    assert _committed(m.bootstrap(3), "live-group", "migrate") == live

    # Every partition fully replicated, replicas byte-identical.
    wait_for(lambda: _full_isr_everywhere(m), STEP_S,
             lambda: "full ISRs at the end\n" + m.summary())
    wait_for(lambda: _replicas_identical(m, "migrate"), 60,
             "the replicas of migrate byte-identical")

    # Kafka's tools against the final cluster.
    assert all(m.kinds[i] == "kafka" for i in IDS), _kinds(m)
    for topic in ("migrate", "settled"):
        rows = _check_describe(m, via, topic)
        assert {p: r["Leader"] for p, r in rows.items()} == \
            {p: rs[0] for p, rs in ASSIGNMENT.items()}, rows
    under = kafka_tool("kafka-topics.sh", "--bootstrap-server", via, "--describe",
                       "--under-replicated-partitions")
    assert under.returncode == 0 and not under.stdout.strip(), under.stdout + under.stderr
    _check_group_describe(via, "live-group", "migrate", live, ends)
    _check_group_describe(via, "settled-group", "settled", SETTLED_COMMITS,
                          {p: SETTLED_RECORDS for p in range(PARTITIONS)})
