"""The consumer group protocol's records in ``__consumer_offsets``, byte for byte as Kafka
writes them, and the stored view a partition's records fold into.

Format (Kafka's CoordinatorRecordSerde): key = int16 record type + the key struct, whose
schema version *is* the record type (not flexible); value = int16 value version (0 for
all six) + the value struct (flexible: compact strings and arrays, tagged fields), or no
value at all (None) for a tombstone.  Schemas in the top-level ``protocol/`` folder,
copied from Kafka:

====  =========================================  ==============  ==============================
type  record                                     key             value v0
====  =========================================  ==============  ==============================
3     ConsumerGroupMetadata                      group           Epoch (the group epoch)
4     ConsumerGroupPartitionMetadata             group           Topics: TopicId, TopicName,
                                                                 NumPartitions, PartitionMetadata
5     ConsumerGroupMemberMetadata                group, member   InstanceId, RackId, ClientId,
                                                                 ClientHost, SubscribedTopicNames,
                                                                 SubscribedTopicRegex,
                                                                 RebalanceTimeoutMs, ServerAssignor,
                                                                 tag 0: ClassicMemberMetadata
6     ConsumerGroupTargetAssignmentMetadata      group           AssignmentEpoch
7     ConsumerGroupTargetAssignmentMember        group, member   TopicPartitions
8     ConsumerGroupCurrentMemberAssignment       group, member   MemberEpoch, PreviousMemberEpoch,
                                                                 State (int8), AssignedPartitions,
                                                                 PartitionsPendingRevocation
====  =========================================  ==============  ==============================

Orders: subscribed topic names are written without duplicates in Java's String order
(UTF-16 code units), as Kafka sorts them, and decoded in that order.  Where Kafka leaves
the order to its hash maps this module picks one: partition metadata topics by name;
assignments by topic id (``uuid.UUID`` order), each topic's partitions ascending.
PartitionMetadata (each partition's racks) is written empty, as Kafka 4 does (Kafka 3.9
wrote the racks); it is read and ignored, so a stored ``TopicMetadata`` has no racks.
Decoding does not depend on any order (assignments come back through
``types.assignment``: topics merged, empty ones dropped); unknown tagged fields are skipped.

ClassicMemberMetadata (the member value's tag 0) as Kafka's generated code has it: its
schema default (JSON null) is read by Kafka's generator as "the empty struct", so a null
one is written (tag 0, size 1, varint 0 for null; a present one is varint 1 then the
struct), an empty one (session timeout 0, no protocols) is not written, and an absent
tag 0 reads as the empty struct.  kafka-python reads that null marker as "present", so
the tag is written and read here by hand (``member_record``, ``decode_value``).

Public surface:

- encoders, each returning ``(key, value)``: ``group_epoch_record(group_id, epoch)``,
  ``partition_metadata_record(group_id, topics)``, ``member_record(group_id, member_id,
  subscription)``, ``target_epoch_record(group_id, assignment_epoch)``,
  ``target_member_record(group_id, member_id, assignment)``,
  ``current_assignment_record(group_id, member)``;
- their tombstones ``(key, None)``: ``group_epoch_tombstone(group_id)``,
  ``partition_metadata_tombstone(group_id)``, ``member_tombstone(group_id, member_id)``,
  ``target_epoch_tombstone(group_id)``, ``target_member_tombstone(group_id, member_id)``,
  ``current_assignment_tombstone(group_id, member_id)``; and Kafka's sequences of them:
  ``member_tombstones`` (a member leaving) and ``group_tombstones`` (a group deleted or
  converted to a classic group);
- ``decode(key, value) -> ConsumerGroupRecord | None`` (None: not a consumer group
  record, e.g. an offset commit or a share group record); ``decode_value(type, value)``,
  the value message itself; ``record_type(key)``; ``KEY_CLASSES`` / ``VALUE_CLASSES``,
  the schemas by type;
- ``StoredConsumerGroup``: one group as its records left it, built by ``replay``.

A decoded current assignment (type 8) is a ``Member`` whose subscription is Kafka's
default one (``NO_SUBSCRIPTION``: client id and host empty); the member's own subscription
is in its type 5 record.
"""
from __future__ import annotations

import enum
import io
import struct
import uuid
from dataclasses import dataclass, field
from typing import Iterable, Mapping, Union

from kafka.protocol.api_data import ApiData

from kafkapy.coordinator.group.consumer.types import (
    LEAVE_EPOCH, Assignment, ClassicMemberMetadata, ClassicProtocol, Member, MemberState,
    Subscription, TopicMetadata, assignment)
from kafkapy.protocol.schema_package import ensure_schema_package

Entry = tuple[bytes, Union[bytes, None]]

#: The version of every value this module writes.
VALUE_VERSION = 0


class RecordType(enum.IntEnum):
    """The record types (key versions) of the consumer group records, Kafka's names."""
    METADATA = 3
    PARTITION_METADATA = 4
    MEMBER_METADATA = 5
    TARGET_ASSIGNMENT_METADATA = 6
    TARGET_ASSIGNMENT_MEMBER = 7
    CURRENT_MEMBER_ASSIGNMENT = 8


# -- Kafka's schemas (kafka-python's ApiData over protocol/*.json) -----------------------------
class ConsumerGroupMetadataKey(ApiData, load_json=ensure_schema_package()):
    pass


class ConsumerGroupMetadataValue(ApiData, load_json=ensure_schema_package()):
    pass


class ConsumerGroupPartitionMetadataKey(ApiData, load_json=ensure_schema_package()):
    pass


class ConsumerGroupPartitionMetadataValue(ApiData, load_json=ensure_schema_package()):
    pass


class ConsumerGroupMemberMetadataKey(ApiData, load_json=ensure_schema_package()):
    pass


class ConsumerGroupMemberMetadataValue(ApiData, load_json=ensure_schema_package()):
    pass


def _without_tagged_fields(metacls, json):
    return dict(json, fields=[f for f in json["fields"] if "tag" not in f])


class _Tagless:
    """The member value's schema without its tagged field, whose bytes then come out raw
    (``unknown_tags["_0"]``) for ``_classic_from_tag`` (see ``decode_value``)."""

    class ConsumerGroupMemberMetadataValue(ApiData, load_json=ensure_schema_package()):
        json_patch = classmethod(_without_tagged_fields)


class ConsumerGroupTargetAssignmentMetadataKey(ApiData, load_json=ensure_schema_package()):
    pass


class ConsumerGroupTargetAssignmentMetadataValue(ApiData, load_json=ensure_schema_package()):
    pass


class ConsumerGroupTargetAssignmentMemberKey(ApiData, load_json=ensure_schema_package()):
    pass


class ConsumerGroupTargetAssignmentMemberValue(ApiData, load_json=ensure_schema_package()):
    pass


class ConsumerGroupCurrentMemberAssignmentKey(ApiData, load_json=ensure_schema_package()):
    pass


class ConsumerGroupCurrentMemberAssignmentValue(ApiData, load_json=ensure_schema_package()):
    pass


#: Key and value classes by record type (``kafkapy-dump-log`` prints through them too).
KEY_CLASSES = {
    RecordType.METADATA: ConsumerGroupMetadataKey,
    RecordType.PARTITION_METADATA: ConsumerGroupPartitionMetadataKey,
    RecordType.MEMBER_METADATA: ConsumerGroupMemberMetadataKey,
    RecordType.TARGET_ASSIGNMENT_METADATA: ConsumerGroupTargetAssignmentMetadataKey,
    RecordType.TARGET_ASSIGNMENT_MEMBER: ConsumerGroupTargetAssignmentMemberKey,
    RecordType.CURRENT_MEMBER_ASSIGNMENT: ConsumerGroupCurrentMemberAssignmentKey,
}
VALUE_CLASSES = {
    RecordType.METADATA: ConsumerGroupMetadataValue,
    RecordType.PARTITION_METADATA: ConsumerGroupPartitionMetadataValue,
    RecordType.MEMBER_METADATA: ConsumerGroupMemberMetadataValue,
    RecordType.TARGET_ASSIGNMENT_METADATA: ConsumerGroupTargetAssignmentMetadataValue,
    RecordType.TARGET_ASSIGNMENT_MEMBER: ConsumerGroupTargetAssignmentMemberValue,
    RecordType.CURRENT_MEMBER_ASSIGNMENT: ConsumerGroupCurrentMemberAssignmentValue,
}
_MEMBER_KEYED = frozenset({RecordType.MEMBER_METADATA, RecordType.TARGET_ASSIGNMENT_MEMBER,
                           RecordType.CURRENT_MEMBER_ASSIGNMENT})

#: Kafka's ConsumerGroupMember.Builder defaults: the subscription of a member known only
#: from its current assignment record.
NO_SUBSCRIPTION = Subscription(client_id="", client_host="")

#: Kafka's default ClassicMemberMetadata: the empty struct (not null), which it does not
#: write and reads where tag 0 is absent.
_EMPTY_CLASSIC = ClassicMemberMetadata(0, ())
#: Tagged fields holding only a null tag 0: one field, tag 0, size 1, varint 0 (null).
_NULL_CLASSIC_TAGS = b"\x01\x00\x01\x00"


# -- encoders -------------------------------------------------------------------------------
def _key(record_type: RecordType, group_id: str, member_id: str | None = None) -> bytes:
    fields = {"group_id": group_id}
    if record_type in _MEMBER_KEYED:
        fields["member_id"] = member_id
    return bytes(KEY_CLASSES[record_type](version=int(record_type), **fields).encode())


def _record(record_type: RecordType, group_id: str, member_id: str | None, **value) -> Entry:
    encoded = VALUE_CLASSES[record_type](version=VALUE_VERSION, **value).encode()
    return _key(record_type, group_id, member_id), bytes(encoded)


def group_epoch_record(group_id: str, epoch: int) -> Entry:
    return _record(RecordType.METADATA, group_id, None, epoch=epoch)


def partition_metadata_record(group_id: str, topics: Mapping[uuid.UUID, TopicMetadata]) -> Entry:
    cls = ConsumerGroupPartitionMetadataValue.TopicMetadata
    ordered = sorted(topics.values(), key=lambda t: (t.name, t.topic_id))
    return _record(RecordType.PARTITION_METADATA, group_id, None,
                   topics=[cls(topic_id=t.topic_id, topic_name=t.name,
                               num_partitions=t.num_partitions, partition_metadata=[])
                           for t in ordered])


def member_record(group_id: str, member_id: str, subscription: Subscription) -> Entry:
    s = subscription
    value = dict(instance_id=s.instance_id, rack_id=s.rack_id, client_id=s.client_id,
                 client_host=s.client_host, subscribed_topic_names=_java_sorted(s.topic_names),
                 subscribed_topic_regex=s.topic_regex or "",   # Kafka's member default is ""
                 rebalance_timeout_ms=s.rebalance_timeout_ms,
                 server_assignor=s.server_assignor)
    if s.classic is not None and s.classic != _EMPTY_CLASSIC:
        value["classic_member_metadata"] = _classic_value(s.classic)
    key, encoded = _record(RecordType.MEMBER_METADATA, group_id, member_id, **value)
    if s.classic is None:  # the tagged fields, last, are none: make them one null tag 0
        encoded = encoded[:-1] + _NULL_CLASSIC_TAGS
    return key, encoded


def _java_sorted(names: Iterable[str]) -> list[str]:
    """Distinct names in Java's String order (UTF-16 code units), as Kafka sorts them."""
    return sorted(set(names), key=lambda n: n.encode("utf-16-be", "surrogatepass"))


def _classic_value(classic: ClassicMemberMetadata):
    cls = ConsumerGroupMemberMetadataValue.ClassicMemberMetadata
    return cls(session_timeout_ms=classic.session_timeout_ms,
               supported_protocols=[cls.ClassicProtocol(name=p.name, metadata=p.metadata)
                                    for p in classic.protocols])


def target_epoch_record(group_id: str, assignment_epoch: int) -> Entry:
    return _record(RecordType.TARGET_ASSIGNMENT_METADATA, group_id, None,
                   assignment_epoch=assignment_epoch)


def target_member_record(group_id: str, member_id: str, assignment: Assignment) -> Entry:
    cls = ConsumerGroupTargetAssignmentMemberValue.TopicPartition
    return _record(RecordType.TARGET_ASSIGNMENT_MEMBER, group_id, member_id,
                   topic_partitions=_topic_partitions(cls, assignment))


def current_assignment_record(group_id: str, member: Member) -> Entry:
    cls = ConsumerGroupCurrentMemberAssignmentValue.TopicPartitions
    return _record(RecordType.CURRENT_MEMBER_ASSIGNMENT, group_id, member.member_id,
                   member_epoch=member.member_epoch,
                   previous_member_epoch=member.previous_member_epoch,
                   state=int(member.state),
                   assigned_partitions=_topic_partitions(cls, member.assigned),
                   partitions_pending_revocation=_topic_partitions(cls,
                                                                   member.pending_revocation))


def _topic_partitions(cls, a: Assignment) -> list:
    return [cls(topic_id=topic_id, partitions=sorted(a[topic_id])) for topic_id in sorted(a)]


# -- tombstones -----------------------------------------------------------------------------
def group_epoch_tombstone(group_id: str) -> Entry:
    return _key(RecordType.METADATA, group_id), None


def partition_metadata_tombstone(group_id: str) -> Entry:
    return _key(RecordType.PARTITION_METADATA, group_id), None


def member_tombstone(group_id: str, member_id: str) -> Entry:
    return _key(RecordType.MEMBER_METADATA, group_id, member_id), None


def target_epoch_tombstone(group_id: str) -> Entry:
    return _key(RecordType.TARGET_ASSIGNMENT_METADATA, group_id), None


def target_member_tombstone(group_id: str, member_id: str) -> Entry:
    return _key(RecordType.TARGET_ASSIGNMENT_MEMBER, group_id, member_id), None


def current_assignment_tombstone(group_id: str, member_id: str) -> Entry:
    return _key(RecordType.CURRENT_MEMBER_ASSIGNMENT, group_id, member_id), None


def member_tombstones(group_id: str, member_id: str) -> list[Entry]:
    """A member leaving, in Kafka's order: current assignment, target, subscription."""
    return [current_assignment_tombstone(group_id, member_id),
            target_member_tombstone(group_id, member_id),
            member_tombstone(group_id, member_id)]


def group_tombstones(group_id: str, member_ids: Iterable[str]) -> list[Entry]:
    """A whole group deleted, in Kafka's order (ConsumerGroup.createGroupTombstoneRecords):
    every member's current assignment, every member's target, the target epoch, every
    member's subscription, the partition metadata, the group epoch last."""
    ids = list(member_ids)
    return ([current_assignment_tombstone(group_id, m) for m in ids]
            + [target_member_tombstone(group_id, m) for m in ids]
            + [target_epoch_tombstone(group_id)]
            + [member_tombstone(group_id, m) for m in ids]
            + [partition_metadata_tombstone(group_id), group_epoch_tombstone(group_id)])


# -- decoding -------------------------------------------------------------------------------
RecordValue = Union[int, Mapping[uuid.UUID, TopicMetadata], Subscription, Assignment, Member]


@dataclass(frozen=True, slots=True)
class ConsumerGroupRecord:
    """One decoded record: ``member_id`` for the member-keyed types (5, 7, 8), else None;
    ``value`` None for a tombstone, else by type: 3 the group epoch (int), 4 the topics
    by id, 5 a ``Subscription``, 6 the assignment epoch (int), 7 an ``Assignment``,
    8 a ``Member`` (subscription ``NO_SUBSCRIPTION``)."""
    type: RecordType
    group_id: str
    member_id: str | None
    value: RecordValue | None


def record_type(key: bytes) -> int:
    """The record type of a key (its int16 prefix)."""
    return struct.unpack_from(">h", key, 0)[0]


def decode(key: bytes, value: bytes | None) -> ConsumerGroupRecord | None:
    """A consumer group record decoded; None for a key of another record type."""
    try:
        kind = RecordType(record_type(key))
    except ValueError:
        return None
    k = KEY_CLASSES[kind].decode(bytes(key))
    member_id = k.member_id if kind in _MEMBER_KEYED else None
    if value is None:
        return ConsumerGroupRecord(kind, k.group_id, member_id, None)
    v = decode_value(kind, value)
    return ConsumerGroupRecord(kind, k.group_id, member_id, _DECODERS[kind](v, member_id))


def decode_value(kind: RecordType, value: bytes):
    """The value message (``VALUE_CLASSES[kind]``) of ``value``, as Kafka reads it.

    The member value's tag 0 (ClassicMemberMetadata) is read by hand: Kafka writes a null
    one as a varint 0 where kafka-python expects 0xff, and reads an absent one as the
    empty struct."""
    if kind is not RecordType.MEMBER_METADATA:
        return VALUE_CLASSES[kind].decode(bytes(value))
    tagless = _Tagless.ConsumerGroupMemberMetadataValue.decode(bytes(value))
    fields = {name: getattr(tagless, name) for name in tagless._struct.fields}
    unknown = dict(tagless.unknown_tags or {})
    classic = _classic_from_tag(unknown.pop("_0", None))
    return ConsumerGroupMemberMetadataValue(version=tagless.version, **fields, **unknown,
                                            classic_member_metadata=classic)


def _classic_from_tag(raw: bytes | None):
    cls = ConsumerGroupMemberMetadataValue.ClassicMemberMetadata
    if raw is None:
        return cls(session_timeout_ms=0, supported_protocols=[])
    if raw[:1] == b"\x00":
        return None
    field = ConsumerGroupMemberMetadataValue._struct.fields["classic_member_metadata"]
    return field.decode(io.BytesIO(raw), version=VALUE_VERSION, compact=True, tagged=None)


def _decode_topics(v, _member_id) -> dict[uuid.UUID, TopicMetadata]:
    return {t.topic_id: TopicMetadata(t.topic_id, t.topic_name, t.num_partitions)
            for t in v.topics}


def _decode_subscription(v, _member_id) -> Subscription:
    classic = v.classic_member_metadata
    if classic is not None:
        classic = ClassicMemberMetadata(
            classic.session_timeout_ms,
            tuple(ClassicProtocol(p.name, bytes(p.metadata)) for p in classic.supported_protocols))
    return Subscription(client_id=v.client_id, client_host=v.client_host,
                        instance_id=v.instance_id, rack_id=v.rack_id,
                        topic_names=tuple(_java_sorted(v.subscribed_topic_names)),
                        topic_regex=v.subscribed_topic_regex or None,
                        rebalance_timeout_ms=v.rebalance_timeout_ms,
                        server_assignor=v.server_assignor, classic=classic)


def _decode_assignment(topic_partitions) -> dict[uuid.UUID, frozenset[int]]:
    return assignment((t.topic_id, t.partitions) for t in topic_partitions)


def _decode_current(v, member_id) -> Member:
    try:
        state = MemberState(v.state)
    except ValueError:  # Kafka's MemberState.fromValue
        state = MemberState.UNKNOWN
    return Member(member_id, NO_SUBSCRIPTION, member_epoch=v.member_epoch,
                  previous_member_epoch=v.previous_member_epoch, state=state,
                  assigned=_decode_assignment(v.assigned_partitions),
                  pending_revocation=_decode_assignment(v.partitions_pending_revocation))


_DECODERS = {
    RecordType.METADATA: lambda v, _m: v.epoch,
    RecordType.PARTITION_METADATA: _decode_topics,
    RecordType.MEMBER_METADATA: _decode_subscription,
    RecordType.TARGET_ASSIGNMENT_METADATA: lambda v, _m: v.assignment_epoch,
    RecordType.TARGET_ASSIGNMENT_MEMBER: lambda v, _m: _decode_assignment(v.topic_partitions),
    RecordType.CURRENT_MEMBER_ASSIGNMENT: _decode_current,
}


# -- the stored view ------------------------------------------------------------------------
@dataclass
class StoredConsumerGroup:
    """A consumer group as its records left it (Kafka's persisted ConsumerGroup).

    ``topics``: the partition metadata; ``subscriptions``: the members' type 5 records;
    ``targets``: the members' target assignments; ``current``: the group's members as
    Kafka holds them: every member with a subscription or a current assignment record,
    its subscription the latest type 5 record (``NO_SUBSCRIPTION`` without one), its epochs,
    state and partitions the latest type 8 record (Kafka's defaults without one).
    ``assignment_epoch`` is -1 after a target assignment metadata tombstone.
    """
    group_epoch: int = 0
    topics: dict[uuid.UUID, TopicMetadata] = field(default_factory=dict)
    subscriptions: dict[str, Subscription] = field(default_factory=dict)
    assignment_epoch: int = 0
    targets: dict[str, Assignment] = field(default_factory=dict)
    current: dict[str, Member] = field(default_factory=dict)

    def replay(self, record: ConsumerGroupRecord) -> None:
        """Kafka's GroupMetadataManager.replay of one record of this group, its checks
        aside.  A ConsumerGroupMetadata tombstone deletes the whole group: the caller
        drops the group instead of calling this."""
        _REPLAYS[record.type](self, record.member_id, record.value)

    def _epoch(self, _member_id, value) -> None:
        if value is not None:
            self.group_epoch = value

    def _topics(self, _member_id, value) -> None:
        self.topics = {} if value is None else dict(value)

    def _subscription(self, member_id, value) -> None:
        if value is None:  # the member is gone (Kafka's removeMember)
            self.subscriptions.pop(member_id, None)
            self.current.pop(member_id, None)
            return
        self.subscriptions[member_id] = value
        member = self.current.get(member_id) or Member(member_id, value)
        self.current[member_id] = member.with_(subscription=value)

    def _target_epoch(self, _member_id, value) -> None:
        self.assignment_epoch = -1 if value is None else value

    def _target(self, member_id, value) -> None:
        if value is None:
            self.targets.pop(member_id, None)
        else:
            self.targets[member_id] = value

    def _current(self, member_id, value) -> None:
        old = self.current.get(member_id)
        if value is None:  # the member left: it stays until its subscription goes
            if old is not None:
                self.current[member_id] = old.with_(member_epoch=LEAVE_EPOCH,
                                                    previous_member_epoch=LEAVE_EPOCH,
                                                    assigned={}, pending_revocation={})
            return
        subscription = old.subscription if old is not None else NO_SUBSCRIPTION
        self.current[member_id] = value.with_(subscription=subscription)


_REPLAYS = {
    RecordType.METADATA: StoredConsumerGroup._epoch,
    RecordType.PARTITION_METADATA: StoredConsumerGroup._topics,
    RecordType.MEMBER_METADATA: StoredConsumerGroup._subscription,
    RecordType.TARGET_ASSIGNMENT_METADATA: StoredConsumerGroup._target_epoch,
    RecordType.TARGET_ASSIGNMENT_MEMBER: StoredConsumerGroup._target,
    RecordType.CURRENT_MEMBER_ASSIGNMENT: StoredConsumerGroup._current,
}
