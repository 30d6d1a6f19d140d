"""Responses whose record bytes go from segment files to the socket with os.sendfile.

A response that gives its body in parts itself (``PartsResponse``: bytes, and the file
slices read for it, as a follower's Fetch answer does) is framed by ``framed_parts``; for
the others, a Fetch handler puts a 16-byte random marker in each partition's ``records`` field and
remembers the file ranges that belong there.  The response is then encoded as usual (by
kafka-python, or for a follower by ``replication.fetch_response``: every other byte is
the encoder's), and ``splice`` cuts the frame at each marker: the marker's length prefix
is rewritten for the real size (int32 in non-flexible versions, unsigned varint of
size+1 in flexible ones), the frame size is corrected, and the marker is replaced by
``FileRange`` parts that the connection sends with sendfile (or reads and writes when it
cannot).

Invariants: the frame size equals the bytes actually sent; each FileRange
owns a duplicated file descriptor (closed once sent or dropped), so a segment
deleted meanwhile can never make us send another file's bytes.
"""
from __future__ import annotations

import itertools
import os
import struct

from kafkapy.protocol.varint import uvarint

MARKER_SIZE = 16
_INT32 = struct.Struct(">i")
_MARKER_PREFIX = os.urandom(MARKER_SIZE - 8)
_MARKER_COUNT = itertools.count()


class FileRange:
    __slots__ = ("fd", "position", "remaining")

    def __init__(self, fd: int, position: int, size: int) -> None:
        self.fd = os.dup(fd)
        self.position = position
        self.remaining = size

    def read_all(self) -> bytes:
        out = bytearray()
        while self.remaining:
            chunk = os.pread(self.fd, self.remaining, self.position)
            if not chunk:
                raise EOFError("segment file shorter than its fetch range")
            out += chunk
            self.position += len(chunk)
            self.remaining -= len(chunk)
        return bytes(out)

    def close(self) -> None:
        if self.fd >= 0:
            os.close(self.fd)
            self.fd = -1


class ZeroCopyResponse:
    """A response plus, per marker, the segment slices that replace it."""

    __slots__ = ("response", "slices")

    def __init__(self, response, slices: dict[bytes, list]) -> None:
        self.response = response
        self.slices = slices


class PartsResponse:
    """A response that encodes its body in parts itself (``encode_parts()``: bytes, and the
    file slices read for it), framed by ``framed_parts``."""

    __slots__ = ("response",)

    def __init__(self, response) -> None:
        self.response = response


def new_marker() -> bytes:
    """A marker no other marker of this process shares: a random prefix drawn once, then a
    count (a random draw per marker cost a system call on every follower's answer).  The
    rest of a frame is the encoder's fields, which match 16 chosen bytes by chance only."""
    return _MARKER_PREFIX + next(_MARKER_COUNT).to_bytes(8, "big")


def splice(frame: bytes, slices: dict[bytes, list], flexible: bool) -> list:
    """Cut an encoded, framed response at each marker; returns bytes and FileRange parts."""
    parts: list = []
    pos = 4
    growth = 0
    old_prefix = 1 if flexible else 4
    for marker, file_slices in slices.items():
        at = frame.find(marker, pos)
        if at < 0:
            raise ValueError("records marker missing from the encoded response")
        size = sum(s.size for s in file_slices)
        prefix = uvarint(size + 1) if flexible else _INT32.pack(size)
        parts.append(frame[pos:at - old_prefix] + prefix)
        parts.extend(FileRange(s.fd, s.position, s.size) for s in file_slices if s.size)
        growth += size - MARKER_SIZE + len(prefix) - old_prefix
        pos = at + MARKER_SIZE
    parts.append(frame[pos:])
    head = _INT32.pack(len(frame) - 4 + growth)
    parts[0] = head + parts[0]
    return parts


def framed_parts(correlation_id: int, flexible: bool, body: list):
    """Size, response header and a body given as parts -- bytes, and file slices (``fd``,
    ``position``, ``size``) -- as the frame's parts, the slices as FileRanges; bytes alone
    when the body has no slice.  The bytes are kafka-python's ``encode(header=True,
    framed=True)``: header v1 (the correlation id and no tagged field) for a flexible
    version, else v0 (the correlation id), every API's rule but ApiVersions', which
    carries no file ranges."""
    header = _INT32.pack(correlation_id) + (b"\x00" if flexible else b"")
    first = body[0]
    if len(body) == 1:
        return b"".join((_INT32.pack(len(header) + len(first)), header, first))
    size = len(header) + len(first)
    parts: list = [None]
    for part in body[1:]:
        if isinstance(part, bytes):
            size += len(part)
        else:
            size += part.size
            part = FileRange(part.fd, part.position, part.size)
        parts.append(part)
    parts[0] = _INT32.pack(size) + header + first
    return parts


def materialize(parts: list) -> bytes:
    """The fallback: read every file range and join (transports without sendfile)."""
    out = []
    for part in parts:
        if isinstance(part, FileRange):
            out.append(part.read_all())
            part.close()
        else:
            out.append(part)
    return b"".join(out)
