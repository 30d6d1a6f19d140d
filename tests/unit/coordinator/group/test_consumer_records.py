"""The consumer group records of ``__consumer_offsets`` (types 3-8) are Kafka's byte for byte.

1. Against Kafka 3.9's own writers (``ConsumerGroupRecordOracle.java`` builds each record
   with ``CoordinatorRecordHelpers`` and serializes it with ``CoordinatorRecordSerde``):
   every record type and its tombstone, over seeded random values (null and empty strings,
   non-ASCII names, topic names that Java and Python sort differently, classic member
   metadata, up to 300 partitions a topic, every member state); key and value bytes equal.
   Kafka's bytes decode back to the values written, including 3.9's partition metadata
   with racks (read and ignored, as Kafka 4 does).
2. Without Java: decoding ignores the order of topics and partitions and unknown tagged
   fields, and gives None for the other record types.
"""
from __future__ import annotations

import random
import uuid
from pathlib import Path

import pytest

from kafkapy.coordinator.group import records as classic_records
from kafkapy.coordinator.group.consumer import records as C
from kafkapy.coordinator.group.consumer.types import (ClassicMemberMetadata, ClassicProtocol,
                                                      Member, MemberState, Subscription,
                                                      TopicMetadata, assignment)
from tests.support.kafka_oracle import kafka39_oracle, text_arg

ORACLE = Path(__file__).with_name("ConsumerGroupRecordOracle.java")


# --------------------------------------------------------------------------- the oracle

@pytest.fixture(scope="module")
def kafka_records():
    """``records(lines) -> [(key, value | None)]`` through Kafka 3.9's own writers."""
    run = kafka39_oracle(ORACLE, "kafka-group-coordinator-3.9.0.jar")

    def records(lines: list[str]) -> list[tuple[bytes, bytes | None]]:
        out = []
        for line in run(lines):
            key, value = line.split(" ")
            out.append((bytes.fromhex(key), None if value == "-" else bytes.fromhex(value)))
        return out
    return records


_s = text_arg


def _b(data: bytes) -> str:
    return "x" + data.hex()


def _signed(n: int) -> int:
    return n - (1 << 64) if n >= 1 << 63 else n


def _id(topic_id: uuid.UUID) -> str:
    return f"{_signed(topic_id.int >> 64)}:{_signed(topic_id.int & ((1 << 64) - 1))}"


def _list(items: list[str]) -> str:
    return ",".join(items) or "-"


def _assignment_text(a) -> str:
    """In the order the encoder writes: topic ids ascending, partitions ascending."""
    return "/".join(f"{_id(t)}:{','.join(map(str, sorted(a[t])))}" for t in sorted(a)) or "-"


def _topics_text(topics: dict[uuid.UUID, TopicMetadata], racks: bool = False) -> str:
    def rack_text(t: TopicMetadata) -> str:
        if not racks or not t.racks:
            return "-"
        return "/".join(f"{p}={'+'.join(_s(r) for r in sorted(rs))}"
                        for p, rs in sorted(t.racks.items()))
    ordered = sorted(topics.values(), key=lambda t: (t.name, t.topic_id))
    return _list([f"{_id(t.topic_id)}:{_s(t.name)}:{t.num_partitions}:{rack_text(t)}"
                  for t in ordered])


def _classic_text(c: ClassicMemberMetadata | None) -> str:
    if c is None:
        return "~"
    return f"{c.session_timeout_ms}/" + ";".join(f"{_s(p.name)}={_b(p.metadata)}"
                                                  for p in c.protocols)


# --------------------------------------------------------------------------- random values

NAMES = ["", "g", "group-1", "grüppe", "\u00e9\u65e5\u672c", "a b", "\U0001F600x", "\uFFFDz",
         "x" * 200]


def _name(rng: random.Random) -> str:
    return rng.choice(NAMES) if rng.random() < 0.4 else f"n-{rng.randrange(10**6)}"


def _maybe(rng: random.Random, value):
    return None if rng.random() < 0.3 else value


def _topic_ids(rng: random.Random, n: int) -> list[uuid.UUID]:
    return [uuid.UUID(int=rng.getrandbits(128)) for _ in range(n)]


def _assignment(rng: random.Random):
    def partitions():
        n = rng.choice([1, 8, 300, 5000])
        return rng.sample(range(n), rng.randint(1, min(n, rng.choice([1, 3, 130, 300]))))
    return assignment((t, partitions()) for t in _topic_ids(rng, rng.choice([0, 1, 2, 5, 20])))


def _topics(rng: random.Random, racks: bool = False) -> dict[uuid.UUID, TopicMetadata]:
    out = {}
    for i, t in enumerate(_topic_ids(rng, rng.choice([0, 1, 3, 40]))):
        n = rng.choice([1, 3, 64, 200])
        rack_map = {p: frozenset(rng.sample(["r1", "r2", "r3", "zone-ä"], rng.randint(0, 3)))
                    for p in range(min(n, 5))} if racks and rng.random() < 0.7 else {}
        out[t] = TopicMetadata(t, f"topic-{i}-{_name(rng) or 'x'}", n, rack_map)
    return out


def _subscription(rng: random.Random) -> Subscription:
    classic = None
    if rng.random() < 0.4:
        classic = ClassicMemberMetadata(rng.choice([0, 6000, 45000, 2**31 - 1]), tuple(
            ClassicProtocol(rng.choice(["range", "roundrobin", "cooperative-sticky", ""]),
                            rng.randbytes(rng.choice([0, 3, 200])))
            for _ in range(rng.choice([0, 1, 2]))))
    names = [_name(rng) for _ in range(rng.choice([0, 1, 3, 30]))]
    return Subscription(client_id=_name(rng), client_host=rng.choice(["/127.0.0.1", "", "/::1"]),
                        instance_id=_maybe(rng, _name(rng)), rack_id=_maybe(rng, _name(rng)),
                        topic_names=tuple(names + names[:2]),
                        topic_regex=rng.choice([None, "", "foo.*", "t\u00e9[0-9]+"]),
                        rebalance_timeout_ms=rng.choice([-1, 0, 300000, 2**31 - 1]),
                        server_assignor=rng.choice([None, "uniform", "range"]), classic=classic)


def _member(rng: random.Random, member_id: str) -> Member:
    epoch = rng.choice([0, 1, 7, 2**31 - 1, -1, -2])
    return Member(member_id, C.NO_SUBSCRIPTION, member_epoch=epoch,
                  previous_member_epoch=rng.choice([-1, 0, epoch - 1]),
                  state=rng.choice(list(MemberState)), assigned=_assignment(rng),
                  pending_revocation=_assignment(rng) if rng.random() < 0.5 else {})


def _cases(rng: random.Random):
    """(our (key, value), the oracle's request line, the decoded value expected)."""
    for _ in range(30):
        g, m = _name(rng), _name(rng) or str(uuid.UUID(int=rng.getrandbits(128)))
        epoch = rng.choice([0, 1, 42, 2**31 - 1, -1])
        yield C.group_epoch_record(g, epoch), f"E {_s(g)} {epoch}", epoch
        topics = _topics(rng)
        yield (C.partition_metadata_record(g, topics), f"P {_s(g)} {_topics_text(topics)}",
               topics)
        s = _subscription(rng)
        line = (f"M {_s(g)} {_s(m)} {_s(s.instance_id)} {_s(s.rack_id)} {_s(s.client_id)} "
                f"{_s(s.client_host)} {_list([_s(n) for n in s.topic_names])} "
                f"{_s(s.topic_regex or '')} {s.rebalance_timeout_ms} {_s(s.server_assignor)} "
                f"{_classic_text(s.classic)}")
        yield C.member_record(g, m, s), line, s
        yield C.target_epoch_record(g, epoch), f"A {_s(g)} {epoch}", epoch
        a = _assignment(rng)
        yield C.target_member_record(g, m, a), f"T {_s(g)} {_s(m)} {_assignment_text(a)}", a
        mem = _member(rng, m)
        line = (f"C {_s(g)} {_s(m)} {mem.member_epoch} {mem.previous_member_epoch} "
                f"{int(mem.state)} {_assignment_text(mem.assigned)} "
                f"{_assignment_text(mem.pending_revocation)}")
        yield C.current_assignment_record(g, mem), line, mem
        yield C.group_epoch_tombstone(g), f"ET {_s(g)}", None
        yield C.partition_metadata_tombstone(g), f"PT {_s(g)}", None
        yield C.member_tombstone(g, m), f"MT {_s(g)} {_s(m)}", None
        yield C.target_epoch_tombstone(g), f"AT {_s(g)}", None
        yield C.target_member_tombstone(g, m), f"TT {_s(g)} {_s(m)}", None
        yield C.current_assignment_tombstone(g, m), f"CT {_s(g)} {_s(m)}", None


def _expected_subscription(s: Subscription) -> Subscription:
    """As decoded: distinct topic names in Java's String order; no regex written as Kafka's
    default "", read back as none."""
    names = sorted(set(s.topic_names), key=lambda n: n.encode("utf-16-be", "surrogatepass"))
    return Subscription(**{**{f: getattr(s, f) for f in Subscription.__slots__},
                           "topic_names": tuple(names), "topic_regex": s.topic_regex or None})


@pytest.mark.java
def test_every_record_and_tombstone_is_kafkas(kafka_records):
    cases = list(_cases(random.Random(848)))
    expected = kafka_records([line for _, line, _ in cases])
    for (ours, line, _), kafkas in zip(cases, expected):
        assert ours == kafkas, line[:200]


@pytest.mark.java
def test_kafkas_records_decode_to_what_was_written(kafka_records):
    cases = list(_cases(random.Random(849)))
    written = kafka_records([line for _, line, _ in cases])
    for (_, line, value), (key, raw) in zip(cases, written):
        record = C.decode(key, raw)
        assert record.type == C.record_type(key)
        if isinstance(value, Subscription):
            value = _expected_subscription(value)
        assert record.value == value, line[:200]


@pytest.mark.java
def test_kafka_39_partition_metadata_with_racks_reads_without_them(kafka_records):
    rng = random.Random(7)
    cases = [_topics(rng, racks=True) for _ in range(20)]
    with_racks = kafka_records([f"P x67 {_topics_text(t, racks=True)}" for t in cases])
    without = kafka_records([f"P x67 {_topics_text(t)}" for t in cases])
    assert any(a != b for a, b in zip(with_racks, without))  # 3.9 did write racks
    for topics, (key, raw), kafka4 in zip(cases, with_racks, without):
        decoded = C.decode(key, raw).value
        assert decoded == {t: TopicMetadata(t, m.name, m.num_partitions)
                           for t, m in topics.items()}
        assert C.partition_metadata_record("g", topics) == kafka4


@pytest.mark.java
def test_kafkas_member_and_group_tombstone_sequences(kafka_records):
    members = ["m1", "m2", "m3"]
    lines = ([f"CT x67 {_s(m)}" for m in members] + [f"TT x67 {_s(m)}" for m in members]
             + ["AT x67"] + [f"MT x67 {_s(m)}" for m in members] + ["PT x67", "ET x67"])
    assert C.group_tombstones("g", members) == kafka_records(lines)
    assert C.member_tombstones("g", "m2") == kafka_records(
        [f"CT x67 {_s('m2')}", f"TT x67 {_s('m2')}", f"MT x67 {_s('m2')}"])


# --------------------------------------------------------------------------- without Java

def test_decoding_ignores_order_and_merges_topics():
    t1, t2 = uuid.UUID(int=5), uuid.UUID(int=2**127)
    cls = C.ConsumerGroupTargetAssignmentMemberValue
    value = cls(version=0, topic_partitions=[
        cls.TopicPartition(topic_id=t2, partitions=[9, 1]),
        cls.TopicPartition(topic_id=t1, partitions=[3]),
        cls.TopicPartition(topic_id=t2, partitions=[4]),
        cls.TopicPartition(topic_id=uuid.UUID(int=7), partitions=[])])
    key, _ = C.target_member_record("g", "m", {})
    record = C.decode(key, bytes(value.encode()))
    assert record.value == {t1: frozenset({3}), t2: frozenset({1, 4, 9})}
    assert C.target_member_record("g", "m", record.value) == C.target_member_record(
        "g", "m", {t2: frozenset({9, 4, 1}), t1: frozenset({3})})


def test_unknown_tagged_fields_are_skipped():
    key, value = C.group_epoch_record("g", 5)
    # A value of a later Kafka: a tagged int64 (tag 0) and tagged bytes (tag 3) after Epoch.
    later = value[:-1] + bytes.fromhex("02" "00" "08" "0000000000000007" "03" "01" "ff")
    assert C.decode(key, later) == C.ConsumerGroupRecord(C.RecordType.METADATA, "g", None, 5)


def test_member_record_fields_and_unknown_state():
    t = uuid.UUID(int=1)
    key, value = C.current_assignment_record("g", Member("m", C.NO_SUBSCRIPTION, 3, 2,
                                                          MemberState.STABLE, {t: frozenset({0})}))
    # The state byte sits after the int16 version and the two int32 epochs.
    odd = value[:10] + bytes([77]) + value[11:]
    record = C.decode(key, odd)
    assert record.member_id == "m" and record.value.state is MemberState.UNKNOWN
    assert record.value.assigned == {t: frozenset({0})}


def test_other_record_types_are_not_consumer_group_records():
    assert C.decode(classic_records.offset_key("g", "t", 0), None) is None
    assert C.decode(classic_records.group_key("g"), None) is None
    assert C.decode(b"\x00\x09\x00\x01g", b"\x00\x00\x00") is None   # a share group record
    assert C.decode(b"\x00\x03\x00\x01g", None) == C.ConsumerGroupRecord(
        C.RecordType.METADATA, "g", None, None)
