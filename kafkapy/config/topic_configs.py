"""Topic config overrides on every broker: read from ``/config/topics/T``, kept current
through ``/config/changes`` (Kafka's ZkConfigManager over ZkNodeChangeNotificationListener).

``overrides(name)`` answers from a per-topic cache, reading ``/config/topics/T`` on a
miss (a missing znode is not cached: the topic may be created later, from another
broker).  ``start()`` watches the children of ``/config/changes`` and processes the
``config_change_N`` nodes with N above the last processed one, in order (all of
them at start-up, as Kafka's listener starts from -1); a notification is
``{"version":2,"entity_path":"topics/T"}`` (version 1: entity_type/entity_name).
For a topic it re-reads the overrides, sets ``cache.topics[T].configs`` and
applies ``broker.topic_config(T)`` to the logs this broker hosts for T (and, when
``unclean.leader.election.enable`` is now true, asks an active controller's
``enable_topic_unclean_leader_election(T)``, as Kafka's TopicConfigHandler).  A
``brokers/<default>`` or ``brokers/<id>`` notification goes to
``broker.dynamic_config.reload`` (Kafka's BrokerConfigHandler; another broker's id is
ignored there).  A ``users/<name>`` notification refreshes that user's SCRAM
credentials in the broker's cache (``kafkapy.security.sasl.credentials``).  Other entity
types (clients, ips) are ignored: they hold client quotas, which kafkapy does not
enforce.  Following the notifications (order, watches, new sessions, the 15-minute purge) is
``kafkapy.metadata.change_notifications``; a pass runs on the event loop.
A deleted topic's cached entry is dropped when the cache reports the deletion.
"""
from __future__ import annotations

import structlog
from kazoo.exceptions import NoNodeError

from kafkapy.metadata import paths
from kafkapy.metadata.change_notifications import ChangeNotificationListener
from kafkapy.security.sasl.credentials import on_user_change

_log = structlog.get_logger("kafkapy.topic_configs")


class TopicConfigs:
    def __init__(self, broker) -> None:
        self._broker = broker
        self._overrides: dict[str, dict[str, str]] = {}
        self._listener: ChangeNotificationListener | None = None

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
            data, _ = self._broker.store.get(paths.topic_config_path(name))
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
        self._broker.cache.add_listener(self._on_topic_change)
        self._listener = ChangeNotificationListener(
            self._broker.store, paths.CONFIG_CHANGES, paths.CONFIG_CHANGE_PREFIX,
            self._process, now_ms=self._broker.clock.time_ms)
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
            # SCRAM credentials (Kafka's UserConfigHandler -> CredentialCache).
            try:
                on_user_change(self._broker, name)
            except Exception:
                _log.exception("applying a user config change failed", entity=name)
        elif entity_type == paths.CONFIG_TYPE_BROKER and name:
            dynamic = getattr(self._broker, "dynamic_config", None)
            if dynamic is None:
                return
            try:
                dynamic.reload(name)
            except Exception:
                _log.exception("applying a broker config change failed", entity=name)

    def reload(self, name: str) -> None:
        """Re-read ``name``'s overrides and apply them to the cache and the hosted logs."""
        stored = self._read(name)
        if stored is None:
            self.invalidate(name)
            return
        self._overrides[name] = stored
        broker = self._broker
        topic = broker.cache.topic(name)
        if topic is not None:
            topic.configs = dict(stored)
        self._apply_to_logs(name)
        if stored.get("unclean.leader.election.enable", "").strip().lower() == "true":
            # Kafka's TopicConfigHandler: the active controller retries the topic's
            # offline partitions with the new rule.
            if broker.controller.is_active:
                broker.controller.enable_topic_unclean_leader_election(name)
        _log.info("applied topic config change", topic=name, overrides=stored)

    def _apply_to_logs(self, name: str) -> None:
        manager = self._broker.replica_manager
        if manager is None:
            return
        hosted = [p for (t, _), p in manager.partitions.items() if t == name]
        if not hosted:
            return
        config = self._broker.topic_config(name)
        for partition in hosted:
            partition.log.update_config(config)
