"""Zero acknowledged loss across repeated kill -9 of the partition leader.

One partition, RF 3 on brokers 1, 2, 3, ``min.insync.replicas=2``.  An idempotent
confluent-kafka producer (acks=all) writes continuously numbered records (value = the
number, a bounded count at a bounded rate) from a thread while the test, ten times in a row,
kill -9s whichever broker leads the partition (the partition state znode says who),
waits for the controller to elect another leader from the ISR, restarts the killed broker on
its own log dir, and waits until it is back in the ISR (the state znode) and the producer
has had records acknowledged since the kill, all bounded.  Afterwards the whole partition
is read back: every acknowledged record is at the offset it was acknowledged with, exactly
once, and the numbers in the log strictly increase (lost = 0, duplicates = 0, order kept);
the same audit runs after every failover on what had been acknowledged by then.

The second test runs a consumer group (one consumer, manual synchronous commits every few
hundred milliseconds) throughout; the victims alternate between the partition leader and
the group coordinator.  Every record the consumer read is in the final log at the offset it
was read at (consumers only read below the high watermark); the consumer never jumps
forward past a record; the committed offset is the last one acknowledged to it; a second
consumer of the group resumes there and reads the rest of the log.

Runs against real Kafka 3.9 too (``KAFKAPY_CLUSTER_REFERENCE=kafka``), which passes.
"""
from __future__ import annotations

import threading
import time
from collections import Counter

import pytest

from tests.support import cluster_clients as clients
from tests.support.cluster import (CLUSTER_SETTINGS, FAILOVER_S, Cluster,
                                    running_cluster, wait_for)
from tests.support.cluster_clients import read_partition

ROUNDS = 10
GROUP_ROUNDS = 10
MAX_RECORDS = 60_000          # bound on the producer, whatever happens
BATCH_PER_TICK = 3            # records per 10 ms tick: at most ~300 records/s
REJOIN_S = 60                 # a restarted broker back in the ISR
PROGRESS_S = 60               # acknowledgements again after a failover
SETTINGS = {
    # A follower that stops fetching leaves the ISR quickly; a restarted one is back in it
    # as soon as it has caught up.
    "replica.lag.time.max.ms": "5000",
    "replica.fetch.wait.max.ms": "500",
}


@pytest.fixture
def durable_cluster(tmp_path, zookeeper_server):  # noqa: F811
    yield from running_cluster(tmp_path / "cluster", zookeeper_server, extra_settings=SETTINGS)


# --------------------------------------------------------------------------- producing

class NumberedProducer:
    """A thread producing values b"0", b"1", ... to partition 0 until ``stop()`` (or
    MAX_RECORDS); ``acked`` maps each acknowledged number to its offset."""

    def __init__(self, bootstrap: str, topic: str) -> None:
        from confluent_kafka import Producer
        self.topic = topic
        self.producer = Producer({
            "bootstrap.servers": bootstrap, "acks": "all", "enable.idempotence": True,
            "linger.ms": 5, "message.timeout.ms": 120_000, "retry.backoff.ms": 100,
            "queue.buffering.max.messages": 20_000, "topic.metadata.refresh.interval.ms": 2000})
        self.acked: dict[int, int] = {}
        self.errors: list[tuple[int, str]] = []
        self.sent = 0
        self._stop = threading.Event()
        self._lock = threading.Lock()
        self._thread = threading.Thread(target=self._run, name="numbered-producer", daemon=True)

    def start(self) -> "NumberedProducer":
        self._thread.start()
        return self

    def acked_count(self) -> int:
        with self._lock:
            return len(self.acked)

    def snapshot(self) -> tuple[dict[int, int], list[tuple[int, str]]]:
        """Copies of what has been acknowledged and what failed so far."""
        with self._lock:
            return dict(self.acked), list(self.errors)

    def _on_delivery(self, err, msg) -> None:
        n = int(msg.value())
        with self._lock:
            if err is not None:
                self.errors.append((n, str(err)))
            else:
                self.acked[n] = msg.offset()

    def _run(self) -> None:
        from confluent_kafka import KafkaException
        while not self._stop.is_set() and self.sent < MAX_RECORDS:
            for _ in range(BATCH_PER_TICK):
                try:
                    self.producer.produce(self.topic, str(self.sent).encode(), partition=0,
                                          on_delivery=self._on_delivery)
                    self.sent += 1
                except BufferError:
                    self.producer.poll(0.1)
                    break
                except KafkaException as e:     # a fatal idempotence error: stop, report
                    with self._lock:
                        self.errors.append((self.sent, f"produce: {e}"))
                    return
            self.producer.poll(0)
            time.sleep(0.01)

    def stop(self, flush_s: float = 150.0) -> int:
        """Stop producing, wait for every outstanding record's outcome; the number left."""
        self._stop.set()
        self._thread.join(30)
        return self.producer.flush(flush_s)


def audit(log: list[tuple[int, bytes]], acked: dict[int, int]) -> dict:
    """Compare the log read back with what the producer had acknowledged."""
    numbers = [int(v) for _, v in log]
    at = {o: int(v) for o, v in log}
    counts = Counter(numbers)
    lost = sorted(n for n in acked if n not in counts)
    moved = sorted((n, o, at.get(o)) for n, o in acked.items() if n in counts and at.get(o) != n)
    duplicates = sorted(n for n, k in counts.items() if k > 1)
    disorder = [(a, b) for a, b in zip(numbers, numbers[1:]) if b <= a]
    return {"lost": lost, "moved": moved, "duplicates": duplicates, "disorder": disorder}


def assert_clean(report: dict, acked: dict[int, int], log, errors) -> None:
    summary = {k: (len(v), v[:10]) for k, v in report.items()}
    assert not any(report.values()), (
        f"acknowledged {len(acked)}, log holds {len(log)}: {summary}; "
        f"producer errors {len(errors)} {errors[:5]}")


# --------------------------------------------------------------------------- failovers

def offsets_partition(group: str) -> int:
    """The __consumer_offsets partition of ``group``: Kafka's
    Utils.abs(group.hashCode) % offsets.topic.num.partitions."""
    h = 0
    for ch in group:
        h = (31 * h + ord(ch)) & 0xFFFFFFFF
    return (h & 0x7FFFFFFF) % int(CLUSTER_SETTINGS["offsets.topic.num.partitions"])


def state(c: Cluster, topic: str) -> dict:
    return c.partition_state(topic, 0)


def wait_full_isr(c: Cluster, topic: str, timeout: float = REJOIN_S) -> None:
    wait_for(lambda: sorted(state(c, topic)["isr"]) == [1, 2, 3], timeout,
             lambda: f"{topic}-0 ISR back to [1, 2, 3]: {state(c, topic)}\n{c.summary()}")


def kill_and_restart(c: Cluster, topic: str, victim: int, producer: NumberedProducer,
                     round_no: int) -> None:
    """kill -9 ``victim``; a new leader from the ISR; restart it; back in the ISR;
    acknowledgements flow again."""
    acked_before = producer.acked_count()
    c.kill(victim)

    def out():
        s = state(c, topic)
        return s["leader"] not in (victim, -1) and victim not in s["isr"]
    # The controller elects another leader from the ISR (if it led) and takes it out of
    # the ISR when its session ends; only then does it come back.
    wait_for(out, FAILOVER_S,
             lambda: f"round {round_no}: {victim} out of the ISR / leadership after kill -9: "
                     f"{state(c, topic)}\n{c.summary()}")
    c.restart(victim)
    wait_for(lambda: victim in state(c, topic)["isr"], REJOIN_S,
             lambda: f"round {round_no}: restarted broker {victim} back in the ISR of "
                     f"{topic}-0: {state(c, topic)}\n{c.summary()}")
    wait_for(lambda: producer.acked_count() > acked_before + 10, PROGRESS_S,
             lambda: f"round {round_no}: acknowledgements after killing {victim} "
                     f"(acked {producer.acked_count()}, errors {producer.errors[:3]}): "
                     f"{state(c, topic)}\n{c.summary()}")


def audit_so_far(bootstrap: str, topic: str, producer: NumberedProducer, round_no: int) -> int:
    """After a failover: every record acknowledged so far is in the log, once, in order.
    Returns how many that was."""
    acked, errors = producer.snapshot()
    if not acked:
        return 0
    log = read_partition(bootstrap, topic, until=max(acked.values()) + 1)
    report = audit(log, acked)
    # Numbers past the snapshot may be in the log unacknowledged yet: only order and
    # uniqueness of what is there, and the snapshot's presence, count.
    assert not any(report.values()), (
        f"after failover {round_no}: acknowledged {len(acked)}, log holds {len(log)}: "
        f"{ {k: (len(v), v[:10]) for k, v in report.items()} }; producer errors {errors[:5]}")
    return len(acked)


def create(c: Cluster, topic: str) -> None:
    clients.create_topic(c.bootstrap(c.controller_id()), topic, assignment={0: [1, 2, 3]},
                         configs={"min.insync.replicas": "2"})
    c.wait_topic(topic, 1)
    wait_full_isr(c, topic)


# --------------------------------------------------------------------------- tests

def test_ten_leader_kills_lose_and_duplicate_nothing(durable_cluster, unique):
    c = durable_cluster
    topic = unique("durable")
    create(c, topic)
    bootstrap = ",".join(c.bootstrap(i) for i in (1, 2, 3))
    producer = NumberedProducer(bootstrap, topic).start()
    try:
        wait_for(lambda: producer.acked_count() > 50, PROGRESS_S, "first acknowledgements")
        for round_no in range(1, ROUNDS + 1):
            wait_full_isr(c, topic)
            kill_and_restart(c, topic, state(c, topic)["leader"], producer, round_no)
            audited = audit_so_far(bootstrap, topic, producer, round_no)
            print(f"round {round_no}: {audited} acknowledged records all in place; "
                  f"state {state(c, topic)}")
    finally:
        left = producer.stop()
    assert left == 0, f"{left} records without an outcome after the flush"
    log = read_partition(bootstrap, topic)
    assert_clean(audit(log, producer.acked), producer.acked, log, producer.errors)
    assert not producer.errors, f"{len(producer.errors)} failed deliveries: {producer.errors[:5]}"
    assert len(producer.acked) == producer.sent


class CommittingConsumer:
    """A group member reading partition 0 and committing its position synchronously every
    COMMIT_EVERY_S; ``seen`` lists (offset, number) in reading order; ``commits`` the offsets
    whose commit succeeded, in order."""

    COMMIT_EVERY_S = 0.3

    def __init__(self, bootstrap: str, topic: str, group: str) -> None:
        from confluent_kafka import Consumer
        self.topic = topic
        self.consumer = Consumer({
            "bootstrap.servers": bootstrap, "group.id": group, "enable.auto.commit": False,
            "auto.offset.reset": "earliest", "session.timeout.ms": 6000,
            "heartbeat.interval.ms": 500, "enable.partition.eof": False,
            "topic.metadata.refresh.interval.ms": 2000})
        self.seen: list[tuple[int, int]] = []
        self.commits: list[int] = []
        self.commit_errors: list[str] = []
        self._stop = threading.Event()
        self._until: int | None = None
        self._thread = threading.Thread(target=self._run, name="committing-consumer", daemon=True)

    def start(self) -> "CommittingConsumer":
        self.consumer.subscribe([self.topic])
        self._thread.start()
        return self

    def _run(self) -> None:
        from confluent_kafka import KafkaException, TopicPartition
        last_commit = time.monotonic()
        while not self._stop.is_set():
            for msg in self.consumer.consume(500, 0.2):
                if msg.error() is None:
                    self.seen.append((msg.offset(), int(msg.value())))
            if time.monotonic() - last_commit >= self.COMMIT_EVERY_S and self.seen:
                last_commit = time.monotonic()
                position = self.seen[-1][0] + 1
                try:
                    self.consumer.commit(offsets=[TopicPartition(self.topic, 0, position)],
                                         asynchronous=False)
                    self.commits.append(position)
                except KafkaException as e:
                    self.commit_errors.append(str(e))
            if self._until is not None and self.commits and self.commits[-1] >= self._until:
                return

    def finish(self, end_offset: int, timeout: float = 90.0) -> None:
        """Read and commit up to ``end_offset``, then stop (bounded)."""
        self._until = end_offset
        self._thread.join(timeout)
        self._stop.set()
        self._thread.join(10)
        self.consumer.close()


def test_consumer_group_commits_skip_nothing_across_kills(durable_cluster, unique):
    c = durable_cluster
    topic = unique("durable-group")
    group = unique("committer")
    create(c, topic)
    bootstrap = ",".join(c.bootstrap(i) for i in (1, 2, 3))
    producer = NumberedProducer(bootstrap, topic).start()
    consumer = CommittingConsumer(bootstrap, topic, group).start()
    try:
        wait_for(lambda: len(consumer.commits) > 3, PROGRESS_S,
                 lambda: f"first commits (errors {consumer.commit_errors[:3]})")
        coordinator_partition = offsets_partition(group)
        for round_no in range(1, GROUP_ROUNDS + 1):
            wait_full_isr(c, topic)
            if round_no % 2:
                victim = state(c, topic)["leader"]
            else:   # the group coordinator: the leader of the group's offsets partition
                victim = c.partition_state("__consumer_offsets", coordinator_partition)["leader"]
            commits_before = len(consumer.commits)
            kill_and_restart(c, topic, victim, producer, round_no)
            audit_so_far(bootstrap, topic, producer, round_no)
            wait_for(lambda: len(consumer.commits) > commits_before + 3, PROGRESS_S,
                     lambda: f"round {round_no}: commits after killing {victim} "
                             f"(errors {consumer.commit_errors[-3:]})\n{c.summary()}")
    finally:
        left = producer.stop()
        end = max(producer.acked.values(), default=-1) + 1
        consumer.finish(end)
    assert left == 0, f"{left} records without an outcome after the flush"

    log = read_partition(bootstrap, topic)
    assert_clean(audit(log, producer.acked), producer.acked, log, producer.errors)
    at = dict((o, int(v)) for o, v in log)
    # What the member read was committed data: in the final log at the same offset.
    changed = [(o, n, at.get(o)) for o, n in consumer.seen if at.get(o) != n]
    assert not changed, f"records read then gone or changed: {changed[:10]}"
    # It never skipped forward (re-reading from a committed offset goes back, never ahead).
    jumps = [(a, b) for (a, _), (b, _) in zip(consumer.seen, consumer.seen[1:]) if b > a + 1]
    assert not jumps, f"the member skipped records: {jumps[:10]}"
    assert consumer.seen and consumer.seen[0][0] == 0
    assert consumer.commits == sorted(consumer.commits), consumer.commits

    # The group's committed offset is the last one acknowledged to the member; a second
    # member resumes there and reads the rest.
    from confluent_kafka import Consumer, TopicPartition
    last = consumer.commits[-1]
    second = Consumer({"bootstrap.servers": bootstrap, "group.id": group,
                       "enable.auto.commit": False, "auto.offset.reset": "earliest",
                       "enable.partition.eof": False})
    try:
        committed = second.committed([TopicPartition(topic, 0)], timeout=30)[0].offset
        assert committed == last, (committed, last, consumer.commit_errors[-5:])
        produced_more = [(o, int(v)) for o, v in log if o >= last]
        second.assign([TopicPartition(topic, 0, committed)])
        rest: list[tuple[int, int]] = []
        deadline = time.monotonic() + 60
        while len(rest) < len(produced_more) and time.monotonic() < deadline:
            for msg in second.consume(500, 0.5):
                if msg.error() is None:
                    rest.append((msg.offset(), int(msg.value())))
        assert rest == produced_more
    finally:
        second.close()
    covered = {n for o, n in consumer.seen if o < last} | {n for _, n in rest}
    assert not [n for n in producer.acked if n not in covered]
