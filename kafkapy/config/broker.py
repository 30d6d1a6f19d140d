"""BrokerConfig: the validated, typed broker configuration.

Built once from server.properties plus ``--override`` pairs (both are
"static" config, overrides winning). Invariants once constructed:
- every known key has a typed value (its default when not given); a bad value
  raised ConfigError naming key, value and reason;
- unknown keys are kept in ``originals`` and listed in ``unknown_keys`` (and
  warned about through the optional structlog-style logger);
- derived values follow KafkaConfig: node id (broker.id / node.id),
  log dirs (log.dirs over log.dir), listeners and advertised listeners,
  retention (ms > minutes > hours, negative -> -1), roll and jitter (ms >
  hours), flush interval (ms > scheduler interval);
- cross-key rules Kafka enforces at startup are checked here;
- KRaft settings (process.roles, controller.quorum.*, controller.listener.names)
  are refused: kafkapy has no KRaft mode.

Topic configs: ``topic_defaults()`` gives each topic key's value on this
broker through ServerTopicConfigSynonyms; ``validate_topic_configs`` checks a
CreateTopics/AlterConfigs request (ConfigError -> INVALID_CONFIG, error 40).

Dynamic layers (Kafka's DynamicBrokerConfig.updateCurrentConfig): ``apply_dynamic``
sets the cluster default (/config/brokers/<default>) and per-broker
(/config/brokers/<id>) dynamic configs; ``config[key]`` then returns the effective
value, per-broker > default > static > built-in default.  The merge is Kafka's
overrideProps: a dynamic key removes its synonyms from the layers below (a dynamic
log.retention.hours hides a static log.retention.ms).  The static layer
(``static_originals``) never changes; ``originals`` is the merged view.  The layers
are kept apart for DescribeConfigs (``dynamic_broker`` / ``dynamic_default``).
Keys that exist only dynamically (``BROKER_DYNAMIC_ONLY_CONFIGS``: the replication
throttle rates) have a typed value too (Long.MAX_VALUE until set).
"""
from __future__ import annotations

import os
from typing import Any, Mapping

from kafkapy.config.definitions import BROKER_CONFIGS, BROKER_DYNAMIC_ONLY_CONFIGS, TOPIC_CONFIGS, broker_key
from kafkapy.config.errors import ConfigError
from kafkapy.config.listeners import Endpoint, check_distinct_ports, parse_listeners, parse_protocol_map
from kafkapy.config.types import render_value
from kafkapy.security.authorizer import parse_super_users

__all__ = ["BrokerConfig", "validate_topic_configs", "acl_authorizer_settings",
           "STATIC_BROKER_CONFIG", "DEFAULT_CONFIG", "DYNAMIC_BROKER_CONFIG",
           "DYNAMIC_DEFAULT_BROKER_CONFIG"]

STATIC_BROKER_CONFIG = "STATIC_BROKER_CONFIG"
DEFAULT_CONFIG = "DEFAULT_CONFIG"
DYNAMIC_BROKER_CONFIG = "DYNAMIC_BROKER_CONFIG"
DYNAMIC_DEFAULT_BROKER_CONFIG = "DYNAMIC_DEFAULT_BROKER_CONFIG"
_MB = 1024 * 1024
_IGNORED_FORMAT_VERSION = "3.0-IV1"


class BrokerConfig:
    """Typed, validated broker configuration (see module docstring)."""

    def __init__(self, originals: Mapping[str, str], values: Mapping[str, object],
                 unknown_keys: list[str], *, dynamic: bool = False) -> None:
        # Kafka checks the compaction lags of the broker defaults only at start-up, not
        # when a dynamic change is validated (KafkaConfig has no such rule).
        self._checks = tuple(c for c in _CROSS_CHECKS if not (dynamic and c is _check_compaction_lag))
        self._originals = dict(originals)
        self._static = dict(originals)
        self._values = dict(values)
        self._dynamic_default: dict[str, str] = {}
        self._dynamic_broker: dict[str, str] = {}
        self.unknown_keys = list(unknown_keys)
        self._derive()

    @classmethod
    def from_properties(cls, props: Mapping[str, str], overrides: Mapping[str, str] | None = None,
                        log: Any = None) -> "BrokerConfig":
        merged = dict(props)
        merged.update(overrides or {})
        _populate_id_synonyms(merged)
        values = _typed_values(merged)
        unknown = [k for k in merged if k not in BROKER_CONFIGS]
        _warn_unknown(log, [k for k in unknown if k not in BROKER_DYNAMIC_ONLY_CONFIGS])
        return cls(merged, values, unknown)

    # -- dynamic layers ------------------------------------------------------------

    def with_dynamic(self, default: Mapping[str, str], per_broker: Mapping[str, str]) -> "BrokerConfig":
        """A new config: this one's static layer under the given dynamic layers, checked
        like a config read at start-up (ConfigError for a bad value or a broken cross-key
        rule).  Nothing here changes."""
        merged = dict(self._static)
        _override(merged, default)
        _override(merged, per_broker)
        candidate = BrokerConfig(merged, _typed_values(merged), [k for k in merged if k not in BROKER_CONFIGS],
                                 dynamic=True)
        candidate._static = dict(self._static)
        candidate._dynamic_default = dict(default)
        candidate._dynamic_broker = dict(per_broker)
        return candidate

    def apply_dynamic(self, default: Mapping[str, str], per_broker: Mapping[str, str]) -> set[str]:
        """Adopt new dynamic layers (see ``with_dynamic``; a ConfigError changes nothing).
        Returns the keys whose effective value changed.  Identity-derived values (node id,
        log dirs, listeners) stay as started: they are not dynamic."""
        candidate = self.with_dynamic(default, per_broker)
        old = self._values
        self._originals = candidate._originals
        self._values = candidate._values
        self._dynamic_default = candidate._dynamic_default
        self._dynamic_broker = candidate._dynamic_broker
        self.unknown_keys = candidate.unknown_keys
        self._derive_times()
        return {k for k in set(old) | set(self._values) if old.get(k) != self._values.get(k)}

    @property
    def static_originals(self) -> dict[str, str]:
        """The strings given at start-up (file plus overrides)."""
        return dict(self._static)

    @property
    def dynamic_default(self) -> dict[str, str]:
        """The cluster-wide dynamic configs in effect (/config/brokers/<default>)."""
        return dict(self._dynamic_default)

    @property
    def dynamic_broker(self) -> dict[str, str]:
        """This broker's own dynamic configs in effect (/config/brokers/<id>)."""
        return dict(self._dynamic_broker)

    # -- access ---------------------------------------------------------------

    def __getitem__(self, key: str) -> object:
        return self._values[key]

    def __contains__(self, key: object) -> bool:
        return key in self._values

    def get(self, key: str, default: object = None) -> object:
        return self._values.get(key, default)

    @property
    def originals(self) -> dict[str, str]:
        """The raw strings given (file plus overrides), unknown keys included."""
        return dict(self._originals)

    @property
    def values(self) -> dict[str, object]:
        """Typed value of every known key."""
        return dict(self._values)

    def source(self, key: str) -> str:
        if key in self._dynamic_broker:
            return DYNAMIC_BROKER_CONFIG
        if key in self._dynamic_default:
            return DYNAMIC_DEFAULT_BROKER_CONFIG
        return STATIC_BROKER_CONFIG if key in self._static else DEFAULT_CONFIG

    def rendered(self, key: str) -> str | None:
        """A known key's value as Kafka renders it (None for null)."""
        return render_value(broker_key(key).type, self._values[key])  # type: ignore[union-attr]

    # -- derived values ---------------------------------------------------------

    @property
    def node_id(self) -> int:
        return self._node_id

    @property
    def broker_id(self) -> int:
        return self._node_id

    @property
    def log_dirs(self) -> list[str]:
        """Absolute data directories (relative ones resolved against the cwd at load)."""
        return list(self._log_dirs)

    @property
    def listeners(self) -> list[Endpoint]:
        return list(self._listeners)

    @property
    def advertised_listeners(self) -> list[Endpoint]:
        return list(self._advertised)

    @property
    def listener_security_protocol_map(self) -> dict[str, str]:
        return dict(self._protocols)

    @property
    def inter_broker_listener_name(self) -> str:
        return self._inter_broker_listener

    @property
    def log_retention_ms(self) -> int:
        return self._retention_ms

    @property
    def log_roll_ms(self) -> int:
        return self._roll_ms

    @property
    def log_roll_jitter_ms(self) -> int:
        return self._jitter_ms

    @property
    def log_flush_interval_ms(self) -> int:
        return self._first_set("log.flush.interval.ms", "log.flush.scheduler.interval.ms")

    @property
    def zookeeper_connection_timeout_ms(self) -> int:
        return self._first_set("zookeeper.connection.timeout.ms", "zookeeper.session.timeout.ms")

    @property
    def metadata_store(self) -> str:
        """embedded or zookeeper (default: zookeeper iff zookeeper.connect is set)."""
        return self._metadata_store

    # -- topic configs ------------------------------------------------------------

    def topic_defaults(self) -> dict[str, object]:
        """Each topic key's value on this broker, through the broker synonyms."""
        return {key.name: self._topic_default(key.name) for key in TOPIC_CONFIGS}

    def validate_topic_configs(self, configs: Mapping[str, str | None]) -> dict[str, object]:
        return validate_topic_configs(configs, self.topic_defaults())

    def _topic_default(self, name: str) -> object:
        key = TOPIC_CONFIGS[name]
        if name == "message.format.version":
            return _IGNORED_FORMAT_VERSION
        if name == "retention.ms":
            return self._retention_ms
        for syn in key.synonyms:
            value = self._values[syn.name]
            if value is not None:
                return value * syn.factor if syn.factor != 1 else value  # type: ignore[operator]
        return key.default

    # -- derivation and cross-key checks -------------------------------------------

    def _first_set(self, *keys: str) -> Any:
        return next((self._values[k] for k in keys if self._values[k] is not None), None)

    def _derive(self) -> None:
        _check_not_kraft(self)   # first: a KRaft file would fail later checks confusingly
        self._node_id = self._derive_node_id()
        self._log_dirs = self._derive_log_dirs()
        self._derive_listeners()
        self._derive_times()
        self._metadata_store = self._derive_metadata_store()
        for check in self._checks:
            check(self)

    def _derive_node_id(self) -> int:
        broker_id, node_id = self._values["broker.id"], self._values["node.id"]
        if "broker.id" in self._originals and "node.id" in self._originals and broker_id != node_id:
            raise ConfigError("You must set `node.id` to the same value as `broker.id`.", key="node.id", value=node_id)
        chosen = broker_id if "broker.id" in self._originals else node_id
        _check_broker_id(self, chosen)  # type: ignore[arg-type]
        return chosen  # -1: drawn at start-up (kafkapy.metadata.membership)  # type: ignore[return-value]

    def _derive_log_dirs(self) -> list[str]:
        key = "log.dirs" if self._values["log.dirs"] is not None else "log.dir"
        raw = str(self._values[key])
        dirs = [d.strip() for d in raw.split(",") if d.strip()]
        if not dirs:
            raise ConfigError("At least one log directory must be defined via log.dirs or log.dir.", key=key, value=raw)
        return [os.path.abspath(d) for d in dirs]

    def _derive_listeners(self) -> None:
        self._protocols = parse_protocol_map("listener.security.protocol.map",
                                             str(self._values["listener.security.protocol.map"]))
        text = str(self._values["listeners"])
        self._listeners = parse_listeners("listeners", text, self._protocols)
        check_distinct_ports("listeners", text, self._listeners)
        adv = self._values["advertised.listeners"]
        self._advertised = (parse_listeners("advertised.listeners", str(adv), self._protocols)
                            if adv is not None else list(self._listeners))
        self._inter_broker_listener = self._derive_inter_broker_listener()
        _check_advertised(self)
        _check_inter_broker_sasl(self)

    def _derive_inter_broker_listener(self) -> str:
        name = self._values["inter.broker.listener.name"]
        if name is not None and "security.inter.broker.protocol" in self._originals:
            raise ConfigError("Only one of inter.broker.listener.name and security.inter.broker.protocol should be set.",
                              key="inter.broker.listener.name", value=name)
        return str(name).upper() if name is not None else str(self._values["security.inter.broker.protocol"])

    def _derive_times(self) -> None:
        retention = self._first_set("log.retention.ms")
        if retention is None:
            minutes = self._values["log.retention.minutes"]
            retention = minutes * 60_000 if minutes is not None else self._values["log.retention.hours"] * 3_600_000
        self._retention_ms = -1 if retention < 0 else retention
        roll = self._values["log.roll.ms"]
        self._roll_ms = roll if roll is not None else self._values["log.roll.hours"] * 3_600_000
        jitter = self._values["log.roll.jitter.ms"]
        self._jitter_ms = jitter if jitter is not None else self._values["log.roll.jitter.hours"] * 3_600_000

    def _derive_metadata_store(self) -> str:
        store = self._values["kafkapy.metadata.store"]
        zk = self._values["zookeeper.connect"]
        if store is None:
            return "zookeeper" if zk else "embedded"
        if store == "zookeeper" and not zk:
            raise ConfigError("kafkapy.metadata.store=zookeeper requires zookeeper.connect to be set.",
                              key="zookeeper.connect")
        return str(store)


def validate_topic_configs(configs: Mapping[str, str | None],
                           defaults: Mapping[str, object] | None = None) -> dict[str, object]:
    """Check topic configs of a CreateTopics/AlterConfigs request.

    Returns the typed value of each given key. Raises ConfigError (with
    ``.key``) for an unknown key, a null or bad value, min.compaction.lag.ms
    above max.compaction.lag.ms, or remote storage (not supported). ``defaults``
    are the broker's topic defaults used for the cross-key checks.
    """
    parsed: dict[str, object] = {}
    for name, raw in configs.items():
        key = TOPIC_CONFIGS.get(name)
        if key is None:
            raise ConfigError(f"Unknown topic config name: {name}", key=name, value=raw)
        if raw is None:
            raise ConfigError(f"Null value not supported for topic configs: {name}", key=name)
        parsed[name] = key.parse(raw)
    combined = {k.name: k.default for k in TOPIC_CONFIGS} if defaults is None else dict(defaults)
    combined.update(parsed)
    _check_topic_combination(combined)
    return parsed


def _check_topic_combination(values: Mapping[str, object]) -> None:
    lo, hi = values["min.compaction.lag.ms"], values["max.compaction.lag.ms"]
    if lo > hi:  # type: ignore[operator]
        raise ConfigError(f"conflict topic config setting min.compaction.lag.ms ({lo}) > max.compaction.lag.ms ({hi})",
                          key="min.compaction.lag.ms", value=lo)
    if values["remote.storage.enable"]:
        raise ConfigError("Tiered Storage functionality is disabled in the broker. "
                          "Topic cannot be configured with remote log storage.", key="remote.storage.enable", value=True)


def _typed_values(merged: Mapping[str, str]) -> dict[str, object]:
    """Each broker key's typed value (both registries): parsed when given, else its default."""
    return {k.name: (k.parse(merged[k.name]) if k.name in merged else k.default)
            for keys in (BROKER_CONFIGS, BROKER_DYNAMIC_ONLY_CONFIGS) for k in keys}


# DynamicBrokerConfig.brokerConfigSynonyms (without listener overrides): a dynamic key
# replaces the whole group in the layers below it.
_SYNONYM_GROUPS = (
    ("log.roll.ms", "log.roll.hours"),
    ("log.roll.jitter.ms", "log.roll.jitter.hours"),
    ("log.retention.ms", "log.retention.minutes", "log.retention.hours"),
)


def _override(props: dict[str, str], layer: Mapping[str, str]) -> None:
    """Kafka's overrideProps: each key of ``layer`` replaces itself and its synonyms."""
    for key, value in layer.items():
        for group in _SYNONYM_GROUPS:
            if key in group:
                for synonym in group:
                    props.pop(synonym, None)
        if key == "log.flush.interval.ms":
            props.pop("log.flush.scheduler.interval.ms", None)
        props[key] = value


def _populate_id_synonyms(merged: dict[str, str]) -> None:
    """As KafkaConfig.populateSynonyms: broker.id and node.id name the same id, so the one
    given stands in for the other (DescribeConfigs then shows both as static)."""
    if "broker.id" in merged and "node.id" not in merged:
        merged["node.id"] = merged["broker.id"]
    elif "node.id" in merged and "broker.id" not in merged:
        merged["broker.id"] = merged["node.id"]


_AUTHORIZER_KEYS = frozenset({"super.users", "allow.everyone.if.no.acl.found"})


def _warn_unknown(log: Any, unknown: list[str]) -> None:
    if log is None:
        return
    for key in unknown:
        # The AclAuthorizer's own keys are read from the originals (Kafka's too).
        if not key.startswith("listener.name.") and key not in _AUTHORIZER_KEYS:
            log.warning("config.unknown_key", key=key,
                        detail="supplied but not a known broker configuration; ignored")


def _check_broker_id(cfg: BrokerConfig, broker_id: int) -> None:
    if cfg["broker.id.generation.enable"]:
        if not -1 <= broker_id <= cfg["reserved.broker.max.id"]:  # type: ignore[operator]
            raise ConfigError("broker.id must be greater than or equal to -1 and not greater than "
                              "reserved.broker.max.id", key="broker.id", value=broker_id)
    elif broker_id < 0:
        raise ConfigError("broker.id must be greater than or equal to 0", key="broker.id", value=broker_id)


def _check_advertised(cfg: BrokerConfig) -> None:
    names = {e.name for e in cfg.listeners}
    for ep in cfg.advertised_listeners:
        if ep.host == "0.0.0.0":
            raise ConfigError("advertised.listeners cannot use the nonroutable meta-address 0.0.0.0. "
                              "Use a routable IP address.", key="advertised.listeners", value=ep)
        if ep.name not in names:
            raise ConfigError(f"advertised.listeners listener names must be equal to or a subset of the ones "
                              f"defined in listeners. Found {ep.name}. The valid options based on the current "
                              f"configuration are {','.join(sorted(names))}", key="advertised.listeners", value=ep.name)
    advertised = [e.name for e in cfg.advertised_listeners]
    if cfg.inter_broker_listener_name not in advertised:
        raise ConfigError("inter.broker.listener.name must be a listener name defined in advertised.listeners. "
                          f"The valid options based on currently configured listeners are {','.join(advertised)}",
                          key="inter.broker.listener.name", value=cfg.inter_broker_listener_name)


def _require(ok: bool, message: str, key: str, cfg: BrokerConfig) -> None:
    if not ok:
        raise ConfigError(message, key=key, value=cfg.get(key))


def _check_replica_fetch(cfg: BrokerConfig) -> None:
    wait = cfg["replica.fetch.wait.max.ms"]
    _require(wait <= cfg["replica.socket.timeout.ms"], "replica.socket.timeout.ms should always be at least "  # type: ignore[operator]
             "replica.fetch.wait.max.ms to prevent unnecessary socket timeouts", "replica.socket.timeout.ms", cfg)
    _require(wait <= cfg["replica.lag.time.max.ms"], "replica.fetch.wait.max.ms should always be less than or equal "  # type: ignore[operator]
             "to replica.lag.time.max.ms to prevent frequent changes in ISR", "replica.fetch.wait.max.ms", cfg)


def _check_offsets(cfg: BrokerConfig) -> None:
    acks, rf = cfg["offsets.commit.required.acks"], cfg["offsets.topic.replication.factor"]
    _require(-1 <= acks <= rf, "offsets.commit.required.acks must be greater or equal -1 and less or equal to "  # type: ignore[operator]
             "offsets.topic.replication.factor", "offsets.commit.required.acks", cfg)


def _check_log_times(cfg: BrokerConfig) -> None:
    _require(cfg.log_roll_ms >= 1, "log.roll.ms must be greater than or equal to 1", "log.roll.ms", cfg)
    _require(cfg.log_roll_jitter_ms >= 0, "log.roll.jitter.ms must be greater than or equal to 0", "log.roll.jitter.ms", cfg)
    _require(cfg.log_retention_ms >= 1 or cfg.log_retention_ms == -1,
             "log.retention.ms must be unlimited (-1) or, greater than or equal to 1", "log.retention.ms", cfg)


def _check_queue_and_cleaner(cfg: BrokerConfig) -> None:
    queued = cfg["queued.max.request.bytes"]
    _require(queued <= 0 or queued >= cfg["socket.request.max.bytes"],  # type: ignore[operator]
             "queued.max.request.bytes must be larger or equal to socket.request.max.bytes",
             "queued.max.request.bytes", cfg)
    threads = cfg["log.cleaner.threads"]
    if threads:
        _require(cfg["log.cleaner.dedupe.buffer.size"] // threads > _MB,  # type: ignore[operator]
                 "log.cleaner.dedupe.buffer.size must be at least 1MB per cleaner thread.",
                 "log.cleaner.dedupe.buffer.size", cfg)


def _check_connection_limits(cfg: BrokerConfig) -> None:
    # Zero for every address makes sense only with addresses let in by an override.
    overrides = (cfg["max.connections.per.ip.overrides"] or "").strip()
    _require(cfg["max.connections.per.ip"] != 0 or bool(overrides),
             "max.connections.per.ip can be set to zero only if "
             "max.connections.per.ip.overrides property is set.", "max.connections.per.ip", cfg)


def _check_compaction_lag(cfg: BrokerConfig) -> None:
    lo, hi = cfg["log.cleaner.min.compaction.lag.ms"], cfg["log.cleaner.max.compaction.lag.ms"]
    _require(lo <= hi, f"conflict topic config setting min.compaction.lag.ms ({lo}) > "  # type: ignore[operator]
             f"max.compaction.lag.ms ({hi})", "log.cleaner.min.compaction.lag.ms", cfg)


_KRAFT_KEYS = ("process.roles", "controller.quorum.voters", "controller.quorum.bootstrap.servers",
               "controller.listener.names")
_KRAFT_HINT = ("KRaft mode is not supported by kafkapy: remove process.roles and the other "
               "KRaft settings (controller.*), and set zookeeper.connect "
               "(or nothing, for the embedded metadata store)")


def _check_not_kraft(cfg: BrokerConfig) -> None:
    """KRaft-only settings mean the operator expects a KRaft node; starting as a
    ZooKeeper-style broker instead would be a surprise, so refuse (node.id alone is
    fine: Kafka's ZooKeeper mode takes it as broker.id)."""
    originals = cfg.originals
    for key in _KRAFT_KEYS:
        if originals.get(key, "").strip():
            raise ConfigError(f"{key}={originals[key]}: {_KRAFT_HINT}", key=key, value=originals[key])


def _check_unsupported(cfg: BrokerConfig) -> None:
    _require(not cfg["remote.log.storage.system.enable"], "Tiered storage (remote.log.storage.system.enable=true) "
             "is not supported by kafkapy", "remote.log.storage.system.enable", cfg)
    # A plaintext connection to ZooKeeper where the operator asked for TLS would expose it.
    _require(not cfg["zookeeper.ssl.client.enable"], "TLS to ZooKeeper "
             "(zookeeper.ssl.client.enable=true) is not supported by kafkapy",
             "zookeeper.ssl.client.enable", cfg)
    # Ignoring an authorizer the operator asked for would open every resource.
    authorizer = cfg["authorizer.class.name"].strip()
    _require(authorizer in ("", "kafka.security.authorizer.AclAuthorizer"),
             f"authorizer.class.name={authorizer}: kafkapy implements only "
             "kafka.security.authorizer.AclAuthorizer", "authorizer.class.name", cfg)
    if authorizer:
        acl_authorizer_settings(cfg)    # its own keys, checked at start-up



def acl_authorizer_settings(cfg) -> tuple[frozenset[str], bool]:
    """The AclAuthorizer's own keys, read from the originals as Kafka's authorizer reads
    them: ``super.users`` (the principals' text forms) and
    ``allow.everyone.if.no.acl.found``.  A bad value is a ConfigError naming its key."""
    originals = cfg.originals
    allow_text = str(originals.get("allow.everyone.if.no.acl.found", "false")).strip().lower()
    if allow_text not in ("true", "false"):
        raise ConfigError(f"Invalid value {allow_text} for configuration allow.everyone.if.no.acl.found: "
                          "Expected value to be either true or false",
                          key="allow.everyone.if.no.acl.found", value=allow_text)
    try:
        super_users = parse_super_users(originals.get("super.users"))
    except ValueError as err:
        raise ConfigError(f"super.users: {err}", key="super.users",
                          value=originals.get("super.users")) from None
    return super_users, allow_text == "true"

_CROSS_CHECKS = (_check_replica_fetch, _check_offsets, _check_log_times, _check_queue_and_cleaner,
                 _check_connection_limits, _check_compaction_lag, _check_unsupported)


def _check_inter_broker_sasl(cfg: "BrokerConfig") -> None:
    """Kafka's KafkaConfig rule: a SASL inter-broker listener must enable the inter-broker
    mechanism.  (TLS material and JAAS entries are checked when the listeners are built at
    start-up, as Kafka's ChannelBuilders does.)"""
    name = cfg._inter_broker_listener
    if cfg._protocols.get(name) not in ("SASL_PLAINTEXT", "SASL_SSL"):
        return
    mechanism = cfg._values["sasl.mechanism.inter.broker.protocol"]
    prefixed = f"listener.name.{name.lower()}.sasl.enabled.mechanisms"
    enabled = cfg._originals.get(prefixed)
    names = ([m.strip() for m in str(enabled).split(",") if m.strip()] if enabled is not None
             else list(cfg._values["sasl.enabled.mechanisms"] or []))
    if mechanism not in names:
        raise ConfigError("sasl.mechanism.inter.broker.protocol must be included in "
                          "sasl.enabled.mechanisms when SASL is used for inter-broker communication",
                          key="sasl.mechanism.inter.broker.protocol", value=mechanism)
