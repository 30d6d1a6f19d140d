"""An independent reader and writer of Kafka's on-disk log format, for the storage tests.

Written from Kafka's format (its documentation's "Message Format" and "Log" sections and
its record classes), not from kafkapy's code, and importing nothing from kafkapy: struct
for the fixed layouts, our own zig-zag varints, ``crc32c`` for CRC-32C and the standard
library codecs.

- ``<base:020d>.log``: v2 record batches back to back (61-byte header, big-endian;
  records are varint-framed; compression covers everything after recordsCount).
- ``.index``: 8-byte entries (int32 relative offset, int32 position); an entry (O, P)
  names the batch that starts at P and ends at offset O.
- ``.timeindex``: 12-byte entries (int64 timestamp, int32 relative offset).
- text checkpoints: ``0\\n<count>\\n<entries>\\n``; ``meta.properties``; ``partition.metadata``.
"""
from __future__ import annotations

import gzip
import os
import struct
import time
from dataclasses import dataclass, field

import crc32c

HEADER = struct.Struct(">qiibIhiqqqhii")  # 61 bytes


def zigzag_read(buf: bytes, pos: int) -> tuple[int, int]:
    shift = value = 0
    while True:
        b = buf[pos]
        pos += 1
        value |= (b & 0x7F) << shift
        if b < 0x80:
            return (value >> 1) ^ -(value & 1), pos
        shift += 7


def zigzag_write(v: int) -> bytes:
    u = ((v << 1) ^ (v >> 63)) & 0xFFFFFFFFFFFFFFFF
    out = bytearray()
    while u >= 0x80:
        out.append((u & 0x7F) | 0x80)
        u >>= 7
    out.append(u)
    return bytes(out)


@dataclass
class Batch:
    position: int
    base_offset: int
    length: int
    leader_epoch: int
    attributes: int
    last_offset_delta: int
    base_ts: int
    max_ts: int
    producer_id: int
    producer_epoch: int
    base_sequence: int
    count: int
    records: list = field(default_factory=list)  # (offset, timestamp, key, value)

    @property
    def last_offset(self) -> int:
        return self.base_offset + self.last_offset_delta

    @property
    def size(self) -> int:
        return 12 + self.length


def _decompress(codec: int, data: bytes) -> bytes:
    if codec == 0:
        return data
    if codec == 1:
        return gzip.decompress(data)
    if codec == 3:
        import lz4.frame
        return lz4.frame.decompress(data)
    if codec == 4:
        import zstandard
        return zstandard.ZstdDecompressor().decompressobj().decompress(data)
    if codec == 2:
        import snappy
        if data[:8] == b"\x82SNAPPY\x00":
            out, pos = bytearray(), 16
            while pos < len(data):
                (n,) = struct.unpack_from(">i", data, pos)
                out += snappy.decompress(data[pos + 4:pos + 4 + n])
                pos += 4 + n
            return bytes(out)
        return snappy.decompress(data)
    raise ValueError(f"codec {codec}")


def read_log(path: str) -> list[Batch]:
    """Every batch of a .log file; asserts CRCs, magic and that the file has no tail."""
    data = open(path, "rb").read()
    pos = 0
    out = []
    while pos < len(data):
        assert len(data) - pos >= 61, f"{path}: torn header at {pos}"
        f = HEADER.unpack_from(data, pos)
        base, length, epoch, magic, crc, attrs, lod, bts, mts, pid, pep, seq, count = f
        assert magic == 2, f"{path}: magic {magic} at {pos}"
        end = pos + 12 + length
        assert end <= len(data), f"{path}: torn batch at {pos}"
        assert crc32c.crc32c(data[pos + 21:end]) == crc, f"{path}: bad CRC at {pos}"
        b = Batch(pos, base, length, epoch, attrs, lod, bts, mts, pid, pep, seq, count)
        body = _decompress(attrs & 7, data[pos + 61:end])
        p = 0
        for _ in range(count):
            n, p = zigzag_read(body, p)
            rend = p + n
            p += 1
            tsd, p = zigzag_read(body, p)
            od, p = zigzag_read(body, p)
            kl, p = zigzag_read(body, p)
            key = None if kl < 0 else body[p:p + kl]
            p += max(kl, 0)
            vl, p = zigzag_read(body, p)
            value = None if vl < 0 else body[p:p + vl]
            p = rend
            ts = mts if attrs & 0x08 else bts + tsd
            b.records.append((base + od, ts, key, value))
        out.append(b)
        pos = end
    return out


def read_index(path: str, base: int) -> list[tuple[int, int]]:
    data = open(path, "rb").read()
    assert len(data) % 8 == 0, f"{path}: length {len(data)}"
    entries = list(struct.iter_unpack(">ii", data))
    while entries and entries[-1] == (0, 0):  # preallocated, unused (active segment)
        entries.pop()
    return [(base + r, p) for r, p in entries]


def read_time_index(path: str, base: int) -> list[tuple[int, int]]:
    data = open(path, "rb").read()
    assert len(data) % 12 == 0, f"{path}: length {len(data)}"
    entries = list(struct.iter_unpack(">qi", data))
    while entries and entries[-1] == (0, 0):  # preallocated, unused (active segment)
        entries.pop()
    return [(t, base + r) for t, r in entries]


def read_checkpoint(path: str) -> list[list[str]]:
    lines = open(path, encoding="utf-8").read().split("\n")
    assert lines[-1] == "", f"{path}: no final newline"
    assert lines[0] == "0", f"{path}: version {lines[0]!r}"
    count = int(lines[1])
    entries = [line.split(" ") for line in lines[2:-1]]
    assert len(entries) == count, f"{path}: {count} != {len(entries)}"
    return entries


def read_properties(path: str) -> dict[str, str]:
    out = {}
    for line in open(path, encoding="utf-8"):
        line = line.strip()
        if line and not line.startswith("#"):
            k, _, v = line.partition("=")
            out[k.strip()] = v.strip()
    return out


@dataclass
class PartitionContents:
    segments: dict[int, list[Batch]]

    @property
    def batches(self) -> list[Batch]:
        return [b for base in sorted(self.segments) for b in self.segments[base]]

    @property
    def records(self) -> list[tuple]:
        return [r for b in self.batches for r in b.records]


def check_partition(dir_path: str, index_interval_bytes: int | None = None) -> PartitionContents:
    """Read and cross-check every segment of a partition dir (indexes against the log)."""
    names = os.listdir(dir_path)
    bases = sorted(int(n[:20]) for n in names if n.endswith(".log") and n[:20].isdigit())
    segs: dict[int, list[Batch]] = {}
    prev_next = None
    for i, base in enumerate(bases):
        stem = os.path.join(dir_path, f"{base:020d}")
        batches = read_log(stem + ".log")
        if prev_next is not None:
            assert base >= prev_next, f"segment {base} overlaps the previous one"
        for b in batches:
            assert b.base_offset >= base and b.last_offset - base <= 0x7FFFFFFF
            if prev_next is not None:
                assert b.base_offset >= prev_next, f"offsets go back at {b.base_offset}"
            prev_next = b.last_offset + 1
        by_pos = {b.position: b for b in batches}
        index = read_index(stem + ".index", base)
        last = (base - 1, 0)
        for off, pos in index:
            assert pos in by_pos, f"{stem}.index: position {pos} is not a batch start"
            assert by_pos[pos].last_offset == off, f"{stem}.index: ({off},{pos}) mismatch"
            assert off > last[0] and pos > last[1], f"{stem}.index: not ascending"
            last = (off, pos)
        if index_interval_bytes is not None and batches:
            # no more than index.interval.bytes + one batch between entries
            marks = [0] + [p for _, p in index] + [batches[-1].position + batches[-1].size]
            biggest = max(b.size for b in batches)
            assert all(b - a <= index_interval_bytes + 2 * biggest
                       for a, b in zip(marks, marks[1:])), f"{stem}.index too sparse"
        tindex = read_time_index(stem + ".timeindex", base)
        seg_max = max((b.max_ts for b in batches), default=-1)
        offsets = {b.last_offset for b in batches}
        prev = (-1, base - 1)
        for ts, off in tindex:
            assert ts > prev[0] and off >= prev[1], f"{stem}.timeindex not ascending"
            assert ts <= seg_max and off in offsets, f"{stem}.timeindex entry ({ts},{off})"
            prev = (ts, off)
        if i < len(bases) - 1 and batches:
            assert tindex and tindex[-1][0] == seg_max, f"{stem}.timeindex lacks the max"
        segs[base] = batches
    return PartitionContents(segs)


# ---------------------------------------------------------------- writer


def encode_batch(base_offset: int, records: list[tuple[bytes | None, bytes | None, int]],
                 leader_epoch: int = 0) -> bytes:
    """An uncompressed v2 batch of (key, value, timestamp) records, offsets from base."""
    base_ts = records[0][2]
    body = bytearray()
    for i, (k, v, ts) in enumerate(records):
        rec = bytearray(b"\x00") + zigzag_write(ts - base_ts) + zigzag_write(i)
        for blob in (k, v):
            rec += zigzag_write(-1) if blob is None else zigzag_write(len(blob)) + blob
        rec += zigzag_write(0)
        body += zigzag_write(len(rec)) + rec
    n = len(records)
    head = HEADER.pack(base_offset, 49 + len(body), leader_epoch, 2, 0, 0, n - 1, base_ts,
                       max(r[2] for r in records), -1, -1, -1, n)
    batch = bytearray(head + body)
    struct.pack_into(">I", batch, 17, crc32c.crc32c(bytes(batch[21:])))
    return bytes(batch)


def write_segment(dir_path: str, base: int, batches: list[tuple[int, list]],
                  index_interval_bytes: int = 4096) -> None:
    """Write ``.log``, ``.index`` (entry per index.interval.bytes) and ``.timeindex``."""
    log = bytearray()
    index = bytearray()
    tindex = bytearray()
    since = 0
    max_ts, max_ts_off = -1, base
    for first, recs in batches:
        data = encode_batch(first, recs)
        pos = len(log)
        last = first + len(recs) - 1
        bmax = max(r[2] for r in recs)
        if bmax > max_ts:
            max_ts, max_ts_off = bmax, last
        if since > index_interval_bytes:
            index += struct.pack(">ii", last - base, pos)
            tindex += struct.pack(">qi", max_ts, max_ts_off - base)
            since = 0
        since += len(data)
        log += data
    if not tindex or struct.unpack_from(">q", tindex, len(tindex) - 12)[0] < max_ts:
        tindex += struct.pack(">qi", max_ts, max_ts_off - base)
    stem = os.path.join(dir_path, f"{base:020d}")
    for suffix, blob in ((".log", log), (".index", index), (".timeindex", tindex)):
        with open(stem + suffix, "wb") as f:
            f.write(blob)


def write_checkpoint(path: str, entries: list[str]) -> None:
    with open(path, "w", encoding="utf-8") as f:
        f.write(f"0\n{len(entries)}\n" + "".join(e + "\n" for e in entries))


def write_meta_properties(log_dir: str, broker_id: int, cluster_id: str) -> None:
    with open(os.path.join(log_dir, "meta.properties"), "w", encoding="utf-8") as f:
        f.write(f"#\n#{time.ctime()}\nversion=0\nbroker.id={broker_id}\n"
                f"cluster.id={cluster_id}\n")


def write_partition_metadata(dir_path: str, topic_id: str) -> None:
    with open(os.path.join(dir_path, "partition.metadata"), "w", encoding="utf-8") as f:
        f.write(f"version: 0\ntopic_id: {topic_id}\n")
