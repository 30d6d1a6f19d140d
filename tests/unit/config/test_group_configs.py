"""Group configs (``kafkapy.config.group_configs``) and the consumer group protocol's broker
keys: Kafka 4.0's defaults and refusals, GroupConfigManager.validate's bounds worded as
Kafka words them, the znode layout, and ``GroupConfigs`` on a real EmbeddedStore (cached,
forgotten on a change notification)."""
from __future__ import annotations

import pytest

from kafkapy.clock import MockClock
from kafkapy.config import BROKER_CONFIGS, BrokerConfig, ConfigError
from kafkapy.config import group_configs as G
from kafkapy.metadata import paths
from tests.support.metadata_store import embedded_store

BROKER = BrokerConfig.from_properties({"broker.id": "0"})


# -- broker keys ---------------------------------------------------------------------------------
def test_kafka_4_defaults_and_keys_no_longer_internal():
    assert BROKER["group.coordinator.rebalance.protocols"] == ["classic", "consumer", "share"]
    assert BROKER["group.consumer.assignors"] == ["uniform", "range"]
    assert BROKER["group.consumer.migration.policy"] == "bidirectional"
    assert (BROKER["group.consumer.session.timeout.ms"],
            BROKER["group.consumer.heartbeat.interval.ms"]) == (45000, 5000)
    assert not BROKER_CONFIGS["group.consumer.migration.policy"].internal
    for name in ("group.coordinator.rebalance.protocols", "group.consumer.assignors",
                 "group.consumer.session.timeout.ms"):
        assert "unused" not in BROKER_CONFIGS[name].doc


def test_assignors_by_short_name_or_class_name_only():
    names = "range,org.apache.kafka.coordinator.group.assignor.UniformAssignor"
    cfg = BrokerConfig.from_properties({"group.consumer.assignors": names})
    assert cfg["group.consumer.assignors"] == names.split(",")
    with pytest.raises(ConfigError, match="Invalid value com.example.Sticky for configuration "
                                          "group.consumer.assignors: kafkapy serves only"):
        BrokerConfig.from_properties({"group.consumer.assignors": "uniform,com.example.Sticky"})
    with pytest.raises(ConfigError, match="group.consumer.assignors"):
        BrokerConfig.from_properties({"group.consumer.assignors": ""})


def test_rebalance_protocols_as_kafka_checks_them():
    assert BrokerConfig.from_properties({"group.coordinator.rebalance.protocols": "classic"})[
        "group.coordinator.rebalance.protocols"] == ["classic"]
    with pytest.raises(ConfigError, match="^Disabling the 'classic' protocol is not supported.$"):
        BrokerConfig.from_properties({"group.coordinator.rebalance.protocols": "consumer"})
    with pytest.raises(ConfigError, match="Invalid value CONSUMER for configuration "
                                          "group.coordinator.rebalance.protocols"):
        BrokerConfig.from_properties({"group.coordinator.rebalance.protocols": "classic,CONSUMER"})


def test_migration_policy_in_any_case():
    cfg = BrokerConfig.from_properties({"group.consumer.migration.policy": "Upgrade"})
    assert cfg["group.consumer.migration.policy"] == "Upgrade"
    with pytest.raises(ConfigError, match="String must be one of \\(case insensitive\\): "
                                          "DISABLED, DOWNGRADE, UPGRADE, BIDIRECTIONAL"):
        BrokerConfig.from_properties({"group.consumer.migration.policy": "sideways"})


@pytest.mark.parametrize("props,message", [
    ({"group.consumer.min.heartbeat.interval.ms": "16000"},
     "group.consumer.max.heartbeat.interval.ms must be greater than or equal to "
     "group.consumer.min.heartbeat.interval.ms"),
    ({"group.consumer.heartbeat.interval.ms": "4000"},
     "group.consumer.heartbeat.interval.ms must be greater than or equal to "
     "group.consumer.min.heartbeat.interval.ms"),
    ({"group.consumer.heartbeat.interval.ms": "16000"},
     "group.consumer.heartbeat.interval.ms must be less than or equal to "
     "group.consumer.max.heartbeat.interval.ms"),
    ({"group.consumer.session.timeout.ms": "60001"},
     "group.consumer.session.timeout.ms must be less than or equal to "
     "group.consumer.max.session.timeout.ms"),
    ({"group.consumer.min.session.timeout.ms": "5000", "group.consumer.session.timeout.ms": "6000",
      "group.consumer.heartbeat.interval.ms": "6000", "group.consumer.max.heartbeat.interval.ms": "6000"},
     "group.consumer.heartbeat.interval.ms must be less than group.consumer.session.timeout.ms"),
])
def test_broker_settings_checked_as_kafka_4_checks_them_at_start(props, message):
    G.check_broker_settings(BROKER)
    with pytest.raises(ConfigError) as err:
        G.check_broker_settings(BrokerConfig.from_properties(props))
    assert str(err.value) == message


# -- validation ------------------------------------------------------------------------------------
@pytest.mark.parametrize("configs,message", [
    ({"share.session.timeout": "50000"}, "Unknown group config name: share.session.timeout"),
    ({G.SESSION_TIMEOUT_MS: "soon"},
     "Invalid value soon for configuration consumer.session.timeout.ms: Not a number of type INT"),
    ({G.HEARTBEAT_INTERVAL_MS: "0"},
     "Invalid value 0 for configuration consumer.heartbeat.interval.ms: Value must be at least 1"),
    ({G.HEARTBEAT_INTERVAL_MS: "4999"},
     "consumer.heartbeat.interval.ms must be greater than or equal to "
     "group.consumer.min.heartbeat.interval.ms"),
    ({G.HEARTBEAT_INTERVAL_MS: "15001"},
     "consumer.heartbeat.interval.ms must be less than or equal to "
     "group.consumer.max.heartbeat.interval.ms"),
    ({G.SESSION_TIMEOUT_MS: "44999"},
     "consumer.session.timeout.ms must be greater than or equal to "
     "group.consumer.min.session.timeout.ms"),
    ({G.SESSION_TIMEOUT_MS: "60001"},
     "consumer.session.timeout.ms must be less than or equal to "
     "group.consumer.max.session.timeout.ms"),
])
def test_refusals_are_worded_as_kafka_words_them(configs, message):
    with pytest.raises(ConfigError) as err:
        G.validate(configs, BROKER)
    assert str(err.value) == message


def test_the_brokers_values_stand_in_for_keys_not_given():
    assert G.validate({G.SESSION_TIMEOUT_MS: "50000", G.HEARTBEAT_INTERVAL_MS: "6000"},
                      BROKER) == {G.SESSION_TIMEOUT_MS: 50000, G.HEARTBEAT_INTERVAL_MS: 6000}
    loose = BrokerConfig.from_properties({"group.consumer.min.session.timeout.ms": "1000",
                                          "group.consumer.session.timeout.ms": "6000",
                                          "group.consumer.heartbeat.interval.ms": "5000",
                                          "group.consumer.min.heartbeat.interval.ms": "1000"})
    assert G.validate({G.SESSION_TIMEOUT_MS: "5001"}, loose) == {G.SESSION_TIMEOUT_MS: 5001}
    with pytest.raises(ConfigError, match="^consumer.session.timeout.ms must be greater than "
                                          "consumer.heartbeat.interval.ms$"):
        G.validate({G.SESSION_TIMEOUT_MS: "5000"}, loose)     # the broker's interval: 5000


# -- znodes ---------------------------------------------------------------------------------------
@pytest.mark.parametrize("group_id,name", [
    ("orders", "orders"), ("a b", "a%20b"), ("x*y+z", "x%2Ay%2Bz"), ("a/b", "a%2Fb"),
    ("ü~", "%C3%BC%7E"), (".", "%2E"), ("..", "%2E%2E"), ("a.b-c_d", "a.b-c_d")])
def test_group_ids_are_sanitized_as_kafka_sanitizes_entity_names(group_id, name):
    assert G.group_config_path(group_id) == f"/config/groups/{name}"
    assert G.desanitize(name) == group_id


@pytest.fixture
def store(tmp_path):
    with embedded_store(tmp_path) as s:
        yield s


def test_write_is_an_entity_config_and_a_notification(store):
    G.write(store, "a b", {G.SESSION_TIMEOUT_MS: "50000"})
    data, _ = store.get("/config/groups/a%20b")
    assert data == b'{"version":1,"config":{"consumer.session.timeout.ms":"50000"}}'
    [change] = store.get_children(paths.CONFIG_CHANGES)
    assert store.get(f"{paths.CONFIG_CHANGES}/{change}")[0] == \
        b'{"version":2,"entity_path":"groups/a%20b"}'
    assert G.stored(store, "a b") == {G.SESSION_TIMEOUT_MS: "50000"}
    assert G.stored(store, "other") == {}


def test_group_configs_cached_and_forgotten_on_a_notification(store):
    configs = G.GroupConfigs(store, BROKER, MockClock())
    configs.start()
    try:
        assert (configs.session_timeout_ms("g"), configs.heartbeat_interval_ms("g")) == (45000, 5000)
        # written without a notification: the cached (absent) overrides stay
        path = G.group_config_path("g")
        store.create(path, paths.encode_entity_config({G.SESSION_TIMEOUT_MS: "50000"}),
                     makepath=True)
        assert configs.session_timeout_ms("g") == 45000
        G.write(store, "g", {G.SESSION_TIMEOUT_MS: "55000", G.HEARTBEAT_INTERVAL_MS: "7000"})
        configs.process_changes()
        assert (configs.session_timeout_ms("g"), configs.heartbeat_interval_ms("g")) == (55000, 7000)
        G.write(store, "g", {G.HEARTBEAT_INTERVAL_MS: "8000"})      # session back to the broker's
        configs.process_changes()
        assert (configs.session_timeout_ms("g"), configs.heartbeat_interval_ms("g")) == (45000, 8000)
        assert configs.session_timeout_ms("h") == 45000             # others untouched
    finally:
        configs.stop()


def test_unreadable_overrides_fall_back_to_the_brokers_values(store):
    store.create(G.group_config_path("g"), paths.encode_entity_config(
        {G.SESSION_TIMEOUT_MS: "soon", G.HEARTBEAT_INTERVAL_MS: "6000", "unknown": "1"}),
        makepath=True)
    configs = G.GroupConfigs(store, BROKER, MockClock())
    assert (configs.session_timeout_ms("g"), configs.heartbeat_interval_ms("g")) == (45000, 6000)


def test_describe_lists_every_key_with_its_source():
    entries = G.describe(BROKER, {G.HEARTBEAT_INTERVAL_MS: "6000"}, None, True, True)
    assert [e.name for e in entries] == sorted(k.name for k in G.GROUP_CONFIGS)
    entries = [e for e in entries if e.name.startswith("consumer.")]
    assert [(e.name, e.value, e.source, e.synonyms, e.read_only, e.config_type) for e in entries] == [
        (G.HEARTBEAT_INTERVAL_MS, "6000", 8, [(G.HEARTBEAT_INTERVAL_MS, "6000", 8)], False, 3),
        (G.SESSION_TIMEOUT_MS, "45000", 5, [(G.SESSION_TIMEOUT_MS, "45000", 5)], False, 3)]
    assert all(e.documentation for e in entries)
    [only] = G.describe(BROKER, {}, [G.SESSION_TIMEOUT_MS])
    assert (only.name, only.synonyms, only.documentation) == (G.SESSION_TIMEOUT_MS, [], None)


# -- share groups ------------------------------------------------------------------------------
def test_share_group_broker_keys_with_kafka_42s_defaults():
    assert [BROKER[f"group.share.{k}"] for k in (
        "session.timeout.ms", "min.session.timeout.ms", "max.session.timeout.ms",
        "heartbeat.interval.ms", "min.heartbeat.interval.ms", "max.heartbeat.interval.ms",
        "max.size", "assignors")] == [45000, 45000, 60000, 5000, 5000, 15000, 200, ["simple"]]
    assert BROKER_CONFIGS["group.share.initialize.retry.interval.ms"].internal
    with pytest.raises(ConfigError, match="^group.share.assignors must contain exactly one "
                                          "assignor, but found 2$"):
        BrokerConfig.from_properties({"group.share.assignors": "simple,simple"})
    with pytest.raises(ConfigError, match="group.share.max.size"):
        BrokerConfig.from_properties({"group.share.max.size": "1001"})


def test_share_broker_settings_checked_at_start_as_kafka_checks_them():
    G.check_broker_settings(BROKER)
    bad = BrokerConfig.from_properties({"group.share.heartbeat.interval.ms": "15000",
                                        "group.share.max.heartbeat.interval.ms": "60000",
                                        "group.share.session.timeout.ms": "45000",
                                        "group.share.min.session.timeout.ms": "1000"})
    G.check_broker_settings(bad)
    worse = BrokerConfig.from_properties({"group.share.heartbeat.interval.ms": "50000",
                                          "group.share.max.heartbeat.interval.ms": "60000"})
    with pytest.raises(ConfigError, match="^group.share.heartbeat.interval.ms must be less than "
                                          "group.share.session.timeout.ms$"):
        G.check_broker_settings(worse)


@pytest.mark.parametrize("configs,message", [
    ({G.SHARE_SESSION_TIMEOUT_MS: "44999"},
     "share.session.timeout.ms must be greater than or equal to group.share.min.session.timeout.ms"),
    ({G.SHARE_HEARTBEAT_INTERVAL_MS: "15001"},
     "share.heartbeat.interval.ms must be less than or equal to "
     "group.share.max.heartbeat.interval.ms"),
    ({G.SHARE_RECORD_LOCK_DURATION_MS: "14000"},
     "share.record.lock.duration.ms must be greater than or equal to "
     "group.share.min.record.lock.duration.ms"),
    ({G.SHARE_RECORD_LOCK_DURATION_MS: "999"},
     "Invalid value 999 for configuration share.record.lock.duration.ms: "
     "Value must be at least 1000"),
    ({G.SHARE_AUTO_OFFSET_RESET: "by_duration:-PT1S"},
     "Invalid value by_duration:-PT1S for configuration share.auto.offset.reset: "
     "[latest, earliest, by_duration:PnDTnHnMn.nS]"),
    ({G.SHARE_ISOLATION_LEVEL: "serializable"},
     "Invalid value serializable for configuration share.isolation.level: "
     "String must be one of: read_committed, read_uncommitted"),
    ({G.DEAD_LETTER_TOPIC: "__dlq"},
     "errors.deadletterqueue.topic.name: DLQ topic name must not start with '__'"),
])
def test_share_refusals(configs, message):
    with pytest.raises(ConfigError) as err:
        G.validate(configs, BROKER)
    assert str(err.value) == message


@pytest.mark.parametrize("text,millis", [
    ("PT1H", 3_600_000), ("P1DT2H3M4.5S", 93_784_500), ("pt0.25s", 250), ("PT-1S", -1000),
    ("P", None), ("PT", None), ("1H", None), ("PT1.5M", None)])
def test_iso_8601_durations_as_java_reads_them(text, millis):
    assert G.duration_ms(text) == millis


def test_share_settings_effective_values(store):
    configs = G.GroupConfigs(store, BROKER, MockClock())
    default = configs.share("s")
    assert default == G.ShareGroupConfig(
        session_timeout_ms=45000, heartbeat_interval_ms=5000, record_lock_duration_ms=30000,
        delivery_count_limit=5, partition_max_record_locks=2000, auto_offset_reset="latest",
        isolation_level="read_uncommitted", dead_letter_topic=None, backoff_ms=0,
        backoff_max_ms=60000)
    assert default.auto_offset_reset_duration_ms is None
    G.write(store, "t", {G.SHARE_AUTO_OFFSET_RESET: "BY_DURATION:PT1M",
                         G.SHARE_RECORD_LOCK_DURATION_MS: "20000",
                         G.DEAD_LETTER_TOPIC: "dlq.t", G.REDELIVERY_BACKOFF_MS: "100",
                         G.SHARE_SESSION_TIMEOUT_MS: "50000"})
    t = configs.share("t")
    assert (t.auto_offset_reset, t.auto_offset_reset_duration_ms, t.record_lock_duration_ms,
            t.dead_letter_topic, t.backoff_ms) == ("by_duration:PT1M", 60000, 20000, "dlq.t", 100)
    assert (configs.share_session_timeout_ms("t"), configs.share_heartbeat_interval_ms("t"),
            configs.session_timeout_ms("t")) == (50000, 5000, 45000)
