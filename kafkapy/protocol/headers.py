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

from kafkapy.protocol.messages import is_flexible, REQUESTS
from kafkapy.protocol.varint import read_uvarint

API_VERSIONS_KEY = 18
_CONTROLLED_SHUTDOWN_KEY = 7
_FIXED = struct.Struct(">hhi")
_INT16 = struct.Struct(">h")
_CLIENT_ID_AT = _FIXED.size


def peek_api(frame: memoryview) -> tuple[int, int, int]:
    """(api_key, api_version, correlation_id) from the first 8 bytes of a request."""
    return _FIXED.unpack_from(frame, 0)


def request_header_is_flexible(api_key: int, api_version: int) -> bool:
    """Header v2 for flexible versions of known APIs, else v1."""
    cls = REQUESTS.get(api_key)
    if cls is None or not 0 <= api_version <= cls.max_version:
        return False
    return is_flexible(api_key, api_version)


# (api_key, api_version) -> header v2?, memoized for the versions of known APIs only (so
# at most one entry per version of each API, whatever a client sends).
_FLEXIBLE: dict[tuple[int, int], bool] = {}


def _flexible_memoized(api_key: int, api_version: int) -> bool:
    """``request_header_is_flexible``, kept in ``_FLEXIBLE`` when the API knows the version."""
    flexible = request_header_is_flexible(api_key, api_version)
    if flexible:    # a known API at a version it has
        _FLEXIBLE[(api_key, api_version)] = True
    elif api_key in REQUESTS and 0 <= api_version <= REQUESTS[api_key].max_version:
        _FLEXIBLE[(api_key, api_version)] = False
    return flexible


def read_request_header(frame: memoryview, api_key: int, api_version: int
                        ) -> tuple[str | None, int]:
    """(client_id, position of the body) of a request (the fields before the client id
    are ``peek_api``'s).  The client id is None in header v0 and when its length is
    negative (a null string); header v2's tagged fields are skipped (Kafka defines none).
    Raises ValueError (or struct.error, IndexError, UnicodeDecodeError) when the header
    runs past the frame or its client id is not UTF-8."""
    if api_key == _CONTROLLED_SHUTDOWN_KEY and api_version == 0:
        return None, _CLIENT_ID_AT
    (size,) = _INT16.unpack_from(frame, _CLIENT_ID_AT)
    pos = _CLIENT_ID_AT + 2
    client_id = None
    if size >= 0:
        pos += size
        if pos > len(frame):
            raise ValueError("client id runs past the frame")
        client_id = str(frame[_CLIENT_ID_AT + 2:pos], "utf-8")
    flexible = _FLEXIBLE.get((api_key, api_version))
    if flexible is None:
        flexible = _flexible_memoized(api_key, api_version)
    if flexible:
        if frame[pos] == 0:     # no tagged field (the usual)
            return client_id, pos + 1
        return client_id, skip_tagged_fields(frame, pos)
    return client_id, pos


def skip_tagged_fields(frame: memoryview, pos: int) -> int:
    """The position after the tagged fields at ``pos`` of a flexible header (request or
    response); ValueError when they run past the frame."""
    count, pos = read_uvarint(frame, pos)
    for _ in range(count):
        _, pos = read_uvarint(frame, pos)   # the tag
        size, pos = read_uvarint(frame, pos)
        pos += size
    if pos > len(frame):
        raise ValueError("tagged fields run past the frame")
    return pos
