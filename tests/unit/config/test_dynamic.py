"""Dynamic broker configs: the effective-value layers, Kafka's checks and
messages, the stored layers read from a real (embedded) metadata store, and DescribeConfigs
sources and synonyms."""
from __future__ import annotations

import pytest

from kafkapy.config.broker import BrokerConfig
from kafkapy.config.describe import ConfigSource, describe_broker, describe_default_broker
from kafkapy.config.dynamic import (DynamicBrokerConfig, check_applicable, from_persistent_props,
                                    persistent_props, validate)
from kafkapy.config.errors import ConfigError
from kafkapy.metadata import paths

LONG_MAX = 2 ** 63 - 1
THROTTLES = ("leader.replication.throttled.rate", "follower.replication.throttled.rate",
             "replica.alter.log.dirs.io.max.bytes.per.second")


def _config(**extra: str) -> BrokerConfig:
    return BrokerConfig.from_properties({"broker.id": "1", **extra})


class _Broker:
    """What DynamicBrokerConfig is made of: the broker's config, store and node id."""

    def __init__(self, store, config: BrokerConfig) -> None:
        self.store = store
        self.config = config
        self.node_id = config.node_id


@pytest.fixture
def store(store):
    """tests/unit/conftest's store with Kafka's base znodes."""
    paths.ensure_base_paths(store)
    return store


def _put(store, entity: str, config: dict[str, str]) -> None:
    path = paths.broker_config_path(entity)
    data = paths.encode_entity_config(config)
    if store.exists(path):
        store.set(path, data)
    else:
        store.create(path, data, makepath=True)


# -- effective values (C2) ------------------------------------------------------------------

def test_throttle_keys_default_to_long_max():
    cfg = _config()
    for key in THROTTLES:
        assert cfg[key] == LONG_MAX


def test_precedence_per_broker_over_default_over_static_over_default():
    cfg = _config(**{"num.replica.fetchers": "2", "log.cleaner.threads": "3"})
    assert cfg["num.replica.fetchers"] == 2
    cfg.apply_dynamic({"num.replica.fetchers": "4", "leader.replication.throttled.rate": "100"}, {})
    assert cfg["num.replica.fetchers"] == 4
    assert cfg["leader.replication.throttled.rate"] == 100
    changed = cfg.apply_dynamic({"num.replica.fetchers": "4", "leader.replication.throttled.rate": "100"},
                                {"leader.replication.throttled.rate": "7"})
    assert changed == {"leader.replication.throttled.rate"}
    assert cfg["leader.replication.throttled.rate"] == 7
    assert cfg["log.cleaner.threads"] == 3
    cfg.apply_dynamic({}, {})
    assert cfg["num.replica.fetchers"] == 2
    assert cfg["leader.replication.throttled.rate"] == LONG_MAX


def test_dynamic_retention_hides_static_synonyms_and_reaches_topic_defaults():
    cfg = _config(**{"log.retention.ms": "5000"})
    cfg.apply_dynamic({"log.retention.hours": "2"}, {})
    # Kafka's overrideProps: the dynamic hours replace the static ms entirely.
    assert cfg.log_retention_ms == 2 * 3_600_000
    assert cfg.topic_defaults()["retention.ms"] == 2 * 3_600_000


def test_bad_layer_changes_nothing():
    cfg = _config()
    with pytest.raises(ConfigError, match="at least 1MB per cleaner thread"):
        cfg.apply_dynamic({"log.cleaner.dedupe.buffer.size": "1000", "log.cleaner.threads": "2"}, {})
    assert cfg["log.cleaner.threads"] == 1
    assert cfg.dynamic_default == {}


def test_compaction_lags_are_not_checked_dynamically():
    """Kafka checks the broker's compaction lags at start-up only."""
    cfg = _config()
    cfg.apply_dynamic({"log.cleaner.min.compaction.lag.ms": "10",
                       "log.cleaner.max.compaction.lag.ms": "5"}, {})
    assert cfg["log.cleaner.min.compaction.lag.ms"] == 10


# -- Kafka's checks ---------------------------------------------------------------------------

@pytest.mark.parametrize("props,per_broker,message", [
    ({"broker.id": "5"}, True, "Cannot update these configs dynamically: Set(broker.id)"),
    ({"ssl.keystore.type": "PKCS12"}, True,
     "These security configs can be dynamically updated only per-listener using the listener "
     "prefix: HashSet(ssl.keystore.type)"),
    ({"log.cleaner.threads": "x"}, True,
     "Invalid value x for configuration log.cleaner.threads: Not a number of type INT"),
    ({"leader.replication.throttled.rate": "-1"}, True,
     "Invalid value -1 for configuration leader.replication.throttled.rate: Value must be at least 0"),
    ({"ssl.client.auth": "none"}, False,
     "Cannot update these configs at default cluster level, broker id must be specified: "
     "Set(ssl.client.auth)"),
])
def test_validate_refusals(props, per_broker, message):
    with pytest.raises(ConfigError) as err:
        validate(props, per_broker)
    assert str(err.value) == message


def test_validate_accepts_dynamic_and_unknown_keys():
    validate({"log.cleaner.threads": "2", "no.such.config": "x",
              "follower.replication.throttled.rate": "1000"}, per_broker=False)


def test_listener_keys_are_refused_by_kafkapy():
    with pytest.raises(ConfigError, match="kafkapy cannot apply"):
        check_applicable({"listeners": "PLAINTEXT://:9999"})
    with pytest.raises(ConfigError, match="kafkapy cannot apply"):
        check_applicable({"listener.name.plaintext.max.connections": "5"})


def test_password_configs_as_kafka_without_an_encoder():
    with pytest.raises(ConfigError, match="^Password config can be defined only at broker level$"):
        persistent_props({"listener.name.x.ssl.key.password": "s"}, per_broker=False)
    with pytest.raises(ConfigError, match="^Password encoder secret not configured$"):
        persistent_props({"listener.name.x.ssl.key.password": "s"}, per_broker=True)
    assert persistent_props({"log.cleaner.threads": "2"}, True) == {"log.cleaner.threads": "2"}


def test_stored_layers_are_filtered_as_kafka():
    stored = {"log.cleaner.threads": "x", "broker.id": "9", "ssl.keystore.type": "JKS",
              "ssl.client.auth": "required", "num.io.threads": "4"}
    assert from_persistent_props(stored, per_broker=False) == {"num.io.threads": "4"}
    assert from_persistent_props(stored, per_broker=True) == {"ssl.client.auth": "required",
                                                              "num.io.threads": "4"}


# -- the stored layers ------------------------------------------------------------------------

def test_load_and_reload_from_the_store(store):
    broker = _Broker(store, _config())
    dynamic = DynamicBrokerConfig(broker.config, broker.store, broker.node_id)
    seen: list[set[str]] = []
    dynamic.add_listener(seen.append)
    _put(store, paths.DEFAULT_ENTITY, {"follower.replication.throttled.rate": "500"})
    _put(store, "1", {"leader.replication.throttled.rate": "100"})
    _put(store, "2", {"leader.replication.throttled.rate": "999"})
    dynamic.load()
    assert broker.config["leader.replication.throttled.rate"] == 100
    assert broker.config["follower.replication.throttled.rate"] == 500
    assert seen == [{"leader.replication.throttled.rate", "follower.replication.throttled.rate"}]
    assert dynamic.reload("2") == set()            # another broker's entity
    _put(store, "1", {})
    assert dynamic.reload("1") == {"leader.replication.throttled.rate"}
    assert broker.config["leader.replication.throttled.rate"] == LONG_MAX


def test_validate_checks_the_merged_config(store):
    broker = _Broker(store, _config())
    dynamic = DynamicBrokerConfig(broker.config, broker.store, broker.node_id)
    _put(store, paths.DEFAULT_ENTITY, {"log.cleaner.threads": "2"})
    dynamic.load()
    with pytest.raises(ConfigError, match="at least 1MB per cleaner thread"):
        dynamic.validate({"log.cleaner.dedupe.buffer.size": "2000000"}, per_broker=True)
    dynamic.validate({"log.cleaner.dedupe.buffer.size": "4000000"}, per_broker=True)


@pytest.mark.parametrize("props,message", [
    ({"num.io.threads": "17"}, "Dynamic thread count update validation failed for num.io.threads=17, "
                               "value should not be greater than double the current value 8"),
    ({"num.io.threads": "3"}, "Dynamic thread count update validation failed for num.io.threads=3, "
                              "value should be at least half the current value 8"),
    ({"log.cleaner.threads": "3"}, "Log cleaner threads cannot be increased to more than double "
                                   "the current value 1"),
])
def test_reconfiguration_checks_wrapped_as_kafka(store, props, message):
    config = _config()
    dynamic = DynamicBrokerConfig(config, store, config.node_id)
    with pytest.raises(ConfigError) as err:
        dynamic.validate(props, per_broker=True)
    assert str(err.value) == ("Invalid value org.apache.kafka.common.config.ConfigException: "
                              f"{message} for configuration Invalid dynamic configuration")
    dynamic.validate({"num.io.threads": "16"}, per_broker=True)


# -- DescribeConfigs --------------------------------------------------------------------------

def _by_name(entries):
    return {e.name: e for e in entries}


def test_describe_sources_and_synonyms():
    cfg = _config(**{"log.cleaner.threads": "3"})
    cfg.apply_dynamic({"log.cleaner.threads": "4", "leader.replication.throttled.rate": "10"},
                      {"log.cleaner.threads": "5"})
    entries = _by_name(describe_broker(cfg, include_synonyms=True))
    threads = entries["log.cleaner.threads"]
    assert threads.value == "5" and threads.source == ConfigSource.DYNAMIC_BROKER_CONFIG
    assert not threads.read_only
    assert threads.synonyms == [
        ("log.cleaner.threads", "5", ConfigSource.DYNAMIC_BROKER_CONFIG),
        ("log.cleaner.threads", "4", ConfigSource.DYNAMIC_DEFAULT_BROKER_CONFIG),
        ("log.cleaner.threads", "3", ConfigSource.STATIC_BROKER_CONFIG),
        ("log.cleaner.threads", "1", ConfigSource.DEFAULT_CONFIG)]
    rate = entries["leader.replication.throttled.rate"]
    assert rate.value == "10" and rate.source == ConfigSource.DYNAMIC_DEFAULT_BROKER_CONFIG
    assert "follower.replication.throttled.rate" not in entries     # listed once set


def test_describe_default_resource_lists_only_default_layer():
    cfg = _config()
    cfg.apply_dynamic({"log.cleaner.threads": "4"}, {"log.cleaner.threads": "5",
                                                      "num.io.threads": "9"})
    entries = describe_default_broker(cfg, include_synonyms=True)
    assert [(e.name, e.value, e.source) for e in entries] == [
        ("log.cleaner.threads", "4", ConfigSource.DYNAMIC_DEFAULT_BROKER_CONFIG)]
    assert entries[0].synonyms == [("log.cleaner.threads", "4",
                                    ConfigSource.DYNAMIC_DEFAULT_BROKER_CONFIG)]
