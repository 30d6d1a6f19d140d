"""DescribeConfigs views: values, sources, synonyms, read-only and sensitivity as Kafka's ConfigHelper."""
from __future__ import annotations

from kafkapy.config import BrokerConfig, ConfigSource, ConfigType, describe_broker, describe_topic

STATIC, DEFAULT, TOPIC = ConfigSource.STATIC_BROKER_CONFIG, ConfigSource.DEFAULT_CONFIG, ConfigSource.DYNAMIC_TOPIC_CONFIG


def test_config_source_wire_ids_are_kafkas():
    assert (int(TOPIC), int(STATIC), int(DEFAULT)) == (1, 4, 5)
    assert int(ConfigSource.DYNAMIC_BROKER_LOGGER_CONFIG) == 6


def one(entries, name):
    [e] = [e for e in entries if e.name == name]
    return e


def test_source_numbers():
    assert [s.value for s in ConfigSource] == [0, 1, 2, 3, 4, 5, 6]
    assert ConfigType.PASSWORD == 9 and ConfigType.LIST == 7 and ConfigType.DOUBLE == 6


def test_topic_override_then_static_then_default():
    cfg = BrokerConfig.from_properties({"log.segment.bytes": "2000000"})
    e = one(describe_topic(cfg, {"segment.bytes": "3000000"}, None, True, True), "segment.bytes")
    assert e.value == "3000000" and e.source == TOPIC and not e.read_only and not e.is_default
    assert e.synonyms == [("segment.bytes", "3000000", TOPIC), ("log.segment.bytes", "2000000", STATIC),
                          ("log.segment.bytes", "1073741824", DEFAULT)]
    assert e.config_type == ConfigType.INT and e.documentation


def test_topic_value_from_broker_static():
    cfg = BrokerConfig.from_properties({"log.cleanup.policy": "compact, delete"})
    e = one(describe_topic(cfg, {}, ["cleanup.policy"], True, False), "cleanup.policy")
    assert e.value == "compact,delete" and e.source == STATIC and e.documentation is None
    assert e.synonyms[0] == ("log.cleanup.policy", "compact, delete", STATIC)
    assert e.synonyms[1] == ("log.cleanup.policy", "delete", DEFAULT)


def test_topic_retention_synonyms_like_kafka():
    cfg = BrokerConfig.from_properties({"log.retention.hours": "24"})
    e = one(describe_topic(cfg, {}, ["retention.ms"], True, False), "retention.ms")
    # Kafka drops synonyms preceding the primary one (log.retention.ms): none left.
    assert e.value == "86400000" and e.synonyms == [] and e.source == DEFAULT
    cfg = BrokerConfig.from_properties({"log.retention.ms": "1000", "log.retention.hours": "24"})
    e = one(describe_topic(cfg, {}, ["retention.ms"], True, False), "retention.ms")
    assert e.value == "1000" and e.source == STATIC
    assert e.synonyms == [("log.retention.ms", "1000", STATIC), ("log.retention.hours", "24", STATIC),
                          ("log.retention.hours", "168", DEFAULT)]


def test_topic_values_rendered_like_kafka():
    cfg = BrokerConfig.from_properties({})
    entries = describe_topic(cfg, {"min.cleanable.dirty.ratio": "1e-1"}, None, False, False)
    got = {e.name: e.value for e in entries}
    assert got["min.cleanable.dirty.ratio"] == "0.1" and got["preallocate"] == "false"
    assert got["leader.replication.throttled.replicas"] == "" and got["flush.ms"] == "9223372036854775807"
    assert got["message.format.version"] == "3.0-IV1" and got["retention.ms"] == "604800000"
    assert all(e.synonyms == [] and not e.read_only for e in entries)
    assert one(entries, "remote.storage.enable").source == DEFAULT


def test_broker_entries():
    cfg = BrokerConfig.from_properties({"log.retention.hours": "24", "ssl.key.password": "s3cret",
                                        "made.up": "x", "num.partitions": "3"})
    entries = describe_broker(cfg, None, True, False)
    hours = one(entries, "log.retention.hours")
    assert hours.value == "24" and hours.source == STATIC and hours.read_only
    assert hours.synonyms == [("log.retention.hours", "24", STATIC), ("log.retention.hours", "168", DEFAULT)]
    ms = one(entries, "log.retention.ms")
    assert ms.value is None and ms.source == DEFAULT and ms.synonyms == [] and not ms.read_only
    pw = one(entries, "ssl.key.password")
    assert pw.value is None and pw.is_sensitive and pw.synonyms == [("ssl.key.password", None, STATIC)]
    unknown = one(entries, "made.up")
    assert unknown.is_sensitive and unknown.value is None and unknown.config_type == ConfigType.UNKNOWN
    assert unknown.source == STATIC
    assert one(entries, "num.partitions").read_only and not one(entries, "message.max.bytes").read_only
    ratio = one(entries, "log.cleaner.io.max.bytes.per.second")
    assert ratio.value == "1.7976931348623157E308"


def test_broker_key_filter_and_no_synonyms():
    cfg = BrokerConfig.from_properties({})
    entries = describe_broker(cfg, ["log.segment.bytes", "not.a.key"], False, False)
    assert [e.name for e in entries] == ["log.segment.bytes"]
    e = entries[0]
    assert e.value == "1073741824" and e.synonyms == [] and e.is_default and e.source == DEFAULT
