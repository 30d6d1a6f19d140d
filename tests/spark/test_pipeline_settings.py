"""Pipeline settings and the Kafka source/sink options they produce (no Spark, no broker)."""
from __future__ import annotations

import json

import pytest

from kafkapy.pipeline import cli, topics
from kafkapy.pipeline import settings as settings_module
from kafkapy.pipeline.settings import (PipelineSettings, SettingsError, assign_json, connector,
                                       dead_letter_sink_options, default_packages, from_env,
                                       sink_options, source_options, spark_conf)


def test_streaming_subscribe_defaults():
    opts = source_options(PipelineSettings(bootstrap="h:1", subscribe="a, b"), streaming=True)
    assert opts == {"kafka.bootstrap.servers": "h:1", "subscribe": "a,b",
                    "startingOffsets": "earliest", "includeHeaders": "true",
                    "kafka.isolation.level": "read_committed", "failOnDataLoss": "true"}


def test_streaming_pattern_timestamp_rate_limit_and_extra_options():
    s = PipelineSettings(subscribe=None, subscribe_pattern="ev.*", starting_timestamp=1234,
                         max_offsets_per_trigger=50, include_headers=False,
                         isolation_level="read_uncommitted", fail_on_data_loss=False,
                         kafka_options={"fetch.max.bytes": "1024",
                                        "kafka.max.poll.records": "7"})
    opts = source_options(s, streaming=True)
    assert opts["subscribePattern"] == "ev.*" and "subscribe" not in opts
    assert opts["startingTimestamp"] == "1234" and "startingOffsets" not in opts
    assert opts["startingOffsetsByTimestampStrategy"] == "latest"
    assert opts["maxOffsetsPerTrigger"] == "50"
    assert "endingOffsets" not in opts and "endingTimestamp" not in opts
    assert opts["includeHeaders"] == "false"
    assert opts["kafka.isolation.level"] == "read_uncommitted"
    assert opts["failOnDataLoss"] == "false"
    assert opts["kafka.fetch.max.bytes"] == "1024" and opts["kafka.max.poll.records"] == "7"


def test_batch_assign_and_ending():
    s = PipelineSettings(subscribe=None, assign="t:1,0;u:3", ending_timestamp=99)
    opts = source_options(s, streaming=False)
    assert json.loads(opts["assign"]) == {"t": [0, 1], "u": [3]}
    assert opts["endingTimestamp"] == "99" and "endingOffsets" not in opts
    assert "maxOffsetsPerTrigger" not in opts
    opts = source_options(s.with_(ending_timestamp=None, ending_offsets='{"t":{"0":5}}'), False)
    assert opts["endingOffsets"] == '{"t":{"0":5}}'


@pytest.mark.parametrize("changes", [
    {"subscribe": None},
    {"subscribe_pattern": "x"},
    {"isolation_level": "dirty"},
    {"max_offsets_per_trigger": 0},
    {"subscribe": None, "assign": "t"},
    {"subscribe": None, "assign": "t:x"},
    {"subscribe": None, "assign": '{"t": []}'},
])
def test_bad_settings_are_refused(changes):
    with pytest.raises(SettingsError):
        source_options(PipelineSettings().with_(**changes), streaming=True)


def test_batch_cannot_start_latest_or_end_earliest():
    with pytest.raises(SettingsError):
        source_options(PipelineSettings(starting_offsets="latest"), streaming=False)
    with pytest.raises(SettingsError):
        source_options(PipelineSettings(ending_offsets="earliest"), streaming=False)


def test_assign_json_passes_json_through():
    assert assign_json('{"b":[2,1,1],"a":[0]}') == '{"a":[0],"b":[1,2]}'


def test_env_and_flags(monkeypatch, tmp_path):
    env = {"KAFKAPY_BOOTSTRAP": "b:9", "KAFKAPY_PIPELINE_INPUT": "in1,in2",
           "KAFKAPY_PIPELINE_OUTPUT": "out", "KAFKAPY_PIPELINE_CHECKPOINT": "/ck",
           "KAFKAPY_PIPELINE_PARQUET": "/pq", "KAFKAPY_SPARK_JARS": "/a.jar, /b.jar",
           "KAFKAPY_SPARK_PACKAGES": "g:a:1", "KAFKAPY_SPARK_MASTER": "local[1]"}
    s = from_env(env)
    assert (s.bootstrap, s.subscribe, s.output_topic, s.checkpoint_dir, s.parquet_dir) == (
        "b:9", "in1,in2", "out", "/ck", "/pq")
    assert s.jars == ("/a.jar", "/b.jar") and s.packages == ("g:a:1",)
    assert s.kafka_checkpoint != s.parquet_checkpoint
    conf = spark_conf(s)
    assert conf["spark.jars"] == "/a.jar,/b.jar" and conf["spark.jars.packages"] == "g:a:1"
    assert conf["spark.ui.enabled"] == "false"
    for key, value in env.items():
        monkeypatch.setenv(key, value)
    args = cli.build_parser().parse_args(
        ["stream", "--topic-pattern", "ev.*", "--bootstrap", "x:1", "--starting-timestamp",
         "2026-01-01T00:00:00Z", "--max-offsets-per-trigger", "10", "--kafka-option",
         "fetch.min.bytes=1", "--window", "5 minutes", "--checkpoint", str(tmp_path)])
    s = cli.settings_from_args(args)
    assert s.subscribe is None and s.subscribe_pattern == "ev.*" and s.bootstrap == "x:1"
    assert s.starting_timestamp == 1767225600000 and s.max_offsets_per_trigger == 10
    assert s.kafka_options == {"fetch.min.bytes": "1"} and s.window == "5 minutes"
    assert s.checkpoint_dir == str(tmp_path) and s.output_topic == "out"


def test_packages_and_sink():
    assert default_packages("4.0.5") == ("org.apache.spark:spark-sql-kafka-0-10_2.13:4.0.5",)
    assert sink_options(PipelineSettings(bootstrap="h:1", output_topic="o")) == {
        "kafka.bootstrap.servers": "h:1", "topic": "o"}


def test_dead_letter_topic_default_env_flag_and_sink():
    assert PipelineSettings().dead_letter_topic == "dlq.events"
    s = from_env({"KAFKAPY_PIPELINE_DEAD_LETTERS": "dlq.from-env", "KAFKAPY_BOOTSTRAP": "h:1"})
    assert dead_letter_sink_options(s) == {"kafka.bootstrap.servers": "h:1",
                                           "topic": "dlq.from-env"}
    args = cli.build_parser().parse_args(["stream", "--dead-letter-topic", "dlq.flag"])
    assert cli.settings_from_args(args, env={}).dead_letter_topic == "dlq.flag"
    args = cli.build_parser().parse_args(["backfill", "--out", "o"])
    assert cli.settings_from_args(args, env={}).dead_letter_topic == "dlq.events"
    assert len({s.kafka_checkpoint, s.parquet_checkpoint, s.dead_letter_checkpoint}) == 3
    with pytest.raises(SettingsError):
        PipelineSettings(dead_letter_topic="").validate()


def test_cli_reports_bad_settings(capsys):
    assert cli.main(["backfill", "--out", "/tmp/x", "--assign", "nope"]) == 2
    assert "assign" in capsys.readouterr().err


def test_sample_events_are_deterministic():
    a = cli.sample_events(5, ["x", "y"], 1767225600000, 1000, 3)
    assert a == cli.sample_events(5, ["x", "y"], 1767225600000, 1000, 3)
    assert [e["kind"] for e in a] == ["x", "y", "x", "y", "x"]
    assert a[1]["event_time"] == "2026-01-01T00:00:01.000Z"


def test_cli_without_any_connector_says_so_in_one_line(monkeypatch, tmp_path, capsys):
    # No KAFKAPY_SPARK_JARS, no --packages, and no shared jars beside the checkout.
    monkeypatch.delenv("KAFKAPY_SPARK_JARS", raising=False)
    monkeypatch.delenv("KAFKAPY_SPARK_PACKAGES", raising=False)
    monkeypatch.setattr(settings_module, "SHARED_SPARK_JARS", tmp_path / "no-such-dir")
    for command in (["stream", "--topics", "t"],
                    ["backfill", "--topics", "t", "--out", str(tmp_path / "o")]):
        assert cli.main([*command, "--bootstrap", "127.0.0.1:1"]) == 2
        err = capsys.readouterr().err
        assert err.count("\n") == 1 and "KAFKAPY_SPARK_JARS" in err, err


def test_connector_jars_from_a_directory_or_beside_the_checkout(monkeypatch, tmp_path):
    for name in ("b.jar", "a.jar", "notes.txt"):
        (tmp_path / name).write_text("")
    want = (str(tmp_path / "a.jar"), str(tmp_path / "b.jar"))
    assert from_env({"KAFKAPY_SPARK_JARS": f"{tmp_path}"}).jars == want
    args = cli.build_parser().parse_args(["backfill", "--out", "o", "--jars", str(tmp_path)])
    assert cli.settings_from_args(args, env={}).jars == want
    # Nothing named: the checkout's ../shared/spark-jars (the repo root holds pyproject.toml).
    monkeypatch.setattr(settings_module, "SHARED_SPARK_JARS", tmp_path)
    assert connector(PipelineSettings()).jars == want
    assert connector(PipelineSettings(packages=("g:a:1",))).jars == ()
    with pytest.raises(SettingsError, match="not found"):
        connector(PipelineSettings(jars=(str(tmp_path / "gone.jar"),)))


def test_packages_flag_replaces_jars_from_the_environment():
    args = cli.build_parser().parse_args(["stream", "--packages", "g:a:1"])
    s = cli.settings_from_args(args, env={"KAFKAPY_SPARK_JARS": "/x.jar"})
    assert s.packages == ("g:a:1",) and s.jars == ()


def test_input_topics_to_make_sure_of():
    assert topics.input_topics(PipelineSettings(subscribe="a, b")) == ["a", "b"]
    assert topics.input_topics(PipelineSettings(subscribe=None, assign="u:0;t:1")) == ["t", "u"]
    assert topics.input_topics(PipelineSettings(subscribe=None, subscribe_pattern="x.*")) == []
