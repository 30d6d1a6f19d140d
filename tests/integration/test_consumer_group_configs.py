"""A consumer group's own configs reach its heartbeats on a real broker: after
IncrementalAlterConfigs sets ``consumer.heartbeat.interval.ms`` on the GROUP resource, a
member's ConsumerGroupHeartbeat answers that interval, while another group keeps the
broker's ``group.consumer.heartbeat.interval.ms``."""
from __future__ import annotations

import pytest

import kafkapy.protocol.consumer_group_apis  # noqa: F401 (registers APIs 68 and 69)
from tests.support.broker_process import BrokerProcess
from tests.support.request_fields import fields
from tests.support.wire import WireClient, until

GROUP_RESOURCE = 32
SET = 0


@pytest.fixture(scope="module")
def wire(tmp_path_factory):
    broker = BrokerProcess(tmp_path_factory.mktemp("group-configs") / "logs",
                           overrides={"offsets.topic.num.partitions": "1",
                                      "group.consumer.heartbeat.interval.ms": "6000",
                                      "group.consumer.max.heartbeat.interval.ms": "15000"}).start()
    client = WireClient(broker.bootstrap, timeout=30)
    created = client.request(19, 7, **fields(19, topics=[dict(
        name="t", num_partitions=2, replication_factor=1, assignments=[], configs=[])],
        timeout_ms=10000, validate_only=False))
    assert created.topics[0].error_code == 0
    yield client
    client.close()
    broker.stop()


def _join(client: WireClient, group: str):
    # as a client does first: FindCoordinator creates __consumer_offsets
    until(lambda: client.request(10, 3, key=group, key_type=0),
          lambda r: r.error_code == 0, timeout=30)

    def once():
        return client.request(68, 1, group_id=group, member_id=f"m-{group}", member_epoch=0,
                              instance_id=None, rack_id=None, rebalance_timeout_ms=30000,
                              subscribed_topic_names=["t"], subscribed_topic_regex=None,
                              server_assignor=None, topic_partitions=[])
    # the coordinator may still be loading its partition
    return until(once, lambda r: r.error_code == 0, timeout=30)


def test_a_group_heartbeat_interval_override_is_answered(wire):
    altered = wire.request(44, 1, **fields(44, resources=[dict(
        resource_type=GROUP_RESOURCE, resource_name="tuned", configs=[dict(
            name="consumer.heartbeat.interval.ms", config_operation=SET, value="7000")])],
        validate_only=False))
    assert [r.error_code for r in altered.responses] == [0]
    assert _join(wire, "tuned").heartbeat_interval_ms == 7000
    assert _join(wire, "plain").heartbeat_interval_ms == 6000
