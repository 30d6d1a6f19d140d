"""bench/procstats.py's scheduler figures: a process's threads' time on a CPU, runnable
but waiting, and times switched in, from /proc schedstat; what moved between two readings;
and the rf3 report's rows of them (run_bench.py)."""
from __future__ import annotations

import os
import threading
import time

from tests.support.bench_scripts import load_bench_script

ps = load_bench_script("procstats.py", "bench_procstats")
rb = load_bench_script("run_bench.py", "bench_run_bench_procstats")


def _spin(seconds: float) -> None:
    end = time.thread_time() + seconds
    while time.thread_time() < end:
        pass


def test_a_process_threads_are_summed():
    before = ps.sched_stats(os.getpid())
    worker = threading.Thread(target=_spin, args=(0.05,))
    worker.start()
    _spin(0.05)
    worker.join()
    after = ps.sched_stats(os.getpid())
    moved = ps.sched_delta(before, after)
    # Two threads spun 50 ms of CPU each; the finished one no longer counts in ``after``,
    # so at least this thread's 50 ms moved.
    assert moved["run_s"] >= 0.05
    assert moved["switches"] >= 1 and moved["runnable_wait_s"] >= 0
    assert moved["wait_per_switch_us"] is not None


def test_a_gone_process_reads_as_nothing():
    assert ps.sched_stats(2 ** 22 + 12345) == (0, 0, 0)


def test_the_delta_and_the_wait_per_switch():
    moved = ps.sched_delta((1_000, 2_000, 10), (3_001_000, 1_002_000, 20))
    assert moved == {"run_s": 0.003, "runnable_wait_s": 0.001, "switches": 10,
                     "wait_per_switch_us": 100.0}
    assert ps.sched_delta((5, 5, 5), (5, 5, 5))["wait_per_switch_us"] is None


def test_the_report_rows_show_rf3_and_rf1_waits():
    producers = [{"run_s": 1.0, "runnable_wait_s": 3.0, "switches": 1000},
                 {"run_s": 1.0, "runnable_wait_s": 1.0, "switches": 3000}]
    summed = rb._summed_sched(producers)
    assert summed == {"run_s": 2.0, "runnable_wait_s": 4.0, "switches": 4000,
                      "wait_per_switch_us": 1000.0}
    w = {"produce": {"broker": {"sched": {"wait_per_switch_us": 219.7}},
                     "driver_sched": summed},
         "rf1_produce": {"broker": {"sched": {"wait_per_switch_us": 70.4}}}}
    rows = {label: get(w) for label, get, _, _ in rb.RF3_ROWS}
    assert rows["broker wait for a CPU per wake-up µs, RF 3 / RF 1"] == "220 / 70"
    assert rows["driver wait for a CPU per wake-up µs, RF 3 / RF 1"] == "1,000 / —"
