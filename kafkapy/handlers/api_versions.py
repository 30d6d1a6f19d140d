"""ApiVersions (key 18): the API ranges this broker serves, computed from the handler registry.

The response always uses response header v0.  A request at a version above ours
is answered with UNSUPPORTED_VERSION (35) and a v0 body that still lists our
ranges, so the client can retry at a version we support (done by the
connection before decoding).  v3+ requests carry the client's software name and
version; malformed ones get INVALID_REQUEST and, as in Kafka, no API list.
"""
from __future__ import annotations

import re

from kafkapy.protocol.errors import ErrorCode
from kafkapy.protocol.messages import RESPONSES

API_KEY = 18
MIN_VERSION = 0
MAX_VERSION = 4

_SOFTWARE = re.compile(r"^[a-zA-Z0-9](?:[a-zA-Z0-9\-.]*[a-zA-Z0-9])?$")
_Response = RESPONSES[API_KEY]


def api_ranges(apis: dict) -> list:
    return [_Response.ApiVersion(api_key=spec.key, min_version=spec.min_version,
                                 max_version=spec.max_version)
            for spec in sorted(apis.values(), key=lambda s: s.key)]


def handle(ctx, request):
    if ctx.api_version >= 3 and not (
            _SOFTWARE.match(request.client_software_name or "")
            and _SOFTWARE.match(request.client_software_version or "")):
        # Kafka's error response lists no APIs.
        return ctx.response(error_code=ErrorCode.INVALID_REQUEST, api_keys=[],
                            throttle_time_ms=0)
    error = ErrorCode.NO_ERROR
    epoch, finalized = _finalized_features(ctx.broker)
    return ctx.response(error_code=error, api_keys=api_ranges(ctx.broker.apis),
                        throttle_time_ms=0, finalized_features_epoch=epoch,
                        finalized_features=finalized)


def _finalized_features(broker) -> tuple[int, list]:
    """Kafka's ZooKeeper-mode answer: the ``/feature`` znode's version while it is
    Enabled (0 once a controller created it), else -1 (``metadata.features``); no
    supported features (``BrokerFeatures.createEmpty``)."""
    cache = getattr(broker, "features", None)
    if cache is None:           # a broker without the store's view (tests): as created
        return 0, []
    return cache.epoch, [_Response.FinalizedFeatureKey(name=name, max_version_level=level,
                                                       min_version_level=level)
                         for name, level in cache.features.items()]


def unsupported_version_response(apis: dict, correlation_id: int) -> bytes:
    response = _Response(version=0, error_code=ErrorCode.UNSUPPORTED_VERSION,
                         api_keys=api_ranges(apis))
    response.with_header(correlation_id=correlation_id)
    return response.encode(header=True, framed=True)
