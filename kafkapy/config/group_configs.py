"""Group configs (Kafka 4.x's GroupConfig): a group's own settings, overriding the broker's.

Keys (``GROUP_CONFIGS``), Kafka's names, each with the broker key whose value it overrides
(``BROKER_DEFAULTS``; a key without one defaults to its own default):
- consumer groups: ``consumer.session.timeout.ms``, ``consumer.heartbeat.interval.ms``
  (``group.consumer.*``; INT, at least 1);
- share groups (KIP-932): ``share.session.timeout.ms``, ``share.heartbeat.interval.ms``
  (``group.share.*``; at least 1), ``share.record.lock.duration.ms`` (at least 1000),
  ``share.delivery.count.limit`` (at least 2), ``share.partition.max.record.locks`` (at
  least 100; the last two are Kafka 4.3's, KIP-1240), ``share.auto.offset.reset``
  (``latest`` (default), ``earliest``, or ``by_duration:<ISO-8601 duration>``, e.g.
  ``by_duration:PT1H``, not negative), ``share.isolation.level`` (``read_uncommitted``
  (default) or ``read_committed``), ``errors.deadletterqueue.topic.name`` (KIP-1191's
  dead-letter topic; "" (default) means none; not starting with ``__``);
- kafkapy's own, for share groups: ``kafkapy.share.redelivery.backoff.ms`` (a released
  record is acquirable again only after ``min(b * 2^(n-1), max)`` ms for its n-th
  delivery; 0 (default) turns this off) and ``kafkapy.share.redelivery.backoff.max.ms``
  (default 60000).

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
"Unknown group config name: k"; a value that does not parse or is out of its range ->
Kafka's ConfigException wording; then, with the broker's values standing in for keys not
given, in Kafka's order: each heartbeat interval and session timeout within the broker's
``group.<consumer|share>.{min,max}.*`` bounds, the record lock duration within
[group.share.min.record.lock.duration.ms, group.share.max.record.lock.duration.ms], the
delivery count limit within [group.share.min.delivery.count.limit,
group.share.max.delivery.count.limit] when the broker defines those, each session timeout
above its heartbeat interval, and the dead-letter topic not an internal-looking name;
each worded as Kafka words it.  Every refusal is a ``ConfigError`` (the handlers answer
INVALID_CONFIG).  ``check_broker_settings`` is Kafka's start-up check of the broker keys
themselves (bounds in order, the defaults within them, the heartbeat interval below the
session timeout; consumer groups, then share groups), for the broker to call.

``GroupConfigs`` is what the coordinators and share-partition leaders ask, per request: a
group's effective values (its override, else the broker's value, else the key's default):
``session_timeout_ms`` / ``heartbeat_interval_ms`` (consumer groups),
``share_session_timeout_ms`` / ``share_heartbeat_interval_ms`` (share groups), and
``share(group_id) -> ShareGroupConfig`` (what a share partition applies).  It keeps each
group's parsed overrides once read (a group without a znode too), and forgets a group when
a notification names it, so a call costs a few dictionary lookups.  ``start()`` follows ``/config/changes`` from the
notifications present now (nothing is cached before, so none of them matters).
"""
from __future__ import annotations

import re
from dataclasses import dataclass
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
from kafkapy.config.validators import at_least, custom, in_set
from kafkapy.metadata import paths
from kafkapy.metadata.change_notifications import ChangeNotificationListener
from kafkapy.metadata.store import MetadataStore

_log = structlog.get_logger("kafkapy.group_configs")

CONFIG_TYPE_GROUP = "groups"
SESSION_TIMEOUT_MS = "consumer.session.timeout.ms"
HEARTBEAT_INTERVAL_MS = "consumer.heartbeat.interval.ms"
SHARE_SESSION_TIMEOUT_MS = "share.session.timeout.ms"
SHARE_HEARTBEAT_INTERVAL_MS = "share.heartbeat.interval.ms"
SHARE_RECORD_LOCK_DURATION_MS = "share.record.lock.duration.ms"
SHARE_DELIVERY_COUNT_LIMIT = "share.delivery.count.limit"
SHARE_PARTITION_MAX_RECORD_LOCKS = "share.partition.max.record.locks"
SHARE_AUTO_OFFSET_RESET = "share.auto.offset.reset"
SHARE_ISOLATION_LEVEL = "share.isolation.level"
DEAD_LETTER_TOPIC = "errors.deadletterqueue.topic.name"
REDELIVERY_BACKOFF_MS = "kafkapy.share.redelivery.backoff.ms"
REDELIVERY_BACKOFF_MAX_MS = "kafkapy.share.redelivery.backoff.max.ms"
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

# Kafka's ISO-8601 durations as java.time.Duration.parse reads them: PnDTnHnMn.nS.
_DURATION = re.compile(r"([-+]?)P(?:([-+]?[0-9]+)D)?(?:T(?:([-+]?[0-9]+)H)?"
                       r"(?:([-+]?[0-9]+)M)?(?:([-+]?[0-9]+)(?:[.,]([0-9]{0,9}))?S)?)?",
                       re.IGNORECASE)
BY_DURATION = "by_duration:"


def duration_ms(text: str) -> int | None:
    """The milliseconds of an ISO-8601 duration (``java.time.Duration.parse``), or None
    when it does not parse."""
    m = _DURATION.fullmatch(text.strip())
    if m is None or m.group(0).upper().endswith(("P", "T")):
        return None
    sign, days, hours, minutes, seconds, fraction = m.groups()
    total = (int(days or 0) * 86400 + int(hours or 0) * 3600 + int(minutes or 0) * 60
             + int(seconds or 0)) * 1000
    if fraction:
        millis = int(fraction.ljust(9, "0")[:3])
        total += -millis if (seconds or "").startswith("-") else millis
    return -total if sign == "-" else total


def _auto_offset_reset_ok(value: object) -> bool:
    """Kafka's ShareGroupAutoOffsetResetStrategy.Validator."""
    if not isinstance(value, str):
        return False
    text = value.strip().lower()
    if text in ("latest", "earliest"):
        return True
    if not text.startswith(BY_DURATION):
        return False
    millis = duration_ms(value.strip()[len(BY_DURATION):])
    return millis is not None and millis >= 0


_M = Importance.MEDIUM
_SHARE_KEYS = (
    (SHARE_SESSION_TIMEOUT_MS, ConfigType.INT, 45000, at_least(1),
     "Session timeout of this share group's members; unset means group.share.session.timeout.ms."),
    (SHARE_HEARTBEAT_INTERVAL_MS, ConfigType.INT, 5000, at_least(1),
     "Heartbeat interval given to this share group's members; unset means "
     "group.share.heartbeat.interval.ms."),
    (SHARE_RECORD_LOCK_DURATION_MS, ConfigType.INT, 30000, at_least(1000),
     "How long a delivered record stays acquired by one member; unset means "
     "group.share.record.lock.duration.ms."),
    (SHARE_DELIVERY_COUNT_LIMIT, ConfigType.INT, 5, at_least(2),
     "Deliveries of a record before it is archived; unset means group.share.delivery.count.limit."),
    (SHARE_PARTITION_MAX_RECORD_LOCKS, ConfigType.INT, 2000, at_least(100),
     "Most records of one share partition acquired at once; unset means "
     "group.share.partition.max.record.locks."),
    (SHARE_AUTO_OFFSET_RESET, ConfigType.STRING, "latest",
     custom(_auto_offset_reset_ok, "[latest, earliest, by_duration:PnDTnHnMn.nS]"),
     "Where a share partition starts: latest, earliest, or by_duration:<ISO-8601 duration> "
     "before now."),
    (SHARE_ISOLATION_LEVEL, ConfigType.STRING, "read_uncommitted",
     in_set("read_committed", "read_uncommitted"),
     "read_committed delivers only committed transactional records."),
    (DEAD_LETTER_TOPIC, ConfigType.STRING, "", None,
     "The share group's dead-letter topic (KIP-1191); empty means none."),
    (REDELIVERY_BACKOFF_MS, ConfigType.INT, 0, at_least(0),
     "kafkapy: a released record waits min(b * 2^(n-1), max) ms before its (n+1)-th delivery; "
     "0 turns this off."),
    (REDELIVERY_BACKOFF_MAX_MS, ConfigType.INT, 60000, at_least(0),
     "kafkapy: the longest redelivery wait (kafkapy.share.redelivery.backoff.ms)."),
)
for _name, _type, _default, _validator, _doc in _SHARE_KEYS:
    GROUP_CONFIGS.define(_name, _type, _default, _validator, _M, _doc)

#: Each group key and the broker key whose value it overrides.
BROKER_DEFAULTS = {SESSION_TIMEOUT_MS: "group.consumer.session.timeout.ms",
                   HEARTBEAT_INTERVAL_MS: "group.consumer.heartbeat.interval.ms",
                   SHARE_SESSION_TIMEOUT_MS: "group.share.session.timeout.ms",
                   SHARE_HEARTBEAT_INTERVAL_MS: "group.share.heartbeat.interval.ms",
                   SHARE_RECORD_LOCK_DURATION_MS: "group.share.record.lock.duration.ms",
                   SHARE_DELIVERY_COUNT_LIMIT: "group.share.delivery.count.limit",
                   SHARE_PARTITION_MAX_RECORD_LOCKS: "group.share.partition.max.record.locks"}


@dataclass(frozen=True, slots=True)
class ShareGroupConfig:
    """A share group's effective settings, as its share partitions apply them."""
    session_timeout_ms: int
    heartbeat_interval_ms: int
    record_lock_duration_ms: int
    delivery_count_limit: int
    partition_max_record_locks: int
    auto_offset_reset: str          # "latest", "earliest" or "by_duration:<ISO-8601>"
    isolation_level: str            # "read_uncommitted" or "read_committed"
    dead_letter_topic: str | None   # None: no dead-letter topic
    backoff_ms: int                 # 0: no redelivery backoff
    backoff_max_ms: int

    @property
    def auto_offset_reset_duration_ms(self) -> int | None:
        """The duration of ``by_duration:``, else None."""
        if not self.auto_offset_reset.lower().startswith(BY_DURATION):
            return None
        return duration_ms(self.auto_offset_reset[len(BY_DURATION):])


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

    def value(name: str) -> int:
        return parsed.get(name, config[BROKER_DEFAULTS[name]])
    for key, bounds in _BOUNDED:
        if all(b in config for b in bounds):
            _within(value(key), key, config, *bounds)
    for session, heartbeat in ((SESSION_TIMEOUT_MS, HEARTBEAT_INTERVAL_MS),
                               (SHARE_SESSION_TIMEOUT_MS, SHARE_HEARTBEAT_INTERVAL_MS)):
        _require(value(session) > value(heartbeat), session, f"must be greater than {heartbeat}")
    if str(parsed.get(DEAD_LETTER_TOPIC, "")).startswith("__"):
        raise ConfigError(f"{DEAD_LETTER_TOPIC}: DLQ topic name must not start with '__'",
                          key=DEAD_LETTER_TOPIC)
    return parsed


#: The group keys bounded by broker keys, in Kafka's order: (key, (min key, max key)).
_BOUNDED = (
    (HEARTBEAT_INTERVAL_MS, ("group.consumer.min.heartbeat.interval.ms",
                             "group.consumer.max.heartbeat.interval.ms")),
    (SESSION_TIMEOUT_MS, ("group.consumer.min.session.timeout.ms",
                          "group.consumer.max.session.timeout.ms")),
    (SHARE_HEARTBEAT_INTERVAL_MS, ("group.share.min.heartbeat.interval.ms",
                                   "group.share.max.heartbeat.interval.ms")),
    (SHARE_SESSION_TIMEOUT_MS, ("group.share.min.session.timeout.ms",
                                "group.share.max.session.timeout.ms")),
    (SHARE_RECORD_LOCK_DURATION_MS, ("group.share.min.record.lock.duration.ms",
                                     "group.share.max.record.lock.duration.ms")),
    (SHARE_DELIVERY_COUNT_LIMIT, ("group.share.min.delivery.count.limit",
                                  "group.share.max.delivery.count.limit")),
)


def _within(value: int, key: str, config: BrokerConfig, low: str, high: str) -> None:
    _require(value >= config[low], key, f"must be greater than or equal to {low}")
    _require(value <= config[high], key, f"must be less than or equal to {high}")


def check_broker_settings(config: BrokerConfig) -> None:
    """Kafka's start-up checks of the ``group.consumer.*`` then the ``group.share.*`` keys
    (GroupCoordinatorConfig's ``require``s, in its order): the bounds ordered and the
    defaults within them, the heartbeat interval below the session timeout."""
    for kind in ("consumer", "share"):
        def value(name: str) -> int:
            return config[f"group.{kind}.{name}"]
        for what in ("heartbeat.interval.ms", "session.timeout.ms"):
            _require(value(f"max.{what}") >= value(f"min.{what}"), f"group.{kind}.max.{what}",
                     f"must be greater than or equal to group.{kind}.min.{what}")
            _require(value(what) >= value(f"min.{what}"), f"group.{kind}.{what}",
                     f"must be greater than or equal to group.{kind}.min.{what}")
            _require(value(what) <= value(f"max.{what}"), f"group.{kind}.{what}",
                     f"must be less than or equal to group.{kind}.max.{what}")
        _require(value("heartbeat.interval.ms") < value("session.timeout.ms"),
                 f"group.{kind}.heartbeat.interval.ms",
                 f"must be less than group.{kind}.session.timeout.ms")


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


def _value(config: BrokerConfig, name: str, overrides: Mapping[str, str]) -> object:
    if name in overrides:
        try:
            return GROUP_CONFIGS[name].parse(overrides[name])
        except ConfigError:
            _log.warning("unreadable group config ignored", key=name, value=overrides[name])
    return _default(config, name)


def _default(config: BrokerConfig, name: str) -> object:
    """The broker's value of the key's broker synonym, else the key's own default."""
    broker_key = BROKER_DEFAULTS.get(name)
    if broker_key is not None and broker_key in config:
        return config[broker_key]
    return GROUP_CONFIGS[name].default


# -- what the coordinator asks --------------------------------------------------------------
class GroupConfigs:
    """Each group's effective settings (see the module docstring)."""

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

    def share_session_timeout_ms(self, group_id: str) -> int:
        return self._effective(group_id, SHARE_SESSION_TIMEOUT_MS)

    def share_heartbeat_interval_ms(self, group_id: str) -> int:
        return self._effective(group_id, SHARE_HEARTBEAT_INTERVAL_MS)

    def share(self, group_id: str) -> ShareGroupConfig:
        """The share group's effective settings."""
        def value(name: str):
            return self._effective(group_id, name)
        dead_letters = value(DEAD_LETTER_TOPIC)
        return ShareGroupConfig(
            session_timeout_ms=value(SHARE_SESSION_TIMEOUT_MS),
            heartbeat_interval_ms=value(SHARE_HEARTBEAT_INTERVAL_MS),
            record_lock_duration_ms=value(SHARE_RECORD_LOCK_DURATION_MS),
            delivery_count_limit=value(SHARE_DELIVERY_COUNT_LIMIT),
            partition_max_record_locks=value(SHARE_PARTITION_MAX_RECORD_LOCKS),
            auto_offset_reset=_keyword(value(SHARE_AUTO_OFFSET_RESET)),
            isolation_level=value(SHARE_ISOLATION_LEVEL),
            dead_letter_topic=dead_letters or None,
            backoff_ms=value(REDELIVERY_BACKOFF_MS),
            backoff_max_ms=value(REDELIVERY_BACKOFF_MAX_MS))

    def invalidate(self, group_id: str) -> None:
        """Forget ``group_id``'s overrides: the next call reads them again."""
        self._overrides.pop(group_id, None)

    def _effective(self, group_id: str, name: str):
        overrides = self._overrides.get(group_id)
        if overrides is None:
            overrides = self._overrides[group_id] = self._read(group_id)
        value = overrides.get(name)
        return _default(self._config, name) if value is None else value

    def _read(self, group_id: str) -> dict[str, object]:
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


def _keyword(value: str) -> str:
    """``latest`` / ``earliest`` in lower case (Kafka reads them in any case);
    ``by_duration:`` with its duration as written."""
    text = value.strip()
    if text.lower().startswith(BY_DURATION):
        return BY_DURATION + text[len(BY_DURATION):]
    return text.lower()
