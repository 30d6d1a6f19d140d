"""Share groups (KIP-932) as the stock-client tests drive them: one broker, Java and
confluent-kafka share consumers, what each delivered.

- ``share_broker`` (session fixture, registered by tests/clients/conftest.py): one kafkapy
  process for every share-group client test, with ``SHARE_OVERRIDES`` (share groups served, a
  1 s share heartbeat, record lock durations down to 1 s allowed).
- ``share_java`` (session fixture): tests/java/kafka4/ShareConsumers.java compiled against
  kafka-clients 4.3.0.
- ``JavaShareConsumers``: ShareConsumers.java run as one process (its consumers are threads);
  every line it prints is kept, ``REC`` lines parsed as ``Delivery``.
- ``ConfluentShareConsumers``: confluent-kafka ``ShareConsumer``s polling in threads of the test
  process, acknowledging by the same rule as the Java program (``action_for``).
- ``share_group_assignments``: ShareGroupDescribe v1, {client id: partitions assigned}.
- ``create_topic``, ``produce``, ``read_all`` (a plain consumer from the start of a topic),
  ``alter_group_configs`` (IncrementalAlterConfigs v1 on the GROUP resource, over the wire).
- ``Deliveries``: checks over a list of deliveries (per offset: counts and actions in order).

Record values name their acknowledgement in explicit mode (``action_for``): ``releaseN...``
is RELEASEd while its delivery count is at most N, then ACCEPTed; ``poison...`` always
RELEASEd; ``reject...`` REJECTed; anything else ACCEPTed.

Invariants: every wait is bounded (``wait_for`` names what it waited for and appends the
consumers' output and the broker's log tail); every process or thread started is stopped by
``stop()``/``kill()``, which the tests call in ``finally``.
"""
from __future__ import annotations

import signal
import subprocess
import threading
import time
from collections import defaultdict
from pathlib import Path
from typing import Callable, Iterable, NamedTuple

import pytest

import kafkapy.protocol.share_group_apis  # noqa: F401  (registers ShareGroupDescribe)
from tests.support.broker_process import BrokerProcess
from tests.support.java_clients import JavaClient, client_jars, compiled
from tests.support.wire import WireClient

ROOT = Path(__file__).resolve().parents[2]
SHARE_PROGRAM = ROOT / "tests" / "java" / "kafka4" / "ShareConsumers.java"
SHARE_OVERRIDES = {
    "group.coordinator.rebalance.protocols": "classic,consumer,share",
    "group.share.heartbeat.interval.ms": "1000",
    "group.share.min.heartbeat.interval.ms": "500",
    "group.share.min.record.lock.duration.ms": "1000",
    "offsets.topic.num.partitions": "2",
    "share.coordinator.state.topic.num.partitions": "2",
    "share.coordinator.state.topic.replication.factor": "1",
    "share.coordinator.state.topic.min.isr": "1",
}
INCREMENTAL_ALTER_CONFIGS, GROUP_RESOURCE, SET = 44, 32, 0
SHARE_GROUP_DESCRIBE = 77


class Delivery(NamedTuple):
    """One record handed to a consumer: who, which, its delivery count, what was done with it
    and when (ms, CLOCK_MONOTONIC: the Java program's System.nanoTime, time.monotonic here)."""
    member: str
    partition: int
    offset: int
    count: int
    action: str
    ms: float


# -- fixtures ---------------------------------------------------------------------------------

@pytest.fixture(scope="session")
def share_broker(tmp_path_factory):
    with BrokerProcess(tmp_path_factory.mktemp("share-broker") / "logs",
                       overrides=SHARE_OVERRIDES).start() as broker:
        yield broker


@pytest.fixture(scope="session")
def share_java(tmp_path_factory) -> JavaClient:
    client_jars(("4.3.0",))
    return compiled("4.3.0", [SHARE_PROGRAM], tmp_path_factory.mktemp("share-java"))


# -- waiting ----------------------------------------------------------------------------------

def wait_for(condition: Callable, what: str, timeout: float, *diagnostics: Callable[[], str]):
    """Poll ``condition()`` every 50 ms until truthy (returned); AssertionError naming ``what``
    with every diagnostic's text after ``timeout`` seconds."""
    deadline = time.monotonic() + timeout
    while True:
        value = condition()
        if value:
            return value
        if time.monotonic() >= deadline:
            details = "\n".join(d() for d in diagnostics)
            raise AssertionError(f"timed out after {timeout:.0f}s waiting for {what}\n{details}")
        time.sleep(0.05)


def broker_tail(broker, lines: int = 60) -> Callable[[], str]:
    """A diagnostic: the broker's last ``lines`` log lines."""
    def tail() -> str:
        text = broker.output() if hasattr(broker, "output") else ""
        return "--- broker log tail ---\n" + "\n".join(text.splitlines()[-lines:])
    return tail


# -- topics, records, group configs -----------------------------------------------------------

def create_topic(bootstrap: str, topic: str, partitions: int = 1,
                 config: dict[str, str] | None = None) -> None:
    # confluent-kafka is an optional dependency of the tests
    from confluent_kafka.admin import AdminClient, NewTopic
    admin = AdminClient({"bootstrap.servers": bootstrap})
    futures = admin.create_topics([NewTopic(topic, partitions, 1, config=config or {})],
                                  operation_timeout=30)
    futures[topic].result(timeout=60)


def produce(bootstrap: str, topic: str, values: Iterable[str], *, key_prefix: str = "k",
            headers: list[tuple[str, bytes]] | None = None, partition: int = 0,
            batch_records: int = 10_000) -> int:
    """``values`` appended to ``topic``'s ``partition`` in order (acks=all, linger 5 ms, at
    most ``batch_records`` records a batch, keys ``<key_prefix><index>``); returns how many.
    A share-partition leader acquires whole batches, so a test that wants records spread over
    several consumers keeps batches small."""
    from confluent_kafka import Producer
    producer = Producer({"bootstrap.servers": bootstrap, "linger.ms": 5, "acks": "all",
                         "batch.num.messages": batch_records})
    errors: list = []
    n = 0
    for n, value in enumerate(values, 1):
        while True:
            try:
                producer.produce(topic, value.encode(), f"{key_prefix}{n - 1}".encode(),
                                 partition=partition, headers=headers,
                                 on_delivery=lambda err, _m: err and errors.append(err))
                break
            except BufferError:
                producer.poll(0.1)
    left = producer.flush(60)
    assert left == 0 and not errors, f"produce to {topic}: {left} unsent, errors {errors[:3]}"
    return n


class StreamProducer:
    """Filler records (values ``fill-<i>``) to a topic every ``interval`` seconds from a
    thread, until ``stop()``."""

    def __init__(self, bootstrap: str, topic: str, interval: float = 0.02) -> None:
        from confluent_kafka import Producer
        self._producer = Producer({"bootstrap.servers": bootstrap, "linger.ms": 0})
        self._topic = topic
        self._interval = interval
        self._stop = threading.Event()
        self.sent = 0
        self._thread = threading.Thread(target=self._run, daemon=True)
        self._thread.start()

    def _run(self) -> None:
        while not self._stop.is_set():
            self._producer.produce(self._topic, f"fill-{self.sent}".encode(), partition=0)
            self._producer.poll(0)
            self.sent += 1
            self._stop.wait(self._interval)

    def stop(self) -> None:
        self._stop.set()
        self._thread.join(10)
        self._producer.flush(30)


def read_all(bootstrap: str, topic: str, expected: int, timeout: float = 30.0,
             settle: float = 1.0) -> list:
    """Every record of ``topic`` (partition 0) from its start as confluent-kafka Messages, read
    by a plain assign()-only consumer until ``expected`` were read and ``settle`` seconds more
    brought none (to see extras), or ``timeout``."""
    from confluent_kafka import Consumer, TopicPartition
    consumer = Consumer({"bootstrap.servers": bootstrap, "group.id": f"reader-{topic}",
                         "enable.auto.commit": False, "auto.offset.reset": "earliest"})
    consumer.assign([TopicPartition(topic, 0, 0)])
    got: list = []
    deadline = time.monotonic() + timeout
    quiet_since = None
    try:
        while time.monotonic() < deadline:
            m = consumer.poll(0.2)
            if m is not None and m.error() is None:
                got.append(m)
                quiet_since = None
                continue
            if len(got) >= expected:
                quiet_since = quiet_since or time.monotonic()
                if time.monotonic() - quiet_since >= settle:
                    break
    finally:
        consumer.close()
    return got


def alter_group_configs(bootstrap: str, group: str, configs: dict[str, str]) -> tuple[int, str]:
    """IncrementalAlterConfigs v1 SET of ``configs`` on the GROUP resource ``group``:
    (error code, message)."""
    from kafkapy.protocol.messages import REQUESTS
    cls = REQUESTS[INCREMENTAL_ALTER_CONFIGS]
    resource = cls.AlterConfigsResource(
        resource_type=GROUP_RESOURCE, resource_name=group,
        configs=[cls.AlterConfigsResource.AlterableConfig(name=k, config_operation=SET, value=v)
                 for k, v in configs.items()])
    client = WireClient(bootstrap)
    try:
        r = client.request(INCREMENTAL_ALTER_CONFIGS, 1, resources=[resource],
                           validate_only=False)
    finally:
        client.close()
    [result] = r.responses
    return result.error_code, result.error_message


# -- acknowledging ----------------------------------------------------------------------------

def action_for(value: str, count: int) -> str:
    """The acknowledgement of a record of ``value`` at delivery ``count`` (module docstring)."""
    if value.startswith("reject"):
        return "REJECT"
    if value.startswith("poison"):
        return "RELEASE"
    if value.startswith("release"):
        digits = value[7:len(value) - len(value[7:].lstrip("0123456789"))]
        return "RELEASE" if count <= int(digits) else "ACCEPT"
    return "ACCEPT"


class Deliveries:
    """Checks over deliveries (``Delivery`` tuples, in the order they happened)."""

    def __init__(self, deliveries: Iterable[Delivery]) -> None:
        self.all = list(deliveries)
        self.by_offset: dict[tuple[int, int], list[Delivery]] = defaultdict(list)
        for d in self.all:
            self.by_offset[(d.partition, d.offset)].append(d)

    def offsets(self, partition: int = 0) -> set[int]:
        return {o for (p, o) in self.by_offset if p == partition}

    def history(self, offset: int, partition: int = 0) -> list[tuple[int, str]]:
        """(delivery count, action) of every delivery of one record, in order."""
        return [(d.count, d.action) for d in self.by_offset.get((partition, offset), [])]

    def repeated(self) -> dict[int, list[Delivery]]:
        """Offsets delivered more than once, with their deliveries."""
        return {o: ds for (_p, o), ds in self.by_offset.items() if len(ds) > 1}

    def per_member(self) -> dict[str, int]:
        counts: dict[str, int] = defaultdict(int)
        for d in self.all:
            counts[d.member] += 1
        return dict(counts)


# -- Java share consumers ---------------------------------------------------------------------

class JavaShareConsumers:
    """ShareConsumers.java in a process of its own: ``consumers`` threads, each a
    KafkaShareConsumer of ``group`` subscribed to ``topic``; ``options`` as the program takes
    them (``mode=``, ``group-config:K=V``, ``client:K=V``, ``hold``, ``watch``, ``seconds=``)."""

    def __init__(self, java: JavaClient, log_dir: Path, bootstrap: str, topic: str, group: str,
                 consumers: int, *options: str, name: str = "c") -> None:
        self.name = name
        self._err_path = Path(log_dir) / f"share-{name}-{group}.err"
        self._err = open(self._err_path, "w")
        command = java.command("ShareConsumers", bootstrap, topic, group, str(consumers),
                               f"name={name}", *options)
        self.proc = subprocess.Popen(command, stdin=subprocess.PIPE, stdout=subprocess.PIPE,
                                     stderr=self._err, text=True, bufsize=1)
        self._lines: list[str] = []
        self._lock = threading.Lock()
        self._reader = threading.Thread(target=self._read, daemon=True)
        self._reader.start()

    def _read(self) -> None:
        for line in self.proc.stdout:
            with self._lock:
                self._lines.append(line.rstrip("\n"))

    def lines(self, kind: str | None = None) -> list[list[str]]:
        with self._lock:
            lines = list(self._lines)
        split = [line.split(" ") for line in lines]
        return [s for s in split if kind is None or s[0] == kind]

    def deliveries(self) -> list[Delivery]:
        return [Delivery(f[1], int(f[2]), int(f[3]), int(f[4]), f[5], float(f[6]))
                for f in self.lines("REC")]

    def errors(self) -> list[str]:
        return [" ".join(f) for f in self.lines("ERROR")] + [
            " ".join(f) for f in self.lines("COMMIT") if f[4] != "ok"]

    def started(self) -> int:
        return len(self.lines("STARTED"))

    def group_line(self) -> list[str] | None:
        """The last GROUP line (``watch``): [state, member=partitions, ...]."""
        lines = self.lines("GROUP")
        return lines[-1][1:] if lines else None

    def describe(self) -> str:
        with self._lock:
            lines = list(self._lines)
        shown = [line for line in lines if not line.startswith("REC ")][-40:]
        recs = [line for line in lines if line.startswith("REC ")]
        try:
            stderr = self._err_path.read_text(errors="replace").splitlines()[-30:]
        except OSError:
            stderr = []
        return (f"--- share consumers {self.name} (exit {self.proc.poll()}): {len(recs)} REC "
                f"lines, last: {recs[-3:]}\n" + "\n".join(shown)
                + "\n--- stderr tail ---\n" + "\n".join(stderr))

    def suspend(self) -> None:
        self.proc.send_signal(signal.SIGSTOP)

    def stop(self, timeout: float = 40.0) -> int | None:
        """"quit" (consumers commit and leave), then SIGKILL if it does not end in time."""
        if self.proc.poll() is None:
            try:
                self.proc.stdin.write("quit\n")
                self.proc.stdin.flush()
                self.proc.wait(timeout)
            except (OSError, subprocess.TimeoutExpired):
                self.kill()
        self._reader.join(5)
        self._err.close()
        return self.proc.returncode

    def kill(self) -> None:
        """kill -9 (a stopped process too)."""
        if self.proc.poll() is None:
            self.proc.send_signal(signal.SIGKILL)
            self.proc.wait(30)
        self._err.close()


# -- confluent-kafka share consumers ----------------------------------------------------------

class ConfluentShareConsumers:
    """``consumers`` confluent-kafka ShareConsumers of ``group`` on ``topic``, each polling in
    a thread of this process; explicit acknowledgement by ``action_for`` then ``commit_sync``
    (``explicit=False``: implicit mode, the next poll accepts)."""

    def __init__(self, bootstrap: str, topic: str, group: str, consumers: int, *,
                 explicit: bool = True, name: str = "k", settings: dict | None = None) -> None:
        from confluent_kafka import ShareConsumer
        self._stop = threading.Event()
        self._lock = threading.Lock()
        self._deliveries: list[Delivery] = []
        self.errors: list[str] = []
        self._threads = []
        self._explicit = explicit
        for i in range(consumers):
            conf = {"bootstrap.servers": bootstrap, "group.id": group,
                    "client.id": f"{name}-{i}",
                    "share.acknowledgement.mode": "explicit" if explicit else "implicit"}
            conf.update(settings or {})
            consumer = ShareConsumer(conf)
            consumer.subscribe([topic])
            t = threading.Thread(target=self._run, args=(f"{name}-{i}", consumer), daemon=True)
            self._threads.append(t)
        for t in self._threads:
            t.start()

    def _run(self, member: str, consumer) -> None:
        from confluent_kafka import AcknowledgeType
        types = {"ACCEPT": AcknowledgeType.ACCEPT, "RELEASE": AcknowledgeType.RELEASE,
                 "REJECT": AcknowledgeType.REJECT}
        try:
            while not self._stop.is_set():
                messages = consumer.poll(0.2)
                at = time.monotonic() * 1000
                got = []
                for m in messages:
                    if m.error() is not None:
                        self._note(f"{member} poll: {m.error()}")
                        continue
                    count = m.delivery_count() or -1
                    action = action_for(m.value().decode(), count) if self._explicit else "IMPLICIT"
                    got.append(Delivery(member, m.partition(), m.offset(), count, action, at))
                    if self._explicit:
                        consumer.acknowledge(m, types[action])
                with self._lock:
                    self._deliveries.extend(got)
                if got and self._explicit:
                    for tp, error in consumer.commit_sync(30).items():
                        if error is not None:
                            self._note(f"{member} commit {tp.partition}: {error}")
        except Exception as e:  # noqa: BLE001 - reported by the test
            self._note(f"{member}: {type(e).__name__}: {e}")
        finally:
            try:
                consumer.close()
            except Exception as e:  # noqa: BLE001
                self._note(f"{member} close: {type(e).__name__}: {e}")

    def _note(self, text: str) -> None:
        with self._lock:
            self.errors.append(text)

    def deliveries(self) -> list[Delivery]:
        with self._lock:
            return list(self._deliveries)

    def describe(self) -> str:
        d = self.deliveries()
        return (f"--- confluent share consumers: {len(d)} deliveries, last {d[-3:]}; "
                f"errors {self.errors[-10:]}")

    def stop(self, timeout: float = 40.0) -> None:
        self._stop.set()
        for t in self._threads:
            t.join(timeout)


# -- the group as the broker describes it -----------------------------------------------------

def share_group_assignments(bootstrap: str, group: str) -> dict[str, int] | None:
    """ShareGroupDescribe v1 of ``group``: {client id: partitions assigned}, None on an
    error (e.g. the group does not exist yet)."""
    client = WireClient(bootstrap)
    try:
        r = client.request(SHARE_GROUP_DESCRIBE, 1, group_ids=[group],
                           include_authorized_operations=False)
    finally:
        client.close()
    [g] = r.groups
    if g.error_code:
        return None
    return {m.client_id: sum(len(t.partitions) for t in m.assignment.topic_partitions)
            for m in g.members}
