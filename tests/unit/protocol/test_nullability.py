"""kafkapy.protocol.nullability: the first null where Kafka's schema forbids one, also
inside a nullable struct array that is not null and among a string array's items."""
from __future__ import annotations

from kafkapy.handlers import build_registry
from kafkapy.protocol.messages import REQUESTS
from kafkapy.protocol.nullability import null_field

build_registry()          # registers the schemas kafka-python lacks (share groups' among them)


def _describe_share_group_offsets(topics):
    cls = REQUESTS[90]
    group = cls.DescribeShareGroupOffsetsRequestGroup
    return cls(version=0, groups=[group(version=0, group_id="g", topics=topics)])


def _topic(partitions):
    topic_cls = REQUESTS[90].DescribeShareGroupOffsetsRequestGroup \
        .DescribeShareGroupOffsetsRequestTopic
    return topic_cls(version=0, topic_name="t", partitions=partitions)


def test_a_nullable_array_may_be_null():
    assert null_field(_describe_share_group_offsets(None), 0) is None
    assert null_field(_describe_share_group_offsets([_topic([0, 1])]), 0) is None


def test_a_non_nullable_field_inside_a_nullable_array_is_checked():
    request = _describe_share_group_offsets([_topic([0]), _topic(None)])
    assert null_field(request, 0) == "groups[0].topics[1].partitions"


def test_nullability_follows_the_version():
    cls = REQUESTS[3]
    request = cls(version=4, topics=[cls.MetadataRequestTopic(version=4, name=None)],
                  allow_auto_topic_creation=False)
    assert null_field(request, 4) == "topics[0].name"       # Name nullable only from v10
    assert null_field(cls(version=4, topics=None, allow_auto_topic_creation=False), 4) is None
    v10 = cls(version=10, topics=[cls.MetadataRequestTopic(version=10, name=None, topic_id=None)],
              allow_auto_topic_creation=False, include_topic_authorized_operations=False)
    assert null_field(v10, 10) is None


def test_string_array_items_may_not_be_null():
    cls = REQUESTS[16]
    request = cls(version=5, states_filter=["Stable", None], types_filter=[])
    assert null_field(request, 5) == "states_filter[1]"
    assert null_field(cls(version=5, states_filter=["Stable"], types_filter=["share"]), 5) is None
