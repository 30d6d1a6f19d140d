"""Produce (0): appends, acks, unknown topics/partitions, empty and null payloads, records
that break the topic's rules (keyless on compacted, too large), corrupt batches, garbage
that is no log entry (alone, after a batch, beside other partitions), and idempotent or
transactional batches from unknown producers.  Version v writes to partition v."""
from __future__ import annotations

import struct

from tests.conformance.cases import batch, for_api, values
from tests.conformance.cases.common import case
from tests.conformance.state import (
    ISR, MISSING, PLAIN, PRODUCE, PRODUCE_COMPACT, STRICT, TIMESTAMPS)


def _request(topic, partition, records, acks=-1, transactional_id=None):
    return {"transactional_id": transactional_id, "acks": acks, "timeout_ms": 10000,
            "topic_data": [{"name": topic, "partition_data": [
                {"index": partition, "records": records}]}]}


def _corrupt(data: bytes) -> bytes:
    return data[:-1] + bytes([data[-1] ^ 0xFF])


def _entry(size: int, magic: int, total: int) -> bytes:
    """Bytes that start like a log entry: offset 0, the size field, epoch 0, magic."""
    head = struct.pack(">qiib", 0, size, 0, magic)
    return head + bytes(total - len(head))


# Records Kafka cannot read as a log entry (ByteBufferLogInputStream's checks).
GARBAGE = {
    "size-zero": bytes(20),
    "negative-size": _entry(-5, 0, 22),
    "bad-magic": _entry(30, 5, 42),
    "negative-magic": _entry(30, -2, 42),
}


@for_api(0)
def produce(v: int):
    magic = 2 if v >= 3 else 1
    one = batch(values(2), magic=magic)
    yield case("ordinary", _request(PRODUCE, v, one))
    yield case("acks-1", _request(PRODUCE, v, batch(values(1, "a"), magic=magic), acks=1))
    yield case("acks-invalid", _request(PRODUCE, v, one, acks=2))
    yield case("unknown-topic", _request(MISSING, 0, one))
    yield case("unknown-partition", _request(PLAIN, 7, one))
    yield case("no-topics", {"acks": -1, "timeout_ms": 1000, "topic_data": []})
    yield case("no-partitions", {"acks": -1, "timeout_ms": 1000, "topic_data": [
        {"name": PRODUCE, "partition_data": []}]})
    if v == 9:     # Kafka 3.9 never answers this one: one version, short wait
        yield case("null-records", _request(PRODUCE, v, None), timeout=3.0)
    yield case("empty-records", _request(PRODUCE, v, b""))
    yield case("corrupt-crc", _request(PRODUCE, v, _corrupt(one)))
    for name, garbage in GARBAGE.items():
        yield case(f"garbage-{name}", _request(PLAIN, 0, garbage))
    yield case("garbage-after-batch", _request(PLAIN, 0, one + bytes(12)))
    # A first batch longer than the int32 size arithmetic, and a v2 batch ending inside
    # its header (known.py: Kafka fails the whole request with UNKNOWN_SERVER_ERROR).
    yield case("garbage-size-overflow", _request(PLAIN, 0, _entry(0x7FFFFFFF, 0, 22)))
    yield case("short-v2-batch", _request(PLAIN, 0, _entry(20, 2, 32)))
    yield case("null-records-unknown-topic", _request(MISSING, 0, None))
    yield case("null-records-unknown-partition", _request(PLAIN, 7, None))
    yield case("keyless-on-compacted", _request(PRODUCE_COMPACT, v, one))
    yield case("keyed-on-compacted", _request(
        PRODUCE_COMPACT, v, batch([(b"k", b"x"), (b"k", b"y")], magic=magic)))
    yield case("too-large", _request(STRICT, v, batch([(None, b"x" * 400)], magic=magic)))
    yield case("log-append-time", _request(STRICT, v, batch(values(1), magic=magic)))
    yield case("two-partitions-one-unknown", {"acks": -1, "timeout_ms": 10000, "topic_data": [
        {"name": PRODUCE, "partition_data": [{"index": v, "records": one},
                                             {"index": 99, "records": one}]}]})
    yield case("gzip", _request(PRODUCE, v, batch(values(3, "g"), magic=magic, compression=1)))
    yield case("zstd", _request(PRODUCE, v, batch(values(3, "z"), magic=2, compression=4)))
    yield case("not-enough-replicas", _request(ISR, v, one))
    yield case("not-enough-replicas-acks-1", _request(ISR, v, one, acks=1))
    yield case("timestamp-too-old", _request(TIMESTAMPS, v, batch(values(1), magic=magic,
                                                                  timestamp=1000)))
    yield case("timestamp-recent", _request(TIMESTAMPS, v, batch(values(1), magic=magic)))
    if v >= 3:
        yield case("idempotent-sequence-gap", _request(PRODUCE, v, batch(
            values(1), producer_id=4242, producer_epoch=0, base_sequence=7)))
        yield case("idempotent-new-producer", _request(PRODUCE, v, batch(
            values(1), producer_id=4243 + v, producer_epoch=0, base_sequence=0)))
        yield case("transactional-unknown-id", _request(PRODUCE, v, batch(
            values(1), transactional=True, producer_id=4343, producer_epoch=0,
            base_sequence=0), transactional_id="conf-no-such-txn"))
        yield case("transactional-batch-no-id", _request(PRODUCE, v, batch(
            values(1), transactional=True, producer_id=4344, producer_epoch=0,
            base_sequence=0)))
        yield case("magic-1-batch", _request(PRODUCE, v, batch(values(1), magic=1)))
        # Kafka reads first batches only up to the first transactional one: garbage after
        # it is refused for its own partition, without a message.
        yield case("garbage-after-transactional-batch", {
            "transactional_id": "conf-no-such-txn", "acks": -1, "timeout_ms": 10000,
            "topic_data": [{"name": PRODUCE, "partition_data": [{"index": v, "records": batch(
                values(1), transactional=True, producer_id=4345, producer_epoch=0,
                base_sequence=0)}]}, {"name": PLAIN, "partition_data": [
                    {"index": 0, "records": GARBAGE["size-zero"]}]}]})
    # Garbage in one partition fails the whole request: nothing is appended to the other.
    yield case("garbage-beside-batch", {"acks": -1, "timeout_ms": 10000, "topic_data": [
        {"name": PRODUCE, "partition_data": [{"index": v, "records": one}]},
        {"name": PLAIN, "partition_data": [{"index": 0, "records": GARBAGE["bad-magic"]}]}]})
    # Null records of an unknown topic are answered; the other partition is appended.
    yield case("null-records-beside-batch", {"acks": -1, "timeout_ms": 10000, "topic_data": [
        {"name": MISSING, "partition_data": [{"index": 0, "records": None}]},
        {"name": PRODUCE, "partition_data": [{"index": v, "records": one}]}]})
