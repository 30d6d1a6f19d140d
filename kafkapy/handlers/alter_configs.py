"""AlterConfigs (key 33): replace a topic's config overrides or a dynamic broker config
layer (legacy, non-incremental).

Versions 0-2 (Kafka 3.9 and 4.0).  Per resource:
- TOPIC (2): the given entries become the topic's complete set of overrides
  (keys left out return to their defaults), validated like CreateTopics
  configs (unknown key, bad value, min > max compaction lag ->
  INVALID_CONFIG with the reason); unknown topic -> UNKNOWN_TOPIC_OR_PARTITION;
  an empty name -> INVALID_REQUEST "Default topic resources are not allowed.".
  Persisted through ``admin.alter_topic_configs`` (``/config/topics/<t>``
  plus a ``/config/changes`` notification), on any broker: every broker
  applies the change to its partition logs when the notification reaches it
  (retention, segment size, cleanup policy, ...), this one at once.
  ``validate_only`` checks and changes nothing.
- First, as Kafka's ConfigAdminManager.preprocess: a resource named twice, a
  key given twice, a null value, another resource type -> INVALID_REQUEST.
- BROKER (4): the name is this broker's id (its own layer, /config/brokers/<id>) or
  empty (the cluster default, /config/brokers/<default>); a non-integer name or
  another broker's id -> INVALID_REQUEST.  The given entries become the whole layer
  (AlterConfigs is not incremental), checked as Kafka's ZkAdminManager.alterBrokerConfigs
  -> DynamicBrokerConfig.validate (``config.dynamic``): keys that are not dynamic, SSL
  keys without a listener prefix, bad values, per-broker keys at the default level, a
  merged config breaking a cross-key rule, a thread count more than doubled or below
  half (Kafka's reconfigurables' checks) -> INVALID_REQUEST with Kafka's message
  (unknown keys pass, as custom configs); then kafkapy refuses listener keys it cannot
  apply.  Unless ``validate_only``, toPersistentProps' password checks, then the znode
  and a ``/config/changes`` notification (``admin.alter_broker_configs``): every broker
  (this one at once) applies it.
- GROUP (32): a consumer group's configs (``consumer.session.timeout.ms``,
  ``consumer.heartbeat.interval.ms``; ``kafkapy.config.group_configs``), as Kafka 4.x's
  controller checks them: an empty name -> INVALID_REQUEST "Default group resources are
  not allowed."; an unknown key, a bad value or one outside the broker's
  ``group.consumer.min/max.*`` bounds -> INVALID_CONFIG with Kafka's message.  The group
  need not exist.  Unless ``validate_only``, written to ``/config/groups/<group>`` with a
  ``/config/changes`` notification; ALTER_CONFIGS on the group is needed
  (GROUP_AUTHORIZATION_FAILED otherwise).
"""
from __future__ import annotations

from kafkapy.security import authz
from kafkapy.config import group_configs
from kafkapy.config.dynamic import from_persistent_props, persistent_props
from kafkapy.config.errors import ConfigError
from kafkapy.handlers.common import repeated
from kafkapy.metadata import paths
from kafkapy.protocol.errors import ErrorCode, KafkaError
from kafkapy.protocol.messages import RESPONSES

API_KEY = 33
MIN_VERSION = 0
MAX_VERSION = 2

TOPIC, BROKER, GROUP = 2, 4, 32
_TYPE_NAMES = {TOPIC: "TOPIC", BROKER: "BROKER", 8: "BROKER_LOGGER", GROUP: "GROUP"}

_R = RESPONSES[API_KEY]
_Result = _R.AlterConfigsResourceResponse


def handle(ctx, request):
    repeated_ids = repeated((r.resource_type, r.resource_name) for r in request.resources)
    results = []
    for resource in request.resources:
        refused = refused_alter(ctx, resource)
        if refused:
            results.append(result(_Result, resource, refused, None))
            continue
        try:
            preprocess(resource, repeated_ids, [c.name for c in resource.configs
                                                if c.value is None])
            if resource.resource_type == TOPIC:
                configs = {c.name: c.value for c in resource.configs}
                apply_topic_configs(ctx.services, resource.resource_name, configs,
                                    bool(request.validate_only))
            elif resource.resource_type == GROUP:
                apply_group_configs(ctx.services, resource.resource_name,
                                    {c.name: c.value for c in resource.configs},
                                    bool(request.validate_only))
            else:
                entity = broker_entity(ctx.services, resource.resource_name)
                apply_broker_configs(ctx.services, entity,
                                     {c.name: c.value for c in resource.configs},
                                     bool(request.validate_only))
            results.append(result(_Result, resource, 0, None))
        except KafkaError as err:
            results.append(result(_Result, resource, err.code, err.message))
    return ctx.response(throttle_time_ms=0, responses=results)


def refused_alter(ctx, resource) -> int:
    """Kafka's ALTER_CONFIGS check: on the topic or the group, or on the cluster for broker
    resources; the error code when refused, else 0 (always 0 without an authorizer)."""
    if resource.resource_type == TOPIC:
        if authz.allowed(ctx, authz.ALTER_CONFIGS, authz.TOPIC, resource.resource_name):
            return 0
        return ErrorCode.TOPIC_AUTHORIZATION_FAILED
    if resource.resource_type == GROUP:
        if authz.allowed(ctx, authz.ALTER_CONFIGS, authz.GROUP, resource.resource_name):
            return 0
        return ErrorCode.GROUP_AUTHORIZATION_FAILED
    if authz.cluster(ctx, authz.ALTER_CONFIGS):
        return 0
    return ErrorCode.CLUSTER_AUTHORIZATION_FAILED


def preprocess(resource, repeated_ids: set, null_keys: list[str]) -> None:
    """The checks of Kafka's ConfigAdminManager.preprocess, in its order: a resource named
    twice, a key given twice, null values, then a type other than TOPIC, BROKER or GROUP
    (each INVALID_REQUEST)."""
    if (resource.resource_type, resource.resource_name) in repeated_ids:
        raise KafkaError(ErrorCode.INVALID_REQUEST, "Each resource must appear at most once.")
    if repeated(c.name for c in resource.configs):
        raise KafkaError(ErrorCode.INVALID_REQUEST, "Error due to duplicate config keys")
    if null_keys:
        raise KafkaError(ErrorCode.INVALID_REQUEST,
                         "Null value not supported for : " + ", ".join(null_keys))
    if resource.resource_type not in (TOPIC, BROKER, GROUP):
        raise KafkaError(ErrorCode.INVALID_REQUEST,
                         f"Unknown resource type {resource.resource_type}")


def result(cls, resource, code: int, message: str | None):
    return cls(error_code=code, error_message=message, resource_type=resource.resource_type,
               resource_name=resource.resource_name)


def apply_topic_configs(services, name: str, configs: dict[str, str | None],
                        validate_only: bool) -> None:
    """Validate, then (unless validate_only) persist and apply a topic's new overrides."""
    check_topic_name(name)
    if services.cache.topic(name) is None:
        raise KafkaError(ErrorCode.UNKNOWN_TOPIC_OR_PARTITION,
                         f"The topic '{name}' does not exist.")
    for key, value in configs.items():
        if value is None:
            raise KafkaError(ErrorCode.INVALID_CONFIG,
                             f"Null value not supported for topic configs: {key}")
    try:
        if validate_only:
            services.admin.validate_topic_configs(configs)
            return
        services.admin.alter_topic_configs(name, dict(configs))
    except KafkaError as err:
        # A value its ConfigDef refuses is a ConfigException in Kafka, which
        # ZkAdminManager reports naming the resource; other refusals it passes as they are.
        if err.code == ErrorCode.INVALID_CONFIG and (err.message or "").startswith(
                "Invalid value "):
            raise KafkaError(err.code, f"Invalid config value for resource "
                                       f"ConfigResource(type=TOPIC, name='{name}'): "
                                       f"{err.message}") from err
        raise


def apply_group_configs(services, name: str, configs: dict[str, str],
                        validate_only: bool) -> None:
    """Validate, then (unless validate_only) persist a group's new overrides (Kafka's
    ControllerConfigurationValidator for GROUP resources)."""
    if not name:
        raise KafkaError(ErrorCode.INVALID_REQUEST, "Default group resources are not allowed.")
    try:
        group_configs.validate(configs, services.config)
    except ConfigError as err:
        raise KafkaError(ErrorCode.INVALID_CONFIG, str(err)) from None
    if not validate_only:
        group_configs.write(services.store, name, configs)


def check_topic_name(name: str) -> None:
    """ZkAdminManager: a topic resource needs a name (no default topic resource)."""
    if not name:
        raise KafkaError(ErrorCode.INVALID_REQUEST, "Default topic resources are not allowed.")


def broker_entity(services, name: str) -> str:
    """ZkAdminManager.getBrokerId: the znode entity a BROKER resource names."""
    if not name:
        return paths.DEFAULT_ENTITY
    if not name.lstrip("-").isdigit():
        raise KafkaError(ErrorCode.INVALID_REQUEST,
                         f"Node id must be an integer, but it is: {name}")
    if int(name) != services.node_id:
        raise KafkaError(ErrorCode.INVALID_REQUEST,
                         f"Unexpected broker id, expected {services.node_id}, but received {name}")
    return str(int(name))


def apply_broker_configs(services, entity: str, configs: dict[str, str],
                         validate_only: bool) -> None:
    """Validate ``configs`` as the new whole layer of ``entity``, then (unless
    validate_only) persist it (see module docstring)."""
    per_broker = entity != paths.DEFAULT_ENTITY
    try:
        services.dynamic_config.validate(configs, per_broker)
        if validate_only:
            return
        stored = persistent_props(configs, per_broker)
    except ConfigError as err:
        raise KafkaError(ErrorCode.INVALID_REQUEST, str(err)) from None
    services.admin.alter_broker_configs(entity, stored)


def stored_broker_layer(services, entity: str) -> dict[str, str]:
    """The layer as stored, without what Kafka's fromPersistentProps ignores."""
    return from_persistent_props(services.admin.stored_broker_configs(entity),
                                 entity != paths.DEFAULT_ENTITY)
