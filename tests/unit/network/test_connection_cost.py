"""Per-connection cost cuts keep the bytes: the cached ApiVersions answers are
byte-equal to encoding the response object, at every version, with features, for any
correlation id; the UNSUPPORTED_VERSION answer too.  A zero-copy Fetch answer, framed
without the library's header encoding, is byte-equal to the library's encoding at every
version."""
from __future__ import annotations

import os
import uuid
from types import SimpleNamespace

import pytest

from kafkapy.handlers import api_versions, build_registry
from kafkapy.api.context import RequestContext
from kafkapy.log.segment import FetchSlice
from kafkapy.network.connection import encode_response
from kafkapy.network.zero_copy import ZeroCopyResponse, new_marker
from kafkapy.protocol.errors import ErrorCode
from kafkapy.protocol.messages import RESPONSES
from tests.support.services import services

_Response = RESPONSES[api_versions.API_KEY]


def _reference(apis, version: int, correlation_id: int, features) -> bytes:
    # group.version and share.version: supported 0-1 and finalized at 1; transaction.version
    # supported 0-2 (supported features listed from v4); finalized by name with /feature's
    epoch, stored = (0, {}) if features is None else (features.epoch, features.features)
    ours = {"group.version": 1, "share.version": 1, "transaction.version": 2}
    finalized = [_Response.FinalizedFeatureKey(name=n, max_version_level=lvl, min_version_level=lvl)
                 for n, lvl in sorted({**stored, "group.version": 1,
                                       "share.version": 1}.items())]
    supported = [_Response.SupportedFeatureKey(name=name, min_version=0, max_version=high)
                 for name, high in ours.items()] if version >= 4 else []
    response = _Response(version=version, error_code=ErrorCode.NO_ERROR,
                         api_keys=api_versions.api_ranges(apis), throttle_time_ms=0,
                         supported_features=supported,
                         finalized_features_epoch=epoch, finalized_features=finalized)
    response.with_header(correlation_id=correlation_id)
    return bytes(response.encode(header=True, framed=True))


def _answer(parts, version: int, correlation_id: int) -> bytes:
    ctx = RequestContext(parts, api_versions.API_KEY, version, correlation_id, "c", "p",
                         _Response)
    request = SimpleNamespace(client_software_name="kafkapy-test",
                              client_software_version="1.0")
    return bytes(encode_response(ctx, api_versions.handle(ctx, request)))


@pytest.mark.parametrize("version", range(api_versions.MIN_VERSION,
                                          api_versions.MAX_VERSION + 1))
def test_cached_answer_is_the_encoded_response(version):
    features = SimpleNamespace(epoch=-1, features={})
    parts = services(apis=build_registry(), features=features)
    for correlation_id in (0, 1, 2**31 - 1, -5, 77):
        assert _answer(parts, version, correlation_id) == _reference(
            parts.apis, version, correlation_id, features)
    features.epoch, features.features = 4, {"metadata.version": 7}      # the cache follows
    assert _answer(parts, version, 9) == _reference(parts.apis, version, 9, features)
    features.epoch, features.features = 0, {}
    assert _answer(parts, version, 9) == _reference(parts.apis, version, 9, features)
    no_features = services(apis=parts.apis, features=None)
    assert _answer(no_features, version, 3) == _reference(parts.apis, version, 3, None)


def test_each_registry_has_its_own_answer():
    small = {k: v for k, v in build_registry().items() if k in (0, 1, 18)}
    full = build_registry()
    a = _answer(services(apis=small, features=None), 2, 1)
    b = _answer(services(apis=full, features=None), 2, 1)
    assert a == _reference(small, 2, 1, None) and b == _reference(full, 2, 1, None)
    assert a != b


def test_unsupported_version_answer():
    apis = build_registry()
    for correlation_id in (0, 12345):
        response = _Response(version=0, error_code=ErrorCode.UNSUPPORTED_VERSION,
                             api_keys=api_versions.api_ranges(apis))
        response.with_header(correlation_id=correlation_id)
        assert api_versions.unsupported_version_response(apis, correlation_id) == bytes(
            response.encode(header=True, framed=True))


def test_malformed_software_name_is_not_cached():
    parts = services(apis=build_registry(), features=None)
    ctx = RequestContext(parts, api_versions.API_KEY, 3, 1, "c", "p", _Response)
    bad = SimpleNamespace(client_software_name="-bad", client_software_version="1")
    response = api_versions.handle(ctx, bad)
    assert response.error_code == ErrorCode.INVALID_REQUEST and response.api_keys == []


def test_accepted_sockets_inherit_keepalive_and_nodelay():
    """The listener sets no option per connection: Linux copies the listening socket's."""
    import socket

    from kafkapy.network.server import _bound_sockets

    (listener,) = _bound_sockets("127.0.0.1", 0)
    listener.listen(8)
    client = socket.create_connection(listener.getsockname(), timeout=5)
    try:
        listener.setblocking(True)
        listener.settimeout(5)
        accepted, _ = listener.accept()
        with accepted:
            assert accepted.getsockopt(socket.SOL_SOCKET, socket.SO_KEEPALIVE) == 1
            assert accepted.getsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY) == 1
    finally:
        client.close()
        listener.close()


def _fetch_response(version: int, records):
    """A Fetch answer of two partitions whose records are ``records`` (bytes or markers)."""
    R = RESPONSES[1]
    partitions = [R.FetchableTopicResponse.PartitionData(
        partition_index=i, error_code=0, high_watermark=1000 + i, last_stable_offset=1000 + i,
        log_start_offset=0, aborted_transactions=None, preferred_read_replica=-1,
        records=r) for i, r in enumerate(records)]
    topic = R.FetchableTopicResponse(topic="t", topic_id=uuid.UUID(int=7), partitions=partitions)
    return R(version=version, throttle_time_ms=0, error_code=0, session_id=5,
             responses=[topic], node_endpoints=[])


@pytest.mark.parametrize("version", range(0, 18))
def test_zero_copy_fetch_answer_is_the_encoded_response(tmp_path, version):
    """A Fetch answer whose records go by file ranges frames exactly the bytes the
    library's encoding of the same answer with its records inline gives."""
    data = bytes(range(256)) * 300
    path = tmp_path / "segment.log"
    path.write_bytes(data)
    fd = os.open(path, os.O_RDONLY)
    try:
        slices = {new_marker(): [FetchSlice(fd, 10, 70_000, 0)],
                  new_marker(): [FetchSlice(fd, 0, 5, 0), FetchSlice(fd, 9, 0, 0)]}
        reference = _fetch_response(version, [data[10:70_010], data[:5]])
        reference.with_header(correlation_id=123456)
        expected = bytes(reference.encode(header=True, framed=True))
        ctx = RequestContext(services(), 1, version, 123456, "c", "p", RESPONSES[1])
        answer = ZeroCopyResponse(_fetch_response(version, list(slices)), slices)
        assert encode_response(ctx, answer, zero_copy=False) == expected
    finally:
        os.close(fd)
