"""DescribeConfigs views of the broker and topic configuration.

Follows Kafka's ConfigHelper (3.9):
- A broker resource lists every non-internal known key plus every unknown
  key given in the file; unknown keys have type UNKNOWN and, like PASSWORD
  keys, are sensitive (value None). Broker keys are read-only unless Kafka can
  change them dynamically.
- Dynamic broker configs (``BrokerConfig.apply_dynamic``): a broker's synonyms are, in
  Kafka's order, this broker's dynamic value (DYNAMIC_BROKER_CONFIG), the cluster
  default's (DYNAMIC_DEFAULT_BROKER_CONFIG), the file's (STATIC_BROKER_CONFIG), then the
  built-in default (DEFAULT_CONFIG), each source in synonym order.  Keys that exist only
  dynamically (the throttle rates) are listed once set, typed, and read-only as Kafka
  reports them (they are not in its AllDynamicConfigs).  The cluster default resource
  (empty name, ``describe_default_broker``) lists only the keys set in
  /config/brokers/<default>, with only their DYNAMIC_DEFAULT_BROKER_CONFIG synonyms.
- A topic resource lists every topic key; read_only is always False.
- Synonyms, in order: the topic override (DYNAMIC_TOPIC_CONFIG), then the
  broker synonyms set in server.properties (STATIC_BROKER_CONFIG), then those
  with a non-null default (DEFAULT_CONFIG), each source in synonym order;
  then, as Kafka does, everything before the first entry named like the
  primary broker synonym is dropped. So a topic's retention.ms shows no
  log.retention.hours synonym unless log.retention.ms itself is set: that is
  Kafka's behaviour and kept on purpose.
- The entry's source is its first synonym's source, else DEFAULT_CONFIG.
"""
from __future__ import annotations

import enum
from dataclasses import dataclass, field
from typing import Iterable, Mapping

from kafkapy.config.broker import BrokerConfig
from kafkapy.config.definitions import BROKER_CONFIGS, TOPIC_CONFIGS, ConfigKey, broker_key
from kafkapy.config.errors import ConfigError
from kafkapy.config.types import ConfigType, Password, render_value

__all__ = ["ConfigSource", "ConfigEntry", "describe_broker", "describe_default_broker", "describe_topic",
           "broker_synonym_names"]


class ConfigSource(enum.IntEnum):
    """Wire ids of DescribeConfigsResponse.ConfigSource (as Kafka's enum numbers them)."""
    UNKNOWN = 0
    DYNAMIC_TOPIC_CONFIG = 1
    DYNAMIC_BROKER_CONFIG = 2
    DYNAMIC_DEFAULT_BROKER_CONFIG = 3
    STATIC_BROKER_CONFIG = 4
    DEFAULT_CONFIG = 5
    DYNAMIC_BROKER_LOGGER_CONFIG = 6


@dataclass
class ConfigEntry:
    name: str
    value: str | None
    read_only: bool
    is_default: bool
    source: int
    is_sensitive: bool
    synonyms: list[tuple[str, str | None, int]] = field(default_factory=list)
    config_type: int = ConfigType.UNKNOWN
    documentation: str | None = None


_GROUPS = (
    ("log.roll.ms", "log.roll.hours"),
    ("log.roll.jitter.ms", "log.roll.jitter.hours"),
    ("log.flush.interval.ms", "log.flush.scheduler.interval.ms"),
    ("log.retention.ms", "log.retention.minutes", "log.retention.hours"),
)


def broker_synonym_names(name: str) -> list[str]:
    """DynamicBrokerConfig.brokerConfigSynonyms for a broker key."""
    for group in _GROUPS:
        if name in group[:-1] or (name == group[-1] and name != "log.flush.scheduler.interval.ms"):
            return list(group)
    return [name]


def describe_broker(cfg: BrokerConfig, keys: Iterable[str] | None = None, include_synonyms: bool = False,
                    include_documentation: bool = False) -> list[ConfigEntry]:
    names = sorted({k.name for k in BROKER_CONFIGS if not k.internal} | set(cfg.originals))
    wanted = _filter(names, keys)
    return [_broker_entry(cfg, n, include_synonyms, include_documentation) for n in wanted]


def describe_topic(cfg: BrokerConfig, topic_overrides: Mapping[str, str], keys: Iterable[str] | None = None,
                   include_synonyms: bool = False, include_documentation: bool = False) -> list[ConfigEntry]:
    defaults = cfg.topic_defaults()
    wanted = _filter(sorted(k.name for k in TOPIC_CONFIGS if not k.internal), keys)
    return [_topic_entry(cfg, TOPIC_CONFIGS[n], topic_overrides, defaults, include_synonyms, include_documentation)
            for n in wanted]


def _filter(names: list[str], keys: Iterable[str] | None) -> list[str]:
    if not keys:
        return names
    asked = set(keys)
    return [n for n in names if n in asked]


def describe_default_broker(cfg: BrokerConfig, keys: Iterable[str] | None = None, include_synonyms: bool = False,
                            include_documentation: bool = False) -> list[ConfigEntry]:
    """The cluster default resource: the keys of /config/brokers/<default> in effect."""
    layer = cfg.dynamic_default
    wanted = _filter(sorted(layer), keys)
    return [_broker_entry(cfg, n, include_synonyms, include_documentation, raw=layer[n],
                          only=ConfigSource.DYNAMIC_DEFAULT_BROKER_CONFIG) for n in wanted]


def _broker_entry(cfg: BrokerConfig, name: str, with_synonyms: bool, with_docs: bool,
                  raw: str | None = None, only: ConfigSource | None = None) -> ConfigEntry:
    key = broker_key(name)
    sensitive = key is None or key.type == ConfigType.PASSWORD
    if sensitive:
        value = None
    elif raw is not None:
        value = raw     # Kafka shows a stored string as it is
    elif name in BROKER_CONFIGS:
        value = cfg.rendered(name)
    else:
        value = cfg.originals.get(name)
    synonyms = _static_synonyms(cfg, name, broker_synonym_names(name), sensitive)
    if only is not None:
        synonyms = [s for s in synonyms if s[2] == only]
    source = synonyms[0][2] if synonyms else ConfigSource.DEFAULT_CONFIG
    # Kafka's read-only flag: not in DynamicBrokerConfig.AllDynamicConfigs (the dynamic-only
    # throttle rates are not in it either).
    read_only = not (name in BROKER_CONFIGS and key is not None and key.dynamic)
    return ConfigEntry(
        name=name, value=value, read_only=read_only,
        is_default=source == ConfigSource.DEFAULT_CONFIG, source=int(source), is_sensitive=sensitive,
        synonyms=synonyms if with_synonyms else [], config_type=int(key.type if key else ConfigType.UNKNOWN),
        # Kafka documents KafkaConfig's keys only (documentationOf): none for the throttle rates.
        documentation=(key.doc if name in BROKER_CONFIGS else None) if with_docs else None)


def _topic_entry(cfg: BrokerConfig, key: ConfigKey, overrides: Mapping[str, str], defaults: Mapping[str, object],
                 with_synonyms: bool, with_docs: bool) -> ConfigEntry:
    sensitive = key.type == ConfigType.PASSWORD
    value = None if sensitive else _topic_value(key, overrides, defaults)
    synonyms: list[tuple[str, str | None, int]] = []
    if key.name in overrides:
        synonyms.append((key.name, value, int(ConfigSource.DYNAMIC_TOPIC_CONFIG)))
    if key.synonyms:
        primary = key.synonyms[0].name
        synonyms += _static_synonyms(cfg, primary, broker_synonym_names(primary), sensitive)
    source = synonyms[0][2] if synonyms else ConfigSource.DEFAULT_CONFIG
    return ConfigEntry(
        name=key.name, value=value, read_only=False, is_default=source == ConfigSource.DEFAULT_CONFIG,
        source=int(source), is_sensitive=sensitive, synonyms=synonyms if with_synonyms else [],
        config_type=int(key.type), documentation=key.doc if with_docs else None)


def _topic_value(key: ConfigKey, overrides: Mapping[str, str], defaults: Mapping[str, object]) -> str | None:
    if key.name not in overrides:
        return render_value(key.type, defaults[key.name])
    raw = overrides[key.name]
    try:
        return render_value(key.type, key.parse(raw))
    except ConfigError:
        return raw


def _static_synonyms(cfg: BrokerConfig, name: str, synonym_names: list[str],
                     sensitive: bool) -> list[tuple[str, str | None, int]]:
    """Kafka's ConfigHelper.configSynonyms: dynamic per-broker, dynamic default, static,
    default; then everything before the first entry named ``name`` dropped."""
    found: list[tuple[str, str | None, int]] = []
    for layer, source in ((cfg.dynamic_broker, ConfigSource.DYNAMIC_BROKER_CONFIG),
                          (cfg.dynamic_default, ConfigSource.DYNAMIC_DEFAULT_BROKER_CONFIG),
                          (cfg.static_originals, ConfigSource.STATIC_BROKER_CONFIG)):
        for n in synonym_names:
            if n in layer:
                found.append((n, None if sensitive else layer[n], int(source)))
    for n in synonym_names:
        default = _default_string(n)
        if default is not None:
            found.append((n, None if sensitive else default, int(ConfigSource.DEFAULT_CONFIG)))
    while found and found[0][0] != name:
        found.pop(0)
    return found


def _default_string(name: str) -> str | None:
    key = BROKER_CONFIGS.get(name)
    if key is None or key.required:
        return None
    if isinstance(key.default, Password):
        return key.default.value
    return render_value(key.type, key.default)
