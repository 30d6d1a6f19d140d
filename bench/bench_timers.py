"""Timer bench: kafkapy's timing wheel vs one event-loop handle per timer.

Inserts N timers (default 1,000,000) with random delays of 1 ms .. 60 s, then cancels
them all, for:
- ``wheel``: ``kafkapy.purgatory.Timer`` (one loop handle in total) with minimal tasks;
- ``call_later``: ``loop.call_later`` handles + ``handle.cancel()`` on uvloop when
  installed, and on the stock asyncio loop for reference.
The loop is never run: this measures scheduling and cancelling, not firing.

Each (implementation, measure) runs in a fresh interpreter so one run's garbage and
heap growth do not leak into the next: a timing run without tracemalloc (it slows
allocation several-fold), then a memory run with it (peak over insert + cancel; plus
RSS growth from /proc).  Prints a table; writes ``bench/results/timers.json``.

Usage: python bench/bench_timers.py [--count N] [--seed S]
"""
from __future__ import annotations

import argparse
import asyncio
import json
import pathlib
import platform
import random
import subprocess
import sys
import time
import tracemalloc

ROOT = pathlib.Path(__file__).resolve().parent.parent
RESULTS = ROOT / "bench" / "results" / "timers.json"
MAX_DELAY_MS = 60_000


def new_loop(kind: str) -> asyncio.AbstractEventLoop:
    if kind == "uvloop":
        import uvloop
        return uvloop.new_event_loop()
    return asyncio.new_event_loop()


def rss_kb() -> int:
    with open("/proc/self/status") as f:
        for line in f:
            if line.startswith("VmRSS:"):
                return int(line.split()[1])
    return 0


def wheel_run(loop, delays: list[int]) -> tuple[float, float]:
    sys.path.insert(0, str(ROOT))
    from kafkapy.purgatory.timer import Timer, TimerTask

    class Noop(TimerTask):
        __slots__ = ()

        def run(self) -> None:
            pass

    timer = Timer(loop)
    t0 = time.perf_counter()
    tasks = []
    for d in delays:
        task = Noop(d)
        timer.add(task)
        tasks.append(task)
    t1 = time.perf_counter()
    for task in tasks:
        task.cancel()
    t2 = time.perf_counter()
    assert timer.size == 0
    timer.close()
    return t1 - t0, t2 - t1


def call_later_run(loop, delays: list[int]) -> tuple[float, float]:
    def noop() -> None:
        pass

    call_later = loop.call_later
    t0 = time.perf_counter()
    handles = [call_later(d / 1000.0, noop) for d in delays]
    t1 = time.perf_counter()
    for h in handles:
        h.cancel()
    t2 = time.perf_counter()
    return t1 - t0, t2 - t1


def one(impl: str, loop_kind: str, measure: str, count: int, seed: int) -> dict:
    """Run one contender in this process and return its numbers."""
    rng = random.Random(seed)
    delays = [rng.randint(1, MAX_DELAY_MS) for _ in range(count)]
    loop = new_loop(loop_kind)
    run = wheel_run if impl == "wheel" else call_later_run
    if measure == "time":
        insert_s, cancel_s = run(loop, delays)
        loop.close()
        return {"insert_s": insert_s, "cancel_s": cancel_s}
    rss0 = rss_kb()
    tracemalloc.start()
    run(loop, delays)
    _, peak = tracemalloc.get_traced_memory()
    tracemalloc.stop()
    rss1 = rss_kb()
    loop.close()
    return {"peak_mib": peak / 2**20, "rss_growth_mib": (rss1 - rss0) / 1024}


def in_subprocess(impl: str, loop_kind: str, measure: str, count: int, seed: int) -> dict:
    out = subprocess.run(
        [sys.executable, __file__, "--one", impl, loop_kind, measure,
         "--count", str(count), "--seed", str(seed)],
        check=True, capture_output=True, text=True)
    return json.loads(out.stdout.strip().splitlines()[-1])


def contenders() -> list[tuple[str, str]]:
    try:
        import uvloop  # noqa: F401
        main_loop = "uvloop"
    except ImportError:
        main_loop = "asyncio"
    rows = [("wheel", main_loop), ("call_later", main_loop)]
    if main_loop == "uvloop":
        rows.append(("call_later", "asyncio"))
    return rows


def table(rows: list[dict], count: int) -> str:
    head = (f"{'implementation':<28}{'insert s':>10}{'ns/insert':>11}{'cancel s':>10}"
            f"{'ns/cancel':>11}{'peak MiB':>10}{'RSS+ MiB':>10}")
    lines = [head, "-" * len(head)]
    for r in rows:
        lines.append(
            f"{r['impl']:<28}{r['insert_s']:>10.3f}{r['insert_s'] / count * 1e9:>11.0f}"
            f"{r['cancel_s']:>10.3f}{r['cancel_s'] / count * 1e9:>11.0f}"
            f"{r['peak_mib']:>10.1f}{r['rss_growth_mib']:>10.1f}")
    return "\n".join(lines)


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--count", type=int, default=1_000_000)
    ap.add_argument("--seed", type=int, default=42)
    ap.add_argument("--one", nargs=3, metavar=("IMPL", "LOOP", "MEASURE"), help=argparse.SUPPRESS)
    args = ap.parse_args()
    if args.one:
        print(json.dumps(one(*args.one, args.count, args.seed)))
        return
    rows = []
    for impl, loop_kind in contenders():
        name = ("kafkapy Timer (wheel)" if impl == "wheel" else "loop.call_later") + f" [{loop_kind}]"
        row = {"impl": name, "loop": loop_kind}
        row.update(in_subprocess(impl, loop_kind, "time", args.count, args.seed))
        row.update(in_subprocess(impl, loop_kind, "memory", args.count, args.seed))
        rows.append(row)
        print(f"done: {name}", file=sys.stderr)
    print(f"{args.count:,} timers, delays 1 ms .. {MAX_DELAY_MS // 1000} s, insert all then cancel all")
    print(table(rows, args.count))
    RESULTS.parent.mkdir(parents=True, exist_ok=True)
    RESULTS.write_text(json.dumps({
        "count": args.count, "max_delay_ms": MAX_DELAY_MS, "seed": args.seed,
        "python": platform.python_version(), "machine": platform.machine(),
        "when": time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime()),
        "results": rows,
    }, indent=2) + "\n")
    print(f"wrote {RESULTS.relative_to(ROOT)}")


if __name__ == "__main__":
    main()
