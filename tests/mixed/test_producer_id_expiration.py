"""``producer.id.expiration.ms`` is a dynamic broker config, on Kafka 3.9 and kafkapy alike.

One single-broker cluster of each kind, ``producer.id.expiration.check.interval.ms`` =
500: an idempotent producer writes; DescribeProducers lists it and still does after
several checks (default: 1 day); Kafka's own ``kafka-configs.sh`` sets the cluster
default ``producer.id.expiration.ms=1000``; the producer disappears from DescribeProducers
without a restart.  kafka-configs.sh must accept the change on both kinds.
Skips without Java or Kafka 3.9.
"""
from __future__ import annotations

import time

import pytest

from kafkapy.protocol.messages import REQUESTS
from tests.support.cluster_clients import create_topic, produce_confluent, request
from tests.support.mixed import SINGLE_BROKER_SETTINGS, kafka_tool, wait_for

TOPIC = "pid-expiration"
SETTINGS = dict(SINGLE_BROKER_SETTINGS, **{"producer.id.expiration.check.interval.ms": "500"})


def _producers(m) -> list[int]:
    r = request(m, 1, 61, 0, topics=[REQUESTS[61].TopicRequest(name=TOPIC,
                                                                partition_indexes=[0])])
    [topic] = r.topics
    [part] = topic.partitions
    assert part.error_code == 0, part
    return [p.producer_id for p in part.active_producers]


@pytest.mark.parametrize("kind", ["kafka", "kafkapy"])
def test_dynamic_producer_id_expiration(mixed_factory, kind):
    m = mixed_factory(SETTINGS, name=f"pid-exp-{kind}")
    m.add(1, kind)
    m.launch_all(timeout=120)
    m.wait_ready([1], timeout=120)
    create_topic(m.bootstrap(1), TOPIC, assignment={0: [1]})
    produce_confluent(m.bootstrap(1), TOPIC, {0: [b"a", b"b", b"c"]})
    [pid] = _producers(m)
    time.sleep(2)                       # four expiration checks under the 1-day default
    assert _producers(m) == [pid]
    done = kafka_tool("kafka-configs.sh", "--bootstrap-server", m.bootstrap(1), "--alter",
                      "--entity-type", "brokers", "--entity-default",
                      "--add-config", "producer.id.expiration.ms=1000")
    assert done.returncode == 0, done.stderr[-2000:]
    assert "Completed updating default config for brokers in the cluster." in done.stdout
    wait_for(lambda: _producers(m) == [], 60, lambda: f"producer {pid} expired on {kind}")
