"""DescribeConfigs, DescribeCluster and topic admin through stock admin clients.

confluent-kafka's AdminClient (librdkafka) and kafka-python's KafkaAdminClient
read broker and topic configs with Kafka's sources and synonyms, see the
cluster, and create/grow/delete topics.
"""
from __future__ import annotations

import time

import pytest
from confluent_kafka.admin import AdminClient, ConfigResource, NewPartitions, NewTopic
from kafka.admin import ConfigResource as KPConfigResource
from kafka.admin import ConfigResourceType, KafkaAdminClient


@pytest.fixture(scope="module")
def admin(broker):
    return AdminClient({"bootstrap.servers": broker.bootstrap})


# librdkafka reports Kafka's wire ids of DescribeConfigsResponse.ConfigSource as they are.
TOPIC_CONFIG, STATIC_BROKER_CONFIG, DEFAULT_CONFIG = 1, 4, 5


def test_topic_configs_show_overrides_defaults_and_synonyms(admin):
    admin.create_topics([NewTopic("cfg-topic", 2, 1, config={"retention.ms": "123456"})])[
        "cfg-topic"].result(30)
    resource = ConfigResource("TOPIC", "cfg-topic")
    entries = admin.describe_configs([resource])[resource].result(30)
    retention = entries["retention.ms"]
    assert retention.value == "123456"
    assert retention.source == TOPIC_CONFIG
    assert not retention.is_read_only
    assert retention.synonyms["retention.ms"].value == "123456"
    segment = entries["segment.bytes"]
    assert segment.value == "1073741824" and not segment.is_default
    assert segment.source == STATIC_BROKER_CONFIG  # set in server.properties
    assert entries["cleanup.policy"].value == "delete"


def test_broker_configs_are_static_with_kafka_defaults(admin, broker):
    resource = ConfigResource("BROKER", "0")
    entries = admin.describe_configs([resource])[resource].result(30)
    assert entries["log.dirs"].value == str(broker.log_dir)
    assert entries["log.dirs"].source == STATIC_BROKER_CONFIG
    assert entries["message.max.bytes"].value == "1048588"
    assert entries["message.max.bytes"].source == DEFAULT_CONFIG
    assert entries["log.dirs"].is_read_only


def test_cluster_and_topic_lifecycle(admin):
    metadata = admin.list_topics(timeout=30)
    assert list(metadata.brokers) == [0] and metadata.controller_id == 0
    admin.create_topics([NewTopic("grow-me", 1, 1)])["grow-me"].result(30)
    admin.create_partitions([NewPartitions("grow-me", 4)])["grow-me"].result(30)
    assert len(admin.list_topics("grow-me", timeout=30).topics["grow-me"].partitions) == 4
    admin.delete_topics(["grow-me"])["grow-me"].result(30)
    deadline = time.monotonic() + 30
    while "grow-me" in admin.list_topics(timeout=30).topics and time.monotonic() < deadline:
        time.sleep(0.2)
    assert "grow-me" not in admin.list_topics(timeout=30).topics


def test_kafka_python_admin_describes_configs_and_cluster(broker):
    admin = KafkaAdminClient(bootstrap_servers=broker.bootstrap)
    try:
        cluster = admin.describe_cluster()
        assert cluster["controller_id"] == 0 and len(cluster["brokers"]) == 1
        result = admin.describe_configs([KPConfigResource(ConfigResourceType.BROKER, "0")],
                                        config_filter="all")
        configs = result["broker"]["0"]
        assert configs["num.partitions"]["value"] == "1"
        assert configs["num.partitions"]["config_source"] == "STATIC_BROKER_CONFIG"
        assert configs["message.max.bytes"]["config_source"] == "DEFAULT_CONFIG"
    finally:
        admin.close()


def test_acl_requests_answer_security_disabled_like_kafka_without_authorizer(broker, admin):
    """Kafka with an empty authorizer.class.name (the default) answers every ACL
    request SECURITY_DISABLED; stock admin clients surface exactly that."""
    from confluent_kafka import KafkaException
    from confluent_kafka.admin import (AclBinding, AclBindingFilter, AclOperation,
                                       AclPermissionType, ResourcePatternType, ResourceType)
    from kafka.errors import SecurityDisabledError

    binding = AclBinding(ResourceType.TOPIC, "acl-topic", ResourcePatternType.LITERAL,
                         "User:alice", "*", AclOperation.READ, AclPermissionType.ALLOW)
    match_all = AclBindingFilter(ResourceType.ANY, None, ResourcePatternType.ANY,
                                 None, None, AclOperation.ANY, AclPermissionType.ANY)
    # librdkafka drops DescribeAcls' top-level error (rdkafka_admin.c reads it and
    # returns success), so an empty list is all it can show; kafka-python below
    # surfaces the code.
    assert admin.describe_acls(match_all).result(30) == []
    calls = {
        "create": lambda: admin.create_acls([binding])[binding].result(30),
        "delete": lambda: admin.delete_acls([match_all])[match_all].result(30),
    }
    for name, call in calls.items():
        with pytest.raises(KafkaException) as e:
            call()
        error = e.value.args[0]
        assert error.name() == "SECURITY_DISABLED", (name, error)
        assert "No Authorizer is configured" in error.str(), (name, error)

    from kafka.admin import ACLFilter, ACLOperation, ACLPermissionType, ACLResourcePatternType
    from kafka.admin import ResourcePatternFilter, ResourceType as KPResourceType
    kp = KafkaAdminClient(bootstrap_servers=broker.bootstrap)
    try:
        acl_filter = ACLFilter(principal=None, host="*", operation=ACLOperation.ANY,
                               permission_type=ACLPermissionType.ANY,
                               resource_pattern=ResourcePatternFilter(
                                   KPResourceType.ANY, None, ACLResourcePatternType.ANY))
        with pytest.raises(SecurityDisabledError):
            kp.describe_acls(acl_filter)
    finally:
        kp.close()
