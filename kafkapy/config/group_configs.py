"""Group configs (Kafka 4.x's GroupConfig): a consumer group's own session timeout and
heartbeat interval, overriding the broker's ``group.consumer.session.timeout.ms`` and
``group.consumer.heartbeat.interval.ms``.

Keys (``GROUP_CONFIGS``): ``consumer.session.timeout.ms`` and
``consumer.heartbeat.interval.ms`` (INT, at least 1).  Kafka 4.x's share-group keys
(``share.*``) are not served: kafkapy has no share groups.

Storage: Kafka keeps group configs in its KRaft metadata log; kafkapy runs in ZooKeeper
mode and keeps them as ZooKeeper-mode entity configs, exactly as topic configs are kept:
``/config/groups/<group>`` holds ``{"version":1,"config":{"consumer.session.timeout.ms":"50000"}}``
(``paths.encode_entity_config``) and every change is announced by a ``/config/changes``
notification ``{"version":2,"entity_path":"groups/<group>"}``.  ``<group>`` is the group id
sanitized as Kafka's Sanitizer does for ZooKeeper entity names (URL encoding, ``*`` as
``%2A``, a space as ``%20``; ``.`` and ``..`` fully encoded, as ZooKeeper refuses them as
names), so any group id makes one znode.  The ``/config/groups`` node is made on the first
write (it is not one of Kafka's persistent paths).  A Kafka 3.9 broker in the same cluster
logs each such notification as an unknown entity type and goes on.

Validation (``validate``, Kafka's GroupConfigManager.validate): an unknown key ->
"Unknown group config name: k"; a value that does not parse or is below 1 -> Kafka's
ConfigException wording; then, with the broker's values standing in for keys not given,
the heartbeat interval within [group.consumer.min.heartbeat.interval.ms,
group.consumer.max.heartbeat.interval.ms], the session timeout within
[group.consumer.min.session.timeout.ms, group.consumer.max.session.timeout.ms], and the
session timeout above the heartbeat interval, each worded as Kafka words it.  Every
refusal is a ``ConfigError`` (the handlers answer INVALID_CONFIG).  ``check_broker_settings``
is Kafka 4.0's start-up check of the broker keys themselves (bounds in order, the defaults
within them, the heartbeat interval below the session timeout), for the broker to call.

``GroupConfigs`` is what the group coordinator asks, per heartbeat: a group's effective
values (its override, else the broker's value).  It keeps each group's parsed overrides
once read (a group without a znode too), and forgets a group when a notification names it,
so a call costs two dictionary lookups.  ``start()`` follows ``/config/changes`` from the
notifications present now (nothing is cached before, so none of them matters).
"""
from __future__ import annotations

from typing import Iterable, Mapping
from urllib.parse import unquote_plus

import structlog
from kazoo.exceptions import NoNodeError

from kafkapy.clock import Clock
from kafkapy.config.broker import BrokerConfig
from kafkapy.config.definitions import ConfigDefs, Importance
from kafkapy.config.describe import ConfigEntry
from kafkapy.config.errors import ConfigError
from kafkapy.config.types import ConfigType, render_value
from kafkapy.config.validators import at_least
from kafkapy.metadata import paths
from kafkapy.metadata.change_notifications import ChangeNotificationListener
from kafkapy.metadata.store import MetadataStore

_log = structlog.get_logger("kafkapy.group_configs")

CONFIG_TYPE_GROUP = "groups"
SESSION_TIMEOUT_MS = "consumer.session.timeout.ms"
HEARTBEAT_INTERVAL_MS = "consumer.heartbeat.interval.ms"
#: DescribeConfigsResponse.ConfigSource GROUP_CONFIG: the entry is the group's override.
GROUP_CONFIG_SOURCE = 8
_DEFAULT_CONFIG_SOURCE = 5

GROUP_CONFIGS = ConfigDefs("group")
GROUP_CONFIGS.define(SESSION_TIMEOUT_MS, ConfigType.INT, 45000, at_least(1), Importance.MEDIUM,
                     "Session timeout of this consumer group's members; unset means "
                     "group.consumer.session.timeout.ms.")
GROUP_CONFIGS.define(HEARTBEAT_INTERVAL_MS, ConfigType.INT, 5000, at_least(1), Importance.MEDIUM,
                     "Heartbeat interval given to this consumer group's members; unset means "
                     "group.consumer.heartbeat.interval.ms.")

#: Each group key and the broker key whose value it overrides.
BROKER_DEFAULTS = {SESSION_TIMEOUT_MS: "group.consumer.session.timeout.ms",
                   HEARTBEAT_INTERVAL_MS: "group.consumer.heartbeat.interval.ms"}


# -- znodes -------------------------------------------------------------------------------
def sanitize(group_id: str) -> str:
    """Kafka's Sanitizer.sanitize (URLEncoder, then ``*`` -> %2A, ``+`` -> %20); ``.`` and
    ``..`` encoded too, as no ZooKeeper name may be either."""
    if group_id in (".", ".."):
        return "%2E" * len(group_id)
    out = []
    for char in group_id:
        if char.isascii() and (char.isalnum() or char in ".-_"):
            out.append(char)
        else:
            out.extend(f"%{b:02X}" for b in char.encode("utf-8"))
    return "".join(out)


def desanitize(name: str) -> str:
    """Kafka's Sanitizer.desanitize (URLDecoder: ``+`` is a space, %XX bytes are UTF-8)."""
    return unquote_plus(name, encoding="utf-8", errors="strict")


def group_config_path(group_id: str) -> str:
    return paths.config_entity_path(CONFIG_TYPE_GROUP, sanitize(group_id))


def stored(store: MetadataStore, group_id: str) -> dict[str, str]:
    """``/config/groups/<group>`` as stored; {} when absent."""
    try:
        data, _ = store.get(group_config_path(group_id))
    except NoNodeError:
        return {}
    return paths.decode_entity_config(data)


def write(store: MetadataStore, group_id: str, configs: Mapping[str, str]) -> None:
    """Replace the group's overrides, then notify every broker (as AdminZkClient's
    changeEntityConfig does for other entities)."""
    path = group_config_path(group_id)
    payload = paths.encode_entity_config(configs)
    if store.exists(path):
        store.set(path, payload)
    else:
        store.create(path, payload, makepath=True)
    store.create(paths.CONFIG_CHANGE_SEQ_PATH, paths.encode_config_change(
        f"{CONFIG_TYPE_GROUP}/{sanitize(group_id)}"), sequence=True, makepath=True)
    _log.info("changed group configs", group=group_id, configs=dict(configs))


# -- validation -----------------------------------------------------------------------------
def validate(configs: Mapping[str, str], config: BrokerConfig) -> dict[str, int]:
    """Kafka's GroupConfigManager.validate of a group's new overrides against the broker's
    ``config``; the parsed overrides."""
    for name in configs:
        if name not in GROUP_CONFIGS:
            raise ConfigError(f"Unknown group config name: {name}", key=name)
    parsed = {name: GROUP_CONFIGS[name].parse(value) for name, value in configs.items()}
    heartbeat = parsed.get(HEARTBEAT_INTERVAL_MS, config[BROKER_DEFAULTS[HEARTBEAT_INTERVAL_MS]])
    session = parsed.get(SESSION_TIMEOUT_MS, config[BROKER_DEFAULTS[SESSION_TIMEOUT_MS]])
    _require(heartbeat >= config["group.consumer.min.heartbeat.interval.ms"], HEARTBEAT_INTERVAL_MS,
             "must be greater than or equal to group.consumer.min.heartbeat.interval.ms")
    _require(heartbeat <= config["group.consumer.max.heartbeat.interval.ms"], HEARTBEAT_INTERVAL_MS,
             "must be less than or equal to group.consumer.max.heartbeat.interval.ms")
    _require(session >= config["group.consumer.min.session.timeout.ms"], SESSION_TIMEOUT_MS,
             "must be greater than or equal to group.consumer.min.session.timeout.ms")
    _require(session <= config["group.consumer.max.session.timeout.ms"], SESSION_TIMEOUT_MS,
             "must be less than or equal to group.consumer.max.session.timeout.ms")
    _require(session > heartbeat, SESSION_TIMEOUT_MS, f"must be greater than {HEARTBEAT_INTERVAL_MS}")
    return parsed


def check_broker_settings(config: BrokerConfig) -> None:
    """Kafka 4.0's start-up checks of the ``group.consumer.*`` keys (GroupCoordinatorConfig's
    ``require``s, in its order): the bounds ordered and the defaults within them, the
    heartbeat interval below the session timeout."""
    def value(name: str) -> int:
        return config[f"group.consumer.{name}"]
    for what in ("heartbeat.interval.ms", "session.timeout.ms"):
        _require(value(f"max.{what}") >= value(f"min.{what}"), f"group.consumer.max.{what}",
                 f"must be greater than or equal to group.consumer.min.{what}")
        _require(value(what) >= value(f"min.{what}"), f"group.consumer.{what}",
                 f"must be greater than or equal to group.consumer.min.{what}")
        _require(value(what) <= value(f"max.{what}"), f"group.consumer.{what}",
                 f"must be less than or equal to group.consumer.max.{what}")
    _require(value("heartbeat.interval.ms") < value("session.timeout.ms"),
             "group.consumer.heartbeat.interval.ms",
             "must be less than group.consumer.session.timeout.ms")


def _require(ok: bool, key: str, words: str) -> None:
    if not ok:
        raise ConfigError(f"{key} {words}", key=key)


# -- DescribeConfigs --------------------------------------------------------------------------
def describe(config: BrokerConfig, overrides: Mapping[str, str], keys: Iterable[str] | None = None,
             include_synonyms: bool = False, include_documentation: bool = False
             ) -> list[ConfigEntry]:
    """Kafka's ConfigHelper for a GROUP resource: every group key with the group's value,
    else the broker's; its one synonym is itself, from GROUP_CONFIG or DEFAULT_CONFIG."""
    wanted = set(keys or ())
    return [_entry(config, key.name, overrides, include_synonyms, include_documentation)
            for key in sorted(GROUP_CONFIGS, key=lambda k: k.name)
            if not wanted or key.name in wanted]


def _entry(config: BrokerConfig, name: str, overrides: Mapping[str, str], with_synonyms: bool,
           with_docs: bool) -> ConfigEntry:
    key = GROUP_CONFIGS[name]
    source = GROUP_CONFIG_SOURCE if name in overrides else _DEFAULT_CONFIG_SOURCE
    value = render_value(key.type, _value(config, name, overrides))
    return ConfigEntry(name=name, value=value, read_only=False,
                       is_default=source == _DEFAULT_CONFIG_SOURCE, source=source,
                       is_sensitive=False,
                       synonyms=[(name, value, source)] if with_synonyms else [],
                       config_type=int(key.type), documentation=key.doc if with_docs else None)


def _value(config: BrokerConfig, name: str, overrides: Mapping[str, str]) -> int:
    if name in overrides:
        try:
            return GROUP_CONFIGS[name].parse(overrides[name])
        except ConfigError:
            _log.warning("unreadable group config ignored", key=name, value=overrides[name])
    return config[BROKER_DEFAULTS[name]]


# -- what the coordinator asks --------------------------------------------------------------
class GroupConfigs:
    """Each group's effective session timeout and heartbeat interval (see module docstring)."""

    def __init__(self, store: MetadataStore, config: BrokerConfig, clock: Clock) -> None:
        self._store = store
        self._config = config
        self._clock = clock
        self._overrides: dict[str, dict[str, int]] = {}
        self._listener: ChangeNotificationListener | None = None

    def session_timeout_ms(self, group_id: str) -> int:
        return self._effective(group_id, SESSION_TIMEOUT_MS)

    def heartbeat_interval_ms(self, group_id: str) -> int:
        return self._effective(group_id, HEARTBEAT_INTERVAL_MS)

    def invalidate(self, group_id: str) -> None:
        """Forget ``group_id``'s overrides: the next call reads them again."""
        self._overrides.pop(group_id, None)

    def _effective(self, group_id: str, name: str) -> int:
        overrides = self._overrides.get(group_id)
        if overrides is None:
            overrides = self._overrides[group_id] = self._read(group_id)
        value = overrides.get(name)
        return self._config[BROKER_DEFAULTS[name]] if value is None else value

    def _read(self, group_id: str) -> dict[str, int]:
        try:
            raw = stored(self._store, group_id)
        except ValueError:
            _log.exception("unreadable group config", group=group_id)
            return {}
        parsed = {}
        for name, value in raw.items():
            key = GROUP_CONFIGS.get(name)
            if key is None:
                continue
            try:
                parsed[name] = key.parse(value)
            except ConfigError:
                _log.warning("unreadable group config ignored", group=group_id, key=name,
                             value=value)
        return parsed

    # -- change notifications ----------------------------------------------------------
    def start(self) -> None:
        if self._listener is not None:
            return
        self._listener = ChangeNotificationListener(
            self._store, paths.CONFIG_CHANGES, paths.CONFIG_CHANGE_PREFIX, self._process,
            now_ms=self._clock.time_ms)
        self._listener.start(skip_existing=True)

    def stop(self) -> None:
        if self._listener is not None:
            self._listener.stop()

    def process_changes(self) -> None:
        """One pass over the notifications (what the children watch schedules)."""
        if self._listener is not None:
            self._listener.process_changes()

    def _process(self, path: str, data: bytes) -> None:
        try:
            entity = paths.decode_config_change(data)
        except ValueError:
            return          # TopicConfigs, which follows the same notifications, logs it
        entity_type, _, name = entity.partition("/")
        if entity_type == CONFIG_TYPE_GROUP and name:
            group_id = desanitize(name)
            self.invalidate(group_id)
            _log.info("group config change", group=group_id)
