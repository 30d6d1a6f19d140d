"""GROUP (32) resources in DescribeConfigs, AlterConfigs and IncrementalAlterConfigs: a
consumer group's ``consumer.*`` configs kept in ``/config/groups/<group>`` of a real
EmbeddedStore, with Kafka 4.x's checks, errors and authorization."""
from __future__ import annotations

import pytest

from kafkapy.config import group_configs as G
from kafkapy.handlers import alter_configs, describe_configs, incremental_alter_configs
from kafkapy.metadata import paths
from kafkapy.protocol.errors import ErrorCode
from kafkapy.protocol.messages import REQUESTS
from kafkapy.security import acls as A
from tests.support.metadata_store import embedded_store
from tests.support.services import context, services

GROUP = 32
SET, DELETE, APPEND, SUBTRACT = 0, 1, 2, 3


class Authorizer:
    def __init__(self, *allowed) -> None:
        self.allowed = set(allowed)

    def authorize(self, session, operation, resource_type, name) -> bool:
        return (operation, resource_type, name) in self.allowed


@pytest.fixture
def store(tmp_path):
    with embedded_store(tmp_path) as s:
        yield s


def _incremental(store, name, ops, validate_only=False, authorizer=None):
    cls = REQUESTS[44]
    resource = cls.AlterConfigsResource(resource_type=GROUP, resource_name=name, configs=[
        cls.AlterConfigsResource.AlterableConfig(name=k, config_operation=op, value=v)
        for k, op, v in ops])
    request = cls(version=1, resources=[resource], validate_only=validate_only)
    ctx = context(services(store=store, authorizer=authorizer), 44, 1)
    [result] = incremental_alter_configs.handle(ctx, request).responses
    return result.error_code, result.error_message


def _legacy(store, name, configs, validate_only=False):
    cls = REQUESTS[33]
    resource = cls.AlterConfigsResource(resource_type=GROUP, resource_name=name, configs=[
        cls.AlterConfigsResource.AlterableConfig(name=k, value=v) for k, v in configs.items()])
    request = cls(version=2, resources=[resource], validate_only=validate_only)
    [result] = alter_configs.handle(context(services(store=store), 33, 2), request).responses
    return result.error_code, result.error_message


def _describe(store, name, keys=None, authorizer=None, version=4):
    cls = REQUESTS[32]
    request = cls(version=version, include_synonyms=True, include_documentation=True,
                  resources=[cls.DescribeConfigsResource(resource_type=GROUP, resource_name=name,
                                                         configuration_keys=keys)])
    ctx = context(services(store=store, authorizer=authorizer), 32, version)
    [result] = describe_configs.handle(ctx, request).results
    return result


def _values(result) -> dict:
    """The consumer group keys' values and sources (the share group keys are described too)."""
    return {c.name: (c.value, c.config_source) for c in result.configs
            if c.name.startswith("consumer.")}


def test_incremental_set_then_delete(store):
    assert _incremental(store, "g", [(G.SESSION_TIMEOUT_MS, SET, "50000"),
                                     (G.HEARTBEAT_INTERVAL_MS, SET, "6000")]) == (0, None)
    assert G.stored(store, "g") == {G.SESSION_TIMEOUT_MS: "50000", G.HEARTBEAT_INTERVAL_MS: "6000"}
    result = _describe(store, "g")
    assert (result.error_code, _values(result)) == (0, {
        G.HEARTBEAT_INTERVAL_MS: ("6000", 8), G.SESSION_TIMEOUT_MS: ("50000", 8)})
    assert _incremental(store, "g", [(G.SESSION_TIMEOUT_MS, DELETE, None)]) == (0, None)
    assert _values(_describe(store, "g")) == {
        G.HEARTBEAT_INTERVAL_MS: ("6000", 8), G.SESSION_TIMEOUT_MS: ("45000", 5)}


def test_validate_only_changes_nothing(store):
    assert _incremental(store, "g", [(G.SESSION_TIMEOUT_MS, SET, "50000")], True) == (0, None)
    assert _legacy(store, "g", {G.SESSION_TIMEOUT_MS: "50000"}, True) == (0, None)
    assert G.stored(store, "g") == {} and store.get_children(paths.CONFIG_CHANGES) == []


@pytest.mark.parametrize("ops,error", [
    ([(G.SESSION_TIMEOUT_MS, SET, "70000")],
     (ErrorCode.INVALID_CONFIG, "consumer.session.timeout.ms must be less than or equal to "
                                "group.consumer.max.session.timeout.ms")),
    ([("consumer.sesion.timeout.ms", SET, "50000")],
     (ErrorCode.INVALID_CONFIG, "Unknown group config name: consumer.sesion.timeout.ms")),
    ([(G.HEARTBEAT_INTERVAL_MS, APPEND, "1")],
     (ErrorCode.INVALID_CONFIG, "Can't APPEND to key consumer.heartbeat.interval.ms because "
                                "its type is not LIST.")),
    ([(G.HEARTBEAT_INTERVAL_MS, SUBTRACT, "1")],
     (ErrorCode.INVALID_CONFIG, "Can't SUBTRACT to key consumer.heartbeat.interval.ms because "
                                "its type is not LIST.")),
    ([(G.SESSION_TIMEOUT_MS, SET, None)],
     (ErrorCode.INVALID_REQUEST, "Null value not supported for : consumer.session.timeout.ms")),
])
def test_incremental_refusals(store, ops, error):
    assert _incremental(store, "g", ops) == error
    assert G.stored(store, "g") == {}


def test_a_group_resource_needs_a_name(store):
    assert _incremental(store, "", [(G.SESSION_TIMEOUT_MS, SET, "50000")]) == (
        ErrorCode.INVALID_REQUEST, "Default group resources are not allowed.")
    assert _legacy(store, "", {}) == (
        ErrorCode.INVALID_REQUEST, "Default group resources are not allowed.")
    result = _describe(store, "")
    assert (result.error_code, result.error_message, result.configs) == (
        ErrorCode.INVALID_REQUEST, "Group name must not be empty", [])


def test_legacy_alter_replaces_every_override(store):
    assert _legacy(store, "g", {G.SESSION_TIMEOUT_MS: "50000",
                                G.HEARTBEAT_INTERVAL_MS: "6000"}) == (0, None)
    assert _legacy(store, "g", {G.HEARTBEAT_INTERVAL_MS: "7000"}) == (0, None)
    assert G.stored(store, "g") == {G.HEARTBEAT_INTERVAL_MS: "7000"}
    assert _legacy(store, "g", {G.HEARTBEAT_INTERVAL_MS: "1"}) == (
        ErrorCode.INVALID_CONFIG, "consumer.heartbeat.interval.ms must be greater than or "
                                  "equal to group.consumer.min.heartbeat.interval.ms")


def test_describe_of_a_group_without_configs(store):
    result = _describe(store, "never-configured", keys=[G.HEARTBEAT_INTERVAL_MS], version=0)
    assert result.error_code == 0
    [entry] = result.configs
    assert (entry.name, entry.value, entry.read_only, entry.is_sensitive) == (
        G.HEARTBEAT_INTERVAL_MS, "5000", False, False)


def test_authorization_on_the_group(store):
    denied = Authorizer()
    assert _incremental(store, "g", [(G.SESSION_TIMEOUT_MS, SET, "50000")],
                        authorizer=denied) == (ErrorCode.GROUP_AUTHORIZATION_FAILED, None)
    result = _describe(store, "g", authorizer=denied)
    assert (result.error_code, result.error_message) == (
        ErrorCode.GROUP_AUTHORIZATION_FAILED, "Group authorization failed.")
    allowed = Authorizer((A.ALTER_CONFIGS, A.GROUP, "g"), (A.DESCRIBE_CONFIGS, A.GROUP, "g"))
    assert _incremental(store, "g", [(G.SESSION_TIMEOUT_MS, SET, "50000")],
                        authorizer=allowed) == (0, None)
    assert _describe(store, "g", authorizer=allowed).error_code == 0
