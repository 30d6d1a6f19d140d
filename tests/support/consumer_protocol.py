"""Consumer-protocol groups (KIP-848) as tests watch and drive them.

- ``find_coordinator(bootstrap, group)``: FindCoordinator v4 to one broker: (error, node id).
- ``describe_group(bootstrap, group)``: ConsumerGroupDescribe v1 to one broker, as a
  ``GroupView`` (error code and message, state, epochs, assignor, members with their epoch,
  current and target assignment as ``{topic: sorted partitions}``).
- ``JavaMembers``: tests/java/GroupProtocolMembers.java run as one process (kafka-clients
  4.3, ``group.protocol=consumer``): members added on command, every line it prints kept
  (``MEMBER``/``ASSIGNED``/``REVOKED``/``LOST``/``REC``/``COMMITFAIL``), stopped at exit.
- ``ConfluentMembers``: confluent-kafka consumers with ``group.protocol: consumer`` polling
  in threads of the test process (lighter than a JVM), committing every record they get.

Invariants: every wait is bounded; a member process is killed however the test ends.
"""
from __future__ import annotations

import subprocess
import threading
from dataclasses import dataclass, field

import kafkapy.protocol.consumer_group_apis  # noqa: F401  (registers keys 68 and 69)
from tests.support.wire import WireClient

FIND_COORDINATOR, CONSUMER_GROUP_DESCRIBE = 10, 69


@dataclass(frozen=True)
class MemberView:
    member_id: str
    member_epoch: int
    client_id: str
    client_host: str
    instance_id: str | None
    assigned: dict[str, tuple[int, ...]]
    target: dict[str, tuple[int, ...]]
    member_type: int


@dataclass(frozen=True)
class GroupView:
    group_id: str
    error: int
    message: str | None = None
    state: str = ""
    group_epoch: int = 0
    assignment_epoch: int = 0
    assignor: str = ""
    members: tuple[MemberView, ...] = field(default_factory=tuple)

    def member(self, member_id: str) -> MemberView | None:
        return next((m for m in self.members if m.member_id == member_id), None)

    def ids(self) -> set[str]:
        return {m.member_id for m in self.members}

    def assigned(self, topic: str) -> list[int]:
        """Every partition of ``topic`` in a member's current assignment (with repeats)."""
        return sorted(p for m in self.members for p in m.assigned.get(topic, ()))

    def settled(self) -> bool:
        """Stable: every member at the group epoch, owning its target assignment."""
        return (self.error == 0 and self.state == "Stable"
                and self.assignment_epoch == self.group_epoch
                and all(m.member_epoch == self.group_epoch and m.assigned == m.target
                        for m in self.members))

    def summary(self) -> str:
        lines = [f"group {self.group_id}: error={self.error} {self.message or ''} "
                 f"state={self.state} epoch={self.group_epoch} "
                 f"assignment_epoch={self.assignment_epoch} assignor={self.assignor}"]
        lines += [f"  {m.member_id} {m.client_id} epoch={m.member_epoch} type={m.member_type} "
                  f"assigned={m.assigned} target={m.target}" for m in self.members]
        return "\n".join(lines)


def find_coordinator(bootstrap: str, group: str, timeout: float = 10.0) -> tuple[int, int]:
    """(error code, coordinator node id) of ``group`` as the broker at ``bootstrap`` says."""
    client = WireClient(bootstrap, timeout=timeout)
    try:
        r = client.request(FIND_COORDINATOR, 4, key_type=0, coordinator_keys=[group])
    finally:
        client.close()
    c = r.coordinators[0]
    return c.error_code, c.node_id


def describe_group(bootstrap: str, group: str, timeout: float = 10.0) -> GroupView:
    """ConsumerGroupDescribe v1 of ``group`` to the broker at ``bootstrap``."""
    client = WireClient(bootstrap, timeout=timeout)
    try:
        r = client.request(CONSUMER_GROUP_DESCRIBE, 1, group_ids=[group],
                           include_authorized_operations=False)
    finally:
        client.close()
    g = r.groups[0]
    if g.error_code:
        return GroupView(g.group_id, g.error_code, g.error_message)
    members = tuple(MemberView(m.member_id, m.member_epoch, m.client_id, m.client_host,
                               m.instance_id, _partitions(m.assignment),
                               _partitions(m.target_assignment), m.member_type)
                    for m in g.members)
    return GroupView(g.group_id, 0, None, g.group_state, g.group_epoch, g.assignment_epoch,
                     g.assignor_name, members)


def _partitions(assignment) -> dict[str, tuple[int, ...]]:
    return {t.topic_name: tuple(sorted(t.partitions)) for t in assignment.topic_partitions}


# --------------------------------------------------------------------------- Java members

class JavaMembers:
    """GroupProtocolMembers.java in a process of its own (see the module docstring)."""

    def __init__(self, command: list[str], log_path) -> None:
        self._log = open(log_path, "w")
        self.proc = subprocess.Popen(command, stdin=subprocess.PIPE, stdout=subprocess.PIPE,
                                     stderr=self._log, text=True, bufsize=1)
        self._lines: list[str] = []
        self._lock = threading.Lock()
        self._reader = threading.Thread(target=self._read, daemon=True)
        self._reader.start()

    def _read(self) -> None:
        for line in self.proc.stdout:
            with self._lock:
                self._lines.append(line.rstrip("\n"))

    def lines(self, kind: str | None = None) -> list[list[str]]:
        """Lines printed so far, split at spaces (the last field of REC keeps its spaces
        out: values are single words); only those starting with ``kind`` if given."""
        with self._lock:
            lines = list(self._lines)
        split = [line.split(" ") for line in lines]
        return [s for s in split if kind is None or s[0] == kind]

    def consumed(self) -> set[str]:
        """The values of every record consumed so far."""
        return {fields[4] for fields in self.lines("REC")}

    def command(self, text: str) -> None:
        self.proc.stdin.write(text + "\n")
        self.proc.stdin.flush()

    def stop(self, timeout: float = 60.0) -> None:
        """``quit`` (members leave the group), then kill if it does not end in time."""
        if self.proc.poll() is None:
            try:
                self.command("quit")
                self.proc.wait(timeout)
            except (OSError, subprocess.TimeoutExpired):
                pass
        if self.proc.poll() is None:
            self.proc.kill()
            self.proc.wait(30)
        self._log.close()


# --------------------------------------------------------------------------- confluent members

class ConfluentMembers:
    """confluent-kafka consumers (``group.protocol: consumer``), each polling in a thread;
    every record is committed synchronously as it arrives.  A context manager."""

    def __init__(self, bootstrap: str, group: str, topics: list[str],
                 client_ids: list[str], protocol: str = "consumer") -> None:
        from confluent_kafka import Consumer   # optional dependency of the test suite
        self._stop = threading.Event()
        self.consumed: list[tuple[str, int, int]] = []
        self._consumers = [Consumer(_confluent_config(bootstrap, group, client_id, protocol))
                           for client_id in client_ids]
        for consumer in self._consumers:
            consumer.subscribe(topics)
        self._threads = [threading.Thread(target=self._poll, args=(c,), daemon=True)
                         for c in self._consumers]
        for thread in self._threads:
            thread.start()

    def _poll(self, consumer) -> None:
        while not self._stop.is_set():
            message = consumer.poll(0.2)
            if message is None or message.error():
                continue
            self.consumed.append((message.topic(), message.partition(), message.offset()))
            consumer.commit(message=message, asynchronous=False)

    def close(self) -> None:
        self._stop.set()
        for thread in self._threads:
            thread.join(30)
        for consumer in self._consumers:
            consumer.close()

    def __enter__(self) -> "ConfluentMembers":
        return self

    def __exit__(self, *exc) -> None:
        self.close()


def _confluent_config(bootstrap: str, group: str, client_id: str, protocol: str) -> dict:
    config = {"bootstrap.servers": bootstrap, "group.id": group, "client.id": client_id,
              "group.protocol": protocol, "auto.offset.reset": "earliest",
              "enable.auto.commit": False}
    if protocol == "classic":
        config.update({"session.timeout.ms": 6000, "heartbeat.interval.ms": 500})
    return config

