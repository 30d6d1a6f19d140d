"""One cluster of 1 Kafka 3.9 broker and 2 kafkapy brokers (test_mixed_scouting.py
covers 2 Kafka + 1 kafkapy).

Broker 1 is Apache Kafka 3.9 (ZooKeeper mode, ``inter.broker.protocol.version=3.9``),
brokers 2 and 3 are kafkapy, on one ZooKeeper chroot.  Topic ``mc``: 3 partitions, RF=3
(every partition has replicas of both kinds), ``min.insync.replicas=2``, preferred leaders
1, 2, 3 (leaders of each kind).  Stock clients run throughout, in threads, bounded in count
and time: a confluent-kafka and a kafka-python producer (both idempotent, acks=all) write
distinct values; a kafka-python consumer group and a confluent-kafka consumer group read
``mc``, committing after every poll.

The controller changes kind twice, each time by kill -9:
1. kafkapy broker 2 starts first and is the controller;
2. kafkapy 3 paused past its session and kafkapy 2 killed: Kafka broker 1 (the only live
   candidate) becomes the controller; 3 resumes and re-registers, 2 restarts;
3. Kafka broker 1 killed: a kafkapy broker becomes the controller; 1 restarts.
After each phase every broker is back in every ISR, the preferred leaders are restored
(ElectLeaders), both producers' acknowledgements and both groups' reads move on; Kafka's
``kafka-topics.sh --describe`` (through a Kafka and a kafkapy broker) matches ZooKeeper's
state and ``kafka-broker-api-versions.sh`` lists the three brokers with their versions.

At the end: no acknowledged record lost, none twice in the log, each consumer group read
every acknowledged record at its acknowledged place and committed the log end
(``kafka-consumer-groups.sh --describe``: lag 0).

``test_leader_of_an_empty_epoch_follows_again`` (two brokers of one kind, Kafka 3.9 as the
reference) pins what the rolling migration found: a broker that led an epoch without
appending and then follows again must drop that epoch's entry (Kafka's truncateTo at the
log end) or it fetches with it forever.
Every wait is bounded; 127.0.0.1 only.
"""
from __future__ import annotations

import re
import threading
import time

import pytest

from tests.support.cluster_clients import create_topic, describe_topic, elect_preferred
from tests.support.mixed import CLUSTER_SETTINGS, Mixed, kafka_tool, wait_for
from tests.support.mixed import consumer_groups_describe, read_log

SETTINGS = dict(CLUSTER_SETTINGS, **{
    "inter.broker.protocol.version": "3.9",
    "zookeeper.session.timeout.ms": "6000",
    "replica.fetch.wait.max.ms": "200",
})
KAFKA_ID = 1
KAFKAPY_IDS = (2, 3)
IDS = (1, 2, 3)
TOPIC = "mc"
ASSIGNMENT = {0: [1, 2, 3], 1: [2, 3, 1], 2: [3, 1, 2]}
RATE = 40                 # records/s per producer
MAX_RECORDS = 12_000      # per producer: bounds a forgotten producer to ~300 s
PROGRESS = 60             # acknowledgements per producer each phase must see
STEP_S = 120


# --------------------------------------------------------------------------- traffic

class _Producer(threading.Thread):
    """Writes "<tag>-<n>" round-robin over the partitions at ``RATE`` until stopped; records
    every acknowledgement (value -> (partition, offset)) and every error."""

    def __init__(self, tag: str, bootstrap: str) -> None:
        super().__init__(daemon=True, name=f"producer-{tag}")
        self.tag, self.bootstrap = tag, bootstrap
        self.acked: dict[str, tuple[int, int]] = {}
        self.errors: list[str] = []
        self.sent = 0
        self.stopping = threading.Event()
        self.failure: BaseException | None = None

    def on_ack(self, value: str, partition: int, offset: int) -> None:
        self.acked[value] = (partition, offset)

    def run(self) -> None:
        try:
            self._run()
        except BaseException as e:  # noqa: BLE001 - reported by the test
            self.failure = e

    def values(self):
        while not self.stopping.is_set() and self.sent < MAX_RECORDS:
            yield self.sent % len(ASSIGNMENT), f"{self.tag}-{self.sent}"
            self.sent += 1
            time.sleep(1 / RATE)


class _ConfluentProducer(_Producer):
    def _run(self) -> None:
        from confluent_kafka import Producer
        p = Producer({"bootstrap.servers": self.bootstrap, "acks": "all",
                      "enable.idempotence": True, "linger.ms": 5,
                      "message.timeout.ms": 120000})

        def done(err, msg):
            if err is not None:
                self.errors.append(str(err))
            else:
                self.on_ack(msg.value().decode(), msg.partition(), msg.offset())
        for partition, value in self.values():
            p.produce(TOPIC, value.encode(), partition=partition, on_delivery=done)
            p.poll(0)
        left = p.flush(130)
        if left:
            self.errors.append(f"{left} unacknowledged after flush")


class _KafkaPythonProducer(_Producer):
    def _run(self) -> None:
        from kafka import KafkaProducer
        p = KafkaProducer(bootstrap_servers=self.bootstrap, acks="all",
                          enable_idempotence=True, linger_ms=5)
        try:
            for partition, value in self.values():
                f = p.send(TOPIC, value.encode(), partition=partition)
                f.add_callback(lambda md, v=value: self.on_ack(v, md.partition, md.offset))
                f.add_errback(lambda e, v=value: self.errors.append(f"{v}: {e!r}"))
            p.flush(130)
        finally:
            p.close(10)


class _GroupConsumer(threading.Thread):
    """Reads ``mc`` in a consumer group, committing synchronously after every poll that
    returned records; records (partition, offset, value) and the last successful commit."""

    def __init__(self, group: str, bootstrap: str) -> None:
        super().__init__(daemon=True, name=f"consumer-{group}")
        self.group, self.bootstrap = group, bootstrap
        self.seen: list[tuple[int, int, str]] = []
        self.commits: dict[int, int] = {}
        self.commit_errors: list[str] = []
        self.stopping = threading.Event()
        self.failure: BaseException | None = None

    def run(self) -> None:
        try:
            self._run()
        except BaseException as e:  # noqa: BLE001 - reported by the test
            self.failure = e

    def values(self) -> set[str]:
        return {v for _, _, v in list(self.seen)}


class _ConfluentGroup(_GroupConsumer):
    def _run(self) -> None:
        from confluent_kafka import Consumer, TopicPartition
        c = Consumer({"bootstrap.servers": self.bootstrap, "group.id": self.group,
                      "enable.auto.commit": False, "auto.offset.reset": "earliest",
                      "session.timeout.ms": 10000, "fetch.wait.max.ms": 200})
        c.subscribe([TOPIC])
        try:
            while not self.stopping.is_set():
                msgs = c.consume(200, 0.5)
                batch = [m for m in msgs if m.error() is None]
                if not batch:
                    continue
                ends: dict[int, int] = {}
                for m in batch:
                    self.seen.append((m.partition(), m.offset(), m.value().decode()))
                    ends[m.partition()] = m.offset() + 1
                try:
                    c.commit(offsets=[TopicPartition(TOPIC, p, o) for p, o in ends.items()],
                             asynchronous=False)
                    self.commits.update(ends)
                except Exception as e:  # noqa: BLE001 - a commit during a coordinator move
                    self.commit_errors.append(repr(e))
        finally:
            c.close()


class _KafkaPythonGroup(_GroupConsumer):
    def _run(self) -> None:
        from kafka import KafkaConsumer, TopicPartition
        from kafka.structs import OffsetAndMetadata
        c = KafkaConsumer(TOPIC, bootstrap_servers=self.bootstrap, group_id=self.group,
                          enable_auto_commit=False, auto_offset_reset="earliest",
                          session_timeout_ms=10000, fetch_max_wait_ms=200)
        try:
            while not self.stopping.is_set():
                polled = c.poll(timeout_ms=500)
                ends: dict[int, int] = {}
                for tp, records in polled.items():
                    for r in records:
                        self.seen.append((tp.partition, r.offset, r.value.decode()))
                        ends[tp.partition] = r.offset + 1
                if not ends:
                    continue
                try:
                    c.commit({TopicPartition(TOPIC, p): OffsetAndMetadata(o, "", -1)
                              for p, o in ends.items()})
                    self.commits.update(ends)
                except Exception as e:  # noqa: BLE001 - a commit during a coordinator move
                    self.commit_errors.append(repr(e))
        finally:
            c.close()


class _Traffic:
    def __init__(self, m: Mixed) -> None:
        self.m = m
        # Each client bootstraps from one broker of the other kind than its sibling's.
        self.producers = [_ConfluentProducer("ck", m.bootstrap(KAFKA_ID)),
                          _KafkaPythonProducer("kp", m.bootstrap(2))]
        self.consumers = [_KafkaPythonGroup("mc-kafka-python", m.bootstrap(3)),
                          _ConfluentGroup("mc-confluent", m.bootstrap(KAFKA_ID))]
        for t in self.producers + self.consumers:
            t.start()

    def check_alive(self) -> None:
        for t in self.producers + self.consumers:
            assert t.failure is None, f"{t.name} failed: {t.failure!r}"
            assert t.is_alive(), f"{t.name} ended early"

    def wait_progress(self, what: str) -> None:
        """Both producers acknowledged, and both groups read, PROGRESS more records each."""
        before = [len(p.acked) for p in self.producers]
        read = [len(c.seen) for c in self.consumers]

        def moved():
            self.check_alive()
            return (all(len(p.acked) >= b + PROGRESS for p, b in zip(self.producers, before))
                    and all(len(c.seen) >= r + PROGRESS for c, r in zip(self.consumers, read)))
        wait_for(moved, STEP_S, lambda: f"{PROGRESS} records acknowledged per producer and "
                 f"read per group {what} (acknowledged {before} -> "
                 f"{[len(p.acked) for p in self.producers]}, errors "
                 f"{[p.errors[-3:] for p in self.producers]}; read {read} -> "
                 f"{[len(c.seen) for c in self.consumers]}, commit errors "
                 f"{[c.commit_errors[-3:] for c in self.consumers]})\n" + self.m.summary())

    def stop_producers(self) -> None:
        for p in self.producers:
            p.stopping.set()
        for p in self.producers:
            p.join(150)
            assert not p.is_alive(), f"{p.name} did not finish"
            assert p.failure is None, f"{p.name} failed: {p.failure!r}"

    def stop(self) -> None:
        for t in self.producers + self.consumers:
            t.stopping.set()
        for t in self.producers + self.consumers:
            t.join(150)


# --------------------------------------------------------------------------- cluster

@pytest.fixture
def mixed(tmp_path, zookeeper_server):  # noqa: F811
    """kafkapy broker 2 first (the controller), then Kafka 1 and kafkapy 3."""
    from tests.support.mixed import _require_kafka
    _require_kafka()
    m = Mixed(tmp_path / "mixed", zookeeper_server, SETTINGS)
    m.ensure_chroot()
    try:
        m.add(2, "kafkapy")
        m.launch_all(timeout=STEP_S)
        m.wait_ready([2], timeout=STEP_S)
        m.add(KAFKA_ID, "kafka")
        m.add(3, "kafkapy")
        m.launch_all(timeout=STEP_S)
        m.wait_ready(timeout=STEP_S)
        assert m.controller_id() == 2, m.summary()
        yield m
    finally:
        m.stop()


def _full_isr(m: Mixed) -> bool:
    for topic in (TOPIC, "__consumer_offsets"):
        for state in m.states(topic).values():
            if sorted(state["isr"]) != list(IDS):
                return False
    return all(sorted(p.isr) == list(IDS) and not p.error
               for i in m.running_ids()
               for p in m.metadata(i, [TOPIC]).topics.get(TOPIC, {}).values())


def _settle(m: Mixed, traffic: _Traffic, what: str) -> None:
    """Every broker back in every ISR, the preferred leaders (of both kinds) restored,
    both producers moving on; Kafka's tools describe the cluster."""
    m.wait_ready(timeout=STEP_S)
    wait_for(lambda: _full_isr(m), STEP_S,
             lambda: f"full ISRs {what}: {m.states(TOPIC)}\n" + m.summary())
    preferred = {p: rs[0] for p, rs in ASSIGNMENT.items()}

    def elected():
        elect_preferred(m.bootstrap(m.running_ids()[0]), TOPIC)
        return all(m.metadata(i, [TOPIC]).leaders(TOPIC) == preferred for i in IDS)
    wait_for(elected, 60, lambda: f"preferred leaders {what}: {m.states(TOPIC)}\n" + m.summary())
    traffic.wait_progress(what)
    _check_tools(m, what)


def _check_tools(m: Mixed, what: str) -> None:
    """kafka-topics.sh --describe through a Kafka and a kafkapy broker equals ZooKeeper's
    state; kafka-broker-api-versions.sh (through kafkapy) lists the three brokers."""
    states = m.states(TOPIC)
    expected = {p: {"Leader": states[p]["leader"], "Replicas": ASSIGNMENT[p],
                    "Isr": states[p]["isr"]} for p in ASSIGNMENT}
    for via in (KAFKA_ID, KAFKAPY_IDS[1]):
        rows = describe_topic(m.bootstrap(via), TOPIC)
        got = {p: dict(r, Isr=sorted(r["Isr"])) for p, r in rows.items()}
        assert got == {p: dict(e, Isr=sorted(e["Isr"])) for p, e in expected.items()}, \
            (what, via, rows, states)
    out = kafka_tool("kafka-broker-api-versions.sh", "--bootstrap-server",
                     m.bootstrap(KAFKAPY_IDS[0]))
    assert out.returncode == 0, out.stderr[-3000:]
    listed = {int(i): int(port) for port, i in
              re.findall(r"^127\.0\.0\.1:(\d+) \(id: (\d+) rack: null\) -> \(", out.stdout, re.M)}
    assert listed == {i: m.nodes[i].port for i in IDS}, (what, out.stdout[:3000])
    # Every broker's block names Produce and Fetch with a usable version (the tool found a
    # version both sides speak).
    blocks = re.split(r"^127\.0\.0\.1:\d+ \(id: \d+ rack: null\) -> \(", out.stdout, flags=re.M)[1:]
    assert len(blocks) == 3 and all(re.search(r"Produce\(0\): \d+ to \d+ \[usable: \d+\]", b)
                                    and re.search(r"Fetch\(1\): \d+ to \d+ \[usable: \d+\]", b)
                                    for b in blocks), out.stdout[:4000]


# --------------------------------------------------------------------------- the test

def test_one_kafka_two_kafkapy_controller_of_each_kind(mixed):
    m = mixed
    create_topic(m.bootstrap(2), TOPIC, assignment=ASSIGNMENT,
                 configs={"min.insync.replicas": "2"})
    # Every broker knows the topic's leaders before the first record: the producers'
    # first batches must not race the LeaderAndIsr of a new topic.
    preferred = {p: rs[0] for p, rs in ASSIGNMENT.items()}
    wait_for(lambda: all(m.metadata(i, [TOPIC]).leaders(TOPIC) == preferred for i in IDS),
             30, lambda: f"{TOPIC}'s leaders known everywhere\n" + m.summary())
    traffic = _Traffic(m)
    try:
        # 1. kafkapy (2) is the controller.
        _settle(m, traffic, "under kafkapy's controller 2")
        assert m.controller_id() == 2

        # 2. Kafka takes over: kafkapy 3 paused past its session, the controller killed.
        m.pause(3)
        try:
            m.kill(2)
            wait_for(lambda: m.controller_id() == KAFKA_ID, 40,
                     lambda: "Kafka broker 1 elected controller\n" + m.summary())
            wait_for(lambda: m.registered() == [KAFKA_ID], 30, "kafkapy 3's session to expire")
        finally:
            m.resume(3)
        m.restart(2, timeout=STEP_S)
        _settle(m, traffic, "under Kafka's controller 1")
        assert m.controller_id() == KAFKA_ID

        # 3. kafkapy takes over: Kafka's controller killed.
        m.kill(KAFKA_ID)
        wait_for(lambda: m.controller_id() in KAFKAPY_IDS, 40,
                 lambda: "a kafkapy broker elected controller\n" + m.summary())
        m.restart(KAFKA_ID, timeout=STEP_S)
        _settle(m, traffic, f"under kafkapy's controller {m.controller_id()}")
        assert m.controller_id() in KAFKAPY_IDS

        traffic.stop_producers()
        # The log first: a lost record is reported as such, not as a consumer waiting.
        log = read_log(m.bootstrap(3), TOPIC, len(ASSIGNMENT))
        where = _audit(traffic, log)

        def consumed_all():
            return all(set(p.acked) <= c.values()
                       for p in traffic.producers for c in traffic.consumers)
        wait_for(consumed_all, STEP_S, lambda: "both groups reading every acknowledged record "
                 + str([(c.name, len(c.seen), c.failure) for c in traffic.consumers]))
        ends = {p: max(o for q, o, _ in log if q == p) + 1 for p in ASSIGNMENT}
        wait_for(lambda: all(c.commits == ends for c in traffic.consumers), 30,
                 lambda: f"both groups committing the log end {ends}: "
                         f"{[(c.name, c.commits) for c in traffic.consumers]}")
    finally:
        traffic.stop()

    for c in traffic.consumers:
        assert c.failure is None, f"{c.name}: {c.failure!r}"
        wrong = [(p, o, v) for p, o, v in c.seen if where.get(v) != [(p, o)]]
        assert not wrong, (c.name, wrong[:5])
        rows = consumer_groups_describe(m.bootstrap(KAFKA_ID), c.group)
        got = {p: (int(rows[(TOPIC, p)]["CURRENT-OFFSET"]), int(rows[(TOPIC, p)]["LAG"]))
               for p in ASSIGNMENT}
        assert got == {p: (ends[p], 0) for p in ASSIGNMENT}, (c.group, rows)


def _audit(traffic: _Traffic, log: list[tuple[int, int, str]]) -> dict[str, list]:
    """Lost acknowledged records = 0 (each at its acknowledged partition and offset),
    duplicates = 0, send errors = 0; {value: [(partition, offset)]} of the log."""
    where: dict[str, list[tuple[int, int]]] = {}
    at: dict[tuple[int, int], str] = {}
    for p, off, value in log:
        where.setdefault(value, []).append((p, off))
        at[(p, off)] = value
    duplicated = sorted((v, w) for v, w in where.items() if len(w) > 1)
    ends = {p: max((o for q, o, _ in log if q == p), default=-1) + 1 for p in ASSIGNMENT}
    report, bad = [], False
    for prod in traffic.producers:
        lost = sorted((pos, v, at.get(pos)) for v, pos in prod.acked.items() if v not in where)
        moved = [(v, pos, where[v]) for v, pos in prod.acked.items()
                 if v in where and where[v] != [pos]]
        bad = bad or bool(lost or moved or prod.errors)
        report.append(f"{prod.name}: sent {prod.sent}, acknowledged {len(prod.acked)}, "
                      f"errors {len(prod.errors)} {prod.errors[:3]}, lost {len(lost)} "
                      f"(acknowledged (partition, offset), value, the log's value there) "
                      f"{lost[:8]}, moved {moved[:3]}")
    report.append(f"in the log {len(log)} (ends {ends}), duplicated {len(duplicated)} "
                  f"{duplicated[:5]}")
    print("\n".join(report))
    assert not bad and not duplicated, "\n".join(report)
    return where


# --------------------------------------------------------------------------- empty epoch

def _produce_all(bootstrap: str, topic: str, values: list[bytes], timeout: float) -> list[str]:
    """acks=all (no idempotence: no producer id needed) to partition 0; the errors."""
    from confluent_kafka import Producer
    p = Producer({"bootstrap.servers": bootstrap, "acks": "all", "enable.idempotence": False,
                  "message.timeout.ms": int(timeout * 1000)})
    errors: list[str] = []
    for v in values:
        p.produce(topic, v, partition=0,
                  on_delivery=lambda err, _m: errors.append(str(err)) if err else None)
    left = p.flush(timeout + 5)
    return errors + ([f"{left} unacknowledged"] if left else [])


@pytest.mark.parametrize("kind", [
    "kafka",
    "kafkapy",
])
def test_leader_of_an_empty_epoch_follows_again(tmp_path, zookeeper_server, kind):  # noqa: F811
    """Two brokers of one kind, partition replicas [3, 2] holding 5 records: 3 stops
    (controlled shutdown), 2 leads a new epoch and appends nothing in it; 3 restarts and
    takes its preferred leadership back; 2 must follow again: an acks=all write with
    min.insync.replicas=2 needs it.  (A rolling replacement does this whenever the
    temporary leader of a partition gets no write before the replaced broker is back.)"""
    from tests.support.mixed import _require_kafka
    _require_kafka()
    m = Mixed(tmp_path / "empty-epoch", zookeeper_server,
              dict(SETTINGS, **{"offsets.topic.replication.factor": "2",
                                "transaction.state.log.replication.factor": "2"}))
    m.ensure_chroot()
    try:
        for i in (2, 3):
            m.add(i, kind)
        m.launch_all(timeout=STEP_S)
        m.wait_ready(timeout=STEP_S)
        topic = "empty-epoch"
        create_topic(m.bootstrap(2), topic, assignment={0: [3, 2]},
                     configs={"min.insync.replicas": "2"})
        wait_for(lambda: sorted(m.partition_state(topic, 0)["isr"]) == [2, 3], 30, "ISR [2, 3]")
        assert _produce_all(m.bootstrap(3), topic, [b"before"] * 5, 30) == []
        assert m.terminate(3, timeout=60) in (0, 143)
        wait_for(lambda: m.partition_state(topic, 0)["leader"] == 2, 30, "2 leading")
        m.restart(3, timeout=STEP_S)
        wait_for(lambda: sorted(m.partition_state(topic, 0)["isr"]) == [2, 3], 60,
                 lambda: f"3 back in the ISR: {m.partition_state(topic, 0)}")
        wait_for(lambda: (elect_preferred(m.bootstrap(2), topic) or True)
                 and m.partition_state(topic, 0)["leader"] == 3, 30, "3 leading again")
        errors = _produce_all(m.bootstrap(3), topic, [b"after"] * 5, 20)
        assert errors == [], (errors, m.partition_state(topic, 0), m.log_text(2)[-3000:])
    finally:
        m.stop()
