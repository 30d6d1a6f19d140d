"""DescribeConfigs (key 32): broker and topic configs with sources, synonyms and docs.

Versions 0-4 (Kafka 3.9; v0 answers is_default, left false as Kafka does,
instead of the config source).  Resource types: TOPIC (2) and BROKER
(4; the name is this broker's id: every broker key with its effective value and
dynamic sources; or empty for the cluster-wide dynamic defaults: only the keys set
in /config/brokers/<default>, see ``config.describe``);
BROKER_LOGGER (8, named by this broker's id) lists the process's loggers and
their levels (``config.loggers.describe_loggers``).
CLIENT_METRICS (16) is INVALID_REQUEST, as in Kafka's ZooKeeper mode.
GROUP (32), as Kafka 4.x (``config.group_configs``): a consumer group's
``consumer.session.timeout.ms`` and ``consumer.heartbeat.interval.ms``, each its
override (source GROUP_CONFIG) or the broker's ``group.consumer.*`` value (DEFAULT_CONFIG),
never read-only; the group need not exist; an empty name -> INVALID_REQUEST "Group name
must not be empty"; DESCRIBE_CONFIGS on the group is needed (GROUP_AUTHORIZATION_FAILED).
``configuration_keys`` null or empty means every key.  An illegal topic name ->
INVALID_TOPIC_EXCEPTION with Kafka's reason; unknown topic ->
UNKNOWN_TOPIC_OR_PARTITION with an empty message; another broker's id
or a bad name -> INVALID_REQUEST; any other resource type makes the whole
request INVALID_REQUEST (every resource, Kafka's default message).
"""
from __future__ import annotations

from kafkapy.security import authz
from kafkapy.config import group_configs
from kafkapy.config.describe import describe_broker, describe_default_broker, describe_topic
from kafkapy.config.loggers import describe_loggers
from kafkapy.metadata.topics import invalid_topic_reason
from kafkapy.protocol.errors import ErrorCode
from kafkapy.protocol.messages import RESPONSES

API_KEY = 32
MIN_VERSION = 0
MAX_VERSION = 4

TOPIC, BROKER, BROKER_LOGGER, CLIENT_METRICS, GROUP = 2, 4, 8, 16, 32
_KNOWN_TYPES = (TOPIC, BROKER, BROKER_LOGGER, CLIENT_METRICS, GROUP)
_INVALID_REQUEST_MESSAGE = (
    "This most likely occurs because of a request being malformed by the client library or "
    "the message was sent to an incompatible broker. See the broker logs for more details.")

_R = RESPONSES[API_KEY]
_Result = _R.DescribeConfigsResult
_Entry = _Result.DescribeConfigsResourceResult
_Synonym = _Entry.DescribeConfigsSynonym


def handle(ctx, request):
    if any(r.resource_type not in _KNOWN_TYPES for r in request.resources):
        # Kafka refuses the whole request: every resource gets the error.
        return ctx.response(throttle_time_ms=0, results=[
            _failed(r, ErrorCode.INVALID_REQUEST, _INVALID_REQUEST_MESSAGE)
            for r in request.resources])
    results = [_refused(ctx, r) or _describe(ctx, request, r) for r in request.resources]
    return ctx.response(throttle_time_ms=0, results=results)


def _refused(ctx, resource):
    """Kafka: DESCRIBE_CONFIGS on the topic or the group, or on the cluster for broker
    resources."""
    if resource.resource_type == TOPIC:
        if authz.allowed(ctx, authz.DESCRIBE_CONFIGS, authz.TOPIC, resource.resource_name):
            return None
        return _failed(resource, ErrorCode.TOPIC_AUTHORIZATION_FAILED, "Topic authorization failed.")
    if resource.resource_type == GROUP:
        if authz.allowed(ctx, authz.DESCRIBE_CONFIGS, authz.GROUP, resource.resource_name):
            return None
        return _failed(resource, ErrorCode.GROUP_AUTHORIZATION_FAILED, "Group authorization failed.")
    if authz.cluster(ctx, authz.DESCRIBE_CONFIGS):
        return None
    return _failed(resource, ErrorCode.CLUSTER_AUTHORIZATION_FAILED, "Cluster authorization failed.")


def _describe(ctx, request, resource):
    services = ctx.services
    kind, name = resource.resource_type, resource.resource_name
    keys = resource.configuration_keys or None  # Kafka: an empty list asks for every key
    synonyms = bool(request.include_synonyms)
    docs = bool(request.include_documentation)
    if kind == TOPIC:
        reason = invalid_topic_reason(name)
        if reason:
            return _failed(resource, ErrorCode.INVALID_TOPIC_EXCEPTION, reason)
        topic = services.cache.topic(name)
        if topic is None:
            return _failed(resource, ErrorCode.UNKNOWN_TOPIC_OR_PARTITION, "")
        # As Kafka's ZooKeeper mode, the stored overrides: current on every broker at once
        # after an AlterConfigs anywhere (the cache follows /config/changes a moment later).
        entries = describe_topic(services.config, services.admin.stored_topic_configs(name),
                                 keys, synonyms, docs)
    elif kind == BROKER:
        if name and not name.lstrip("-").isdigit():
            return _failed(resource, ErrorCode.INVALID_REQUEST,
                           f"Broker id must be an integer, but it is: {name}")
        if name not in ("", str(services.node_id)):
            return _failed(resource, ErrorCode.INVALID_REQUEST,
                           f"Unexpected broker id, expected {services.node_id} or empty string, "
                           f"but received {name}")
        describe = describe_broker if name else describe_default_broker
        entries = describe(services.config, keys, synonyms, docs)
    elif kind == BROKER_LOGGER:
        if not name:
            return _failed(resource, ErrorCode.INVALID_REQUEST, "Broker id must not be empty")
        if not name.lstrip("-").isdigit():
            return _failed(resource, ErrorCode.INVALID_REQUEST,
                           f"Broker id must be an integer, but it is: {name}")
        if name != str(services.node_id):
            return _failed(resource, ErrorCode.INVALID_REQUEST,
                           f"Unexpected broker id, expected {services.node_id} but received {name}")
        entries = describe_loggers(keys)
    elif kind == GROUP:
        if not name:
            return _failed(resource, ErrorCode.INVALID_REQUEST, "Group name must not be empty")
        entries = group_configs.describe(services.config,
                                         group_configs.stored(services.store, name),
                                         keys, synonyms, docs)
    elif name:  # CLIENT_METRICS, which Kafka serves only in KRaft mode
        return _failed(resource, ErrorCode.INVALID_REQUEST,
                       "Config type client-metrics is only supported on KRaft clusters")
    else:
        return _failed(resource, ErrorCode.INVALID_REQUEST,
                       "Client metrics subscription name must not be empty")
    # Kafka leaves the message at its schema default, "", without an error.
    return _Result(error_code=0, error_message="", resource_type=kind, resource_name=name,
                   configs=[_entry(e, synonyms) for e in entries])


def _entry(e, with_synonyms: bool):
    return _Entry(name=e.name, value=e.value, read_only=e.read_only, config_source=e.source,
                  is_sensitive=e.is_sensitive,
                  synonyms=[_Synonym(name=s[0], value=s[1], source=s[2])
                            for s in e.synonyms] if with_synonyms else [],
                  config_type=e.config_type, documentation=e.documentation)


def _failed(resource, code: int, message: str):
    return _Result(error_code=code, error_message=message, resource_type=resource.resource_type,
                   resource_name=resource.resource_name, configs=[])
