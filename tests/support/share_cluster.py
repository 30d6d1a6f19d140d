"""Share groups (KIP-932) on the three-broker cluster (``tests/support/cluster.py``), for the
failover tests in tests/cluster/test_share_failover.py.

- ``SHARE_CLUSTER_SETTINGS``: what every broker gets on top of the cluster's own settings:
  share groups served with a 1 s heartbeat and lock durations down to 1 s allowed,
  ``__share_group_state`` at 3 partitions, replication factor 3, min ISR 2, and a follower
  that stops fetching out of the ISR after 5 s (so acks=all resumes quickly after a kill).
- ``ShareOutcomes``: what a ShareConsumers.java run (``JavaShareConsumers``) did, read from
  its output in print order.  A member prints one ``REC`` line per record of a poll, then one
  ``COMMIT`` line with ``commitSync``'s result for that poll's acknowledgements, so each
  delivery is paired with the next ``COMMIT`` line of its member: *committed* when that
  line says ``ok``.  A delivery without a later ``COMMIT`` (its member stopped on an error)
  is not committed.  Its checks: ``delivered_after_accept`` (a record handed out again
  after its ACCEPT was committed) and ``release_not_counted`` (a committed RELEASE whose
  record never came back at the next delivery count).
- ``share_offsets``: DescribeShareGroupOffsets v1 at the group's coordinator: the share
  partition's start offset and lag as the share coordinator has them persisted.
- ``dead_letters``: a dead-letter topic read back with a plain consumer, each record's
  value and ``__dlq.*`` headers.

Record values, as ShareConsumers.java acknowledges them (explicit mode): ``reject-<i>``
REJECTed, ``poison-<i>`` RELEASEd at every delivery (archived at the delivery count
limit), ``release1-<i>`` RELEASEd once then ACCEPTed, ``v-<i>`` ACCEPTed; ``<i>`` is the
record's index, which is its offset when the records are the partition's first.

Invariants: every wait is bounded; nothing here starts a process (the tests start and kill
brokers and consumers, in ``finally``).
"""
from __future__ import annotations

import time
from collections import defaultdict
from typing import Iterable, NamedTuple

import kafkapy.protocol.share_group_apis  # noqa: F401  (registers DescribeShareGroupOffsets)
from tests.support.request_fields import fields
from tests.support.share_clients import Delivery
from tests.support.wire import WireClient

SHARE_CLUSTER_SETTINGS = {
    "group.coordinator.rebalance.protocols": "classic,consumer,share",
    "group.share.heartbeat.interval.ms": "1000",
    "group.share.min.heartbeat.interval.ms": "500",
    "group.share.min.record.lock.duration.ms": "1000",
    "share.coordinator.state.topic.num.partitions": "3",
    "share.coordinator.state.topic.replication.factor": "3",
    "share.coordinator.state.topic.min.isr": "2",
    "replica.lag.time.max.ms": "5000",
    "replica.fetch.wait.max.ms": "500",
}
DELIVERY_COUNT_LIMIT = 5          # Kafka's group.share.delivery.count.limit default
FIND_COORDINATOR, DESCRIBE_SHARE_GROUP_OFFSETS = 10, 90


def values(count: int, *, reject_every: int = 0, poison_every: int = 0,
           release_every: int = 0) -> list[str]:
    """``count`` record values (module docstring): index i is ``reject-i`` when
    i % reject_every == reject_every // 3 (and likewise ``poison-i`` at 2/3 of
    ``poison_every`` and ``release1-i`` at the half of ``release_every``), else ``v-i``."""
    out = []
    for i in range(count):
        if reject_every and i % reject_every == reject_every // 3:
            out.append(f"reject-{i}")
        elif poison_every and i % poison_every == 2 * poison_every // 3:
            out.append(f"poison-{i}")
        elif release_every and i % release_every == release_every // 2:
            out.append(f"release1-{i}")
        else:
            out.append(f"v-{i}")
    return out


# -- what the consumers did -------------------------------------------------------------------

class Outcome(NamedTuple):
    """One delivery, where its REC line is in the output, and whether its acknowledgement was
    committed (its member's next COMMIT line said ok; that line's index, or None)."""
    delivery: Delivery
    line: int
    committed: bool
    commit_line: int | None


class ShareOutcomes:
    """Deliveries of a ShareConsumers.java run paired with their commits (module docstring),
    from ``lines``: every output line split on spaces, in print order."""

    def __init__(self, lines: Iterable[list[str]]) -> None:
        self.lines = list(lines)
        self.all: list[Outcome] = []
        self.mismatched: list[str] = []       # COMMIT lines whose record count is not the REC count
        pending: dict[str, list[tuple[Delivery, int]]] = defaultdict(list)
        for i, f in enumerate(self.lines):
            if f[0] == "REC":
                d = Delivery(f[1], int(f[2]), int(f[3]), int(f[4]), f[5], float(f[6]))
                pending[d.member].append((d, i))
            elif f[0] == "COMMIT":
                member, records, ok = f[1], int(f[3]), f[4] == "ok"
                batch = pending.pop(member, [])
                if records != len(batch):
                    self.mismatched.append(" ".join(f) + f" after {len(batch)} REC lines")
                self.all.extend(Outcome(d, at, ok, i) for d, at in batch)
        for batch in pending.values():
            self.all.extend(Outcome(d, at, False, None) for d, at in batch)
        self.all.sort(key=lambda o: o.line)
        self.by_offset: dict[int, list[Outcome]] = defaultdict(list)
        for o in self.all:
            self.by_offset[o.delivery.offset].append(o)

    def accepted(self) -> set[int]:
        """Offsets delivered with ACCEPT as their acknowledgement at least once."""
        return {o.delivery.offset for o in self.all if o.delivery.action == "ACCEPT"}

    def accepted_committed(self, before_line: int | None = None) -> dict[int, Outcome]:
        """Offsets whose ACCEPT was committed (the first such delivery each), counting only
        commits printed before ``before_line`` when given."""
        out: dict[int, Outcome] = {}
        for o in self.all:
            if (o.delivery.action == "ACCEPT" and o.committed and o.delivery.offset not in out
                    and (before_line is None or o.commit_line < before_line)):
                out[o.delivery.offset] = o
        return out

    def delivered_after_accept(self) -> list[tuple[Outcome, Outcome]]:
        """(committed ACCEPT, later delivery) pairs: the record handed out again after a
        delivery whose ACCEPT was committed.  A later REC line alone does not prove it: a
        consumer may print records it acquired before the ACCEPTing member did (and whose
        lock has run out since), and those come with a delivery count no higher than the
        ACCEPTed one and their own acknowledgement fails.  So a later delivery counts when
        its delivery count is higher than the ACCEPTed one's (acquired after it), or its own
        acknowledgement was committed too."""
        bad = []
        for offset, accept in self.accepted_committed().items():
            for o in self.by_offset[offset]:
                if o.line > accept.line and (o.delivery.count > accept.delivery.count
                                             or o.committed):
                    bad.append((accept, o))
        return bad

    def release_not_counted(self, limit: int) -> list[tuple[Outcome, list[int]]]:
        """Committed RELEASEs at a delivery count k below ``limit`` with no later delivery at
        k + 1: a committed RELEASE is persisted, so whoever leads next hands the record out
        again at the next count.  Each with the record's later delivery counts."""
        bad = []
        for o in self.all:
            d = o.delivery
            if d.action != "RELEASE" or not o.committed or d.count >= limit:
                continue
            later = [x.delivery.count for x in self.by_offset[d.offset] if x.line > o.line]
            if d.count + 1 not in later:
                bad.append((o, later))
        return bad

    def counts(self) -> str:
        members = defaultdict(int)
        for o in self.all:
            members[o.delivery.member] += 1
        committed = sum(o.committed for o in self.all)
        return (f"{len(self.all)} deliveries ({committed} committed) of "
                f"{len(self.by_offset)} offsets; per member {dict(members)}")


def line_count(process) -> int:
    """How many lines a JavaShareConsumers process has printed so far (a position in its
    output, to tell what was printed before an event)."""
    return len(process.lines())


# -- the group's persisted state --------------------------------------------------------------

def _request(bootstrap: str, api_key: int, version: int, **values):
    client = WireClient(bootstrap, timeout=15)
    try:
        return client.request(api_key, version, **fields(api_key, **values))
    finally:
        client.close()


def share_offsets(bootstraps: dict[int, str], group: str, topic: str) -> tuple[int, int, int]:
    """DescribeShareGroupOffsets v1 for ``topic``'s partition 0 at ``group``'s coordinator
    (found through any broker of ``bootstraps``, {node id: host:port}):
    (error code, start offset, lag)."""
    coordinator = None
    for bootstrap in bootstraps.values():
        try:
            r = _request(bootstrap, FIND_COORDINATOR, 3, key=group, key_type=0)
        except OSError:
            continue
        if r.error_code == 0:
            coordinator = r.node_id
            break
    if coordinator not in bootstraps:
        return -1, -1, -1
    r = _request(bootstraps[coordinator], DESCRIBE_SHARE_GROUP_OFFSETS, 1,
                 groups=[dict(group_id=group, topics=[dict(topic_name=topic, partitions=[0])])])
    [g] = r.groups
    if g.error_code:
        return g.error_code, -1, -1
    [t] = g.topics
    [p] = t.partitions
    return p.error_code, p.start_offset, p.lag


# -- dead letters -----------------------------------------------------------------------------

class Letter(NamedTuple):
    offset: int                 # in the dead-letter topic
    key: str
    value: str
    headers: dict[str, str]     # the __dlq.* ones


def dead_letters(bootstrap: str, topic: str, expected: int, timeout: float = 60.0,
                 settle: float = 2.0) -> list[Letter]:
    """Every record of the dead-letter ``topic`` (partition 0) from its start, read by an
    assign()-only consumer until ``expected`` were read and ``settle`` seconds more brought
    none (to see extras), or ``timeout``."""
    from confluent_kafka import Consumer, TopicPartition
    consumer = Consumer({"bootstrap.servers": bootstrap, "group.id": f"reader-{topic}",
                         "enable.auto.commit": False, "auto.offset.reset": "earliest",
                         "enable.partition.eof": False})
    consumer.assign([TopicPartition(topic, 0, 0)])
    got: list[Letter] = []
    deadline = time.monotonic() + timeout
    quiet_since = None
    try:
        while time.monotonic() < deadline:
            m = consumer.poll(0.2)
            if m is not None and m.error() is None:
                headers = {k: (v or b"").decode() for k, v in (m.headers() or [])
                           if k.startswith("__dlq.")}
                got.append(Letter(m.offset(), (m.key() or b"").decode(),
                                  (m.value() or b"").decode(), headers))
                quiet_since = None
                continue
            if len(got) >= expected:
                quiet_since = quiet_since or time.monotonic()
                if time.monotonic() - quiet_since >= settle:
                    break
    finally:
        consumer.close()
    return got
