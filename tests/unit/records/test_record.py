"""Record-level build/decode: our batches read by kafka-python and vice versa."""
from __future__ import annotations

import struct

import pytest
import snappy
from kafka.record import MemoryRecords
from kafka.record.default_records import DefaultRecordBatchBuilder

from kafkapy.records.batch import read_header, validate_for_append
from kafkapy.records.batch import RecordError
from kafkapy.records.record import (build_batch, build_control_batch, decode_records,
                                    decode_varint, decode_varlong, decompress, encode_varint)

TS = 1_700_000_000_000


LONG_MAX = (1 << 63) - 1


@pytest.mark.parametrize("value", [0, 1, -1, 63, -64, 64, 300, -300, 2**31 - 1, -2**31])
def test_varint_roundtrip(value):
    out = bytearray()
    encode_varint(value, out)
    assert decode_varint(out, 0) == (value, len(out))
    assert decode_varlong(out, 0) == (value, len(out))


@pytest.mark.parametrize("value", [2**31, -2**31 - 1, 2**62, LONG_MAX, -2**63])
def test_varlong_roundtrip(value):
    out = bytearray()
    encode_varint(value, out)
    assert decode_varlong(out, 0) == (value, len(out))


def test_a_value_is_written_as_a_java_long():
    # Long.MAX_VALUE - (-1) overflows to Long.MIN_VALUE in Java: writeVarlong's 10 bytes.
    out = bytearray()
    encode_varint(LONG_MAX + 1, out)
    assert bytes(out) == b"\xff" * 9 + b"\x01"
    assert decode_varlong(out, 0) == (-2**63, 10)


def test_an_int_varint_keeps_java_s_low_32_bits():
    # 80 80 80 80 10 is 1 << 32: ByteUtils.readVarint's int drops it (0).
    assert decode_varint(b"\x80\x80\x80\x80\x10", 0) == (0, 5)
    # A 5th byte 0x7e: only its low 4 bits reach the int (0xe << 28).
    assert decode_varint(b"\x80\x80\x80\x80\x7e", 0) == (0x70000000, 5)
    assert decode_varint(b"\xff\xff\xff\xff\x7e", 0) == (-0x78000000, 5)


def test_a_long_varint_keeps_java_s_low_64_bits():
    # 80 x9 02 is 1 << 64: ByteUtils.readVarlong's long drops it (0).
    assert decode_varlong(b"\x80" * 9 + b"\x02", 0) == (0, 10)
    assert decode_varlong(b"\xfe" + b"\xff" * 8 + b"\x7f", 0) == (LONG_MAX, 10)


def test_too_long_varints_are_refused_as_java_refuses_them():
    with pytest.raises(RecordError) as e:
        decode_varint(b"\x80" * 5 + b"\x01", 0)
    assert e.value.message == ("Varint is too long, the most significant bit in the 5th byte "
                               "is set, converted value: 0")
    with pytest.raises(RecordError) as e:
        decode_varlong(b"\x80" * 10 + b"\x01", 0)
    assert e.value.message == ("Varlong is too long, most significant bit in the 10th byte "
                               "is set, converted value: 0")
    with pytest.raises(RecordError):
        decode_varint(b"\x80\x80", 0)
    with pytest.raises(RecordError):  # the record ends before the varint does
        decode_varint(b"\x80\x01", 0, 1)


# Kafka 3.9 stored this for Produce v2 of magic-1 messages with timestamps -1 and
# Long.MAX_VALUE: the second delta is Long.MIN_VALUE, and Java reads -1 + delta as MAX.
KAFKA_LONG_MAX_BATCH = bytes.fromhex(
    "00000000000000000000004a0000000002d9fe5725000000000001ffffffffffffffff7fffffffffffff"
    "ffffffffffffffffffffffffffffff000000020e000000010278002000ffffffffffffffffff01020102"
    "7900")


def test_build_batch_writes_a_long_max_timestamp_as_kafka_does():
    raw = bytearray(build_batch([(None, b"x", (), -1), (None, b"y", (), LONG_MAX)]))
    struct.pack_into(">i", raw, 12, 0)  # the partition leader epoch Kafka's leader wrote
    assert bytes(raw) == KAFKA_LONG_MAX_BATCH
    assert [(r.offset, r.timestamp) for r in decode_records(KAFKA_LONG_MAX_BATCH)] == [
        (0, -1), (1, LONG_MAX)]


def test_varint_known_bytes():
    out = bytearray()
    encode_varint(-1, out)
    encode_varint(150, out)
    assert bytes(out) == b"\x01\xac\x02"


@pytest.mark.parametrize("codec", [0, 1, 2, 3, 4])
def test_our_batch_read_by_kafka_python(codec):
    recs = [(b"k%d" % i, b"value-%d" % i * 10, [("a", b"1"), ("b", None)], TS + i)
            for i in range(20)] + [(None, None, [], TS + 5)]
    raw = build_batch(recs, base_offset=100, compression=codec, producer_id=4,
                      producer_epoch=1, base_sequence=7, partition_leader_epoch=3)
    h = read_header(raw)
    assert (h.records_count, h.last_offset_delta, h.compression) == (21, 20, codec)
    assert h.max_timestamp == TS + 19
    mr = MemoryRecords(raw)
    batch = mr.next_batch()
    assert batch.validate_crc()
    got = list(batch)
    assert [r.offset for r in got] == list(range(100, 121))
    assert got[3].key == b"k3" and got[3].value == b"value-3" * 10
    assert got[3].headers == [("a", b"1"), ("b", None)]
    assert got[-1].key is None and got[-1].value is None
    ours = decode_records(raw)
    assert [(r.offset, r.timestamp, r.key, r.value, r.headers) for r in ours] == \
        [(r.offset, r.timestamp, r.key, r.value, r.headers) for r in got]


@pytest.mark.parametrize("codec", [0, 1, 2, 3, 4])
def test_kafka_python_batch_decoded_by_us(codec):
    b = DefaultRecordBatchBuilder(2, codec, False, -1, -1, -1, 1 << 20)
    for i in range(50):
        b.append(i, timestamp=TS + 2 * i, key=None, value=b"v" * i, headers=[])
    raw = bytes(b.build())
    recs = decode_records(raw)
    assert [r.offset for r in recs] == list(range(50))
    assert [r.timestamp for r in recs] == [TS + 2 * i for i in range(50)]
    assert recs[49].value == b"v" * 49


def test_raw_snappy_block_accepted():
    # librdkafka writes one raw snappy block without xerial framing
    payload = b"hello world " * 100
    assert decompress(2, snappy.compress(payload)) == payload


def test_control_batch_layout():
    raw = build_control_batch(1, 12, producer_id=9, producer_epoch=2, timestamp=TS,
                              base_offset=44)
    h = read_header(raw)
    assert h.is_control and h.is_transactional and h.records_count == 1
    [r] = decode_records(raw)
    assert struct.unpack(">hh", r.key) == (0, 1)
    assert struct.unpack(">hi", r.value) == (0, 12)
    assert r.offset == 44
    batch = MemoryRecords(raw).next_batch()
    assert batch.is_control_batch and batch.validate_crc()


def test_built_batch_validates_as_produce():
    raw = build_batch([(b"k", b"v", [], TS)])
    [h] = validate_for_append(raw, 1 << 20, 9)
    assert h.records_count == 1
