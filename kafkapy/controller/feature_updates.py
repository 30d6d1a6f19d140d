"""UpdateFeatures at the active controller (Kafka 3.9's ZooKeeper-mode KafkaController
processFeatureUpdates, KIP-584): validate each update, then write ``/feature`` once.

Each update is checked on its own, in Kafka's order and with its words (INVALID_REQUEST):
an empty name; an unknown upgrade type (v1's UpgradeType other than 1 upgrade, 2 safe
downgrade, 3 unsafe downgrade; v0's AllowDowngrade is mapped to 1 or 2 by the handler);
a deletion (level below 1 with a downgrade type) of a feature not finalized; a level below
1 with the upgrade type; the same level as the finalized one; a lower level without the
SAFE type (an unsafe downgrade is refused as Kafka's ZooKeeper controller refuses it); a
higher level with a downgrade type; then the level must be in this broker's supported
range and in the range every live (or shutting down) broker registered -- a Kafka 3.9
broker registers none, so with one in the cluster nothing can be finalized.

``group.version`` and ``share.version`` follow broker config
(``group.coordinator.rebalance.protocols``, ``metadata.features.served_levels``): a request
for another level within their range is refused with INVALID_UPDATE_VERSION and a line
naming that config; asking for their current level gets Kafka's "same value" refusal.

The valid updates change the finalized features (a deletion removes the feature, so no
level 0 is ever written); unless ``validate_only``, when that differs from what the
broker's cache holds, ``/feature`` is rewritten (Enabled, its version following the IBP,
any zk version) and the cache refreshed, so the epoch (the znode's version) moves.  A
failed write turns every valid update into FEATURE_UPDATE_FAILED.

Result: feature name -> ``(error code, message)``; a success is ``(NONE, "NONE")``, the
message Kafka's ``ApiError(Errors.NONE)`` carries.
"""
from __future__ import annotations

from dataclasses import dataclass
from typing import Iterable, Mapping

import structlog

from kafkapy.controller.feature_versioning import write_enabled
from kafkapy.metadata.features import (
    CONFIG_FEATURES, GROUP_VERSION, SHARE_VERSION, FinalizedFeatureCache, incompatible)
from kafkapy.metadata.store import MetadataStore
from kafkapy.protocol.errors import ErrorCode

_log = structlog.get_logger("kafkapy.controller")

UPGRADE = 1
SAFE_DOWNGRADE = 2
UNSAFE_DOWNGRADE = 3

SUCCESS = (ErrorCode.NO_ERROR, "NONE")
FAILED_MESSAGE = "Unable to update finalized features due to an unexpected server error."
#: the config a config feature follows, the protocol named in it, what it switches
_CONFIG_LINES = {GROUP_VERSION: ("consumer", "the consumer group protocol"),
                 SHARE_VERSION: ("share", "share groups")}


@dataclass(frozen=True, slots=True)
class FeatureUpdate:
    """One requested change: ``level`` < 1 with a downgrade type deletes the feature."""
    feature: str
    level: int
    upgrade_type: int

    @property
    def is_delete(self) -> bool:
        return self.level < 1 and self.upgrade_type != UPGRADE


def process_feature_updates(store: MetadataStore, cache: FinalizedFeatureCache, *,
                            updates: Iterable[FeatureUpdate], validate_only: bool,
                            supported: Mapping[str, tuple[int, int]],
                            brokers: Iterable[Mapping[str, tuple[int, int]]],
                            served: Mapping[str, int], inter_broker_protocol: str
                            ) -> dict[str, tuple[int, str | None]]:
    """Validate ``updates`` against the cache's finalized features, ``supported`` (this
    broker's) and ``brokers`` (each live broker's registered features); write the
    result to ``/feature`` unless ``validate_only``.  ``served``: the levels of the
    config features."""
    existing = dict(cache.features)
    target = dict(existing)
    results: dict[str, tuple[int, str | None]] = {}
    broker_features = list(brokers)
    for update in updates:
        error, level = _validate(update, existing, supported, broker_features, served)
        results[update.feature] = error or SUCCESS
        if error is None:
            if level is None:
                target.pop(update.feature, None)
            else:
                target[update.feature] = level
    if validate_only or target == existing:
        return results
    try:
        write_enabled(store, target, inter_broker_protocol)
        cache.refresh()
    except Exception as e:     # noqa: BLE001 - Kafka answers the valid ones FEATURE_UPDATE_FAILED
        _log.warning(f"Processing of feature updates failed due to error: {e!r}")
        results = {name: (ErrorCode.FEATURE_UPDATE_FAILED, FAILED_MESSAGE)
                   if result == SUCCESS else result for name, result in results.items()}
    return results


def _validate(update: FeatureUpdate, existing: Mapping[str, int],
              supported: Mapping[str, tuple[int, int]],
              brokers: list[Mapping[str, tuple[int, int]]], served: Mapping[str, int]
              ) -> tuple[tuple[int, str] | None, int | None]:
    """``(None, new level or None to delete)`` or ``((code, message), None)``."""
    name, level, kind = update.feature, update.level, update.upgrade_type
    if not name:
        return _invalid("Feature name can not be empty."), None
    if kind not in (UPGRADE, SAFE_DOWNGRADE, UNSAFE_DOWNGRADE):
        return _invalid("Received unknown upgrade type."), None
    if name in CONFIG_FEATURES:
        refusal = _config_feature_refusal(name, level, supported, served)
        if refusal is not None:
            return refusal, None
        current = served.get(name) or None
    else:
        current = existing.get(name)
    if update.is_delete:
        if current is None:
            return _invalid("Can not delete non-existing finalized feature."), None
        return None, None
    if level < 1:
        return _invalid(f"Can not provide versionLevel: {level} less than 1 without "
                        f"setting the SAFE downgradeType in the request."), None
    if current is not None:
        if level == current:
            verb = "downgrade" if kind == SAFE_DOWNGRADE else "upgrade"
            return _invalid(f"Can not {verb} a finalized feature from existing "
                            f"versionLevel:{current} to the same value."), None
        if level < current and kind != SAFE_DOWNGRADE:
            return _invalid(f"Can not downgrade finalized feature from existing "
                            f"versionLevel:{current} to provided versionLevel:{level} "
                            f"without setting the downgradeType to SAFE in the request."), None
        if kind != UPGRADE and level > current:
            return _invalid(f"When the downgradeType is set to SAFE in the request, the "
                            f"provided versionLevel:{level} can not be greater than "
                            f"existing versionLevel:{current}."), None
    return _supported_everywhere(name, level, supported, brokers)


def _config_feature_refusal(name: str, level: int, supported: Mapping[str, tuple[int, int]],
                            served: Mapping[str, int]) -> tuple[int, str] | None:
    """INVALID_UPDATE_VERSION for another supported level of a config feature."""
    low, high = supported.get(name, (1, 0))
    if level == served.get(name, 0) or not low <= max(level, 0) <= high:
        return None
    protocol, what = _CONFIG_LINES[name]
    if max(level, 0) < served.get(name, 0):
        action = f"remove {protocol} from it to switch {what} off"
    else:
        action = f"add {protocol} to it to switch {what} on"
    return (ErrorCode.INVALID_UPDATE_VERSION,
            f"{name} follows the broker config group.coordinator.rebalance.protocols: "
            f"{action}.")


def _supported_everywhere(name: str, level: int, supported: Mapping[str, tuple[int, int]],
                          brokers: list[Mapping[str, tuple[int, int]]]
                          ) -> tuple[tuple[int, str] | None, int | None]:
    """Kafka's newFinalizedVersionOrIncompatibilityError."""
    if name not in supported:
        return _invalid("Could not apply finalized feature update because the provided "
                        "feature is not supported."), None
    low, high = supported[name]
    if not low <= level <= high:
        return _invalid(f"Could not apply finalized feature update because the provided "
                        f"versionLevel:{level} is lower than the supported "
                        f"minVersion:{low}."), None
    if any(incompatible(features, {name: level}) for features in brokers):
        return _invalid("Could not apply finalized feature update because brokers were "
                        "found to have incompatible versions for the feature."), None
    return None, level


def _invalid(message: str) -> tuple[int, str]:
    return ErrorCode.INVALID_REQUEST, message
