"""A broker's membership of the cluster: its id and its registration.

Broker id (Kafka's ``getOrGenerateBrokerId``): a configured ``broker.id`` is used as it
is (meta.properties must agree; the log manager checks that).  With ``broker.id=-1`` the
id stored in the log dirs' ``meta.properties`` is reused; with none stored and
``broker.id.generation.enable`` a new one is drawn from ZooKeeper: every draw sets
``/brokers/seqid`` (empty data) and its new data version ``v`` gives the id
``v + reserved.broker.max.id``, so ids are unique cluster-wide and never below the
range users configure.

Registration: the ephemeral ``/brokers/ids/<id>`` with Kafka 3.9's JSON (version 5:
endpoints, listener map, rack, features), byte for byte as a Kafka 3.9 broker writes it
(except ``features``: a Kafka 3.9 ZooKeeper-mode broker registers none, a kafkapy broker its
``SUPPORTED_FEATURES``, as Kafka's BrokerFeatures would write them): Kafka
builds it in a Scala ``collection.mutable.Map`` (a 16-bucket hash table for these <= 9 keys)
and Jackson writes that map in its iteration order, so the keys come in that order
(``paths.mutable_map_order``), not in the order they are added.  (The listener map, a Scala
immutable Map, is ordered by ``paths.encode_broker_registration``.)  The broker epoch is the
czxid of that znode:
every new registration (a restart, a new ZooKeeper session) gets a higher one, which is
how the controller tells a bounced broker from one that never left and how brokers
refuse a controller request meant for an earlier incarnation (STALE_BROKER_EPOCH).
"""
from __future__ import annotations

import json
import socket

from kafkapy.log.meta_properties import read_meta_properties
from kafkapy.metadata import paths
from kafkapy.metadata.ephemeral import claim
from kafkapy.metadata.features import SUPPORTED_FEATURES
from kafkapy.metadata.store import MetadataStoreError, NodeExistsError, NoNodeError


def resolve_broker_id(config, store, log_dirs: list[str]) -> int:
    """This broker's id: configured, else stored in meta.properties, else generated."""
    stored = {meta.node_id for meta in map(read_meta_properties, log_dirs)
              if meta is not None and meta.node_id is not None}
    if len(stored) > 1:
        raise MetadataStoreError(
            f"Failed to match broker.id across log.dirs: found {sorted(stored)} in the "
            f"meta.properties of {', '.join(log_dirs)}")
    configured = config.node_id
    if configured >= 0:
        return configured
    if stored:
        return stored.pop()
    if not config["broker.id.generation.enable"]:
        raise MetadataStoreError("broker.id is -1, no broker.id is stored in the log dirs and "
                                 "broker.id.generation.enable is false: set broker.id")
    return generate_broker_id(store, config["reserved.broker.max.id"])


def generate_broker_id(store, reserved_max_id: int) -> int:
    """Kafka's generateBrokerSequenceId + reserved.broker.max.id."""
    while True:
        try:
            return store.set(paths.BROKER_SEQID, b"").version + reserved_max_id
        except NoNodeError:
            try:
                store.create(paths.BROKER_SEQID, b"", makepath=True)
            except NodeExistsError:     # created concurrently by another broker: set again
                pass


def advertised_endpoints(config) -> list[paths.EndPoint]:
    """Every advertised listener with its security protocol; an empty host is the
    machine's name, as Kafka advertises it."""
    protocols = config.listener_security_protocol_map
    return [paths.EndPoint(name, host if host and host != "0.0.0.0" else socket.getfqdn(),
                           port, protocols[name])
            for name, host, port in config.advertised_listeners]


async def register_broker(store, config, node_id: int, timestamp_ms: int,
                          wait_ms: int) -> int:
    """Create ``/brokers/ids/<id>`` for this session; returns the broker epoch (czxid)."""
    payload = kafka_ordered_registration(paths.encode_broker_registration(
        advertised_endpoints(config), timestamp_ms, rack=config["broker.rack"],
        features=SUPPORTED_FEATURES))
    stat = await claim(store, paths.broker_path(node_id), payload, wait_ms,
                       lambda _data: f" (broker {node_id} is registered by another session)")
    return stat.czxid


def kafka_ordered_registration(payload: bytes) -> bytes:
    """``payload`` (registration JSON) with its top-level keys in Kafka 3.9's order."""
    obj = json.loads(payload)
    # a mutable.Map of these <= 9 keys: 16 buckets
    ordered = {key: obj[key] for key in paths.mutable_map_order(obj, 16)}
    return json.dumps(ordered, separators=(",", ":"), ensure_ascii=False).encode("utf-8")
