"""The share groups' records (KIP-932) in Kafka's internal topics: kafka-python data
classes over Kafka 4.3's schemas in ``protocol/``.

Format (Kafka's CoordinatorRecordSerde, as for the consumer group records in
``kafkapy.coordinator.group.consumer.records``): key = int16 record type + the key
struct (not flexible); value = int16 value version (0 for all of these) + the value
struct (flexible: compact strings and arrays, tagged fields), or no value at all for a
tombstone.

====  ==========================================  ===================  ===================
type  record                                      topic                key fields
====  ==========================================  ===================  ===================
0     ShareSnapshot (a share-partition's state)   __share_group_state  group, topic id,
                                                                       partition
1     ShareUpdate (a delta on the snapshot)       __share_group_state  group, topic id,
                                                                       partition
10    ShareGroupMemberMetadata                    __consumer_offsets   group, member
11    ShareGroupMetadata                          __consumer_offsets   group
12    ShareGroupTargetAssignmentMetadata          __consumer_offsets   group
13    ShareGroupTargetAssignmentMember            __consumer_offsets   group, member
14    ShareGroupCurrentMemberAssignment           __consumer_offsets   group, member
15    ShareGroupStatePartitionMetadata            __consumer_offsets   group
====  ==========================================  ===================  ===================

Type 9 (ShareGroupPartitionMetadata) existed in Kafka 4.0 and is gone since 4.1, where
ShareGroupMetadataValue's ``MetadataHash`` replaced it.  ShareSnapshotValue and
ShareUpdateValue carry ``DeliveryCompleteCount`` as tagged field 0 (default -1, Kafka
4.2+).  Each record's schema is a ``*Key`` / ``*Value`` pair of files named as Kafka names
them; the files say ``"type": "coordinator-key"`` / ``"coordinator-value"`` and give the
record type as ``apiKey``, with key version 0.  kafka-python's ``ApiData`` loads only
``"type": "data"``, so the classes here patch the schema as they load it: a key's
version *is* its record type (its fields' versions too), so ``Key(version=type,
...).encode()`` writes the whole key, type prefix included, and ``Key.decode(key)``
reads it; a value is ``Value(version=0, ...)`` and its ``encode()`` writes the int16
version 0 in front.

Python values: ``uuid`` fields are ``uuid.UUID`` (ZERO_UUID decodes as ``None``, ``None``
encodes as ZERO_UUID), integers are ``int``, arrays are lists of the nested data classes
(e.g. ``ShareSnapshotValue.StateBatch``) or of ``int`` / ``str``.
"""
from __future__ import annotations

import enum

from kafka.protocol.api_data import ApiData

from kafkapy.protocol.schema_package import ensure_schema_package

_SCHEMAS = ensure_schema_package()


class ShareRecordType(enum.IntEnum):
    """The record types (key versions) of the share records, Kafka's names."""
    SHARE_SNAPSHOT = 0
    SHARE_UPDATE = 1
    SHARE_GROUP_MEMBER_METADATA = 10
    SHARE_GROUP_METADATA = 11
    SHARE_GROUP_TARGET_ASSIGNMENT_METADATA = 12
    SHARE_GROUP_TARGET_ASSIGNMENT_MEMBER = 13
    SHARE_GROUP_CURRENT_MEMBER_ASSIGNMENT = 14
    SHARE_GROUP_STATE_PARTITION_METADATA = 15


#: The version of every value these schemas define.
VALUE_VERSION = 0


def _as_key(metacls, json: dict) -> dict:
    """A ``coordinator-key`` schema as ``data`` whose one version is the record type."""
    record_type = str(json["apiKey"])
    fields = [dict(f, versions=record_type) for f in json["fields"]]
    return dict(json, type="data", validVersions=record_type, fields=fields)


def _as_value(metacls, json: dict) -> dict:
    """A ``coordinator-value`` schema as ``data``, its versions unchanged."""
    return dict(json, type="data")


# kafka-python applies a ``json_patch`` found in the class body itself (not inherited).
_KEY = classmethod(_as_key)
_VALUE = classmethod(_as_value)


# -- __share_group_state -------------------------------------------------------------------
class ShareSnapshotKey(ApiData, load_json=_SCHEMAS): json_patch = _KEY
class ShareSnapshotValue(ApiData, load_json=_SCHEMAS): json_patch = _VALUE
class ShareUpdateKey(ApiData, load_json=_SCHEMAS): json_patch = _KEY
class ShareUpdateValue(ApiData, load_json=_SCHEMAS): json_patch = _VALUE


# -- __consumer_offsets --------------------------------------------------------------------
class ShareGroupMemberMetadataKey(ApiData, load_json=_SCHEMAS): json_patch = _KEY
class ShareGroupMemberMetadataValue(ApiData, load_json=_SCHEMAS): json_patch = _VALUE
class ShareGroupMetadataKey(ApiData, load_json=_SCHEMAS): json_patch = _KEY
class ShareGroupMetadataValue(ApiData, load_json=_SCHEMAS): json_patch = _VALUE
class ShareGroupTargetAssignmentMetadataKey(ApiData, load_json=_SCHEMAS): json_patch = _KEY
class ShareGroupTargetAssignmentMetadataValue(ApiData, load_json=_SCHEMAS): json_patch = _VALUE
class ShareGroupTargetAssignmentMemberKey(ApiData, load_json=_SCHEMAS): json_patch = _KEY
class ShareGroupTargetAssignmentMemberValue(ApiData, load_json=_SCHEMAS): json_patch = _VALUE
class ShareGroupCurrentMemberAssignmentKey(ApiData, load_json=_SCHEMAS): json_patch = _KEY
class ShareGroupCurrentMemberAssignmentValue(ApiData, load_json=_SCHEMAS): json_patch = _VALUE
class ShareGroupStatePartitionMetadataKey(ApiData, load_json=_SCHEMAS): json_patch = _KEY
class ShareGroupStatePartitionMetadataValue(ApiData, load_json=_SCHEMAS): json_patch = _VALUE


#: Key and value classes by record type.
KEY_CLASSES = {
    ShareRecordType.SHARE_SNAPSHOT: ShareSnapshotKey,
    ShareRecordType.SHARE_UPDATE: ShareUpdateKey,
    ShareRecordType.SHARE_GROUP_MEMBER_METADATA: ShareGroupMemberMetadataKey,
    ShareRecordType.SHARE_GROUP_METADATA: ShareGroupMetadataKey,
    ShareRecordType.SHARE_GROUP_TARGET_ASSIGNMENT_METADATA: ShareGroupTargetAssignmentMetadataKey,
    ShareRecordType.SHARE_GROUP_TARGET_ASSIGNMENT_MEMBER: ShareGroupTargetAssignmentMemberKey,
    ShareRecordType.SHARE_GROUP_CURRENT_MEMBER_ASSIGNMENT: ShareGroupCurrentMemberAssignmentKey,
    ShareRecordType.SHARE_GROUP_STATE_PARTITION_METADATA: ShareGroupStatePartitionMetadataKey,
}
VALUE_CLASSES = {
    ShareRecordType.SHARE_SNAPSHOT: ShareSnapshotValue,
    ShareRecordType.SHARE_UPDATE: ShareUpdateValue,
    ShareRecordType.SHARE_GROUP_MEMBER_METADATA: ShareGroupMemberMetadataValue,
    ShareRecordType.SHARE_GROUP_METADATA: ShareGroupMetadataValue,
    ShareRecordType.SHARE_GROUP_TARGET_ASSIGNMENT_METADATA: ShareGroupTargetAssignmentMetadataValue,
    ShareRecordType.SHARE_GROUP_TARGET_ASSIGNMENT_MEMBER: ShareGroupTargetAssignmentMemberValue,
    ShareRecordType.SHARE_GROUP_CURRENT_MEMBER_ASSIGNMENT: ShareGroupCurrentMemberAssignmentValue,
    ShareRecordType.SHARE_GROUP_STATE_PARTITION_METADATA: ShareGroupStatePartitionMetadataValue,
}
