"""Shared expectations for the stock-client end-to-end tests.

Every client test produces the same deterministic records to a single-partition
topic per codec (``e2e-<client>-<codec>``), reads them back, and checks them with
the helpers here, so every client is held to the same contract:

- ``N_RECORDS`` records; record ``i`` has key ``b"key-%05d" % i``, a value of
  16 to 615 bytes (every 997th: ~8 KiB) of printable ASCII without tabs or
  newlines (so kcat can carry it), and two headers ``e2e-index`` / ``e2e-codec``.
- CreateTime timestamps set by the producer: ``base + i`` except record
  ``MAX_TS_INDEX`` whose timestamp is the largest of all (``base + MAX_TS_DELTA``)
  and sits in the middle of the log, so a broker that answers MAX_TIMESTAMP with
  "the last offset" is caught.
- ListOffsets expectations (``expected_offsets``) for EARLIEST, LATEST,
  MAX_TIMESTAMP and by-timestamp look-ups, including one that matches only the
  out-of-order record and one past every timestamp (no offset).

``stored_codecs`` reads the broker's on-disk segments (Kafka's log format) to
check that batches were kept with the producer's codec; ``librdkafka_effective_codec``
knows when librdkafka silently declines a codec because of the broker's ApiVersions
(read with a raw request by ``broker_api_versions``).
"""
from __future__ import annotations

import os
import socket
import struct
import time
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path

import pytest

N_RECORDS = 10_000
CODECS = ("none", "gzip", "snappy", "lz4", "zstd")
CODEC_IDS = {"none": 0, "gzip": 1, "snappy": 2, "lz4": 3, "zstd": 4}

MAX_TS_INDEX = 7_000          # the record with the largest timestamp
MAX_TS_DELTA = 20_000         # its timestamp is base + this (others: base + i)
_ALPHABET = b"abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789-_.:"


# Set when the tests run against an external broker (KAFKAPY_E2E_BOOTSTRAP): topic
# names get a per-run suffix there so reruns do not collide with earlier topics.
TOPIC_SUFFIX = f"-{os.getpid()}" if os.environ.get("KAFKAPY_E2E_BOOTSTRAP") else ""


def topic_name(client: str, codec: str) -> str:
    return f"e2e-{client}-{codec}{TOPIC_SUFFIX}"


def base_timestamp() -> int:
    """A base CreateTime 10 minutes in the past, whole seconds.

    Recent enough for any retention or timestamp-skew setting, far enough back
    that every record timestamp (up to base + MAX_TS_DELTA) is in the past.
    """
    return (int(time.time()) - 600) * 1000


def key(i: int) -> bytes:
    return b"key-%05d" % i


def value(i: int) -> bytes:
    """Mixed sizes: mostly 16..615 bytes, every 997th record ~8 KiB."""
    size = 8192 + i % 7 if i % 997 == 0 else 16 + (i * 7919) % 600
    head = b"value-%05d-" % i
    rot = i % len(_ALPHABET)
    pattern = _ALPHABET[rot:] + _ALPHABET[:rot]
    body = (pattern * (size // len(pattern) + 1))[: max(0, size - len(head))]
    return head + body


def headers(i: int, codec: str) -> list[tuple[str, bytes]]:
    return [("e2e-index", b"%05d" % i), ("e2e-codec", codec.encode())]


def timestamp(base: int, i: int) -> int:
    return base + (MAX_TS_DELTA if i == MAX_TS_INDEX else i)


@dataclass(frozen=True)
class Expected:
    offset: int
    key: bytes
    value: bytes
    headers: list[tuple[str, bytes]]
    timestamp: int | None


def expected_records(codec: str, base: int | None, n: int = N_RECORDS) -> list[Expected]:
    return [Expected(i, key(i), value(i), headers(i, codec),
                     None if base is None else timestamp(base, i)) for i in range(n)]


@dataclass(frozen=True)
class Got:
    """One consumed record, normalised: bytes key/value, list of (str, bytes) headers."""
    offset: int
    key: bytes | None
    value: bytes | None
    headers: list[tuple[str, bytes]]
    timestamp: int
    timestamp_type: int | None = None   # 0 CreateTime, 1 LogAppendTime, None unknown


def check_records(got: list[Got], expected: list[Expected], *, what: str = "") -> None:
    """Assert ``got`` is exactly ``expected``, in order; first mismatch is reported precisely."""
    prefix = f"{what}: " if what else ""
    for idx, (g, e) in enumerate(zip(got, expected)):
        assert g.offset == e.offset, f"{prefix}record #{idx}: offset {g.offset} != {e.offset}"
        assert g.key == e.key, f"{prefix}offset {g.offset}: key {g.key!r} != {e.key!r}"
        assert g.value == e.value, (
            f"{prefix}offset {g.offset}: value mismatch: got {len(g.value or b'')} bytes "
            f"{(g.value or b'')[:40]!r}..., expected {len(e.value)} bytes {e.value[:40]!r}...")
        assert list(g.headers) == list(e.headers), (
            f"{prefix}offset {g.offset}: headers {g.headers!r} != {e.headers!r}")
        if e.timestamp is not None:
            assert g.timestamp == e.timestamp, (
                f"{prefix}offset {g.offset}: timestamp {g.timestamp} != {e.timestamp}")
        if g.timestamp_type is not None:
            assert g.timestamp_type == 0, (
                f"{prefix}offset {g.offset}: timestamp type {g.timestamp_type}, expected 0 (CreateTime)")
    assert len(got) == len(expected), (
        f"{prefix}consumed {len(got)} records, expected {len(expected)}"
        + (f"; last consumed offset {got[-1].offset}" if got else ""))


@dataclass(frozen=True)
class OffsetExpectations:
    earliest: int
    latest: int
    max_timestamp: tuple[int, int]            # (offset, timestamp)
    by_timestamp: dict[int, tuple[int, int] | None]   # target ts -> (offset, ts) or None


def expected_offsets(base: int, n: int = N_RECORDS) -> OffsetExpectations:
    """ListOffsets answers for a partition holding ``expected_records(.., base, n)``."""
    assert n > MAX_TS_INDEX + 1
    mid = n // 2
    return OffsetExpectations(
        earliest=0,
        latest=n,
        max_timestamp=(MAX_TS_INDEX, base + MAX_TS_DELTA),
        by_timestamp={
            base - 1_000: (0, base),                       # before everything -> first record
            base: (0, base),                               # exact first timestamp
            base + mid: (mid, base + mid),                 # exact, mid-log (inside a batch)
            base + n - 1: (MAX_TS_INDEX, base + MAX_TS_DELTA)
            if n - 1 > MAX_TS_INDEX else (n - 1, base + n - 1),
            # only the out-of-order record is at or after this timestamp:
            base + MAX_TS_DELTA - 1: (MAX_TS_INDEX, base + MAX_TS_DELTA),
            base + MAX_TS_DELTA + 1: None,                 # after everything -> no offset
        },
    )


# ---------------------------------------------------------------------------
# On-disk check: Kafka's segment format (RecordBatch v2 headers).

def stored_batches(log_dir: Path, topic: str, partition: int = 0) -> list[tuple[int, bytes]]:
    """[(codec id, records section)] for the data batches of the partition's ``*.log`` segments.

    RecordBatch v2 header: baseOffset int64, batchLength int32,
    partitionLeaderEpoch int32, magic int8, crc uint32, attributes int16, ...
    61 bytes in all. Codec is ``attributes & 7``. Control batches (attribute
    bit 5) are skipped.
    """
    pdir = Path(log_dir) / f"{topic}-{partition}"
    segments = sorted(pdir.glob("*.log"))
    assert segments, f"no *.log segments in {pdir} (contents: {sorted(p.name for p in pdir.glob('*'))})"
    out = []
    for seg in segments:
        data = seg.read_bytes()
        pos = 0
        while pos + 23 <= len(data):
            _base, length = struct.unpack_from(">qi", data, pos)
            if length <= 0:
                break   # preallocated / zero-filled tail
            magic = data[pos + 16]
            assert magic == 2, f"{seg}: batch at byte {pos} has magic {magic}"
            (attributes,) = struct.unpack_from(">h", data, pos + 21)
            if not attributes & 0x20:
                out.append((attributes & 7, data[pos + 61:pos + 12 + length]))
            pos += 12 + length
    return out


def stored_codecs(log_dir: Path, topic: str, partition: int = 0) -> dict[int, int]:
    """{codec id: batch count} over the partition's ``*.log`` segments."""
    counts: dict[int, int] = {}
    for codec_id, _records in stored_batches(log_dir, topic, partition):
        counts[codec_id] = counts.get(codec_id, 0) + 1
    return counts


def _shrinks(codec: str, payload: bytes) -> bool:
    """Whether ``codec`` makes ``payload`` clearly smaller (by more than 5%)."""
    from kafkapy.records.record import compress
    return len(compress(CODEC_IDS[codec], payload)) < 0.95 * len(payload)


def librdkafka_keeps_plain(codec: str) -> Callable[[bytes], bool]:
    """Which record sections librdkafka sends uncompressed under ``codec``.

    librdkafka sends a batch uncompressed when compressing it would make it
    larger (rdkafka_msgset_writer.c: "If the compressed data is larger than the
    uncompressed size ... send as uncompressed"), which small batches do. Its
    frames differ from kafkapy's by a few bytes, hence the 5% margin.
    """
    return lambda records: not _shrinks(codec, records)


def encoder_keeps_plain(codec_module, codec: str) -> Callable[[bytes], bool]:
    """Which record sections kafka-python or aiokafka sends uncompressed under ``codec``.

    Both batch builders (DefaultRecordBatchBuilder._maybe_compress) send the
    records uncompressed when their own ``<codec>_encode`` (from
    ``codec_module``) does not make them smaller, as with a single small record
    under lz4, whose frame header is larger than what it saves.
    """
    return lambda records: len(getattr(codec_module, f"{codec}_encode")(records)) >= len(records)


def check_stored_codec(log_dir: Path | None, topic: str, codec: str,
                       kept_plain: Callable[[bytes], bool] | None = None) -> None:
    """Every data batch is stored with ``codec``, byte for byte as produced.

    With ``kept_plain`` (the producer's rule for sending a batch uncompressed,
    see librdkafka_keeps_plain and encoder_keeps_plain) plain batches are
    accepted, but only those the producer would have kept plain, and not all
    of them: a broker that stored compressible batches uncompressed still fails.
    """
    if log_dir is None:     # external broker (KAFKAPY_E2E_BOOTSTRAP): no log directory to read
        return
    want = CODEC_IDS[codec]
    batches = stored_batches(log_dir, topic)
    counts = stored_codecs(log_dir, topic)
    if kept_plain is not None and want != 0:
        wrong = [len(r) for c, r in batches if c != want and not (c == 0 and kept_plain(r))]
        assert not wrong and counts.get(want), (
            f"{topic}: stored batches by codec id {counts}, expected {want} ({codec}) except for "
            f"batches the producer keeps plain; offending record sections (bytes): {wrong[:10]}")
        return
    assert set(counts) == {want}, (
        f"{topic}: stored batches by codec id {counts}, expected all {want} ({codec})")


# ---------------------------------------------------------------------------
# ApiVersions probe (raw v0 request, so no client library's guessing is involved).
def broker_api_versions(bootstrap: str, timeout: float = 10.0) -> dict[int, tuple[int, int]]:
    host, port = bootstrap.rsplit(":", 1)
    client_id = b"e2e-probe"
    body = struct.pack(">hhih", 18, 0, 1, len(client_id)) + client_id
    with socket.create_connection((host, int(port)), timeout=timeout) as s:
        s.sendall(struct.pack(">i", len(body)) + body)
        buf = b""
        while len(buf) < 4 or len(buf) < 4 + struct.unpack_from(">i", buf)[0]:
            chunk = s.recv(65536)
            if not chunk:
                raise ConnectionError(f"broker closed the connection after {len(buf)} bytes")
            buf += chunk
    correlation_id, error_code, count = struct.unpack_from(">ihi", buf, 4)
    assert correlation_id == 1 and error_code == 0, (correlation_id, error_code)
    out = {}
    for j in range(count):
        key, lo, hi = struct.unpack_from(">hhh", buf, 14 + 6 * j)
        out[key] = (lo, hi)
    return out


# FindCoordinator, JoinGroup, Heartbeat, LeaveGroup, SyncGroup, OffsetCommit, OffsetFetch
GROUP_API_KEYS = (10, 11, 12, 13, 14, 8, 9)


def broker_has_groups(bootstrap: str) -> bool:
    versions = broker_api_versions(bootstrap)
    return all(k in versions for k in GROUP_API_KEYS)


def librdkafka_effective_codec(bootstrap: str, codec: str) -> str:
    """The codec librdkafka (confluent-kafka, kcat) really uses with this broker.

    librdkafka turns a codec on only when the broker's ApiVersions imply support
    (src/rdkafka_feature.c): LZ4 needs FindCoordinator v0 (its marker for Kafka
    >= 0.8.2), ZSTD needs Produce v7 and Fetch v10. Otherwise it logs "Broker does
    not support compression type ...: not compressing batch" and sends the batch
    uncompressed.
    """
    versions = broker_api_versions(bootstrap)

    def overlaps(key: int, lo: int, hi: int) -> bool:
        return key in versions and versions[key][0] <= hi and lo <= versions[key][1]

    if codec == "lz4" and not overlaps(10, 0, 0):
        return "none"
    if codec == "zstd" and not (overlaps(0, 7, 7) and overlaps(1, 10, 10)):
        return "none"
    return codec


def check_librdkafka_stored_codec(bootstrap: str, log_dir: Path | None, topic: str, codec: str) -> None:
    """check_stored_codec for librdkafka producers; xfails (after checking) when the
    broker's advertised APIs make librdkafka send ``codec`` batches uncompressed."""
    effective = librdkafka_effective_codec(bootstrap, codec)
    check_stored_codec(log_dir, topic, effective, kept_plain=librdkafka_keeps_plain(effective))
    if effective != codec:
        pytest.xfail(f"librdkafka sent {codec} batches uncompressed: the broker's ApiVersions lack "
                     "what librdkafka requires for it (lz4: FindCoordinator v0; zstd: Produce v7 + Fetch v10); "
                     "everything else was checked")


def produce_values(bootstrap: str, topic: str, values: list[bytes]) -> None:
    """Produce ``values`` to ``topic`` with confluent-kafka; every one must be acknowledged."""
    from confluent_kafka import Producer

    producer = Producer({"bootstrap.servers": bootstrap, "message.timeout.ms": 20000})
    errors = []
    for v in values:
        producer.produce(topic, v, on_delivery=lambda err, _msg: err and errors.append(err))
    assert producer.flush(30) == 0 and not errors, errors


def read_values(bootstrap: str, topic: str, count: int, timeout: float = 30.0) -> list[bytes]:
    """Up to ``count`` values of partition 0 from offset 0, read with an assigned
    confluent-kafka consumer (no group membership)."""
    from confluent_kafka import Consumer, TopicPartition

    consumer = Consumer({"bootstrap.servers": bootstrap, "group.id": f"{topic}-reader",
                         "enable.auto.commit": False})
    consumer.assign([TopicPartition(topic, 0, 0)])
    return poll_values(consumer, count, timeout, poll_s=0.5)


def poll_values(consumer, count: int, timeout: float, poll_s: float = 1.0) -> list[bytes]:
    """Up to ``count`` record values polled from a confluent-kafka ``consumer`` (subscribed
    or assigned) within ``timeout`` seconds, errors skipped; the consumer is closed."""
    got, deadline = [], time.monotonic() + timeout
    while len(got) < count and time.monotonic() < deadline:
        msg = consumer.poll(poll_s)
        if msg is not None and msg.error() is None:
            got.append(msg.value())
    consumer.close()
    return got


def kafka_python_values(consumer, count: int, grace_ms: int = 1000) -> list[bytes]:
    """The record values a kafka-python ``consumer`` yields until ``count`` arrived (its
    ``consumer_timeout_ms`` bounds the wait), plus any that arrive within ``grace_ms``
    after: so a test expecting ``count`` records also sees extras, without idling out
    the whole timeout.  The consumer is closed."""
    got = []
    try:
        for record in consumer:
            got.append(record.value)
            if len(got) == count:
                break
        if len(got) == count:
            for records in consumer.poll(timeout_ms=grace_ms).values():
                got.extend(r.value for r in records)
    finally:
        consumer.close()
    return got
