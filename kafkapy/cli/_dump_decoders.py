"""Record decoders of ``kafkapy-dump-log``: Kafka's DumpLogSegments message parsers.

Each parser maps one record's key and value (bytes or None) to the ``(key, payload)``
strings the tool prints, None for a part not printed:

- ``DecoderParser``: ``--key-decoder-class`` / ``--value-decoder-class`` with Kafka's decoder
  class names (String, Integer, Long, Default; the deprecated ``kafka.serializer.*`` names
  announce their replacement on stdout as Kafka does);
- ``OffsetsParser``: ``--offsets-decoder``, ``__consumer_offsets`` records as Kafka's
  OffsetsMessageParser prints them: ``{"type":"<key version>","data":{...}}`` and
  ``{"version":"<value version>","data":{...}}``, the JSON of Kafka's generated
  JsonConverters (fields of the version in schema order, Jackson's compact layout, bytes in
  base64), members' subscription and assignment of ``consumer`` groups decoded in place;
  the consumer group protocol's records (types 3-8) too, as Kafka 3.9 prints them, and
  share groups' (types 10-15) as Kafka 4.x prints them;
- ``ShareGroupStateParser``: ``--share-group-state-decoder`` (Kafka 4.x's option),
  ``__share_group_state`` records (ShareSnapshot, type 0; ShareUpdate, type 1) as Kafka's
  ShareGroupStateMessageParser prints them, in the same ``{"type":..,"data":..}`` /
  ``{"version":..,"data":..}`` shape;
- ``TransactionLogParser``: ``--transaction-log-decoder``, Kafka's
  TransactionLog.formatRecordKeyAndValue text, partitions in the iteration order of the
  Scala ``mutable.HashSet`` Kafka collects them in.

Both coordinator parsers follow Kafka's CoordinatorRecordMessageParser: a record without a
key stops the tool; a key of a type the topic's serde does not know prints "Unknown record
type N at offset O, skipping."; a record that does not read prints "Error at offset O,
skipping. <why>"; a tombstone's payload is ``<DELETE>``.  Uuids print as Kafka's
``Uuid.toString`` (URL-safe base64, no padding; the zero uuid too).

The bytes are decoded by the classes kafkapy's coordinators use (``coordinator/group/records``,
``coordinator/group/consumer/records``, ``coordinator/transaction/records``,
``protocol/share_records``) and kafka-python's consumer-protocol schemas; this module only
writes what they decode the way Kafka prints it.
"""
from __future__ import annotations

import base64
import codecs
import json
import struct

from kafka.protocol.consumer.metadata import (ConsumerProtocolAssignment,
                                              ConsumerProtocolSubscription)

from kafkapy.coordinator.group import records as group_records
from kafkapy.coordinator.group.consumer import records as consumer_records
from kafkapy.coordinator.transaction import records as txn_records
from kafkapy.coordinator.transaction.state import TxnState
from kafkapy.jvm import scala_mutable_hash_order, topic_partition_hash
from kafkapy.protocol import share_records

_STRING = "org.apache.kafka.tools.api.StringDecoder"
_DECODERS = {
    _STRING: "string",
    "org.apache.kafka.tools.api.IntegerDecoder": "int",
    "org.apache.kafka.tools.api.LongDecoder": "long",
    "org.apache.kafka.tools.api.DefaultDecoder": "bytes",
}
_DEPRECATED = {f"kafka.serializer.{kind}Decoder": f"org.apache.kafka.tools.api.{kind}Decoder"
               for kind in ("String", "Long", "Integer", "Default")}


class ParseError(Exception):
    """A record the chosen decoder cannot take at all (Kafka throws out of the tool)."""


# ------------------------------------------------------------------ plain decoders

def _decoder(class_name: str | None):
    name = class_name or _STRING
    if name in _DEPRECATED:
        print(f"{name} is deprecated. Please use {_DEPRECATED[name]} instead")
        name = _DEPRECATED[name]
    kind = _DECODERS.get(name)
    if kind is None:
        raise ParseError(f"java.lang.ClassNotFoundException: {name}")
    return kind


def _java_replace(err: UnicodeDecodeError) -> tuple[str, int]:
    """Java's UTF-8 decoder's replacements, where they differ from Python's "replace":
    a surrogate's encoding (ED A0..BF ..) is one malformed sequence of 3 bytes (2 when the
    third is no continuation byte) where Python replaces byte by byte."""
    data, start = err.object, err.start
    if data[start] == 0xED and start + 1 < len(data) and 0xA0 <= data[start + 1] <= 0xBF:
        if start + 2 < len(data) and 0x80 <= data[start + 2] <= 0xBF:
            return "\ufffd", start + 3
        return "\ufffd", start + 2
    return "\ufffd", err.end


codecs.register_error("kafkapy-java-utf8", _java_replace)


def java_string(data: bytes) -> str:
    """``new String(bytes, UTF_8)``: malformed input replaced as Java replaces it."""
    return bytes(data).decode("utf-8", "kafkapy-java-utf8")


def _decode(kind: str, data: bytes) -> str:
    if kind == "string":
        return java_string(data)
    if kind in ("int", "long"):
        size = 4 if kind == "int" else 8
        if len(data) < size:
            raise ParseError("java.nio.BufferUnderflowException")
        return str(int.from_bytes(data[:size], "big", signed=True))
    # DefaultDecoder returns the byte[]; Kafka prints its Object.toString (an identity hash).
    return f"[B@{id(data) & 0x7fffffff:x}"


class DecoderParser:
    """Kafka's DecoderMessageParser over the decoder classes it ships."""

    def __init__(self, key_class: str | None, value_class: str | None) -> None:
        # Kafka builds the value decoder first, then the key decoder.
        self._value = _decoder(value_class)
        self._key = _decoder(key_class)

    def parse(self, offset: int, key: bytes | None, value: bytes | None):
        k = None if key is None else _decode(self._key, key)
        v = None if value is None else _decode(self._value, value)
        return k, v


# ------------------------------------------------------------------ Kafka's JSON converters

def _versions_include(spec: str, version: int) -> bool:
    if spec in ("none", ""):
        return False
    if spec.endswith("+"):
        return version >= int(spec[:-1])
    if "-" in spec:
        low, high = spec.split("-")
        return int(low) <= version <= int(high)
    return version == int(spec)


def _json_name(name: str) -> str:
    return name[0].lower() + name[1:]


def _snake(name: str) -> str:
    out = []
    for i, ch in enumerate(name):
        if ch.isupper() and i and (not name[i - 1].isupper()):
            out.append("_")
        out.append(ch.lower())
    return "".join(out)


def _field_value(obj, field: dict):
    for attr in (_snake(field["name"]), field["name"]):
        if hasattr(obj, attr):
            return getattr(obj, attr)
    raise AttributeError(field["name"])


def _is_default(value, field: dict) -> bool:
    default = field.get("default")
    if default in (None, "null"):
        return value is None or value in ("", [], b"")
    return str(value).lower() == str(default).lower()


def to_json(obj, fields: list[dict], version: int) -> dict:
    """The JsonConverter ``write`` of a generated Kafka message, as an ordered dict."""
    out: dict = {}
    for field in fields:
        tagged = field.get("taggedVersions")
        if not _versions_include(field.get("versions", "none"), version) and not (
                tagged and _versions_include(tagged, version)):
            continue
        value = _field_value(obj, field)
        if tagged and _versions_include(tagged, version) and _is_default(value, field):
            continue
        out[_json_name(field["name"])] = _json_value(value, field, version)
    return out


def _json_value(value, field: dict, version: int):
    kind = field["type"]
    if kind == "uuid":      # never null in Kafka; kafka-python reads the zero uuid as None
        return _uuid_text(value)
    if value is None:
        return None
    if kind == "bytes":
        return base64.b64encode(bytes(value)).decode()
    if kind.startswith("[]"):
        inner = kind[2:]
        if "fields" in field:
            return [to_json(item, field["fields"], version) for item in value]
        sub = dict(field, type=inner)
        return [_json_value(item, sub, version) for item in value]
    if "fields" in field:
        return to_json(value, field["fields"], version)
    return value


def _uuid_text(value) -> str:
    """Kafka's ``Uuid.toString``: URL-safe base64 of the 16 bytes, no padding."""
    raw = bytes(16) if value is None else value.bytes
    return base64.urlsafe_b64encode(raw).decode().rstrip("=")


def jackson(node) -> str:
    """Jackson's ``JsonNode.toString``: compact, non-ASCII kept, '/' not escaped."""
    return json.dumps(node, ensure_ascii=False, separators=(",", ":"))


def _struct_fields(cls, struct_name: str | None = None) -> list[dict]:
    """The schema fields of a message class (a common struct of it if named)."""
    schema = cls._json
    if struct_name is None:
        return schema["fields"]
    for common in schema.get("commonStructs", []):
        if common["name"] == struct_name:
            return common["fields"]
    raise KeyError(struct_name)


def _with_common_structs(cls) -> list[dict]:
    """Fields whose type names a common struct get that struct's fields inlined."""
    commons = {c["name"]: c["fields"] for c in cls._json.get("commonStructs", [])}

    def expand(fields):
        out = []
        for f in fields:
            inner = f["type"][2:] if f["type"].startswith("[]") else f["type"]
            if inner in commons and "fields" not in f:
                f = dict(f, fields=expand(commons[inner]))
            elif "fields" in f:
                f = dict(f, fields=expand(f["fields"]))
            out.append(f)
        return out
    return expand(cls._json["fields"])


# ------------------------------------------------------------------ __consumer_offsets

class UnknownRecordType(Exception):
    def __init__(self, version: int) -> None:
        super().__init__(version)
        self.version = version


_SHARE_STATE_TYPES = (share_records.ShareRecordType.SHARE_SNAPSHOT,
                      share_records.ShareRecordType.SHARE_UPDATE)
# __consumer_offsets: the classic group's types, the consumer group's, the share group's
_KEY_CLASSES = {0: group_records.OffsetCommitKey, 1: group_records.OffsetCommitKey,
                2: group_records.GroupMetadataKey,
                **{int(t): cls for t, cls in consumer_records.KEY_CLASSES.items()},
                **{int(t): cls for t, cls in share_records.KEY_CLASSES.items()
                   if t not in _SHARE_STATE_TYPES}}
_VALUE_CLASSES = {0: group_records.OffsetCommitValue, 1: group_records.OffsetCommitValue,
                  2: group_records.GroupMetadataValue,
                  **{int(t): cls for t, cls in consumer_records.VALUE_CLASSES.items()},
                  **{int(t): cls for t, cls in share_records.VALUE_CLASSES.items()
                     if t not in _SHARE_STATE_TYPES}}
# __share_group_state
_STATE_KEY_CLASSES = {int(t): share_records.KEY_CLASSES[t] for t in _SHARE_STATE_TYPES}
_STATE_VALUE_CLASSES = {int(t): share_records.VALUE_CLASSES[t] for t in _SHARE_STATE_TYPES}
_MEMBER_VALUE = consumer_records.ConsumerGroupMemberMetadataValue


def _read_version(data: bytes, name: str) -> int:
    if len(data) < 2:
        raise ValueError(f"Could not read version from {name}'s buffer.")
    return struct.unpack_from(">h", data, 0)[0]


def _read_message(cls, data: bytes, version: int, name: str):
    if not cls.min_version <= version <= cls.max_version:   # the generated reader's check
        raise ValueError(f"Could not read record with version {version} from {name}'s "
                         f"buffer due to: Can't read version {version} of {cls.__name__}.")
    try:
        if cls is _MEMBER_VALUE:  # its tagged field as Kafka reads it
            return consumer_records.decode_value(consumer_records.RecordType.MEMBER_METADATA,
                                                 bytes(data))
        return cls.decode(bytes(data))
    except Exception as e:  # kafka-python's decoders raise assorted types
        # Kafka's readers fail on a short buffer: BufferUnderflowException, whose message
        # is null.
        raise ValueError(f"Could not read record with version {version} from {name}'s "
                         f"buffer due to: null.") from e


class _CoordinatorParser:
    """Kafka's CoordinatorRecordMessageParser over one topic's record classes by type."""

    _KEYS: dict[int, type] = {}
    _VALUES: dict[int, type] = {}
    _DECODER = ""       # how Kafka's message for a record without a key names the decoder

    def parse(self, offset: int, key: bytes | None, value: bytes | None):
        if key is None:
            raise ParseError(f"java.lang.RuntimeException: Failed to decode message at offset "
                             f"{offset} using {self._DECODER} (message had a missing key)")
        try:
            key_version = _read_version(key, "key")
            if key_version not in self._KEYS:
                raise UnknownRecordType(key_version)
            key_cls = self._KEYS[key_version]
            key_msg = _read_message(key_cls, key, key_version, "key")
            key_text = jackson({"type": str(key_version),
                                "data": to_json(key_msg, _with_common_structs(key_cls),
                                                key_version)})
            if value is None:
                return key_text, "<DELETE>"
            value_cls = self._VALUES[key_version]
            value_version = _read_version(value, "value")
            value_msg = _read_message(value_cls, value, value_version, "value")
            data = to_json(value_msg, _with_common_structs(value_cls), value_version)
            self._adjust(value_cls, data, value_msg)
            return key_text, jackson({"version": str(value_version), "data": data})
        except UnknownRecordType as e:
            return f"Unknown record type {e.version} at offset {offset}, skipping.", None
        except Exception as e:
            return f"Error at offset {offset}, skipping. {e}", None

    def _adjust(self, value_cls, data: dict, message) -> None:
        """What the parser changes in a value's JSON (nothing by default)."""


class OffsetsParser(_CoordinatorParser):
    """Kafka's OffsetsMessageParser (GroupCoordinatorRecordSerde + the JSON converters)."""

    _KEYS = _KEY_CLASSES
    _VALUES = _VALUE_CLASSES
    _DECODER = "offset topic decoder"

    def _adjust(self, value_cls, data: dict, message) -> None:
        if value_cls is group_records.GroupMetadataValue:
            _decode_consumer_members(data)
        elif value_cls is _MEMBER_VALUE:
            _classic_member_metadata(data, message)


class ShareGroupStateParser(_CoordinatorParser):
    """Kafka 4.x's ShareGroupStateMessageParser (ShareCoordinatorRecordSerde + the JSON
    converters of ShareSnapshot and ShareUpdate)."""

    _KEYS = _STATE_KEY_CLASSES
    _VALUES = _STATE_VALUE_CLASSES
    _DECODER = "the specified decoder"


def _decode_consumer_members(data: dict) -> None:
    """Members' subscription/assignment of a ``consumer`` group, decoded in place."""
    if data.get("protocolType") != "consumer":
        return
    for member in data.get("members") or []:
        _replace(member, "subscription", ConsumerProtocolSubscription)
        _replace(member, "assignment", ConsumerProtocolAssignment)


def _classic_member_metadata(data: dict, message) -> None:
    """Kafka's default ClassicMemberMetadata is the empty struct (its schema's null default
    reads as no default): a null one is printed as null, an empty one not at all."""
    classic = message.classic_member_metadata
    if classic is None:
        data["classicMemberMetadata"] = None
    elif classic.session_timeout_ms == 0 and not classic.supported_protocols:
        data.pop("classicMemberMetadata", None)


def _replace(member: dict, name: str, cls) -> None:
    if name not in member or member[name] is None:
        return
    raw = base64.b64decode(member[name])
    try:
        if len(raw) < 2:
            raise ValueError("buffer underflow")
        version = struct.unpack_from(">h", raw, 0)[0]
        message = cls.decode(raw)
        member[name] = to_json(message, _with_common_structs(cls), version)
    except Exception:  # Kafka keeps the original bytes on a RuntimeException
        pass


# ------------------------------------------------------------------ __transaction_state

class TransactionLogParser:
    """Kafka's TransactionLog.formatRecordKeyAndValue."""

    def parse(self, offset: int, key: bytes | None, value: bytes | None):
        version = _read_version(key or b"", "key")
        transactional_id = txn_records.decode_key(key)
        if transactional_id is None:
            return f"unknown::version={version}", None
        key_text = f"transaction_metadata::transactionalId={transactional_id}"
        if value is None:
            return key_text, "<DELETE>"
        value_version = _read_version(value, "value")
        if value_version not in (0, 1):
            raise ParseError(f"java.lang.IllegalStateException: Unknown version "
                             f"{value_version} from the transaction log message value")
        txn = txn_records.decode_value(value)
        state = TxnState(txn.state)
        partitions = [] if state == TxnState.EMPTY else scala_hash_set_order(
            sorted(txn.partitions))
        text = (f"producerId:{txn.producer_id},producerEpoch:{txn.producer_epoch},"
                f"state={state.display_name},"
                f"partitions=[{','.join(f'{t}-{p}' for t, p in partitions)}],"
                f"txnLastUpdateTimestamp={txn.last_update_ms},"
                f"txnTimeoutMs={txn.timeout_ms}")
        return key_text, text


def scala_hash_set_order(items: list[tuple[str, int]]) -> list[tuple[str, int]]:
    """Iteration order of a Scala 2.13 ``mutable.HashSet[TopicPartition]`` holding ``items``."""
    return scala_mutable_hash_order(items, topic_partition_hash)
