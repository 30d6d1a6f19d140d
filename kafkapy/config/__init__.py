"""Broker configuration: Java properties parsing, the typed broker and topic
key registries, the validated BrokerConfig, and DescribeConfigs views."""
from __future__ import annotations

# The key registries of ``definitions`` are filled here, before any other module of the
# package reads them: each key module defines its keys when imported (Kafka 3.9's other
# broker keys, accepted and described, after kafkapy's own).
from kafkapy.config import broker_keys, broker_keys_accepted, topic_keys  # noqa: F401
from kafkapy.config.broker import BrokerConfig, validate_topic_configs
from kafkapy.config.definitions import BROKER_CONFIGS, TOPIC_CONFIGS, ConfigKey, ConfigType
from kafkapy.config.describe import ConfigEntry, ConfigSource, describe_broker, describe_topic
from kafkapy.config.errors import ConfigError
from kafkapy.config.listeners import Endpoint
from kafkapy.config.properties import load_properties, parse_override, parse_properties

__all__ = ["BROKER_CONFIGS", "TOPIC_CONFIGS", "BrokerConfig", "ConfigEntry", "ConfigError", "ConfigKey",
           "ConfigSource", "ConfigType", "Endpoint", "describe_broker", "describe_topic", "load_properties",
           "parse_override", "parse_properties", "validate_topic_configs"]
