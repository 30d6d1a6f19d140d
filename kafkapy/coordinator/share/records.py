"""``__share_group_state`` records as bytes, Kafka's format (ShareCoordinatorRecordSerde).

Key: int16 record type (0 ShareSnapshot, 1 ShareUpdate), then the key struct (not
flexible): string group id (int16 length + UTF-8), 16-byte topic id, int32 partition.
Value: int16 version 0, then the value struct (flexible):
- ShareSnapshotValue: int32 snapshot epoch, int32 state epoch, int32 leader epoch, int64
  start offset, int64 create timestamp, int64 write timestamp, compact array of state
  batches (int64 first offset, int64 last offset, int8 delivery state, int16 delivery
  count, tagged fields), tagged fields (tag 0: int32 delivery complete count, written
  only when not -1);
- ShareUpdateValue: int32 snapshot epoch, int32 leader epoch, int64 start offset, the
  batches, tagged fields (tag 0 as above).
A tombstone is the ShareSnapshot key with no value.  The classes are
``kafkapy.protocol.share_records``'; this module maps them to ``state.StateRecord``.
"""
from __future__ import annotations

from kafkapy.coordinator.share.persister import StateBatch
from kafkapy.coordinator.share.state import RecordKind, ShareGroupOffset, ShareKey, StateRecord
from kafkapy.protocol.share_records import (
    VALUE_VERSION,
    ShareRecordType,
    ShareSnapshotKey,
    ShareSnapshotValue,
    ShareUpdateKey,
    ShareUpdateValue,
)

_KEYS = {ShareRecordType.SHARE_SNAPSHOT: ShareSnapshotKey,
         ShareRecordType.SHARE_UPDATE: ShareUpdateKey}


def encode(record: StateRecord) -> tuple[bytes, bytes | None]:
    """(key, value) of ``record``; value None for a tombstone."""
    key = record.key
    record_type = (ShareRecordType.SHARE_UPDATE if record.kind is RecordKind.UPDATE
                   else ShareRecordType.SHARE_SNAPSHOT)
    key_bytes = _KEYS[record_type](version=record_type, group_id=key.group_id,
                                   topic_id=key.topic_id, partition=key.partition).encode()
    value = record.value
    if record.kind is RecordKind.TOMBSTONE or value is None:
        return key_bytes, None
    if record.kind is RecordKind.SNAPSHOT:
        return key_bytes, _snapshot_value(value).encode()
    return key_bytes, _update_value(value).encode()


def decode(key: bytes, value: bytes | None) -> StateRecord | None:
    """The record of ``key``/``value``, or None for a record type this coordinator does
    not know (skipped, as Kafka's loader skips unknown types)."""
    if len(key) < 2:
        return None
    record_type = int.from_bytes(key[:2], "big", signed=True)
    if record_type not in _KEYS:
        return None
    decoded = _KEYS[ShareRecordType(record_type)].decode(key)
    share_key = ShareKey(decoded.group_id, decoded.topic_id, decoded.partition)
    if value is None:
        if record_type == ShareRecordType.SHARE_SNAPSHOT:
            return StateRecord(RecordKind.TOMBSTONE, share_key)
        return None     # an update's tombstone: nothing to apply
    if record_type == ShareRecordType.SHARE_SNAPSHOT:
        return StateRecord(RecordKind.SNAPSHOT, share_key, _from_snapshot(value))
    return StateRecord(RecordKind.UPDATE, share_key, _from_update(value))


def _batches(cls, batches) -> list:
    return [cls.StateBatch(version=VALUE_VERSION, first_offset=b.first_offset,
                           last_offset=b.last_offset, delivery_state=b.delivery_state,
                           delivery_count=b.delivery_count) for b in batches]


def _snapshot_value(value: ShareGroupOffset) -> ShareSnapshotValue:
    return ShareSnapshotValue(
        version=VALUE_VERSION, snapshot_epoch=value.snapshot_epoch,
        state_epoch=value.state_epoch, leader_epoch=value.leader_epoch,
        start_offset=value.start_offset,
        delivery_complete_count=value.delivery_complete_count,
        create_timestamp=value.create_timestamp, write_timestamp=value.write_timestamp,
        state_batches=_batches(ShareSnapshotValue, value.batches))


def _update_value(value: ShareGroupOffset) -> ShareUpdateValue:
    return ShareUpdateValue(
        version=VALUE_VERSION, snapshot_epoch=value.snapshot_epoch,
        leader_epoch=value.leader_epoch, start_offset=value.start_offset,
        delivery_complete_count=value.delivery_complete_count,
        state_batches=_batches(ShareUpdateValue, value.batches))


def _state_batches(batches) -> tuple[StateBatch, ...]:
    return tuple(StateBatch(b.first_offset, b.last_offset, b.delivery_state, b.delivery_count)
                 for b in batches)


def _from_snapshot(raw: bytes) -> ShareGroupOffset:
    v = ShareSnapshotValue.decode(raw)
    return ShareGroupOffset(
        snapshot_epoch=v.snapshot_epoch, state_epoch=v.state_epoch, leader_epoch=v.leader_epoch,
        start_offset=v.start_offset, batches=_state_batches(v.state_batches),
        delivery_complete_count=v.delivery_complete_count,
        create_timestamp=v.create_timestamp, write_timestamp=v.write_timestamp)


def _from_update(raw: bytes) -> ShareGroupOffset:
    v = ShareUpdateValue.decode(raw)
    # A ShareUpdate holds no state epoch (Kafka's ShareGroupOffset.fromRecord: -1).
    return ShareGroupOffset(
        snapshot_epoch=v.snapshot_epoch, state_epoch=-1, leader_epoch=v.leader_epoch,
        start_offset=v.start_offset, batches=_state_batches(v.state_batches),
        delivery_complete_count=v.delivery_complete_count)
