"""Consumer-group members as processes, and what their rebalance-listener logs say.

A member is a process that prints one line per event on stdout (tests/java/ConsumerProtocol.java
and tests/support/confluent_member.py print the same lines):
    ASSIGNED <ms> <partitions>    REVOKED <ms> <partitions>    LOST <ms> <partitions>
    REC <ms> <topic:partition> <offset>    CLOSED <ms>    ERROR <ms> <text>
where <ms> is the wall clock in milliseconds (one clock for every process on the machine) and
<partitions> is "topic:partition" comma-separated.  ``MemberProcess`` reads them into
``Event``s; a line "stop" on its stdin (or stdin's end) makes the member close and exit.

Ownership: a member owns a partition from its ASSIGNED line to its REVOKED or LOST line (or to
now).  ``overlaps`` lists every partition two members owned at one instant: intervals that only
touch (one's end == the other's start) do not overlap, since a REVOKED time is taken when the
member has let go and an ASSIGNED time when the other member already holds the partition.
"""
from __future__ import annotations

import os
import signal
import subprocess
import sys
import threading
import time
from dataclasses import dataclass
from pathlib import Path

from tests.support.java_clients import JavaClient

ROOT = Path(__file__).resolve().parents[2]
Partition = tuple[str, int]
OWNERSHIP = ("ASSIGNED", "REVOKED", "LOST")


@dataclass(frozen=True)
class Event:
    kind: str
    ms: int
    partitions: frozenset[Partition] = frozenset()
    offset: int = -1


def parse_line(line: str) -> Event | None:
    """The event of one output line; None for a line that is not one."""
    words = line.split(" ", 2)
    if len(words) < 2 or not words[1].isdigit():
        return None
    kind, ms, rest = words[0], int(words[1]), (words[2] if len(words) > 2 else "")
    if kind in OWNERSHIP:
        return Event(kind, ms, frozenset(_partition(p) for p in rest.split(",") if p))
    if kind == "REC":
        where, offset = rest.split(" ")
        return Event(kind, ms, frozenset([_partition(where)]), int(offset))
    return Event(kind, ms)


def _partition(text: str) -> Partition:
    topic, _, partition = text.rpartition(":")
    return topic, int(partition)


class MemberProcess:
    """One member process; its events are collected by a reader thread as they come."""

    def __init__(self, name: str, command: list[str], log_dir: Path) -> None:
        self.name = name
        self.events: list[Event] = []
        self.stderr_path = Path(log_dir) / f"{name}-{os.getpid()}-{id(self)}.err"
        with open(self.stderr_path, "wb") as err:
            self.proc = subprocess.Popen(command, stdin=subprocess.PIPE, stdout=subprocess.PIPE,
                                         stderr=err, text=True, cwd=ROOT)
        self._reader = threading.Thread(target=self._read, daemon=True)
        self._reader.start()

    def _read(self) -> None:
        for line in self.proc.stdout:
            event = parse_line(line.rstrip("\n"))
            if event is not None:
                self.events.append(event)

    # -- what it said --------------------------------------------------------------------
    def mark(self) -> int:
        """A position in the event list, for ``since``."""
        return len(self.events)

    def since(self, mark: int = 0, kinds=OWNERSHIP) -> list[Event]:
        return [e for e in self.events[mark:] if e.kind in kinds]

    def owned(self) -> frozenset[Partition]:
        """What it owns now, by its listener's calls."""
        owned: set[Partition] = set()
        for event in self.since():
            if event.kind == "ASSIGNED":
                owned |= event.partitions
            else:
                owned -= event.partitions
        return frozenset(owned)

    def moved(self, kind: str, mark: int = 0) -> set[Partition]:
        """Every partition of its ``kind`` events since ``mark``."""
        return {p for e in self.since(mark, (kind,)) for p in e.partitions}

    def records(self) -> list[tuple[Partition, int]]:
        return [(next(iter(e.partitions)), e.offset) for e in self.events if e.kind == "REC"]

    @property
    def alive(self) -> bool:
        return self.proc.poll() is None

    def describe(self) -> str:
        """Its ownership log and stderr's tail, for assertion messages."""
        lines = [f"{e.kind} {e.ms} {sorted(e.partitions)}" for e in self.since(0, OWNERSHIP +
                                                                               ("CLOSED", "ERROR"))]
        try:
            err = self.stderr_path.read_text(errors="replace")[-3000:]
        except OSError:
            err = ""
        return (f"-- {self.name} (exit {self.proc.poll()}):\n" + "\n".join(lines)
                + (f"\nstderr: {err}" if err.strip() else ""))

    # -- ending it -----------------------------------------------------------------------
    def stop(self, timeout: float = 30.0) -> int:
        """Asks it to close (it leaves the group) and waits; its exit code."""
        if self.alive:
            try:
                self.proc.stdin.write("stop\n")
                self.proc.stdin.close()
            except (BrokenPipeError, OSError):
                pass
        try:
            code = self.proc.wait(timeout)
        except subprocess.TimeoutExpired:
            self.kill()
            raise AssertionError(f"{self.name} did not close within {timeout}s")
        self._reader.join(5)
        return code

    def kill(self) -> int:
        """kill -9: no leave; the wall-clock ms just before the signal."""
        ms = int(time.time() * 1000)
        if self.alive:
            self.proc.send_signal(signal.SIGKILL)
        self.proc.wait()
        return ms

    def wait_exit(self, timeout: float = 60.0) -> int:
        code = self.proc.wait(timeout)
        self._reader.join(5)
        return code


def java_member(client: JavaClient, name: str, log_dir: Path, bootstrap: str, group: str,
                subscription: str, *options: str) -> MemberProcess:
    """tests/java/ConsumerProtocol.java with ``options`` (``key=value`` settings, ``--pattern``,
    ``--records``, ``--stop-after=N``)."""
    command = client.command("ConsumerProtocol", bootstrap, group, subscription, *options)
    return MemberProcess(name, command, log_dir)


def confluent_member(name: str, log_dir: Path, bootstrap: str, group: str, topic: str,
                     *settings: str) -> MemberProcess:
    """tests/support/confluent_member.py with ``key=value`` settings."""
    command = [sys.executable, "-m", "tests.support.confluent_member", bootstrap, group, topic,
               *settings]
    return MemberProcess(name, command, log_dir)


def overlaps(members: list[MemberProcess]) -> list[str]:
    """Every partition two members owned at one instant, as text (empty: none)."""
    intervals: dict[Partition, list[tuple[int, int, str]]] = {}
    for member in members:
        for partition, start, end in _ownership(member):
            intervals.setdefault(partition, []).append((start, end, member.name))
    found = []
    for partition, spans in sorted(intervals.items()):
        spans.sort()
        for i, (start, end, name) in enumerate(spans):
            for other_start, other_end, other in spans[i + 1:]:
                if other != name and other_start < end and start < other_end:
                    found.append(f"{partition}: {name} [{start}, {end}) and "
                                 f"{other} [{other_start}, {other_end})")
    return found


def _ownership(member: MemberProcess):
    """(partition, from ms, to ms) for every time ``member`` owned a partition."""
    since: dict[Partition, int] = {}
    for event in member.since():
        for partition in event.partitions:
            if event.kind == "ASSIGNED":
                since.setdefault(partition, event.ms)
            elif partition in since:
                yield partition, since.pop(partition), event.ms
    for partition, start in since.items():
        yield partition, start, sys.maxsize


def settle(members: list[MemberProcess], partitions: set[Partition], sizes: list[int] | None = None,
           timeout: float = 60.0) -> dict[str, frozenset[Partition]]:
    """Waits (bounded) until the members' owned sets are disjoint, cover ``partitions`` and
    have ``sizes`` (sorted; default: as even as can be); their owned sets."""
    if sizes is None:
        share, extra = divmod(len(partitions), len(members))
        sizes = sorted([share + 1] * extra + [share] * (len(members) - extra))
    deadline = time.monotonic() + timeout
    while True:
        owned = {m.name: m.owned() for m in members}
        together = [p for o in owned.values() for p in o]
        if (set(together) == partitions and len(together) == len(partitions)
                and sorted(map(len, owned.values())) == sizes):
            return owned
        dead = [m for m in members if not m.alive]
        if dead or time.monotonic() > deadline:
            raise AssertionError(
                f"members did not settle on {sorted(partitions)} in sizes {sizes} "
                f"(dead: {[m.name for m in dead]}); now {owned}\n"
                + "\n".join(m.describe() for m in members))
        time.sleep(0.1)
