"""Writing group and offset changes to ``__consumer_offsets`` and reading them back.

Writes: one RecordBatch v2 per change (all records of one OffsetCommit, or a
group's metadata, or the tombstones of a deletion), CreateTime = now, built
with ``kafkapy.records.record.build_batch`` and appended through the
partition as leader (``Partition.append_internal``), exactly like any other
batch in the log; fetch waiters are woken as for a Produce.  Commits and group
metadata are durable writes (acks=-1, see ``GroupStore``): the caller gets the
outcome only once the high watermark passed them.
Reads: ``read_entries`` decodes every record of a partition log in offset
order (skipping control batches); ``replay`` folds them into the latest
group metadata and offsets per group, honouring tombstones.  Loading is pure
(no coordinator state), so it may run off the event loop.

Replay follows Kafka's GroupMetadataManager.replay: a group id is a classic group
(``Loaded.groups``, from its GroupMetadata record), a consumer group
(``Loaded.consumer_groups``, from its records of types 3-8, see
``consumer/records.py``), or neither; offsets are kept apart.  A GroupMetadata record
replaces whatever group the id had and its tombstone removes it, whatever its kind (so
a group converted to a classic one is classic again); a consumer group record with a
value makes the id a consumer group (created empty when it was none; a classic group
is dropped: Kafka writes the classic tombstone first when it converts one, and refuses
a log where it did not); a consumer group tombstone for an id that is no consumer group
is ignored, and a ConsumerGroupMetadata tombstone removes the whole consumer group.
Kafka's checks that a group or a member is emptied before its last tombstone are not
made: the tombstone wins.  Share group records (types 10-15, ``share/records.py``) rebuild
``Loaded.share_groups`` the same way: a record with a value makes the id a share group
(a classic group is dropped; a record for a consumer group's id is skipped, as Kafka
refuses such a log), its ShareGroupMetadata tombstone removes the group, and every other
record is applied to the group in log order.  Record types this broker does not know are
skipped, as Kafka's loader skips them.
"""
from __future__ import annotations

from dataclasses import dataclass, field

from kafkapy.coordinator.group import records as R
from kafkapy.coordinator.group.consumer import records as C
from kafkapy.coordinator.group.share import records as S
from kafkapy.coordinator.group.share.group import GroupEpochDeleted, ShareGroup, is_tombstone
from kafkapy.coordinator.group.offsets import OffsetAndMetadata
from kafkapy.metadata.topics import OFFSETS_TOPIC
from kafkapy.protocol.errors import ErrorCode
from kafkapy.coordinator.internal_topic import scan_batches
from kafkapy.protocol.topic_partition import TopicPartition
from kafkapy.records.record import build_batch, decode_records
from kafkapy.coordinator.group.txn_offsets import route_batch as route_txn_batch
from kafkapy.coordinator.group.txn_offsets import write_transactional
from kafkapy.replication import acks


Entry = tuple[bytes, bytes | None]


class GroupStore:
    """Appends coordinator records to this broker's ``__consumer_offsets`` partitions.

    Kafka appends offset commits and group metadata with acks=-1
    (offsets.commit.required.acks) and answers once the high watermark passes them,
    or at offsets.commit.timeout.ms: ``write`` returns the client's error code at once
    when it is already known (a failed append, a single replica), else a future of it.
    ``replicate(key, result)`` is that wait
    (``kafkapy.coordinator.internal_topic.replicated``); without one
    (offsets.commit.required.acks other than -1; unit tests) there is no min ISR check
    and the append is final.  Tombstones are written with acks=0
    (``wait=False``): a lost one is written again by the next cleanup, as in Kafka.
    """

    def __init__(self, replica_manager, clock, compression: int = 0, replicate=None) -> None:
        self._replicas = replica_manager
        self._clock = clock
        self._compression = compression
        self._replicate = replicate

    def partition(self, index: int):
        return self._replicas.partitions.get((OFFSETS_TOPIC, index))

    def write(self, index: int, entries: list[Entry], for_offsets: bool,
              base_sequence: int = -1, wait: bool = True):
        """Append ``entries`` as one batch; the error code the client should see (or a
        future of it).  (Kafka's offset commit batches carry base sequence 0, its
        others -1.)"""
        partition = self.partition(index)
        if partition is None:
            return ErrorCode.NOT_COORDINATOR
        now = self._clock.time_ms()
        batch = build_batch([(k, v, None, now) for k, v in entries],
                            compression=self._compression, base_sequence=base_sequence)
        return self.append(index, partition, batch, for_offsets, wait)

    def append(self, index: int, partition, batch: bytes, for_offsets: bool, wait: bool = True):
        """Kafka's appendForGroup: the min ISR check of an acks=-1 append, the append, the
        wait for the high watermark; the error mapped for the client."""
        key = (OFFSETS_TOPIC, index)
        wait = wait and self._replicate is not None
        result = acks.min_isr_error(partition, *key) if wait else None
        if result is None:
            result = partition.append_internal(batch)
            if result.error_code == 0:
                self._replicas.appended(key)
        if not wait:
            return _client_error(result.error_code, for_offsets)
        return acks.then(self._replicate(key, result),
                         lambda code: _client_error(code, for_offsets))

    # -- transactional offset commits (see txn_offsets.py) -------------------------------
    def write_transactional(self, index: int, entries: list[Entry], producer_id: int,
                            producer_epoch: int):
        return write_transactional(self, index, entries, producer_id, producer_epoch)


def _client_error(code: int, for_offsets: bool) -> int:
    """A failed append as the coordinator answers it: Kafka's maybeConvertOffsetCommitError
    for offset commits, storeGroup's mapping for group metadata."""
    if code == 0:
        return 0
    if code in (ErrorCode.UNKNOWN_TOPIC_OR_PARTITION, ErrorCode.NOT_ENOUGH_REPLICAS,
                ErrorCode.NOT_ENOUGH_REPLICAS_AFTER_APPEND):
        return ErrorCode.COORDINATOR_NOT_AVAILABLE
    if code in (ErrorCode.NOT_LEADER_OR_FOLLOWER, ErrorCode.KAFKA_STORAGE_ERROR):
        return ErrorCode.NOT_COORDINATOR
    if code in (ErrorCode.MESSAGE_TOO_LARGE, ErrorCode.RECORD_LIST_TOO_LARGE,
                ErrorCode.INVALID_FETCH_SIZE):
        return ErrorCode.INVALID_COMMIT_OFFSET_SIZE if for_offsets else ErrorCode.UNKNOWN
    if for_offsets:
        # NETWORK_EXCEPTION (a failed transaction verification) makes clients retry in place.
        return ErrorCode.COORDINATOR_LOAD_IN_PROGRESS if code == ErrorCode.NETWORK_EXCEPTION \
            else code
    # storeGroup: a timed-out write makes the members rejoin.
    return ErrorCode.REBALANCE_IN_PROGRESS if code == ErrorCode.REQUEST_TIMED_OUT else code



def read_entries(log, pending_txn: dict | None = None) -> list[Entry]:
    """(key, value) of every data record of ``log`` up to its end (as Kafka loads: to the
    log end offset, since the high watermark checkpoint may lag after a crash)."""
    out: list[Entry] = []
    for chunk, header in scan_batches(log):
        if header.is_transactional:  # held until the transaction's marker
            route_txn_batch(chunk, header, out, {} if pending_txn is None else pending_txn)
        elif not header.is_control:
            out.extend((r.key, r.value) for r in decode_records(chunk, header.position)
                       if r.key is not None)
    return out


@dataclass
class Loaded:
    """What one partition holds: classic groups, consumer groups, share groups and offsets
    per group id (no id is two kinds of group)."""
    groups: dict[str, R.StoredGroup] = field(default_factory=dict)
    consumer_groups: dict[str, C.StoredConsumerGroup] = field(default_factory=dict)
    share_groups: dict[str, ShareGroup] = field(default_factory=dict)
    offsets: dict[str, dict[TopicPartition, OffsetAndMetadata]] = field(default_factory=dict)
    # entries of transactions still open, by producer id
    pending_txn: dict[int, list[Entry]] = field(default_factory=dict)

    def group_ids(self) -> set[str]:
        return (set(self.groups) | set(self.consumer_groups) | set(self.share_groups)
                | {g for g, o in self.offsets.items() if o})


def replay(entries: list[Entry], now_ms: int = 0) -> Loaded:
    """``now_ms``: the load's time, which share groups' state partition entries take."""
    loaded = Loaded()
    for key_bytes, value in entries:
        key = R.decode_key(key_bytes)
        if isinstance(key, R.OffsetKey):
            offsets = loaded.offsets.setdefault(key.group, {})
            tp = (key.topic, key.partition)
            if value is None:
                offsets.pop(tp, None)
            else:
                offsets[tp] = R.decode_offset_value(value)
        elif isinstance(key, R.GroupKey):
            loaded.consumer_groups.pop(key.group, None)
            loaded.share_groups.pop(key.group, None)
            if value is None:
                loaded.groups.pop(key.group, None)
            else:
                loaded.groups[key.group] = R.decode_group_value(value)
        else:
            record = C.decode(key_bytes, value)
            if record is not None:
                _replay_consumer_group(loaded, record)
            else:
                share = S.decode(key_bytes, value, now_ms)
                if share is not None:
                    _replay_share_group(loaded, *share)
    return loaded


def _replay_consumer_group(loaded: Loaded, record: C.ConsumerGroupRecord) -> None:
    group_id = record.group_id
    group = loaded.consumer_groups.get(group_id)
    if record.value is None:
        if group is not None and record.type is C.RecordType.METADATA:
            del loaded.consumer_groups[group_id]
        elif group is not None:
            group.replay(record)
        return
    if group is None:
        loaded.groups.pop(group_id, None)
        group = loaded.consumer_groups[group_id] = C.StoredConsumerGroup()
    group.replay(record)


def _replay_share_group(loaded: Loaded, group_id: str, change) -> None:
    group = loaded.share_groups.get(group_id)
    if group is None:
        if is_tombstone(change) or group_id in loaded.consumer_groups:
            return
        loaded.groups.pop(group_id, None)
        group = loaded.share_groups[group_id] = ShareGroup(group_id)
    if isinstance(change, GroupEpochDeleted):
        del loaded.share_groups[group_id]
        return
    group.apply(change)


def load_partition(log, now_ms: int = 0) -> Loaded:
    pending: dict[int, list[Entry]] = {}
    loaded = replay(read_entries(log, pending), now_ms)
    loaded.pending_txn = pending
    return loaded
