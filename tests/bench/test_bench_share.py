"""bench/bench_share.py's own parts: ShareBench.java's result line, the figures made of it, the
medians and the report; then one small run of the share case (Java 4.3 share consumers)
against a real kafkapy broker.  No timing is asserted."""
from __future__ import annotations

import argparse

import pytest

from tests.support.bench_scripts import load_bench_script
from tests.support.broker_process import BrokerProcess
from tests.support.java_clients import client_jars

bs = load_bench_script("bench_share.py", "bench_share")

LINE = ("RESULT acked=1000 first_ns=1000000000 all_flowing_ns=1250000000 last_ns=3000000000 "
        "acked_all_flowing=875 redelivered=2 errors=0 p50_us=1500.0 p99_us=9000.5 max_us=12000.0 "
        "per_member=200,200,200,200,200")


def test_the_result_line_parses_and_other_lines_do_not():
    r = bs.parse_result(LINE)
    assert r == {"acked": 1000, "first_ns": 1_000_000_000, "all_flowing_ns": 1_250_000_000,
                 "last_ns": 3_000_000_000, "acked_all_flowing": 875, "redelivered": 2, "errors": 0, "p50_us": 1500.0,
                 "p99_us": 9000.5, "max_us": 12000.0, "per_member": [200] * 5}
    assert bs.parse_result("ERROR m0 something") is None


def test_figures_are_records_over_the_span_from_first_poll_to_last_ack():
    f = bs.figures(bs.parse_result(LINE), records=1000)
    assert f["ok"] and f["records_per_s"] == 500.0 and f["span_s"] == 2.0
    assert f["all_flowing_records_per_s"] == 500.0          # 875 records in 1.75 s
    assert (f["p50_ms"], f["p99_ms"], f["all_flowing_s"]) == (1.5, 9.001, 0.25)
    assert not bs.figures(bs.parse_result(LINE), records=1001)["ok"]
    never = bs.parse_result(LINE.replace("all_flowing_ns=1250000000", "all_flowing_ns=-1"))
    assert bs.figures(never, records=1000)["all_flowing_s"] is None
    assert bs.figures(never, records=1000)["all_flowing_records_per_s"] is None


def test_medians_count_only_runs_that_acknowledged_everything():
    runs = [{"ok": True, "records_per_s": r, "p50_ms": 1.0, "p99_ms": p, "all_flowing_s": 0.1,
             "broker_cpu_ms_per_1k": 90.0, "redelivered": 1} for r, p in ((100.0, 5.0), (300.0, 7.0))]
    runs.append({"ok": False, "records_per_s": 1e9, "error": "x"})
    s = bs.summarize(runs)
    assert (s["runs_ok"], s["runs"], s["records_per_s"], s["p99_ms"]) == (2, 3, 200.0, 6.0)
    assert s["rate_range"] == (100.0, 300.0) and s["redelivered"] == 2
    assert bs.summarize([{"ok": False}])["records_per_s"] is None


def test_the_report_has_a_row_per_case_and_names_failed_runs():
    rows = [{"label": "a share row", "partitions": 1, "status": "ok",
             "summary": bs.summarize([{"ok": True, "records_per_s": 1234.0, "p50_ms": 1.0,
                                       "p99_ms": 2.0, "all_flowing_s": 0.5,
                                       "broker_cpu_ms_per_1k": 95.0, "redelivered": 0}]),
             "runs": [{"ok": False, "error": "boom"}]},
            {"label": "Kafka row", "partitions": 5, "status": "unavailable", "error": "no kafka",
             "runs": []}]
    doc = {"when": "now", "git_commit": "abc", "args": {"repeat": 1, "records": 10,
                                                         "record_size": 1024},
           "host": {"cpus": 2, "mem_gib": 1, "platform": "p", "python": "3", "java": "j",
                    "confluent_kafka": "2"}, "rows": rows}
    text = bs.render(doc)
    assert "| a share row | 1 | 1 of 1 | **1,234** | 1,234–1,234 | – | 1.0 | **2.0** |" in text
    assert "unavailable: no kafka" in text
    assert "- a share row: boom" in text


def test_unknown_cases_are_refused():
    assert [c.key for c in bs.select_cases("kafkapy-classic")] == ["kafkapy-classic"]
    with pytest.raises(SystemExit):
        bs.select_cases("nope")


@pytest.mark.java
@pytest.mark.timeout(240)
def test_one_small_share_run_acknowledges_every_record(tmp_path):
    client_jars((bs.JAVA_CLIENT,))
    java = bs.JavaBench(tmp_path)
    java.prepare()
    broker = BrokerProcess(tmp_path / "logs", overrides={
        **bs.KAFKAPY_SHARE, "group.share.heartbeat.interval.ms": "1000",
        "group.share.min.heartbeat.interval.ms": "500"}).start()
    broker.pid = broker.proc.pid
    broker.output_tail = lambda n=3000: broker.output()[-n:]
    try:
        args = argparse.Namespace(records=2000, record_size=1024, run_timeout=90.0)
        case = bs.select_cases("kafkapy-share-explicit")[0]
        run = bs.one_run(case, broker, java, args, 0, tmp_path)
    finally:
        broker.stop()
    assert run["ok"], run
    assert run["acked"] >= 2000 and run["errors"] == 0 and run["p99_ms"] > 0
