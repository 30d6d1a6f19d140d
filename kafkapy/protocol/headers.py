"""Request and response headers, chosen by (api, version) in one place.

Request header v1 (non-flexible APIs): api_key int16, api_version int16,
correlation_id int32, client_id nullable string (int16 length).
Request header v2 (flexible versions): v1 followed by tagged fields.
Request header v0 (no client_id) is ControlledShutdown v0's alone, as in Kafka.

Response header v0: correlation_id int32.  v1 (flexible versions): v0 and
tagged fields.  ApiVersionsResponse always uses v0 so that a client that sent
a too-new version can still read the answer.  kafka-python's ``encode(header=
True)`` applies that rule for responses (``ApiVersionsResponse`` overrides it).
"""
from __future__ import annotations

import struct

from kafka.protocol.api_header import RequestHeader

from kafkapy.protocol.messages import is_flexible, REQUESTS

API_VERSIONS_KEY = 18
_CONTROLLED_SHUTDOWN_KEY = 7
_FIXED = struct.Struct(">hhi")
_decode_v0 = RequestHeader._struct.compiled_decode_from(
    0, compact=False, tagged=False, data_class=RequestHeader)
_decode_v1 = RequestHeader._struct.compiled_decode_from(
    1, compact=False, tagged=False, data_class=RequestHeader)
_decode_v2 = RequestHeader._struct.compiled_decode_from(
    2, compact=False, tagged=True, data_class=RequestHeader)


def peek_api(frame: memoryview) -> tuple[int, int, int]:
    """(api_key, api_version, correlation_id) from the first 8 bytes of a request."""
    return _FIXED.unpack_from(frame, 0)


def request_header_is_flexible(api_key: int, api_version: int) -> bool:
    """Header v2 for flexible versions of known APIs, else v1."""
    cls = REQUESTS.get(api_key)
    if cls is None or not 0 <= api_version <= cls.max_version:
        return False
    return is_flexible(api_key, api_version)


def decode_request_header(frame: memoryview, api_key: int, api_version: int):
    """Decode the header; returns (header, body_position)."""
    if request_header_is_flexible(api_key, api_version):
        return _decode_v2(frame, 0)
    if api_key == _CONTROLLED_SHUTDOWN_KEY and api_version == 0:
        return _decode_v0(frame, 0)
    return _decode_v1(frame, 0)
