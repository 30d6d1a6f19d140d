"""Properties files and ``--override`` arguments as the configuration reads them.

The text is Java's ``.properties`` grammar (``kafkapy.java_properties``); here its
errors become ConfigError, and a file is read the way Kafka's ``Utils.loadProps``
does: its bytes decoded as ISO-8859-1, not UTF-8.
"""
from __future__ import annotations

import os

from kafkapy import java_properties
from kafkapy.config.errors import ConfigError

__all__ = ["parse_properties", "load_properties", "parse_override"]


def parse_properties(text: str) -> dict[str, str]:
    """Parse properties text; later duplicates override earlier ones."""
    try:
        return java_properties.loads(text)
    except ValueError as err:   # a malformed \uXXXX escape
        raise ConfigError(str(err)) from None


def load_properties(path: str | os.PathLike[str]) -> dict[str, str]:
    """Read a properties file the way Kafka's Utils.loadProps does (ISO-8859-1)."""
    with open(path, "rb") as f:
        return parse_properties(f.read().decode("iso-8859-1"))


def parse_override(s: str) -> tuple[str, str]:
    """Split a ``--override key=value`` argument at its first ``=``.

    Like Kafka's ``CommandLineUtils.parseKeyValueArgs`` (missing values
    accepted), ``key`` and ``key=`` both give an empty value. Nothing is
    trimmed. An empty key is rejected.
    """
    key, _, value = s.partition("=")
    if not key:
        raise ConfigError(f"Invalid --override argument {s!r}: expected key=value")
    return key, value
