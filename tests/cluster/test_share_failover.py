"""Share groups (KIP-932) under failure, with real processes: a ZooKeeper, three kafkapy
brokers, and kafka-clients 4.3.0's ``KafkaShareConsumer``s (tests/java/kafka4/
ShareConsumers.java, consumers as threads of one process, explicit acknowledgement: each
poll's records acknowledged by their value, then ``commitSync``, whose result it prints).

1. The share-partition leader killed mid-run.  One partition at replication factor 3 (min
   ISR 2), ``__share_group_state`` at replication factor 3; the group has
   ``share.auto.offset.reset=earliest``, a 3 s record lock, and a dead-letter topic (RF 3,
   ``errors.deadletterqueue.group.enable=true``).  3,000 records (acks=all, batches of at
   most 20) of which 30 are REJECTed, 30 RELEASEd at every delivery (archived at the delivery
   count limit, 5) and 30 RELEASEd once.  Three consumers; once a few hundred ACCEPTs are
   committed, the broker leading the partition is killed with kill -9; the consumers go on
   against the new leader (the killed broker comes back as a follower).  Then:
   - every other record was ACCEPTed; the group's share-partition start offset (as the share
     coordinator persisted it, DescribeShareGroupOffsets) reached the end of the partition;
   - no record whose ACCEPT was committed (commitSync said ok) was handed out again, before or
     after the failover; a record whose RELEASE was committed came back at the next delivery
     count (the count survives the failover);
   - a record RELEASEd at every delivery was delivered up to the delivery count limit, never
     past it;
   - the dead-letter topic holds each REJECTed record and each record archived at the limit
     exactly once, with its key and value and the ``__dlq.errors.*`` headers (topic,
     partition, offset, group, delivery count, reason), and nothing else: a REJECT whose
     dead letter the killed leader had not yet appended is written by the new leader with
     the same reason and delivery count.
2. Every broker killed (kill -9 all three) while some records are acknowledged and others
   acquired or not yet delivered, then all restarted on their log dirs; the same consumer
   process goes on.  No record whose ACCEPT was committed before the kill is delivered
   again; a committed RELEASE comes back at the next delivery count; every record is
   ACCEPTed, among them records first delivered after the restart, and the start offset
   reaches the end of the partition.

Both tests share one cluster (module fixture); the first restarts the broker it killed, the
second starts with all three running.  Every process started is killed however a test ends
(the cluster's brokers by its fixture, the consumers by ``consumers``).
"""
from __future__ import annotations

import time

import pytest

from tests.support import cluster_clients as clients
from tests.support.cluster import FAILOVER_S, Cluster, running_cluster, wait_started
from tests.support.java_clients import JavaClient, client_jars, compiled
from tests.support.share_clients import (SHARE_PROGRAM, JavaShareConsumers, produce,
                                         wait_for)
from tests.support.share_cluster import (DELIVERY_COUNT_LIMIT, SHARE_CLUSTER_SETTINGS,
                                         ShareOutcomes, dead_letters, line_count,
                                         share_offsets, values)

pytestmark = [pytest.mark.java, pytest.mark.timeout(300)]

LOCK_MS = 3000
WAIT = 90.0                  # bound on any one phase (a loaded 2-core machine)
RESTART_S = 90.0


@pytest.fixture(scope="module")
def share_cluster(tmp_path_factory, zookeeper_server):
    yield from running_cluster(tmp_path_factory.mktemp("share-cluster"), zookeeper_server,
                               extra_settings=SHARE_CLUSTER_SETTINGS)


@pytest.fixture(scope="module")
def java(tmp_path_factory) -> JavaClient:
    client_jars(("4.3.0",))
    return compiled("4.3.0", [SHARE_PROGRAM], tmp_path_factory.mktemp("share-java"))


@pytest.fixture
def consumers(share_cluster, java, tmp_path):
    """``consumers(topic, group, n, *options)``: ShareConsumers.java bootstrapped from every
    broker, its group configs set; killed at the end of the test, its output left in the
    test's tmp dir (``share-c.out``)."""
    started: list[JavaShareConsumers] = []

    def start(topic: str, group: str, n: int, *options: str) -> JavaShareConsumers:
        p = JavaShareConsumers(java, tmp_path, _bootstrap(share_cluster), topic, group, n,
                               *options, "seconds=240")
        started.append(p)
        wait_for(lambda: p.lines("CONFIGURED") or p.proc.poll() is not None,
                 "the group configs set", WAIT, p.describe)
        assert p.lines("CONFIGURED"), p.describe()
        return p

    yield start
    for p in started:
        p.kill()
        # Kept for a failure's post-mortem beside the brokers' logs.
        (tmp_path / f"share-{p.name}.out").write_text("\n".join(" ".join(f) for f in p.lines()))


def _bootstrap(c: Cluster) -> str:
    return ",".join(c.bootstrap(i) for i in sorted(c.nodes))


def _bootstraps(c: Cluster) -> dict[int, str]:
    return {i: c.bootstrap(i) for i in c.running_ids()}


def _all_running(c: Cluster) -> None:
    """Every broker up (an earlier test may have left one down) and seen by the others."""
    for i in sorted(c.nodes):
        if i not in c.running_ids():
            c.restart(i, timeout=RESTART_S)
    c.wait_ready(timeout=RESTART_S)


def _create(c: Cluster, topic: str, **configs: str) -> None:
    clients.create_topic(c.bootstrap(c.controller_id()), topic, assignment={0: [1, 2, 3]},
                         configs={"min.insync.replicas": "2", **configs})
    c.wait_topic(topic, 1)
    wait_for(lambda: sorted(c.partition_state(topic, 0)["isr"]) == [1, 2, 3],
             f"{topic}-0's ISR [1, 2, 3]", WAIT, lambda: str(c.partition_state(topic, 0)))


def _group_options(**configs: str) -> list[str]:
    base = {"share.auto.offset.reset": "earliest", "share.record.lock.duration.ms": str(LOCK_MS)}
    base.update(configs)
    return [f"group-config:{k}={v}" for k, v in base.items()]


def _settled(c: Cluster, group: str, topic: str, end: int) -> bool:
    """The share coordinator has the group's start offset at ``end``: every record before it
    acknowledged or archived, and persisted."""
    try:
        error, start, _lag = share_offsets(_bootstraps(c), group, topic)
    except Exception:  # noqa: BLE001 - a broker restarting; the diagnostics show the answer
        return False
    return error == 0 and start == end


def _why(c: Cluster, p: JavaShareConsumers, group: str, topic: str):
    def offsets() -> str:
        try:
            return f"DescribeShareGroupOffsets: {share_offsets(_bootstraps(c), group, topic)}"
        except Exception as e:  # noqa: BLE001 - shown as it is
            return f"DescribeShareGroupOffsets: {type(e).__name__}: {e}"
    return (lambda: ShareOutcomes(p.lines()).counts(), offsets, p.describe,
            lambda: f"{topic}-0 state {c.partition_state(topic, 0)}", c.summary)


def _kill_point(p: JavaShareConsumers, accepted: int, total: int, c, group, topic) -> int:
    """Wait until at least ``accepted`` ACCEPTs are committed; the output position then."""
    wait_for(lambda: len(ShareOutcomes(p.lines()).accepted_committed()) >= accepted,
             f"{accepted} committed ACCEPTs", WAIT, *_why(c, p, group, topic))
    at = line_count(p)
    done = len(ShareOutcomes(p.lines()[:at]).accepted_committed())
    assert done < total, f"every record was acknowledged before the kill ({done} of {total})"
    return at


def _assert_no_redelivery(outcomes: ShareOutcomes) -> None:
    again = outcomes.delivered_after_accept()
    shown = [(a.delivery, a.commit_line, o.delivery, o.line, o.committed) for a, o in again[:10]]
    assert not again, f"{len(again)} records delivered after a committed ACCEPT: {shown}"


# --------------------------------------------------------------------------- tests

def test_share_partition_leader_killed_mid_run(share_cluster, consumers, unique):
    c = share_cluster
    _all_running(c)
    topic, group = unique("share-fo"), unique("share-fo-group")
    dlq = f"dlq.{topic}"
    _create(c, topic)
    _create(c, dlq, **{"errors.deadletterqueue.group.enable": "true"})
    records = values(3000, reject_every=100, poison_every=100, release_every=100)
    rejects = {i for i, v in enumerate(records) if v.startswith("reject")}
    poison = {i for i, v in enumerate(records) if v.startswith("poison")}
    releases = {i for i, v in enumerate(records) if v.startswith("release")}
    produce(_bootstrap(c), topic, records, batch_records=20)

    p = consumers(topic, group, 3, *_group_options(**{"errors.deadletterqueue.topic.name": dlq}),
                  "client:max.poll.records=50")
    why = _why(c, p, group, topic)
    kill_line = _kill_point(p, 300, len(records), c, group, topic)
    victim = c.partition_state(topic, 0)["leader"]
    c.kill(victim)
    killed_line = line_count(p)
    wait_for(lambda: c.partition_state(topic, 0)["leader"] not in (victim, -1),
             f"a new leader of {topic}-0 after killing broker {victim}", FAILOVER_S, *why)
    c.restart(victim, timeout=RESTART_S)
    wait_for(lambda: _settled(c, group, topic, len(records)),
             "every record acknowledged or archived (the start offset at the end)", WAIT, *why)
    time.sleep(1.5)                       # room for a wrong redelivery to show
    p.stop()

    got = ShareOutcomes(p.lines())
    detail = got.counts()
    assert not got.mismatched, got.mismatched[:5]
    after_kill = [o for o in got.all if o.line > killed_line and o.delivery.action == "ACCEPT"
                  and o.committed]
    assert after_kill, f"no ACCEPT committed after broker {victim} was killed: {detail}"
    # Every record that is not dead-lettered was ACCEPTed.
    assert got.accepted() == set(range(len(records))) - rejects - poison, detail
    _assert_no_redelivery(got)
    uncounted = got.release_not_counted(DELIVERY_COUNT_LIMIT)
    assert not uncounted, f"committed RELEASEs not redelivered at the next count: {uncounted[:5]}"
    assert all(got.by_offset[i][-1].delivery.count >= 2 for i in releases), detail
    for i in poison:
        counts = [o.delivery.count for o in got.by_offset[i]]
        assert {o.delivery.action for o in got.by_offset[i]} == {"RELEASE"}, (i, counts)
        assert max(counts) == DELIVERY_COUNT_LIMIT, (i, counts)
    for i in rejects:
        assert {o.delivery.action for o in got.by_offset[i]} == {"REJECT"}, i

    letters = dead_letters(_bootstrap(c), dlq, expected=len(rejects | poison), timeout=WAIT)
    by_offset: dict[int, list] = {}
    for letter in letters:
        by_offset.setdefault(int(letter.headers.get("__dlq.errors.offset", -1)), []).append(letter)
    twice = {o: ls for o, ls in by_offset.items() if len(ls) > 1}
    assert not twice, f"dead-lettered more than once: {twice}"
    assert set(by_offset) == rejects | poison, sorted(set(by_offset) ^ (rejects | poison))
    for offset, [letter] in by_offset.items():
        h = letter.headers
        assert (letter.key, letter.value) == (f"k{offset}", records[offset]), letter
        assert (h["__dlq.errors.topic"], h["__dlq.errors.partition"],
                h["__dlq.errors.group"]) == (topic, "0", group), letter
        if offset in poison:
            expected = ("delivery_count_limit", str(DELIVERY_COUNT_LIMIT))
        else:
            rejected_at = [o.delivery.count for o in got.by_offset[offset]
                           if o.delivery.action == "REJECT"]
            expected = ("rejected", str(rejected_at[-1]))
        assert (h["__dlq.errors.reason"], h["__dlq.errors.delivery.count"]) == expected, (
            letter, [o.delivery for o in got.by_offset[offset]])
    print(f"broker {victim} killed after {len(got.accepted_committed(kill_line))} committed "
          f"ACCEPTs; {detail}; {len(letters)} dead letters")


def test_every_broker_killed_and_restarted(share_cluster, consumers, unique):
    """2,000 records are written before the consumers start and 500 more once every broker
    is back: on a fast machine the consumers may have taken all of the first ones by the
    time the brokers are killed, and the last ones are then what only the restarted brokers
    can have served."""
    c = share_cluster
    _all_running(c)
    topic, group = unique("share-restart"), unique("share-restart-group")
    _create(c, topic)
    records = values(2500, release_every=50)
    first, after_restart = records[:2000], records[2000:]
    produce(_bootstrap(c), topic, first, batch_records=20)

    p = consumers(topic, group, 2, *_group_options(), "client:max.poll.records=50")
    why = _why(c, p, group, topic)
    kill_line = _kill_point(p, 300, len(records), c, group, topic)
    for i in sorted(c.nodes):
        c.kill(i)
    killed_line = line_count(p)
    before = ShareOutcomes(p.lines()[:kill_line]).accepted_committed()
    for node in c.nodes.values():
        node.launch()
    for node in c.nodes.values():
        wait_started(node, RESTART_S)
    c.wait_ready(timeout=RESTART_S)
    produce(_bootstrap(c), topic, after_restart, batch_records=20)
    wait_for(lambda: _settled(c, group, topic, len(records)),
             "every record acknowledged after the restart (the start offset at the end)",
             WAIT, *why)
    time.sleep(1.5)
    p.stop()

    got = ShareOutcomes(p.lines())
    detail = got.counts()
    assert not got.mismatched, got.mismatched[:5]
    assert before and len(before) < len(records), (len(before), detail)
    _assert_no_redelivery(got)
    # What was committed before the kill is never handed out after it.
    later = [o for o in got.all if o.line > kill_line and o.delivery.offset in before
             and (o.committed or o.delivery.count > before[o.delivery.offset].delivery.count)]
    assert not later, [(before[o.delivery.offset].delivery, o) for o in later[:10]]
    uncounted = got.release_not_counted(DELIVERY_COUNT_LIMIT)
    assert not uncounted, f"committed RELEASEs not redelivered at the next count: {uncounted[:5]}"
    # The rest was delivered and ACCEPTed: records never handed out before the kill among
    # them, so the restarted brokers served them.
    untouched = set(range(len(records))) - {o.delivery.offset for o in got.all
                                            if o.line < killed_line}
    assert untouched, f"every record was delivered before the kill: {detail}"
    assert got.accepted() == set(range(len(records))), detail
    print(f"all brokers killed after {len(before)} committed ACCEPTs, {len(untouched)} records "
          f"never delivered before; {detail}")
