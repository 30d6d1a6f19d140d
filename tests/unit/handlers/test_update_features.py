"""UpdateFeatures (57) through the handler and a real controller on an embedded store:
v1's upgrade types and ValidateOnly, v0's AllowDowngrade as a safe downgrade, one result
per feature under a top-level NONE; the top-level refusals: CLUSTER ALTER denied,
NOT_CONTROLLER on a broker that is not the controller, IBP below 2.7."""
from __future__ import annotations

from contextlib import asynccontextmanager

from kafkapy.handlers import update_features
from kafkapy.metadata import paths
from kafkapy.metadata.features import SUPPORTED_FEATURES, FinalizedFeatureCache
from kafkapy.protocol.errors import ErrorCode
from kafkapy.protocol.messages import REQUESTS
from kafkapy.security import acls as A
from tests.support.controller import broker_config, embedded_broker
from tests.support.services import context, services

TXN = "transaction.version"
_Request = REQUESTS[57]
_Key = _Request.FeatureUpdateKey


class _Authorizer:
    """Allows exactly the (operation, resource type, name) triples given."""

    def __init__(self, *allowed) -> None:
        self.allowed = set(allowed)

    def authorize(self, session, operation, resource_type, name) -> bool:
        return (operation, resource_type, name) in self.allowed


@asynccontextmanager
async def _controller(tmp_path, settings=None, start=True):
    """Broker 1 (registered with its supported features), its cache and its controller."""
    async with embedded_broker(tmp_path) as broker:
        broker.config = broker_config(1, settings)
        broker.store.set(paths.broker_path(1), paths.encode_broker_registration(
            [paths.EndPoint("PLAINTEXT", "127.0.0.1", 19001, "PLAINTEXT")], 0,
            features=SUPPORTED_FEATURES))
        cache = FinalizedFeatureCache(broker.store)
        cache.start()
        controller = broker.start_controller(features=cache)
        if start:
            await controller.startup()
        try:
            yield broker, controller
        finally:
            await controller.shutdown()
            cache.stop()


async def _send(broker, controller, version, *keys, validate_only=False, authorizer=None):
    parts = services(node_id=1, config=broker.config, controller=controller,
                     authorizer=authorizer)
    request = _Request(version=version, timeout_ms=5000, feature_updates=list(keys),
                       validate_only=validate_only)
    return await update_features.handle(context(parts, 57, version), request)


def _results(response) -> dict:
    return {r.feature: (r.error_code, r.error_message) for r in response.results}


def _levels(store) -> tuple[dict, int]:
    data, stat = store.get(paths.FEATURE)
    return dict(paths.decode_feature_znode(data).features), stat.version


async def test_v1_upgrade_validate_only_and_downgrade(tmp_path):
    async with _controller(tmp_path) as (broker, controller):
        r = await _send(broker, controller, 1, _Key(feature=TXN, max_version_level=2,
                                                    upgrade_type=1), validate_only=True)
        assert (r.error_code, r.error_message, _results(r)) == (0, None, {TXN: (0, "NONE")})
        assert _levels(broker.store) == ({}, 0)
        r = await _send(broker, controller, 1, _Key(feature=TXN, max_version_level=2,
                                                    upgrade_type=1))
        assert _results(r) == {TXN: (0, "NONE")}
        assert _levels(broker.store) == ({TXN: 2}, 1)
        r = await _send(broker, controller, 1, _Key(feature=TXN, max_version_level=1,
                                                    upgrade_type=2))
        assert _results(r) == {TXN: (0, "NONE")}
        assert _levels(broker.store) == ({TXN: 1}, 2)


async def test_v0_allow_downgrade_is_a_safe_downgrade(tmp_path):
    async with _controller(tmp_path) as (broker, controller):
        r = await _send(broker, controller, 0, _Key(feature=TXN, max_version_level=2,
                                                    allow_downgrade=False))
        assert _results(r) == {TXN: (0, "NONE")}
        r = await _send(broker, controller, 0, _Key(feature=TXN, max_version_level=1,
                                                    allow_downgrade=False))
        assert _results(r)[TXN][0] == ErrorCode.INVALID_REQUEST
        r = await _send(broker, controller, 0, _Key(feature=TXN, max_version_level=0,
                                                    allow_downgrade=True))
        assert _results(r) == {TXN: (0, "NONE")}
        assert _levels(broker.store) == ({}, 2)


async def test_cluster_alter_is_required(tmp_path):
    async with _controller(tmp_path) as (broker, controller):
        key = _Key(feature=TXN, max_version_level=2, upgrade_type=1)
        r = await _send(broker, controller, 1, key, authorizer=_Authorizer())
        assert (r.error_code, r.error_message, r.results) == (
            ErrorCode.CLUSTER_AUTHORIZATION_FAILED, "Cluster authorization failed.", [])
        granted = _Authorizer((A.ALTER, A.CLUSTER, A.CLUSTER_NAME))
        r = await _send(broker, controller, 1, key, authorizer=granted)
        assert _results(r) == {TXN: (0, "NONE")}


async def test_a_broker_that_is_not_the_controller_answers_not_controller(tmp_path):
    async with _controller(tmp_path, start=False) as (broker, controller):
        r = await _send(broker, controller, 1, _Key(feature=TXN, max_version_level=2,
                                                    upgrade_type=1))
        assert (r.error_code, r.error_message, r.results) == (
            ErrorCode.NOT_CONTROLLER, "This is not the correct controller for this cluster.",
            [])


async def test_ibp_below_2_7_has_no_feature_versioning(tmp_path):
    async with _controller(tmp_path, {"inter.broker.protocol.version": "2.6"}) as (
            broker, controller):
        r = await _send(broker, controller, 1, _Key(feature=TXN, max_version_level=2,
                                                    upgrade_type=1))
        assert (r.error_code, r.error_message, r.results) == (
            ErrorCode.INVALID_REQUEST, "Feature versioning system is disabled.", [])


async def test_a_feature_named_twice_is_its_first_entry(tmp_path):
    async with _controller(tmp_path) as (broker, controller):
        r = await _send(broker, controller, 1,
                        _Key(feature=TXN, max_version_level=2, upgrade_type=1),
                        _Key(feature=TXN, max_version_level=0, upgrade_type=2))
        assert _results(r) == {TXN: (0, "NONE")}
        assert _levels(broker.store) == ({TXN: 2}, 1)
