"""bench/bench_rebalance.py's own parts: the member event lines, the analysis that decides when
a group is whole and flowing again, the summary and the report; then one run of the whole
machinery (Java 4.3 members, the producer process) against a real kafkapy broker.

Job: check, on made-up event logs, that the figures mean what the report says (the time until
every partition's final owner consumed it after the join and after acquiring it; a record read
before a re-assignment or before the join never counts; a group owning a partition twice,
missing one or unbalanced is not whole), and that one real run finishes with a whole group.
No timing is asserted.
"""
from __future__ import annotations

import argparse

import pytest

from tests.support.bench_scripts import load_bench_script
from tests.support.broker_process import BrokerProcess
from tests.support.java_clients import client_jars


rb = load_bench_script("bench_rebalance.py", "bench_rebalance")
E = rb.Event


def test_member_lines_parse_into_events_and_other_lines_are_ignored():
    assert rb.parse_line("ASSIGNED 2500000000 3,1,2\n") == E(2.5, "ASSIGNED", (3, 1, 2))
    assert rb.parse_line("ASSIGNED 1000000000\n") == E(1.0, "ASSIGNED", ())
    assert rb.parse_line("FIRST 1000000000 7") == E(1.0, "FIRST", (7,))
    assert rb.parse_line("REVOKED -1000000000 0") == E(-1.0, "REVOKED", (0,))
    assert rb.parse_line("ERROR 1000000000 org.x.Boom: no") == E(1.0, "ERROR", (), "org.x.Boom: no")
    assert rb.parse_line("[main] ERROR something the client logged") is None
    assert rb.parse_line("ASSIGNED soon 1") is None
    assert rb.parse_line("FIRST 1000 x") is None
    assert rb.parse_line("") is None


def _settled() -> dict[str, list]:
    """Two members owning 4 partitions each, every partition consumed, all before t = 10."""
    return {"m1": [E(1.0, "ASSIGNED", (0, 1, 2, 3)), E(1.5, "FIRST", (0,)), E(1.5, "FIRST", (1,)),
                   E(1.6, "FIRST", (2,)), E(1.6, "FIRST", (3,))],
            "m2": [E(1.0, "ASSIGNED", (4, 5, 6, 7))] + [E(1.7, "FIRST", (p,)) for p in range(4, 8)]}


def test_a_settled_group_is_whole_and_flowing():
    got = rb.analyse(_settled(), 8, float("-inf"))
    assert got["complete"] and got["missing"] is None
    assert got["owned"] == {"m1": 4, "m2": 4}


def test_eager_join_counts_from_the_join_to_the_last_partition_consumed_by_its_final_owner():
    ev = _settled()
    ev["m1"] += [E(10.2, "FIRST", (0,)), E(11.0, "REVOKED", (0, 1, 2, 3)),
                 E(12.0, "ASSIGNED", (0, 1, 2)), E(12.1, "FIRST", (0,)), E(12.2, "FIRST", (1,)),
                 E(12.3, "FIRST", (2,))]
    ev["m2"] += [E(11.2, "REVOKED", (4, 5, 6, 7)), E(12.0, "ASSIGNED", (3, 4, 5)),
                 E(12.4, "FIRST", (3,)), E(12.4, "FIRST", (4,))]
    ev["new"] = [E(10.0, "SUBSCRIBE"), E(11.9, "ASSIGNED", ()), E(12.0, "ASSIGNED", (6, 7)),
                 E(12.5, "FIRST", (6,)), E(12.6, "FIRST", (7,))]
    got = rb.analyse(ev, 8, 10.0, "new")
    assert not got["complete"]
    assert got["missing"] == "1 partitions not consumed yet by their owner, e.g. [5]"
    ev["m2"].append(E(13.0, "FIRST", (5,)))
    got = rb.analyse(ev, 8, 10.0, "new")
    assert got["complete"]
    assert got["newcomer_assigned_s"] == pytest.approx(2.0)   # the first non-empty assignment
    assert got["all_assigned_s"] == pytest.approx(2.0)
    assert got["all_flowing_s"] == pytest.approx(3.0)
    assert got["revoked"] == 8
    assert got["moved"] == 3                                  # 3 to m2, 6 and 7 to the newcomer
    assert got["owned"] == {"m1": 3, "m2": 3, "new": 2}


def test_a_kept_partition_flows_again_only_with_a_record_read_after_the_join():
    ev = _settled()
    ev["m1"] += [E(11.0, "REVOKED", (3,)), E(11.1, "ASSIGNED", ())]
    ev["m2"] += [E(11.0, "REVOKED", (7,))]
    ev["new"] = [E(10.0, "SUBSCRIBE"), E(13.0, "ASSIGNED", (3, 7)), E(13.2, "FIRST", (3,)),
                 E(13.3, "FIRST", (7,))]
    got = rb.analyse(ev, 8, 10.0, "new")
    assert not got["complete"] and "6 partitions not consumed yet" in got["missing"]
    ev["m1"] += [E(10.1, "FIRST", (p,)) for p in (0, 1, 2)]
    ev["m2"] += [E(10.1, "FIRST", (p,)) for p in (4, 5, 6)]
    got = rb.analyse(ev, 8, 10.0, "new")
    assert got["complete"]
    assert got["all_assigned_s"] == pytest.approx(3.0)
    assert got["all_flowing_s"] == pytest.approx(3.3)
    assert got["revoked"] == 2 and got["moved"] == 2


def test_a_record_read_before_the_partition_came_back_does_not_count():
    ev = _settled()
    ev["m1"] += [E(10.5, "FIRST", (0,)), E(11.0, "REVOKED", (0,)), E(12.0, "ASSIGNED", (0,))]
    ev["m1"] += [E(10.1, "FIRST", (p,)) for p in (1, 2, 3)]
    ev["m2"] += [E(10.1, "FIRST", (p,)) for p in range(4, 8)]
    got = rb.analyse(ev, 8, 10.0)
    assert not got["complete"] and "e.g. [0]" in got["missing"]


@pytest.mark.parametrize("change, missing", [
    ({"m2": [E(2.0, "ASSIGNED", (0,))]}, "partition 0 owned by m1 and m2"),
    ({"m2": [E(2.0, "REVOKED", (4, 5))]}, "2 partitions unowned, e.g. [4, 5]"),
    ({"m3": [E(2.0, "ASSIGNED", ())]}, "not balanced: {'m1': 4, 'm2': 4, 'm3': 0}"),
])
def test_a_group_that_is_not_whole_is_not_complete(change, missing):
    ev = _settled()
    for member, extra in change.items():
        ev.setdefault(member, []).extend(extra)
    got = rb.analyse(ev, 8, float("-inf"))
    assert not got["complete"] and got["missing"] == missing


def test_timeline_keeps_assignment_changes_relative_to_the_join():
    ev = _settled()
    ev["new"] = [E(10.0, "SUBSCRIBE"), E(12.0, "ASSIGNED", (6, 7)), E(12.5, "FIRST", (6,))]
    assert rb.timeline(ev, 10.0) == [[0.0, "new", "SUBSCRIBE", []],
                                     [2000.0, "new", "ASSIGNED", [6, 7]]]


def test_summary_is_the_median_of_the_runs_that_finished():
    runs = [{"status": "ok", "all_flowing_s": 3.0, "newcomer_assigned_s": 1.0, "revoked": 60},
            {"status": "failed", "error": "no"},
            {"status": "ok", "all_flowing_s": 5.0, "newcomer_assigned_s": 2.0, "revoked": 60},
            {"status": "ok", "all_flowing_s": 4.0, "newcomer_assigned_s": 9.0, "revoked": 15}]
    s = rb.summarise(runs)
    assert s["runs"] == 4 and s["ok"] == 3
    assert s["all_flowing_s"] == {"median": 4.0, "min": 3.0, "max": 5.0}
    assert s["newcomer_assigned_s"]["median"] == 2.0
    assert s["revoked"]["median"] == 60
    assert "moved" not in s


def test_cases_are_selected_by_key_and_broker_kind():
    assert [c.key for c in rb.select_cases("kafka-coop,kafkapy-eager")] == [
        "kafkapy-eager", "kafka-coop"]
    assert all(c.broker.kind == "kafka" for c in rb.select_cases(None, "kafka"))
    assert len(rb.select_cases(None)) == len(rb.CASES)
    with pytest.raises(ValueError, match="unknown case"):
        rb.select_cases("kafkapy-eagre")
    assert all(c.preview for c in rb.CASES if "PREVIEW" in c.label)


def _doc() -> dict:
    ok = {"status": "ok", "all_flowing_s": 3.25, "newcomer_assigned_s": 2.5,
          "all_assigned_s": 2.75, "revoked": 60, "moved": 30, "machine_busy_pct": 71.0}
    rows = [
        {"label": "kafkapy, classic, eager (range)", "heartbeat": "client 3 s", "status": "ok",
         "runs": [ok, {"status": "failed",
                       "error": "all 60 flowing on 4 members not within 60 s"}]},
        {"label": "Kafka 3.9, consumer protocol PREVIEW (v0, uniform)", "heartbeat": "broker 5 s",
         "status": "unavailable", "error": "no java on PATH", "runs": []},
    ]
    for row in rows:
        row["summary"] = rb.summarise(row["runs"])
    host = {"cpus": 2, "mem_gib": 23.5, "platform": "Linux", "python": "3.11.7",
            "java": "openjdk 17", "confluent_kafka": "2.16.1"}
    return {"when": "now", "git_commit": "abc", "host": host, "rows": rows,
            "args": {"partitions": 60, "members": 3, "rate": 20.0, "repeat": 2},
            "shared_machine": True}


def test_report_has_the_table_the_notes_and_the_runs_that_failed():
    text = rb.render(_doc())
    lines = text.splitlines()
    assert ("| kafkapy, classic, eager (range) | client 3 s | 1 of 2 | 2.50 | 2.75 | **3.25** | "
            "3.25–3.25 | 60 | 30 | 71 |") in lines
    assert ("| Kafka 3.9, consumer protocol PREVIEW (v0, uniform) | broker 5 s | unavailable "
            "| - | - | - | - | - | - | - |") in lines
    assert "Machine: 2 CPUs, 23.5 GiB, Linux; Python 3.11.7; openjdk 17;" in text
    assert "bounded by its heartbeat interval" in text
    assert "**preview**" in text
    assert "these figures are indicative" in text
    assert ("- kafkapy, classic, eager (range), run 2: all 60 flowing on 4 members not within "
            "60 s") in lines
    assert "- Kafka 3.9, consumer protocol PREVIEW (v0, uniform): unavailable: no java on PATH" \
        in lines
    doc = _doc()
    doc["shared_machine"] = False
    assert "indicative" not in rb.render(doc)


@pytest.fixture
def kafkapy(tmp_path):
    b = BrokerProcess(tmp_path / "logs", overrides=rb.HEARTBEAT_1S).start()
    yield b
    b.kill()


def test_one_run_against_a_real_broker_ends_with_a_whole_flowing_group(kafkapy, tmp_path):
    client_jars((rb.JAVA_CLIENT,))             # skips without a JDK; fetches the jars once
    java = rb.JavaMembers(tmp_path)
    java.prepare()
    args = argparse.Namespace(partitions=6, members=2, rate=20.0, steady=0.5,
                              settle_timeout=120.0, measure_timeout=60.0, start_timeout=120.0)
    rb.create_topic(kafkapy.bootstrap, 6, 60)
    producer = rb.ProducerProcess(kafkapy.bootstrap, args, tmp_path / "producer.out")
    try:
        producer.wait_ready(60)
        case = next(c for c in rb.CASES if c.key == "kafkapy-consumer-hb1s")
        run = rb.run_once(case, java, kafkapy.bootstrap, args, tmp_path, 0)
    finally:
        counts = producer.stop()
    assert run["status"] == "ok", run.get("error")
    assert run["complete"] and run["owned"] == {"m1": 2, "m2": 2, "new": 2}
    assert run["revoked"] >= 2 and run["moved"] >= 2
    assert run["newcomer_assigned_s"] is not None
    assert run["timeline"][0][1:3] == ["new", "SUBSCRIBE"]
    assert counts["delivered"] > 0 and counts["errors"] == 0
