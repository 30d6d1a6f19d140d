"""The one exception type of the configuration package.

Invariant: every ConfigError names the offending key (``.key``) whenever one is
involved, so request handlers can report INVALID_CONFIG (error 40) with a
message the operator can act on. Messages follow Kafka's ConfigException
wording: ``Invalid value <v> for configuration <key>: <reason>``.
"""
from __future__ import annotations

__all__ = ["ConfigError"]


class ConfigError(ValueError):
    """A configuration key or value was rejected."""

    def __init__(self, message: str, key: str | None = None, value: object = None) -> None:
        super().__init__(message)
        self.key = key
        self.value = value

    @classmethod
    def invalid(cls, key: str, value: object, reason: str | None = None) -> "ConfigError":
        """Kafka's ``ConfigException(name, value, message)`` wording."""
        text = f"Invalid value {_java_str(value)} for configuration {key}"
        if reason:
            text += f": {reason}"
        return cls(text, key=key, value=value)


def _java_str(value: object) -> str:
    """Render a value the way Java's toString would inside an error message."""
    if value is None:
        return "null"
    if isinstance(value, bool):
        return "true" if value else "false"
    if isinstance(value, (list, tuple)):
        return "[" + ", ".join(_java_str(v) for v in value) + "]"
    return str(value)
