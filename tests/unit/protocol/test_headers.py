"""The request header reader against kafka-python's encoding of the same headers."""
from __future__ import annotations

import struct

import pytest
from kafka.protocol.api_header import RequestHeader

from kafkapy.handlers import build_registry
from kafkapy.protocol.headers import peek_api, read_request_header, request_header_is_flexible

BODY = b"\x07body"
CLIENT_IDS = ["broker-1", "", None, "consumer-ü-1"]
# Every version of every API the broker serves (building the registry also registers the
# schemas of the APIs kafka-python lacks, so the list is the same whatever ran before).
EVERY_VERSION = [(spec.key, version) for spec in sorted(build_registry().values(),
                                                        key=lambda spec: spec.key)
                 for version in range(spec.min_version, spec.max_version + 1)]


def _frame(api_key: int, version: int, client_id: str | None) -> bytes:
    if api_key == 7 and version == 0:   # header v0: no client id
        return struct.pack(">hhi", api_key, version, 4242) + BODY
    header = RequestHeader(request_api_key=api_key, request_api_version=version,
                           correlation_id=4242, client_id=client_id)
    return header.encode(flexible=request_header_is_flexible(api_key, version)) + BODY


@pytest.mark.parametrize("api_key,version", EVERY_VERSION)
def test_reads_what_kafka_python_writes(api_key, version):
    for client_id in CLIENT_IDS:
        frame = memoryview(_frame(api_key, version, client_id))
        assert peek_api(frame) == (api_key, version, 4242)
        read_client_id, pos = read_request_header(frame, api_key, version)
        assert bytes(frame[pos:]) == BODY
        if api_key == 7 and version == 0:
            assert read_client_id is None   # header v0 has no client id
        else:
            assert read_client_id == client_id


def test_tagged_fields_are_skipped():
    fixed = struct.pack(">hhih", 1, 17, 9, 3) + b"abc"
    tags = bytes([2, 0, 3]) + b"xyz" + bytes([5, 1]) + b"q"   # two tags, 3 and 1 bytes
    client_id, pos = read_request_header(memoryview(fixed + tags + BODY), 1, 17)
    assert client_id == "abc" and pos == len(fixed + tags)


@pytest.mark.parametrize("frame", [
    struct.pack(">hhi", 1, 4, 9) + b"\x00",                        # the length cut short
    struct.pack(">hhih", 1, 4, 9, 10) + b"short",                  # the client id cut short
    struct.pack(">hhih", 1, 17, 9, 0) + bytes([1, 0, 9]) + b"ab",  # a tag past the end
    struct.pack(">hhih", 1, 4, 9, 2) + b"\xff\xfe",                # not UTF-8
])
def test_malformed_headers_raise(frame):
    api_key, version, _ = peek_api(memoryview(frame))
    with pytest.raises((ValueError, struct.error, IndexError)):
        read_request_header(memoryview(frame), api_key, version)
