"""A ConfigDef-like typed registry of configuration keys.

``ConfigKey`` describes one key: name, type, default (``NO_DEFAULT`` marks a
required key; ``None`` is a legal "null" default), validator, importance,
documentation, whether the broker can change it dynamically (Kafka's
DescribeConfigs reports static-only broker keys as read-only), and for topic
keys the ordered broker synonyms with their unit factor (Kafka's
ServerTopicConfigSynonyms: the first synonym that is set wins).

``BROKER_CONFIGS`` and ``TOPIC_CONFIGS`` are the two main registries, filled by
``kafkapy.config.broker_keys`` (and ``broker_keys_accepted``) and
``kafkapy.config.topic_keys`` when they are imported; the package imports them first
(``kafkapy/config/__init__.py``), so a registry is complete before any module reads it.
``BROKER_DYNAMIC_ONLY_CONFIGS`` holds the broker keys that exist only as dynamic
configs (Kafka's DynamicConfig.Broker quota keys, e.g. the replication throttle
rates): not part of KafkaConfig, so DescribeConfigs lists one only when it is set.
"""
from __future__ import annotations

import enum
from dataclasses import dataclass, field
from typing import Iterator

from kafkapy.config.errors import ConfigError
from kafkapy.config.types import ConfigType, parse_value
from kafkapy.config.validators import Validator

__all__ = ["NO_DEFAULT", "Importance", "Synonym", "ConfigKey", "ConfigDefs",
           "ConfigType", "BROKER_CONFIGS", "TOPIC_CONFIGS", "BROKER_DYNAMIC_ONLY_CONFIGS",
           "broker_key"]


class _NoDefault:
    def __repr__(self) -> str:
        return "NO_DEFAULT"


NO_DEFAULT = _NoDefault()


class Importance(enum.Enum):
    HIGH = "high"
    MEDIUM = "medium"
    LOW = "low"


@dataclass(frozen=True)
class Synonym:
    """A broker key standing for a topic key; value * factor gives the topic value."""

    name: str
    factor: int = 1


@dataclass(frozen=True)
class ConfigKey:
    name: str
    type: ConfigType
    default: object
    validator: Validator | None
    importance: Importance
    doc: str
    dynamic: bool = False
    internal: bool = False
    synonyms: tuple[Synonym, ...] = field(default_factory=tuple)

    @property
    def required(self) -> bool:
        return self.default is NO_DEFAULT

    def parse(self, raw: object) -> object:
        """Parse and validate one value of this key (Kafka's parseValue)."""
        value = parse_value(self.name, self.type, raw)
        if self.validator is not None:
            self.validator(self.name, value)
        return value


class ConfigDefs:
    """An ordered name -> ConfigKey registry."""

    def __init__(self, name: str) -> None:
        self.name = name
        self._keys: dict[str, ConfigKey] = {}

    def define(self, name: str, ctype: ConfigType, default: object, validator: Validator | None,
               importance: Importance, doc: str, **extra: object) -> "ConfigDefs":
        if name in self._keys:
            raise ValueError(f"Configuration {name} is defined twice.")
        if default is not NO_DEFAULT and default is not None and isinstance(default, str):
            default = parse_value(name, ctype, default)
        key = ConfigKey(name, ctype, default, validator, importance, doc, **extra)  # type: ignore[arg-type]
        if default is not NO_DEFAULT and default is not None and validator is not None:
            validator(name, default)
        self._keys[name] = key
        return self

    def __getitem__(self, name: str) -> ConfigKey:
        return self._keys[name]

    def __contains__(self, name: object) -> bool:
        return name in self._keys

    def __iter__(self) -> Iterator[ConfigKey]:
        return iter(self._keys.values())

    def __len__(self) -> int:
        return len(self._keys)

    def get(self, name: str) -> ConfigKey | None:
        return self._keys.get(name)

    def names(self) -> list[str]:
        return list(self._keys)

    def default_value(self, name: str) -> object:
        key = self._keys[name]
        if key.required:
            raise ConfigError(
                f'Missing required configuration "{name}" which has no default value.', key=name)
        return key.default


BROKER_CONFIGS = ConfigDefs("broker")
TOPIC_CONFIGS = ConfigDefs("topic")
BROKER_DYNAMIC_ONLY_CONFIGS = ConfigDefs("broker-dynamic-only")


def broker_key(name: str) -> ConfigKey | None:
    """A broker key of either broker registry (KafkaConfig's or the dynamic-only one)."""
    return BROKER_CONFIGS.get(name) or BROKER_DYNAMIC_ONLY_CONFIGS.get(name)
