"""Metadata's broker list: the live brokers the cache knows on the request's listener; a
broker that knows none yet (before the controller's first UpdateMetadata) lists itself,
so that librdkafka, which drops every broker an answer leaves out, keeps one to ask."""
from __future__ import annotations

from kafkapy.config.broker import BrokerConfig
from kafkapy.handlers import metadata
from kafkapy.metadata.cache import BrokerEndpoint, MetadataCache
from kafkapy.protocol.messages import REQUESTS
from tests.support.services import context, services

_CONFIG = {"broker.id": "2", "broker.rack": "r2",
           "listeners": "PLAINTEXT://127.0.0.1:19092,INTERNAL://127.0.0.1:19093",
           "advertised.listeners": "PLAINTEXT://client.example:9092,INTERNAL://inner.example:9093",
           "listener.security.protocol.map": "PLAINTEXT:PLAINTEXT,INTERNAL:PLAINTEXT",
           "inter.broker.listener.name": "INTERNAL"}


def _brokers(cache: MetadataCache, listener: str) -> list[tuple]:
    parts = services(node_id=2, config=BrokerConfig.from_properties(_CONFIG), cache=cache)
    request = REQUESTS[3][12](topics=[], allow_auto_topic_creation=False,
                              include_topic_authorized_operations=False)
    response = metadata.handle(context(parts, 3, 12, listener=listener), request)
    return [(b.node_id, b.host, b.port, b.rack) for b in response.brokers]


def test_a_broker_that_knows_no_broker_yet_lists_itself_on_the_requests_listener():
    cache = MetadataCache("cluster", 2, "INTERNAL")
    assert _brokers(cache, "PLAINTEXT") == [(2, "client.example", 9092, "r2")]
    assert _brokers(cache, "INTERNAL") == [(2, "inner.example", 9093, "r2")]


def test_once_the_cache_knows_brokers_it_lists_them_and_only_them():
    cache = MetadataCache("cluster", 2, "INTERNAL")
    for node in (3, 1):
        cache.put_broker(BrokerEndpoint(node, f"b{node}", 9093),
                         {"PLAINTEXT": BrokerEndpoint(node, f"b{node}", 9092, "r"),
                          "INTERNAL": BrokerEndpoint(node, f"b{node}", 9093)})
    assert _brokers(cache, "PLAINTEXT") == [(1, "b1", 9092, "r"), (3, "b3", 9092, "r")]
