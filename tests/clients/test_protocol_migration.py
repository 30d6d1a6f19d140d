"""A rolling migration of a live consumer group between the classic and the consumer group
protocols (``group.consumer.migration.policy=bidirectional``, the default), with stock Java
clients (tests/java/RollingMember.java, compiled
here against kafka-clients 3.9.0 and 4.3.0): three Kafka 3.9 consumers of the classic protocol
share a 6-partition topic while a producer keeps writing to it; one by one each is stopped
and a Kafka 4.3 consumer with ``group.protocol=consumer`` takes its place (the first one
converts the group); then one by one they are replaced by 3.9 classic consumers again (the
last consumer-protocol member leaving converts it back).

At the end:
- every record produced (an initial batch, then a bounded, counted stream during the whole
  migration) was consumed, and the group's committed offsets reach the end of every
  partition: none lost;
- a record is read again only by a member that starts owning its partition (at-least-once
  across a handover): within one ownership of a partition a member reads contiguous,
  never repeated offsets; the duplicates are counted and reported;
- no partition was owned by two members at one instant (listener calls, wall clock);
- ListGroups saw the group classic, then consumer, then classic.
Waits are bounded polls for a condition.
"""
from __future__ import annotations

import subprocess
import threading
import time
from dataclasses import dataclass, field
from pathlib import Path

import pytest
from kafka import KafkaAdminClient, KafkaConsumer, KafkaProducer, TopicPartition
from kafka.admin import NewTopic

from tests.support.broker_process import BrokerProcess
from tests.support.cluster import wait_for as cluster_wait_for
from tests.support.java_clients import JavaClient, client_jars, compiled
from tests.support.wire import WireClient

pytestmark = [pytest.mark.java, pytest.mark.timeout(900)]

ROOT = Path(__file__).resolve().parents[2]
PROGRAM = ROOT / "tests" / "java" / "RollingMember.java"
OVERRIDES = {
    "group.consumer.session.timeout.ms": "10000",
    "group.consumer.min.session.timeout.ms": "1000",
    "group.consumer.heartbeat.interval.ms": "500",
    "group.consumer.min.heartbeat.interval.ms": "100",
    "group.min.session.timeout.ms": "1000",
    "offsets.topic.num.partitions": "4",
}
TOPIC = "rolling"
GROUP = "rolling-group"
PARTITIONS = 6
INITIAL = 600              # records there before the first member starts
MAX_STREAMED = 20_000      # the stream's bound (it stops when the migration is done)
WAIT = 90.0


def wait_for(condition, what: str, timeout: float = WAIT):
    return cluster_wait_for(condition, timeout, what, interval=0.2)


# -- the members ------------------------------------------------------------------------------
@dataclass
class Event:
    kind: str
    ms: int
    partitions: tuple[int, ...] = ()
    offset: int = -1
    value: str = ""


def _event(line: str) -> Event | None:
    words = line.split(" ", 2)
    if len(words) < 2 or not words[1].isdigit():
        return None
    kind, ms, rest = words[0], int(words[1]), words[2] if len(words) > 2 else ""
    if kind in ("ASSIGNED", "REVOKED", "LOST"):
        return Event(kind, ms, tuple(int(p) for p in rest.split(",") if p))
    if kind == "REC":
        partition, offset, value = rest.split(" ", 2)
        return Event(kind, ms, (int(partition),), int(offset), value)
    return Event(kind, ms, value=rest)


@dataclass
class Member:
    name: str
    proc: subprocess.Popen
    events: list[Event] = field(default_factory=list)

    def read(self) -> None:
        for line in self.proc.stdout:
            event = _event(line.rstrip("\n"))
            if event is not None:
                self.events.append(event)

    def owned(self) -> set[int]:
        owned: set[int] = set()
        for e in list(self.events):
            if e.kind == "ASSIGNED":
                owned |= set(e.partitions)
            elif e.kind in ("REVOKED", "LOST"):
                owned -= set(e.partitions)
        return owned

    def stop(self) -> None:
        try:
            self.proc.stdin.write("stop\n")
            self.proc.stdin.close()
        except (BrokenPipeError, OSError):
            pass
        try:
            self.proc.wait(60)
        except subprocess.TimeoutExpired:
            self.proc.kill()
            raise AssertionError(f"{self.name} did not close")

    def describe(self) -> str:
        lines = [f"{e.kind} {e.ms} {e.partitions} {e.value}" for e in self.events
                 if e.kind != "REC"]
        return f"-- {self.name} (exit {self.proc.poll()}):\n" + "\n".join(lines)


class Members:
    def __init__(self, java_clients, bootstrap: str, log_dir: Path) -> None:
        self._java = java_clients
        self._bootstrap = bootstrap
        self._log_dir = log_dir
        self.all: list[Member] = []

    def start(self, name: str, version: str, protocol: str) -> Member:
        client = self._java[version]
        command = client.command("RollingMember", self._bootstrap, TOPIC, GROUP, protocol)
        with open(self._log_dir / f"{name}.err", "wb") as err:
            proc = subprocess.Popen(command, stdin=subprocess.PIPE, stdout=subprocess.PIPE,
                                    stderr=err, text=True, cwd=ROOT)
        member = Member(name, proc)
        threading.Thread(target=member.read, daemon=True).start()
        self.all.append(member)
        return member

    @property
    def running(self) -> list[Member]:
        return [m for m in self.all if m.proc.poll() is None]

    def report(self) -> str:
        return "\n".join(m.describe() for m in self.all)

    def kill_all(self) -> None:
        for m in self.all:
            if m.proc.poll() is None:
                m.proc.kill()
                m.proc.wait()


# -- the producer -----------------------------------------------------------------------------
class Stream(threading.Thread):
    """Writes r<i> round-robin to the partitions, ~100 a second, until stopped (or the
    bound); ``produced`` maps each acknowledged value to its (partition, offset)."""

    def __init__(self, bootstrap: str, start: int) -> None:
        super().__init__(daemon=True)
        self._producer = KafkaProducer(bootstrap_servers=bootstrap, acks="all", linger_ms=5)
        self._next = start
        self._halt = threading.Event()
        self.futures: dict[str, object] = {}

    def run(self) -> None:
        while not self._halt.is_set() and len(self.futures) < MAX_STREAMED:
            value = f"r{self._next}"
            self.futures[value] = self._producer.send(TOPIC, value.encode(),
                                                      partition=self._next % PARTITIONS)
            self._next += 1
            time.sleep(0.01)

    def finish(self) -> dict[str, tuple[int, int]]:
        self._halt.set()
        self.join(30)
        self._producer.flush()
        out = {}
        for value, future in self.futures.items():
            metadata = future.get(timeout=30)
            out[value] = (metadata.partition, metadata.offset)
        self._producer.close()
        return out


def produce_initial(bootstrap: str) -> dict[str, tuple[int, int]]:
    producer = KafkaProducer(bootstrap_servers=bootstrap, acks="all")
    futures = {f"r{i}": producer.send(TOPIC, f"r{i}".encode(), partition=i % PARTITIONS)
               for i in range(INITIAL)}
    producer.flush()
    out = {v: (f.get(10).partition, f.get(10).offset) for v, f in futures.items()}
    producer.close()
    return out


# -- the broker's view ------------------------------------------------------------------------
def listed(bootstrap: str) -> tuple[str, str] | None:
    """(type, state) of the group in ListGroups v5, None when it is not listed."""
    client = WireClient(bootstrap)
    try:
        response = client.request(16, 5, states_filter=[], types_filter=[])
    finally:
        client.close()
    assert response.error_code == 0
    return next(((g.group_type, g.group_state) for g in response.groups
                 if g.group_id == GROUP), None)


def settled(members: Members, bootstrap: str) -> tuple[str, str] | None:
    """(type, state) once every running member owns some partitions, together all of them
    and none twice, and the group is Stable."""
    running = members.running
    owned = [m.owned() for m in running]
    if any(not o for o in owned) or sorted(p for o in owned for p in o) != list(range(PARTITIONS)):
        return None
    seen = listed(bootstrap)
    return seen if seen is not None and seen[1] == "Stable" else None


def committed_to_the_end(bootstrap: str) -> bool:
    admin = KafkaAdminClient(bootstrap_servers=bootstrap)
    consumer = KafkaConsumer(bootstrap_servers=bootstrap)
    try:
        committed = admin.list_group_offsets(GROUP)[GROUP]
        ends = consumer.end_offsets([TopicPartition(TOPIC, p) for p in range(PARTITIONS)])
    finally:
        admin.close()
        consumer.close()
    return all(committed.get(tp) is not None and committed[tp].offset == end
               for tp, end in ends.items())


# -- what the members' logs say ---------------------------------------------------------------
def ownerships(member: Member):
    """(partition, from ms, to ms, [offsets read]) for each time ``member`` owned one."""
    open_: dict[int, tuple[int, list[int]]] = {}
    for e in member.events:
        if e.kind == "ASSIGNED":
            for p in e.partitions:
                open_.setdefault(p, (e.ms, []))
        elif e.kind in ("REVOKED", "LOST"):
            for p in e.partitions:
                if p in open_:
                    start, offsets = open_.pop(p)
                    yield p, start, e.ms, offsets
        elif e.kind == "REC":
            (p,) = e.partitions
            assert p in open_, f"{member.name} read partition {p} it did not own"
            open_[p][1].append(e.offset)
    for p, (start, offsets) in open_.items():
        yield p, start, 2**63, offsets


def overlaps(members: list[Member]) -> list[str]:
    spans: dict[int, list[tuple[int, int, str]]] = {}
    for m in members:
        for p, start, end, _ in ownerships(m):
            spans.setdefault(p, []).append((start, end, m.name))
    found = []
    for p, ss in spans.items():
        ss.sort()
        for i, (start, end, name) in enumerate(ss):
            for other_start, other_end, other in ss[i + 1:]:
                if other != name and other_start < end and start < other_end:
                    found.append(f"partition {p}: {name} [{start}, {end}) and {other} "
                                 f"[{other_start}, {other_end})")
    return found


# -- the test ---------------------------------------------------------------------------------
@pytest.fixture(scope="module")
def rolling_clients(tmp_path_factory) -> dict[str, JavaClient]:
    """RollingMember.java compiled against kafka-clients 3.9.0 and 4.3.0 (alone, so that
    the other programs of tests/java do not matter here)."""
    versions = ("3.9.0", "4.3.0")
    client_jars(versions)
    build = tmp_path_factory.mktemp("rolling-build")
    return {v: compiled(v, [PROGRAM], build / v) for v in versions}


@pytest.fixture
def mbroker(tmp_path_factory):
    b = BrokerProcess(tmp_path_factory.mktemp("migration") / "logs", overrides=OVERRIDES).start()
    admin = KafkaAdminClient(bootstrap_servers=b.bootstrap)
    try:
        admin.create_topics([NewTopic(TOPIC, PARTITIONS, 1)])
    finally:
        admin.close()
    yield b
    b.stop()


def test_rolling_migration_to_the_consumer_protocol_and_back(mbroker, rolling_clients,
                                                             tmp_path, capsys):
    bootstrap = mbroker.bootstrap
    produced = produce_initial(bootstrap)
    members = Members(rolling_clients, bootstrap, tmp_path)
    types: list[str] = []
    stream = Stream(bootstrap, INITIAL)
    try:
        classic = [members.start(f"classic-{i}", "3.9.0", "classic") for i in range(3)]

        def step(what: str) -> None:
            seen = wait_for(lambda: settled(members, bootstrap), f"{what}\n{members.report()}")
            types.append(seen[0])

        step("three classic members")
        stream.start()
        for i in range(3):                        # 3.9 classic -> 4.3 consumer, one by one
            classic[i].stop()
            step(f"classic-{i} gone")
            members.start(f"consumer-{i}", "4.3.0", "consumer")
            step(f"consumer-{i} in")
        consumers = [m for m in members.all if m.name.startswith("consumer-")]
        for i in range(3):                        # and back
            consumers[i].stop()
            step(f"consumer-{i} gone")
            members.start(f"classic-again-{i}", "3.9.0", "classic")
            step(f"classic-again-{i} in")
        produced.update(stream.finish())
        wanted = set(produced)
        wait_for(lambda: wanted <= {e.value for m in members.all for e in m.events
                                    if e.kind == "REC"},
                 f"every record consumed\n{members.report()}", timeout=120)
        wait_for(lambda: committed_to_the_end(bootstrap), "offsets committed to the end")
        for m in members.running:
            m.stop()
    finally:
        if stream.is_alive():
            stream.finish()
        members.kill_all()
    report = members.report()
    assert all(m.proc.returncode == 0 for m in members.all), report
    assert not [e for m in members.all for e in m.events if e.kind == "ERROR"], report

    # the group's kind at each step: the first consumer member converts it, the last one
    # leaving converts it back
    assert types == ["classic"] * 2 + ["consumer"] * 9 + ["classic"] * 2, (types, report)

    # none lost, and read again only across a handover
    reads = [(e.partitions[0], e.offset, e.value) for m in members.all for e in m.events
             if e.kind == "REC"]
    by_value = {value: (p, o) for p, o, value in reads}
    assert set(by_value) >= set(produced), report
    assert all(by_value[v] == where for v, where in produced.items()), "read at another offset"
    handovers = 0
    for m in members.all:
        for p, _, _, offsets in ownerships(m):
            handovers += 1
            contiguous = list(range(offsets[0], offsets[0] + len(offsets))) if offsets else []
            assert offsets == contiguous, f"{m.name} partition {p}: {offsets[:50]}\n{report}"
    assert overlaps(members.all) == [], report
    duplicates = len(reads) - len({(p, o) for p, o, _ in reads})
    failed_commits = [f"{m.name}: {e.value}" for m in members.all for e in m.events
                      if e.kind == "COMMIT_FAILED"]
    with capsys.disabled():
        print(f"\nrolling migration: {len(produced)} records produced ({INITIAL} before the "
              f"members), {len(reads)} read, {duplicates} of them again, over {handovers} "
              f"ownerships of a partition; failed commits: {failed_commits or 'none'}; "
              f"ListGroups' type after each step: {types}")
