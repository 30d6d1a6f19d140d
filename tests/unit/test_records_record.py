"""Record-level build/decode: our batches read by kafka-python and vice versa."""
from __future__ import annotations

import struct

import pytest
import snappy
from kafka.record import MemoryRecords
from kafka.record.default_records import DefaultRecordBatchBuilder

from kafkapy.records.batch import read_header, validate_for_append
from kafkapy.records.record import (build_batch, build_control_batch, decode_records,
                                    decode_varint, decompress, encode_varint)

TS = 1_700_000_000_000


@pytest.mark.parametrize("value", [0, 1, -1, 63, -64, 64, 300, -300, 2**31 - 1, -2**31,
                                   2**62, -2**63])
def test_varint_roundtrip(value):
    out = bytearray()
    encode_varint(value, out)
    assert decode_varint(out, 0) == (value, len(out))


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
