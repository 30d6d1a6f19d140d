"""Kafka's ZooKeeper-mode znode paths and JSON payloads (Kafka 3.9, ``ZkData``).

Every payload builder returns the
bytes Kafka writes: compact JSON (no spaces, UTF-8, non-ASCII unescaped as
Jackson writes it), keys in the order Kafka's Scala maps iterate (see "Key order"
below: the payloads are byte-equal to Kafka's, checked against Kafka's own encoders in
``tests/mixed/test_znode_formats.py``), numbers
that Kafka writes as strings (timestamps, producer id block bounds, the cluster
id's version) as strings.  Readers never depend on key order; every parser
accepts what Kafka accepts (older versions included) and raises
``ZNodeDataError`` (a ``ValueError``) naming the payload otherwise.

Paths (all relative to the chroot of ``zookeeper.connect``):

=====================================================  ============================
``/cluster/id``                                        cluster id (persistent)
``/controller``                                        controller (ephemeral)
``/controller_epoch``                                  decimal text
``/brokers/ids/<id>``                                  registration (ephemeral)
``/brokers/topics/<t>``                                replica assignment
``/brokers/topics/<t>/partitions/<p>/state``           leader/ISR; zk version = partition epoch
``/brokers/seqid``                                     empty; zk version -> generated broker ids
``/config/<type>/<name>``                              dynamic config
``/config/changes/config_change_<seq>``                config change notification
``/admin/delete_topics/<t>``                           empty; topic deletion request
``/isr_change_notification/isr_change_<seq>``          ISR change notification
``/log_dir_event_notification/log_dir_event_<seq>``    log dir failure notification
``/latest_producer_id_block``                          producer id block
``/feature``                                           finalized features (KIP-584)
=====================================================  ============================
"""
from __future__ import annotations

import functools
import json
import re
from dataclasses import dataclass, field
from typing import Any, Iterable, Mapping, Sequence

from kafkapy.jvm import (
    champ_improve, hashmap_spread, java_hash_order, scala_mutable_hash_order, string_hash)
from kafkapy.metadata.leader_and_isr import LEADER_RECOVERED, LEADER_RECOVERING, LeaderAndIsr
from kafkapy.metadata.store import MetadataStore, NodeExistsError, NoNodeError, Stat
from kafkapy.protocol.topic_partition import TopicPartition

# --- paths ------------------------------------------------------------------------

CLUSTER = "/cluster"
CLUSTER_ID = "/cluster/id"
CONTROLLER = "/controller"
CONTROLLER_EPOCH = "/controller_epoch"
BROKERS = "/brokers"
BROKER_IDS = "/brokers/ids"
BROKER_TOPICS = "/brokers/topics"
BROKER_SEQID = "/brokers/seqid"
CONFIG = "/config"
CONFIG_CHANGES = "/config/changes"
CONFIG_CHANGE_PREFIX = "config_change_"
CONFIG_CHANGE_SEQ_PATH = f"{CONFIG_CHANGES}/{CONFIG_CHANGE_PREFIX}"
ADMIN = "/admin"
ADMIN_DELETE_TOPICS = "/admin/delete_topics"
ADMIN_REASSIGN_PARTITIONS = "/admin/reassign_partitions"
ADMIN_PREFERRED_REPLICA_ELECTION = "/admin/preferred_replica_election"
ISR_CHANGE_NOTIFICATION = "/isr_change_notification"
ISR_CHANGE_PREFIX = "isr_change_"
ISR_CHANGE_SEQ_PATH = f"{ISR_CHANGE_NOTIFICATION}/{ISR_CHANGE_PREFIX}"
LOG_DIR_EVENT_NOTIFICATION = "/log_dir_event_notification"
LOG_DIR_EVENT_PREFIX = "log_dir_event_"
LOG_DIR_EVENT_SEQ_PATH = f"{LOG_DIR_EVENT_NOTIFICATION}/{LOG_DIR_EVENT_PREFIX}"
LATEST_PRODUCER_ID_BLOCK = "/latest_producer_id_block"
CONSUMERS = "/consumers"
FEATURE = "/feature"
DELEGATION_TOKEN = "/delegation_token"
KAFKA_ACL = "/kafka-acl"
KAFKA_ACL_CHANGES = "/kafka-acl-changes"
KAFKA_ACL_EXTENDED = "/kafka-acl-extended"
KAFKA_ACL_EXTENDED_CHANGES = "/kafka-acl-extended-changes"

CONFIG_TYPE_TOPIC = "topics"
CONFIG_TYPE_CLIENT = "clients"
CONFIG_TYPE_USER = "users"
CONFIG_TYPE_BROKER = "brokers"
CONFIG_TYPE_IP = "ips"
#: ``ConfigType.ALL`` - the entity types with a ``/config/<type>`` node.
CONFIG_TYPES = (CONFIG_TYPE_TOPIC, CONFIG_TYPE_CLIENT, CONFIG_TYPE_USER,
                CONFIG_TYPE_BROKER, CONFIG_TYPE_IP)
#: Entity name of cluster-wide defaults, e.g. ``/config/brokers/<default>``.
DEFAULT_ENTITY = "<default>"

#: ``ZkData.PersistentZkPaths``: created (if missing) by every broker at startup.
PERSISTENT_PATHS = (
    CONSUMERS,
    BROKER_IDS,
    BROKER_TOPICS,
    CONFIG_CHANGES,
    ADMIN_DELETE_TOPICS,
    BROKER_SEQID,
    ISR_CHANGE_NOTIFICATION,
    LATEST_PRODUCER_ID_BLOCK,
    LOG_DIR_EVENT_NOTIFICATION,
) + tuple(f"{CONFIG}/{t}" for t in CONFIG_TYPES)

#: The controller epoch a fresh cluster's ``/controller_epoch`` starts at.
INITIAL_CONTROLLER_EPOCH = 0
#: Producer ids are handed out in blocks of this many.
PRODUCER_ID_BLOCK_SIZE = 1000
#: ``reserved.broker.max.id`` default: generated broker ids start above it.
DEFAULT_RESERVED_BROKER_MAX_ID = 1000


def broker_path(broker_id: int) -> str:
    return f"{BROKER_IDS}/{int(broker_id)}"


def topic_path(topic: str) -> str:
    return f"{BROKER_TOPICS}/{topic}"


def topic_partitions_path(topic: str) -> str:
    return f"{BROKER_TOPICS}/{topic}/partitions"


def topic_partition_path(topic: str, partition: int) -> str:
    return f"{BROKER_TOPICS}/{topic}/partitions/{int(partition)}"


def partition_state_path(topic: str, partition: int) -> str:
    return f"{BROKER_TOPICS}/{topic}/partitions/{int(partition)}/state"


def config_entity_type_path(entity_type: str) -> str:
    return f"{CONFIG}/{entity_type}"


def config_entity_path(entity_type: str, entity_name: str) -> str:
    return f"{CONFIG}/{entity_type}/{entity_name}"


def topic_config_path(topic: str) -> str:
    return config_entity_path(CONFIG_TYPE_TOPIC, topic)


def broker_config_path(broker_id: int | str) -> str:
    """``/config/brokers/<id>``, or ``/config/brokers/<default>`` for ``DEFAULT_ENTITY``."""
    return config_entity_path(CONFIG_TYPE_BROKER, str(broker_id))


def delete_topic_path(topic: str) -> str:
    return f"{ADMIN_DELETE_TOPICS}/{topic}"


def sequence_number(name_or_path: str, prefix: str = "") -> int:
    """The counter of a sequential node: ``config_change_0000000007`` -> 7."""
    name = name_or_path.rsplit("/", 1)[-1]
    if prefix and name.startswith(prefix):
        name = name[len(prefix):]
    digits = name[-10:]
    if len(digits) != 10 or not digits.isdigit():
        raise ValueError(f"not a sequential node name: {name_or_path!r}")
    return int(digits)


# --- JSON helpers ---------------------------------------------------------------

class ZNodeDataError(ValueError):
    """A znode payload that Kafka's parser would reject."""


def _dumps(obj: Any) -> bytes:
    return json.dumps(obj, separators=(",", ":"), ensure_ascii=False).encode("utf-8")


# Key order.  Kafka's encoders build Scala 2.13 maps and Jackson writes them in the map's
# iteration order, so a byte-equal payload needs that order (readers never care):
#  - ``mutable.HashMap``: buckets in index order (improved hash & (capacity - 1), the
#    improved hash being ``h ^ (h >>> 16)`` of Java's String.hashCode), each bucket's list
#    ascending by signed improved hash (``put0`` keeps it sorted);
#  - ``immutable.HashMap`` (CHAMP, a literal ``Map`` of more than 4 entries): the root
#    node's entries by the low 5 bits of ``Hashing.improve(h)``, then its sub-nodes (keys
#    sharing those bits) in the same order, recursively on the next 5 bits.

def _table_size_for(capacity: int) -> int:
    """Scala 2.13 ``mutable.HashMap.tableSizeFor``."""
    c = max(capacity - 1, 4)
    return min((1 << (c.bit_length() - 1)) * 2, 1 << 30)


def mutable_map_capacity(initial_entries: int, added: int = 0) -> int:
    """The table length of a Scala ``mutable.HashMap`` built by ``mutable.Map(<n entries>)``
    (``HashMap.from``: sized for n) and then given ``added`` more keys one by one with
    ``+=`` (``put0`` doubles the table when size + 1 reaches 0.75 * length)."""
    if initial_entries > 0:
        capacity = _table_size_for(int((initial_entries + 1) / 0.75))
    else:
        capacity = _table_size_for(16)
    size = initial_entries
    for _ in range(added):
        if size + 1 >= int(capacity * 0.75):
            capacity *= 2
        size += 1
    return capacity


def mutable_map_order(keys: Iterable[str], capacity: int) -> list[str]:
    """Iteration order of a Scala 2.13 ``mutable.HashMap`` of ``capacity`` buckets."""
    return scala_mutable_hash_order(keys, string_hash, capacity)


def immutable_map_order(keys: Iterable[str]) -> list[str]:
    """Iteration order of a Scala 2.13 ``immutable.HashMap`` (CHAMP) holding ``keys``."""
    return list(_immutable_map_order(tuple(keys)))


@functools.lru_cache(maxsize=256)
def _immutable_map_order(keys: tuple[str, ...]) -> tuple[str, ...]:
    # Memoized: a payload's key set is one of a few (a topic's 10,000 partition states
    # share one), and the order costs a String.hashCode per key.
    hashed = [(champ_improve(string_hash(k)), k) for k in keys]

    def walk(entries: list[tuple[int, str]], shift: int) -> list[str]:
        if shift >= 35:                 # full hash collision: kept in insertion order
            return [k for _, k in entries]
        slots: dict[int, list[tuple[int, str]]] = {}
        for h, k in entries:
            slots.setdefault((h >> shift) & 0x1F, []).append((h, k))
        payload = [v[0][1] for _, v in sorted(slots.items()) if len(v) == 1]
        subnodes = [walk(v, shift + 5) for _, v in sorted(slots.items()) if len(v) > 1]
        return payload + [k for sub in subnodes for k in sub]
    return tuple(walk(hashed, 0))


def properties_order(keys: Iterable[str]) -> list[str]:
    """Iteration order of a ``java.util.Properties`` (Java 9+: an internal
    ``ConcurrentHashMap``, initial table 16) after ``setProperty`` of ``keys`` in this
    order: bins by ``spread(hash) & (n - 1)`` ascending, each bin in insertion order
    (appended at its tail); at 3/4 full the table doubles and ``transfer`` splits each
    bin, keeping its last run of same-side nodes in order and putting the nodes before
    that run in front of it in reverse (as ConcurrentHashMap.transfer does)."""
    def spread(key: str) -> int:
        return hashmap_spread(string_hash(key)) & 0x7FFFFFFF
    n = 16
    table: list[list[tuple[int, str]]] = [[] for _ in range(n)]
    count = 0
    for key in keys:
        h = spread(key)
        bin_ = table[h & (n - 1)]
        if any(k == key for _, k in bin_):
            continue
        bin_.append((h, key))
        count += 1
        if count >= n - (n >> 2):           # sizeCtl = 0.75 n
            table, n = _chm_transfer(table, n), n * 2
    return [k for bin_ in table for _, k in bin_]


def _chm_transfer(table: list[list[tuple[int, str]]], n: int) -> list[list[tuple[int, str]]]:
    out: list[list[tuple[int, str]]] = [[] for _ in range(2 * n)]
    for i, bin_ in enumerate(table):
        if not bin_:
            continue
        last_run, run_bit = 0, bin_[0][0] & n
        for j in range(1, len(bin_)):
            if bin_[j][0] & n != run_bit:
                run_bit, last_run = bin_[j][0] & n, j
        low = bin_[last_run:] if run_bit == 0 else []
        high = bin_[last_run:] if run_bit != 0 else []
        for node in bin_[:last_run]:        # prepended one by one
            if node[0] & n == 0:
                low = [node] + low
            else:
                high = [node] + high
        out[i], out[i + n] = low, high
    return out


def _ordered(obj: Mapping[str, Any], order: list[str]) -> dict[str, Any]:
    return {k: obj[k] for k in order}


def _loads(data: bytes, what: str) -> dict:
    try:
        obj = json.loads(bytes(data).decode("utf-8"))
    except (UnicodeDecodeError, ValueError) as e:
        raise ZNodeDataError(f"cannot parse {what}: {e}: {bytes(data)[:200]!r}") from None
    if not isinstance(obj, dict):
        raise ZNodeDataError(f"{what} is not a JSON object: {bytes(data)[:200]!r}")
    return obj


def _int(obj: Mapping, key: str, what: str, *, as_string_ok: bool = False) -> int:
    v = obj.get(key)
    if isinstance(v, bool):
        raise ZNodeDataError(f"{what}: {key!r} is not an integer: {v!r}")
    if isinstance(v, int):
        return v
    if as_string_ok and isinstance(v, str):
        try:
            return int(v)
        except ValueError:
            pass
    raise ZNodeDataError(f"{what}: {key!r} missing or not an integer: {v!r}")


def _int_list(v: Any, what: str) -> list[int]:
    if not isinstance(v, list) or not all(isinstance(x, int) and not isinstance(x, bool)
                                          for x in v):
        raise ZNodeDataError(f"{what}: expected a list of integers, got {v!r}")
    return list(v)


# --- /cluster/id ------------------------------------------------------------------

def encode_cluster_id(cluster_id: str) -> bytes:
    """``{"version":"1","id":"<cluster id>"}`` (the version is a string)."""
    return _dumps({"version": "1", "id": cluster_id})


def decode_cluster_id(data: bytes) -> str:
    obj = _loads(data, "cluster id")
    cid = obj.get("id")
    if not isinstance(cid, str):
        raise ZNodeDataError(f"cluster id: missing \"id\": {bytes(data)!r}")
    return cid


# --- /controller, /controller_epoch ---------------------------------------------

@dataclass(frozen=True, slots=True)
class ControllerRegistration:
    broker_id: int
    timestamp_ms: int | None = None
    kraft_controller_epoch: int | None = None   # None in version 1 payloads
    version: int = 2


def encode_controller(broker_id: int, timestamp_ms: int, kraft_controller_epoch: int = -1) -> bytes:
    """``{"version":2,"brokerid":1,"timestamp":"...","kraftControllerEpoch":-1}``."""
    return _dumps({"version": 2, "brokerid": int(broker_id), "timestamp": str(int(timestamp_ms)),
                   "kraftControllerEpoch": int(kraft_controller_epoch)})


def decode_controller(data: bytes) -> ControllerRegistration:
    what = "controller registration"
    obj = _loads(data, what)
    ts = obj.get("timestamp")
    try:
        ts_ms = int(ts) if ts is not None else None
    except (TypeError, ValueError):
        ts_ms = None
    kraft = obj.get("kraftControllerEpoch")
    return ControllerRegistration(
        broker_id=_int(obj, "brokerid", what),
        timestamp_ms=ts_ms,
        kraft_controller_epoch=kraft if isinstance(kraft, int) and not isinstance(kraft, bool) else None,
        version=_int(obj, "version", what) if "version" in obj else 1,
    )


def encode_controller_epoch(epoch: int) -> bytes:
    """Plain decimal text, e.g. ``b"5"``."""
    return str(int(epoch)).encode("ascii")


def decode_controller_epoch(data: bytes) -> int:
    try:
        return int(bytes(data).decode("ascii").strip())
    except (UnicodeDecodeError, ValueError):
        raise ZNodeDataError(f"controller epoch is not an integer: {bytes(data)[:50]!r}") from None


# --- /brokers/ids/<id> ------------------------------------------------------------

SECURITY_PROTOCOLS = ("PLAINTEXT", "SSL", "SASL_PLAINTEXT", "SASL_SSL")
_DEFAULT_PROTOCOL_MAP = {p: p for p in SECURITY_PROTOCOLS}
_ENDPOINT_RE = re.compile(r"^(.*)://\[?([0-9a-zA-Z\-%._:]*)\]?:(-?[0-9]+)$")


@dataclass(frozen=True, slots=True)
class EndPoint:
    """One advertised listener: ``PLAINTEXT://host:9092``."""

    listener_name: str
    host: str | None
    port: int
    security_protocol: str

    def connection_string(self) -> str:
        if self.host is None:
            hostport = f":{self.port}"
        elif ":" in self.host:                      # IPv6 literal
            hostport = f"[{self.host}]:{self.port}"
        else:
            hostport = f"{self.host}:{self.port}"
        return f"{self.listener_name}://{hostport}"


@dataclass(frozen=True, slots=True)
class BrokerRegistration:
    broker_id: int
    endpoints: tuple[EndPoint, ...]
    rack: str | None = None
    jmx_port: int = -1
    #: feature name -> (min_version, max_version)
    features: Mapping[str, tuple[int, int]] = field(default_factory=dict)
    timestamp_ms: int | None = None
    version: int = 5

    def endpoint(self, listener_name: str) -> EndPoint | None:
        for ep in self.endpoints:
            if ep.listener_name == listener_name:
                return ep
        return None


def encode_broker_registration(endpoints: Sequence[EndPoint], timestamp_ms: int, *,
                               rack: str | None = None, jmx_port: int = -1,
                               features: Mapping[str, tuple[int, int]] | None = None,
                               version: int = 5) -> bytes:
    """The broker's ``/brokers/ids/<id>`` payload (version 5 by default).

    ``host``/``port`` are the first PLAINTEXT endpoint (null/-1 if none); ``rack``
    only if set (v3+), the listener/protocol map from v4, ``features`` from v5.
    """
    plain = next((e for e in endpoints if e.security_protocol == "PLAINTEXT"), None)
    obj: dict[str, Any] = {
        "version": version,
        "host": plain.host if plain else None,
        "port": plain.port if plain else -1,
        "jmx_port": jmx_port,
        "timestamp": str(int(timestamp_ms)),
        "endpoints": [e.connection_string() for e in endpoints],
    }
    if version >= 4:
        # Kafka: endpoints.map(...).toMap, an immutable Map (insertion order up to 4
        # entries, CHAMP order beyond)
        pmap = {e.listener_name: e.security_protocol for e in endpoints}
        if len(pmap) > 4:
            pmap = _ordered(pmap, immutable_map_order(pmap))
        obj["listener_security_protocol_map"] = pmap
    if rack is not None and version >= 3:
        obj["rack"] = rack
    if version >= 5:
        # Kafka: Features.toMap, java.util.HashMaps (of the features, of each range)
        features = features or {}
        obj["features"] = {name: _ordered({"min_version": int(features[name][0]),
                                           "max_version": int(features[name][1])},
                                          _RANGE_KEY_ORDER)
                           for name in java_hash_order(features, string_hash)}
    return _dumps(obj)


_RANGE_KEY_ORDER = java_hash_order(["min_version", "max_version"], string_hash)


def parse_endpoint(s: str, protocol_map: Mapping[str, str] | None = None) -> EndPoint:
    """``"SSL://h:9093"`` -> ``EndPoint``; the protocol comes from ``protocol_map``
    or, without one, the listener name must be a security protocol (as in Kafka)."""
    m = _ENDPOINT_RE.match(s)
    if not m:
        raise ZNodeDataError(f"unable to parse endpoint {s!r}")
    listener, host, port = m.group(1), m.group(2), int(m.group(3))
    pmap = protocol_map if protocol_map is not None else _DEFAULT_PROTOCOL_MAP
    protocol = pmap.get(listener)
    if protocol is None:
        raise ZNodeDataError(f"no security protocol for listener {listener!r} in {s!r}")
    return EndPoint(listener, host or None, port, protocol)


def decode_broker_registration(broker_id: int, data: bytes) -> BrokerRegistration:
    what = f"registration of broker {broker_id}"
    obj = _loads(data, what)
    version = _int(obj, "version", what)
    if version < 1:
        raise ZNodeDataError(f"unsupported version of {what}: {bytes(data)!r}")
    jmx_port = _int(obj, "jmx_port", what) if "jmx_port" in obj else -1
    if version == 1:
        host = obj.get("host")
        endpoints: tuple[EndPoint, ...] = (
            EndPoint("PLAINTEXT", host, _int(obj, "port", what), "PLAINTEXT"),)
    else:
        pmap = obj.get("listener_security_protocol_map")
        if pmap is not None and not (isinstance(pmap, dict)
                                     and all(isinstance(v, str) for v in pmap.values())):
            raise ZNodeDataError(f"{what}: bad listener_security_protocol_map {pmap!r}")
        eps = obj.get("endpoints")
        if not isinstance(eps, list) or not all(isinstance(e, str) for e in eps):
            raise ZNodeDataError(f"{what}: bad endpoints {eps!r}")
        endpoints = tuple(parse_endpoint(e, pmap) for e in eps)
    rack = obj.get("rack")
    features: dict[str, tuple[int, int]] = {}
    raw_features = obj.get("features") or {}
    if not isinstance(raw_features, dict):
        raise ZNodeDataError(f"{what}: bad features {raw_features!r}")
    for name, rng in raw_features.items():
        if not isinstance(rng, dict):
            raise ZNodeDataError(f"{what}: bad feature {name!r}: {rng!r}")
        features[name] = (_int(rng, "min_version", what), _int(rng, "max_version", what))
    ts = obj.get("timestamp")
    try:
        ts_ms = int(ts) if ts is not None else None
    except (TypeError, ValueError):
        ts_ms = None
    return BrokerRegistration(broker_id=int(broker_id), endpoints=endpoints,
                              rack=rack if isinstance(rack, str) else None,
                              jmx_port=jmx_port, features=features,
                              timestamp_ms=ts_ms, version=version)


# --- /brokers/topics/<t> ------------------------------------------------------------

@dataclass(frozen=True, slots=True)
class TopicAssignment:
    """Replica assignment of a topic; the first replica is the preferred leader."""

    partitions: Mapping[int, list[int]]
    topic_id: str | None = None
    adding_replicas: Mapping[int, list[int]] = field(default_factory=dict)
    removing_replicas: Mapping[int, list[int]] = field(default_factory=dict)
    version: int = 3


def encode_topic_assignment(partitions: Mapping[int, Sequence[int]], topic_id: str | None = None,
                            adding_replicas: Mapping[int, Sequence[int]] | None = None,
                            removing_replicas: Mapping[int, Sequence[int]] | None = None) -> bytes:
    """Version 3, byte for byte as Kafka 3.9's ``TopicZNode.encode``, e.g.
    ``{"partitions":{"0":[1,2]},"topic_id":"..","adding_replicas":{},"removing_replicas":{},"version":3}``.

    ``topic_id`` is left out when None (as Kafka does); partitions with empty
    adding/removing lists are left out of those maps.  Key order: the outer map is
    ``mutable.Map`` of 4 entries (+ ``topic_id``), each partition map a ``mutable.Map``
    filled from empty (see ``mutable_map_order``).
    """
    obj: dict[str, Any] = {
        "version": 3,
        "partitions": _kafka_partition_map(
            {p: reps for p, reps in partitions.items()}, keep_empty=True),
        "adding_replicas": _kafka_partition_map(adding_replicas),
        "removing_replicas": _kafka_partition_map(removing_replicas),
    }
    if topic_id is not None:
        obj["topic_id"] = topic_id
    return _dumps(_ordered(obj, mutable_map_order(obj, mutable_map_capacity(4, len(obj) - 4))))


def _kafka_partition_map(m: Mapping[int, Sequence[int]] | None, *,
                         keep_empty: bool = False) -> dict[str, list[int]]:
    plain = {str(int(p)): [int(r) for r in reps]
             for p, reps in (m or {}).items() if reps or keep_empty}
    return _ordered(plain, mutable_map_order(plain, mutable_map_capacity(0, len(plain))))


def decode_topic_assignment(data: bytes, topic: str = "?") -> TopicAssignment:
    what = f"assignment of topic {topic}"
    obj = _loads(data, what)

    def pmap(key: str) -> dict[int, list[int]]:
        raw = obj.get(key) or {}
        if not isinstance(raw, dict):
            raise ZNodeDataError(f"{what}: {key!r} is not an object")
        try:
            return {int(p): _int_list(r, what) for p, r in raw.items()}
        except ValueError as e:
            raise ZNodeDataError(f"{what}: bad {key!r}: {e}") from None

    tid = obj.get("topic_id")
    if tid is not None and not isinstance(tid, str):
        raise ZNodeDataError(f"{what}: bad topic_id {tid!r}")
    return TopicAssignment(partitions=dict(sorted(pmap("partitions").items())), topic_id=tid,
                           adding_replicas=pmap("adding_replicas"),
                           removing_replicas=pmap("removing_replicas"),
                           version=_int(obj, "version", what) if "version" in obj else 1)


# --- /brokers/topics/<t>/partitions/<p>/state --------------------------------------

def encode_partition_state(leader: int, leader_epoch: int, isr: Sequence[int],
                           controller_epoch: int,
                           leader_recovery_state: int = LEADER_RECOVERED) -> bytes:
    """Byte for byte as Kafka 3.9's ``TopicPartitionStateZNode.encode``:
    ``{"controller_epoch":5,"leader":1,"version":1,"leader_epoch":4,"isr":[1,2,3]}``, plus
    ``"leader_recovery_state":1`` (between version and leader_epoch) only while
    recovering.  Key order: an immutable ``Map`` of 5 (6) entries (``immutable_map_order``)."""
    obj: dict[str, Any] = {"version": 1, "leader": int(leader), "leader_epoch": int(leader_epoch),
                           "controller_epoch": int(controller_epoch),
                           "isr": [int(b) for b in isr]}
    if leader_recovery_state != LEADER_RECOVERED:
        obj["leader_recovery_state"] = int(leader_recovery_state)
    return _dumps(_ordered(obj, immutable_map_order(obj)))


def decode_partition_state(data: bytes, stat: Stat | None = None) -> LeaderAndIsr:
    """The state znode's ``LeaderAndIsr``; its partition epoch is ``stat``'s version
    (0 without a stat)."""
    what = "partition state"
    obj = _loads(data, what)
    lrs = obj.get("leader_recovery_state", LEADER_RECOVERED)
    if lrs not in (LEADER_RECOVERED, LEADER_RECOVERING):
        raise ZNodeDataError(f"{what}: bad leader_recovery_state {lrs!r}")
    return LeaderAndIsr(leader=_int(obj, "leader", what),
                        leader_epoch=_int(obj, "leader_epoch", what),
                        isr=tuple(_int_list(obj.get("isr"), what)),
                        controller_epoch=_int(obj, "controller_epoch", what),
                        partition_epoch=stat.version if stat is not None else 0,
                        leader_recovery_state=lrs)


# --- /config/<type>/<name>, /config/changes ---------------------------------------

def encode_entity_config(config: Mapping[str, Any]) -> bytes:
    """``{"version":1,"config":{"key":"value"}}``; every value written as a string.

    As Kafka's ``ConfigEntityZNode.encode`` writes a ``Properties``: the keys in its
    iteration order (``properties_order``) for ``config``'s order taken as the order the
    keys were set."""
    plain = {str(k): str(v) for k, v in config.items()}
    return _dumps({"version": 1, "config": _ordered(plain, properties_order(plain))})


def decode_entity_config(data: bytes | None) -> dict[str, str]:
    """The config map; empty for empty/null data or a payload without ``config``."""
    if not data:
        return {}
    obj = _loads(data, "entity config")
    cfg = obj.get("config")
    if not isinstance(cfg, dict):
        return {}
    out: dict[str, str] = {}
    for k, v in cfg.items():
        if not isinstance(v, str):
            raise ZNodeDataError(f"entity config: value of {k!r} is not a string: {v!r}")
        out[k] = v
    return out


def encode_config_change(entity_path: str) -> bytes:
    """``{"version":2,"entity_path":"topics/t"}`` (entity path ``<type>/<name>``)."""
    return _dumps({"version": 2, "entity_path": entity_path})


def decode_config_change(data: bytes) -> str:
    """The entity path; version 1 (``entity_type``/``entity_name``) is converted."""
    what = "config change notification"
    obj = _loads(data, what)
    version = obj.get("version")
    if version == 1:
        et, en = obj.get("entity_type"), obj.get("entity_name")
        if not isinstance(et, str) or not isinstance(en, str):
            raise ZNodeDataError(f"{what}: bad version 1 payload {bytes(data)!r}")
        return f"{et}/{en}"
    if version == 2 and isinstance(obj.get("entity_path"), str):
        return obj["entity_path"]
    raise ZNodeDataError(f"{what}: unsupported payload {bytes(data)!r}")


# --- notifications ----------------------------------------------------------------

def encode_isr_change(partitions: Iterable[TopicPartition]) -> bytes:
    """``{"version":1,"partitions":[{"topic":"t","partition":0}]}``."""
    return _dumps({"version": 1, "partitions": [{"topic": t, "partition": int(p)}
                                                for t, p in partitions]})


def _decode_partition_list(data: bytes, what: str) -> list[dict]:
    obj = _loads(data, what)
    parts = obj.get("partitions")
    if not isinstance(parts, list) or not all(isinstance(p, dict) for p in parts):
        raise ZNodeDataError(f"{what}: bad partitions {parts!r}")
    for p in parts:
        if not isinstance(p.get("topic"), str):
            raise ZNodeDataError(f"{what}: bad topic in {p!r}")
        _int(p, "partition", what)
    return parts


def decode_isr_change(data: bytes) -> list[TopicPartition]:
    return [TopicPartition(p["topic"], p["partition"])
            for p in _decode_partition_list(data, "ISR change notification")]


LOG_DIR_FAILURE_EVENT = 1


def encode_log_dir_event(broker_id: int) -> bytes:
    """``{"version":1,"broker":1,"event":1}`` (1 = log dir failure)."""
    return _dumps({"version": 1, "broker": int(broker_id), "event": LOG_DIR_FAILURE_EVENT})


def decode_log_dir_event(data: bytes) -> int:
    """The broker id of a log dir event notification."""
    return _int(_loads(data, "log dir event notification"), "broker", "log dir event notification")


# --- admin requests ------------------------------------------------------------

def encode_reassign_partitions(assignment: Mapping[TopicPartition, Sequence[int]]) -> bytes:
    """``{"version":1,"partitions":[{"topic":"t","partition":0,"replicas":[1,2]}]}``."""
    return _dumps({"version": 1, "partitions": [
        {"topic": t, "partition": int(p), "replicas": [int(r) for r in reps]}
        for (t, p), reps in assignment.items()]})


def decode_reassign_partitions(data: bytes) -> dict[TopicPartition, list[int]]:
    what = "partition reassignment"
    return {TopicPartition(p["topic"], p["partition"]): _int_list(p.get("replicas"), what)
            for p in _decode_partition_list(data, what)}


def encode_preferred_replica_election(partitions: Iterable[TopicPartition]) -> bytes:
    """``{"version":1,"partitions":[{"topic":"t","partition":0}]}``."""
    return _dumps({"version": 1, "partitions": [{"topic": t, "partition": int(p)}
                                                for t, p in partitions]})


def decode_preferred_replica_election(data: bytes) -> list[TopicPartition]:
    return [TopicPartition(p["topic"], p["partition"])
            for p in _decode_partition_list(data, "preferred replica election")]


# --- /latest_producer_id_block ---------------------------------------------------

@dataclass(frozen=True, slots=True)
class ProducerIdBlock:
    broker: int
    block_start: int
    block_end: int          # inclusive

    @property
    def size(self) -> int:
        return self.block_end - self.block_start + 1


def encode_producer_id_block(broker: int, block_start: int, block_end: int) -> bytes:
    """``{"version":1,"broker":1,"block_start":"0","block_end":"999"}`` (bounds as strings)."""
    return _dumps({"version": 1, "broker": int(broker), "block_start": str(int(block_start)),
                   "block_end": str(int(block_end))})


def decode_producer_id_block(data: bytes) -> ProducerIdBlock:
    what = "producer id block"
    obj = _loads(data, what)
    return ProducerIdBlock(broker=_int(obj, "broker", what),
                           block_start=_int(obj, "block_start", what, as_string_ok=True),
                           block_end=_int(obj, "block_end", what, as_string_ok=True))


# --- /feature ---------------------------------------------------------------------

FEATURE_ZNODE_V1 = 1            # with min_version_level (before IBP 3.3-IV0)
FEATURE_ZNODE_V2 = 2
FEATURE_DISABLED = 0
FEATURE_ENABLED = 1


@dataclass(frozen=True, slots=True)
class FeatureZNode:
    """Kafka's ``FeatureZNode``: the cluster's finalized features (name -> level).
    ``epoch`` is the znode's zk version (Kafka's finalized-features epoch)."""

    version: int
    status: int
    features: Mapping[str, int] = field(default_factory=dict)
    epoch: int = -1

    def same_content(self, other: "FeatureZNode") -> bool:
        return (self.version, self.status, dict(self.features)) == (
            other.version, other.status, dict(other.features))


def feature_znode_version(ibp_at_least_3_3: bool) -> int:
    """``FeatureZNode.apply``: v2 from IBP 3.3-IV0 on, else v1."""
    return FEATURE_ZNODE_V2 if ibp_at_least_3_3 else FEATURE_ZNODE_V1


def encode_feature_znode(version: int, status: int, features: Mapping[str, int]) -> bytes:
    """Byte for byte as Kafka 3.9's ``FeatureZNode.encode``:
    ``{"features":{},"version":2,"status":1}`` (a ``mutable.Map`` of 3 entries);
    a feature is ``{"max_version_level":n}`` (v1 also ``"min_version_level":n``)."""
    def levels(level: int) -> dict[str, int]:
        if version == FEATURE_ZNODE_V1:
            return {"max_version_level": int(level), "min_version_level": int(level)}
        return {"max_version_level": int(level)}
    names = list(features)
    # Scala's immutable Map keeps insertion order up to 4 entries (Map1..Map4).
    if len(names) > 4:
        names = immutable_map_order(names)
    obj = {"version": int(version), "status": int(status),
           "features": {name: levels(features[name]) for name in names}}
    return _dumps(_ordered(obj, mutable_map_order(obj, mutable_map_capacity(3))))


def decode_feature_znode(data: bytes, stat: Stat | None = None) -> FeatureZNode:
    """Kafka's ``FeatureZNode.decode``: version 1 or 2, a status of 0 or 1 and a
    ``features`` object are required (``ZNodeDataError`` otherwise)."""
    what = "feature znode"
    obj = _loads(data, what)
    version = _int(obj, "version", what)
    if version not in (FEATURE_ZNODE_V1, FEATURE_ZNODE_V2):
        raise ZNodeDataError(f"Unsupported version: {version} of feature information: "
                             f"{bytes(data)!r}")
    status = obj.get("status")
    if status not in (FEATURE_DISABLED, FEATURE_ENABLED) or isinstance(status, bool):
        raise ZNodeDataError(f"Malformed status: {status!r} found in feature information: "
                             f"{bytes(data)!r}")
    raw = obj.get("features")
    if not isinstance(raw, dict):
        raise ZNodeDataError(f"Features map can not be absent in: {bytes(data)!r}")
    features: dict[str, int] = {}
    for name, levels in raw.items():
        if not isinstance(levels, dict):
            raise ZNodeDataError(f"{what}: bad feature {name!r}: {levels!r}")
        features[name] = _int(levels, "max_version_level", what)
    return FeatureZNode(version, status, features,
                        epoch=stat.version if stat is not None else -1)


# --- store helpers --------------------------------------------------------------

def ensure_base_paths(store: MetadataStore) -> None:
    """Create Kafka's persistent top-level paths (``ZkData.PersistentZkPaths``)."""
    for path in PERSISTENT_PATHS:
        store.ensure_path(path)


def generate_broker_sequence_id(store: MetadataStore) -> int:
    """Kafka's broker id generation: a blind set on ``/brokers/seqid``, returning its
    new zk version (the broker id is that plus ``reserved.broker.max.id``)."""
    while True:
        try:
            return store.set(BROKER_SEQID, b"", version=-1).version
        except NoNodeError:
            try:
                store.create(BROKER_SEQID, b"", makepath=True)
            except NodeExistsError:
                pass
