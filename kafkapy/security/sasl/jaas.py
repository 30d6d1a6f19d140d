"""Kafka's JAAS config text (``sasl.jaas.config``): login modules and their options.

``parse(text)`` reads ``<LoginModule class> <flag> key=value ... ;`` entries the way
Kafka's JaasConfig does (java.io.StreamTokenizer: ``//`` and ``/* */`` comments, values
quoted with ``"`` or ``'`` or bare words; a bare number is not a value), raising
ValueError with Kafka's messages.  Each entry is ``(module, flag, options)``.
"""
from __future__ import annotations

import re

PLAIN_LOGIN_MODULE = "org.apache.kafka.common.security.plain.PlainLoginModule"
SCRAM_LOGIN_MODULE = "org.apache.kafka.common.security.scram.ScramLoginModule"
_FLAGS = ("required", "requisite", "sufficient", "optional")

_TOKEN = re.compile(r"""
    \s+ | //[^\n]* | /\*.*?\*/                      # skipped
  | "(?P<dq>(?:[^"\\]|\\.)*)"? | '(?P<sq>(?:[^'\\]|\\.)*)'?   # quoted (may be unterminated)
  | (?P<num>[0-9.][0-9.\-]*)                        # StreamTokenizer's numbers: no text value
  | (?P<word>[A-Za-z_$\-\u00a0-\uffff][A-Za-z0-9_$.\-\u00a0-\uffff]*)
  | (?P<char>.)
""", re.VERBOSE | re.DOTALL)
_ESCAPES = {"n": "\n", "t": "\t", "r": "\r", "b": "\b", "f": "\f"}


def _tokens(text: str) -> list[tuple[str, str | None]]:
    """(kind, text) pairs: kind "word" (text value), "num" (none), or the character."""
    out: list[tuple[str, str | None]] = []
    for match in _TOKEN.finditer(text):
        if match.group("dq") is not None or match.group("sq") is not None:
            raw = match.group("dq") if match.group("dq") is not None else match.group("sq")
            out.append(("word", re.sub(r"\\(.)", lambda m: _ESCAPES.get(m.group(1), m.group(1)), raw)))
        elif match.group("word") is not None:
            out.append(("word", match.group("word")))
        elif match.group("num") is not None:
            out.append(("num", None))
        elif match.group("char") is not None:
            out.append((match.group("char"), None))
    return out


def parse(text: str) -> list[tuple[str, str, dict[str, str]]]:
    tokens = _tokens(text)
    entries = []
    i = 0
    while i < len(tokens):
        module = tokens[i][1] or ""
        i += 1
        if i >= len(tokens):
            raise ValueError("Login module control flag not specified in JAAS config")
        flag = (tokens[i][1] or "").lower()
        if flag not in _FLAGS:
            raise ValueError(f"Invalid login module control flag '{tokens[i][1]}' in JAAS config")
        i += 1
        options: dict[str, str] = {}
        while i < len(tokens) and tokens[i][0] != ";":
            key = tokens[i][1]
            if i + 2 >= len(tokens) or tokens[i + 1][0] != "=" or tokens[i + 2][1] is None:
                raise ValueError(f"Value not specified for key '{key}' in JAAS config")
            options[key or ""] = tokens[i + 2][1]
            i += 3
        if i >= len(tokens):
            raise ValueError("JAAS config entry not terminated by semi-colon")
        i += 1
        entries.append((module, flag, options))
    return entries


def single_module(text: str) -> tuple[str, str, dict[str, str]]:
    """The one login module a ``sasl.jaas.config`` property must hold (JaasContext.load)."""
    entries = parse(text)
    if not entries:
        raise ValueError("JAAS config property does not contain any login modules")
    if len(entries) != 1:
        raise ValueError(f"JAAS config property contains {len(entries)} login modules, "
                         "should be 1 module")
    return entries[0]
