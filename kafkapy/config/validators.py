"""Value validators, worded like Kafka's ConfigDef validators.

A validator is a callable ``(key, parsed_value) -> None`` that raises
ConfigError naming the key and value. Validators never see None unless a key
is explicitly set to null; defaults are assumed valid (checked in tests).
"""
from __future__ import annotations

import re
from typing import Callable, Iterable

from kafkapy.config.errors import ConfigError

__all__ = ["Validator", "at_least", "between", "in_set", "list_in", "non_empty",
           "non_null", "one_of_or", "version_string", "throttled_replicas", "custom", "chain"]

Validator = Callable[[str, object], None]


def _require_value(key: str, value: object) -> None:
    if value is None:
        raise ConfigError.invalid(key, value, "Value must be non-null")


def at_least(minimum: float) -> Validator:
    """Range.atLeast: value >= minimum."""
    def check(key: str, value: object) -> None:
        _require_value(key, value)
        if value < minimum:  # type: ignore[operator]
            raise ConfigError.invalid(key, value, f"Value must be at least {_num(minimum)}")
    check.describe = f"[{_num(minimum)},...]"  # type: ignore[attr-defined]
    return check


def between(minimum: float, maximum: float) -> Validator:
    """Range.between: minimum <= value <= maximum."""
    def check(key: str, value: object) -> None:
        _require_value(key, value)
        if value < minimum:  # type: ignore[operator]
            raise ConfigError.invalid(key, value, f"Value must be at least {_num(minimum)}")
        if value > maximum:  # type: ignore[operator]
            raise ConfigError.invalid(key, value, f"Value must be no more than {_num(maximum)}")
    check.describe = f"[{_num(minimum)},...,{_num(maximum)}]"  # type: ignore[attr-defined]
    return check


def in_set(*allowed: str) -> Validator:
    """ValidString.in: exact (case-sensitive) membership."""
    def check(key: str, value: object) -> None:
        if value not in allowed:
            raise ConfigError.invalid(key, value, "String must be one of: " + ", ".join(allowed))
    check.describe = "[" + ", ".join(allowed) + "]"  # type: ignore[attr-defined]
    return check


def list_in(*allowed: str) -> Validator:
    """ValidList.in: every element of the list is one of ``allowed``."""
    def check(key: str, value: object) -> None:
        _require_value(key, value)
        for item in value:  # type: ignore[union-attr]
            if item not in allowed:
                raise ConfigError.invalid(key, item, "String must be one of: " + ", ".join(allowed))
    check.describe = "[" + ", ".join(allowed) + "]"  # type: ignore[attr-defined]
    return check


def non_empty(key: str, value: object) -> None:
    """NonEmptyString: a string that is not empty after trimming."""
    if value is None or (isinstance(value, str) and not value):
        raise ConfigError.invalid(key, value, "String may not be empty")


def non_null(key: str, value: object) -> None:
    """NonNullValidator."""
    _require_value(key, value)


def one_of_or(special: int, minimum: int, maximum: int) -> Validator:
    """An int equal to ``special`` or within [minimum, maximum] (compression levels)."""
    def check(key: str, value: object) -> None:
        _require_value(key, value)
        if value != special and not minimum <= value <= maximum:  # type: ignore[operator]
            raise ConfigError.invalid(
                key, value, f"Value must be {special} or between {minimum} and {maximum}")
    check.describe = f"[{minimum},...,{maximum}] or {special}"  # type: ignore[attr-defined]
    return check


_VERSION_RE = re.compile(r"(0\.(8\.[0-2]|9\.0|10\.[0-2]|11\.0)|[1-3]\.[0-9])(\.[0-9]+)?(-IV[0-9]+)?")


def version_string(key: str, value: object) -> None:
    """MetadataVersionValidator, approximated: a Kafka version like 2.8 or 3.0-IV1."""
    if not isinstance(value, str) or not _VERSION_RE.fullmatch(value):
        raise ConfigError.invalid(key, value, f"Unknown metadata.version '{value}'")


_REPLICA_RE = re.compile(r"[0-9]+:[0-9]+")


def throttled_replicas(key: str, value: object) -> None:
    """ThrottledReplicaListValidator: ``*`` or ``partition:broker`` pairs."""
    items = [v.strip() for v in value]  # type: ignore[union-attr]
    if items == ["*"] or all(_REPLICA_RE.fullmatch(v) for v in items):
        return
    raise ConfigError.invalid(
        key, value, "must be the literal '*' or a list of replicas in the following format: "
        "[partitionId]:[brokerId],[partitionId]:[brokerId],...")


def custom(predicate: Callable[[object], bool], reason: str) -> Validator:
    """Any predicate; ``reason`` is the text after the colon on failure."""
    def check(key: str, value: object) -> None:
        if not predicate(value):
            raise ConfigError.invalid(key, value, reason)
    return check


def _num(x: float) -> str:
    return str(int(x)) if float(x).is_integer() and abs(x) < 2 ** 63 else str(x)


def chain(validators: Iterable[Validator]) -> Validator:
    """Run several validators in order."""
    vs = list(validators)

    def check(key: str, value: object) -> None:
        for v in vs:
            v(key, value)
    return check
