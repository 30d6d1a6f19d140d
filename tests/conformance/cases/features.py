"""UpdateFeatures (57): the controller's per-feature refusals (Kafka 3.9's ZooKeeper-mode
KafkaController.validateFeatureUpdate), which both brokers give alike.

Each broker is its own cluster's controller.  Kafka 3.9 in ZooKeeper mode supports no
feature (BrokerFeatures.createEmpty) and does not honour ValidateOnly, so only requests that
neither broker can grant are compared as they are: nothing is ever written, on either side.
A level kafkapy supports (transaction.version 2, asked with ValidateOnly so nothing is
written) and group.version's refusal differ on purpose (``known.KNOWN_DIFFERENCES``).
v0 says a downgrade with AllowDowngrade, v1 with UpgradeType (1 upgrade, 2 safe, 3 unsafe).
"""
from __future__ import annotations

from tests.conformance.cases import for_api
from tests.conformance.cases.common import case

UPGRADE, SAFE, UNSAFE = 1, 2, 3


def _update(v: int, feature: str, level: int, kind: int = UPGRADE) -> dict:
    return {"feature": feature, "max_version_level": level,
            "allow_downgrade": kind != UPGRADE, "upgrade_type": kind}


def _request(updates: list[dict], validate_only: bool = False) -> dict:
    return {"timeout_ms": 5000, "feature_updates": updates, "validate_only": validate_only}


@for_api(57)
def update_features(v: int):
    yield case("unknown-feature", _request([_update(v, "unknown.feature", 1)]))
    yield case("empty-name", _request([_update(v, "", 1)]))
    yield case("delete-not-finalized", _request([_update(v, "transaction.version", 0, SAFE)]))
    yield case("level-0-without-downgrade", _request([_update(v, "transaction.version", 0)]))
    yield case("negative-level", _request([_update(v, "transaction.version", -1)]))
    yield case("no-updates", _request([]))
    yield case("several", _request([_update(v, "unknown.feature", 2),
                                    _update(v, "", 1),
                                    _update(v, "other.feature", 0, SAFE)]))
    yield case("same-feature-twice", _request([_update(v, "unknown.feature", 1),
                                                _update(v, "unknown.feature", 0, SAFE)]))
    yield case("group-version-disable", _request([_update(v, "group.version", 0, SAFE)]))
    if v >= 1:
        yield case("unknown-upgrade-type", _request([_update(v, "transaction.version", 2, 0)]))
        yield case("unsafe-delete-not-finalized",
                   _request([_update(v, "transaction.version", 0, UNSAFE)]))
        yield case("validate-only-unknown-feature",
                   _request([_update(v, "unknown.feature", 1)], validate_only=True))
        yield case("transaction-version-validate-only",
                   _request([_update(v, "transaction.version", 2)], validate_only=True))
