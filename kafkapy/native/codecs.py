"""Decompression of a v2 batch's records, strict about truncation and trailing bytes.

One call per batch (the per-record work is elsewhere), in the codec libraries the project
already depends on.  The framings are the ones Kafka's Java client reads:

- gzip (1): RFC 1952 members (``GZIPInputStream``); several members are allowed.
- snappy (2): xerial framing (``\\x82SNAPPY\\x00`` magic, two int32s, then int32-length
  prefixed raw snappy chunks) as ``SnappyInputStream`` reads it, or, without that magic,
  the whole payload as one raw snappy block (its fallback).
- lz4 (3): one LZ4 frame (``KafkaLZ4BlockInputStream``).
- zstd (4): zstd frames (``ZstdInputStream``).

Invariants: ``decompress`` returns every byte the stream holds or raises ``CodecError``;
a stream that stops before its end mark (truncated), is not of the codec at all, or has
bytes after its end is an error: Kafka itself ignores bytes after an lz4/zstd end mark,
but no producer writes them and readers such as librdkafka may not.  Output larger than
``limit`` bytes is an error too (a small batch must not inflate into gigabytes in memory):
lz4 output is produced 1 MiB at a time and zstd's declared content size is trusted only
when plausible, so neither allocates more than the data needs.  One zstd context is kept
per thread (creating one costs more than decompressing a 64 KiB batch).
"""
from __future__ import annotations

import struct
import threading
import zlib

import lz4.frame
import snappy  # python-snappy (cramjam underneath)
import zstandard

_XERIAL_MAGIC = b"\x82SNAPPY\x00"
_XERIAL_HEADER = 16
_GZIP_MAGIC = b"\x1f\x8b"
_INT32 = struct.Struct(">i")
_LZ4_STEP = 1 << 20  # output per lz4 call: a max_length of `limit` would allocate it all
_ZSTD_TRUSTED = 1 << 20
_local = threading.local()  # one zstd context per thread: making one costs more than a batch


class CodecError(Exception):
    """The payload could not be decompressed; the message says why."""


def decompress(codec: int, data, limit: int) -> bytes:
    """All the bytes of ``data`` compressed with Kafka codec id ``codec`` (1..4)."""
    try:
        if codec == 1:
            return _gunzip(data, limit)
        if codec == 2:
            return _unsnappy(bytes(data), limit)
        if codec == 3:
            return _unlz4(data, limit)
        if codec == 4:
            return _unzstd(data, limit)
    except CodecError:
        raise
    except Exception as exc:  # the codec libraries raise assorted types for bad input
        raise CodecError(f"{type(exc).__name__}: {exc}") from exc
    raise CodecError(f"unknown compression type id {codec}")


def _check_limit(size: int, limit: int) -> None:
    if size > limit:
        raise CodecError(f"uncompressed size exceeds {limit} bytes")


def _gunzip(data, limit: int) -> bytes:
    out = bytearray()
    rest = bytes(data)
    while True:  # one pass per member; each pass consumes at least the member's header
        d = zlib.decompressobj(31)
        out += d.decompress(rest, limit + 1 - len(out))
        _check_limit(len(out), limit)
        if not d.eof:
            raise CodecError("gzip stream ends before its end mark")
        rest = d.unused_data
        if not rest:
            return bytes(out)
        if rest[:2] != _GZIP_MAGIC:
            raise CodecError(f"{len(rest)} bytes after the gzip stream")


def _unsnappy(data: bytes, limit: int) -> bytes:
    if data[:8] != _XERIAL_MAGIC:
        out = snappy.decompress(data)
        _check_limit(len(out), limit)
        return out
    if len(data) < _XERIAL_HEADER:
        raise CodecError("xerial snappy header is truncated")
    parts = []
    size = 0
    pos = _XERIAL_HEADER
    while pos < len(data):  # each pass moves pos forward by at least 4 bytes
        if pos + 4 > len(data):
            raise CodecError("xerial snappy chunk length is truncated")
        (n,) = _INT32.unpack_from(data, pos)
        pos += 4
        if n < 0 or pos + n > len(data):
            raise CodecError(f"xerial snappy chunk of {n} bytes runs past the payload")
        part = snappy.decompress(data[pos:pos + n])
        size += len(part)
        _check_limit(size, limit)
        parts.append(part)
        pos += n
    return b"".join(parts)


def _unlz4(data, limit: int) -> bytes:
    d = lz4.frame.LZ4FrameDecompressor()
    parts = [d.decompress(data, max_length=_LZ4_STEP)]
    size = len(parts[0])
    while not d.eof and not d.needs_input:  # each pass yields output or ends
        parts.append(d.decompress(b"", max_length=_LZ4_STEP))
        size += len(parts[-1])
        _check_limit(size, limit)
    _check_limit(size, limit)
    if not d.eof:
        raise CodecError("lz4 frame ends before its end mark")
    if d.unused_data:
        raise CodecError(f"{len(d.unused_data)} bytes after the lz4 frame")
    return parts[0] if len(parts) == 1 else b"".join(parts)


def _zstd_context():
    ctx = getattr(_local, "zstd", None)
    if ctx is None:
        ctx = _local.zstd = zstandard.ZstdDecompressor()
    return ctx


def _unzstd(data, limit: int) -> bytes:
    ctx = _zstd_context()
    declared = zstandard.frame_content_size(data)
    # The one-call path allocates what the header declares, so only for plausible sizes.
    if 0 < declared <= min(limit, max(_ZSTD_TRUSTED, 256 * len(data))):
        try:  # one frame of known size (librdkafka, kafka-python): one call does it all
            return ctx.decompress(data, allow_extra_data=False)
        except zstandard.ZstdError:
            pass  # several frames, or damage: the frame-by-frame walk below says which
    data = bytes(data)
    parts = []
    size = 0
    while data:  # one pass per frame; each pass consumes a whole frame
        declared = zstandard.frame_content_size(data)
        if declared > 0:
            _check_limit(size + declared, limit)
        d = ctx.decompressobj()
        part = d.decompress(data)
        size += len(part)
        _check_limit(size, limit)
        if not d.eof:
            raise CodecError("zstd frame ends before its end mark")
        parts.append(part)
        data = d.unused_data
    return b"".join(parts)
