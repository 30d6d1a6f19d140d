"""The classic consumer protocol's embedded bytes (``consumer/embedded.py``) against Kafka's
own ConsumerProtocol (kafka-clients 3.9, ``EmbeddedProtocolOracle.java``):

1. subscriptions at versions 0-3 and assignments at versions 0-5 (above 3 written as 3), over
   seeded random topics (non-ASCII names, up to 50 partitions), owned partitions,
   generations and racks (null, empty, set): the bytes are Kafka's;
2. Kafka's bytes decode to what was written (an empty rack as none, as Kafka reads it);
3. every truncation of those bytes, and hand-made malformed ones (negative version or
   counts, a null topic), is refused where Kafka refuses it and read alike where it reads it.
"""
from __future__ import annotations

import random
from pathlib import Path

import pytest

from kafkapy.coordinator.group.consumer.embedded import (MalformedProtocol, assignment_bytes,
                                                        decode_assignment, decode_subscription,
                                                        protocol_version, subscription_bytes)
from tests.support.kafka_oracle import kafka39_oracle, text_arg

ORACLE = Path(__file__).with_name("EmbeddedProtocolOracle.java")


@pytest.fixture(scope="module")
def kafka():
    """``kafka(lines) -> [answer]`` through Kafka 3.9's ConsumerProtocol."""
    return kafka39_oracle(ORACLE, "kafka-clients-3.9.0.jar")


_s = text_arg


def _spec(partitions: dict[str, list[int]]) -> str:
    return "/".join(f"{_s(t)}:{','.join(map(str, ps))}" for t, ps in sorted(partitions.items())
                    if ps) or "-"


def _java_key(name: str) -> bytes:
    return name.encode("utf-16-be", "surrogatepass")


def _cases(seed: int, n: int):
    rng = random.Random(seed)
    names = ["t", "orders", "zeta", "ünï", "日本", "a-b.c_d", "x" * 200]
    for _ in range(n):
        topics = sorted(rng.sample(names, rng.randint(0, 4)), key=_java_key)
        owned = {t: sorted(rng.sample(range(60), rng.randint(1, 50)))
                 for t in rng.sample(names, rng.randint(0, 3))}
        yield (rng.randint(0, 3), topics, owned, rng.choice([-1, 0, 7, 2**31 - 1]),
               rng.choice([None, "", "rack-1", "ŕ"]))


def test_bytes_are_kafkas_and_read_back(kafka):
    subscriptions = list(_cases(848, 60))
    assignments = [(rng_version, owned) for rng_version, (_, _, owned, _, _)
                   in zip([0, 1, 2, 3, 4, 5] * 10, _cases(849, 60))]
    lines = ([f"S {v} {','.join(map(_s, topics)) or '-'} {_spec(owned)} {gen} {_s(rack)}"
              for v, topics, owned, gen, rack in subscriptions]
             + [f"A {v} {_spec(owned)}" for v, owned in assignments])
    answers = kafka(lines)
    for (v, topics, owned, gen, rack), answer in zip(subscriptions, answers):
        ours = subscription_bytes(topics, rack, owned, gen, v)
        assert ours.hex() == answer, (v, topics, owned, gen, rack)
        decoded = decode_subscription(bytes.fromhex(answer))
        assert decoded.version == v and list(decoded.topics) == topics
        if v >= 1:
            assert {t: list(ps) for t, ps in decoded.owned} == {t: ps for t, ps in owned.items()}
        assert decoded.generation == (gen if v >= 2 else -1)
        assert decoded.rack_id == (rack or None if v >= 3 else None)
    for (v, owned), answer in zip(assignments, answers[len(subscriptions):]):
        assert assignment_bytes(owned, v).hex() == answer, (v, owned)
        assert protocol_version(bytes.fromhex(answer)) == min(v, 3)
        assert {t: list(ps) for t, ps in decode_assignment(bytes.fromhex(answer))} == owned


def _ours(decode, data: bytes) -> str:
    try:
        return "OK " + decode(data)
    except MalformedProtocol:
        return "ERR"


def _our_subscription(data: bytes) -> str:
    s = decode_subscription(data)
    return " ".join([",".join(map(_s, s.topics)) or "-", _spec_in_order(s.owned),
                     str(s.generation), _s(s.rack_id)])


def _spec_in_order(partitions) -> str:
    return "/".join(f"{_s(t)}:{','.join(map(str, ps))}" for t, ps in partitions if ps) or "-"


def _our_assignment(data: bytes) -> str:
    return _spec_in_order(decode_assignment(data))


def test_malformed_bytes_are_refused_as_kafka_refuses_them(kafka):
    valid_s = [subscription_bytes(["t", "u"], "r", {"t": [0, 1]}, 3, v) for v in range(4)]
    valid_a = [assignment_bytes({"t": [0, 1], "u": [2]}, v) for v in range(4)]
    crafted_s = [b"", b"\x00", b"\xff\xff" + valid_s[3][2:],          # version -1
                 b"\x00\x00\xff\xff\xff\xff\xff\xff\xff\xff",           # null topics
                 b"\x00\x00\x00\x00\x00\x01\xff\xff\xff\xff\xff\xff",   # a null topic
                 b"\x00\x00\x00\x00\x00\x00\xff\xff\xff\xfe",           # bytes length -2
                 b"\x00\x07" + valid_s[3][2:] + b"trailing",            # version 7, extra bytes
                 b"\x00\x00\x7f\xff\xff\xff"]                           # a huge count
    crafted_a = [b"", b"\xff\xfe" + valid_a[0][2:], b"\x00\x00\xff\xff\xff\xff",
                 b"\x00\x09" + valid_a[3][2:]]
    subs = crafted_s + [b[:i] for b in valid_s for i in range(len(b))]
    asgs = crafted_a + [b[:i] for b in valid_a for i in range(len(b))]
    answers = kafka([f"DS {b.hex() or '-'}" for b in subs] + [f"DA {b.hex() or '-'}" for b in asgs])
    for data, answer in zip(subs, answers):
        assert _ours(_our_subscription, data) == answer, data.hex()
    for data, answer in zip(asgs, answers[len(subs):]):
        assert _ours(_our_assignment, data) == answer, data.hex()


def test_versions_out_of_range():
    with pytest.raises(MalformedProtocol):
        assignment_bytes({}, -1)
    assert protocol_version(assignment_bytes({"t": [1]}, 9)) == 3
    with pytest.raises(MalformedProtocol):
        protocol_version(b"\x00")
