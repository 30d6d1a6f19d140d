"""``__share_group_state`` records in Kafka's bytes (ShareCoordinatorRecordSerde), checked
against bytes written out field by field from the schemas (int16 record type + key struct;
int16 value version 0 + flexible value struct), and read back."""
from __future__ import annotations

import struct
import uuid

from kafkapy.coordinator.share import records
from kafkapy.coordinator.share.persister import StateBatch
from kafkapy.coordinator.share.state import RecordKind, ShareGroupOffset, ShareKey, StateRecord

TOPIC = uuid.UUID("00112233-4455-6677-8899-aabbccddeeff")
KEY = ShareKey("grp", TOPIC, 7)


def key_bytes(record_type: int) -> bytes:
    return (struct.pack(">hh", record_type, 3) + b"grp" + TOPIC.bytes + struct.pack(">i", 7))


def batch_bytes(first: int, last: int, state: int, count: int) -> bytes:
    return struct.pack(">qqbh", first, last, state, count) + b"\x00"   # no tagged fields


def test_a_snapshot_in_kafkas_bytes():
    value = ShareGroupOffset(snapshot_epoch=2, state_epoch=3, leader_epoch=4, start_offset=10,
                             batches=(StateBatch(10, 19, 2, 1), StateBatch(20, 20, 0, 3)),
                             delivery_complete_count=-1, create_timestamp=1000,
                             write_timestamp=2000)
    key, raw = records.encode(StateRecord(RecordKind.SNAPSHOT, KEY, value))
    assert key == key_bytes(0)
    assert raw == (struct.pack(">hiiiqqq", 0, 2, 3, 4, 10, 1000, 2000)
                   + b"\x03" + batch_bytes(10, 19, 2, 1) + batch_bytes(20, 20, 0, 3)
                   + b"\x00")                  # delivery complete count -1: not written
    assert records.decode(key, raw) == StateRecord(RecordKind.SNAPSHOT, KEY, value)


def test_the_delivery_complete_count_is_tagged_field_zero():
    value = ShareGroupOffset(0, 0, -1, 5, (), delivery_complete_count=6,
                             create_timestamp=1, write_timestamp=1)
    _, raw = records.encode(StateRecord(RecordKind.SNAPSHOT, KEY, value))
    assert raw.endswith(b"\x01" + b"\x00" + b"\x04" + struct.pack(">i", 6))
    assert records.decode(key_bytes(0), raw).value.delivery_complete_count == 6


def test_an_update_in_kafkas_bytes():
    value = ShareGroupOffset(snapshot_epoch=1, state_epoch=-1, leader_epoch=2, start_offset=-1,
                             batches=(StateBatch(3, 4, 4, 5),), delivery_complete_count=8)
    key, raw = records.encode(StateRecord(RecordKind.UPDATE, KEY, value))
    assert key == key_bytes(1)
    assert raw == (struct.pack(">hiiq", 0, 1, 2, -1) + b"\x02" + batch_bytes(3, 4, 4, 5)
                   + b"\x01\x00\x04" + struct.pack(">i", 8))
    # an update holds no state epoch or timestamps
    assert records.decode(key, raw) == StateRecord(RecordKind.UPDATE, KEY, value)



def test_a_long_batch_array_has_a_varint_length():
    batches = tuple(StateBatch(i, i, 2, 1) for i in range(200))
    value = ShareGroupOffset(1, -1, 2, 0, batches, delivery_complete_count=-1)
    key, raw = records.encode(StateRecord(RecordKind.UPDATE, KEY, value))
    head = struct.pack(">hiiq", 0, 1, 2, 0)
    assert raw[:len(head) + 2] == head + b"\xc9\x01"       # 201 as an unsigned varint
    assert len(raw) == len(head) + 2 + 200 * len(batch_bytes(0, 0, 2, 1)) + 1
    assert records.decode(key, raw) == StateRecord(RecordKind.UPDATE, KEY, value)

def test_a_tombstone_is_the_snapshot_key_without_a_value():
    assert records.encode(StateRecord(RecordKind.TOMBSTONE, KEY)) == (key_bytes(0), None)
    assert records.decode(key_bytes(0), None) == StateRecord(RecordKind.TOMBSTONE, KEY)


def test_other_record_types_are_skipped():
    assert records.decode(struct.pack(">h", 11) + b"\x00\x01g", b"\x00\x00") is None
    assert records.decode(key_bytes(1), None) is None
    assert records.decode(b"\x00", b"") is None
