"""bench/workloads.py's and run_bench.py's driver priority: a driver process lowers its own
CPU priority by what the parent's environment says (rf3 runs its drivers at nice 19), and
the rf3 report shows the producers' CPU with the niceness they ran at."""
from __future__ import annotations

import os
import subprocess
import sys

from tests.support.bench_scripts import load_bench_script
from tests.support.broker_process import ROOT

wl = load_bench_script("workloads.py", "bench_workloads")
rb = load_bench_script("run_bench.py", "bench_run_bench")

_CHILD = ("import sys; sys.path.insert(0, 'bench'); import workloads, os; "
          "before = os.nice(0); after = workloads.yield_cpu(); print(before, after, os.nice(0))")


def _child(env_value: str | None) -> tuple[int, int, int]:
    env = {k: v for k, v in os.environ.items() if k != wl.DRIVER_NICE_ENV}
    if env_value is not None:
        env[wl.DRIVER_NICE_ENV] = env_value
    out = subprocess.run([sys.executable, "-c", _CHILD], cwd=ROOT, env=env, check=True,
                         capture_output=True, text=True, timeout=60).stdout.split()
    return tuple(int(x) for x in out)


def test_a_driver_process_lowers_its_priority_by_what_the_environment_says():
    before, after, now = _child("19")
    assert after == now == min(19, before + 19)


_GROUP_CHILD = ("import sys; sys.path.insert(0, 'bench'); import workloads, os; "
                "workloads.yield_cpu(); print(os.getsid(0) == os.getpid()); "
                "print(open('/proc/self/autogroup').read().split()[-1] "
                "if os.path.exists('/proc/self/autogroup') else 'none')")


def test_a_niced_driver_gets_a_session_and_an_autogroup_of_its_own_at_that_niceness():
    """With autogroups a niceness ranks a process only inside its session's group: the
    driver leaves the bench's session and niceness its own group (the brokers, each in a
    session of its own, then run before it)."""
    env = dict(os.environ, **{wl.DRIVER_NICE_ENV: "19"})
    own_session, group_nice = subprocess.run(
        [sys.executable, "-c", _GROUP_CHILD], cwd=ROOT, env=env, check=True,
        capture_output=True, text=True, timeout=60).stdout.split()
    assert own_session == "True"
    switch = "/proc/sys/kernel/sched_autogroup_enabled"
    if os.path.exists(switch) and open(switch).read().strip() == "1":    # this machine's
        assert group_nice == "19"


def test_without_the_setting_the_priority_is_left_alone():
    for value in (None, "0", ""):
        before, after, now = _child(value)
        assert before == after == now


def test_the_rf3_report_shows_the_producers_cpu_and_their_niceness():
    phase = {"driver_cpu_s": 14.0, "seconds": 20.0, "driver_nice": 19}
    assert rb._driver_cpu(phase) == "70 (nice 19)"
    assert rb._driver_cpu({"driver_cpu_s": 3.0, "seconds": 10.0}) == "30 (nice 0)"
    assert rb._driver_cpu({}) is None and rb._driver_cpu(None) is None
    labels = [row[0] for row in rb.RF3_ROWS]
    assert "driver CPU % produce (3 producers, nice)" in labels
