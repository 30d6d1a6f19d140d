"""A share group's changes as the records Kafka writes for them to ``__consumer_offsets``,
and records read back as changes (a load applies them in order).

One ``Change`` (``group``) is one record; the schemas are Kafka's
(``kafkapy.protocol.share_records``, record types 10-15), the bytes Kafka's
CoordinatorRecordSerde: key = int16 record type + key struct; value = int16 version 0 +
value struct (flexible), or no value for a tombstone.

====  =======================================  ==============  ===============================
type  record                                   key             value v0
====  =======================================  ==============  ===============================
10    ShareGroupMemberMetadata                 group, member   RackId, ClientId, ClientHost,
                                                               SubscribedTopicNames
11    ShareGroupMetadata                       group           Epoch, MetadataHash
12    ShareGroupTargetAssignmentMetadata       group           AssignmentEpoch
13    ShareGroupTargetAssignmentMember         group, member   TopicPartitions
14    ShareGroupCurrentMemberAssignment        group, member   MemberEpoch, PreviousMemberEpoch,
                                                               State (int8), AssignedPartitions
15    ShareGroupStatePartitionMetadata         group           InitializingTopics,
                                                               InitializedTopics (id, name,
                                                               partitions, CreateTimestamp),
                                                               DeletingTopics (id, name)
====  =======================================  ==============  ===============================

Orders: subscribed topic names are written sorted in Java's String order (UTF-16 code
units), as Kafka sorts them.  Where Kafka leaves the order to its hash maps this module
picks one: topics by id (``uuid.UUID`` order), each topic's partitions ascending.
Decoding depends on no order.  A decoded InitializingTopics/InitializedTopics entry is
stamped with the load's time, not its CreateTimestamp (Kafka's replay does the same).
Kafka 4.0's ShareGroupPartitionMetadata (type 9) is not a record of this module: a load
skips it, as Kafka 4.1+ ignores it.

Public surface: ``entries(group_id, changes)`` (the records to append),
``decode(key, value, now_ms) -> (group_id, Change) | None`` (None: not a share group
record), ``RECORD_TYPES``.
"""
from __future__ import annotations

import struct
import uuid
from typing import Iterable, Mapping, Union

from kafkapy.coordinator.group.consumer.types import Assignment, MemberState, assignment
from kafkapy.coordinator.group.share.group import (Change, CurrentAssigned, CurrentDeleted,
                                                  GroupEpoch, GroupEpochDeleted,
                                                  MemberSubscribed, MemberSubscriptionDeleted,
                                                  StatePartitionsDeleted, StatePartitionsSet,
                                                  TargetAssigned, TargetDeleted, TargetEpoch,
                                                  TargetEpochDeleted)
from kafkapy.coordinator.group.share.types import (InitTopic, ShareMember, ShareSubscription,
                                                  StatePartitions)
from kafkapy.protocol import share_records as S
from kafkapy.protocol.share_records import ShareRecordType as T

Entry = tuple[bytes, Union[bytes, None]]

RECORD_TYPES = frozenset({T.SHARE_GROUP_MEMBER_METADATA, T.SHARE_GROUP_METADATA,
                          T.SHARE_GROUP_TARGET_ASSIGNMENT_METADATA,
                          T.SHARE_GROUP_TARGET_ASSIGNMENT_MEMBER,
                          T.SHARE_GROUP_CURRENT_MEMBER_ASSIGNMENT,
                          T.SHARE_GROUP_STATE_PARTITION_METADATA})
_MEMBER_KEYED = frozenset({T.SHARE_GROUP_MEMBER_METADATA, T.SHARE_GROUP_TARGET_ASSIGNMENT_MEMBER,
                           T.SHARE_GROUP_CURRENT_MEMBER_ASSIGNMENT})


# -- encoding -------------------------------------------------------------------------------
def entries(group_id: str, changes: Iterable[Change]) -> list[Entry]:
    return [_entry(group_id, change) for change in changes]


def _key(record_type: T, group_id: str, member_id: str | None = None) -> bytes:
    fields = {"group_id": group_id}
    if record_type in _MEMBER_KEYED:
        fields["member_id"] = member_id
    return bytes(S.KEY_CLASSES[record_type](version=int(record_type), **fields).encode())


def _record(record_type: T, group_id: str, member_id: str | None, **value) -> Entry:
    encoded = S.VALUE_CLASSES[record_type](version=S.VALUE_VERSION, **value).encode()
    return _key(record_type, group_id, member_id), bytes(encoded)


def _entry(group_id: str, change: Change) -> Entry:
    match change:
        case GroupEpoch(epoch, metadata_hash):
            return _record(T.SHARE_GROUP_METADATA, group_id, None, epoch=epoch,
                           metadata_hash=metadata_hash)
        case GroupEpochDeleted():
            return _key(T.SHARE_GROUP_METADATA, group_id), None
        case MemberSubscribed(member_id, s):
            return _record(T.SHARE_GROUP_MEMBER_METADATA, group_id, member_id,
                           rack_id=s.rack_id, client_id=s.client_id, client_host=s.client_host,
                           subscribed_topic_names=java_sorted(s.topic_names))
        case MemberSubscriptionDeleted(member_id):
            return _key(T.SHARE_GROUP_MEMBER_METADATA, group_id, member_id), None
        case TargetEpoch(epoch):
            return _record(T.SHARE_GROUP_TARGET_ASSIGNMENT_METADATA, group_id, None,
                           assignment_epoch=epoch)
        case TargetEpochDeleted():
            return _key(T.SHARE_GROUP_TARGET_ASSIGNMENT_METADATA, group_id), None
        case TargetAssigned(member_id, target):
            cls = S.ShareGroupTargetAssignmentMemberValue.TopicPartition
            return _record(T.SHARE_GROUP_TARGET_ASSIGNMENT_MEMBER, group_id, member_id,
                           topic_partitions=_topic_partitions(cls, target))
        case TargetDeleted(member_id):
            return _key(T.SHARE_GROUP_TARGET_ASSIGNMENT_MEMBER, group_id, member_id), None
        case CurrentAssigned(m):
            cls = S.ShareGroupCurrentMemberAssignmentValue.TopicPartitions
            return _record(T.SHARE_GROUP_CURRENT_MEMBER_ASSIGNMENT, group_id, m.member_id,
                           member_epoch=m.member_epoch,
                           previous_member_epoch=m.previous_member_epoch, state=int(m.state),
                           assigned_partitions=_topic_partitions(cls, m.assigned))
        case CurrentDeleted(member_id):
            return _key(T.SHARE_GROUP_CURRENT_MEMBER_ASSIGNMENT, group_id, member_id), None
        case StatePartitionsSet(p):
            return _record(T.SHARE_GROUP_STATE_PARTITION_METADATA, group_id, None,
                           initializing_topics=_init_topics(p.initializing),
                           initialized_topics=_init_topics(p.initialized),
                           deleting_topics=_deleting(p.deleting))
        case StatePartitionsDeleted():
            return _key(T.SHARE_GROUP_STATE_PARTITION_METADATA, group_id), None
    raise TypeError(f"not a share group change: {change!r}")


def java_sorted(names: Iterable[str]) -> list[str]:
    """Distinct names in Java's String order (UTF-16 code units), as Kafka sorts them."""
    return sorted(set(names), key=lambda n: n.encode("utf-16-be", "surrogatepass"))


def _topic_partitions(cls, a: Assignment) -> list:
    return [cls(topic_id=topic_id, partitions=sorted(a[topic_id])) for topic_id in sorted(a)]


def _init_topics(topics: Mapping[uuid.UUID, InitTopic]) -> list:
    cls = S.ShareGroupStatePartitionMetadataValue.TopicPartitionsInfo
    return [cls(topic_id=t, topic_name=topics[t].name, partitions=sorted(topics[t].partitions),
                create_timestamp=topics[t].timestamp) for t in sorted(topics)]


def _deleting(topics: Mapping[uuid.UUID, str]) -> list:
    cls = S.ShareGroupStatePartitionMetadataValue.TopicInfo
    return [cls(topic_id=t, topic_name=topics[t]) for t in sorted(topics)]


# -- decoding -------------------------------------------------------------------------------
def record_type(key: bytes) -> int:
    return struct.unpack_from(">h", key, 0)[0]


def decode(key: bytes, value: bytes | None, now_ms: int = 0) -> tuple[str, Change] | None:
    """(group id, the change the record is), or None for a key of another record type;
    ``now_ms`` stamps the state partition entries (the load's time)."""
    kind = record_type(key)
    if kind not in RECORD_TYPES:
        return None
    kind = T(kind)
    k = S.KEY_CLASSES[kind].decode(bytes(key))
    member_id = k.member_id if kind in _MEMBER_KEYED else None
    if value is None:
        return k.group_id, _TOMBSTONES[kind](member_id)
    v = S.VALUE_CLASSES[kind].decode(bytes(value))
    return k.group_id, _DECODERS[kind](v, member_id, now_ms)


def _decode_assignment(topic_partitions) -> dict[uuid.UUID, frozenset[int]]:
    return assignment((t.topic_id, t.partitions) for t in topic_partitions)


def _decode_current(v, member_id: str, _now: int) -> Change:
    try:
        state = MemberState(v.state)
    except ValueError:  # Kafka's MemberState.fromValue
        state = MemberState.UNKNOWN
    return CurrentAssigned(ShareMember(member_id, member_epoch=v.member_epoch,
                                       previous_member_epoch=v.previous_member_epoch,
                                       state=state,
                                       assigned=_decode_assignment(v.assigned_partitions)))


def _decode_subscription(v, member_id: str, _now: int) -> Change:
    return MemberSubscribed(member_id, ShareSubscription(
        client_id=v.client_id, client_host=v.client_host, rack_id=v.rack_id,
        topic_names=frozenset(v.subscribed_topic_names)))


def _decode_state_partitions(v, _member_id, now_ms: int) -> Change:
    def init(topics) -> dict[uuid.UUID, InitTopic]:
        return {t.topic_id: InitTopic(t.topic_name, frozenset(t.partitions), now_ms)
                for t in topics}
    return StatePartitionsSet(StatePartitions(
        initializing=init(v.initializing_topics), initialized=init(v.initialized_topics),
        deleting={t.topic_id: t.topic_name for t in v.deleting_topics}))


_DECODERS = {
    T.SHARE_GROUP_MEMBER_METADATA: _decode_subscription,
    T.SHARE_GROUP_METADATA: lambda v, _m, _n: GroupEpoch(v.epoch, v.metadata_hash),
    T.SHARE_GROUP_TARGET_ASSIGNMENT_METADATA: lambda v, _m, _n: TargetEpoch(v.assignment_epoch),
    T.SHARE_GROUP_TARGET_ASSIGNMENT_MEMBER:
        lambda v, m, _n: TargetAssigned(m, _decode_assignment(v.topic_partitions)),
    T.SHARE_GROUP_CURRENT_MEMBER_ASSIGNMENT: _decode_current,
    T.SHARE_GROUP_STATE_PARTITION_METADATA: _decode_state_partitions,
}
_TOMBSTONES = {
    T.SHARE_GROUP_MEMBER_METADATA: MemberSubscriptionDeleted,
    T.SHARE_GROUP_METADATA: lambda _m: GroupEpochDeleted(),
    T.SHARE_GROUP_TARGET_ASSIGNMENT_METADATA: lambda _m: TargetEpochDeleted(),
    T.SHARE_GROUP_TARGET_ASSIGNMENT_MEMBER: TargetDeleted,
    T.SHARE_GROUP_CURRENT_MEMBER_ASSIGNMENT: CurrentDeleted,
    T.SHARE_GROUP_STATE_PARTITION_METADATA: lambda _m: StatePartitionsDeleted(),
}
