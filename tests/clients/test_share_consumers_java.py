"""Share groups with kafka-clients 4.3.0's ``KafkaShareConsumer`` (tests/java/kafka4/
ShareConsumers.java: consumers as threads of one process, one line per delivered record).

- five consumers on one partition all get records, and 10,000 records are each delivered
  once (delivery count 1) and ACCEPTed, across the group;
- RELEASE hands a record out again with its delivery count one higher;
- REJECT archives a record at once, and a record RELEASEd at every delivery is archived when it
  reaches the delivery count limit (Kafka's default ``group.share.delivery.count.limit``, 5):
  neither comes back;
- a consumer killed (SIGKILL) with records acquired: another consumer gets each of them once
  (released when the connection drops, as Kafka 4.x does, or when their locks run out);
  a consumer stopped (SIGSTOP, its connection kept open) with records acquired:
  another consumer gets them once their acquisition lock (the group's
  ``share.record.lock.duration.ms``, set by Admin.incrementalAlterConfigs) has run out;
- beyond Kafka: with ``kafkapy.share.redelivery.backoff.ms`` a record RELEASEd three times is
  handed out again no sooner than 200, 400 and 800 ms later, while other records keep flowing;
- beyond Kafka: a dead-letter topic (group config ``errors.deadletterqueue.topic.name``) gets
  each REJECTed record and each record archived at the delivery count limit exactly once, with
  its key, value and headers and the ``__dlq.errors.*`` headers; a plain consumer reads it.

One broker for every share-group client test (``share_broker``, tests/support/share_clients.py);
each test has its own topic and group, and sets ``share.auto.offset.reset=earliest`` on its
group before its consumers start.  Timing checks are lower bounds plus a loose upper bound.
"""
from __future__ import annotations

import time

import pytest

from tests.support.share_clients import (Deliveries, JavaShareConsumers, StreamProducer,
                                         broker_tail, create_topic, produce, read_all, wait_for)

pytestmark = [pytest.mark.java, pytest.mark.timeout(240)]

EARLIEST = "group-config:share.auto.offset.reset=earliest"
DELIVERY_LIMIT = 5          # Kafka's group.share.delivery.count.limit default
WAIT = 60.0


@pytest.fixture
def consumers(share_broker, share_java, tmp_path):
    """``consumers(topic, group, n, *options, name=...)`` starts ShareConsumers.java; every
    process started is stopped (killed if need be) at the end."""
    started: list[JavaShareConsumers] = []

    def start(topic: str, group: str, n: int, *options: str, name: str = "c"):
        c = JavaShareConsumers(share_java, tmp_path, share_broker.bootstrap, topic, group, n,
                               *options, name=name)
        started.append(c)
        wait_for(lambda: c.lines("CONFIGURED") or c.proc.poll() is not None,
                 f"{name} to set its group configs", WAIT, c.describe, broker_tail(share_broker))
        assert c.lines("CONFIGURED"), c.describe()
        return c

    yield start
    for c in started:
        c.kill()


def _diagnose(broker, *processes):
    return [p.describe for p in processes] + [broker_tail(broker)]


def test_five_consumers_share_one_partition(share_broker, consumers):
    topic = group = "share-java-five"
    create_topic(share_broker.bootstrap, topic)
    c = consumers(topic, group, 5, EARLIEST, "watch", "client:max.poll.records=100")
    why = _diagnose(share_broker, c)

    def all_assigned():
        line = c.group_line()
        members = [m for m in (line or [])[1:] if m.endswith(f"[{topic}-0]")]
        return len(members) == 5

    wait_for(all_assigned, "5 members, each assigned the partition", WAIT, *why)
    produce(share_broker.bootstrap, topic, (f"v{i}" for i in range(10_000)),
            batch_records=100)          # 100 batches: every consumer's fetches find some
    wait_for(lambda: len(Deliveries(c.deliveries()).offsets()) >= 10_000,
             "10,000 offsets delivered", WAIT, *why)
    time.sleep(1.0)                       # room for a wrong second delivery to show
    c.stop()

    got = Deliveries(c.deliveries())
    assert c.errors() == []
    assert got.offsets() == set(range(10_000))
    assert got.repeated() == {}
    assert {d.count for d in got.all} == {1}
    assert {d.action for d in got.all} == {"ACCEPT"}
    assert len(got.per_member()) == 5, got.per_member()


def test_release_redelivers_with_the_next_delivery_count(share_broker, consumers):
    topic = group = "share-java-release"
    create_topic(share_broker.bootstrap, topic)
    produce(share_broker.bootstrap, topic, ["release2-a", "v1", "release1-b", "v3"])
    c = consumers(topic, group, 2, EARLIEST)
    why = _diagnose(share_broker, c)
    done = lambda: Deliveries(c.deliveries()).history(0)[-1:] == [(3, "ACCEPT")]  # noqa: E731
    wait_for(done, "offset 0 accepted at its third delivery", WAIT, *why)
    wait_for(lambda: len(c.deliveries()) >= 7, "7 deliveries", WAIT, *why)
    time.sleep(1.5)
    c.stop()

    got = Deliveries(c.deliveries())
    assert c.errors() == []
    assert got.history(0) == [(1, "RELEASE"), (2, "RELEASE"), (3, "ACCEPT")]
    assert got.history(1) == [(1, "ACCEPT")]
    assert got.history(2) == [(1, "RELEASE"), (2, "ACCEPT")]
    assert got.history(3) == [(1, "ACCEPT")]


def test_reject_and_the_delivery_limit_archive(share_broker, consumers):
    topic = group = "share-java-archive"
    create_topic(share_broker.bootstrap, topic)
    produce(share_broker.bootstrap, topic, ["reject-a", "poison-b", "v2"])
    c = consumers(topic, group, 2, EARLIEST)
    why = _diagnose(share_broker, c)
    wait_for(lambda: len(Deliveries(c.deliveries()).history(1)) >= DELIVERY_LIMIT,
             f"the poison record delivered {DELIVERY_LIMIT} times", WAIT, *why)
    time.sleep(2.0)                       # an archived record would be back by now
    produce(share_broker.bootstrap, topic, ["v3"])
    wait_for(lambda: Deliveries(c.deliveries()).history(3), "a record after them", WAIT, *why)
    time.sleep(1.0)
    c.stop()

    got = Deliveries(c.deliveries())
    assert c.errors() == []
    assert got.history(0) == [(1, "REJECT")]
    assert got.history(1) == [(n, "RELEASE") for n in range(1, DELIVERY_LIMIT + 1)]
    assert got.history(2) == [(1, "ACCEPT")]
    assert got.history(3) == [(1, "ACCEPT")]


def _held(share_broker, consumers, topic: str, lock_ms: int):
    """A holder process that acquired some of ``topic``'s 20 records and keeps them."""
    create_topic(share_broker.bootstrap, topic)
    produce(share_broker.bootstrap, topic, (f"v{i}" for i in range(20)))
    holder = consumers(topic, topic, 1, EARLIEST, "hold",
                       f"group-config:share.record.lock.duration.ms={lock_ms}", name="holder")
    wait_for(holder.deliveries, "the holder's first records", WAIT,
             *_diagnose(share_broker, holder))
    time.sleep(0.3)                       # the rest of its poll's lines
    return holder, {d.offset: d.ms for d in holder.deliveries()}


def _taken_over(share_broker, consumers, topic: str, holder, held: dict[int, float]):
    """A taker process of the same group gets all 20 records, each once; the ones the holder
    never had at delivery count 1.  Returns the taker's deliveries."""
    taker = consumers(topic, topic, 1, name="taker")
    why = _diagnose(share_broker, holder, taker)
    wait_for(lambda: Deliveries(taker.deliveries()).offsets() >= set(range(20)),
             "the taker to get all 20 records", WAIT, *why)
    taker.stop()
    got = Deliveries(taker.deliveries())
    assert taker.errors() == []
    assert got.repeated() == {}
    assert {d.action for d in got.all} == {"ACCEPT"}
    fresh = set(range(20)) - set(held)
    assert {d.offset for d in got.all if d.count == 1} >= fresh
    return got


def test_records_of_a_killed_consumer_go_to_another(share_broker, consumers):
    """Kafka 4.x releases a member's acquired records when its connection drops, taking back
    their delivery (count decreased: the taker sees 1); without that the locks run out (the
    taker sees 2, a lock duration after the holder got them).  Either way, every one reaches
    the taker once."""
    topic = "share-java-killed"
    lock_ms = 3000
    holder, held = _held(share_broker, consumers, topic, lock_ms)
    holder.kill()
    got = _taken_over(share_broker, consumers, topic, holder, held)
    taken = {d.offset: (d.count, d.ms - held[d.offset]) for d in got.all if d.offset in held}
    assert set(taken) == set(held)
    for offset, (count, gap) in taken.items():
        assert count == 1 or (count == 2 and gap >= lock_ms - 1000), (offset, count, gap)
        assert gap < lock_ms + 20_000, (offset, gap)


def test_records_of_a_stopped_consumer_go_to_another_after_the_lock(share_broker, consumers):
    topic = "share-java-stopped"
    lock_ms = 3000
    holder, held = _held(share_broker, consumers, topic, lock_ms)
    holder.suspend()                      # SIGSTOP: its connection stays open
    try:
        got = _taken_over(share_broker, consumers, topic, holder, held)
    finally:
        holder.kill()
    assert {o: got.history(o) for o in held} == {o: [(2, "ACCEPT")] for o in held}
    # Both processes read CLOCK_MONOTONIC.  The lock started at the acquisition, a little
    # before the holder's poll returned: hence the 1 s slack below the lock duration.
    gaps = sorted(d.ms - held[d.offset] for d in got.all if d.offset in held)
    assert gaps[0] >= lock_ms - 1000, gaps
    assert gaps[-1] < lock_ms + 20_000, gaps


def test_release_backoff_grows_while_other_records_flow(share_broker, consumers):
    topic = group = "share-java-backoff"
    create_topic(share_broker.bootstrap, topic)
    produce(share_broker.bootstrap, topic, ["release3-a"])
    c = consumers(topic, group, 1, EARLIEST,
                  "group-config:kafkapy.share.redelivery.backoff.ms=200",
                  "group-config:kafkapy.share.redelivery.backoff.max.ms=5000")
    stream = StreamProducer(share_broker.bootstrap, topic, interval=0.02)
    why = _diagnose(share_broker, c)
    try:
        wait_for(lambda: len(Deliveries(c.deliveries()).history(0)) >= 4,
                 "offset 0's fourth delivery", WAIT, *why)
    finally:
        stream.stop()
    time.sleep(0.5)
    c.stop()

    got = Deliveries(c.deliveries())
    assert c.errors() == []
    assert got.history(0) == [(1, "RELEASE"), (2, "RELEASE"), (3, "RELEASE"), (4, "ACCEPT")]
    times = [d.ms for d in got.by_offset[(0, 0)]]
    gaps = [b - a for a, b in zip(times, times[1:])]
    for gap, backoff in zip(gaps, (200, 400, 800)):
        assert backoff <= gap < backoff + 2000, (gaps, "expected ≈200/400/800 ms")
    for a, b in zip(times, times[1:]):
        between = [d for d in got.all if d.offset != 0 and a < d.ms < b]
        assert between, f"no other record delivered between {a:.0f} and {b:.0f} ms"


def test_dead_letters_reach_the_dead_letter_topic_once(share_broker, consumers):
    topic = group = "share-java-dlq"
    dlq = f"dlq.{topic}"
    create_topic(share_broker.bootstrap, topic)
    create_topic(share_broker.bootstrap, dlq, config={"errors.deadletterqueue.group.enable": "true"})
    produce(share_broker.bootstrap, topic, ["v0", "reject-a", "v2", "poison-b", "reject-c"],
            headers=[("origin", b"test")])
    c = consumers(topic, group, 2, EARLIEST,
                  f"group-config:errors.deadletterqueue.topic.name={dlq}")
    why = _diagnose(share_broker, c)
    wait_for(lambda: len(Deliveries(c.deliveries()).history(3)) >= DELIVERY_LIMIT,
             "the poison record's last delivery", WAIT, *why)
    time.sleep(1.0)
    c.stop()
    assert c.errors() == []

    letters = read_all(share_broker.bootstrap, dlq, expected=3, timeout=WAIT, settle=2.0)
    seen = []
    for m in letters:
        headers = {k: (v or b"").decode() for k, v in (m.headers() or [])}
        seen.append((m.key().decode(), m.value().decode(), headers.get("origin"),
                     {k: v for k, v in headers.items() if k.startswith("__dlq.")}))

    def letter(offset: int, value: str, count: int, reason: str):
        return (f"k{offset}", value, "test", {
            "__dlq.errors.topic": topic, "__dlq.errors.partition": "0",
            "__dlq.errors.offset": str(offset), "__dlq.errors.group": group,
            "__dlq.errors.delivery.count": str(count), "__dlq.errors.reason": reason})

    expected = [letter(1, "reject-a", 1, "rejected"),
                letter(3, "poison-b", DELIVERY_LIMIT, "delivery_count_limit"),
                letter(4, "reject-c", 1, "rejected")]
    assert sorted(seen, key=lambda s: s[0]) == expected, broker_tail(share_broker)()
