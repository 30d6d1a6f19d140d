"""Batch-validator bench: kafkapy.native.validate_batch, C walk vs pure-Python walk.

Shapes (records per batch x value size, keyed records, one header-free batch each):
``1k``: 64 x 1 KiB, ``100b``: 500 x 100 B; each uncompressed, lz4 and zstd (batches
built by kafka-python's DefaultRecordBatchBuilder, as a producer writes them).  For
each (shape, codec, walk) the validator runs on the same batch for about
``--seconds`` (a bounded number of rounds, sized from a calibration run); the table
gives batches/s, records/s and µs per batch, plus ``decompress`` (codec call alone)
to show what part of a compressed batch's cost is the codec.  Results are printed and
appended to ``bench/results/validate.md``.

The produce path's budget: the broker appends ~0.2 M (1 KiB) to ~0.9 M (100 B)
records/s on this machine (bench/results/latest.md), so the validator at N records/s
costs about that rate / N of one core.

Usage: python bench/bench_validate.py [--seconds S]
"""
from __future__ import annotations

import argparse
import datetime
import os
import pathlib
import platform
import random
import time

from kafka.record.default_records import DefaultRecordBatchBuilder

from kafkapy import native
from kafkapy.native import codecs

ROOT = pathlib.Path(__file__).resolve().parent.parent
RESULTS = ROOT / "bench" / "results" / "validate.md"
SHAPES = {"1k": (64, 1024), "100b": (500, 100)}
CODECS = {"none": 0, "lz4": 3, "zstd": 4}
MAX_ROUNDS = 1_000_000


def build(count: int, size: int, codec: int, now: int) -> bytes:
    """A producer-shaped batch: keys, text-like values (compressible as real data is)."""
    rng = random.Random(count * 31 + size)
    words = [bytes(rng.choice(b"abcdefghijklmnopqrstuvwxyz") for _ in range(rng.randint(2, 9)))
             for _ in range(200)]
    builder = DefaultRecordBatchBuilder(magic=2, compression_type=codec, is_transactional=False,
                                        producer_id=-1, producer_epoch=-1, base_sequence=-1,
                                        batch_size=1 << 22)
    for i in range(count):
        value = b" ".join(rng.choice(words) for _ in range(size))[:size]
        builder.append(i, timestamp=now + i, key=b"key-%d" % (i % 97), value=value, headers=[])
    return bytes(builder.build())


def rate(fn, seconds: float) -> float:
    """Calls of ``fn`` per second over about ``seconds`` (calibrated, bounded rounds)."""
    start = time.perf_counter()
    fn()
    one = max(time.perf_counter() - start, 1e-7)
    rounds = max(3, min(MAX_ROUNDS, int(seconds / one)))
    start = time.perf_counter()
    for _ in range(rounds):
        fn()
    return rounds / (time.perf_counter() - start)


def measure(seconds: float) -> list[tuple]:
    now = int(time.time() * 1000)
    rows = []
    walks = {"C": native._native_walk, "python": None}
    for shape, (count, size) in SHAPES.items():
        for codec_name, codec in CODECS.items():
            batch = build(count, size, codec, now)
            for walk_name, walk in walks.items():
                if walk_name == "C" and walk is None:
                    continue
                native._native_walk, native._warned = walk, True
                verdict = native.validate_batch(batch, topic_partition="b-0", now_ms=now)
                assert verdict.ok and verdict.records_count == count, verdict
                per_s = rate(lambda: native.validate_batch(batch, topic_partition="b-0",
                                                           now_ms=now), seconds)
                rows.append((shape, codec_name, walk_name, len(batch), per_s, per_s * count))
            if codec:
                payload = memoryview(batch)[61:]
                per_s = rate(lambda: codecs.decompress(codec, payload, 1 << 30), seconds)
                rows.append((shape, codec_name, "decompress", len(batch), per_s, per_s * count))
    native._native_walk = walks["C"]
    return rows


def table(rows: list[tuple]) -> str:
    lines = ["| shape | codec | walk | batch bytes | batches/s | records/s | µs/batch |",
             "|---|---|---|---:|---:|---:|---:|"]
    for shape, codec, walk, size, per_s, rec_s in rows:
        lines.append(f"| {shape} | {codec} | {walk} | {size:,} | {per_s:,.0f} | {rec_s:,.0f} |"
                     f" {1e6 / per_s:,.1f} |")
    return "\n".join(lines)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--seconds", type=float, default=1.0, help="per measurement")
    args = parser.parse_args()
    if not native.NATIVE:
        print("warning: the C extension is not built; only the Python walk is measured")
    load_before = os.getloadavg()[0]
    rows = measure(args.seconds)
    stamp = datetime.datetime.now(datetime.timezone.utc).strftime("%Y-%m-%dT%H:%M:%SZ")
    text = (f"\n## {stamp}\n\nMachine: {platform.platform()}, Python "
            f"{platform.python_version()}; {args.seconds} s per row; shapes 1k = 64 x 1 KiB, "
            f"100b = 500 x 100 B records per batch (kafka-python builder); 1-min load "
            f"average {load_before:.1f} before, {os.getloadavg()[0]:.1f} after (2 cores shared)."
            f"\n\n"
            f"{table(rows)}\n")
    print(text)
    RESULTS.parent.mkdir(parents=True, exist_ok=True)
    if not RESULTS.exists():
        RESULTS.write_text("# kafkapy.native.validate_batch benchmark (bench/bench_validate.py)"
                           "\n")
    with RESULTS.open("a") as out:
        out.write(text)


if __name__ == "__main__":
    main()
