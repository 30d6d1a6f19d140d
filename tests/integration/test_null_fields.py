"""A null where Kafka's schema forbids one closes that connection quietly, as Kafka's
parser does: one warning line naming the field, no traceback, nothing else disturbed."""
from __future__ import annotations

import pytest

from kafkapy.handlers import build_registry
from kafkapy.protocol.messages import REQUESTS
from kafkapy.protocol.nullability import null_field
from tests.support.broker_process import BrokerProcess
from tests.support.wire import WireClient


@pytest.fixture(scope="module")
def broker(tmp_path_factory):
    with BrokerProcess(tmp_path_factory.mktemp("nulls") / "logs").start() as b:
        yield b


def _create_topics():
    c = REQUESTS[19]
    return 19, 4, dict(topics=[c.CreatableTopic(version=4, name=None, num_partitions=1,
                                                replication_factor=1, assignments=[],
                                                configs=[])],
                       timeout_ms=1000, validate_only=False), "topics[0].name"


def _produce():
    c = REQUESTS[0]
    data = c.TopicProduceData(version=3, name=None, partition_data=[])
    return 0, 3, dict(transactional_id=None, acks=1, timeout_ms=1000,
                      topic_data=[data]), "topic_data[0].name"


def _join_group():
    return 11, 5, dict(group_id=None, session_timeout_ms=10000, rebalance_timeout_ms=10000,
                       member_id="", group_instance_id=None, protocol_type="consumer",
                       protocols=[]), "group_id"


def _find_coordinator():
    return 10, 2, dict(key=None, key_type=0), "key"


def _metadata():
    # Topics may be null (all topics) from v1, but a topic's Name may not before v10
    c = REQUESTS[3]
    return 3, 4, dict(topics=[c.MetadataRequestTopic(version=4, name=None)],
                      allow_auto_topic_creation=False), "topics[0].name"


def _describe_share_group_offsets():
    # Topics may be null (every topic of the group); a topic's Partitions may not
    c = REQUESTS[90]
    group = c.DescribeShareGroupOffsetsRequestGroup
    topic = group.DescribeShareGroupOffsetsRequestTopic(version=0, topic_name="t",
                                                         partitions=None)
    return 90, 0, dict(groups=[group(version=0, group_id="g", topics=[topic])]), \
        "groups[0].topics[0].partitions"


def _list_groups():
    # an array of strings: Kafka reads no item as null
    return 16, 5, dict(states_filter=[], types_filter=["share", None]), "types_filter[1]"


@pytest.mark.parametrize("case", [_create_topics, _produce, _join_group, _find_coordinator,
                                  _metadata, _describe_share_group_offsets, _list_groups],
                         ids=lambda c: c.__name__.strip("_"))
def test_null_in_non_nullable_field_closes_quietly(broker, case):
    api_key, version, fields, path = case()
    bystander = WireClient(broker.bootstrap)
    client = WireClient(broker.bootstrap)
    try:
        client.send_raw(client.encode(api_key, version, **fields)[1])
        assert client.is_closed()
        assert bystander.request(18, 0).error_code == 0
    finally:
        client.close()
        bystander.close()
    output = broker.output()
    assert "Traceback" not in output, output
    assert f"field={path}" in output, output


def test_every_advertised_request_has_a_null_check_plan():
    for key, spec in build_registry().items():
        for version in range(spec.min_version, spec.max_version + 1):
            request = REQUESTS[key](version=version)
            null_field(request, version)        # compiles and walks without error
