"""``/feature`` (KIP-584) as Kafka 3.9's ZooKeeper mode handles it.

- the codec: ``FeatureZNode.encode``'s bytes (v1 with min/max levels, v2 max only; key
  order of Kafka's Scala map) and ``decode``'s refusals;
- the controller's failover (``maybeSetupFeatureVersioning``): absent -> created Enabled
  and empty; Disabled -> rewritten Enabled (features dropped); Enabled -> left alone (no
  write); IBP below 2.7 -> Disabled; the znode version follows the IBP (v2 from 3.3);
- the broker's ``FinalizedFeatureCache`` (Kafka's FinalizedFeatureChangeListener):
  epoch = zk version while Enabled, -1 when absent or Disabled, follows changes through
  its watch, refuses features the broker does not support (an unknown feature, a level
  outside ``SUPPORTED_FEATURES``);
- the registration's ``features``: the supported ranges as Kafka's ``Features.toMap``
  writes them (Java HashMap order);
- ApiVersions answers that epoch (Kafka's tag 1 left out when -1).
Real embedded store (``EmbeddedStore``); the controller's brokers are stand-ins.
"""
from __future__ import annotations

from types import SimpleNamespace

import pytest

from kafkapy.handlers import api_versions
from kafkapy.metadata import paths
from kafkapy.metadata.embedded import EmbeddedStore
from kafkapy.metadata.features import SUPPORTED_FEATURES, FinalizedFeatureCache
from kafkapy.protocol.messages import RESPONSES
from tests.support.controller import broker_config, embedded_broker, running_controller
from tests.support.services import context, services

ENABLED_V2 = b'{"features":{},"version":2,"status":1}'


# -- codec ------------------------------------------------------------------------------
def test_encode_as_kafka():
    assert paths.encode_feature_znode(2, paths.FEATURE_ENABLED, {}) == ENABLED_V2
    assert paths.encode_feature_znode(1, paths.FEATURE_DISABLED, {}) == (
        b'{"features":{},"version":1,"status":0}')
    assert paths.encode_feature_znode(2, 1, {"a": 1, "b": 2}) == (
        b'{"features":{"a":{"max_version_level":1},"b":{"max_version_level":2}},'
        b'"version":2,"status":1}')
    assert paths.encode_feature_znode(1, 1, {"x": 3}) == (
        b'{"features":{"x":{"max_version_level":3,"min_version_level":3}},'
        b'"version":1,"status":1}')


def test_decode():
    node = paths.decode_feature_znode(ENABLED_V2, SimpleNamespace(version=4))
    assert (node.version, node.status, dict(node.features), node.epoch) == (2, 1, {}, 4)
    node = paths.decode_feature_znode(
        b'{"version":1,"status":1,"features":{"x":{"min_version_level":1,"max_version_level":3}}}')
    assert dict(node.features) == {"x": 3} and node.epoch == -1
    for bad in (b'{"version":3,"status":1,"features":{}}',
                b'{"version":2,"features":{}}',
                b'{"version":2,"status":2,"features":{}}',
                b'{"version":2,"status":1}',
                b'not json'):
        with pytest.raises(paths.ZNodeDataError):
            paths.decode_feature_znode(bad)


def test_registration_lists_the_supported_features():
    payload = paths.encode_broker_registration(
        [paths.EndPoint("PLAINTEXT", "h", 9092, "PLAINTEXT")], 0, features=SUPPORTED_FEATURES)
    assert payload.endswith(
        b'"features":{"group.version":{"min_version":0,"max_version":1},'
        b'"share.version":{"min_version":0,"max_version":1},'
        b'"transaction.version":{"min_version":0,"max_version":2}}}')
    decoded = paths.decode_broker_registration(1, payload)
    assert dict(decoded.features) == dict(SUPPORTED_FEATURES)


# -- controller failover ------------------------------------------------------------
def _feature(store):
    data, stat = store.get(paths.FEATURE)
    return data, stat.version


async def test_failover_creates_enabled_feature_znode(tmp_path):
    async with embedded_broker(tmp_path) as broker:
        async with running_controller(broker) as controller:
            assert controller.is_active
            assert _feature(broker.store) == (ENABLED_V2, 0)


async def test_failover_enables_a_disabled_znode_and_drops_its_features(tmp_path):
    async with embedded_broker(tmp_path) as broker:
        broker.store.create(paths.FEATURE, paths.encode_feature_znode(2, 0, {"x": 1}))
        async with running_controller(broker):
            assert _feature(broker.store) == (ENABLED_V2, 1)


async def test_failover_leaves_an_enabled_znode_alone(tmp_path):
    async with embedded_broker(tmp_path) as broker:
        broker.store.create(paths.FEATURE, ENABLED_V2)
        broker.store.set(paths.FEATURE, ENABLED_V2)          # version 1
        async with running_controller(broker):
            assert _feature(broker.store) == (ENABLED_V2, 1)


async def test_failover_keeps_finalized_features(tmp_path):
    async with embedded_broker(tmp_path) as broker:
        finalized = paths.encode_feature_znode(2, 1, {"transaction.version": 2})
        broker.store.create(paths.FEATURE, finalized)
        async with running_controller(broker):
            assert _feature(broker.store) == (finalized, 0)


async def test_failover_rewrites_v1_znode_as_v2(tmp_path):
    async with embedded_broker(tmp_path) as broker:
        broker.store.create(paths.FEATURE, b'{"features":{},"version":1,"status":1}')
        async with running_controller(broker):
            assert _feature(broker.store) == (ENABLED_V2, 1)


@pytest.mark.parametrize("ibp, expected", [
    ("2.6", b'{"features":{},"version":1,"status":0}'),
    ("2.7-IV0", b'{"features":{},"version":1,"status":1}'),
    ("3.2", b'{"features":{},"version":1,"status":1}'),
    ("3.3-IV0", ENABLED_V2),
    ("3.9-IV0", ENABLED_V2),
])
async def test_ibp_decides_status_and_version(tmp_path, ibp, expected):
    async with embedded_broker(tmp_path) as broker:
        broker.config = broker_config(broker.node_id, {"inter.broker.protocol.version": ibp})
        async with running_controller(broker):
            assert _feature(broker.store) == (expected, 0)


async def test_failover_refreshes_the_brokers_feature_cache(tmp_path):
    async with embedded_broker(tmp_path) as broker:
        broker.features = FinalizedFeatureCache(broker.store)
        broker.features.start()
        assert broker.features.epoch == -1
        async with running_controller(broker):
            assert broker.features.epoch == 0


# -- the broker's cache ---------------------------------------------------------------
def test_cache_follows_the_znode(tmp_path):
    store = EmbeddedStore(tmp_path / "meta.json")
    try:
        cache = FinalizedFeatureCache(store)
        cache.start()
        assert (cache.epoch, dict(cache.features)) == (-1, {})
        store.create(paths.FEATURE, ENABLED_V2)                     # exists watch
        assert cache.epoch == 0
        store.set(paths.FEATURE, ENABLED_V2)                        # data watch re-armed
        assert cache.epoch == 1
        store.set(paths.FEATURE, paths.encode_feature_znode(2, 0, {}))
        assert cache.epoch == -1                                    # Disabled: cleared
        store.set(paths.FEATURE, ENABLED_V2)
        assert cache.epoch == 3
        # a feature this broker cannot support (ZooKeeper mode supports none): ignored
        store.set(paths.FEATURE, paths.encode_feature_znode(2, 1, {"x": 1}))
        assert (cache.epoch, dict(cache.features)) == (3, {})
        store.set(paths.FEATURE, b"garbage")
        assert cache.epoch == -1
        store.delete(paths.FEATURE)
        assert cache.epoch == -1
        store.create(paths.FEATURE, ENABLED_V2)
        assert cache.epoch == 0
        cache.stop()
        store.set(paths.FEATURE, ENABLED_V2)
        assert cache.epoch == 0                                     # stopped: no updates
    finally:
        store.close()


def test_cache_takes_supported_levels_only(tmp_path):
    store = EmbeddedStore(tmp_path / "meta.json")
    try:
        store.create(paths.FEATURE, ENABLED_V2)
        cache = FinalizedFeatureCache(store)
        cache.start()
        store.set(paths.FEATURE, paths.encode_feature_znode(2, 1, {"transaction.version": 2}))
        assert (cache.epoch, dict(cache.features)) == (1, {"transaction.version": 2})
        # above the supported range (0-2): Kafka's incompatibility, the view is kept
        store.set(paths.FEATURE, paths.encode_feature_znode(2, 1, {"transaction.version": 3}))
        assert (cache.epoch, dict(cache.features)) == (1, {"transaction.version": 2})
        store.set(paths.FEATURE, ENABLED_V2)
        assert (cache.epoch, dict(cache.features)) == (3, {})
    finally:
        store.close()


# -- ApiVersions ------------------------------------------------------------------------
def _api_versions(features) -> object:
    seen = {}
    ctx = context(services(apis={}, features=features), 18, 3,
                  response_cls=lambda **kw: seen.update(kw) or RESPONSES[18](**kw))
    request = SimpleNamespace(client_software_name="t", client_software_version="1")
    api_versions.handle(ctx, request)
    return seen


def test_api_versions_answers_the_epoch():
    cache = SimpleNamespace(epoch=-1, features={})
    assert _api_versions(cache)["finalized_features_epoch"] == -1
    cache.epoch = 2
    answer = _api_versions(cache)
    assert answer["finalized_features_epoch"] == 2
    # group.version and share.version are kafkapy's own (the consumer group protocol and
    # share groups), whatever /feature holds
    assert [(f.name, f.max_version_level) for f in answer["finalized_features"]] == [
        ("group.version", 1), ("share.version", 1)]
    assert _api_versions(None)["finalized_features_epoch"] == 0


def test_api_versions_finalizes_what_the_znode_and_the_config_say():
    def finalized(stored: dict, protocols: str) -> list:
        seen = {}
        config = broker_config(0, {"group.coordinator.rebalance.protocols": protocols})
        parts = services(apis={}, features=SimpleNamespace(epoch=7, features=stored),
                         config=config)
        ctx = context(parts, 18, 4,
                      response_cls=lambda **kw: seen.update(kw) or RESPONSES[18](**kw))
        api_versions.handle(ctx, SimpleNamespace(client_software_name="t",
                                                 client_software_version="1"))
        return [(f.name, f.max_version_level) for f in seen["finalized_features"]]
    assert finalized({"transaction.version": 2}, "classic,consumer,share") == [
        ("group.version", 1), ("share.version", 1), ("transaction.version", 2)]
    # the protocols switched off: their features at 0, not listed
    assert finalized({"transaction.version": 1}, "classic") == [("transaction.version", 1)]
    assert finalized({}, "classic,consumer") == [("group.version", 1)]
