"""Responses whose topics' partition arrays are already-encoded bytes.

Building one kafka-python object per partition, then encoding it field by field, costs
a few microseconds per partition: 40 ms for a Metadata or ListOffsets answer naming
10,000 partitions.  A handler may instead leave each topic's ``partitions`` empty and
give its encoded array (count prefix included) in ``kept``; ``Spliced.encode`` then
returns exactly the bytes kafka-python gives for the full response:

- the response is encoded by kafka-python with ``topics`` empty, and the encoded
  topics array replaces its empty one, found ``top_tail`` bytes before the end (the
  fields after ``topics``, tagged fields included);
- each topic is encoded by kafka-python with its empty ``partitions``, and the kept
  array replaces the empty one ``topic_tail`` bytes before the topic's end.

Invariant: ``topics`` is the response's last array field and ``partitions`` the
topic's; the tails hold only fixed-size fields (checked: an empty array must sit
where expected, else ``encode`` raises rather than send wrong bytes).  Everything
else (``version``, fields) reads through to the response.
"""
from __future__ import annotations

import struct

from kafka.protocol.schemas.fields.codecs import EncodeBufferPool

_INT32 = struct.Struct(">i")


def array_size(count: int, flexible: bool) -> bytes:
    """An array's count prefix: int32, or (flexible) unsigned varint of count + 1."""
    if not flexible:
        return _INT32.pack(count)
    value, out = count + 1, bytearray()
    while value >= 0x80:
        out.append((value & 0x7F) | 0x80)
        value >>= 7
    out.append(value)
    return bytes(out)


def empty_array(flexible: bool) -> bytes:
    return array_size(0, flexible)


def encode_element(element_struct, version: int, flexible: bool, item) -> bytes:
    """One struct (an array element) as kafka-python encodes it at ``version``."""
    encode = element_struct.compiled_encode_into(version, compact=flexible, tagged=flexible)
    with EncodeBufferPool.acquire() as out:
        encode(item, out)
        return bytes(out.result())


def splice_at(encoded: bytes, tail: int, flexible: bool, array: bytes) -> bytes:
    """``encoded`` with the empty array that ends ``tail`` bytes before its end
    replaced by ``array``."""
    empty = empty_array(flexible)
    cut = len(encoded) - tail - len(empty)
    if cut < 0 or encoded[cut:cut + len(empty)] != empty:
        raise ValueError("encoded message does not have the expected layout")
    return encoded[:cut] + array + encoded[cut + len(empty):]


def cut_array(version: int, flexible: bool, element_struct, topic, tail: int,
              partitions: list) -> bytes:
    """The encoded ``partitions`` array of ``topic`` (whose own ``partitions`` is empty):
    the bytes between its leading fields and its ``tail``, encoded with and without."""
    start = len(encode_element(element_struct, version, flexible, topic)) - tail \
        - len(empty_array(flexible))
    topic.partitions = partitions
    try:
        full = encode_element(element_struct, version, flexible, topic)
    finally:
        topic.partitions = []
    return full[start:len(full) - tail]


class Spliced:
    """A response plus, per topic (by ``id``), its encoded partition array."""

    __slots__ = ("response", "kept", "_topic_struct", "_top_tail", "_topic_tail")

    def __init__(self, response, kept: dict[int, bytes], topic_struct,
                 top_tail: int, topic_tail: int) -> None:
        self.response = response
        self.kept = kept
        self._topic_struct = topic_struct
        self._top_tail = top_tail
        self._topic_tail = topic_tail

    @property
    def API_KEY(self) -> int:   # noqa: N802 (kafka-python's name)
        return self.response.API_KEY

    def __getattr__(self, name):
        return getattr(self.response, name)

    def with_header(self, correlation_id=0):
        self.response.with_header(correlation_id=correlation_id)

    def encode(self, version=None, header=False, framed=False):
        response = self.response
        if version is not None:
            response.API_VERSION = version
        version = response.API_VERSION
        flexible = response.flexible_version_q(version)
        topics = response.topics
        response.topics = []
        try:
            base = bytes(response.encode(header=header))
        finally:
            response.topics = topics
        array = b"".join([array_size(len(topics), flexible)]
                         + [self._topic(version, flexible, t) for t in topics])
        body = splice_at(base, self._top_tail, flexible, array)
        return _INT32.pack(len(body)) + body if framed else body

    def _topic(self, version: int, flexible: bool, topic) -> bytes:
        encoded = encode_element(self._topic_struct, version, flexible, topic)
        array = self.kept.get(id(topic))
        if array is None:
            return encoded
        return splice_at(encoded, self._topic_tail, flexible, array)
