"""Unsigned varints of the flexible protocol versions (compact lengths, tagged fields).

``read_uvarint(view, pos)`` -> (value, position after it): 7 bits per byte, least
significant group first, high bit set on every byte but the last; at most 5 bytes
(a 32-bit value), longer raises ValueError; IndexError past the end of ``view``.
``write_uvarint(out, value)`` appends ``value`` (>= 0) to ``out`` in that form;
``uvarint(value)`` is those bytes.
"""
from __future__ import annotations


def read_uvarint(view, pos: int) -> tuple[int, int]:
    byte = view[pos]
    if byte < 0x80:
        return byte, pos + 1    # one byte: every count and size below 128
    value = shift = 0
    while True:
        byte = view[pos]
        pos += 1
        value |= (byte & 0x7F) << shift
        if byte < 0x80:
            return value, pos
        shift += 7
        if shift > 28:
            raise ValueError("varint too long")


def write_uvarint(out: bytearray, value: int) -> None:
    while value >= 0x80:
        out.append((value & 0x7F) | 0x80)
        value >>= 7
    out.append(value)


def uvarint(value: int) -> bytes:
    out = bytearray()
    write_uvarint(out, value)
    return bytes(out)
