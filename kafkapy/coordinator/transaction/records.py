"""Keys and values of ``__transaction_state`` records, as Kafka 3.9 and 4.x write them.

Schemas: ``protocol/TransactionLogKey.json`` / ``TransactionLogValue.json``,
copied unmodified from Kafka.  Each key/value is an int16 version followed by
the struct:

- key: version 0, TransactionalId (string);
- value: version 0: ProducerId int64, ProducerEpoch int16, TransactionTimeoutMs int32,
  TransactionStatus int8 (``TxnState`` ids), TransactionPartitions
  ([topic, [partition]], null when the state is Empty),
  TransactionLastUpdateTimestampMs int64, TransactionStartTimestampMs int64;
  version 1 (flexible) adds the tagged fields PreviousProducerId (tag 0),
  NextProducerId (tag 1) and ClientTransactionVersion (tag 2), each left out at its
  default (-1, -1, 0).  Which one is written is the cluster's finalized
  transaction.version (Kafka 4's TransactionLog.valueToBytes): version 1 from level 1
  (TV_1, flexible records), else version 0, byte-identical to what Kafka 3.9 writes (a
  cluster with a Kafka 3.9 broker finalizes nothing); both are read (Kafka 3.9 reads
  version 1 too).
- a null value (tombstone) removes an expired transactional id.

kafka-python's loader wants a ``versions`` key on every field; the tagged-only
fields of the value schema get one equal to their ``taggedVersions`` at load
time (``json_patch``), so the JSON file stays byte-identical to Kafka's.
"""
from __future__ import annotations

import struct
from dataclasses import dataclass

from kafka.protocol.api_data import ApiData

from kafkapy.coordinator.transaction.state import TxnState
from kafkapy.protocol.schema_package import ensure_schema_package

KEY_VERSION = 0
VALUE_VERSION = 0
FLEXIBLE_VALUE_VERSION = 1


def _tagged_versions_as_versions(metacls, json):
    def fix(fields):
        for f in fields:
            if "versions" not in f and "taggedVersions" in f:
                f["versions"] = f["taggedVersions"]
            fix(f.get("fields", []))
    fix(json.get("fields", []))
    return json


class TransactionLogKey(ApiData, load_json=ensure_schema_package()):
    pass


class TransactionLogValue(ApiData, load_json=ensure_schema_package()):
    json_patch = classmethod(_tagged_versions_as_versions)


_Partitions = TransactionLogValue.PartitionsSchema


@dataclass(frozen=True)
class StoredTxn:
    producer_id: int
    producer_epoch: int
    timeout_ms: int
    state: int
    partitions: frozenset  # of (topic, partition)
    last_update_ms: int
    start_ms: int
    prev_producer_id: int = -1
    next_producer_id: int = -1
    client_tv: int = 0


def encode_key(transactional_id: str) -> bytes:
    return bytes(TransactionLogKey(version=KEY_VERSION, transactional_id=transactional_id)
                 .encode())


def encode_value(txn: StoredTxn, flexible: bool = False) -> bytes:
    """Version 1 (``flexible``: transaction.version 1 or above finalized) or 0."""
    version = FLEXIBLE_VALUE_VERSION if flexible else VALUE_VERSION
    if txn.state == TxnState.EMPTY:
        partitions = None
    else:
        by_topic: dict[str, list[int]] = {}
        for topic, index in sorted(txn.partitions):
            by_topic.setdefault(topic, []).append(index)
        partitions = [_Partitions(version=version, topic=t, partition_ids=p)
                      for t, p in by_topic.items()]
    tagged = {}
    if version >= FLEXIBLE_VALUE_VERSION:
        tagged = dict(previous_producer_id=txn.prev_producer_id,
                      next_producer_id=txn.next_producer_id,
                      client_transaction_version=txn.client_tv)
    value = TransactionLogValue(
        version=version, producer_id=txn.producer_id, producer_epoch=txn.producer_epoch,
        transaction_timeout_ms=txn.timeout_ms, transaction_status=int(txn.state),
        transaction_partitions=partitions,
        transaction_last_update_timestamp_ms=txn.last_update_ms,
        transaction_start_timestamp_ms=txn.start_ms, **tagged)
    return bytes(value.encode())


def decode_key(data: bytes) -> str | None:
    """The transactional id, or None for a key version this coordinator does not know."""
    (version,) = struct.unpack_from(">h", data, 0)
    if version != KEY_VERSION:
        return None
    return TransactionLogKey.decode(bytes(data)).transactional_id


def decode_value(data: bytes | None) -> StoredTxn | None:
    if data is None:
        return None
    (version,) = struct.unpack_from(">h", data, 0)
    if version not in (0, 1):
        raise ValueError(f"unknown transaction log value version {version}")
    v = TransactionLogValue.decode(bytes(data))
    partitions = frozenset((p.topic, i) for p in (v.transaction_partitions or [])
                           for i in p.partition_ids)
    flexible = version >= FLEXIBLE_VALUE_VERSION
    return StoredTxn(v.producer_id, v.producer_epoch, v.transaction_timeout_ms,
                     v.transaction_status, partitions, v.transaction_last_update_timestamp_ms,
                     v.transaction_start_timestamp_ms,
                     v.previous_producer_id if flexible else -1,
                     v.next_producer_id if flexible else -1,
                     v.client_transaction_version if flexible else 0)
