"""IncrementalAlterConfigs (key 44): SET / DELETE / APPEND / SUBTRACT on topic configs.

Versions 0-1 (Kafka 3.9 and 4.0).  Per resource, starting from the topic's
current overrides as stored (``/config/topics/<t>``, as Kafka's fetchEntityConfig): SET (0) sets a value, DELETE (1) removes the override (the
default applies again), APPEND (2) / SUBTRACT (3) add / remove items of a
LIST key (starting from its current value, the default when not
overridden; items stay distinct; an unknown key -> UNKNOWN_SERVER_ERROR, no
message, as Kafka 3.9).  A key given twice -> INVALID_REQUEST; an
unknown operation -> INVALID_REQUEST; APPEND/SUBTRACT on a non-list key ->
INVALID_CONFIG; SET with a null value -> INVALID_REQUEST (all before an unknown
topic is noticed, as Kafka); then the result is
validated and persisted as in AlterConfigs (``alter_configs.apply_topic_configs``),
``validate_only`` changing nothing.  BROKER resources: the name checked as in
AlterConfigs, then the operations applied to the stored layer
(/config/brokers/<id> or <default>, without what Kafka's fromPersistentProps ignores),
APPEND/SUBTRACT on broker LIST keys (starting from the key's default; an unknown key ->
UNKNOWN_SERVER_ERROR as Kafka's map lookup), and the result validated and persisted as
in AlterConfigs (``alter_configs.apply_broker_configs``);
BROKER_LOGGER changes are checked as Kafka checks them and pass with validate_only,
but are refused otherwise (``check_logger_change``); GROUP resources (a consumer group's
``consumer.*`` configs, ``kafkapy.config.group_configs``): the operations applied to the
stored overrides (``/config/groups/<group>``) as Kafka 4.x's controller applies them
(APPEND/SUBTRACT -> INVALID_CONFIG "Can't APPEND to key k because its type is not LIST.":
no group key is a list), then validated and persisted as in AlterConfigs
(``alter_configs.apply_group_configs``); other types -> INVALID_REQUEST.
"""
from __future__ import annotations

from kafkapy.config import group_configs
from kafkapy.config.definitions import BROKER_CONFIGS, TOPIC_CONFIGS
from kafkapy.config.loggers import validate_logger_ops
from kafkapy.config.types import ConfigType
from kafkapy.handlers.alter_configs import (BROKER, GROUP, TOPIC, apply_broker_configs,
                                            apply_group_configs, apply_topic_configs,
                                            broker_entity, check_topic_name, preprocess,
                                            refused_alter, result, stored_broker_layer)
from kafkapy.handlers.common import repeated
from kafkapy.protocol.errors import ErrorCode, KafkaError
from kafkapy.protocol.messages import RESPONSES

API_KEY = 44
MIN_VERSION = 0
MAX_VERSION = 1

SET, DELETE, APPEND, SUBTRACT = 0, 1, 2, 3
BROKER_LOGGER = 8

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
            if resource.resource_type != BROKER_LOGGER:
                preprocess(resource, repeated_ids, [c.name for c in resource.configs
                                                    if c.config_operation != DELETE
                                                    and c.value is None])
            if resource.resource_type == TOPIC:
                check_topic_name(resource.resource_name)
                # Kafka applies the operations to the stored overrides before it looks
                # for the topic (ZkAdminManager.incrementalAlterConfigs).
                current = ctx.services.admin.stored_topic_configs(resource.resource_name)
                configs = _apply_ops(ctx.services, current, resource.configs, TOPIC_CONFIGS,
                                     _topic_list_default)
                apply_topic_configs(ctx.services, resource.resource_name, configs,
                                    bool(request.validate_only))
            elif resource.resource_type == GROUP:
                name = resource.resource_name
                current = group_configs.stored(ctx.services.store, name) if name else {}
                apply_group_configs(ctx.services, name,
                                    _apply_group_ops(current, resource.configs),
                                    bool(request.validate_only))
            elif resource.resource_type == BROKER:
                entity = broker_entity(ctx.services, resource.resource_name)
                current = stored_broker_layer(ctx.services, entity)
                configs = _apply_ops(ctx.services, current, resource.configs, BROKER_CONFIGS,
                                     _broker_list_default)
                apply_broker_configs(ctx.services, entity, configs, bool(request.validate_only))
            else:
                check_logger_change(ctx.services, resource, repeated_ids,
                                    bool(request.validate_only))
            results.append(result(_Result, resource, 0, None))
        except KafkaError as err:
            results.append(result(_Result, resource, err.code, err.message))
    return ctx.response(throttle_time_ms=0, responses=results)


def check_logger_change(services, resource, repeated_ids: set, validate_only: bool) -> None:
    """BROKER_LOGGER, in the order of Kafka's ConfigAdminManager.preprocess: resource named
    twice, null values, this broker's id, then each change (``config.loggers``).  Valid
    changes pass with validate_only and are otherwise refused: kafkapy cannot honour a
    runtime level change (see ``config.loggers``)."""
    if (resource.resource_type, resource.resource_name) in repeated_ids:
        raise KafkaError(ErrorCode.INVALID_REQUEST, "Each resource must appear at most once.")
    nulls = [c.name for c in resource.configs if c.config_operation != DELETE and c.value is None]
    if nulls:
        raise KafkaError(ErrorCode.INVALID_REQUEST, "Null value not supported for : " + ", ".join(nulls))
    name = resource.resource_name
    if not name.lstrip("-").isdigit():
        raise KafkaError(ErrorCode.INVALID_REQUEST, f"Node id must be an integer, but it is: {name}")
    if int(name) != services.node_id:
        # Kafka's wording; Kafka 3.9 quotes its own id as the received one (tests/conformance/known.py)
        raise KafkaError(ErrorCode.INVALID_REQUEST,
                         f"Unexpected node id. Expected {services.node_id}, but received {int(name)}")
    validate_logger_ops((c.name, c.config_operation, c.value) for c in resource.configs)
    if resource.configs and not validate_only:
        raise KafkaError(ErrorCode.INVALID_REQUEST,
                         "Log levels cannot be changed at runtime on this broker; "
                         "set kafkapy.log.levels in server.properties and restart")


def _split(value: str | None) -> list[str]:
    if not value:
        return []
    return [v.strip() for v in value.split(",") if v.strip()]


def _topic_list_default(services, name: str) -> list[str]:
    default = services.config.topic_defaults().get(name)
    return list(default) if isinstance(default, (list, tuple)) else _split(default)


def _broker_list_default(services, name: str) -> list[str]:
    default = BROKER_CONFIGS[name].default
    return list(default) if isinstance(default, (list, tuple)) else _split(default)


def _apply_ops(services, current: dict[str, str], ops, registry, list_default) -> dict[str, str]:
    out = dict(current)
    for op in ops:
        name, kind, value = op.name, op.config_operation, op.value
        if kind == SET:
            if value is None:
                raise KafkaError(ErrorCode.INVALID_REQUEST,
                                 f"Null value not supported for : {name}")
            out[name] = value
        elif kind == DELETE:
            out.pop(name, None)
        elif kind in (APPEND, SUBTRACT):
            key = registry.get(name)
            if key is None:
                # Kafka looks the key up in a Scala map that throws: UNKNOWN_SERVER_ERROR
                # without a message (checked against Kafka 3.9).
                raise KafkaError(ErrorCode.UNKNOWN, None)
            if key.type != ConfigType.LIST:
                verb = "append" if kind == APPEND else "subtract"
                raise KafkaError(ErrorCode.INVALID_CONFIG,
                                 f"Config value {verb} is not allowed for config key: {name}")
            old = _split(out[name]) if name in out else list_default(services, name)
            items = _split(value)
            if kind == APPEND:
                new = old + [v for v in items if v not in old]
            else:
                new = [v for v in old if v not in items]
            out[name] = ",".join(new)
        else:
            raise KafkaError(ErrorCode.INVALID_REQUEST,
                             f"Unknown alter configs operation type {kind}")
    return out


def _apply_group_ops(current: dict[str, str], ops) -> dict[str, str]:
    """Kafka 4.x's ConfigurationControlManager: SET and DELETE; APPEND and SUBTRACT only on
    LIST keys, which groups have none of."""
    out = dict(current)
    for op in ops:
        if op.config_operation == SET:
            out[op.name] = op.value
        elif op.config_operation == DELETE:
            out.pop(op.name, None)
        elif op.config_operation in (APPEND, SUBTRACT):
            verb = "APPEND" if op.config_operation == APPEND else "SUBTRACT"
            raise KafkaError(ErrorCode.INVALID_CONFIG,
                             f"Can't {verb} to key {op.name} because its type is not LIST.")
        else:
            raise KafkaError(ErrorCode.INVALID_REQUEST,
                             f"Unknown alter configs operation type {op.config_operation}")
    return out
