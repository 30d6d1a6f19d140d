"""Down-conversion of stored v2 batches to magic 0/1 (Fetch v0-v3) at the edges of Java's longs.

Every batch here is one Kafka 3.9 stores (its LogValidator accepts it with the default
timestamp bounds).  The expected bytes are what a real Kafka 3.9 broker answered to Fetch
v1 (magic 0) and v3 (magic 1) for the same stored batch, overflow filler included:
- record timestamps are Java's ``baseTimestamp + timestampDelta``, wrapping at 64 bits;
  varints are read as Java reads them (5 bytes for an int, 10 for a long, high bits dropped);
- Kafka's MemoryRecordsBuilder refuses a negative timestamp other than -1 and offsets that
  do not increase: a batch with one (kept after the fetch-offset cut) cannot be converted.
  In the first chunk Kafka then fails the whole Fetch; in a later one it has already
  started sending and closes the connection (``after_first_chunk``).
"""
from __future__ import annotations

import pytest
from kafka.record import MemoryRecords

from kafkapy.protocol.errors import ErrorCode
from kafkapy.records.down_convert import DownConversionError, down_convert
from tests.support.batchcheck_craft import (GZIP, ZSTD, assemble, blob, plain, record, records,
                                         varint)

LONG_MAX = (1 << 63) - 1
LONG_MIN = -(1 << 63)
TS = 1_700_000_000_000


def _raw_record(body: bytes) -> bytes:
    return varint(len(body)) + body


def _sent(head: str, size: int) -> bytes:
    """Kafka's answer: converted bytes, then overflow filler up to ``size``."""
    return bytes.fromhex(head) + bytes(size - len(head) // 2)


# (stored batch, Kafka's Fetch v1 answer, Kafka's Fetch v3 answer)
SERVED = {
    # baseTimestamp Long.MIN_VALUE, delta -1: the record's timestamp wraps to Long.MAX_VALUE.
    "timestamp-wraps-to-long-max": (
        assemble(record(0, -1), 1, base_ts=LONG_MIN, max_ts=LONG_MAX),
        _sent("0000000000000000000000101fecd70a0000000000016b0000000176"
              "ffffffffffffffff0000003d", 70),
        _sent("0000000000000000000000181640e1a501007fffffffffffffff000000016b0000000176"
              "ffffffffffffffff0000003d", 70)),
    "gzip-timestamps-wrap": (
        plain(record(0, -1) + record(1, -2), 2, GZIP, base_ts=LONG_MIN, max_ts=LONG_MAX),
        bytes.fromhex("0000000000000001000000362f0aeb5f0001ffffffff000000281f8b0800000000"
                      "0000ff6360800301f937d7b9c02cc66c1051061567c42607006bfe5dfd38000000"
                      "ffffffffffffffff0000003d") + bytes(17),
        bytes.fromhex("00000000000000010000004d9531868f01017fffffffffffffffffffffff00000037"
                      "1f8b08000000000000ff63608003093187874b1919eaff43005084311b449441e519"
                      "416aae9fb34b85abf98750030086190e0b48000000ffffffffffff")),
    # keyLength 80 80 80 80 10: 1 << 32 as a 5-byte varint, which Java's int truncates to 0.
    "key-length-varint-high-bits": (
        assemble(_raw_record(b"\x00" + varint(0) + varint(0) + b"\x80\x80\x80\x80\x10"
                             + blob(b"v") + varint(0)), 1, base_ts=TS),
        _sent("00000000000000000000000fcbfa54a40000000000000000000176"
              "ffffffffffffffff0000003d", 73),
        _sent("000000000000000000000017d891c19401000000018bcfe56800000000000000000176"
              "ffffffffffffffff0000003d", 73)),
    # timestampDelta 80 x9 02: bit 64 of a 10-byte varlong, which Java's long drops (delta 0).
    "timestamp-delta-varint-high-bits": (
        assemble(_raw_record(b"\x00" + b"\x80" * 9 + b"\x02" + varint(0) + blob(b"k")
                             + blob(b"v") + varint(0)), 1, base_ts=TS),
        _sent("0000000000000000000000101fecd70a0000000000016b0000000176"
              "ffffffffffffffff0000003d", 79),
        _sent("00000000000000000000001839268c3301000000018bcfe56800000000016b0000000176"
              "ffffffffffffffff0000003d", 79)),
}


@pytest.mark.parametrize("name", SERVED)
def test_kafka_serves_these_batches_byte_for_byte(name):
    batch, v1, v3 = SERVED[name]
    assert down_convert(batch, 0, 0) == v1
    assert down_convert(batch, 1, 0) == v3


def test_the_wrapped_timestamp_reaches_the_client():
    batch = SERVED["timestamp-wraps-to-long-max"][0]
    [message] = [r for b in MemoryRecords(down_convert(batch, 1, 0)) for r in b]
    assert (message.offset, message.timestamp, message.key, message.value) == (
        0, LONG_MAX, b"k", b"v")


OVERFLOW_TO_NEGATIVE = LONG_MAX - 5 + 10 - (1 << 64)
REFUSED = {
    # baseTimestamp Long.MAX_VALUE - 5, delta +10: the second record's timestamp wraps negative.
    "timestamp-overflows-long-max": (
        assemble(record(0, 0) + record(1, 10), 2, base_ts=LONG_MAX - 5, max_ts=LONG_MAX - 5),
        f"Invalid negative timestamp {OVERFLOW_TO_NEGATIVE}"),
    "gzip-timestamp-overflows-long-max": (
        plain(record(0, 0) + record(1, 10), 2, GZIP, base_ts=LONG_MAX - 5,
              max_ts=LONG_MAX - 5),
        f"Invalid negative timestamp {OVERFLOW_TO_NEGATIVE}"),
    "negative-timestamp": (assemble(record(0, 0), 1, base_ts=-5, max_ts=-5),
                           "Invalid negative timestamp -5"),
    "offsets-going-down": (assemble(record(1, 0) + record(0, 0), 2, base_ts=TS, base_offset=10),
                           "Illegal offset 10 following previous offset 11 "
                           "(Offsets must increase monotonically)."),
}


@pytest.mark.parametrize("magic", [0, 1])
@pytest.mark.parametrize("name", REFUSED)
def test_a_batch_kafka_cannot_convert_fails_the_first_chunk(name, magic):
    batch, message = REFUSED[name]
    with pytest.raises(DownConversionError) as caught:
        down_convert(batch, magic, 0)
    assert (caught.value.code, caught.value.message, caught.value.after_first_chunk) == (
        ErrorCode.UNKNOWN, message, False)


@pytest.mark.parametrize("name", REFUSED)
def test_a_later_chunk_kafka_cannot_convert_fails_after_the_first(name):
    good = assemble(records(1), 1, base_ts=TS)
    bad = REFUSED[name][0]
    with pytest.raises(DownConversionError) as caught:
        down_convert(good + bad, 1, 0)
    assert caught.value.after_first_chunk
    assert caught.value.code == ErrorCode.UNKNOWN


def test_records_before_the_fetch_offset_are_not_checked():
    # Offsets 11 then 10; fetching from 11 keeps only the first record (Kafka 3.9 sends it).
    batch = REFUSED["offsets-going-down"][0]
    out = down_convert(batch, 1, 11)
    assert out[:36] == bytes.fromhex("000000000000000b0000001839268c3301000000018bcfe568"
                                     "00000000016b0000000176")
    assert len(out) == len(batch)


def test_a_later_zstd_batch_still_ends_in_overflow_bytes():
    good = assemble(records(1), 1, base_ts=TS)
    zstd = plain(records(2), 2, ZSTD, base_ts=TS)
    out = down_convert(good + zstd, 1, 0)
    assert len(out) == len(good + zstd)
    assert [r.offset for b in MemoryRecords(out) for r in b] == [0]
