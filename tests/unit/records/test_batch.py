"""RecordBatch v2 header view, validation and in-place patching, against kafka-python."""
from __future__ import annotations

import struct

import pytest
from kafka.record import MemoryRecords
from kafka.record.default_records import DefaultRecordBatchBuilder

from kafkapy.protocol.errors import ErrorCode
from kafkapy.records.batch import (HEADER_SIZE, TIMESTAMP_CREATE_TIME, RecordError, crc32c,
                                   increment_sequence, is_crc_valid, iter_headers,
                                   patch_for_append, read_header, set_max_timestamp,
                                   validate_for_append)
from kafkapy.records.record import build_batch, build_control_batch, decode_records

CODECS = [0, 1, 2, 3, 4]
TS = 1_700_000_000_000
MAX = 1048588


def kp_batch(codec=0, n=5, producer=(-1, -1, -1), transactional=False, ts=TS,
             value_size=20) -> bytes:
    b = DefaultRecordBatchBuilder(magic=2, compression_type=codec,
                                  is_transactional=transactional, producer_id=producer[0],
                                  producer_epoch=producer[1], base_sequence=producer[2],
                                  batch_size=1 << 20)
    for i in range(n):
        b.append(i, timestamp=ts + i * 10, key=f"k{i}".encode(),
                 value=bytes([65 + i]) * value_size, headers=[("h", b"v%d" % i)])
    return bytes(b.build())


def kp_read(buf: bytes):
    mr = MemoryRecords(bytes(buf))
    batches = []
    while mr.has_next():
        batch = mr.next_batch()
        assert batch.validate_crc()
        batches.append((batch, list(batch)))
    return batches


@pytest.mark.parametrize("codec", CODECS)
def test_header_fields_of_kafka_python_batch(codec):
    raw = kp_batch(codec, n=5, producer=(77, 3, 10))
    h = read_header(memoryview(raw), 0)
    assert h.size == len(raw)
    assert h.batch_length == len(raw) - 12
    assert h.magic == 2
    assert h.compression == codec
    assert h.records_count == 5
    assert h.last_offset_delta == 4
    assert h.base_timestamp == TS
    assert h.max_timestamp == TS + 40
    assert (h.producer_id, h.producer_epoch, h.base_sequence) == (77, 3, 10)
    assert h.last_sequence == 14
    assert h.timestamp_type == 0
    assert not h.is_transactional and not h.is_control


@pytest.mark.parametrize("codec", CODECS)
def test_validate_and_patch_roundtrip_with_kafka_python_reader(codec):
    buf = bytearray(kp_batch(codec, n=5))
    [h] = validate_for_append(memoryview(buf), MAX, 9)
    patch_for_append(buf, h, 1000, 7, None)
    [(batch, records)] = kp_read(buf)
    assert batch.base_offset == 1000
    assert batch.leader_epoch == 7
    assert batch.timestamp_type == 0
    assert [r.offset for r in records] == [1000, 1001, 1002, 1003, 1004]
    assert [r.timestamp for r in records] == [TS + i * 10 for i in range(5)]
    assert [r.value for r in records] == [bytes([65 + i]) * 20 for i in range(5)]
    # our own decoder agrees
    ours = decode_records(bytes(buf))
    assert [(r.offset, r.timestamp, r.key, r.value) for r in ours] == \
        [(r.offset, r.timestamp, r.key, r.value) for r in records]
    assert ours[2].headers == [("h", b"v2")]
    # still valid for a re-validation (CRC untouched by offset/epoch patch)
    h2 = read_header(buf, 0)
    assert (h2.base_offset, h2.partition_leader_epoch) == (1000, 7)


@pytest.mark.parametrize("codec", CODECS)
def test_patch_log_append_time_recomputes_crc(codec):
    buf = bytearray(kp_batch(codec, n=3))
    [h] = validate_for_append(buf, MAX, 9)
    old_crc = h.crc
    patch_for_append(buf, h, 50, 2, 1_800_000_000_000)
    assert h.crc != old_crc
    assert h.timestamp_type == 1 and h.max_timestamp == 1_800_000_000_000
    [(batch, records)] = kp_read(buf)
    assert batch.timestamp_type == 1
    assert [r.timestamp for r in records] == [1_800_000_000_000] * 3
    assert [r.offset for r in records] == [50, 51, 52]
    # a client-side style re-validation passes (base offset must be 0 though)
    struct.pack_into(">q", buf, 0, 0)
    assert validate_for_append(buf, MAX, 9)[0].max_timestamp == 1_800_000_000_000


def test_crc_corruption_detected():
    buf = bytearray(kp_batch(0, n=3))
    buf[-1] ^= 0xFF
    with pytest.raises(RecordError) as e:
        validate_for_append(buf, MAX, 9)
    assert e.value.code == ErrorCode.CORRUPT_MESSAGE == 2


def test_crc_not_covering_offset_and_epoch():
    buf = bytearray(kp_batch(0, n=3))
    struct.pack_into(">i", buf, 12, 99)  # partitionLeaderEpoch is outside the CRC
    assert validate_for_append(buf, MAX, 9)[0].partition_leader_epoch == 99


def test_message_too_large():
    raw = kp_batch(0, n=3, value_size=500)
    with pytest.raises(RecordError) as e:
        validate_for_append(raw, len(raw) - 1, 9)
    assert e.value.code == ErrorCode.MESSAGE_TOO_LARGE == 10
    assert len(validate_for_append(raw, len(raw), 9)) == 1


def test_two_batches_rejected_for_v3_plus():
    raw = kp_batch(0, n=2) + kp_batch(0, n=2)
    with pytest.raises(RecordError) as e:
        validate_for_append(raw, MAX, 3)
    assert e.value.code == ErrorCode.INVALID_RECORD == 87


def test_wrong_magic():
    buf = bytearray(kp_batch(0, n=2))
    buf[16] = 1
    with pytest.raises(RecordError) as e:
        validate_for_append(buf, MAX, 8)
    assert e.value.code == ErrorCode.INVALID_RECORD
    with pytest.raises(RecordError) as e:  # v0-2 data is up-converted first (records.legacy)
        validate_for_append(buf, MAX, 2)
    assert e.value.code == ErrorCode.INVALID_RECORD


def test_zstd_needs_produce_v7():
    raw = kp_batch(4, n=2)
    with pytest.raises(RecordError) as e:
        validate_for_append(raw, MAX, 6)
    assert e.value.code == ErrorCode.UNSUPPORTED_COMPRESSION_TYPE == 76
    assert validate_for_append(raw, MAX, 7)[0].compression == 4


def _resign(buf: bytearray) -> None:
    import crc32c
    struct.pack_into(">I", buf, 17, crc32c.crc32c(bytes(buf[21:])))


def test_unknown_codec():
    buf = bytearray(kp_batch(0, n=2))
    struct.pack_into(">h", buf, 21, 5)
    _resign(buf)
    with pytest.raises(RecordError) as e:
        validate_for_append(buf, MAX, 9)
    assert e.value.code == ErrorCode.UNSUPPORTED_COMPRESSION_TYPE


def test_short_and_inconsistent_buffers():
    raw = kp_batch(0, n=2)
    # No whole batch: Kafka 3.9 answers INVALID_RECORD ("at least one record batch").
    with pytest.raises(RecordError) as e:
        validate_for_append(raw[:-5], MAX, 9)
    assert e.value.code == ErrorCode.INVALID_RECORD
    with pytest.raises(RecordError) as e:
        validate_for_append(raw[:40], MAX, 9)
    assert e.value.code == ErrorCode.INVALID_RECORD
    buf = bytearray(raw)
    struct.pack_into(">i", buf, 8, 20)  # length below the v2 header
    with pytest.raises(RecordError) as e:
        validate_for_append(buf, MAX, 9)
    assert e.value.code == ErrorCode.CORRUPT_MESSAGE
    with pytest.raises(RecordError) as e:
        validate_for_append(b"", MAX, 9)
    assert e.value.code == ErrorCode.INVALID_RECORD


def test_count_checks():
    buf = bytearray(kp_batch(0, n=3))
    struct.pack_into(">i", buf, 57, -1)
    _resign(buf)
    with pytest.raises(RecordError) as e:
        validate_for_append(buf, MAX, 9)
    assert e.value.code == ErrorCode.INVALID_RECORD
    buf = bytearray(kp_batch(0, n=3))
    struct.pack_into(">i", buf, 23, 5)  # lastOffsetDelta disagrees with count 3
    _resign(buf)
    with pytest.raises(RecordError) as e:
        validate_for_append(buf, MAX, 9)
    assert e.value.code == ErrorCode.INVALID_RECORD


def test_nonzero_base_offset_rejected():
    buf = bytearray(kp_batch(0, n=1))
    struct.pack_into(">q", buf, 0, 5)
    with pytest.raises(RecordError) as e:
        validate_for_append(buf, MAX, 9)
    assert e.value.code == ErrorCode.INVALID_RECORD


def test_control_batch_from_client_rejected():
    raw = build_control_batch(1, 0, producer_id=5, producer_epoch=0, timestamp=TS)
    with pytest.raises(RecordError) as e:
        validate_for_append(raw, MAX, 9)
    assert e.value.code == ErrorCode.INVALID_RECORD


def test_producer_id_without_sequence_rejected():
    raw = build_batch([(b"k", b"v", [], TS)], producer_id=9, producer_epoch=0,
                      base_sequence=-1)
    with pytest.raises(RecordError) as e:
        validate_for_append(raw, MAX, 9)
    assert e.value.code == ErrorCode.INVALID_RECORD


def test_iter_headers_stops_at_truncated_tail():
    a, b = kp_batch(0, n=2), kp_batch(1, n=4)
    buf = a + b + b[:30]
    it = iter_headers(memoryview(buf))
    hs = list(it)
    assert [h.position for h in hs] == [0, len(a)]
    assert [h.records_count for h in hs] == [2, 4]
    assert it.truncated and it.valid_bytes == len(a) + len(b)
    it2 = iter_headers(memoryview(a + b))
    assert len(list(it2)) == 2 and not it2.truncated
    it3 = iter_headers(memoryview(a + b[:HEADER_SIZE + 3]))
    assert len(list(it3)) == 1 and it3.truncated


def test_last_sequence_wraps():
    assert increment_sequence(2**31 - 2, 3) == 1
    raw = build_batch([(None, b"x", [], TS)] * 4, producer_id=1, producer_epoch=0,
                      base_sequence=2**31 - 2)
    assert read_header(raw).last_sequence == 1


# -- DefaultRecordBatch.setMaxTimestamp ---------------------------------------------------
# What Kafka 3.9 stored for Produce v9 of these batches on a CreateTime topic (offset 0,
# leader epoch 0): the header's maxTimestamp is the largest record timestamp whatever the
# producer wrote; when it changes, the attributes are rebuilt (unknown bits cleared,
# CreateTime) and the CRC recomputed; a compressed payload is kept as sent.
STORED_TS = 1_800_000_000_000


def _claimed(batch: bytes, max_timestamp: int, attributes: int | None = None) -> bytes:
    raw = bytearray(batch)
    if attributes is not None:
        struct.pack_into(">h", raw, 21, attributes)
    struct.pack_into(">q", raw, 35, max_timestamp)
    struct.pack_into(">I", raw, 17, crc32c(memoryview(raw)[21:]))
    return bytes(raw)


KAFKA_SET_MAX_TIMESTAMP = {
    # records at -5: Kafka's maximum starts at -1 (NO_TIMESTAMP) and -5 never beats it.
    "negative-timestamp": (
        build_batch([(None, b"x", (), -5)]), -1,
        "00000000000000000000003900000000025b0ce96e000000000000fffffffffffffffbffffffffffff"
        "ffffffffffffffffffffffffffffffff000000010e00000001027800"),
    "claimed-max-and-unknown-attribute-bits": (
        _claimed(build_batch([(b"k", b"v", (), STORED_TS), (None, b"w", (), STORED_TS + 100)]),
                 STORED_TS + 10**9, attributes=0x0180), STORED_TS + 100,
        "0000000000000000000000430000000002317bb6e8000000000001000001a3185c5000000001a3185c"
        "5064ffffffffffffffffffffffffffff0000000210000000026b0276001000c8010201027700"),
    "gzip-claimed-max": (
        _claimed(build_batch([(b"k", b"v", (), STORED_TS), (None, b"w", (), STORED_TS + 7)],
                             compression=1), STORED_TS + 10**9), STORED_TS + 7,
        "0000000000000000000000560000000002dee4b18d000100000001000001a3185c5000000001a3185c"
        "5007ffffffffffffffffffffffffffff000000021f8b08000000000000ff1360606060ca662a63e063"
        "e06362642a6700008b251fca11000000"),
    # A LogAppendTime batch on a CreateTime topic: its records' timestamp is the header's,
    # and the batch becomes CreateTime.
    "log-append-time-attribute": (
        build_batch([(b"k", b"v", (), STORED_TS)], timestamp_type=1), STORED_TS,
        "00000000000000000000003a00000000025aa52b6a000000000000000001a3185c5000000001a3185c"
        "5000ffffffffffffffffffffffffffff0000000110000000026b027600"),
}


@pytest.mark.parametrize("name", KAFKA_SET_MAX_TIMESTAMP)
def test_set_max_timestamp_writes_what_kafka_stores(name):
    sent, records_max, stored = KAFKA_SET_MAX_TIMESTAMP[name]
    [h] = validate_for_append(sent, MAX, 9)
    out = set_max_timestamp(sent, h, TIMESTAMP_CREATE_TIME, records_max)
    assert isinstance(out, bytearray)  # the read-only request bytes are copied to be patched
    patch_for_append(out, h, 0, 0)
    assert bytes(out) == bytes.fromhex(stored)
    assert (h.max_timestamp, h.crc, h.attributes) == (
        records_max, read_header(out).crc, read_header(out).attributes)


def test_set_max_timestamp_leaves_a_matching_header_alone():
    # Kafka rewrites nothing when the type and the maximum already match: unknown
    # attribute bits then stay (Kafka 3.9 stored 0x0180 as sent).
    sent = _claimed(build_batch([(None, b"x", (), TS)]), TS, attributes=0x0180)
    h = read_header(sent)
    assert set_max_timestamp(sent, h, TIMESTAMP_CREATE_TIME, TS) is sent
    assert h.attributes == 0x0180


def test_log_append_time_clears_unknown_attribute_bits():
    # Kafka 3.9 stored attributes 0x0008 for this batch on a LogAppendTime topic.
    buf = bytearray(_claimed(build_batch([(None, b"x", (), TS)]), TS, attributes=0x0180))
    h = read_header(buf)
    patch_for_append(buf, h, 0, 0, STORED_TS)
    assert read_header(buf).attributes == h.attributes == 0x08
    assert read_header(buf).max_timestamp == STORED_TS
    assert is_crc_valid(buf, read_header(buf))
