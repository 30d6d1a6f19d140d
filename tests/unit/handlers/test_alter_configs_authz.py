"""AlterConfigs / IncrementalAlterConfigs authorization (``refused_alter``): ALTER_CONFIGS on
the topic for TOPIC resources, on the cluster for BROKER ones, with Kafka's error codes; no
check without an authorizer."""
from __future__ import annotations

from types import SimpleNamespace

from kafkapy.handlers.alter_configs import BROKER, TOPIC, refused_alter
from kafkapy.protocol.errors import ErrorCode
from kafkapy.security import acls as A
from tests.support.services import context, services


class _Authorizer:
    """Allows exactly the (operation, resource type, name) triples given."""

    def __init__(self, *allowed) -> None:
        self.allowed = set(allowed)
        self.asked: list = []

    def authorize(self, session, operation, resource_type, name) -> bool:
        self.asked.append((operation, resource_type, name))
        return (operation, resource_type, name) in self.allowed


def _ctx(authorizer):
    return context(services(authorizer=authorizer), 33, 2)


def _resource(kind: int, name: str):
    return SimpleNamespace(resource_type=kind, resource_name=name)


def test_no_authorizer_refuses_nothing():
    assert refused_alter(_ctx(None), _resource(TOPIC, "t")) == 0
    assert refused_alter(_ctx(None), _resource(BROKER, "1")) == 0


def test_topic_needs_alter_configs_on_the_topic():
    authorizer = _Authorizer((A.ALTER_CONFIGS, A.TOPIC, "open"))
    assert refused_alter(_ctx(authorizer), _resource(TOPIC, "open")) == 0
    assert refused_alter(_ctx(authorizer), _resource(TOPIC, "closed")) == \
        ErrorCode.TOPIC_AUTHORIZATION_FAILED


def test_broker_needs_alter_configs_on_the_cluster():
    denied = _Authorizer()
    assert refused_alter(_ctx(denied), _resource(BROKER, "1")) == \
        ErrorCode.CLUSTER_AUTHORIZATION_FAILED
    assert denied.asked == [(A.ALTER_CONFIGS, A.CLUSTER, A.CLUSTER_NAME)]
    granted = _Authorizer((A.ALTER_CONFIGS, A.CLUSTER, A.CLUSTER_NAME))
    assert refused_alter(_ctx(granted), _resource(BROKER, "")) == 0
