"""One partition replica on this broker: its log, leadership and idempotence checks.

The leader appends (the handler has already run Kafka's request-level record
checks): up-convert a magic 0/1 message set (Produce v0-2) to one v2 batch,
validate the batch header (CRC32C, size, offsets), on a compacted topic check
that every record has a key (the only per-record work, done only there), check
the producer's sequence against the partition's producer state (a duplicate
is answered with the original offsets), then let the log assign offsets and
write.  Failed appends carry Kafka's log start offset: -1 for the errors Kafka
answers without looking at the log (corrupt, too large, storage), the log's
otherwise; only record-level errors carry a message to the client.  With a
sole in-sync replica the high watermark follows the log end offset; with more,
the followers' fetches move it (below).  A write that fails with an
OSError takes the log's dir offline (``storage_failed``) and is answered
KAFKA_STORAGE_ERROR; so is every later request to a partition whose log is
offline.

Replication (Kafka's ZK-mode Partition, before ISR changes and epoch-based
truncation, which come later):
- ``make_leader``: a new leader epoch starts at the log end in the leader-epoch
  cache; a broker that was not the leader forgets what it knew of the followers
  (their log end offsets are unknown until they fetch), a re-elected one keeps it.
- ``update_follower_fetch`` (the leader, on each follower fetch): the follower's
  log end offset is its fetch offset; the high watermark is the smallest log end
  offset over the ISR (the leader's own for itself), never moving back, and stays
  put while an ISR member's log end offset is unknown.
- ``make_follower``: tells whether the fetcher must (re)start (a new leader or
  epoch) and truncates nothing: the fetcher truncates by leader epoch (Kafka 3.9,
  ``kafkapy.replication.truncation``); ``append_as_follower`` writes the leader's
  batches as they are (offsets, epochs, timestamps byte for byte), and
  ``update_follower_high_watermark`` takes the leader's high watermark (bounded by
  the local log end) and log start offset.
"""
from __future__ import annotations

from dataclasses import dataclass, field
from typing import Callable

import structlog

from kafkapy import metrics
from kafkapy.metadata.cache import PartitionState
from kafkapy.native import CREATE_TIME, LONG_MAX
from kafkapy.protocol.errors import ErrorCode, KafkaError
from kafkapy.purgatory.delayed_fetch import LogOffsetMetadata
from kafkapy.records.batch import (RecordError, is_crc_valid, iter_headers, read_header,
                                   validate_batches)
from kafkapy.records.legacy import first_magic, up_convert
from kafkapy.records.validation import check_records
from kafkapy.replication import truncation

_log = structlog.get_logger("kafkapy.replication")
_UNKNOWN = -1

# Kafka's ReplicaManager answers these with no log start offset (-1).
_NO_LOG_START = frozenset({ErrorCode.CORRUPT_MESSAGE, ErrorCode.MESSAGE_TOO_LARGE,
                           ErrorCode.RECORD_LIST_TOO_LARGE, ErrorCode.KAFKA_STORAGE_ERROR,
                           ErrorCode.NOT_LEADER_OR_FOLLOWER,
                           ErrorCode.UNKNOWN_TOPIC_OR_PARTITION})


@dataclass(slots=True)
class AppendResult:
    error_code: int = 0
    base_offset: int = -1
    log_append_time_ms: int = -1
    log_start_offset: int = -1
    error_message: str | None = None
    last_offset: int = -1
    # (batch index, message) per refused record; Kafka then sends error_message too.
    record_errors: list = field(default_factory=list)
    # Whether Kafka sends error_message to the client (record errors, txn verification).
    message_is_public: bool = False


@dataclass(slots=True)
class FollowerState:
    """What the leader knows of one follower (Kafka's ReplicaState)."""

    log_end_offset: int = _UNKNOWN
    log_start_offset: int = _UNKNOWN
    last_fetch_ms: int = 0
    last_caught_up_ms: int = 0
    broker_epoch: int = -1   # the follower's, from its fetch (KIP-903 ISR checks, later)


class Partition:
    def __init__(self, topic: str, index: int, log, state: PartitionState, node_id: int,
                 storage_failed: Callable[[OSError], None] = lambda err: None) -> None:
        self.topic = topic
        self.index = index
        self.log = log
        self.node_id = node_id
        self.state = state
        # Takes the log's dir offline (LogManager.fail_dir): after a failed write the
        # file's tail is unknown, so nothing more may be appended to it.
        self._storage_failed = storage_failed
        # The leader's view of each other assigned replica (empty on a follower).
        self.followers: dict[int, FollowerState] = {}
        # "leader" / "follower" once make_leader / make_follower ran (None: not yet).
        self._role: str | None = None
        if self.is_leader:
            self._track_followers(new_leader=True, now_ms=log.clock.time_ms())

    @property
    def is_leader(self) -> bool:
        return self.state.leader == self.node_id

    @property
    def leader_epoch(self) -> int:
        return self.state.leader_epoch

    @property
    def high_watermark(self) -> int:
        return self.log.high_watermark

    @property
    def last_stable_offset(self) -> int:
        """The high watermark, or the first offset of the earliest open transaction if lower."""
        hw = self.log.high_watermark
        unstable = self.log.first_unstable_offset()
        return hw if unstable is None else min(hw, unstable)

    def append_as_leader(self, records: bytes, produce_version: int) -> AppendResult:
        """Validate one partition's Produce data and append it (a duplicate answers with
        its first offsets; Produce v0-2 data without a whole batch appends nothing)."""
        log = self.log
        try:
            records, header = self._validated(records, produce_version)
            if header is None:
                return AppendResult(0, log_start_offset=log.log_start_offset)
            self._check_online()
            info = log.append_as_leader(records, header, self.leader_epoch)
        except RecordError as err:
            start = -1 if err.code in _NO_LOG_START else log.log_start_offset
            return AppendResult(err.code, log_start_offset=start, error_message=err.message,
                                record_errors=err.record_errors,
                                message_is_public=bool(err.record_errors))
        except KafkaError as err:
            return AppendResult(err.code, error_message=err.message)
        except OSError as err:
            return self._failed_append(err)
        if not info.duplicate:  # a retried batch is answered, not written again
            metrics.PRODUCE_BYTES.inc(len(records))
        return self._appended(info)

    def _validated(self, records, produce_version: int):
        """(records, header) ready for the log; header None when there is nothing to append."""
        config = self.log.config
        compacted = "compact" in config.cleanup_policy
        mv = memoryview(records)
        if produce_version < 3 and first_magic(mv) in (0, 1):
            records = up_convert(mv, config.max_message_bytes,
                                 config.values.get("compression.type", "producer"), compacted,
                                 f"{self.topic}-{self.index}")
            header = validate_batches(memoryview(records), config.max_message_bytes)[0]
            # Kafka checks a converted message set's timestamps as it converts.
            self._validate_records(memoryview(records)[header.position:
                                                       header.position + header.size], compacted)
            return records, header
        headers = validate_batches(mv, config.max_message_bytes)
        if not headers:
            return records, None
        header = headers[0]
        self._validate_records(mv[header.position:header.position + header.size], compacted)
        return records, header

    def _validate_records(self, batch: memoryview, compacted: bool) -> None:
        values = self.log.config.values
        check_records(
            batch, f"{self.topic}-{self.index}", self.log.clock.time_ms(), compacted=compacted,
            timestamp_type=values.get("message.timestamp.type", CREATE_TIME),
            before_max_ms=int(values.get("message.timestamp.before.max.ms", LONG_MAX)),
            after_max_ms=int(values.get("message.timestamp.after.max.ms", LONG_MAX)))

    def has_ongoing_transaction(self, producer_id: int) -> bool:
        """Whether ``producer_id`` has an open transaction here (Kafka skips verification)."""
        entry = self.log.producer_state.last_entry(producer_id)
        return entry is not None and entry.current_txn_first_offset >= 0

    def append_internal(self, records: bytes) -> AppendResult:
        """Append one batch the broker built itself (coordinator records): no client checks,
        but the topic's max.message.bytes holds (Kafka's append checks it for every origin),
        so a group with megabytes of member metadata is refused, not persisted."""
        log = self.log
        if len(records) > log.config.max_message_bytes:
            return AppendResult(ErrorCode.MESSAGE_TOO_LARGE,
                                error_message=f"The batch of {len(records)} bytes is larger than "
                                              f"max.message.bytes {log.config.max_message_bytes}")
        try:
            self.check_leader()
            info = log.append_as_leader(bytearray(records), read_header(records), self.leader_epoch)
        except KafkaError as err:
            return AppendResult(err.code, error_message=err.message)
        except OSError as err:
            return self._failed_append(err)
        return self._appended(info)

    def _failed_append(self, err: OSError) -> AppendResult:
        self._storage_failed(err)
        return AppendResult(ErrorCode.KAFKA_STORAGE_ERROR,
                            error_message=f"Error while appending records to {self.topic}-{self.index} "
                                          f"in dir {self.log.dir}: {err}")

    def _check_online(self) -> None:
        if self.log.offline:
            raise KafkaError(ErrorCode.KAFKA_STORAGE_ERROR,
                             f"the log dir of {self.topic}-{self.index} is offline")

    # -- leadership -----------------------------------------------------------------------
    def make_leader(self, state: PartitionState, now_ms: int | None = None) -> bool:
        """Become (or stay) the leader as ``state`` says; True if this broker was not the
        leader before.  Kafka's Partition.makeLeader: a new leader epoch starts at the log
        end; a new leader forgets the followers' log ends; the high watermark stays, or
        moves up when the ISR is down to this broker."""
        now = self.log.clock.time_ms() if now_ms is None else now_ms
        was_leader = self._role == "leader"
        new_epoch = state.leader_epoch > self.state.leader_epoch or not was_leader
        self._role = "leader"
        self.state = state
        log = self.log
        cache = log.leader_epoch_cache
        if not log.offline and (cache.latest_epoch is None
                                or state.leader_epoch > cache.latest_epoch):
            # OffsetForLeaderEpoch / diverging-epoch answers can place the new epoch
            # before anything is appended in it.
            cache.assign(state.leader_epoch, log.log_end_offset)
        self._track_followers(new_leader=not was_leader, now_ms=now, reset=new_epoch)
        self._maybe_increment_high_watermark()
        return not was_leader

    def make_follower(self, state: PartitionState) -> bool:
        """Follow ``state.leader``; True when the fetcher must (re)start from the log end
        (a new leader or leader epoch).  Nothing is truncated here: as Kafka 3.9, the
        fetcher truncates on the leader's diverging-epoch answer (``truncation``); the
        ``truncate_to_hw`` test hook restores pre-KIP-101 truncation to the HW."""
        changed = (self._role != "follower" or state.leader != self.state.leader
                   or state.leader_epoch > self.leader_epoch)
        self._role = "follower"
        self.state = state
        self.followers.clear()
        # Only when the fetcher restarts: a running one fetches from the log end it knows.
        if changed:
            truncation.on_become_follower(self)
        return changed

    def _track_followers(self, new_leader: bool, now_ms: int, reset: bool = True) -> None:
        """Kafka's resetReplicaState over the assigned replicas other than this one."""
        isr = set(self.state.isr)
        tracked: dict[int, FollowerState] = {}
        for replica in self.state.replicas:
            if replica == self.node_id:
                continue
            old = None if new_leader else self.followers.get(replica)
            caught_up = now_ms if replica in isr else 0
            if old is None:
                tracked[replica] = FollowerState(last_caught_up_ms=caught_up)
            elif reset:
                tracked[replica] = FollowerState(old.log_end_offset, old.log_start_offset,
                                                 now_ms if replica in isr else 0, caught_up,
                                                 old.broker_epoch)
            else:
                tracked[replica] = old
        self.followers = tracked

    # -- the leader's side of follower fetches ----------------------------------------------
    def update_follower_fetch(self, replica_id: int, fetch_offset: int, now_ms: int,
                              log_start_offset: int = _UNKNOWN, broker_epoch: int = -1) -> bool:
        """A follower fetched from ``fetch_offset``: that is its log end.  Returns whether
        the high watermark moved (the caller then wakes delayed produces and fetches)."""
        follower = self.followers.get(replica_id)
        if follower is None or not self.is_leader:
            return False
        previous = follower.log_end_offset
        follower.log_end_offset = fetch_offset
        follower.log_start_offset = log_start_offset
        follower.broker_epoch = broker_epoch
        follower.last_fetch_ms = now_ms
        if fetch_offset >= self.log.log_end_offset:
            follower.last_caught_up_ms = now_ms
        if previous == fetch_offset:
            return False
        return self._maybe_increment_high_watermark()

    def _maybe_increment_high_watermark(self) -> bool:
        """HW = the smallest log end offset over the ISR; it only grows (Kafka's
        maybeIncrementLeaderHW).  An ISR member whose log end is unknown holds it."""
        if not self.is_leader:
            return False
        log = self.log
        candidate = log.log_end_offset
        for replica in self.state.isr:
            if replica == self.node_id:
                continue
            follower = self.followers.get(replica)
            leo = follower.log_end_offset if follower is not None else _UNKNOWN
            candidate = min(candidate, leo)
        if candidate > log.high_watermark:
            log.high_watermark = candidate
            return True
        return False

    # -- the follower's side ------------------------------------------------------------
    def append_as_follower(self, records) -> int:
        """Append the leader's batches as they are; returns the new log end offset.

        Whole batches only (a fetch answer may end with a partial one, dropped as Kafka
        drops it); batches wholly below the log end are skipped; a batch that fails its
        CRC raises CORRUPT_MESSAGE before anything after it is written.  The producer
        state and the leader-epoch cache learn from the batches (Log.append_as_follower).
        """
        log = self.log
        mv = memoryview(records)
        appended = 0
        try:
            for header in iter_headers(mv):
                if header.last_offset < log.log_end_offset:
                    continue
                if header.magic != 2 or not is_crc_valid(mv, header):
                    raise RecordError(ErrorCode.CORRUPT_MESSAGE,
                                      f"Record batch at offset {header.base_offset} from the "
                                      f"leader of {self.topic}-{self.index} is corrupt")
                self._check_online()
                log.append_as_follower(mv, header)
                appended += header.size
        except OSError as err:
            self._storage_failed(err)
            raise KafkaError(ErrorCode.KAFKA_STORAGE_ERROR, str(err)) from None
        if appended:
            if log.log_end_offset - log.recovery_point >= log.config.flush_messages:
                log.flush()
        return log.log_end_offset

    def update_follower_high_watermark(self, leader_high_watermark: int,
                                       leader_log_start_offset: int = _UNKNOWN) -> int:
        """Follower HW = min(own log end, the leader's HW); the log start follows the
        leader's when that is within what this log holds below its HW."""
        log = self.log
        log.high_watermark = min(log.log_end_offset, leader_high_watermark)
        if log.log_start_offset < leader_log_start_offset <= log.high_watermark:
            log.maybe_increment_log_start_offset(leader_log_start_offset)
        return log.high_watermark

    def _appended(self, info) -> AppendResult:
        """A sole in-sync replica's high watermark follows its log end at once."""
        if len(self.state.isr) <= 1:
            self.log.high_watermark = self.log.log_end_offset
        return AppendResult(0, info.first_offset, info.log_append_time_ms,
                            info.log_start_offset, last_offset=info.last_offset)

    def offset_metadata(self, offset: int) -> LogOffsetMetadata:
        """Segment and byte position of ``offset`` (the batch holding it, or the log end)."""
        log = self.log
        if offset >= log.log_end_offset:
            active = log.segments[-1]
            return LogOffsetMetadata(log.log_end_offset, active.base_offset, active.size)
        segment = log.segments[log.segment_for(offset)]
        found = segment.find_offset_position(offset)
        position = found.position if found is not None else segment.size
        return LogOffsetMetadata(offset, segment.base_offset, position)

    def check_leader(self, current_leader_epoch: int = -1) -> None:
        """Raise unless this replica leads, at the epoch the client knows (if it says)."""
        if not self.is_leader:
            raise KafkaError(ErrorCode.NOT_LEADER_OR_FOLLOWER)
        self._check_online()
        if current_leader_epoch >= 0:
            if current_leader_epoch < self.leader_epoch:
                raise KafkaError(ErrorCode.FENCED_LEADER_EPOCH)
            if current_leader_epoch > self.leader_epoch:
                raise KafkaError(ErrorCode.UNKNOWN_LEADER_EPOCH)
