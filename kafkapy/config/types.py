"""Typed config values: parsing strings as Kafka's ConfigDef.parseType does,
and rendering values as ConfigDef.convertToString does.

Invariants:
- ``ConfigType`` numbers are DescribeConfigsResponse's ConfigType ids.
- Strings are trimmed with Java's ``String.trim`` (every char <= U+0020).
- Integers accept only ``[+-]?[0-9]+`` within the Java type's range; doubles
  follow ``Double.parseDouble`` (decimal, hex, NaN, Infinity, f/d suffixes,
  no underscores); LIST splits on ``\\s*,\\s*`` keeping empty items.
- Rendering: booleans lowercase, lists comma-joined, doubles in Java's
  ``Double.toString`` form (``1.0E7``), null stays None.
"""
from __future__ import annotations

import enum
import math
import re

from kafkapy.config.errors import ConfigError

__all__ = ["ConfigType", "Password", "parse_value", "render_value", "java_trim",
           "java_double_str"]


class ConfigType(enum.IntEnum):
    """Kafka's ConfigDef.Type, numbered as DescribeConfigs reports it."""

    UNKNOWN = 0
    BOOLEAN = 1
    STRING = 2
    INT = 3
    SHORT = 4
    LONG = 5
    DOUBLE = 6
    LIST = 7
    CLASS = 8
    PASSWORD = 9


class Password:
    """A secret value; never shown by repr/str (Kafka prints ``[hidden]``)."""

    __slots__ = ("value",)

    def __init__(self, value: str) -> None:
        self.value = value

    def __repr__(self) -> str:
        return "[hidden]"

    __str__ = __repr__

    def __eq__(self, other: object) -> bool:
        return isinstance(other, Password) and other.value == self.value

    def __hash__(self) -> int:
        return hash(self.value)


_INT_RANGES = {
    ConfigType.SHORT: (-(2 ** 15), 2 ** 15 - 1),
    ConfigType.INT: (-(2 ** 31), 2 ** 31 - 1),
    ConfigType.LONG: (-(2 ** 63), 2 ** 63 - 1),
}
_INT_RE = re.compile(r"[+-]?[0-9]+")
_DEC_RE = re.compile(r"[+-]?(?:NaN|Infinity|(?:[0-9]+\.?[0-9]*|\.[0-9]+)(?:[eE][+-]?[0-9]+)?[fFdD]?)")
_HEX_RE = re.compile(r"([+-]?)0[xX]((?:[0-9a-fA-F]+\.?[0-9a-fA-F]*|\.[0-9a-fA-F]+)[pP][+-]?[0-9]+)[fFdD]?")
_LIST_SPLIT = re.compile(r"[ \t\n\x0b\f\r]*,[ \t\n\x0b\f\r]*")
_CLASS_RE = re.compile(r"[A-Za-z_$][\w$]*(?:\.[A-Za-z_$][\w$]*)*")


def java_trim(s: str) -> str:
    """Java's String.trim: strip every character <= U+0020 at both ends."""
    start, end = 0, len(s)
    while start < end and s[start] <= " ":
        start += 1
    while end > start and s[end - 1] <= " ":
        end -= 1
    return s[start:end]


def parse_value(key: str, ctype: ConfigType, value: object) -> object:
    """Parse ``value`` (usually a string) into the Python value for ``ctype``."""
    if value is None:
        return None
    if isinstance(value, str):
        return _parse_string(key, ctype, value)
    return _check_typed(key, ctype, value)


def _parse_string(key: str, ctype: ConfigType, raw: str) -> object:
    s = java_trim(raw)
    if ctype == ConfigType.BOOLEAN:
        if s.lower() in ("true", "false"):
            return s.lower() == "true"
        raise ConfigError.invalid(key, raw, "Expected value to be either true or false")
    if ctype in (ConfigType.STRING, ConfigType.UNKNOWN):
        return s
    if ctype == ConfigType.PASSWORD:
        return Password(s)
    if ctype in _INT_RANGES:
        return _parse_int(key, ctype, raw, s)
    if ctype == ConfigType.DOUBLE:
        return _parse_double(key, raw, s)
    if ctype == ConfigType.LIST:
        return [] if not s else _LIST_SPLIT.split(s)
    if ctype == ConfigType.CLASS:
        if _CLASS_RE.fullmatch(s):
            return s
        raise ConfigError.invalid(key, raw, f"Class {s} could not be found.")
    raise ConfigError.invalid(key, raw, f"Unknown type {ctype.name}")


def _parse_int(key: str, ctype: ConfigType, raw: str, s: str) -> int:
    lo, hi = _INT_RANGES[ctype]
    if _INT_RE.fullmatch(s):
        n = int(s)
        if lo <= n <= hi:
            return n
    raise ConfigError.invalid(key, raw, f"Not a number of type {ctype.name}")


def _parse_double(key: str, raw: str, s: str) -> float:
    if _DEC_RE.fullmatch(s):
        body = s.rstrip("fFdD") if not s.endswith("Infinity") else s
        return float(body.replace("Infinity", "inf").replace("NaN", "nan"))
    m = _HEX_RE.fullmatch(s)
    if m:
        return float.fromhex(m.group(1) + "0x" + m.group(2))
    raise ConfigError.invalid(key, raw, "Not a number of type DOUBLE")


def _check_typed(key: str, ctype: ConfigType, value: object) -> object:
    """Accept already-typed Python values (defaults, programmatic configs)."""
    ok = {
        ConfigType.BOOLEAN: lambda v: isinstance(v, bool),
        ConfigType.DOUBLE: lambda v: isinstance(v, (int, float)) and not isinstance(v, bool),
        ConfigType.LIST: lambda v: isinstance(v, (list, tuple)),
        ConfigType.PASSWORD: lambda v: isinstance(v, Password),
    }.get(ctype)
    if ctype in _INT_RANGES:
        lo, hi = _INT_RANGES[ctype]
        if isinstance(value, int) and not isinstance(value, bool) and lo <= value <= hi:
            return value
        raise ConfigError.invalid(key, value, f"Not a number of type {ctype.name}")
    if ok is None or ok(value):
        if ctype == ConfigType.DOUBLE:
            return float(value)  # type: ignore[arg-type]
        if ctype == ConfigType.LIST:
            return [str(v) for v in value]  # type: ignore[union-attr]
        return value
    raise ConfigError.invalid(key, value, f"Expected value of type {ctype.name}")


def render_value(ctype: ConfigType | None, value: object) -> str | None:
    """ConfigDef.convertToString: the wire/string form of a typed value."""
    if value is None:
        return None
    if isinstance(value, bool):
        return "true" if value else "false"
    if isinstance(value, Password):
        return value.value
    if isinstance(value, (list, tuple)):
        return ",".join(str(v) for v in value)
    if isinstance(value, float):
        return java_double_str(value)
    return str(value)


def java_double_str(d: float) -> str:
    """Java's Double.toString for a Python float (shortest round-trip digits)."""
    if math.isnan(d):
        return "NaN"
    if math.isinf(d):
        return "Infinity" if d > 0 else "-Infinity"
    if d == 0:
        return "-0.0" if math.copysign(1.0, d) < 0 else "0.0"
    sign = "-" if d < 0 else ""
    digits, exp = _shortest_digits(abs(d))
    if 1e-3 <= abs(d) < 1e7:
        return sign + _plain(digits, exp)
    mantissa = digits[0] + "." + (digits[1:] or "0")
    return f"{sign}{mantissa}E{exp}"


def _shortest_digits(d: float) -> tuple[str, int]:
    """Significant digits of repr(d) and the decimal exponent of the first one."""
    r = repr(d)
    if "e" in r:
        m, _, ee = r.partition("e")
        return m.replace(".", "").rstrip("0") or "0", int(ee)
    intpart, _, frac = r.partition(".")
    if intpart != "0":
        return (intpart + frac).rstrip("0"), len(intpart) - 1
    stripped = frac.lstrip("0")
    return stripped.rstrip("0"), -(len(frac) - len(stripped) + 1)


def _plain(digits: str, exp: int) -> str:
    if exp >= 0:
        intpart = (digits[: exp + 1]).ljust(exp + 1, "0")
        frac = digits[exp + 1:] or "0"
        return f"{intpart}.{frac}"
    return "0." + "0" * (-exp - 1) + digits
