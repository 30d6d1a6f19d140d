"""`make fuzz`: mutated frames of every advertised API and version against a fresh broker.

The same seeds and mutations as tests/fuzz/test_fuzz_frames.py, for --frames frames
(default 10^6) in batches; after each batch a Metadata request on a new connection must be
answered within a second.  Reports frames sent, frames/s, the slowest Metadata answer, and
whether the broker stayed up without logging a traceback; appends to bench/results/fuzz.md.
"""
from __future__ import annotations

import argparse
import random
import sys
import tempfile
import time
from datetime import datetime, timezone
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

from tests.support.broker_process import BrokerProcess  # noqa: E402
from tests.support.fuzz_serving import _topic, assert_serving, send_batch  # noqa: E402
from tests.support.wire import WireClient  # noqa: E402


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--frames", type=int, default=1_000_000, help="frames to send")
    parser.add_argument("--batch", type=int, default=25, help="frames between Metadata checks")
    parser.add_argument("--seed", type=int, default=1, help="random seed (runs are repeatable)")
    args = parser.parse_args()
    with tempfile.TemporaryDirectory() as tmp:
        broker = BrokerProcess(Path(tmp) / "logs").start()
        try:
            admin = WireClient(broker.bootstrap)
            admin.request(3, 4, topics=[_topic()], allow_auto_topic_creation=True)
            admin.close()
            report = _run(broker, args)
        finally:
            broker.stop()
    print(report)
    with open(ROOT / "bench" / "results" / "fuzz.md", "a") as out:
        out.write(report + "\n")
    return 0 if "FAILED" not in report else 1


def _run(broker: BrokerProcess, args) -> str:
    rng = random.Random(args.seed)
    started = time.monotonic()
    slowest = 0.0
    sent = 0
    failure = ""
    while sent < args.frames:
        n = min(args.batch, args.frames - sent)
        send_batch(broker.bootstrap, rng, n)
        sent += n
        check = time.monotonic()
        try:
            assert_serving(broker.bootstrap)
        except Exception as exc:        # a failed check ends the run: the figure says so
            failure = f"Metadata check failed after {sent} frames: {exc!r}"
            break
        slowest = max(slowest, time.monotonic() - check)
    elapsed = time.monotonic() - started
    tracebacks = broker.output_path.read_text(errors="replace").count("Traceback")   # whole log
    alive = broker.proc.poll() is None
    verdict = "ok" if alive and not tracebacks and not failure else "FAILED"
    stamp = datetime.now(timezone.utc).strftime("%Y-%m-%dT%H:%MZ")
    return (f"| {stamp} | seed {args.seed} | {sent:,} frames in {elapsed:.0f} s "
            f"({sent / elapsed:,.0f}/s) | slowest Metadata {slowest * 1000:.0f} ms | "
            f"tracebacks {tracebacks} | broker {'up' if alive else 'DOWN'} | {verdict} "
            f"{failure}|")


if __name__ == "__main__":
    sys.exit(main())
