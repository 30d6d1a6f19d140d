"""Keys and values of ``__consumer_offsets`` records, byte for byte as Kafka 3.9 writes them.

Each key/value is an int16 schema version followed by the struct (schemas in
the top-level ``protocol/`` folder, copied from Kafka):

- offset commit: key OffsetCommitKey v1 (group, topic, partition); value
  OffsetCommitValue v3 (offset, leaderEpoch (-1 if none), metadata,
  commitTimestamp), or v1 (offset, metadata, commitTimestamp,
  expireTimestamp) when the commit carried a retention time.
- group metadata: key GroupMetadataKey v2 (group); value GroupMetadataValue
  v3 (protocolType, generation, protocol, leader, currentStateTimestamp,
  members: memberId, groupInstanceId, clientId, clientHost, rebalanceTimeout,
  sessionTimeout, subscription, assignment).
- a null value is a tombstone (offset deleted / group removed).
Key versions 0-1 are offset keys, 2 is a group key.
"""
from __future__ import annotations

import struct
from dataclasses import dataclass

from kafka.protocol.api_data import ApiData

from kafkapy.coordinator.group.offsets import OffsetAndMetadata
from kafkapy.protocol.schema_package import ensure_schema_package

OFFSET_KEY_VERSION = 1
GROUP_KEY_VERSION = 2
OFFSET_VALUE_VERSION = 3
OFFSET_VALUE_VERSION_WITH_EXPIRY = 1
GROUP_VALUE_VERSION = 3


class OffsetCommitKey(ApiData, load_json=ensure_schema_package()):
    pass


class OffsetCommitValue(ApiData, load_json=ensure_schema_package()):
    pass


class GroupMetadataKey(ApiData, load_json=ensure_schema_package()):
    pass


class GroupMetadataValue(ApiData, load_json=ensure_schema_package()):
    pass


_MemberValue = GroupMetadataValue.MemberMetadata


@dataclass(frozen=True)
class OffsetKey:
    group: str
    topic: str
    partition: int


@dataclass(frozen=True)
class GroupKey:
    group: str


@dataclass(frozen=True)
class StoredMember:
    member_id: str
    group_instance_id: str | None
    client_id: str
    client_host: str
    rebalance_timeout_ms: int
    session_timeout_ms: int
    subscription: bytes
    assignment: bytes


@dataclass(frozen=True)
class StoredGroup:
    protocol_type: str
    generation: int
    protocol: str | None
    leader: str | None
    current_state_timestamp: int
    members: list[StoredMember]


def offset_key(group: str, topic: str, partition: int) -> bytes:
    return bytes(OffsetCommitKey(version=OFFSET_KEY_VERSION, group=group, topic=topic,
                                 partition=partition).encode())


def group_key(group: str) -> bytes:
    return bytes(GroupMetadataKey(version=GROUP_KEY_VERSION, group=group).encode())


def offset_value(om: OffsetAndMetadata) -> bytes:
    version = OFFSET_VALUE_VERSION if om.expire_timestamp is None \
        else OFFSET_VALUE_VERSION_WITH_EXPIRY
    value = OffsetCommitValue(version=version, offset=om.offset, leader_epoch=om.leader_epoch,
                              metadata=om.metadata, commit_timestamp=om.commit_timestamp,
                              expire_timestamp=-1 if om.expire_timestamp is None
                              else om.expire_timestamp)
    return bytes(value.encode())


def group_value(group: StoredGroup) -> bytes:
    members = [_MemberValue(version=GROUP_VALUE_VERSION, member_id=m.member_id,
                            group_instance_id=m.group_instance_id, client_id=m.client_id,
                            client_host=m.client_host, rebalance_timeout=m.rebalance_timeout_ms,
                            session_timeout=m.session_timeout_ms, subscription=m.subscription,
                            assignment=m.assignment)
               for m in group.members]
    value = GroupMetadataValue(version=GROUP_VALUE_VERSION, protocol_type=group.protocol_type,
                               generation=group.generation, protocol=group.protocol,
                               leader=group.leader,
                               current_state_timestamp=group.current_state_timestamp,
                               members=members)
    return bytes(value.encode())


def decode_key(data: bytes) -> OffsetKey | GroupKey | None:
    """The key of a record, or None for a key version this coordinator does not know."""
    (version,) = struct.unpack_from(">h", data, 0)
    if version in (0, 1):
        k = OffsetCommitKey.decode(data)
        return OffsetKey(k.group, k.topic, k.partition)
    if version == 2:
        return GroupKey(GroupMetadataKey.decode(data).group)
    return None


def decode_offset_value(data: bytes) -> OffsetAndMetadata:
    (version,) = struct.unpack_from(">h", data, 0)
    v = OffsetCommitValue.decode(data)
    expire = v.expire_timestamp if version == 1 and v.expire_timestamp != -1 else None
    epoch = v.leader_epoch if version >= 3 else -1
    return OffsetAndMetadata(v.offset, epoch, v.metadata, v.commit_timestamp, expire)


def decode_group_value(data: bytes) -> StoredGroup:
    (version,) = struct.unpack_from(">h", data, 0)
    v = GroupMetadataValue.decode(data)
    members = [StoredMember(m.member_id, m.group_instance_id if version >= 3 else None,
                            m.client_id, m.client_host,
                            m.rebalance_timeout if version >= 1 else m.session_timeout,
                            m.session_timeout, bytes(m.subscription), bytes(m.assignment))
               for m in v.members]
    ts = v.current_state_timestamp if version >= 2 else -1
    return StoredGroup(v.protocol_type, v.generation, v.protocol, v.leader, ts, members)
