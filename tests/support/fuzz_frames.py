"""Seed frames for every advertised (API, version) and the mutations a fuzzer applies.

A seed is a well-formed request with every array holding one element and every field a
plausible value (topic names that exist, partition 0, a valid record batch), so mutations
reach the handlers' inner loops, not just the decoder's first length.  Mutations work on
the encoded frame: flipped bits, overwritten bytes (lengths and counts set to -1, 0, huge),
truncation, inserted or duplicated ranges; the frame's size prefix is then fixed up so the
broker always reads a whole frame and the fuzzing reaches the request body.
"""
from __future__ import annotations

import random
import struct
import uuid

from kafka.record.default_records import DefaultRecordBatchBuilder

from kafkapy.handlers import build_registry
from kafkapy.protocol.messages import REQUESTS

TOPIC = "fuzz"
_INTERESTING = (0, 1, 0x7F, 0x80, 0xFF, 0x7FFF, 0x8000, 0xFFFF, 0x7FFFFFFF, 0x80000000,
                0xFFFFFFFF)


def _record_batch() -> bytes:
    builder = DefaultRecordBatchBuilder(magic=2, compression_type=0, is_transactional=False,
                                        producer_id=-1, producer_epoch=-1, base_sequence=-1,
                                        batch_size=1 << 20)
    for i in range(3):
        builder.append(i, timestamp=1_700_000_000_000 + i, key=b"k%d" % i, value=b"v" * 20,
                       headers=[("h", b"x")])
    return bytes(builder.build())


_BATCH = _record_batch()


def _value(field, version: int, owner=None):
    kind = field.type_str
    if field.is_struct_array():
        item = _struct_value(field, version, owner)
        return [] if item is None else [item]
    if field.is_struct():
        return _struct_value(field, version, owner)
    if field.is_array():
        return [_scalar(kind, field.name)]
    return _scalar(kind, field.name)


def _scalar(kind: str, name: str):
    if kind == "string":
        return TOPIC if "topic" in name or name == "name" else "fuzz-" + name
    if kind == "bytes":
        return b"\x00\x01fuzz"
    if kind == "records":
        return _BATCH
    if kind == "uuid":
        return uuid.UUID(int=0)
    if kind == "bool":
        return False
    if kind == "float64":
        return 0.0
    return 0


def _struct_value(field, version: int, owner=None):
    """One element of a struct (array) field; a nested struct's class hangs off the class of
    the struct holding it (``FetchTopic.FetchPartition``), as kafka-python builds them."""
    data_class = field.data_class or getattr(owner, _struct_name(field), None)
    if data_class is None:
        return None
    values = {f.name: _value(f, version, data_class)
              for f in field._fields if f.for_version_q(version)}
    return data_class(version=version, **{k: v for k, v in values.items() if v is not None})


def _struct_name(field) -> str:
    return (field._json or {}).get("type", "").removeprefix("[]")


def seed_request(api_key: int, version: int):
    cls = REQUESTS[api_key]
    values = {f.name: _value(f, version) for f in cls._struct._fields if f.for_version_q(version)}
    try:
        return cls(version=version, **{k: v for k, v in values.items() if v is not None})
    except Exception:           # a shape the filler cannot satisfy: the bare request
        return cls(version=version)


# The controller's requests (LeaderAndIsr, StopReplica, UpdateMetadata) and ControlledShutdown
# change the broker's state by design: a mutated controller epoch above the current one is a
# newer controller, whose word (no live brokers, partitions deleted) the broker takes, as
# Kafka does -- Kafka guards them with the CLUSTER_ACTION ACL, which needs an authorizer.
# Their handlers are tested with well-formed and fenced requests instead.
CONTROLLER_APIS = frozenset({4, 5, 6, 7})


def seed_frames() -> list[tuple[int, int, bytes]]:
    """(api, version, frame) for every advertised API version but the controller's."""
    out = []
    for key, spec in sorted(build_registry().items()):
        if key in CONTROLLER_APIS:
            continue
        for version in range(spec.min_version, spec.max_version + 1):
            request = seed_request(key, version)
            request.with_header(correlation_id=version, client_id="fuzz")
            try:
                frame = bytes(request.encode(header=True, framed=True))
            except Exception:
                request = REQUESTS[key](version=version)
                request.with_header(correlation_id=version, client_id="fuzz")
                frame = bytes(request.encode(header=True, framed=True))
            out.append((key, version, frame))
    return out


def mutate(frame: bytes, rng: random.Random, rounds: int = 3) -> bytes:
    """A mutated copy of ``frame`` (size prefix fixed up; the 8-byte API header is kept so
    the mutation lands in a request the broker will try to parse)."""
    body = bytearray(frame[4:])
    for _ in range(rng.randint(1, rounds)):
        if len(body) <= 8:
            body += bytes(rng.randint(1, 16))
        pos = rng.randrange(8, len(body))
        op = rng.randrange(6)
        if op == 0:
            body[pos] ^= 1 << rng.randrange(8)
        elif op == 1:
            body[pos] = rng.randrange(256)
        elif op == 2:
            width = rng.choice((2, 4))
            value = rng.choice(_INTERESTING) & ((1 << (8 * width)) - 1)
            body[pos:pos + width] = value.to_bytes(width, "big")
        elif op == 3:
            del body[pos:]
        elif op == 4:
            end = min(len(body), pos + rng.randint(1, 64))
            body[pos:pos] = body[pos:end]
        else:
            body[pos:pos] = rng.randbytes(rng.randint(1, 32))
    return struct.pack(">i", len(body)) + bytes(body)
