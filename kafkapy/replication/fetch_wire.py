"""What the replication round's Fetch request (``fetch_request``) and answer
(``fetch_response``) share on the wire, both written and read by hand.

- A topic reference: from v13 the topic id (16 bytes; the zero id reads as None, as
  kafka-python reads it, and None is written as the zero id), at v12 the name (compact
  string, never null).
- Compact bytes and strings: unsigned varint of length + 1 (0: null), then the bytes.
- ``MALFORMED``: what reading past the end or a bad varint or name raises; each decoder
  answers None for it (kafka-python then decodes, or refuses).
"""
from __future__ import annotations

import struct
import uuid

from kafkapy.protocol.varint import read_uvarint, write_uvarint

NO_ID = bytes(16)
_IDS: dict[bytes, uuid.UUID | bool] = {}
_IDS_LIMIT = 20_000     # a few MiB at most, whatever ids the requests carry
MALFORMED = (struct.error, IndexError, ValueError, UnicodeDecodeError)


def write_compact_bytes(out: bytearray, data: bytes | None) -> None:
    if data is None:
        out.append(0)
        return
    write_uvarint(out, len(data) + 1)
    out += data


def write_topic_ref(out: bytearray, name: str, topic_id: uuid.UUID | None,
                    by_id: bool) -> None:
    if by_id:
        out += NO_ID if topic_id is None else topic_id.bytes
    else:
        write_compact_bytes(out, name.encode())


def _topic_id(raw: bytes):
    """The UUID of 16 bytes (False for the zero id), kept for the next read: a replication
    round reads the same few ids every time, and making a UUID costs more than the rest of
    a partition's decoding."""
    if len(raw) != 16:
        raise ValueError("topic id cut short")
    if len(_IDS) >= _IDS_LIMIT:
        _IDS.clear()
    topic_id = _IDS[raw] = raw != NO_ID and uuid.UUID(bytes=raw)
    return topic_id


def read_topic_ref(data: memoryview, pos: int, by_id: bool):
    """(name, topic id, position after): by id, a name of ""; by name, no id."""
    if by_id:
        raw = bytes(data[pos:pos + 16])
        topic_id = _IDS.get(raw)
        if topic_id is None:
            topic_id = _topic_id(raw)
        return "", topic_id or None, pos + 16
    size, pos = read_uvarint(data, pos)
    if size == 0:
        raise ValueError("null topic name")
    return bytes(data[pos:pos + size - 1]).decode(), None, pos + size - 1
