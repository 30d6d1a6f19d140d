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


def _phase(rps: float, acked: int, broker_cpu_s: float) -> dict:
    return {"records_per_s": rps, "records_acked": acked,
            "broker": {"cpu_seconds": broker_cpu_s}}


def test_the_rf3_report_gives_the_brokers_cpu_per_thousand_records_of_each_client():
    w = {"produce": _phase(50_000.0, 300_000, 6.0), "rf1_produce": _phase(150_000.0, 300_000, 1.5),
         "java_rf3": _phase(45_000.0, 300_000, 6.3), "java_rf1": _phase(90_000.0, 300_000, 1.8)}
    assert rb._cpu_per_records(w, "produce", "rf1_produce") == "20.0 / 5.0"
    assert rb._cpu_per_records(w, "java_rf3", "java_rf1") == "21.0 / 6.0"
    assert rb._cpu_per_records(w, "java_rf3", "missing") == "21.0 / —"
    assert rb._cpu_per_records(w, "missing", "other") is None
    java = {"driver_process_cpu_s": 9.0, "wall_s": 10.0}
    assert rb._java_cpu_pct(java) == 90.0 and rb._java_cpu_pct(None) is None


def test_the_rf3_goal_lines_put_the_java_producers_figures_beside_librdkafkas():
    kafkapy = {"produce": _phase(50_000.0, 300_000, 6.0),
               "rf1_produce": _phase(200_000.0, 300_000, 1.5),
               "java_rf3": _phase(45_000.0, 300_000, 6.3),
               "java_rf1": _phase(90_000.0, 300_000, 1.8)}
    kafka = {"produce": _phase(16_000.0, 300_000, 30.0),
             "java_rf3": _phase(20_000.0, 300_000, 25.0)}
    lines = rb._rf3_goal_lines({"kafkapy3": kafkapy, "kafka3": kafka})
    assert lines[0] == ("kafkapy acks=all RF 3: 50,000 rec/s; RF 3 / RF 1 (same producers) "
                        "0.25; RF 3 / Kafka 3.9 RF 3 3.12x.")
    assert lines[2] == ("With Kafka's Java producer (one process): kafkapy RF 3 45,000 rec/s; "
                        "RF 3 / RF 1 0.50; RF 3 / Kafka 3.9 RF 3 2.25x; brokers' CPU ms per "
                        "1,000 records RF 3 / RF 1 21.0 / 6.0.")
    del kafkapy["java_rf3"]
    assert not any("Java" in line for line in rb._rf3_goal_lines({"kafkapy3": kafkapy}))


def test_each_repetition_of_rf3_keeps_the_java_producers_rates_for_the_report():
    def run(rep: int, rdk: float, java3: float, java1: float) -> dict:
        return {"repetition": rep, "ok": True, "produce": {"records_per_s": rdk},
                "consume": {}, "rf1_produce": {"records_per_s": 4 * rdk},
                "java_rf3": {"records_per_s": java3}, "java_rf1": {"records_per_s": java1}}
    kafkapy = rb._median_run("rf3", [run(1, 60_000.0, 50_000.0, 90_000.0),
                                     run(2, 50_000.0, 45_000.0, 80_000.0)])
    kafka = rb._median_run("rf3", [run(1, 15_000.0, 40_000.0, 90_000.0),
                                   run(2, 16_000.0, 30_000.0, 85_000.0)])
    assert kafkapy["repeats"][0]["java_rf3_rps"] == 50_000.0
    assert kafkapy["repeats"][1]["rf1_produce_rps"] == 200_000.0
    lines = rb._rf3_repeat_lines({"kafkapy3": kafkapy, "kafka3": kafka})
    java = lines[lines.index("The Java producer in each repetition (RF 3 rec/s, RF 1 rec/s):"):]
    assert java[4:6] == ["| 1 | 50,000, 90,000 | 40,000, 90,000 | 1.25x |",
                         "| 2 | 45,000, 80,000 | 30,000, 85,000 | 1.50x |"]
    for r in kafkapy["repeats"] + kafka["repeats"]:
        del r["java_rf3_rps"]
    assert "The Java producer in each repetition (RF 3 rec/s, RF 1 rec/s):" not in \
        rb._rf3_repeat_lines({"kafkapy3": kafkapy, "kafka3": kafka})
