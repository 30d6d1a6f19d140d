"""bench/scale.py's own parts: the report's table and ratios, and the paced connection opener.

Job: check what `make bench`'s scale section prints (figure formatting, the ratio that is >1
whenever kafkapy is worse, the notes on Kafka's CreateTopics fallback and on an unavailable
or incomplete broker) on a made-up result, and run the opener, Metadata and ListOffsets
helpers against a real kafkapy broker process with a small K.  No timing is asserted: the
opener's pacing is checked by its count of connections in flight, never by its speed.
"""
from __future__ import annotations

import pytest

from tests.support.bench_scripts import load_bench_script
from tests.support.broker_process import BrokerProcess


scale = load_bench_script("scale.py", "bench_scale")


def test_ratio_is_above_one_when_kafkapy_is_worse():
    assert scale.ratio(2.0, 1.0, higher_better=False) == 2.0      # kafkapy slower
    assert scale.ratio(100, 400, higher_better=True) == 4.0       # kafkapy less throughput
    assert scale.ratio(400, 100, higher_better=True) == 0.25      # kafkapy ahead
    assert scale.ratio(None, 1.0, higher_better=False) is None
    assert scale.ratio(0.0, 1.0, higher_better=False) is None


def test_figures_are_formatted_for_the_table():
    assert scale.fmt(None) == "-"
    assert scale.fmt(10_000) == "10,000"
    assert scale.fmt(123_456.7) == "123,457"
    assert scale.fmt(12.5) == "12.50"
    assert scale.fmt(0.012345) == "0.0123"


def _doc(kafka: dict) -> dict:
    kafkapy = {
        "status": "ok", "wall_s": 100.0,
        "create": {"create_s": 2.0, "create_ack_s": 1.5, "note": None},
        "produce": {"records_per_s": 1000.0, "p50_ms": 5.0, "p99_ms": 50.0, "delivered": 10},
        "list_offsets": {"requests": 3, "median_ms": 4.0, "p99_ms": 8.0, "partitions_ok": 4,
                         "end_offsets_sum": 10},
        "conns": {"answered": 200, "still_open_after_produce": 199, "open_s": 1.0},
    }
    args = {"partitions": 4, "conns": 200, "records": 10, "conn_records": 10,
            "metadata_reps": 3, "conn_window": 16}
    return {"when": "now", "host": "here", "command": "bench/scale.py", "args": args,
            "brokers": {"kafkapy": kafkapy, "kafka": kafka}}


def test_render_puts_kafka_beside_kafkapy_with_the_ratio_and_notes():
    kafka = {
        "status": "ok", "wall_s": 200.0,
        "create": {"create_s": 1.0, "create_ack_s": 0.5,
                   "note": "POLICY_VIOLATION for 4 in one CreateTopics: created 2 then "
                           "CreatePartitions to 4"},
        "produce": {"records_per_s": 4000.0, "p50_ms": 10.0, "p99_ms": 25.0, "delivered": 10},
        "list_offsets": {"requests": 2, "median_ms": 2.0, "p99_ms": 4.0, "partitions_ok": 3,
                         "end_offsets_sum": 10},
        "conns": {"answered": 200, "still_open_after_produce": 200, "open_s": 4.0},
    }
    text = scale.render(_doc(kafka))
    lines = text.splitlines()
    assert "| (a) create N partitions until all leaders known, s | 2.00 | 1.00 | 2.00x |" in lines
    assert "| (b) produce 100 B over all N partitions, records/s | 1,000 | 4,000 | 4.00x |" in lines
    assert "| (b) produce delivery p50, ms | 5.00 | 10.00 | 0.50x |" in lines
    assert ("| (e) time to open K connections (paced, +ApiVersions each), s | 1.00 | 4.00 "
            "| 0.25x |") in lines
    assert "| (e) connections answered / still open after produce | 200 / 199 | 200 / 200 | |" \
        in lines
    assert "| (d) Metadata (N partitions) median, ms | - | - | - |" in lines  # not measured
    assert "CreatePartitions to 4; (a) times both requests together" in text
    assert "at most 16 connecting" in text
    assert "Kafka 3.9 (d): only 2 of 3 ListOffsets requests" in text
    assert "Kafka 3.9 (d): ListOffsets answered 3 of 4 partitions" in text
    assert "failed" not in text


def test_render_says_which_broker_was_unavailable_or_incomplete():
    text = scale.render(_doc({"status": "unavailable", "error": "no java on PATH"}))
    assert "**Kafka 3.9 unavailable**: no java on PATH" in text
    assert "| (a) CreateTopics response, s | 1.50 | - | - |" in text.splitlines()
    doc = _doc({})
    doc["brokers"]["kafkapy"].update(status="incomplete",
                                     error="broker budget spent before restart")
    assert "**kafkapy incomplete** (--broker-budget)" in scale.render(doc)


@pytest.fixture
def kafkapy(tmp_path):
    b = BrokerProcess(tmp_path / "logs").start()
    yield b
    b.kill()


def test_paced_opener_and_raw_requests_against_a_real_broker(kafkapy):
    socks, info = scale.open_idle(kafkapy.port, 200, timeout=60.0, window=16)
    try:
        assert info["answered"] == len(socks) == 200
        assert info["connect_failed"] == 0
        assert 1 <= info["max_in_flight"] <= 16
        assert scale.still_open(socks) == 200
    finally:
        for s in socks:
            s.close()
    scale.create_topic(kafkapy.bootstrap, kafkapy.port, "scale-t", 8, timeout=60.0)
    md = scale.metadata_latency(kafkapy.port, "scale-t", 8, reps=3, timeout=30.0)
    assert md["requests"] == 3 and md["partitions_in_response"] == 8
    lo = scale.list_offsets_latency(kafkapy.port, "scale-t", 8, reps=3, timeout=30.0)
    assert lo["requests"] == 3 and lo["partitions_ok"] == 8 and lo["end_offsets_sum"] == 0


def test_opener_counts_refused_connections_as_failed(tmp_path):
    from kafkapy.testing._broker import free_port
    socks, info = scale.open_idle(free_port(), 20, timeout=20.0, window=4)  # nobody listens
    assert socks == [] and info["answered"] == 0 and info["connect_failed"] == 20
