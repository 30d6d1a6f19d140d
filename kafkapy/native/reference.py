"""Pure-Python twin of ``_batchcheck.walk``: the per-record walk of a v2 batch.

It is the specification the C code is tested against (``tests/unit/native/
test_batchcheck.py`` compares both on crafted and random batches) and the
fallback when the extension was not built.  Both must return identical tuples.

``walk(data, count, base_offset, base_ts, batch_log_append, batch_max_ts, compacted,
topic_create_time, now, before, after, stream, strict)`` reads exactly ``count`` records from
the uncompressed record bytes ``data`` and returns
``(failure, max_ts, max_index, in_order, errors)``:

- ``failure``: None, or ``(error_code, message)`` when the records cannot be framed
  (the batch fails as a whole, as Kafka's record iterator throws);
- ``max_ts`` / ``max_index``: the largest record timestamp and the index of the first
  record carrying it (-1 / -1 when every timestamp is -1);
- ``in_order``: every record's offsetDelta equals its index;
- ``errors``: ``(index, kind, timestamp, offset, key_size, value_size)`` per refused
  record, kind 1 = no key on a compacted topic, 2 = timestamp out of range, 3 = a
  LogAppendTime batch sent to a LogAppendTime topic (Kafka's validateKey /
  validateTimestamp; the key check wins when both apply); with ``strict``, first of all
  4 = attributes byte with its high bit set, 5 = a header key that is not UTF-8: both are
  legal for Kafka but stock readers (kafka-python) cannot parse them.

Record layout (zig-zag varints; Kafka's DefaultRecord):
    length | attributes int8 | timestampDelta varlong | offsetDelta varint |
    keyLength | key | valueLength | value | headerCount | (hKeyLength hKey hValueLength hValue)*
Arithmetic wraps at 64 bits as Java's longs do; varints are read as Java's ByteUtils
reads them (5 bytes at most for an int, 10 for a long, high bits dropped).
"""
from __future__ import annotations

INVALID_RECORD = 87
UNKNOWN_SERVER_ERROR = -1
_M64 = (1 << 64) - 1
_M32 = (1 << 32) - 1

PREMATURE_EOF = "Incorrect declared batch size, premature EOF reached"
STILL_REMAINING = "Incorrect declared batch size, records still remaining in file"
INVALID_STRUCTURE = "Found invalid record structure"

KEYLESS, OUT_OF_RANGE, LOG_APPEND_TYPE, HIGH_ATTRIBUTES, HEADER_KEY_NOT_UTF8 = 1, 2, 3, 4, 5


class _Framing(Exception):
    def __init__(self, code: int, message: str) -> None:
        super().__init__(message)
        self.code = code
        self.message = message


def wrap64(v: int) -> int:
    v &= _M64
    return v - (1 << 64) if v >> 63 else v


def _varint(data, p: int, end: int, max_bytes: int,
            eof: str = INVALID_STRUCTURE) -> tuple[int, int, bool]:
    """(raw value, new position, too_long); running past ``end`` is a framing error
    (INVALID_RECORD with the message ``eof``)."""
    raw = shift = 0
    for _ in range(max_bytes):
        if p >= end:
            raise _Framing(INVALID_RECORD, eof)
        b = data[p]
        p += 1
        raw |= (b & 0x7F) << shift
        shift += 7
        if not b & 0x80:
            return raw, p, False
    return raw, p, True


def _zigzag32(raw: int) -> int:
    raw &= _M32
    v = (raw >> 1) ^ -(raw & 1)
    return v


def _zigzag64(raw: int) -> int:
    raw &= _M64
    return (raw >> 1) ^ -(raw & 1)


def _int(data, p: int, end: int) -> tuple[int, int]:
    raw, p, too_long = _varint(data, p, end, 5)
    if too_long:
        raise _Framing(INVALID_RECORD, INVALID_STRUCTURE)
    return _zigzag32(raw), p


def _long(data, p: int, end: int) -> tuple[int, int]:
    raw, p, too_long = _varint(data, p, end, 10)
    if too_long:
        raise _Framing(INVALID_RECORD, INVALID_STRUCTURE)
    return _zigzag64(raw), p


def _blob(data, p: int, end: int) -> tuple[int, int]:
    n, p = _int(data, p, end)
    if n > 0:
        if n > end - p:
            raise _Framing(INVALID_RECORD, INVALID_STRUCTURE)
        p += n
    return n, p


def _length(data, pos: int, n: int, stream: bool) -> tuple[int, int]:
    """The record's length prefix; Kafka's answers differ for bytes and streams."""
    raw, pos, too_long = _varint(data, pos, n, 5, PREMATURE_EOF)
    if not too_long:
        return _zigzag32(raw), pos
    if stream:
        raise _Framing(INVALID_RECORD, PREMATURE_EOF)
    raise _Framing(UNKNOWN_SERVER_ERROR,
                   "Varint is too long, the most significant bit in the 5th byte is set, "
                   f"converted value: {raw & _M32:x}")


def _headers(data, p: int, end: int, strict: bool) -> tuple[int, int]:
    """Skips the headers; returns (position, hazard)."""
    hazard = 0
    count, p = _int(data, p, end)
    if count < 0:
        raise _Framing(INVALID_RECORD, f"Found invalid number of record headers {count}")
    if count > end - p:
        raise _Framing(INVALID_RECORD, f"Found invalid number of record headers. {count} is "
                                       "larger than the remaining size of the buffer")
    for _ in range(count):
        key_size, p = _int(data, p, end)
        if key_size < 0:
            raise _Framing(INVALID_RECORD, f"Invalid negative header key size {key_size}")
        if key_size > end - p:
            raise _Framing(INVALID_RECORD, INVALID_STRUCTURE)
        if strict and not hazard and not _is_utf8(data[p:p + key_size]):
            hazard = HEADER_KEY_NOT_UTF8
        p += key_size
        _, p = _blob(data, p, end)
    return p, hazard


def _is_utf8(raw) -> bool:
    try:
        bytes(raw).decode("utf-8")
    except UnicodeDecodeError:
        return False
    return True


def _record(data, pos: int, n: int, stream: bool, strict: bool):
    """One record at ``pos``: (end, ts_delta, offset_delta, key_size, value_size, hazard)."""
    length, pos = _length(data, pos, n, stream)
    if length < 0:
        raise _Framing(INVALID_RECORD, INVALID_STRUCTURE)
    if length > n - pos:
        raise _Framing(INVALID_RECORD, f"Invalid record size: expected {length} bytes in record "
                                       f"payload, but instead the buffer has only {n - pos} "
                                       "remaining bytes.")
    end = pos + length
    if pos >= end:
        raise _Framing(INVALID_RECORD, INVALID_STRUCTURE)
    # Attributes are unused in v2 and Kafka takes any byte, but kafka-python reads the
    # byte as a varint: with its high bit set, it misreads the whole record.
    high_attributes = strict and data[pos] & 0x80
    p = pos + 1
    ts_delta, p = _long(data, p, end)
    offset_delta, p = _int(data, p, end)
    key_size, p = _blob(data, p, end)
    value_size, p = _blob(data, p, end)
    p, hazard = _headers(data, p, end, strict)
    if p != end:
        raise _Framing(INVALID_RECORD, f"Invalid record size: expected to read {length} bytes "
                                       f"in record payload, but instead read {p - pos}")
    return (end, ts_delta, offset_delta, key_size, value_size,
            HIGH_ATTRIBUTES if high_attributes else hazard)


def walk(data, count: int, base_offset: int, base_ts: int, batch_log_append: bool,
         batch_max_ts: int, compacted: bool, topic_create_time: bool, now: int,
         before: int, after: int, stream: bool, strict: bool = False):
    """See the module docstring."""
    n = len(data)
    pos = 0
    max_ts = max_index = -1
    in_order = True
    errors = []
    try:
        for i in range(count):  # each pass consumes >= 2 bytes or raises
            pos, ts_delta, offset_delta, key_size, value_size, hazard = _record(
                data, pos, n, stream, strict)
            ts = batch_max_ts if batch_log_append else wrap64(base_ts + ts_delta)
            if offset_delta != i:
                in_order = False
            if ts > max_ts:
                max_ts, max_index = ts, i
            kind = hazard or _refusal(ts, key_size, compacted, topic_create_time, batch_log_append,
                            now, before, after)
            if kind:
                errors.append((i, kind, ts, wrap64(base_offset + offset_delta), key_size,
                               value_size))
        if pos != n:
            raise _Framing(INVALID_RECORD, STILL_REMAINING)
    except _Framing as f:
        return (f.code, f.message), -1, -1, False, []
    return None, max_ts, max_index, in_order, errors


def find_at_or_after(data, count: int, base_ts: int, batch_log_append: bool,
                     batch_max_ts: int, target: int):
    """(offset_delta, timestamp) of the first record with timestamp >= target, or None."""
    pos, n = 0, len(data)
    try:
        for _ in range(count):
            pos, ts_delta, offset_delta, _k, _v, _h = _record(data, pos, n, True, False)
            ts = batch_max_ts if batch_log_append else wrap64(base_ts + ts_delta)
            if ts >= target:
                return offset_delta, ts
    except _Framing:
        return None
    return None


def _refusal(ts: int, key_size: int, compacted: bool, topic_create_time: bool,
             batch_log_append: bool, now: int, before: int, after: int) -> int:
    if compacted and key_size < 0:
        return KEYLESS
    if topic_create_time and ts != -1:
        diff = wrap64(now - ts)
        if diff > before or wrap64(-diff) > after:
            return OUT_OF_RANGE
        return 0
    if batch_log_append:
        return LOG_APPEND_TYPE
    return 0
