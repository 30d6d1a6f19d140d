"""Java ``.properties`` text, parsed exactly as ``java.util.Properties.load``.

Grammar (JDK LineReader + load0 + loadConvert):
- Natural lines end at ``\\n``, ``\\r`` or ``\\r\\n``. Leading `` \\t\\f`` of a
  line is skipped; blank lines are skipped.
- A logical line whose first non-blank character is ``#`` or ``!`` is a
  comment; comments are never continued.
- A line ending in an odd number of backslashes continues on the next natural
  line, whose leading whitespace is dropped. A continuation into a blank line
  ends the logical line; a trailing backslash at end of input is dropped.
- The key ends at the first unescaped ``=``, ``:`` or whitespace; whitespace
  after it, then at most one ``=``/``:``, then more whitespace is skipped.
  Trailing whitespace of the value is kept.
- Escapes: ``\\t \\n \\r \\f`` and ``\\uXXXX``; any other escaped character
  stands for itself. A malformed ``\\u`` raises ValueError (Java's
  IllegalArgumentException).
- Later keys override earlier ones.

Kafka reads a properties file (``server.properties``, ``meta.properties``) through an
InputStream, whose bytes ``Properties.load`` decodes as ISO-8859-1, not UTF-8; callers
decode so too, so non-ASCII text must be written as ``\\uXXXX`` escapes, exactly as with
Kafka.  ``dumps`` writes them so, and ``loads(dumps(p)) == p`` for every mapping of
strings.  No kafkapy imports: the configuration and the log dirs' ``meta.properties``
both read through it.
"""
from __future__ import annotations

from collections.abc import Mapping

__all__ = ["loads", "dumps"]

_BLANK = " \t\f"
_ESCAPES = {"t": "\t", "n": "\n", "r": "\r", "f": "\f"}
_HEX = set("0123456789abcdefABCDEF")


def loads(text: str) -> dict[str, str]:
    """Parse properties text; later duplicates override earlier ones."""
    result: dict[str, str] = {}
    for line in _logical_lines(text):
        key, value = _split_key_value(line)
        result[_unescape(key)] = _unescape(value)
    return result


def _logical_lines(text: str):
    """Yield logical lines: comments and blanks removed, continuations joined."""
    i, n = 0, len(text)
    while i < n:
        i = _skip_blank_and_newlines(text, i)
        if i >= n:
            return
        if text[i] in "#!":
            i = _end_of_natural_line(text, i)
            continue
        line, i = _read_logical_line(text, i)
        yield line


def _skip_blank_and_newlines(text: str, i: int) -> int:
    while i < len(text) and (text[i] in _BLANK or text[i] in "\r\n"):
        i += 1
    return i


def _end_of_natural_line(text: str, i: int) -> int:
    while i < len(text) and text[i] not in "\r\n":
        i += 1
    return i


def _read_logical_line(text: str, i: int) -> tuple[str, int]:
    parts: list[str] = []
    n = len(text)
    while True:
        end = _end_of_natural_line(text, i)
        chunk = text[i:end]
        if not _ends_with_odd_backslashes(chunk):
            parts.append(chunk)
            return "".join(parts), end
        parts.append(chunk[:-1])
        if end >= n:
            return "".join(parts), end
        i = end + (2 if text.startswith("\r\n", end) else 1)
        while i < n and text[i] in _BLANK:
            i += 1


def _ends_with_odd_backslashes(chunk: str) -> bool:
    count = len(chunk) - len(chunk.rstrip("\\"))
    return count % 2 == 1


def _split_key_value(line: str) -> tuple[str, str]:
    key_end, value_start, has_sep = _find_separator(line)
    n = len(line)
    while value_start < n:
        c = line[value_start]
        if c not in _BLANK:
            if not has_sep and c in "=:":
                has_sep = True
            else:
                break
        value_start += 1
    return line[:key_end], line[value_start:]


def _find_separator(line: str) -> tuple[int, int, bool]:
    escaped = False
    for pos, c in enumerate(line):
        if not escaped and c in "=:":
            return pos, pos + 1, True
        if not escaped and c in _BLANK:
            return pos, pos + 1, False
        escaped = (c == "\\") and not escaped
    return len(line), len(line), False


def _unescape(raw: str) -> str:
    if "\\" not in raw:
        return raw
    out: list[str] = []
    i, n = 0, len(raw)
    while i < n:
        c = raw[i]
        i += 1
        if c != "\\" or i >= n:
            out.append(c)
            continue
        c = raw[i]
        i += 1
        if c == "u":
            out.append(_decode_u(raw, i))
            i += 4
        else:
            out.append(_ESCAPES.get(c, c))
    text = "".join(out)
    # \\uXXXX escapes are UTF-16 units: a pair of them is one character beyond the BMP,
    # as in the Java String the same text loads into.
    return text.encode("utf-16-le", "surrogatepass").decode("utf-16-le", "surrogatepass")


def _decode_u(raw: str, i: int) -> str:
    digits = raw[i:i + 4]
    if len(digits) < 4 or not set(digits) <= _HEX:
        raise ValueError(f"Malformed \\uxxxx encoding: \\u{digits!s} in {raw!r}")
    return chr(int(digits, 16))


def dumps(props: Mapping[str, str], comment: str | None = None) -> str:
    """Properties text, one ``key=value`` line per key (sorted), after an optional
    ``# comment`` line; escaped so that ``Properties.load`` reads back ``props``."""
    lines = [f"# {comment}"] if comment else []
    lines += [f"{_escape(k, key=True)}={_escape(v, key=False)}" for k, v in sorted(props.items())]
    return "\n".join(lines) + "\n"


def _escape(text: str, *, key: bool) -> str:
    out = []
    for i, ch in enumerate(text):
        if ch == "\\":
            out.append("\\\\")
        elif ch in "\n\r\t\f":
            out.append({"\n": "\\n", "\r": "\\r", "\t": "\\t", "\f": "\\f"}[ch])
        elif (key and ch in "=: #!") or (not key and i == 0 and ch in " #!"):
            # Separators end a key; a value's leading blank would be stripped by the reader.
            out.append("\\" + ch)
        elif ord(ch) > 0x7E:
            # The reader decodes ISO-8859-1, as Kafka does: anything else goes as \\uXXXX
            # (UTF-16 units, so characters beyond the BMP become surrogate pairs).
            units = ch.encode("utf-16-be")
            out += [f"\\u{units[j]:02x}{units[j + 1]:02x}" for j in range(0, len(units), 2)]
        else:
            out.append(ch)
    return "".join(out)
