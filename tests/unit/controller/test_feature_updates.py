"""UpdateFeatures at the controller (``controller.feature_updates``), over a real embedded
store and the broker's ``FinalizedFeatureCache``:

- each of Kafka's ZooKeeper-mode refusals, with its words (INVALID_REQUEST), and kafkapy's
  INVALID_UPDATE_VERSION for group.version / share.version, which follow broker config;
- a valid update rewrites ``/feature`` (Kafka's bytes, v2 or v1 by IBP) and the cache
  follows (epoch = the znode's version); a deletion removes the feature (no level 0
  written); ``validate_only`` answers the same and writes nothing;
- one invalid update does not stop the valid ones; a failed write turns the valid ones
  into FEATURE_UPDATE_FAILED;
- a broker that registered no features (Kafka 3.9) makes every level incompatible.
"""
from __future__ import annotations

import pytest

from kafkapy.controller.feature_updates import (
    SAFE_DOWNGRADE, UNSAFE_DOWNGRADE, UPGRADE, FeatureUpdate, process_feature_updates)
from kafkapy.metadata import paths
from kafkapy.metadata.features import SUPPORTED_FEATURES, FinalizedFeatureCache, served_levels
from kafkapy.protocol.errors import ErrorCode
from tests.support.metadata_store import embedded_store

TXN = "transaction.version"
INVALID = ErrorCode.INVALID_REQUEST
OK = (ErrorCode.NO_ERROR, "NONE")


@pytest.fixture
def store(tmp_path):
    with embedded_store(tmp_path) as s:
        s.create(paths.FEATURE, paths.encode_feature_znode(2, paths.FEATURE_ENABLED, {}))
        yield s


def _cache(store) -> FinalizedFeatureCache:
    cache = FinalizedFeatureCache(store)
    cache.start()
    return cache


def _update(store, cache, *updates, validate_only=False, brokers=None, share_groups=True,
            ibp="3.9"):
    return process_feature_updates(
        store, cache, updates=[FeatureUpdate(*u) for u in updates],
        validate_only=validate_only, supported=SUPPORTED_FEATURES,
        brokers=[SUPPORTED_FEATURES] * 3 if brokers is None else brokers,
        served=served_levels(["classic", "consumer"] + (["share"] if share_groups else [])),
        inter_broker_protocol=ibp)


def _znode(store) -> tuple[bytes, int]:
    data, stat = store.get(paths.FEATURE)
    return data, stat.version


def _set(store, features: dict[str, int]) -> None:
    store.set(paths.FEATURE, paths.encode_feature_znode(2, paths.FEATURE_ENABLED, features))


REFUSALS = [
    # (update, finalized transaction.version before, error)
    (("", 1, UPGRADE), None, (INVALID, "Feature name can not be empty.")),
    ((TXN, 2, 0), None, (INVALID, "Received unknown upgrade type.")),
    ((TXN, 2, 4), None, (INVALID, "Received unknown upgrade type.")),
    ((TXN, 0, SAFE_DOWNGRADE), None, (INVALID, "Can not delete non-existing finalized feature.")),
    ((TXN, 0, UPGRADE), 1, (INVALID, "Can not provide versionLevel: 0 less than 1 without "
                                     "setting the SAFE downgradeType in the request.")),
    ((TXN, 2, UPGRADE), 2, (INVALID, "Can not upgrade a finalized feature from existing "
                                     "versionLevel:2 to the same value.")),
    ((TXN, 2, SAFE_DOWNGRADE), 2, (INVALID, "Can not downgrade a finalized feature from "
                                            "existing versionLevel:2 to the same value.")),
    ((TXN, 1, UPGRADE), 2, (INVALID, "Can not downgrade finalized feature from existing "
                                     "versionLevel:2 to provided versionLevel:1 without setting "
                                     "the downgradeType to SAFE in the request.")),
    ((TXN, 1, UNSAFE_DOWNGRADE), 2, (INVALID, "Can not downgrade finalized feature from "
                                              "existing versionLevel:2 to provided "
                                              "versionLevel:1 without setting the "
                                              "downgradeType to SAFE in the request.")),
    ((TXN, 2, SAFE_DOWNGRADE), 1, (INVALID, "When the downgradeType is set to SAFE in the "
                                            "request, the provided versionLevel:2 can not be "
                                            "greater than existing versionLevel:1.")),
    ((TXN, 3, UPGRADE), None, (INVALID, "Could not apply finalized feature update because the "
                                        "provided versionLevel:3 is lower than the supported "
                                        "minVersion:0.")),
    (("metadata.version", 21, UPGRADE), None, (
        INVALID, "Could not apply finalized feature update because the provided feature is "
                 "not supported.")),
    (("group.version", 0, SAFE_DOWNGRADE), None, (
        ErrorCode.INVALID_UPDATE_VERSION,
        "group.version follows the broker config group.coordinator.rebalance.protocols: "
        "remove consumer from it to switch the consumer group protocol off.")),
    (("share.version", 0, UNSAFE_DOWNGRADE), None, (
        ErrorCode.INVALID_UPDATE_VERSION,
        "share.version follows the broker config group.coordinator.rebalance.protocols: "
        "remove share from it to switch share groups off.")),
    (("group.version", 1, UPGRADE), None, (INVALID, "Can not upgrade a finalized feature from "
                                                    "existing versionLevel:1 to the same value.")),
    (("group.version", 2, UPGRADE), None, (
        INVALID, "Could not apply finalized feature update because the provided "
                 "versionLevel:2 is lower than the supported minVersion:0.")),
]


@pytest.mark.parametrize("update, before, error", REFUSALS,
                         ids=[f"{u[0] or 'empty'}-{u[1]}-type{u[2]}-from-{b}"
                              for u, b, _ in REFUSALS])
def test_refusals_leave_the_znode_alone(store, update, before, error):
    if before is not None:
        _set(store, {TXN: before})
    cache = _cache(store)
    znode = _znode(store)
    assert _update(store, cache, update) == {update[0]: error}
    assert _znode(store) == znode


def test_group_version_cannot_be_switched_on_while_the_protocol_is_off(store):
    cache = _cache(store)
    served = served_levels(["classic"])
    assert served == {"group.version": 0, "share.version": 0}
    assert process_feature_updates(
        store, cache, updates=[FeatureUpdate("group.version", 1, UPGRADE)],
        validate_only=False, supported=SUPPORTED_FEATURES, brokers=[SUPPORTED_FEATURES],
        served=served, inter_broker_protocol="3.9") == {
        "group.version": (ErrorCode.INVALID_UPDATE_VERSION,
                          "group.version follows the broker config "
                          "group.coordinator.rebalance.protocols: add consumer to it to switch "
                          "the consumer group protocol on.")}
    assert _znode(store)[1] == 0


def test_share_version_cannot_be_switched_on_while_share_groups_are_off(store):
    cache = _cache(store)
    assert _update(store, cache, ("share.version", 1, UPGRADE), share_groups=False) == {
        "share.version": (ErrorCode.INVALID_UPDATE_VERSION,
                          "share.version follows the broker config "
                          "group.coordinator.rebalance.protocols: add share to it to switch "
                          "share groups on.")}
    # at its level already (0): there is nothing to delete
    assert _update(store, cache, ("share.version", 0, SAFE_DOWNGRADE), share_groups=False) == {
        "share.version": (INVALID, "Can not delete non-existing finalized feature.")}


def test_upgrade_downgrade_delete_rewrite_the_znode_and_the_cache_follows(store):
    cache = _cache(store)
    assert (cache.epoch, dict(cache.features)) == (0, {})
    assert _update(store, cache, (TXN, 2, UPGRADE)) == {TXN: OK}
    assert _znode(store) == (
        b'{"features":{"transaction.version":{"max_version_level":2}},"version":2,"status":1}',
        1)
    assert (cache.epoch, dict(cache.features)) == (1, {TXN: 2})
    assert _update(store, cache, (TXN, 1, SAFE_DOWNGRADE)) == {TXN: OK}
    assert (cache.epoch, dict(cache.features)) == (2, {TXN: 1})
    assert _update(store, cache, (TXN, 0, UNSAFE_DOWNGRADE)) == {TXN: OK}    # a deletion
    assert _znode(store) == (b'{"features":{},"version":2,"status":1}', 3)
    assert (cache.epoch, dict(cache.features)) == (3, {})


def test_ibp_below_3_3_writes_a_v1_znode(store):
    cache = _cache(store)
    assert _update(store, cache, (TXN, 1, UPGRADE), ibp="3.2") == {TXN: OK}
    assert _znode(store)[0] == (b'{"features":{"transaction.version":{"max_version_level":1,'
                                b'"min_version_level":1}},"version":1,"status":1}')
    assert dict(cache.features) == {TXN: 1}


def test_validate_only_answers_without_writing(store):
    cache = _cache(store)
    results = _update(store, cache, (TXN, 2, UPGRADE), ("group.version", 0, SAFE_DOWNGRADE),
                      validate_only=True)
    assert results[TXN] == OK
    assert results["group.version"][0] == ErrorCode.INVALID_UPDATE_VERSION
    assert _znode(store)[1] == 0 and dict(cache.features) == {}


def test_valid_updates_go_through_beside_invalid_ones(store):
    cache = _cache(store)
    results = _update(store, cache, ("unknown.feature", 1, UPGRADE), (TXN, 2, UPGRADE))
    assert results[TXN] == OK and results["unknown.feature"][0] == INVALID
    assert dict(cache.features) == {TXN: 2}


def test_nothing_to_change_writes_nothing(store):
    cache = _cache(store)
    assert _update(store, cache, (TXN, 5, UPGRADE))[TXN][0] == INVALID
    assert _znode(store)[1] == 0


def test_a_failed_write_fails_the_valid_updates(store):
    cache = _cache(store)
    store.delete(paths.FEATURE)         # the write (a set) finds no znode
    results = _update(store, cache, (TXN, 2, UPGRADE), ("", 1, UPGRADE))
    assert results == {
        TXN: (ErrorCode.FEATURE_UPDATE_FAILED,
              "Unable to update finalized features due to an unexpected server error."),
        "": (INVALID, "Feature name can not be empty.")}


@pytest.mark.parametrize("brokers", [[SUPPORTED_FEATURES, {}],
                                     [SUPPORTED_FEATURES, {TXN: (0, 1)}]],
                         ids=["kafka-3.9-broker", "older-range"])
def test_a_broker_without_the_level_makes_it_incompatible(store, brokers):
    cache = _cache(store)
    assert _update(store, cache, (TXN, 2, UPGRADE), brokers=brokers) == {
        TXN: (INVALID, "Could not apply finalized feature update because brokers were found "
                       "to have incompatible versions for the feature.")}
    assert _znode(store)[1] == 0
