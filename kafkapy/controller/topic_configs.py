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
types (clients, ips) are ignored: kafkapy has no quotas.  Notifications older than 15 minutes are purged, as
Kafka's listener does on every pass.

Watch callbacks only schedule a pass on the event loop; a pass runs on the loop.
A new store session (the old one expired with its watches) schedules a pass too.
A deleted topic's cached entry is dropped when the cache reports the deletion.
"""
from __future__ import annotations

import asyncio

import structlog
from kazoo.exceptions import ConnectionLoss, NoNodeError

from kafkapy.metadata import paths

_log = structlog.get_logger("kafkapy.topic_configs")
CHANGE_EXPIRATION_MS = 15 * 60 * 1000
_RETRY_S = 1.0


class TopicConfigs:
    def __init__(self, broker) -> None:
        self._broker = broker
        self._overrides: dict[str, dict[str, str]] = {}
        self._last_change = -1
        self._started = False
        self._scheduled = False
        self._loop: asyncio.AbstractEventLoop | None = None

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
        """Process the existing notifications, then follow new ones."""
        if self._started:
            return
        self._started = True
        try:
            self._loop = asyncio.get_running_loop()
        except RuntimeError:
            self._loop = None
        self._broker.cache.add_listener(self._on_topic_change)
        store = self._broker.store
        if self._loop is not None:
            # Watches die with an expired session: a new one starts with a full pass
            # (Kafka's listener on afterInitializingSession).
            store.on_new_session(self._on_children)
        store.ensure_path(paths.CONFIG_CHANGES)
        self.process_changes()

    def stop(self) -> None:
        self._started = False

    def _on_topic_change(self, name: str, topic) -> None:
        if topic is None:
            self.invalidate(name)

    def _on_children(self, _event=None) -> None:
        if not self._started or self._scheduled:
            return
        if self._loop is None or self._loop.is_closed():
            self.process_changes()
            return
        self._scheduled = True
        try:
            self._loop.call_soon_threadsafe(self._scheduled_pass)
        except RuntimeError:       # loop closed under us
            self._scheduled = False

    def _scheduled_pass(self) -> None:
        self._scheduled = False
        self.process_changes()

    def process_changes(self) -> None:
        """One pass of Kafka's processNotifications; re-arms the children watch."""
        if not self._started:
            return
        store = self._broker.store
        try:
            children = sorted(store.get_children(paths.CONFIG_CHANGES, watch=self._on_children))
        except NoNodeError:
            store.ensure_path(paths.CONFIG_CHANGES)
            children = sorted(store.get_children(paths.CONFIG_CHANGES, watch=self._on_children))
        except ConnectionLoss as err:
            # ZooKeeper is away: try again shortly (the watch that brought us here fired).
            _log.warning("reading config change notifications failed; retrying", error=str(err))
            if self._loop is not None and not self._loop.is_closed():
                self._loop.call_later(_RETRY_S, self._on_children)
            return
        except Exception:
            _log.exception("reading config change notifications failed")
            return
        for child in children:
            number = _change_number(child)
            if number is None or number <= self._last_change:
                continue
            self._process(child)
            self._last_change = number
        self._purge(children)

    def _process(self, child: str) -> None:
        path = f"{paths.CONFIG_CHANGES}/{child}"
        try:
            data, _ = self._broker.store.get(path)
            entity = paths.decode_config_change(data)
        except NoNodeError:
            return
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
                from kafkapy.security.sasl.credentials import on_user_change
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

    def _purge(self, children: list[str]) -> None:
        now = self._broker.clock.time_ms()
        store = self._broker.store
        for child in children:
            path = f"{paths.CONFIG_CHANGES}/{child}"
            try:
                stat = store.exists(path)
                if stat is not None and now - stat.ctime > CHANGE_EXPIRATION_MS:
                    store.delete(path)
            except NoNodeError:
                pass        # another broker purged it first
            except Exception:
                _log.exception("purging a config change notification failed", path=path)


def _change_number(child: str) -> int | None:
    if not child.startswith(paths.CONFIG_CHANGE_PREFIX):
        return None
    try:
        return int(child[len(paths.CONFIG_CHANGE_PREFIX):])
    except ValueError:
        return None
