"""DescribeClientQuotas read from quota znodes, compared with Apache Kafka 3.9 reading the
same znodes: both brokers on one ZooKeeper (own chroots), the same quota znodes written into
both, the same filters asked of both, answers compared (entries as sets: Kafka fills them
from hash maps)."""
from __future__ import annotations

import json
import shutil

import pytest

from tests.support.sasl import KAFKA_HOME
from tests.support.side_by_side import side_by_side
from tests.support.wire import WireClient
from tests.support.zookeeper_server import zookeeper_server  # noqa: F401 (fixture)

QUOTAS = {
    "/config/users/alice": {"producer_byte_rate": "1024", "SCRAM-SHA-256": "x"},
    "/config/users/%3Cdefault%3E": {"consumer_byte_rate": "2048"},
    "/config/users/<default>": {"consumer_byte_rate": "4096", "request_percentage": "12.5"},
    "/config/users/alice/clients/app": {"request_percentage": "50"},
    "/config/users/bob%20b": {"SCRAM-SHA-512": "y"},
    "/config/users/bob%20b/clients/<default>": {"producer_byte_rate": "7"},
    "/config/clients/app": {"producer_byte_rate": "10", "unknown": "1"},
    "/config/clients/<default>": {"consumer_byte_rate": "20"},
    "/config/ips/127.0.0.1": {"connection_creation_rate": "5"},
    "/config/ips/<default>": {"connection_creation_rate": "9", "producer_byte_rate": "1"},
}


def _c(entity_type, match_type, match=None):
    return (entity_type, match_type, match)


FILTERS = [
    ([], False), ([], True),
    ([_c("user", 2)], False), ([_c("user", 2)], True),
    ([_c("user", 0, "alice")], False), ([_c("user", 0, "alice")], True),
    ([_c("user", 1)], False), ([_c("user", 1)], True),
    ([_c("client-id", 2)], True), ([_c("client-id", 0, "app")], False),
    ([_c("client-id", 1)], True),
    ([_c("user", 0, "alice"), _c("client-id", 0, "app")], True),
    ([_c("user", 2), _c("client-id", 2)], True),
    ([_c("user", 0, "bob b"), _c("client-id", 1)], True),
    ([_c("user", 0, "nobody")], True),
    ([_c("ip", 2)], False), ([_c("ip", 0, "127.0.0.1")], True), ([_c("ip", 1)], True),
]


def _canonical(response) -> tuple:
    entries = None if response.entries is None else sorted(
        json.dumps([sorted(map(tuple, e[0])), sorted(map(tuple, e[1]))]) for e in response.entries)
    return response.error_code, response.error_message or None, entries


@pytest.mark.skipif(not (KAFKA_HOME / "bin" / "kafka-server-start.sh").exists()
                    or not shutil.which("java"), reason="Kafka 3.9 or java missing")
def test_same_answers_as_kafka(tmp_path, zookeeper_server):  # noqa: F811
    with side_by_side(tmp_path, zookeeper_server, "q") as pair:
        for root in pair.roots.values():
            for path, config in QUOTAS.items():
                pair.zk.create(root + path, json.dumps({"version": 1, "config": config}).encode(),
                               makepath=True)
        conns = {kind: WireClient(broker.bootstrap)
                 for kind, broker in (("kafka", pair.kafka), ("kafkapy", pair.kafkapy))}
        for components, strict in FILTERS:
            answers = {name: _canonical(conn.request(48, 1, components=components, strict=strict))
                       for name, conn in conns.items()}
            assert answers["kafkapy"] == answers["kafka"], (components, strict)
