"""The BROKER_LOGGER resource: this process's loggers, as DescribeConfigs and
IncrementalAlterConfigs see them.

Kafka's loggers are log4j's, named by Java class; kafkapy's are Python's, named by module
(``kafkapy.network``), plus ``root``.  Levels are shown in log4j's names (the most verbose
log4j level not above the stdlib number).  As Kafka (ConfigHelper, ConfigAdminManager):
- describe: ``root`` and every logger created in this process; a requested name that is
  no logger is left out; each entry is DYNAMIC_BROKER_LOGGER_CONFIG, writable, not
  sensitive, type UNKNOWN, with an empty documentation string;
- change: SET needs an existing logger (INVALID_CONFIG "Logger X does not exist!") and one
  of Kafka's level names, upper case (INVALID_CONFIG naming them); DELETE needs an
  existing logger other than root (INVALID_REQUEST); APPEND/SUBTRACT and unknown
  operations are INVALID_REQUEST.

Invariant: nothing here changes a level.  kafkapy's structlog loggers are built with a
level floor fixed at start-up (``logging_setup``), so a runtime change to a more verbose
level would be acknowledged but not honoured; the handler therefore validates only and
refuses to apply (``kafkapy.log.levels`` sets levels at start-up).
"""
from __future__ import annotations

import logging
from typing import Iterable

from kafkapy.config.describe import ConfigEntry, ConfigSource
from kafkapy.logging_setup import LEVELS
from kafkapy.protocol.errors import ErrorCode, KafkaError

__all__ = ["ROOT_LOGGER", "describe_loggers", "log4j_level_name", "validate_logger_ops"]

ROOT_LOGGER = "root"
SET, DELETE, APPEND, SUBTRACT = 0, 1, 2, 3
# Kafka's LogLevelConfig.VALID_LOG_LEVELS, in the order its message lists them.
KAFKA_LEVELS = ("DEBUG", "ERROR", "FATAL", "INFO", "TRACE", "WARN")
_OP_NAMES = {APPEND: "APPEND", SUBTRACT: "SUBTRACT"}


def logger_names() -> list[str]:
    manager = logging.Logger.manager
    return [ROOT_LOGGER] + sorted(n for n, lg in list(manager.loggerDict.items())
                                  if isinstance(lg, logging.Logger))


def describe_loggers(keys: Iterable[str] | None = None) -> list[ConfigEntry]:
    """The BROKER_LOGGER view: ``root`` and every logger created in this process."""
    names = logger_names()
    if keys:
        asked = set(keys)
        names = [n for n in names if n in asked]
    return [_logger_entry(n) for n in names]


def _logger_entry(name: str) -> ConfigEntry:
    logger = logging.getLogger() if name == ROOT_LOGGER else logging.getLogger(name)
    return ConfigEntry(name=name, value=log4j_level_name(logger.getEffectiveLevel()),
                       read_only=False, is_default=False,
                       source=int(ConfigSource.DYNAMIC_BROKER_LOGGER_CONFIG),
                       is_sensitive=False, documentation="")


def log4j_level_name(level: int) -> str:
    """A stdlib level as log4j's name: the most verbose log4j level not above it."""
    chosen = "ALL"
    for number, name in sorted((n, name) for name, n in LEVELS.items()):
        if number <= level:
            chosen = name
    return chosen


def validate_logger_ops(ops: Iterable[tuple[str, int, str | None]]) -> None:
    """Kafka's checks of (logger, operation, level) changes; KafkaError on the first bad one."""
    existing = set(logger_names())
    for name, op, level in ops:
        if op in (SET, DELETE) and name not in existing:
            raise KafkaError(ErrorCode.INVALID_CONFIG, f"Logger {name} does not exist!")
        if op == SET and level not in KAFKA_LEVELS:
            raise KafkaError(ErrorCode.INVALID_CONFIG,
                             f"Cannot set the log level of {name} to {level} as it is not a "
                             f"supported log level. Valid log levels are {', '.join(KAFKA_LEVELS)}")
        if op == DELETE and name == ROOT_LOGGER:
            raise KafkaError(ErrorCode.INVALID_REQUEST,
                             f"Removing the log level of the {ROOT_LOGGER} logger is not allowed")
        if op in _OP_NAMES:
            raise KafkaError(ErrorCode.INVALID_REQUEST,
                             f"{_OP_NAMES[op]} operation is not allowed for the BROKER_LOGGER resource")
        if op not in (SET, DELETE, APPEND, SUBTRACT):
            raise KafkaError(ErrorCode.INVALID_REQUEST,
                             f"Unknown operation type {op} is not allowed for the BROKER_LOGGER resource")
