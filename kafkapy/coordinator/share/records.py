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
A tombstone is the ShareSnapshot key with no value.  Records are written with ``struct``
straight from the layout above (one per acknowledgement written: the generic message
classes cost several times more); they are read back through the classes of
``kafkapy.protocol.share_records`` (loading only), and this module maps both to
``state.StateRecord``.
"""
from __future__ import annotations

import struct
import uuid

from kafkapy.coordinator.share.persister import UNKNOWN_DELIVERY_COMPLETE_COUNT, StateBatch
from kafkapy.coordinator.share.state import RecordKind, ShareGroupOffset, ShareKey, StateRecord
from kafkapy.protocol.varint import uvarint
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
_KEY_HEAD = struct.Struct(">hh")                 # record type, group id length
_KEY_TAIL = struct.Struct(">16si")               # topic id, partition
_SNAPSHOT_HEAD = struct.Struct(">hiiiqqq")       # version, epochs, start, timestamps
_UPDATE_HEAD = struct.Struct(">hiiq")            # version, snapshot and leader epochs, start
_BATCH = struct.Struct(">qqbhx")                 # first, last, state, count, no tagged fields
_COUNT_TAG = struct.Struct(">BBBi")              # 1 tagged field: tag 0, size 4, the count
_ZERO_UUID = uuid.UUID(int=0)


def encode(record: StateRecord) -> tuple[bytes, bytes | None]:
    """(key, value) of ``record``; value None for a tombstone."""
    record_type = (ShareRecordType.SHARE_UPDATE if record.kind is RecordKind.UPDATE
                   else ShareRecordType.SHARE_SNAPSHOT)
    key_bytes = _key_bytes(record_type, record.key)
    value = record.value
    if record.kind is RecordKind.TOMBSTONE or value is None:
        return key_bytes, None
    if record.kind is RecordKind.SNAPSHOT:
        head = _SNAPSHOT_HEAD.pack(VALUE_VERSION, value.snapshot_epoch, value.state_epoch,
                                   value.leader_epoch, value.start_offset,
                                   value.create_timestamp, value.write_timestamp)
    else:
        head = _UPDATE_HEAD.pack(VALUE_VERSION, value.snapshot_epoch, value.leader_epoch,
                                 value.start_offset)
    return key_bytes, head + _batches_and_tags(value)


def _key_bytes(record_type: int, key: ShareKey) -> bytes:
    group = key.group_id.encode()
    topic_id = key.topic_id or _ZERO_UUID
    return (_KEY_HEAD.pack(record_type, len(group)) + group
            + _KEY_TAIL.pack(topic_id.bytes, key.partition))


def _batches_and_tags(value: ShareGroupOffset) -> bytes:
    """The compact array of state batches, then the value's tagged fields."""
    pack = _BATCH.pack
    parts = [uvarint(len(value.batches) + 1)]
    parts += [pack(b.first_offset, b.last_offset, b.delivery_state, b.delivery_count)
              for b in value.batches]
    if value.delivery_complete_count == UNKNOWN_DELIVERY_COMPLETE_COUNT:
        parts.append(b"\x00")
    else:
        parts.append(_COUNT_TAG.pack(1, 0, 4, value.delivery_complete_count))
    return b"".join(parts)


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
