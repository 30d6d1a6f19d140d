"""Turn a decoded response into a plain tree, normalise it, and diff two trees.

``to_tree(message, version, ids)`` walks the kafka-python message by its schema (only
fields present in ``version``), giving dicts, lists and scalars; ``records`` bytes become a
list of batches (offsets, flags, producer fields, records' keys/values/headers).
``NORMALISATIONS`` is the ONE list of what may legitimately differ between two brokers; each
entry has a name, a reason, and a function applied to every (path, field schema, value).
Everything else must be equal: ``diff(kafka_tree, our_tree)`` yields ``Difference``s with the
field path, Kafka's value and ours.

Invariant: normalisation only ever replaces a value by a placeholder that does not depend on
which broker produced it, and keeps sentinels (-1, null, zero uuid) as they are, so a broker
answering "none" where the other answers "some" still differs.
"""
from __future__ import annotations

import re
import uuid
from dataclasses import dataclass
from typing import Any, Callable, Iterator

from kafka.record import MemoryRecords

ZERO_UUID = "AAAAAAAAAAAAAAAAAAAAAA"
_MEMBER_ID = re.compile(r"-[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}$")


@dataclass(frozen=True)
class Difference:
    path: str
    kafka: Any
    ours: Any

    def __str__(self) -> str:
        return f"{self.path}: kafka={self.kafka!r} kafkapy={self.ours!r}"


@dataclass(frozen=True)
class Normalisation:
    name: str
    reason: str
    # (field name, schema json of the field, value, ids) -> value, or _KEEP when not applicable
    apply: Callable[[str, dict, Any, dict], Any]


_KEEP = object()


def _by_name(names: set[str], placeholder: str, keep=lambda v: False):
    def apply(name, schema, value, ids):
        if name in names and not keep(value):
            return placeholder
        return _KEEP
    return apply


def _topic_id(name, schema, value, ids):
    if schema.get("type") != "uuid" or not isinstance(value, str) or value == ZERO_UUID:
        return _KEEP
    return f"<topic id of {ids[value]}>" if value in ids else "<unknown uuid>"


def _member_id(name, schema, value, ids):
    if name.endswith("member_id") or name == "leader":
        if isinstance(value, str) and _MEMBER_ID.search(value):
            return _MEMBER_ID.sub("-<uuid>", value)
    return _KEEP


def _producer_id(name, schema, value, ids):
    if schema.get("entityType") == "producerId" or name == "producer_id":
        return "<producer id>" if isinstance(value, int) and value >= 0 else _KEEP
    return _KEEP


_TIMESTAMP_RANGE = re.compile(r"should be within \[-?\d+, -?\d+\]")


def _clock_in_message(name, schema, value, ids):
    if isinstance(value, str) and name.endswith("error_message") and \
            _TIMESTAMP_RANGE.search(value):
        return _TIMESTAMP_RANGE.sub("should be within [<clock range>]", value)
    return _KEEP


_CLOCK_FIELDS = {"log_append_time_ms", "last_timestamp", "transaction_start_time_ms",
                 "current_txn_start_offset_time"}
_NEGATIVE = lambda v: not isinstance(v, int) or v < 0  # noqa: E731 - sentinel kept

NORMALISATIONS: tuple[Normalisation, ...] = (
    Normalisation("throttle", "quota throttling is timing, not protocol",
                  _by_name({"throttle_time_ms"}, "<throttle>")),
    Normalisation("cluster-id", "each cluster generates its own id at first start",
                  _by_name({"cluster_id"}, "<cluster id>", keep=lambda v: v is None)),
    Normalisation("endpoint", "each broker listens on its own free port",
                  _by_name({"port"}, "<port>")),
    Normalisation("topic-id", "topic ids are random; mapped to the topic's name per broker",
                  _topic_id),
    Normalisation("member-id", "member ids end in a random UUID (client id kept)", _member_id),
    Normalisation("producer-id", "producer ids come from each broker's own id block",
                  _producer_id),
    Normalisation("clock", "wall-clock times of appends/transactions differ between runs",
                  _by_name(_CLOCK_FIELDS, "<time>", keep=_NEGATIVE)),
    Normalisation("clock-in-message", "INVALID_TIMESTAMP messages quote the broker's clock",
                  _clock_in_message),
    Normalisation("fetch-session-id", "fetch session ids are random",
                  _by_name({"session_id"}, "<session id>", keep=lambda v: v == 0)),
    Normalisation("documentation", "Kafka's config documentation is its prose, not copied "
                  "into kafkapy; present or null is still compared",
                  _by_name({"documentation"}, "<documentation>", keep=lambda v: v is None)),
    Normalisation("log-dir", "each broker has its own temporary log dir and disk",
                  _by_name({"log_dir", "total_bytes", "usable_bytes"}, "<local disk>",
                           keep=lambda v: v == -1)),
)
# Besides NORMALISATIONS, three structural ones: "map order" (_order), "local config
# values" (_local_config) and "logger names" (_shared_loggers), below.


def _scalar(value: Any) -> Any:
    if isinstance(value, uuid.UUID):
        import base64
        return base64.urlsafe_b64encode(value.bytes).decode().rstrip("=")
    if isinstance(value, (bytes, bytearray, memoryview)):
        return bytes(value).hex()
    return value


def _normalise(name: str, schema: dict, value: Any, ids: dict) -> Any:
    value = _scalar(value)
    for rule in NORMALISATIONS:
        result = rule.apply(name, schema, value, ids)
        if result is not _KEEP:
            return result
    return value


def records_tree(data: Any) -> Any:
    """Record bytes as batches; timestamps kept unless the broker stamped them (LogAppendTime
    or control batches carry the broker's clock)."""
    if data is None:
        return None
    raw = bytes(data)
    if not raw:
        return []
    batches = []
    records = MemoryRecords(raw)
    for _ in range(10000):
        batch = records.next_batch()
        if batch is None:
            break
        batches.append(_batch_tree(batch))
    return batches


def _batch_tree(batch) -> dict:
    out = {"base_offset": batch.base_offset, "magic": batch.magic}
    broker_clock = batch.timestamp_type == 1
    if batch.magic == 2:
        broker_clock = broker_clock or batch.is_control_batch
        out.update(attributes=batch.attributes, last_offset_delta=batch.last_offset_delta,
                   producer_id="<producer id>" if batch.producer_id >= 0 else batch.producer_id,
                   producer_epoch=batch.producer_epoch, base_sequence=batch.base_sequence,
                   partition_leader_epoch=batch.leader_epoch)
    out["records"] = [{
        "offset": r.offset,
        "timestamp": "<time>" if broker_clock else r.timestamp,
        "key": _scalar(r.key), "value": _scalar(r.value),
        "headers": [(k, _scalar(v)) for k, v in (getattr(r, "headers", None) or [])],
    } for r in batch]
    return out


def to_tree(message: Any, version: int, ids: dict[str, str]) -> Any:
    """The in-version fields of ``message`` as a normalised plain tree."""
    return _struct_tree(message, message._struct, version, ids)


def _struct_tree(obj: Any, struct: Any, version: int, ids: dict) -> dict:
    out = {}
    for field in struct._fields:
        if not field.for_version_q(version):
            continue
        out[field.name] = _field_tree(getattr(obj, field.name), field, version, ids)
    return _local_config(_shared_loggers(out))


def _field_tree(value: Any, field: Any, version: int, ids: dict) -> Any:
    schema = field._json or {}
    if value is None:
        return None
    if field.is_struct_array():
        items = [_struct_tree(v, field, version, ids) for v in value]
        return _order(items, field)
    if field.is_struct():
        return _struct_tree(value, field, version, ids)
    if schema.get("type") == "records":
        return records_tree(value)
    if isinstance(value, (list, tuple)):
        return [_normalise(field.name, schema, v, ids) for v in value]
    return _normalise(field.name, schema, value, ids)


# Elements of these arrays are identified by these fields; clients look them up by key, and
# Kafka fills many of them from hash maps, so order is not part of the answer.
ORDER_KEYS = ("partition_index", "partition_id", "partition", "index", "node_id", "broker_id", "group_id",
              "transactional_id", "producer_id", "name", "topic", "topic_name")


_ACL_KEYS = ("resource_type", "resource_name", "pattern_type", "principal", "host", "operation",
             "permission_type")


def _order(items: list[dict], field: Any) -> list[dict]:
    """Normalisation "map order": arrays keyed by a ``mapKey`` field (maps in Kafka's schema)
    or by one of ``ORDER_KEYS`` are sorted by that key on both sides."""
    keys = [f.name for f in field._fields if (f._json or {}).get("mapKey")]
    if not keys:
        names = {f.name for f in field._fields}
        keys = [k for k in ORDER_KEYS if k in names][:1]
    if not keys and names & {"permission_type", "pattern_type"}:
        # ACL bindings (Describe/DeleteAcls): Kafka collects them in hash sets.
        keys = [k for k in _ACL_KEYS if k in names]
    if not keys:
        return items
    # the whole element breaks ties: keys normalised alike (producer ids) keep no order
    return Keyed(sorted(items, key=lambda item: (_sort_key(item, keys), repr(item))), keys)


class Keyed(list):
    """A list of structs identified by ``keys``: diffed element by key, not by position."""

    def __init__(self, items, keys):
        super().__init__(items)
        self.keys = keys

    def label(self, item: dict) -> str:
        return ",".join(f"{k}={item.get(k)!r}" for k in self.keys)


def _sort_key(item: dict, keys: list[str]) -> tuple:
    return tuple((type(item.get(k)).__name__, item.get(k) if item.get(k) is not None else 0)
                 for k in keys)


# Broker configs whose values are this broker's own addresses and paths.
LOCAL_CONFIGS = {"listeners", "advertised.listeners", "log.dirs", "log.dir",
                 "zookeeper.connect"}


def _local_config(tree: dict) -> dict:
    """Normalisation "local config values": see LOCAL_CONFIGS."""
    if tree.get("name") in LOCAL_CONFIGS and isinstance(tree.get("value"), str):
        tree["value"] = "<local address or path>"
    return tree


# Loggers both brokers have: Kafka's other loggers are log4j's, named by Java class
# (kafka.server.KafkaApis), kafkapy's are Python's, named by module (kafkapy.network).
SHARED_LOGGERS = {"root"}
BROKER_LOGGER = 8


def _shared_loggers(tree: dict) -> dict:
    """Normalisation "logger names": a BROKER_LOGGER result keeps only the entries of
    SHARED_LOGGERS (their levels, sources and flags are still compared)."""
    configs = tree.get("configs")
    if tree.get("resource_type") == BROKER_LOGGER and isinstance(configs, Keyed):
        tree["configs"] = Keyed([c for c in configs if c.get("name") in SHARED_LOGGERS],
                                configs.keys)
    return tree


def diff(kafka: Any, ours: Any, path: str = "") -> Iterator[Difference]:
    """Field-by-field differences between two normalised trees."""
    if isinstance(kafka, dict) and isinstance(ours, dict):
        for key in sorted(kafka.keys() | ours.keys()):
            yield from diff(kafka.get(key, "<absent>"), ours.get(key, "<absent>"),
                            f"{path}.{key}" if path else key)
    elif isinstance(kafka, Keyed) and isinstance(ours, Keyed):
        ks = {kafka.label(i): i for i in kafka}
        os_ = {ours.label(i): i for i in ours}
        if len(ks) == len(kafka) and len(os_) == len(ours):     # keys unique on both sides
            for label in sorted(ks.keys() | os_.keys()):
                yield from diff(ks.get(label, "<absent>"), os_.get(label, "<absent>"),
                                f"{path}[{label}]")
            return
        yield from _diff_positions(kafka, ours, path)
    elif isinstance(kafka, list) and isinstance(ours, list):
        yield from _diff_positions(kafka, ours, path)
    elif kafka != ours:
        yield Difference(path or "<answer>", kafka, ours)


def _diff_positions(kafka: list, ours: list, path: str) -> Iterator[Difference]:
    for i in range(max(len(kafka), len(ours))):
        yield from diff(kafka[i] if i < len(kafka) else "<absent>",
                        ours[i] if i < len(ours) else "<absent>", f"{path}[{i}]")


def compared_fields(tree: Any, path: tuple = ()) -> Iterator[tuple]:
    """Schema paths (names only, no indices) of every leaf present in a tree."""
    if isinstance(tree, dict):
        for key, value in tree.items():
            yield path + (key,)
            yield from compared_fields(value, path + (key,))
    elif isinstance(tree, list):
        for item in tree:
            yield from compared_fields(item, path)
