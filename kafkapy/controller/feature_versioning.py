"""The ``/feature`` znode at every failover (Kafka's KafkaController
maybeSetupFeatureVersioning, KIP-584), the first step of each.

With ``inter.broker.protocol.version`` 2.7 or later the znode is created Enabled (a
ZooKeeper-mode cluster finalizes no features) or switched to Enabled keeping its
features; below 2.7 it is created or rewritten Disabled and empty.  The znode's own
version follows the IBP (v2 from 3.3-IV0, ``paths.feature_znode_version``).

Invariants: the znode is written only when its content differs from the wanted one; a
Disabled znode's features are dropped (with Kafka's warning).
"""
from __future__ import annotations

import structlog

from kafkapy.metadata import paths
from kafkapy.metadata.store import MetadataStore, NoNodeError

_log = structlog.get_logger("kafkapy.controller")


def setup_feature_versioning(store: MetadataStore, inter_broker_protocol: str) -> None:
    """Create or update ``/feature`` for the IBP ``inter_broker_protocol``."""
    version = _znode_version(inter_broker_protocol)
    if ibp_at_least(inter_broker_protocol, (2, 7)):
        _enable(store, version)
    else:
        _disable(store, version)


def write_enabled(store: MetadataStore, features: dict[str, int], inter_broker_protocol: str
                  ) -> None:
    """Rewrite ``/feature`` Enabled with ``features`` (UpdateFeatures at the controller)."""
    _update(store, paths.FeatureZNode(_znode_version(inter_broker_protocol),
                                      paths.FEATURE_ENABLED, features))


def _znode_version(inter_broker_protocol: str) -> int:
    """The znode's own version for the IBP (v2 from 3.3-IV0)."""
    return paths.feature_znode_version(ibp_at_least(inter_broker_protocol, (3, 3)))


def ibp_at_least(ibp: str, release: tuple[int, int]) -> bool:
    """``inter.broker.protocol.version`` (``3.9``, ``3.3-IV0``, ``0.10.2``...) at or after
    the first IV of ``release`` (major, minor)."""
    parts = ibp.split("-", 1)[0].split(".")
    try:
        major, minor = int(parts[0]), int(parts[1]) if len(parts) > 1 else 0
    except ValueError:
        return True             # the validator accepted it; assume the current protocol
    return (major, minor) >= release


def _enable(store: MetadataStore, version: int) -> None:
    existing = _read(store)
    if existing is None:
        _create(store, paths.FeatureZNode(version, paths.FEATURE_ENABLED, {}))
        return
    features = existing.features
    if existing.status == paths.FEATURE_DISABLED:
        if features:
            _log.warning(f"FeatureZNode at path: {paths.FEATURE} with disabled status "
                         f"contains non-empty features: {dict(features)}")
        features = {}
    wanted = paths.FeatureZNode(version, paths.FEATURE_ENABLED, features)
    if not wanted.same_content(existing):
        _update(store, wanted)


def _disable(store: MetadataStore, version: int) -> None:
    wanted = paths.FeatureZNode(version, paths.FEATURE_DISABLED, {})
    existing = _read(store)
    if existing is None:
        _create(store, wanted)
        return
    if existing.status == paths.FEATURE_DISABLED and existing.features:
        _log.warning(f"FeatureZNode at path: {paths.FEATURE} with disabled status "
                     f"contains non-empty features: {dict(existing.features)}")
    if not wanted.same_content(existing):
        _update(store, wanted)


def _read(store: MetadataStore) -> paths.FeatureZNode | None:
    try:
        data, stat = store.get(paths.FEATURE)
    except NoNodeError:
        return None
    return paths.decode_feature_znode(data, stat)


def _create(store: MetadataStore, node: paths.FeatureZNode) -> None:
    _log.info(f"Creating FeatureZNode at path: {paths.FEATURE} with contents: {node}")
    store.create(paths.FEATURE,
                 paths.encode_feature_znode(node.version, node.status, node.features),
                 makepath=True)


def _update(store: MetadataStore, node: paths.FeatureZNode) -> None:
    _log.info(f"Updating FeatureZNode at path: {paths.FEATURE} with contents: {node}")
    store.set(paths.FEATURE,
              paths.encode_feature_znode(node.version, node.status, node.features))
