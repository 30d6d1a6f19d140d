"""The broker's view of ``/feature`` (Kafka 3.9's FinalizedFeatureChangeListener and the
ZooKeeper-mode finalized feature cache, KIP-584).

Job: keep ``(features, epoch)`` equal to what Kafka's ZooKeeper-mode broker would hold,
for ApiVersions (``FinalizedFeatures`` / ``FinalizedFeaturesEpoch``):
 - ``/feature`` absent, unreadable, or ``status`` Disabled: no finalized features and
   epoch -1 (Kafka's ``clearFeatures``; ApiVersions then leaves the epoch tag out);
 - Enabled: its features and epoch = the znode's zk version (0 right after the
   controller created it, as Kafka's ``enableFeatureVersioning`` does on failover).
A Kafka 3.9 ZooKeeper-mode broker supports no features (``BrokerFeatures.createEmpty``);
a kafkapy broker supports ``SUPPORTED_FEATURES`` (registered in ``/brokers/ids/<id>`` and
listed by ApiVersions).  Finalized features outside them are incompatible (Kafka's
``BrokerFeatures.incompatibleFeatures``: an unknown feature, or a level outside its
range): Kafka's cache refuses them (and its listener thread exits the broker); kafkapy
logs an error and keeps the previous view instead of stopping.

Effective levels (``finalized_levels``): what ``/feature`` holds; a feature absent from
it is at its served default (``served_levels``): ``group.version`` 1 while the consumer
group protocol is served, ``share.version`` 1 while share groups are served (else 0),
``transaction.version`` 0.  ``group.version`` and ``share.version`` follow broker config
(``group.coordinator.rebalance.protocols``), so they never go to ``/feature``.

Invariants: the data watch is re-armed on every read (watches are one-shot) and after a
new store session; callbacks run on the event loop (the store delivers them there), so
the view has one writer.  ``refresh()`` is synchronous: the controller calls it right
after writing the znode (Kafka's ``waitUntilFeatureEpochOrThrow`` on its own cache).
"""
from __future__ import annotations

from typing import Iterable, Mapping

import structlog

from kafkapy.metadata import paths
from kafkapy.metadata.store import EventType, NoNodeError

_log = structlog.get_logger("kafkapy.metadata.features")

UNKNOWN_EPOCH = -1

GROUP_VERSION = "group.version"
SHARE_VERSION = "share.version"
TRANSACTION_VERSION = "transaction.version"

#: What a kafkapy broker supports: name -> (min level, max level).
SUPPORTED_FEATURES: Mapping[str, tuple[int, int]] = {
    GROUP_VERSION: (0, 1), SHARE_VERSION: (0, 1), TRANSACTION_VERSION: (0, 2)}
#: Features whose level follows broker config rather than ``/feature``.
CONFIG_FEATURES = frozenset({GROUP_VERSION, SHARE_VERSION})


def served_levels(protocols: Iterable[str]) -> dict[str, int]:
    """The levels of the config features for ``group.coordinator.rebalance.protocols``
    (``protocols``): ``group.version`` 1 while it lists ``consumer``, ``share.version`` 1
    while it lists ``share``, else 0."""
    listed = {p.strip().lower() for p in protocols}
    return {GROUP_VERSION: int("consumer" in listed), SHARE_VERSION: int("share" in listed)}


def finalized_levels(stored: Mapping[str, int], served: Mapping[str, int]) -> dict[str, int]:
    """Every supported feature's effective level: ``stored`` (``/feature``) with the
    config features at their ``served`` levels and the rest defaulting to 0."""
    levels = {name: 0 for name in SUPPORTED_FEATURES}
    levels.update(stored)
    levels.update(served)
    return levels


def incompatible(supported: Mapping[str, tuple[int, int]],
                 finalized: Mapping[str, int]) -> dict[str, int]:
    """The finalized features ``supported`` cannot run: unknown, or a level outside the
    supported range (Kafka's BrokerFeatures.incompatibleFeatures)."""
    out = {}
    for name, level in finalized.items():
        low, high = supported.get(name, (1, 0))
        if not low <= level <= high:
            out[name] = level
    return out


class FinalizedFeatureCache:
    """``features`` (name -> level) and ``epoch`` of the cluster's ``/feature`` znode."""

    def __init__(self, store,
                 supported: Mapping[str, tuple[int, int]] = SUPPORTED_FEATURES) -> None:
        self._store = store
        self._supported = supported
        self.features: Mapping[str, int] = {}
        self.epoch = UNKNOWN_EPOCH
        self._stopped = False

    def start(self) -> None:
        self.refresh()

    def stop(self) -> None:
        self._stopped = True

    def refresh(self) -> None:
        """Read ``/feature`` (watching it) and update the view."""
        if self._stopped:
            return
        try:
            data, stat = self._store.get(paths.FEATURE, watch=self._on_change)
        except NoNodeError:
            # an exists watch: fires when the controller creates it
            if self._store.exists(paths.FEATURE, watch=self._on_change) is not None:
                return self.refresh()
            return self._clear("absent")
        try:
            node = paths.decode_feature_znode(data, stat)
        except ValueError as err:
            _log.error("unreadable /feature znode", error=str(err))
            return self._clear("unreadable")
        if node.status != paths.FEATURE_ENABLED:
            return self._clear("disabled")
        refused = incompatible(self._supported, node.features)
        if refused:
            # Kafka: FeatureCacheUpdateException (and its broker exits)
            _log.error("finalized features incompatible with this broker; keeping the "
                       "previous view", incompatible=refused, supported=dict(self._supported),
                       epoch=node.epoch)
            return
        if node.epoch < self.epoch:
            _log.error("finalized features epoch went back; keeping the previous view",
                       epoch=node.epoch, current=self.epoch)
            return
        if (node.epoch, dict(node.features)) != (self.epoch, dict(self.features)):
            _log.info("finalized features updated", features=dict(node.features),
                      epoch=node.epoch)
        self.features, self.epoch = dict(node.features), node.epoch

    def _clear(self, why: str) -> None:
        if self.epoch != UNKNOWN_EPOCH:
            _log.info("finalized features cleared", reason=why)
        self.features, self.epoch = {}, UNKNOWN_EPOCH

    def _on_change(self, event) -> None:
        if event.type == EventType.NONE:       # connection state, not a change
            return
        try:
            self.refresh()
        except Exception:  # noqa: BLE001 - ZooKeeper away: the next session refreshes
            _log.warning("reading /feature failed", exc_info=True)
