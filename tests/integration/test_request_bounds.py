"""Requests are bounded as Kafka bounds them: more than 10,000 partitions in one
CreateTopics (or added by one CreatePartitions) is refused at once with POLICY_VIOLATION,
and nothing is created."""
from __future__ import annotations

import pytest
from kafka import KafkaAdminClient
from kafka.admin import NewPartitions, NewTopic
from kafka.errors import PolicyViolationError

from tests.support.broker_process import BrokerProcess


@pytest.fixture(scope="module")
def broker(tmp_path_factory):
    with BrokerProcess(tmp_path_factory.mktemp("bounds") / "logs").start() as b:
        yield b


def test_create_topics_of_100000_partitions_is_refused_at_once(broker):
    admin = KafkaAdminClient(bootstrap_servers=broker.bootstrap, request_timeout_ms=10000)
    try:
        with pytest.raises(PolicyViolationError, match="Excessively large number"):
            admin.create_topics([NewTopic("huge", 100_000, 1)])
        # The cap counts the whole request: two topics of 6,000 are refused too.
        with pytest.raises(PolicyViolationError):
            admin.create_topics([NewTopic("half-a", 6_000, 1), NewTopic("half-b", 6_000, 1)])
        assert not {"huge", "half-a", "half-b"} & set(admin.list_topics())
        admin.create_topics([NewTopic("small", 2, 1)])
        with pytest.raises(PolicyViolationError):
            admin.create_partitions({"small": NewPartitions(2 + 10_001)})
        assert len(admin.describe_topics(["small"])[0]["partitions"]) == 2
    finally:
        admin.close()
