"""Magic 0/1 message sets and their up-conversion (records.legacy), record-level key
checks (records.validation) and Kafka's batch iteration rules (records.batch).

The reference batches were written by Apache Kafka 3.9.0 (ZooKeeper mode, default
topic config) for Produce v2 requests carrying the same message sets, read back from
its log segment; the up-converted batches must be byte-identical (after the leader
has assigned the same base offset and leader epoch).
"""
from __future__ import annotations

import struct
import zlib

import pytest
from kafka.record.legacy_records import LegacyRecordBatchBuilder

from kafkapy.protocol.errors import ErrorCode
from kafkapy.records.batch import (RecordError, check_produce_request, patch_for_append,
                                   read_header, validate_batches)
from kafkapy.records.legacy import (first_magic, fix_lz4_header_checksum, up_convert,
                                    xxh32_short)
from kafkapy.records.record import build_batch, compress, decode_records
from kafkapy.records.validation import check_records

TS = 1_700_000_000_000
RECORDS = [(b"k0", b"v0"), (None, b"v1"), (b"k2", None)]
TP = "t-0"
MAX = 1048588

# (magic, codec) -> the batch Kafka 3.9.0 stored, hex.
KAFKA_39 = {
    (0, 0): "00000000000000000000004e00000000027404452a000000000002ffffffffffffffffffffffffff"
            "ffffffffffffffffffffffffffffffffff0000000314000000046b30047630001000000201047631"
            "0010000004046b320100",
    (0, 1): "00000000000000030000005f0000000002e35b3f8a000100000002ffffffffffffffffffffffffff"
            "ffffffffffffffffffffffffffffffffff000000031f8b08000000000000ff1361606060c9366029"
            "3360106060606264293304315858b28d181900126ca8e11d000000",
    (0, 2): "0000000000000006000000640000000002a6023896000200000002ffffffffffffffffffffffffff"
            "ffffffffffffffffffffffffffffffffff0000000382534e41505059000000000100000001000000"
            "1f1d7014000000046b300476300010000002010476310010000004046b320100",
    (1, 0): "00000000000000090000004e000000000249c258d90000000000020000018bcfe568000000018bcf"
            "e56802ffffffffffffffffffffffffffff0000000314000000046b30047630001000020201047631"
            "0010000404046b320100",
    (1, 1): "000000000000000c000000600000000002a5118efc0001000000020000018bcfe568000000018bcf"
            "e56802ffffffffffffffffffffffffffff000000031f8b08000000000000ff1361606060c9366029"
            "336010606062626429330432585858b28d181900626d47921d000000",
    (1, 2): "000000000000000f000000640000000002b87984b70002000000020000018bcfe568000000018bcf"
            "e56802ffffffffffffffffffffffffffff0000000382534e41505059000000000100000001000000"
            "1f1d7014000000046b300476300010000202010476310010000404046b320100",
    (1, 3): "00000000000000120000005d0000000002508ff8f70003000000020000018bcfe568000000018bcf"
            "e56802ffffffffffffffffffffffffffff0000000304224d186040821d00008014000000046b3004"
            "76300010000202010476310010000404046b32010000000000",
}


def kp_legacy(magic: int, codec: int = 0, records=RECORDS) -> bytes:
    """A message set built by kafka-python (what an old producer sends)."""
    b = LegacyRecordBatchBuilder(magic, codec, 1 << 20)
    for i, (k, v) in enumerate(records):
        b.append(i, TS + i if magic else None, k, v)
    return bytes(b.build())


def message(magic: int, key, value, attributes: int = 0, offset: int = 0,
            timestamp: int = TS) -> bytes:
    """One legacy message written by hand (for what kafka-python will not build)."""
    body = struct.pack(">bb", magic, attributes)
    if magic == 1:
        body += struct.pack(">q", timestamp)
    for blob in (key, value):
        body += struct.pack(">i", -1) if blob is None else struct.pack(">i", len(blob)) + blob
    return struct.pack(">qiI", offset, 4 + len(body), zlib.crc32(body)) + body


def converted(data: bytes, compacted: bool = False, compression_type: str = "producer"):
    return up_convert(data, MAX, compression_type, compacted, TP)


@pytest.mark.parametrize("magic,codec", sorted(KAFKA_39))
def test_up_conversion_is_byte_identical_to_kafka_3_9(magic, codec):
    expected = bytes.fromhex(KAFKA_39[(magic, codec)])
    batch = bytearray(converted(kp_legacy(magic, codec)))
    header = read_header(batch)
    patch_for_append(batch, header, read_header(expected).base_offset, 0)
    assert batch.hex() == expected.hex()


@pytest.mark.parametrize("codec", [0, 1, 2, 3])
def test_magic_1_records_keep_keys_values_and_timestamps(codec):
    batch = converted(kp_legacy(1, codec))
    [h] = validate_batches(batch, MAX)
    assert (h.magic, h.compression, h.records_count, h.producer_id) == (2, codec, 3, -1)
    got = [(r.offset, r.timestamp, r.key, r.value) for r in decode_records(batch)]
    assert got == [(i, TS + i, k, v) for i, (k, v) in enumerate(RECORDS)]


def test_magic_0_records_have_no_timestamp():
    records = decode_records(converted(kp_legacy(0)))
    assert [r.timestamp for r in records] == [-1, -1, -1]
    assert read_header(converted(kp_legacy(0))).max_timestamp == -1


def test_topic_codec_replaces_the_producer_codec():
    batch = converted(kp_legacy(1, 1), compression_type="lz4")
    assert read_header(batch).compression == 3
    assert read_header(converted(kp_legacy(1, 2), compression_type="uncompressed")).compression == 0


def test_log_append_time_wrapper_gives_its_timestamp_to_the_inner_records():
    inner = message(1, b"a", b"1", offset=0, timestamp=5) + message(1, b"b", b"2", offset=1,
                                                                   timestamp=6)
    wrapper = message(1, None, compress(1, inner), attributes=1 | 0x08, offset=1,
                      timestamp=TS)
    assert [r.timestamp for r in decode_records(converted(wrapper))] == [TS, TS]


def test_magic_0_lz4_with_kafka_0_8_header_checksum_is_read():
    inner = message(0, b"a", b"1") + message(0, b"b", b"2", offset=1)
    frame = bytearray(compress(3, inner))
    frame[6] = (xxh32_short(bytes(frame[0:6])) >> 8) & 0xFF  # Kafka 0.8 hashed the magic too
    records = decode_records(converted(message(0, None, bytes(frame), attributes=3)))
    assert [(r.key, r.value) for r in records] == [(b"a", b"1"), (b"b", b"2")]
    assert fix_lz4_header_checksum(bytes(frame)) == compress(3, inner)


def test_xxh32_known_values():
    assert xxh32_short(b"") == 0x02CC5D05
    assert xxh32_short(b"a") == 0x550D7456
    assert xxh32_short(b"abc") == 0x32D153FF


def _refused(data: bytes, compacted: bool = False) -> RecordError:
    with pytest.raises(RecordError) as e:
        converted(data, compacted)
    return e.value


def test_compacted_uncompressed_set_reports_the_first_keyless_message_as_index_0():
    err = _refused(kp_legacy(1, 0, [(b"k", b"v"), (None, b"x"), (None, b"y")]), compacted=True)
    assert err.code == ErrorCode.INVALID_RECORD
    assert err.record_errors == [
        (0, f"Compacted topic cannot accept message without key in topic partition {TP}")]


def test_compacted_compressed_set_reports_every_keyless_inner_record():
    err = _refused(kp_legacy(1, 1, [(b"k", b"v"), (None, b"x"), (b"k", b"v"), (None, b"y")]),
                   compacted=True)
    assert err.code == ErrorCode.INVALID_RECORD
    assert [i for i, _ in err.record_errors] == [1, 3]
    assert err.message.startswith("One or more records have been rejected due to 2 record "
                                  "errors in total")
    assert converted(kp_legacy(1, 1, [(b"k", b"v")]), compacted=True)


def test_outer_checks_size_then_crc():
    data = bytearray(kp_legacy(1))
    data[-1] ^= 0xFF
    assert _refused(bytes(data)).code == ErrorCode.CORRUPT_MESSAGE
    with pytest.raises(RecordError) as e:
        up_convert(kp_legacy(1), 20, "producer", False, TP)
    assert e.value.code == ErrorCode.MESSAGE_TOO_LARGE


def test_mixed_magic_and_several_wrappers_are_invalid_record():
    assert _refused(kp_legacy(1) + kp_legacy(0)).code == ErrorCode.INVALID_RECORD
    assert _refused(kp_legacy(1, 1) + kp_legacy(1, 1)).code == ErrorCode.INVALID_RECORD
    assert _refused(kp_legacy(1) + kp_legacy(1, 1)).code == ErrorCode.INVALID_RECORD
    v2 = build_batch([(b"k", b"v", (), TS)])
    assert _refused(kp_legacy(1) + v2).code == ErrorCode.INVALID_RECORD


def test_inner_record_problems():
    nested = message(1, None, compress(1, message(1, b"a", b"1")), attributes=1)
    err = _refused(message(1, None, compress(1, nested), attributes=1))
    assert err.code == ErrorCode.INVALID_RECORD and [i for i, _ in err.record_errors] == [0]
    bad = bytearray(message(1, b"a", b"1"))
    bad[-1] ^= 0xFF
    assert _refused(message(1, None, compress(1, bytes(bad)), attributes=1)).code == \
        ErrorCode.CORRUPT_MESSAGE
    assert _refused(message(1, None, compress(1, b""), attributes=1)).code == \
        ErrorCode.INVALID_RECORD
    assert _refused(message(1, None, None, attributes=1)).code == ErrorCode.INVALID_RECORD


def test_first_magic_follows_kafka_iteration():
    assert first_magic(kp_legacy(0)) == 0
    assert first_magic(kp_legacy(1)) == 1
    assert first_magic(b"") is None
    assert first_magic(kp_legacy(1, 0, [(b"k", b"v")])[:-1]) is None


# -- batch iteration (ByteBufferLogInputStream) and request checks -----------------------

def v2(records=((b"k", b"v"),), codec: int = 0) -> bytes:
    return build_batch([(k, v, (), TS + i) for i, (k, v) in enumerate(records)],
                       compression=codec)


def _code(fn, *args) -> int:
    try:
        fn(*args)
    except RecordError as e:
        return e.code
    return 0


def test_produce_request_trailing_bytes_follow_kafka():
    assert _code(check_produce_request, v2() + b"xyz", 9) == 0  # too short to be an entry
    assert _code(check_produce_request, v2() + b"x" * 20, 9) == ErrorCode.CORRUPT_MESSAGE
    assert _code(check_produce_request, v2() + bytes(70), 9) == ErrorCode.CORRUPT_MESSAGE
    assert _code(check_produce_request, v2() + v2(), 9) == ErrorCode.INVALID_RECORD
    assert _code(check_produce_request, v2()[:-1], 9) == ErrorCode.INVALID_RECORD
    assert _code(check_produce_request, kp_legacy(1), 3) == ErrorCode.INVALID_RECORD
    assert _code(check_produce_request, v2(codec=4), 6) == ErrorCode.UNSUPPORTED_COMPRESSION_TYPE
    assert _code(check_produce_request, b"", 2) == 0  # v0-2 are not checked here
    [h] = validate_batches(v2() + b"xyz", MAX)
    assert h.size == len(v2())
    assert validate_batches(b"", MAX) == []


# -- compacted-topic key check on v2 batches ----------------------------------------------

@pytest.mark.parametrize("codec", [0, 1, 3, 4])
def test_keyless_v2_records_are_named_by_index(codec):
    batch = v2([(b"a", b"1"), (None, b"2"), (b"", b"3"), (None, None), (None, b"5"),
                (None, b"6")], codec)
    [h] = validate_batches(batch, MAX)
    with pytest.raises(RecordError) as e:
        check_keys(memoryview(batch), h, TP)
    assert e.value.code == ErrorCode.INVALID_RECORD
    message = f"Compacted topic cannot accept message without key in topic partition {TP}"
    assert e.value.record_errors == [(i, message) for i in (1, 3, 4, 5)]
    shown = ", ".join(f"RecordError(batchIndex={i}, message='{message}')" for i in (1, 3, 4))
    assert e.value.message == ("One or more records have been rejected due to 4 record errors "
                               "in total, and only showing the first three errors at most: "
                               f"[{shown}]")
    keyed = v2([(b"a", b"1"), (b"", None)], codec)
    check_keys(memoryview(keyed), validate_batches(keyed, MAX)[0], TP)


def check_keys(buf, header, topic_partition):
    """The compacted-topic record check of the append path, on one batch."""
    check_records(buf[header.position:header.position + header.size], topic_partition, 0,
                  compacted=True)


def _resigned(batch: bytearray) -> bytes:
    import crc32c
    struct.pack_into(">I", batch, 17, crc32c.crc32c(bytes(batch[21:])))
    return bytes(batch)


def test_unparsable_records_are_invalid_record_without_record_errors():
    good = v2([(b"a", b"1"), (b"b", b"2")])
    garbage = bytearray(good)
    garbage[61:66] = b"\xff\xff\xff\xff\x7f"
    longer = bytearray(good) + b"zz"
    struct.pack_into(">i", longer, 8, len(longer) - 12)
    fewer = bytearray(good)
    struct.pack_into(">i", fewer, 57, 3)
    struct.pack_into(">i", fewer, 23, 2)
    for data in (garbage, longer, fewer):
        batch = _resigned(data)
        [h] = validate_batches(batch, MAX)
        with pytest.raises(RecordError) as e:
            check_keys(memoryview(batch), h, TP)
        assert e.value.code == ErrorCode.INVALID_RECORD and e.value.record_errors == []


# -- timestamps Kafka's MemoryRecordsBuilder refuses or wraps -----------------------------
# The codes are what Kafka 3.9 answered to Produce v2 with these message sets (it stored
# nothing for any refused one).  A timestamp below -1 passes the topic's range check (with
# the default bounds) and is refused by the builder the converted records go through:
# UNKNOWN_SERVER_ERROR.  In an uncompressed set each message is checked, then appended, in
# turn; in a compressed one every record is checked before any is appended.
NOW = TS + 60_000
LONG_MAX = (1 << 63) - 1
FUTURE = NOW + 10**9  # beyond message.timestamp.after.max.ms = 1 hour
KEYLESS_ERROR = f"Compacted topic cannot accept message without key in topic partition {TP}"


def _gzip_set(*messages: bytes) -> bytes:
    return message(1, None, compress(1, b"".join(messages)), attributes=1,
                   offset=len(messages) - 1)


def _refused_with(data: bytes, compacted: bool = False, **rules) -> RecordError:
    with pytest.raises(RecordError) as e:
        up_convert(data, MAX, "producer", compacted, TP, now_ms=NOW, **rules)
    return e.value


@pytest.mark.parametrize("data", [
    message(1, None, b"x", timestamp=-5),
    message(1, None, b"x", timestamp=TS) + message(1, None, b"y", offset=1, timestamp=-5),
    message(1, None, b"x", timestamp=-(1 << 63)),
    _gzip_set(message(1, None, b"x", timestamp=-5), message(1, None, b"y", offset=1)),
    # A LogAppendTime wrapper gives its own timestamp to the records.
    message(1, None, compress(1, message(1, None, b"x")), attributes=1 | 0x08,
            timestamp=-5),
], ids=["alone", "second", "long-min", "gzip", "log-append-time-wrapper"])
def test_a_negative_timestamp_is_unknown_server_error(data):
    err = _refused_with(data)
    assert (err.code, err.record_errors) == (ErrorCode.UNKNOWN, [])
    assert err.message.startswith("Invalid negative timestamp -")


def test_a_negative_timestamp_on_a_log_append_time_topic_is_refused_too():
    err = _refused_with(message(1, None, b"x", timestamp=-5), timestamp_type="LogAppendTime")
    assert err.code == ErrorCode.UNKNOWN


def test_the_first_message_with_a_problem_decides_in_an_uncompressed_set():
    future = {"after_max_ms": 3_600_000}
    first_negative = (message(1, None, b"x", timestamp=-5)
                      + message(1, None, b"y", offset=1, timestamp=FUTURE))
    assert _refused_with(first_negative, **future).code == ErrorCode.UNKNOWN
    first_future = (message(1, None, b"x", timestamp=FUTURE)
                    + message(1, None, b"y", offset=1, timestamp=-5))
    err = _refused_with(first_future, **future)
    assert err.code == ErrorCode.INVALID_TIMESTAMP
    assert [i for i, _ in err.record_errors] == [0]
    keyed_negative = message(1, b"k", b"x", timestamp=-5) + message(1, None, b"y", offset=1)
    assert _refused_with(keyed_negative, compacted=True).code == ErrorCode.UNKNOWN
    keyless_first = message(1, None, b"x") + message(1, b"k", b"y", offset=1, timestamp=-5)
    err = _refused_with(keyless_first, compacted=True)
    assert (err.code, err.record_errors) == (ErrorCode.INVALID_RECORD, [(0, KEYLESS_ERROR)])
    # A message out of range before a keyless one (message.timestamp.before.max.ms).
    old_first = message(1, b"k", b"x", timestamp=1000) + message(1, None, b"y", offset=1)
    err = _refused_with(old_first, compacted=True, before_max_ms=3_600_000)
    assert err.code == ErrorCode.INVALID_TIMESTAMP and len(err.record_errors) == 1


def test_every_record_is_checked_first_in_a_compressed_set():
    negative_then_future = _gzip_set(message(1, None, b"x", timestamp=-5),
                                     message(1, None, b"y", offset=1, timestamp=FUTURE))
    err = _refused_with(negative_then_future, after_max_ms=3_600_000)
    assert err.code == ErrorCode.INVALID_TIMESTAMP and [i for i, _ in err.record_errors] == [1]
    negative_then_keyless = _gzip_set(message(1, b"k", b"x", timestamp=-5),
                                      message(1, None, b"y", offset=1))
    err = _refused_with(negative_then_keyless, compacted=True)
    assert err.code == ErrorCode.INVALID_RECORD and [i for i, _ in err.record_errors] == [1]
    # Record errors of both kinds: all listed, INVALID_TIMESTAMP wins.
    keyless_then_old = _gzip_set(message(1, None, b"x"),
                                 message(1, b"k", b"y", offset=1, timestamp=1000))
    err = _refused_with(keyless_then_old, compacted=True, before_max_ms=3_600_000)
    assert err.code == ErrorCode.INVALID_TIMESTAMP
    assert [i for i, _ in err.record_errors] == [0, 1]
    assert err.record_errors[0] == (0, KEYLESS_ERROR)


def test_log_append_time_sent_to_a_log_append_time_topic_is_invalid_timestamp():
    plain = message(1, None, b"x", attributes=0x08)
    wrapped = message(1, None, compress(1, message(1, None, b"x")), attributes=1 | 0x08)
    for data in (plain, wrapped):
        err = _refused_with(data, timestamp_type="LogAppendTime")
        assert err.code == ErrorCode.INVALID_TIMESTAMP and [i for i, _ in err.record_errors] == [0]
    # On a CreateTime topic the message's own timestamp counts (Kafka stored it).
    assert decode_records(up_convert(plain, MAX, "producer", False, TP, now_ms=NOW))[0] \
        .timestamp == TS


# Kafka 3.9 stored this for Produce v2 of two magic-1 messages with timestamps -1 and
# Long.MAX_VALUE (value b"x", b"y"): the second delta is Long.MIN_VALUE, a 10-byte varlong.
KAFKA_LONG_MAX = ("00000000000000000000004a0000000002d9fe5725000000000001ffffffffffffffff"
                  "7fffffffffffffffffffffffffffffffffffffffffff000000020e0000000102780020"
                  "00ffffffffffffffffff010201027900")


def test_a_long_max_timestamp_is_stored_as_kafka_stores_it():
    data = (message(1, None, b"x", timestamp=-1)
            + message(1, None, b"y", offset=1, timestamp=LONG_MAX))
    batch = bytearray(up_convert(data, MAX, "producer", False, TP, now_ms=NOW))
    patch_for_append(batch, read_header(batch), 0, 0)
    assert batch.hex() == KAFKA_LONG_MAX
    assert [r.timestamp for r in decode_records(batch)] == [-1, LONG_MAX]
