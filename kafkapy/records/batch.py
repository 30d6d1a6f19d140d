"""RecordBatch v2 header view, leader-side validation and in-place patching.

This is the produce/fetch hot path: a batch stays opaque bytes.  Only the
61-byte header is read (one ``struct.unpack_from`` on a memoryview) and the
CRC-32C is computed by the ``crc32c`` C extension over a memoryview slice.
No record inside a batch is ever decoded here (see ``record.py`` for that).

Header layout (big-endian; Kafka's DefaultRecordBatch):

    0  baseOffset int64        8  batchLength int32     12 partitionLeaderEpoch int32
    16 magic int8             17  crc uint32 (CRC-32C over bytes 21..end)
    21 attributes int16       23  lastOffsetDelta int32 27 baseTimestamp int64
    35 maxTimestamp int64     43  producerId int64      51 producerEpoch int16
    53 baseSequence int32     57  recordsCount int32    61 records...

Invariants: a batch occupies ``12 + batchLength`` bytes; baseOffset and
partitionLeaderEpoch lie outside the CRC so the leader may overwrite them
without recomputing it; changing attributes or maxTimestamp requires a new CRC.
"""
from __future__ import annotations

import struct
from typing import Iterator

import crc32c as _crc32c

from kafkapy.protocol.errors import ErrorCode, KafkaError

HEADER_SIZE = 61
LOG_OVERHEAD = 12
CRC_START = 21
MAGIC_OFFSET = 16
MIN_BATCH_LENGTH = HEADER_SIZE - LOG_OVERHEAD  # 49

ATTR_COMPRESSION_MASK = 0x07
ATTR_TIMESTAMP_TYPE = 0x08
ATTR_TRANSACTIONAL = 0x10
ATTR_CONTROL = 0x20
ATTR_DELETE_HORIZON = 0x40

COMPRESSION_NONE = 0
COMPRESSION_GZIP = 1
COMPRESSION_SNAPPY = 2
COMPRESSION_LZ4 = 3
COMPRESSION_ZSTD = 4

TIMESTAMP_CREATE_TIME = 0
TIMESTAMP_LOG_APPEND_TIME = 1

NO_PRODUCER_ID = -1
NO_PRODUCER_EPOCH = -1
NO_SEQUENCE = -1
NO_TIMESTAMP = -1
INT32_MAX = 0x7FFFFFFF

_HEADER = struct.Struct(">qiibIhiqqqhii")
assert _HEADER.size == HEADER_SIZE
_INT64 = struct.Struct(">q")
_INT32 = struct.Struct(">i")
_UINT32 = struct.Struct(">I")
_INT16 = struct.Struct(">h")
_LENGTH_PREFIX = struct.Struct(">qi")


def crc32c(data) -> int:
    """CRC-32C (Castagnoli) of a bytes-like object, as an unsigned int."""
    return _crc32c.crc32c(data)


class RecordError(KafkaError):
    """A batch was rejected; ``code`` is the Kafka error code to answer with.

    ``record_errors`` lists (batch index, message) of the records that failed
    Kafka's record-level checks (``validation.py``); empty for batch-level errors.
    """

    def __init__(self, code: int, message: str | None = None,
                 record_errors: list[tuple[int, str]] | None = None) -> None:
        super().__init__(code, message)
        self.record_errors = record_errors or []


class BatchHeader:
    """The 61-byte header of one v2 batch, plus where it was read.

    ``position`` is the byte offset of the batch in the buffer (or file) it was
    read from.  Offsets are as stored; after ``patch_for_append`` call
    ``read_header`` again (or use the returned values) for the new offsets.
    """

    __slots__ = ("base_offset", "batch_length", "partition_leader_epoch", "magic", "crc",
                 "attributes", "last_offset_delta", "base_timestamp", "max_timestamp",
                 "producer_id", "producer_epoch", "base_sequence", "records_count",
                 "position")

    def __init__(self, base_offset: int, batch_length: int, partition_leader_epoch: int,
                 magic: int, crc: int, attributes: int, last_offset_delta: int,
                 base_timestamp: int, max_timestamp: int, producer_id: int,
                 producer_epoch: int, base_sequence: int, records_count: int,
                 position: int = 0) -> None:
        self.base_offset = base_offset
        self.batch_length = batch_length
        self.partition_leader_epoch = partition_leader_epoch
        self.magic = magic
        self.crc = crc
        self.attributes = attributes
        self.last_offset_delta = last_offset_delta
        self.base_timestamp = base_timestamp
        self.max_timestamp = max_timestamp
        self.producer_id = producer_id
        self.producer_epoch = producer_epoch
        self.base_sequence = base_sequence
        self.records_count = records_count
        self.position = position

    @property
    def size(self) -> int:
        return LOG_OVERHEAD + self.batch_length

    @property
    def last_offset(self) -> int:
        return self.base_offset + self.last_offset_delta

    @property
    def next_offset(self) -> int:
        return self.base_offset + self.last_offset_delta + 1

    @property
    def compression(self) -> int:
        return self.attributes & ATTR_COMPRESSION_MASK

    @property
    def timestamp_type(self) -> int:
        return 1 if self.attributes & ATTR_TIMESTAMP_TYPE else 0

    @property
    def is_transactional(self) -> bool:
        return bool(self.attributes & ATTR_TRANSACTIONAL)

    @property
    def is_control(self) -> bool:
        return bool(self.attributes & ATTR_CONTROL)

    @property
    def has_producer_id(self) -> bool:
        return self.producer_id > NO_PRODUCER_ID

    @property
    def last_sequence(self) -> int:
        """Sequence of the last record; wraps past 2^31-1 back to 0 (Kafka's rule)."""
        seq = self.base_sequence
        if seq == NO_SEQUENCE:
            return NO_SEQUENCE
        return increment_sequence(seq, self.last_offset_delta)

    def __repr__(self) -> str:
        return (f"BatchHeader(base_offset={self.base_offset}, last_offset={self.last_offset}, "
                f"size={self.size}, magic={self.magic}, attributes={self.attributes:#x}, "
                f"count={self.records_count}, max_ts={self.max_timestamp}, "
                f"pid={self.producer_id}, epoch={self.producer_epoch}, "
                f"seq={self.base_sequence}, position={self.position})")


def increment_sequence(sequence: int, increment: int) -> int:
    """Kafka's DefaultRecordBatch.incrementSequence: wraps past INT32_MAX to 0."""
    if sequence > INT32_MAX - increment:
        return increment - (INT32_MAX - sequence) - 1
    return sequence + increment


def read_header(buf, pos: int = 0) -> BatchHeader:
    """Read the v2 header at ``pos`` (needs 61 bytes; raises struct.error if short).

    The fields are read as v2 regardless of the magic byte; callers check
    ``magic`` before trusting bytes 17..60.
    """
    return BatchHeader(*_HEADER.unpack_from(buf, pos), pos)


def peek_size(buf, pos: int = 0) -> int:
    """Total size (12 + length) of the entry at ``pos``; needs 12 bytes."""
    return LOG_OVERHEAD + _INT32.unpack_from(buf, pos + 8)[0]


class HeaderIterator:
    """Iterates the batch headers of a buffer; stops cleanly at a torn tail.

    After iteration, ``truncated`` is True when bytes were left over that do
    not form a whole batch (fewer than 61 bytes, a length that runs past the
    end of the buffer, or a length below the v2 minimum), and ``valid_bytes``
    is the end of the last whole batch.  No CRC check is done here.
    """

    __slots__ = ("_buf", "_end", "valid_bytes", "truncated")

    def __init__(self, buf, start: int = 0) -> None:
        self._buf = buf
        self._end = len(buf)
        self.valid_bytes = start
        self.truncated = False

    def __iter__(self) -> Iterator[BatchHeader]:
        buf, end = self._buf, self._end
        pos = self.valid_bytes
        unpack = _HEADER.unpack_from
        while pos < end:
            if end - pos < HEADER_SIZE:
                self.truncated = True
                return
            fields = unpack(buf, pos)
            length = fields[1]
            if length < MIN_BATCH_LENGTH or pos + LOG_OVERHEAD + length > end:
                self.truncated = True
                return
            yield BatchHeader(*fields, pos)
            pos += LOG_OVERHEAD + length
            self.valid_bytes = pos


def iter_headers(buf, start: int = 0) -> HeaderIterator:
    """Headers of the whole batches in ``buf``; see ``HeaderIterator.truncated``."""
    return HeaderIterator(buf, start)


def compute_crc(buf, header: BatchHeader) -> int:
    """CRC-32C over the CRC-covered part (attributes..end) of the batch."""
    start = header.position + CRC_START
    return _crc32c.crc32c(memoryview(buf)[start:header.position + header.size])


def is_crc_valid(buf, header: BatchHeader) -> bool:
    return compute_crc(buf, header) == header.crc


LEGACY_RECORD_OVERHEAD_V0 = 14  # smallest magic-0 message body: Kafka's size floor for any entry
HEADER_SIZE_UP_TO_MAGIC = MAGIC_OFFSET + 1


def next_entry_size(mv, pos: int, n: int) -> int:
    """Size of the entry (batch or legacy message) at ``pos``, by Kafka's rules.

    Mirrors ByteBufferLogInputStream.nextBatch: 0 when the bytes left hold no
    whole entry (Kafka stops there and drops them); CORRUPT_MESSAGE for a size
    field below 14 or a magic byte above 2.
    """
    remaining = n - pos
    if remaining < LOG_OVERHEAD:
        return 0
    length = _INT32.unpack_from(mv, pos + 8)[0]
    if length < LEGACY_RECORD_OVERHEAD_V0:
        raise RecordError(ErrorCode.CORRUPT_MESSAGE,
                          f"Record size {length} is less than the minimum record overhead "
                          f"({LEGACY_RECORD_OVERHEAD_V0})")
    if remaining < HEADER_SIZE_UP_TO_MAGIC:
        return 0
    magic = mv[pos + MAGIC_OFFSET]
    if magic > 2:
        raise RecordError(ErrorCode.CORRUPT_MESSAGE,
                          f"Invalid magic found in record: {magic - 256 if magic > 127 else magic}")
    size = LOG_OVERHEAD + length
    return size if remaining >= size else 0


def check_produce_request(buf, produce_version: int) -> None:
    """Kafka's ProduceRequest.validateRecords (v3+): exactly one magic-2 batch, zstd from v7.

    Raises ``RecordError``; Kafka answers these before the log is reached, so
    the partition gets no log start offset and no error message.
    """
    if produce_version < 3:
        return
    mv = buf if isinstance(buf, memoryview) else memoryview(buf)
    n = len(mv)
    size = next_entry_size(mv, 0, n)
    if not size:
        raise RecordError(ErrorCode.INVALID_RECORD,
                          f"Produce requests with version {produce_version} must have at least "
                          "one record batch per partition")
    if mv[MAGIC_OFFSET] != 2:
        raise RecordError(ErrorCode.INVALID_RECORD,
                          f"Produce requests with version {produce_version} are only allowed to "
                          "contain record batches with magic version 2")
    if produce_version < 7 and _INT16.unpack_from(mv, 21)[0] & ATTR_COMPRESSION_MASK == \
            COMPRESSION_ZSTD:
        raise RecordError(ErrorCode.UNSUPPORTED_COMPRESSION_TYPE,
                          f"Produce requests with version {produce_version} are not allowed to "
                          "use ZStandard compression")
    if next_entry_size(mv, size, n):
        raise RecordError(ErrorCode.INVALID_RECORD,
                          f"Produce requests with version {produce_version} are only allowed to "
                          "contain exactly one record batch per partition")


def validate_for_append(buf, max_message_bytes: int, produce_version: int) -> list[BatchHeader]:
    """``check_produce_request`` then ``validate_batches``: all of Kafka's header checks."""
    check_produce_request(buf, produce_version)
    return validate_batches(buf, max_message_bytes)


def validate_batches(buf, max_message_bytes: int) -> list[BatchHeader]:
    """Kafka's leader-side header checks of magic-2 data, once it reaches the log.

    Mirrors UnifiedLog.analyzeAndValidateRecords (per batch: base offset 0,
    size vs max.message.bytes, CRC; bytes after the last whole batch are
    dropped) and LogValidator.validateBatch (one batch; offset range vs count;
    no control batches from clients; a producer id needs a sequence).  Raises
    ``RecordError``; returns the headers: one, or none when no whole batch was
    sent (Produce v0-2 only: Kafka then appends nothing and answers success).
    """
    mv = buf if isinstance(buf, memoryview) else memoryview(buf)
    n = len(mv)
    headers: list[BatchHeader] = []
    pos = 0
    while size := next_entry_size(mv, pos, n):
        if mv[pos + MAGIC_OFFSET] != 2:  # magic 0/1 sets are up-converted before (legacy.py)
            raise RecordError(ErrorCode.INVALID_RECORD,
                              f"Batch magic {mv[pos + MAGIC_OFFSET]} is not the same as the "
                              "first batch's magic byte 2")
        headers.append(check_stored_batch(mv, pos, size, max_message_bytes))
        pos += size
    if len(headers) > 1:
        raise RecordError(ErrorCode.INVALID_RECORD,
                          "Compressed outer record has more than one batch")
    if headers:
        _check_client_batch(headers[0])
    return headers


def check_stored_batch(mv, pos: int, size: int, max_message_bytes: int) -> BatchHeader:
    """analyzeAndValidateRecords for one v2 batch: base offset, size, CRC."""
    base_offset = _INT64.unpack_from(mv, pos)[0]
    if base_offset != 0:
        raise RecordError(ErrorCode.INVALID_RECORD,
                          f"The baseOffset of the record batch should be 0, but it is "
                          f"{base_offset}")
    if size > max_message_bytes:
        raise RecordError(ErrorCode.MESSAGE_TOO_LARGE,
                          f"The record batch size {size} bytes exceeds the maximum "
                          f"allowed {max_message_bytes} (max.message.bytes)")
    if size < HEADER_SIZE:
        raise RecordError(ErrorCode.CORRUPT_MESSAGE,
                          f"Record batch is corrupt (the size of the batch {size} is smaller "
                          f"than the minimum allowed overhead {HEADER_SIZE})")
    h = BatchHeader(*_HEADER.unpack_from(mv, pos), pos)
    computed = _crc32c.crc32c(mv[pos + CRC_START:pos + size])
    if computed != h.crc:
        raise RecordError(ErrorCode.CORRUPT_MESSAGE,
                          f"Record is corrupt (stored crc = {h.crc}, computed crc = "
                          f"{computed})")
    if h.compression > COMPRESSION_ZSTD:
        raise RecordError(ErrorCode.UNSUPPORTED_COMPRESSION_TYPE,
                          f"Unknown compression type id: {h.compression}")
    return h


def _check_client_batch(h: BatchHeader) -> None:
    """LogValidator.validateBatch for a client's batch."""
    if h.last_offset_delta < 0:
        raise RecordError(ErrorCode.INVALID_RECORD,
                          f"Batch has an invalid offset range: [{h.base_offset}, "
                          f"{h.last_offset}]")
    if h.records_count <= 0:
        raise RecordError(ErrorCode.INVALID_RECORD,
                          f"Invalid reported count for record batch: {h.records_count}")
    if h.last_offset_delta + 1 != h.records_count:
        raise RecordError(ErrorCode.INVALID_RECORD,
                          f"Inconsistent batch offset range [{h.base_offset}, "
                          f"{h.last_offset}] and count of records {h.records_count}")
    if h.is_control:
        raise RecordError(ErrorCode.INVALID_RECORD,
                          "Clients are not allowed to write control records")
    if h.has_producer_id and h.base_sequence < 0:
        raise RecordError(ErrorCode.INVALID_RECORD,
                          f"Invalid sequence number {h.base_sequence} in record batch "
                          f"with producerId {h.producer_id}")


def patch_for_append(buf, header: BatchHeader, base_offset: int, leader_epoch: int,
                     log_append_time_ms: int | None = None) -> None:
    """Assign offsets in place, as the leader does on append.

    Writes baseOffset and partitionLeaderEpoch (outside the CRC).  When
    ``log_append_time_ms`` is given, the batch becomes LOG_APPEND_TIME with that
    maxTimestamp (``set_max_timestamp``).  Updates ``header`` to match.
    ``buf`` must be writable (bytearray or a writable memoryview).
    """
    pos = header.position
    _INT64.pack_into(buf, pos, base_offset)
    _INT32.pack_into(buf, pos + 12, leader_epoch)
    header.base_offset = base_offset
    header.partition_leader_epoch = leader_epoch
    if log_append_time_ms is not None:
        set_max_timestamp(buf, header, TIMESTAMP_LOG_APPEND_TIME, log_append_time_ms)


def set_max_timestamp(buf, header: BatchHeader, timestamp_type: int, max_timestamp: int):
    """Kafka's DefaultRecordBatch.setMaxTimestamp, which LogValidator calls on every batch
    it appends in place (CreateTime: the largest record timestamp; LogAppendTime: now).

    Nothing changes when the batch already has that timestamp type and maxTimestamp.
    Otherwise the attributes are rebuilt as Java's computeAttributes does (codec,
    timestamp type, transactional, control, delete horizon: any other bit is cleared),
    maxTimestamp is written and the CRC recomputed; ``header`` is updated to match.
    Returns the buffer holding the batch: ``buf`` itself, or a writable copy of it when
    it had to change and ``buf`` is read-only.
    """
    if header.timestamp_type == timestamp_type and header.max_timestamp == max_timestamp:
        return buf
    if isinstance(buf, bytes) or (isinstance(buf, memoryview) and buf.readonly):
        buf = bytearray(buf)
    attributes = header.attributes & (ATTR_COMPRESSION_MASK | ATTR_TRANSACTIONAL |
                                      ATTR_CONTROL | ATTR_DELETE_HORIZON)
    if timestamp_type == TIMESTAMP_LOG_APPEND_TIME:
        attributes |= ATTR_TIMESTAMP_TYPE
    pos = header.position
    _INT16.pack_into(buf, pos + 21, attributes)
    _INT64.pack_into(buf, pos + 35, max_timestamp)
    crc = _crc32c.crc32c(memoryview(buf)[pos + CRC_START:pos + header.size])
    _UINT32.pack_into(buf, pos + 17, crc)
    header.attributes = attributes
    header.max_timestamp = max_timestamp
    header.crc = crc
    return buf


def set_base_offset(buf, pos: int, base_offset: int) -> None:
    """Overwrite only baseOffset (no CRC change)."""
    _INT64.pack_into(buf, pos, base_offset)


# Re-exported for record.py and the log package.
HEADER_STRUCT = _HEADER
