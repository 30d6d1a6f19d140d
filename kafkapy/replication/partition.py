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
single replica the high watermark follows the log end offset; the replication
issue makes it follow the ISR.  A write that fails with an
OSError takes the log's dir offline (``storage_failed``) and is answered
KAFKA_STORAGE_ERROR; so is every later request to a partition whose log is
offline.
"""
from __future__ import annotations

from dataclasses import dataclass, field
from typing import Callable

from kafkapy import metrics
from kafkapy.metadata.cache import PartitionState
from kafkapy.native import CREATE_TIME, LONG_MAX
from kafkapy.protocol.errors import ErrorCode, KafkaError
from kafkapy.purgatory.delayed_fetch import LogOffsetMetadata
from kafkapy.records.batch import RecordError, read_header, validate_batches
from kafkapy.records.legacy import first_magic, up_convert
from kafkapy.records.validation import check_records

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
