"""UpdateFeatures (key 57): change the cluster's finalized features (KIP-584).

Versions 0-1 (Kafka 3.9's range in ZooKeeper mode; v1 adds UpgradeType and ValidateOnly,
v0's AllowDowngrade means a safe downgrade).  As Kafka 3.9's KafkaApis.handleUpdateFeatures:
CLUSTER ALTER authorization (else CLUSTER_AUTHORIZATION_FAILED at the top level), then a
broker that is not the active controller answers NOT_CONTROLLER (the admin client looks
the controller up again), an IBP below 2.7 answers INVALID_REQUEST "Feature versioning
system is disabled."; otherwise the controller decides per feature
(``controller.feature_updates``) and the answer lists one result per requested feature
under a top-level NONE.  The levels of ``group.version`` / ``share.version`` follow
``group.coordinator.rebalance.protocols`` on the controller (``metadata.features``).
"""
from __future__ import annotations

from kafkapy.controller.controller import NOT_CONTROLLER_MESSAGE
from kafkapy.controller.feature_updates import SAFE_DOWNGRADE, UPGRADE, FeatureUpdate
from kafkapy.controller.feature_versioning import ibp_at_least
from kafkapy.protocol.errors import ErrorCode
from kafkapy.protocol.messages import RESPONSES
from kafkapy.security import authz

API_KEY = 57
MIN_VERSION = 0
MAX_VERSION = 1

_Result = RESPONSES[API_KEY].UpdatableFeatureResult

CLUSTER_AUTHORIZATION_MESSAGE = "Cluster authorization failed."
DISABLED_MESSAGE = "Feature versioning system is disabled."


async def handle(ctx, request):
    services = ctx.services
    if not authz.cluster(ctx, authz.ALTER):
        return _top_level(ctx, ErrorCode.CLUSTER_AUTHORIZATION_FAILED,
                          CLUSTER_AUTHORIZATION_MESSAGE)
    controller = services.controller
    if not controller.is_active:
        return _top_level(ctx, ErrorCode.NOT_CONTROLLER, NOT_CONTROLLER_MESSAGE)
    if not ibp_at_least(str(services.config["inter.broker.protocol.version"]), (2, 7)):
        return _top_level(ctx, ErrorCode.INVALID_REQUEST, DISABLED_MESSAGE)
    validate_only = bool(request.validate_only) if ctx.api_version >= 1 else False
    outcome = await controller.update_features(
        _updates(ctx.api_version, request.feature_updates), validate_only)
    if isinstance(outcome, tuple):      # (code, message): no longer the controller, or failed
        return _top_level(ctx, *outcome)
    return ctx.response(throttle_time_ms=0, error_code=ErrorCode.NO_ERROR, error_message=None,
                        results=[_Result(feature=name, error_code=int(code),
                                         error_message=message)
                                 for name, (code, message) in outcome.items()])


def _updates(version: int, keys) -> list[FeatureUpdate]:
    """The request's updates, one per feature (a name given twice means its first entry,
    as Kafka's getFeature finds it); v0's AllowDowngrade as v1's upgrade type."""
    out, seen = [], set()
    for key in keys or ():
        if key.feature in seen:
            continue
        seen.add(key.feature)
        if version == 0:
            kind = SAFE_DOWNGRADE if key.allow_downgrade else UPGRADE
        else:
            kind = key.upgrade_type
        out.append(FeatureUpdate(key.feature, key.max_version_level, kind))
    return out


def _top_level(ctx, code: int, message: str | None):
    return ctx.response(throttle_time_ms=0, error_code=code, error_message=message, results=[])

