"""Topic config overrides on every broker: read from ``/config/topics/T``, kept current
through ``/config/changes`` (Kafka's ZkConfigManager over ZkNodeChangeNotificationListener).

``overrides(name)`` answers from a per-topic cache, reading ``/config/topics/T`` on a
miss (a missing znode is not cached: the topic may be created later, from another
broker).  ``start()`` watches the children of ``/config/changes`` and processes the
``config_change_N`` nodes with N above the last processed one, in order (all of
them at start-up, as Kafka's listener starts from -1); a notification is
``{"version":2,"entity_path":"topics/T"}`` (version 1: entity_type/entity_name).
For a topic it re-reads the overrides, sets the metadata cache's ``topics[T].configs``
and hands ``(T, overrides)`` to each listener (``add_listener``; the server's apply the
topic's effective config to the logs this broker hosts for T and, as Kafka's
TopicConfigHandler, let an active controller retry T's offline partitions when
``unclean.leader.election.enable`` became true).  A ``brokers/<default>`` or
``brokers/<id>`` notification goes to the dynamic broker config's ``reload`` (Kafka's
BrokerConfigHandler; another broker's id is ignored there).  A ``users/<name>``
notification refreshes that user's SCRAM credentials in the broker's credential cache
(Kafka's UserConfigHandler); ``users/...`` and ``clients/...`` notifications also go to
the client quotas' ``entity_changed`` (Kafka's UserConfigHandler / ClientIdConfigHandler
updating the quota managers), and ``ips/...`` too (Kafka's IpConfigHandler).  Following the notifications (order,
watches, new sessions, the 15-minute purge) is ``kafkapy.metadata.change_notifications``;
a pass runs on the event loop.  A deleted topic's cached entry is dropped when the
metadata cache reports the deletion.

Collaborators are handed in at construction (the server makes this before the logs are
loaded: their recovery reads the overrides): the store, the metadata cache, the clock,
and, when the broker has them, its dynamic broker config and credential cache.
"""
from __future__ import annotations

from typing import Callable

import structlog
from kazoo.exceptions import NoNodeError

from kafkapy.clock import Clock
from kafkapy.config.dynamic import DynamicBrokerConfig
from kafkapy.metadata import paths
from kafkapy.metadata.cache import MetadataCache
from kafkapy.metadata.change_notifications import ChangeNotificationListener
from kafkapy.metadata.store import MetadataStore
from kafkapy.security.sasl.credentials import CredentialCache

_log = structlog.get_logger("kafkapy.topic_configs")

#: Told a topic's new overrides after a change was applied: ``(topic, overrides)``.
TopicConfigListener = Callable[[str, dict[str, str]], None]


class TopicConfigs:
    def __init__(self, store: MetadataStore, cache: MetadataCache, clock: Clock, *,
                 dynamic_config: DynamicBrokerConfig | None = None,
                 credentials: CredentialCache | None = None, client_quotas=None) -> None:
        self._store = store
        self._cache = cache
        self._clock = clock
        self._dynamic_config = dynamic_config
        self._credentials = credentials
        self._client_quotas = client_quotas     # entity_changed(type, name) for quota entities
        self._overrides: dict[str, dict[str, str]] = {}
        self._listeners: list[TopicConfigListener] = []
        self._listener: ChangeNotificationListener | None = None

    def add_listener(self, listener: TopicConfigListener) -> None:
        """``listener(topic, overrides)`` runs after each applied topic config change."""
        self._listeners.append(listener)

    # -- reads ---------------------------------------------------------------------
    def overrides(self, name: str) -> dict[str, str]:
        """The topic's overrides (a copy: callers may keep or change it)."""
        cached = self._overrides.get(name)
        if cached is None:
            cached = self._read(name)
            if cached is None:
                return {}
            self._overrides[name] = cached
        return dict(cached)

    def invalidate(self, name: str) -> None:
        """Forget ``name`` (a topic created or deleted): the next read goes to the store."""
        self._overrides.pop(name, None)

    def _read(self, name: str) -> dict[str, str] | None:
        try:
            data, _ = self._store.get(paths.topic_config_path(name))
        except NoNodeError:
            return None
        try:
            return paths.decode_entity_config(data)
        except ValueError:
            _log.exception("unreadable topic config", topic=name)
            return {}

    # -- change notifications ----------------------------------------------------------
    def start(self) -> None:
        """Process the existing notifications (Kafka's listener starts from -1), then
        follow new ones."""
        if self._listener is not None:
            return
        self._cache.add_listener(self._on_topic_change)
        self._listener = ChangeNotificationListener(
            self._store, paths.CONFIG_CHANGES, paths.CONFIG_CHANGE_PREFIX,
            self._process, now_ms=self._clock.time_ms)
        self._listener.start()

    def stop(self) -> None:
        if self._listener is not None:
            self._listener.stop()

    def _on_topic_change(self, name: str, topic) -> None:
        if topic is None:
            self.invalidate(name)

    def process_changes(self) -> None:
        """One pass over the notifications (what the children watch schedules)."""
        if self._listener is not None:
            self._listener.process_changes()

    def _process(self, path: str, data: bytes) -> None:
        try:
            entity = paths.decode_config_change(data)
        except ValueError:
            _log.exception("unreadable config change notification", path=path)
            return
        entity_type, _, name = entity.partition("/")
        if entity_type == paths.CONFIG_TYPE_TOPIC and name:
            try:
                self.reload(name)
            except Exception:
                _log.exception("applying a topic config change failed", topic=name)
        elif entity_type == paths.CONFIG_TYPE_USER and name:
            if self._credentials is not None:
                try:
                    self._credentials.user_changed(name)
                except Exception:
                    _log.exception("applying a user config change failed", entity=name)
            self._quota_changed(entity_type, name)
        elif entity_type in (paths.CONFIG_TYPE_CLIENT, paths.CONFIG_TYPE_IP) and name:
            self._quota_changed(entity_type, name)
        elif entity_type == paths.CONFIG_TYPE_BROKER and name:
            if self._dynamic_config is None:
                return
            try:
                self._dynamic_config.reload(name)
            except Exception:
                _log.exception("applying a broker config change failed", entity=name)

    def _quota_changed(self, entity_type: str, name: str) -> None:
        if self._client_quotas is None:
            return
        try:
            self._client_quotas.entity_changed(entity_type, name)
        except Exception:
            _log.exception("applying a client quota change failed", entity=name)

    def reload(self, name: str) -> None:
        """Re-read ``name``'s overrides, set them in the metadata cache and tell the
        listeners."""
        stored = self._read(name)
        if stored is None:
            self.invalidate(name)
            return
        self._overrides[name] = stored
        topic = self._cache.topic(name)
        if topic is not None:
            topic.configs = dict(stored)
        for listener in list(self._listeners):
            listener(name, dict(stored))
        _log.info("applied topic config change", topic=name, overrides=stored)
