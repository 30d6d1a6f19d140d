"""kafkapy.native.validate_batch: Kafka's LogValidator checks on one v2 batch, C and Python.

Every poison of ``batchcheck_craft.POISON`` (all with a valid CRC) must be refused with the
code a real Kafka 3.9 broker answers (measured by producing each batch in
``batchcheck_craft`` to one), by both the C walk and the pure-Python fallback; batches
written by real producer code (kafka-python's builder, kafkapy's own) must pass; and
hypothesis checks that the C walk and the Python walk agree on random valid and damaged
batches.
"""
from __future__ import annotations

import logging
import os

import pytest
from hypothesis import HealthCheck, example, given, settings
from hypothesis import strategies as st
from kafka.errors import CorruptRecordError
from kafka.record.default_records import DefaultRecordBatch, DefaultRecordBatchBuilder

from kafkapy import native
from kafkapy.native import reference
from kafkapy.records.record import build_batch, build_control_batch
from tests.support import batchcheck_craft as craft

TP = "orders-3"
NOW = craft.TS + 10_000
DAY, HOUR = 86_400_000, 3_600_000
CODECS = [craft.NONE, craft.GZIP, craft.SNAPPY, craft.LZ4, craft.ZSTD]


@pytest.fixture(params=["c", "python"])
def impl(request, monkeypatch):
    """Run the test against the C walk and against the pure-Python fallback."""
    if request.param == "python":
        monkeypatch.setattr(native, "_native_walk", None)
        monkeypatch.setattr(native, "_warned", True)
    else:
        assert native.NATIVE, "the C extension kafkapy.native._batchcheck was not built"
    return request.param


def check(batch, **kw):
    kw.setdefault("topic_partition", TP)
    kw.setdefault("now_ms", NOW)
    return native.validate_batch(batch, **kw)


def test_extension_is_built():
    # `pip install -e .` builds it (setup.py); CI and make test must not run the slow path.
    assert native.NATIVE
    from kafkapy.native import _batchcheck
    assert _batchcheck.walk is native._native_walk


# ------------------------------------------------------------------ poison

def _rules(name: str) -> dict:
    if name.startswith("timestamp"):
        return {"before_max_ms": DAY, "after_max_ms": HOUR}
    if name.startswith("log-append"):
        return {"timestamp_type": native.LOG_APPEND_TIME}
    return {}


@pytest.mark.parametrize("name", sorted(craft.POISON))
def test_poison_is_refused_with_kafkas_code(impl, name):
    batch, compacted, code = craft.POISON[name]
    verdict = check(batch, compacted=compacted, **_rules(name))
    assert not verdict.ok
    assert verdict.error_code == code, verdict.error_message
    assert verdict.error_message


def test_count_far_beyond_offsets_is_refused_before_reading_records(impl):
    batch = craft.assemble(craft.records(10), 0x7FFFFFFF, last_offset_delta=9)
    verdict = check(batch)
    assert verdict.error_message == ("Inconsistent batch offset range [0, 9] and count of "
                                     f"records 2147483647 in topic partition {TP}")
    assert verdict.response_message is None  # Kafka sends no message for these


def test_count_matching_huge_offsets_stops_at_the_end_of_the_bytes(impl):
    batch = craft.assemble(craft.records(3), 0x7FFFFFFF)
    verdict = check(batch)
    assert (verdict.error_code, verdict.error_message) == (
        87, "Incorrect declared batch size, premature EOF reached")


def test_record_size_message_is_kafkas(impl):
    verdict = check(craft.POISON["record-length-too-long"][0])
    # The exact text a Kafka 3.9 broker logged for this batch.
    assert verdict.error_message == ("Invalid record size: expected 50 bytes in record payload,"
                                     " but instead the buffer has only 17 remaining bytes.")


def test_keyless_records_on_compacted_topic_are_listed(impl):
    raw = craft.record(0, 0, b"a") + craft.record(1, 1, None) + craft.record(2, 2, None)
    verdict = check(craft.assemble(raw, 3), compacted=True)
    message = f"Compacted topic cannot accept message without key in topic partition {TP}"
    assert verdict.error_code == 87
    assert verdict.record_errors == [(1, message), (2, message)]
    assert verdict.response_message == (
        "One or more records have been rejected due to 2 record errors in total, and only "
        f"showing the first three errors at most: [RecordError(batchIndex=1, message='{message}'"
        f"), RecordError(batchIndex=2, message='{message}')]")


def test_keyed_records_on_compacted_topic_pass(impl):
    for codec in CODECS:
        assert check(craft.plain(craft.records(5), 5, codec), compacted=True).ok


def test_timestamp_errors_win_and_keep_the_key_errors(impl):
    raw = craft.record(0, 0, None) + craft.record(1, 0, b"k")
    verdict = check(craft.assemble(raw, 2, base_ts=1000), compacted=True,
                    before_max_ms=DAY, after_max_ms=HOUR)
    assert verdict.error_code == 32
    assert verdict.error_message == "One or more records have been rejected due to invalid " \
                                    "timestamp"
    assert [i for i, _ in verdict.record_errors] == [0, 1]
    assert verdict.record_errors[0][1].startswith("Compacted topic cannot accept")
    assert verdict.record_errors[1][1] == (
        f"Timestamp 1000 of message with offset 1 is out of range. The timestamp should be "
        f"within [{NOW - DAY}, {NOW + HOUR}]")


def test_timestamp_bounds_are_inclusive(impl):
    old = craft.assemble(craft.record(0), 1, base_ts=NOW - DAY)
    new = craft.assemble(craft.record(0), 1, base_ts=NOW + HOUR)
    assert check(old, before_max_ms=DAY, after_max_ms=HOUR).ok
    assert check(new, before_max_ms=DAY, after_max_ms=HOUR).ok
    assert not check(old, before_max_ms=DAY - 1).ok
    assert not check(new, after_max_ms=HOUR - 1).ok


def test_default_bounds_accept_any_timestamp(impl):
    # Kafka 3.9's defaults are Long.MAX_VALUE; the message bounds then wrap as Java's do.
    for ts in (0, 1, craft.TS * 100, -5):
        assert check(craft.assemble(craft.record(0), 1, base_ts=ts)).ok


def test_log_append_time_topic_skips_create_time_checks(impl):
    batch = craft.assemble(craft.records(2), 2, base_ts=1000)
    assert check(batch, timestamp_type=native.LOG_APPEND_TIME, before_max_ms=1).ok


def test_log_append_time_batch_on_log_append_time_topic_is_refused(impl):
    batch = craft.assemble(craft.record(0, 0, b"kk", b"vvv"), 1, attributes=0x08,
                           max_ts=NOW)
    verdict = check(batch, timestamp_type=native.LOG_APPEND_TIME)
    assert verdict.error_code == 32
    # The wording a Kafka 3.9 broker answered with, record for record.
    assert verdict.record_errors == [(0, (
        f"Invalid timestamp type in message DefaultRecord(offset=0, timestamp={NOW}, key=2 "
        "bytes, value=3 bytes). Producer should not set timestamp type to LogAppendTime."))]


def test_log_append_time_batch_on_create_time_topic_checks_its_max_timestamp(impl):
    batch = craft.assemble(craft.records(3), 3, attributes=0x08, base_ts=1, max_ts=NOW)
    verdict = check(batch, before_max_ms=DAY)
    assert verdict.ok and verdict.max_timestamp == NOW and verdict.max_timestamp_index == 0
    stale = craft.assemble(craft.records(3), 3, attributes=0x08, base_ts=1, max_ts=5)
    assert check(stale, before_max_ms=DAY).error_code == 32


def test_max_timestamp_is_the_first_record_carrying_it(impl):
    raw = b"".join(craft.record(i, d) for i, d in enumerate([5, 9, 2, 9, -1]))
    verdict = check(craft.assemble(raw, 5, base_ts=100))
    assert (verdict.max_timestamp, verdict.max_timestamp_index) == (109, 1)
    assert verdict.records_count == 5 and verdict.offsets_in_order


def test_offset_deltas_out_of_order_are_reported_not_refused(impl):
    # Kafka stores such an uncompressed batch as it is; the append path decides.
    raw = b"".join(craft.record(9 - i) for i in range(10))
    verdict = check(craft.assemble(raw, 10))
    assert verdict.ok and not verdict.offsets_in_order


def test_broker_written_control_batch_passes_and_client_one_does_not(impl):
    marker = build_control_batch(1, 5, producer_id=7, producer_epoch=0, timestamp=NOW)
    assert check(marker, from_client=False).ok
    assert check(marker).error_message == (
        f"Clients are not allowed to write control records in topic partition {TP}")


def _kafka_python_keys(batch):
    try:
        return [r.key for r in DefaultRecordBatch(batch)]
    except CorruptRecordError as exc:
        return exc


def test_reader_hazards_are_refused_only_on_request(impl):
    high = craft.record(0, attributes=0x80) + craft.record(1)
    bad_key = craft.record(0) + craft.record(1, headers=[(b"ok", b"1"), (b"\xff\xfe", b"2")])
    for raw, index, message in ((high, 0, "Record attributes byte has its high bit set"),
                                (bad_key, 1, "Record header key is not valid UTF-8")):
        batch = craft.assemble(raw, 2)
        # What a kafka-python consumer gets: misread keys (high bit) or CorruptRecordError.
        assert _kafka_python_keys(batch) != [b"k", b"k"]
        assert check(batch).ok  # Kafka 3.9 stores both
        verdict = check(batch, refuse_reader_hazards=True)
        assert verdict.error_code == 87
        assert [(i, m.split(",")[0]) for i, m in verdict.record_errors] == [(index, message)]


@pytest.mark.parametrize("key", [
    b"", b"plain", "é€𝄞".encode(), b"\xe0\xa0\x80", b"\xed\x9f\xbf", b"\xf0\x90\x80\x80",
    b"\xf4\x8f\xbf\xbf", b"\xc0\x80", b"\xc1\xbf", b"\xe0\x80\x80", b"\xed\xa0\x80",
    b"\xf0\x80\x80\x80", b"\xf4\x90\x80\x80", b"\xf5\x80\x80\x80", b"\xff", b"\x80",
    b"\xe2\x82", b"a\xc3", b"\xc3\x28"])
def test_header_key_utf8_check_is_pythons(impl, key):
    try:
        key.decode("utf-8")
        valid = True
    except UnicodeDecodeError:
        valid = False
    batch = craft.assemble(craft.record(0, headers=[(key, b"v")]), 1)
    assert check(batch, refuse_reader_hazards=True).ok == valid


def test_headers_including_null_values_pass(impl):
    raw = craft.record(0, 0, b"k", None, headers=[(b"a", b"1"), (b"", None), (b"c", b"")])
    assert check(craft.assemble(raw, 1)).ok


def test_negative_key_and_value_lengths_are_null(impl):
    # Kafka reads any negative length as null (Utils.readBytes).
    body = b"\x00" + craft.varint(0) + craft.varint(0) + craft.varint(-7) + craft.varint(-2)
    body += craft.varint(0)
    batch = craft.assemble(craft.varint(len(body)) + body, 1)
    assert check(batch).ok
    assert check(batch, compacted=True).error_code == 87


def test_unknown_timestamp_type_is_a_programming_error():
    with pytest.raises(ValueError):
        check(craft.assemble(craft.records(1), 1), timestamp_type="create_time")


def test_size_magic_and_codec_checks(impl):
    good = craft.assemble(craft.records(2), 2)
    assert check(good[:60]).error_code == 2
    assert check(good + b"\x00").error_code == 2
    assert check(craft.assemble(craft.records(2), 2, magic=1)).error_code == 87
    assert check(craft.assemble(craft.records(2), 2, attributes=5)).error_code == 76


def test_uncompressed_size_limit(impl):
    batch = craft.plain(craft.records(1, value=b"z" * 100_000), 1, craft.GZIP)
    assert check(batch).ok
    verdict = check(batch, max_uncompressed_bytes=50_000)
    assert verdict.error_code == -1 and "exceeds 50000 bytes" in verdict.error_message


def test_large_outputs_and_java_style_zstd(impl):
    big = craft.record(0, 0, b"k", bytes(3 << 20))  # lz4 output spans several steps
    for codec in (craft.GZIP, craft.LZ4, craft.ZSTD):
        batch = craft.plain(big, 1, codec)
        assert check(batch).ok
        assert check(batch, max_uncompressed_bytes=2 << 20).error_code == -1
    import zstandard
    unsized = zstandard.ZstdCompressor(write_content_size=False).compress(craft.records(9))
    assert check(craft.assemble(unsized, 9, attributes=craft.ZSTD)).ok
    assert check(craft.assemble(unsized[:-2], 9, attributes=craft.ZSTD)).error_code == -1


def test_bytes_after_a_compressed_stream_are_refused(impl):
    for codec in (craft.GZIP, craft.LZ4, craft.ZSTD):
        payload = craft.compress(codec, craft.records(2)) + b"\x00\x00\x07"
        assert check(craft.assemble(payload, 2, attributes=codec)).error_code == -1


def test_several_gzip_members_and_zstd_frames_pass(impl):
    # Java's GZIPInputStream and ZstdInputStream read across members / frames.
    first, second = craft.records(2), craft.record(2, 2) + craft.record(3, 3)
    for codec in (craft.GZIP, craft.ZSTD):
        payload = craft.compress(codec, first) + craft.compress(codec, second)
        assert check(craft.assemble(payload, 4, attributes=codec)).ok


def test_accepts_bytes_bytearray_and_memoryview(impl):
    batch = craft.plain(craft.records(4), 4, craft.LZ4)
    framed = b"junk" + batch + b"tail"
    for form in (batch, bytearray(batch), memoryview(framed)[4:4 + len(batch)]):
        verdict = check(form)
        assert verdict.ok and verdict.records_count == 4


# ------------------------------------------------------------------ real producers

@pytest.mark.parametrize("codec", CODECS)
def test_kafka_python_batches_pass(impl, codec):
    builder = DefaultRecordBatchBuilder(magic=2, compression_type=codec, is_transactional=False,
                                        producer_id=-1, producer_epoch=-1, base_sequence=-1,
                                        batch_size=1 << 20)
    for i in range(64):
        builder.append(i, timestamp=NOW - 64 + i, key=None if i % 5 else b"key-%d" % i,
                       value=os.urandom(i * 7) if i % 3 else None,
                       headers=[("h%d" % j, b"x" * j) for j in range(i % 3)])
    verdict = check(bytes(builder.build()), before_max_ms=HOUR, after_max_ms=HOUR)
    assert verdict.ok, verdict.error_message
    assert (verdict.records_count, verdict.max_timestamp, verdict.max_timestamp_index) == \
        (64, NOW - 1, 63)


@pytest.mark.parametrize("codec", CODECS)
def test_kafka_python_idempotent_transactional_batches_pass(impl, codec):
    builder = DefaultRecordBatchBuilder(magic=2, compression_type=codec, is_transactional=True,
                                        producer_id=42, producer_epoch=3, base_sequence=7,
                                        batch_size=1 << 20)
    for i in range(3):
        builder.append(i, timestamp=NOW, key=b"k", value=b"v", headers=[])
    assert check(bytes(builder.build()), compacted=True).ok


@pytest.mark.parametrize("codec", CODECS)
def test_kafkapy_built_batches_pass(impl, codec):
    records = [(b"k%d" % i, b"v" * i, [("h", b"1")], NOW + i) for i in range(10)]
    verdict = check(build_batch(records, compression=codec))
    assert verdict.ok and verdict.max_timestamp == NOW + 9


def test_java_style_xerial_snappy_passes(impl):
    batch = craft.assemble(craft.xerial(craft.records(20)), 20, attributes=craft.SNAPPY)
    assert check(batch).ok
    cut = craft.xerial(craft.records(20))[:-3]
    assert check(craft.assemble(cut, 20, attributes=craft.SNAPPY)).error_code == -1


# ------------------------------------------------------------------ fallback

def test_fallback_warns_once(monkeypatch, caplog):
    monkeypatch.setattr(native, "_native_walk", None)
    monkeypatch.setattr(native, "_warned", False)
    batch = craft.assemble(craft.records(2), 2)
    with caplog.at_level(logging.WARNING, logger="kafkapy.native"):
        assert check(batch).ok and check(batch).ok
    slow = [r for r in caplog.records if "slow" in r.getMessage()]
    assert len(slow) == 1


# ------------------------------------------------------------------ C == Python

_blobs = st.one_of(st.none(), st.binary(max_size=12))
_record = st.tuples(st.integers(-3, 3), st.integers(-(1 << 40), 1 << 40), _blobs, _blobs,
                    st.lists(st.tuples(st.binary(max_size=4), _blobs), max_size=2))


@st.composite
def _records_bytes(draw):
    recs = draw(st.lists(_record, min_size=1, max_size=8))
    in_order = draw(st.booleans())
    raw = b"".join(craft.record(i if in_order else i + d, ts, k, v, headers=h)
                   for i, (d, ts, k, v, h) in enumerate(recs))
    return raw, len(recs)


@st.composite
def _damaged(draw):
    """Valid record bytes, then maybe a cut, a flipped byte, inserted bytes or pure noise."""
    raw, count = draw(_records_bytes())
    how = draw(st.sampled_from(["none", "cut", "flip", "insert", "noise", "count"]))
    if how == "cut" and raw:
        raw = raw[:draw(st.integers(0, len(raw) - 1))]
    elif how == "flip" and raw:
        i = draw(st.integers(0, len(raw) - 1))
        raw = raw[:i] + bytes([raw[i] ^ draw(st.integers(1, 255))]) + raw[i + 1:]
    elif how == "insert":
        i = draw(st.integers(0, len(raw)))
        raw = raw[:i] + draw(st.binary(min_size=1, max_size=6)) + raw[i:]
    elif how == "noise":
        raw = draw(st.binary(max_size=64))
    elif how == "count":
        count = draw(st.integers(0, 12))
    return raw, count


_walk_args = st.tuples(
    st.integers(-(1 << 63), (1 << 63) - 1),  # base_offset
    st.integers(-(1 << 63), (1 << 63) - 1),  # base_ts
    st.booleans(),  # batch_log_append
    st.integers(-(1 << 63), (1 << 63) - 1),  # batch_max_ts
    st.booleans(), st.booleans(),  # compacted, topic_create_time
    st.integers(-(1 << 63), (1 << 63) - 1),  # now
    st.integers(0, (1 << 63) - 1), st.integers(0, (1 << 63) - 1),  # before, after
    st.booleans(),  # stream
    st.booleans(),  # strict
)


@settings(max_examples=300, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(_damaged(), _walk_args)
@example((craft.varint(10) + craft.record_body(0) + b"\x00\x00", 1),
         (0, 0, False, 0, False, True, -1, 0, 0, False, False))  # slack bytes
@example((craft.record(0), 1),  # now - ts = INT64_MIN
         (0, (1 << 63) - 1, False, 0, False, True, -1, 0, 0, False, False))
def test_c_walk_equals_python_walk(records_and_count, args):
    raw, count = records_and_count
    assert native.NATIVE
    c = native._native_walk(raw, count, *args)
    py = reference.walk(raw, count, *args)
    assert c == py


@settings(max_examples=150, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(_records_bytes(), st.sampled_from(CODECS), st.booleans())
def test_c_and_python_verdicts_agree_on_whole_batches(records_and_count, codec, compacted):
    raw, count = records_and_count
    batch = craft.plain(raw, count, codec)
    c = check(batch, compacted=compacted, before_max_ms=DAY, after_max_ms=HOUR)
    saved = native._native_walk
    try:
        native._native_walk = None
        native._warned = True
        py = check(batch, compacted=compacted, before_max_ms=DAY, after_max_ms=HOUR)
    finally:
        native._native_walk = saved
    assert c == py


@settings(max_examples=300, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(_damaged(), st.sampled_from(CODECS))
@example((craft.varint(10) + craft.record_body(0) + b"\x00\x00", 1), craft.NONE)
def test_what_passes_is_readable_by_kafka_python(records_and_count, codec):
    """A stock consumer's parser reads every record of a batch the validator lets through."""
    raw, count = records_and_count
    batch = craft.plain(raw, count, codec)
    verdict = check(batch, refuse_reader_hazards=True)
    if not verdict.ok:
        return
    read = list(DefaultRecordBatch(batch))  # raises CorruptRecordError on a validator hole
    assert len(read) == verdict.records_count == count
    assert max(r.timestamp for r in read) == verdict.max_timestamp
