"""Dynamic broker configs, as Kafka 3.9's ZooKeeper mode keeps them (DynamicBrokerConfig,
BrokerConfigHandler, ZkAdminManager's BROKER checks).

Two stored layers, JSON ``{"version":1,"config":{...}}`` strings:
``/config/brokers/<default>`` (cluster-wide) and ``/config/brokers/<id>`` (one broker).
``DynamicBrokerConfig(config, store, node_id)`` (``broker.dynamic_config``, made by the
server once the store is open and the broker id known) reads both at start-up
(``load``) and whenever a ``/config/changes`` notification names ``brokers/<default>``
or ``brokers/<this id>`` (``reload``, called by ``TopicConfigs``, the one notification
follower); it hands them to ``BrokerConfig.apply_dynamic``, so ``broker.config[key]``
is the effective value: per-broker > default > static > built-in default.
Stored layers are filtered first as Kafka's fromPersistentProps: values their key
refuses, keys that are not dynamic, SSL keys without a listener prefix and (in the
default layer) per-broker-only keys are dropped with an error log; a layer that breaks
a cross-key rule is not applied (the previous one stays), as Kafka logs and keeps it.

``validate(props, per_broker)`` is the write side's check (ZkAdminManager.alterBrokerConfigs
-> DynamicBrokerConfig.validate), in Kafka's order and words:
1. keys that are not dynamic -> "Cannot update these configs dynamically: Set(..)";
2. SSL keys without a listener prefix -> "These security configs can be dynamically
   updated only per-listener using the listener prefix: Set(..)";
3. each value parsed by its key (listener-prefixed keys by their base key; unknown keys
   pass) -> "Invalid value v for configuration k: reason";
4. at the default level, per-broker keys -> "Cannot update these configs at default
   cluster level, broker id must be specified: Set(..)";
5. the merged config must still be a valid broker config (kafkapy's start-up checks but
   the compaction-lag rule, which Kafka checks at start-up only);
6. the reconfigurables' checks (DynamicThreadPool, SocketServer, LogCleaner): a thread
   count below half or above double the current value, wrapped as Kafka wraps them:
   "Invalid value org.apache.kafka.common.config.ConfigException: <why> for
   configuration Invalid dynamic configuration".
Then kafkapy's own refusal (``check_applicable``): listener keys (``listeners``,
``advertised.listeners``, ``listener.security.protocol.map``, ``listener.name.*``, so also
a listener's own ssl.*, sasl.* and connection limits) cannot be applied by a running
kafkapy broker (it builds each listener, its TLS context and SASL settings once, at
start-up, and never re-binds), so they are refused rather than stored and ignored.
``persistent_props`` is Kafka's toPersistentProps: password configs -> "Password config can be defined only at broker
level" (default level) or "Password encoder secret not configured" (kafkapy has no
password encoder).

Keys that take effect live on a kafkapy broker when changed dynamically:
- every topic-default log key (Kafka's DynamicLogConfig.ReconfigurableConfigs:
  log.segment.bytes, log.roll.ms, log.roll.jitter.ms, log.retention.ms,
  log.retention.bytes, log.cleanup.policy, log.index.*, log.flush.*,
  log.segment.delete.delay.ms, log.preallocate, log.message.timestamp.*,
  log.message.downconversion.enable, log.cleaner.delete.retention.ms,
  log.cleaner.min/max.compaction.lag.ms, log.cleaner.min.cleanable.ratio,
  min.insync.replicas, message.max.bytes, compression.*, unclean.leader.election.enable,
  log.local.retention.*): re-applied to every hosted log without a topic override
  (``broker.topic_config``; ``kafkapy.server.log_config_listener``, a listener the
  server registers); new logs get them from the log manager, which reads the topic
  defaults from the config when it makes one;
- unclean.leader.election.enable turned on: the active controller retries every topic's
  offline partitions (Kafka's enableDefaultUncleanLeaderElection;
  ``kafkapy.server.enable_unclean_leader_election``, a listener the server registers);
- leader.replication.throttled.rate, follower.replication.throttled.rate,
  replica.alter.log.dirs.io.max.bytes.per.second: read at check time (``config[key]``);
- transaction.partition.verification.enable: read per request;
- producer.id.expiration.ms: read at use time by every log's producer state (the log
  manager's ``ProducerStateManagerConfig``, Kafka's DynamicProducerStateManagerConfig);
- max.connections, max.connections.per.ip, max.connections.per.ip.overrides,
  max.connection.creation.rate: the broker's
  ``ConnectionQuotas`` (``kafkapy.network.connection_quotas``, a listener of this object)
  adopt them at once (a raised limit wakes a waiting listener, a lowered max.connections
  closes least recently used connections); ``listener.name.<l>.max.connections`` and
  ``.max.connection.creation.rate`` are read from server.properties only (listener keys
  are refused dynamically, above).
Stored and described, but not applied by a running broker (kafkapy has no live resize
or reload for them; those it reads at start-up take the stored value at the next start):
num.io.threads, num.network.threads, background.threads,
num.recovery.threads.per.data.dir, num.replica.fetchers, log.cleaner.threads and the
other log.cleaner.* buffer/backoff/io keys,
metric.reporters, principal.builder.class, the unprefixed sasl.* and ssl.* keys Kafka
lets a broker change (ssl.client.auth, ssl.cipher.suites, ssl.enabled.protocols, ...: the
SSL, SASL_PLAINTEXT and SASL_SSL listeners read them when they start), the remote.* keys.

``add_listener(cb)``: ``cb(changed_keys)`` after each applied change (effective values).
Runs on the event loop; the store API is synchronous.
"""
from __future__ import annotations

import re
from typing import TYPE_CHECKING, Callable, Mapping

import structlog
from kazoo.exceptions import NoNodeError

from kafkapy.config.definitions import BROKER_CONFIGS, broker_key
from kafkapy.config.errors import ConfigError
from kafkapy.config.types import ConfigType
from kafkapy.jvm import scala_set
from kafkapy.metadata import paths

if TYPE_CHECKING:
    from kafkapy.config.broker import BrokerConfig
    from kafkapy.metadata.store import MetadataStore

__all__ = ["DynamicBrokerConfig", "validate", "check_applicable", "persistent_props",
           "from_persistent_props", "scala_set", "PER_BROKER_CONFIGS", "DYNAMIC_SECURITY_CONFIGS"]

_log = structlog.get_logger("kafkapy.dynamic_config")

#: SslConfigs.RECONFIGURABLE_CONFIGS: dynamic only with a listener prefix.
DYNAMIC_SECURITY_CONFIGS = frozenset({
    "ssl.keystore.type", "ssl.truststore.location", "ssl.keystore.certificate.chain",
    "ssl.keystore.password", "ssl.key.password", "ssl.keystore.location", "ssl.keystore.key",
    "ssl.truststore.password", "ssl.truststore.certificates", "ssl.truststore.type"})

#: Kafka 3.9's per-broker dynamic keys (dynamicConfigUpdateModes "per-broker"): not
#: allowed in /config/brokers/<default>.
PER_BROKER_CONFIGS = frozenset({
    "advertised.listeners", "listener.security.protocol.map", "listeners",
    "principal.builder.class", "sasl.enabled.mechanisms", "sasl.jaas.config",
    "sasl.kerberos.kinit.cmd", "sasl.kerberos.min.time.before.relogin",
    "sasl.kerberos.principal.to.local.rules", "sasl.kerberos.service.name",
    "sasl.kerberos.ticket.renew.jitter", "sasl.kerberos.ticket.renew.window.factor",
    "sasl.login.refresh.buffer.seconds", "sasl.login.refresh.min.period.seconds",
    "sasl.login.refresh.window.factor", "sasl.login.refresh.window.jitter",
    "sasl.mechanism.inter.broker.protocol", "ssl.cipher.suites", "ssl.client.auth",
    "ssl.enabled.protocols", "ssl.endpoint.identification.algorithm",
    "ssl.engine.factory.class", "ssl.key.password", "ssl.keymanager.algorithm",
    "ssl.keystore.certificate.chain", "ssl.keystore.key", "ssl.keystore.location",
    "ssl.keystore.password", "ssl.keystore.type", "ssl.protocol", "ssl.provider",
    "ssl.secure.random.implementation", "ssl.trustmanager.algorithm",
    "ssl.truststore.certificates", "ssl.truststore.location", "ssl.truststore.password",
    "ssl.truststore.type"})
_CLUSTER_LEVEL_LISTENER_CONFIGS = frozenset({"max.connections", "max.connection.creation.rate",
                                             "num.network.threads"})
_LISTENER_PREFIXED = re.compile(r"listener\.name\.[^.]*\.(.*)")
#: Keys a running kafkapy broker cannot apply (it never re-binds its listeners).
_NOT_APPLICABLE = frozenset({"listeners", "advertised.listeners", "listener.security.protocol.map"})
_MECHANISM_CONFIGS = ("sasl.jaas.config", "sasl.login.callback.handler.class", "sasl.login.class",
                      "sasl.server.callback.handler.class", "connections.max.reauth.ms")


def _base_name(name: str) -> str:
    match = _LISTENER_PREFIXED.fullmatch(name)
    return match.group(1) if match else name


def _non_dynamic(props: Mapping[str, str | None]) -> list[str]:
    """Keys Kafka knows but cannot change at runtime (DynamicConfig.Broker.nonDynamicProps);
    unknown keys are custom configs and pass."""
    return [k for k in props if (key := BROKER_CONFIGS.get(k)) is not None and not key.dynamic]


def _per_broker(props: Mapping[str, str | None]) -> list[str]:
    def listener_level(name: str) -> bool:
        match = _LISTENER_PREFIXED.fullmatch(name)
        return bool(match) and match.group(1) not in _CLUSTER_LEVEL_LISTENER_CONFIGS
    return [k for k in props if k in PER_BROKER_CONFIGS or listener_level(k)]


def _check_types(props: Mapping[str, str | None]) -> None:
    """DynamicConfig.Broker.validate: each dynamic key's value parses (listener-prefixed keys
    as their base key); other keys are custom and pass."""
    for name, value in props.items():
        key = broker_key(_base_name(name))
        if key is not None and key.dynamic and value is not None:
            key.parse(value)


def validate(props: Mapping[str, str], per_broker: bool) -> None:
    """Kafka's DynamicBrokerConfig.validateConfigs (see module docstring, steps 1-4)."""
    static = _non_dynamic(props)
    if static:
        raise ConfigError(f"Cannot update these configs dynamically: {scala_set(static)}")
    security = [k for k in props if k in DYNAMIC_SECURITY_CONFIGS]
    if security:
        raise ConfigError("These security configs can be dynamically updated only per-listener "
                          f"using the listener prefix: {scala_set(security, hashed=True)}")
    _check_types(props)
    if not per_broker:
        brokers_only = _per_broker(props)
        if brokers_only:
            raise ConfigError("Cannot update these configs at default cluster level, broker id "
                              f"must be specified: {scala_set(brokers_only)}")


def check_applicable(props: Mapping[str, str]) -> None:
    """kafkapy's refusal of keys it could store but never apply (module docstring)."""
    refused = [k for k in props if k in _NOT_APPLICABLE or _LISTENER_PREFIXED.fullmatch(k)]
    if refused:
        raise ConfigError(f"kafkapy cannot apply these configs dynamically: {scala_set(refused)}; "
                          "a running kafkapy broker never changes its listeners (set them in "
                          "server.properties and restart)")


def _is_password(name: str) -> bool:
    key = broker_key(_base_name(name))
    if key is None:
        key = next((broker_key(m) for m in _MECHANISM_CONFIGS if name.endswith(m)), None)
    return key is not None and key.type == ConfigType.PASSWORD


def persistent_props(props: Mapping[str, str], per_broker: bool) -> dict[str, str]:
    """Kafka's toPersistentProps: what is written to the znode."""
    for name, value in props.items():
        if value is not None and _is_password(name):
            if not per_broker:
                raise ConfigError("Password config can be defined only at broker level")
            raise ConfigError("Password encoder secret not configured")
    return dict(props)


def from_persistent_props(stored: Mapping[str, str], per_broker: bool,
                          log=_log) -> dict[str, str]:
    """Kafka's fromPersistentProps: a stored layer without the entries Kafka ignores."""
    props = dict(stored)
    bad = []
    for name, value in list(props.items()):
        try:
            _check_types({name: value})
        except ConfigError:
            bad.append(name)
    _drop(props, bad, "Dynamic broker config contains invalid values, these configs will be ignored", log)
    _drop(props, _non_dynamic(props), "Non-dynamic configs will be ignored", log)
    _drop(props, [k for k in props if k in DYNAMIC_SECURITY_CONFIGS],
          "Security configs can be dynamically updated only using listener prefix, "
          "base configs will be ignored", log)
    if not per_broker:
        _drop(props, _per_broker(props),
              "Per-broker configs defined at default cluster level will be ignored", log)
    return props


def _drop(props: dict[str, str], names: list[str], message: str, log) -> None:
    if names:
        for name in names:
            props.pop(name, None)
        log.error(message, configs=scala_set(names))


class DynamicBrokerConfig:
    """``broker.dynamic_config``: this broker's view of the two dynamic layers, applied to
    ``config`` (the broker's); ``store`` holds them (None: no layers, checks only)."""

    def __init__(self, config: BrokerConfig, store: MetadataStore | None, node_id: int) -> None:
        self._config = config
        self._store = store
        self._node_id = node_id
        self._listeners: list[Callable[[set[str]], None]] = []
        self._default: dict[str, str] = {}
        self._per_broker: dict[str, str] = {}

    @property
    def _entity(self) -> str:
        return str(self._node_id)

    def add_listener(self, callback: Callable[[set[str]], None]) -> None:
        """``callback(changed_keys)`` after each applied change that changed a value."""
        self._listeners.append(callback)

    # -- reads ---------------------------------------------------------------------
    def stored(self, entity: str) -> dict[str, str]:
        """``/config/brokers/<entity>`` as stored (Kafka's fetchEntityConfig); {} if absent."""
        try:
            data, _ = self._store.get(paths.broker_config_path(entity))
        except NoNodeError:
            return {}
        try:
            return paths.decode_entity_config(data)
        except ValueError:
            _log.exception("unreadable dynamic broker config", entity=entity)
            return {}

    def load(self) -> set[str]:
        """Read both layers and apply them (start-up)."""
        self._default = from_persistent_props(self.stored(paths.DEFAULT_ENTITY), False)
        self._per_broker = from_persistent_props(self.stored(self._entity), True)
        return self._apply()

    def reload(self, entity: str) -> set[str]:
        """A ``brokers/<entity>`` notification: re-read that layer if it concerns us."""
        if entity == paths.DEFAULT_ENTITY:
            self._default = from_persistent_props(self.stored(entity), False)
        elif entity.strip() == self._entity:
            self._per_broker = from_persistent_props(self.stored(self._entity), True)
        else:
            return set()
        return self._apply()

    def _apply(self) -> set[str]:
        try:
            changed = self._config.apply_dynamic(self._default, self._per_broker)
        except ConfigError as err:
            _log.error("Failed to update broker configuration; keeping the current one",
                       reason=str(err), default=self._default, broker=self._per_broker)
            return set()
        if changed:
            _log.info("applied dynamic broker configs", changed=sorted(changed),
                      default=self._default, broker=self._per_broker)
            for callback in list(self._listeners):
                try:
                    callback(changed)
                except Exception:
                    _log.exception("dynamic config listener failed")
        return changed

    # -- the write side's check -----------------------------------------------------
    def validate(self, props: Mapping[str, str], per_broker: bool) -> None:
        """Kafka's DynamicBrokerConfig.validate plus kafkapy's ``check_applicable``:
        ``props`` would become the whole layer (per-broker or default)."""
        validate(props, per_broker)
        default = self._default if per_broker else dict(props)
        broker = dict(props) if per_broker else self._per_broker
        current = self._config
        candidate = current.with_dynamic(default, broker)   # ConfigError if it breaks a rule
        try:
            _check_reconfiguration(current, candidate)
        except ConfigError as err:
            raise ConfigError("Invalid value org.apache.kafka.common.config.ConfigException: "
                              f"{err} for configuration Invalid dynamic configuration") from None
        check_applicable(props)


_THREAD_POOLS = ("num.io.threads", "num.network.threads", "num.replica.fetchers",
                 "num.recovery.threads.per.data.dir", "background.threads")


def _check_reconfiguration(current, candidate) -> None:
    """The reconfigurables' validateReconfiguration for the values that change."""
    for name in _THREAD_POOLS:
        old, new = current[name], candidate[name]
        if new == old:
            continue
        why = f"Dynamic thread count update validation failed for {name}={new}"
        if new <= 0:
            raise ConfigError(f"{why}, value should be at least 1")
        if new < old // 2:
            raise ConfigError(f"{why}, value should be at least half the current value {old}")
        if new > old * 2:
            raise ConfigError(f"{why}, value should not be greater than double the current value {old}")
    old, new = current["log.cleaner.threads"], candidate["log.cleaner.threads"]
    if new != old:
        if new < 1:
            raise ConfigError("Log cleaner threads should be at least 1")
        if new < old // 2:
            raise ConfigError(f"Log cleaner threads cannot be reduced to less than half the "
                              f"current value {old}")
        if new > old * 2:
            raise ConfigError(f"Log cleaner threads cannot be increased to more than double the "
                              f"current value {old}")
