"""ApiVersions (key 18): the API ranges this broker serves, computed from the handler registry.

The response always uses response header v0.  A request at a version above ours
is answered with UNSUPPORTED_VERSION (35) and a v0 body that still lists our
ranges, so the client can retry at a version we support (done by the
connection before decoding).  v3+ requests carry the client's software name and
version; malformed ones get INVALID_REQUEST and, as in Kafka, no API list.

Features: a ZooKeeper-mode Kafka 3.9 broker supports and finalizes none.  A kafkapy
broker supports ``metadata.features.SUPPORTED_FEATURES`` (``transaction.version`` 0-2,
``group.version`` 0-1, ``share.version`` 0-1; listed from v4 only: below v4 Kafka leaves out
a feature whose minimum level is 0, which older clients cannot read).  Finalized: the
levels ``metadata.features.finalized_levels`` gives -- what ``/feature`` holds (the
``FinalizedFeatureCache``; UpdateFeatures changes it), with ``group.version`` at 1 while the
consumer group protocol is served and ``share.version`` at 1 while share groups are
(``group.coordinator.rebalance.protocols`` lists ``consumer`` / ``share``), as a Kafka 4.x broker serves the consumer group protocol and share groups
only at those levels (KafkaApis' isConsumerGroupProtocolEnabled / isShareGroupProtocolEnabled);
``transaction.version`` is 0 until an operator upgrades it.  A level of 0 is not listed, as
Kafka leaves it out; the epoch is the cache's (the znode's version).  While share groups are
not served the share group APIs a client speaks (ShareGroupHeartbeat, ShareGroupDescribe,
ShareFetch, ShareAcknowledge: 76-79) are left out of the list, as a Kafka 4.2 broker
without ``share.version`` leaves them out.

Every connection's first request is this one, so the answer is encoded once per
(registry, version, finalized features) and kept: a request then costs a header splice
(``_Encoded``), not ~70 ApiVersion objects built and encoded (which was most of a new
connection's broker time).  The response header is v0 at every version (int32
correlation id), so the cached frame differs between requests only in those 4 bytes.
"""
from __future__ import annotations

import re
import struct

from kafkapy.metadata.features import (SHARE_VERSION, SUPPORTED_FEATURES, finalized_levels,
                                       served_levels)
from kafkapy.protocol.errors import ErrorCode
from kafkapy.protocol.messages import RESPONSES

API_KEY = 18
MIN_VERSION = 0
MAX_VERSION = 4

#: The share group APIs a client speaks, listed only with share groups on.
SHARE_APIS = frozenset({76, 77, 78, 79})

_SOFTWARE = re.compile(r"^[a-zA-Z0-9](?:[a-zA-Z0-9\-.]*[a-zA-Z0-9])?$")
_Response = RESPONSES[API_KEY]


def api_ranges(apis: dict, share_groups: bool = True) -> list:
    """The ranges of ``apis``; without the share group APIs unless ``share_groups``."""
    return [_Response.ApiVersion(api_key=spec.key, min_version=spec.min_version,
                                 max_version=spec.max_version)
            for spec in sorted(apis.values(), key=lambda s: s.key)
            if share_groups or spec.key not in SHARE_APIS]


_FRAME_HEAD = struct.Struct(">ii")   # frame size, correlation id (response header v0)
# id(apis) -> (apis, {answer key: encoded frame with correlation id 0}); holding the
# registry keeps its id from being reused by another broker's in the same process.
_ANSWERS: dict[int, tuple[dict, dict]] = {}


class _Encoded:
    """An answer already encoded, as the connection's ``encode_response`` takes a response
    (``with_header`` then ``encode``): only the correlation id is written per request."""

    __slots__ = ("_frame", "_correlation_id")

    def __init__(self, frame: bytes) -> None:
        self._frame = frame
        self._correlation_id = 0

    def with_header(self, correlation_id: int) -> None:
        self._correlation_id = correlation_id

    def encode(self, header: bool = True, framed: bool = True) -> bytes:
        assert header and framed
        frame = self._frame
        return _FRAME_HEAD.pack(len(frame) - 4, self._correlation_id) + frame[8:]


def _encoded_once(response) -> bytes:
    response.with_header(correlation_id=0)
    return bytes(response.encode(header=True, framed=True))


def _cached(apis: dict, key, build) -> bytes:
    entry = _ANSWERS.get(id(apis))
    if entry is None or entry[0] is not apis:
        entry = _ANSWERS[id(apis)] = (apis, {})
    frame = entry[1].get(key)
    if frame is None:
        frame = entry[1][key] = _encoded_once(build())
    return frame


def handle(ctx, request):
    if ctx.api_version >= 3 and not (
            _SOFTWARE.match(request.client_software_name or "")
            and _SOFTWARE.match(request.client_software_version or "")):
        # Kafka's error response lists no APIs.
        return ctx.response(error_code=ErrorCode.INVALID_REQUEST, api_keys=[],
                            throttle_time_ms=0)
    services = ctx.services
    cache = services.features
    features = () if cache is None else tuple(cache.features.items())
    served = served_levels(services.config["group.coordinator.rebalance.protocols"])
    share_groups = bool(served[SHARE_VERSION])
    key = (ctx.api_version, -2 if cache is None else cache.epoch, features,
           tuple(served.items()))

    def build():
        epoch, finalized = _finalized_features(services, served)
        return ctx.response(error_code=ErrorCode.NO_ERROR,
                            api_keys=api_ranges(services.apis, share_groups),
                            throttle_time_ms=0, supported_features=_supported_features(
                                ctx.api_version),
                            finalized_features_epoch=epoch, finalized_features=finalized)
    return _Encoded(_cached(services.apis, key, build))


def _supported_features(version: int) -> list:
    """``SUPPORTED_FEATURES``; below v4 without those whose minimum level is 0 (Kafka's
    maybeFilterSupportedFeatureKeys)."""
    return [_Response.SupportedFeatureKey(name=name, min_version=low, max_version=high)
            for name, (low, high) in sorted(SUPPORTED_FEATURES.items())
            if version >= 4 or low > 0]


def _finalized_features(services, served: dict[str, int]) -> tuple[int, list]:
    """The ``/feature`` znode's version while it is Enabled (0 once a controller created
    it), else -1 (``metadata.features``), and the effective finalized levels; a level of
    0 is not listed (Kafka's createFinalizedFeatureKeys)."""
    cache = services.features
    # not started yet (no store's view): as created
    epoch, stored = (0, {}) if cache is None else (cache.epoch, cache.features)
    levels = finalized_levels(stored, served)
    return epoch, [_Response.FinalizedFeatureKey(name=name, max_version_level=level,
                                                 min_version_level=level)
                   for name, level in sorted(levels.items()) if level > 0]


def unsupported_version_response(apis: dict, correlation_id: int) -> bytes:
    answer = _Encoded(_cached(apis, "unsupported", lambda: _Response(
        version=0, error_code=ErrorCode.UNSUPPORTED_VERSION, api_keys=api_ranges(apis))))
    answer.with_header(correlation_id)
    return answer.encode()
