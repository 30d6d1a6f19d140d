"""The broker's view of ``/feature`` (Kafka 3.9's FinalizedFeatureChangeListener and the
ZooKeeper-mode finalized feature cache, KIP-584).

Job: keep ``(features, epoch)`` equal to what Kafka's ZooKeeper-mode broker would hold,
for ApiVersions (``FinalizedFeatures`` / ``FinalizedFeaturesEpoch``):
 - ``/feature`` absent, unreadable, or ``status`` Disabled: no finalized features and
   epoch -1 (Kafka's ``clearFeatures``; ApiVersions then leaves the epoch tag out);
 - Enabled: its features and epoch = the znode's zk version (0 right after the
   controller created it, as Kafka's ``enableFeatureVersioning`` does on failover).
A ZooKeeper-mode broker supports no features (Kafka's ``BrokerFeatures.createEmpty``),
so finalized features that are not empty are incompatible: Kafka's cache refuses them
(and its listener thread exits the broker); kafkapy logs an error and keeps the previous
view instead of stopping.

Invariants: the data watch is re-armed on every read (watches are one-shot) and after a
new store session; callbacks run on the event loop (the store delivers them there), so
the view has one writer.  ``refresh()`` is synchronous: the controller calls it right
after writing the znode (Kafka's ``waitUntilFeatureEpochOrThrow`` on its own cache).
"""
from __future__ import annotations

from typing import Mapping

import structlog

from kafkapy.metadata import paths
from kafkapy.metadata.store import EventType, NoNodeError

_log = structlog.get_logger("kafkapy.metadata.features")

UNKNOWN_EPOCH = -1


class FinalizedFeatureCache:
    """``features`` (name -> level) and ``epoch`` of the cluster's ``/feature`` znode."""

    def __init__(self, store) -> None:
        self._store = store
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
        if node.features:
            # nothing is supported in ZooKeeper mode (Kafka: FeatureCacheUpdateException)
            _log.error("finalized features incompatible with this broker (it supports "
                       "none); keeping the previous view", finalized=dict(node.features),
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
