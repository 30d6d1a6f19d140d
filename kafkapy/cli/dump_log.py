"""``kafkapy-dump-log``: Kafka 3.9's ``bin/kafka-dump-log.sh`` (kafka.tools.DumpLogSegments).

Reads the files of any Kafka log directory (kafkapy's or Kafka's: the formats are the same)
and prints them in Kafka's words, line for line: ``--files a,b,c`` in order, each announced
by ``Dumping <path>`` and chosen by its suffix:

- ``.log``: ``Log starting offset: N``, one line per batch ("baseOffset: ... isvalid: ...")
  and with ``--deep-iteration`` (implied by ``--print-data-log`` and any decoder option) one
  ``| offset: ...`` line per record (control records: the end-transaction marker), keys and
  values decoded by ``--key/value-decoder-class``, ``--offsets-decoder``
  (``__consumer_offsets``), ``--transaction-log-decoder`` (``__transaction_state``) or
  Kafka 4.x's ``--share-group-state-decoder`` (``__share_group_state``);
  ``--max-bytes`` stops after that many bytes; trailing bytes that form no whole batch are
  reported ("Found N invalid bytes at the end of ..."), non-consecutive offsets on stderr;
- ``.index`` / ``.timeindex``: their entries, each checked against the segment's ``.log``
  (mismatches on stderr after all files), or ``--verify-index-only`` (checks, no listing),
  or ``--index-sanity-check`` (the broker's startup check);
- ``.snapshot``: the producer-state entries; ``.txnindex``: the aborted transactions;
- magic 0/1 message sets (old message formats) as Kafka prints them, compressed wrappers'
  inner messages included;
- anything else: "Ignoring unknown file" on stderr. A name without a dot (Kafka's
  checkpoint files) makes Kafka's tool die on ``substring(-1)``; so does this one, in words.

Where Kafka's tool dies on an uncaught exception (a corrupt index under
``--index-sanity-check``, an entry size below 14 bytes, ...), this tool prints the first line
Java prints (``Exception in thread "main" <class>: <message>``), no stack trace, exit 1.

The bytes are read by kafkapy's own storage code: batch headers and CRCs
(``records.batch``), records and codecs (``records.record``), legacy messages
(``records.legacy``), aborted transactions (``log.transaction_index``), producer snapshots
(``log.producer_state``). Index files are read here, read-only: ``log.offset_index`` and
``log.time_index`` open files for writing and trim them, which a dump must never do, and
Kafka's tool counts every 8/12-byte slot of the file (preallocated zero slots included)
where the broker's classes find the valid prefix.

Not supported: ``--cluster-metadata-decoder`` and ``--remote-log-metadata-decoder`` (kafkapy
runs in ZooKeeper mode and has no KRaft or tiered-storage records), KRaft ``.checkpoint``
snapshots, custom decoder classes (only Kafka's String/Integer/Long/Default decoders).
"""
from __future__ import annotations

import argparse
import mmap
import os
import re
import struct
import sys

from kafkapy.cli._dump_decoders import (DecoderParser, OffsetsParser, ParseError,
                                        ShareGroupStateParser, TransactionLogParser)
from kafkapy.jvm import scala_mutable_hash_order, string_hash
from kafkapy.log.producer_state import ProducerStateManager
from kafkapy.log.transaction_index import TransactionIndex
from kafkapy.records import legacy
from kafkapy.records.batch import (ATTR_DELETE_HORIZON, HEADER_SIZE, LOG_OVERHEAD, BatchHeader,
                                   crc32c, is_crc_valid, read_header)
from kafkapy.records.record import RecordError, decode_records, decompress

_INT_MAX = 2 ** 31 - 1
_HEADER_SIZE_UP_TO_MAGIC = 17
_RECORD_OVERHEAD_V0 = 14
_CODECS = ("none", "gzip", "snappy", "lz4", "zstd")
_CONTROL_TYPES = {0: "ABORT", 1: "COMMIT", 2: "LEADER_CHANGE", 3: "SNAPSHOT_HEADER",
                  4: "SNAPSHOT_FOOTER", 5: "KRAFT_VERSION", 6: "KRAFT_VOTERS"}
_OFFSET_ENTRY = struct.Struct(">ii")
_TIME_ENTRY = struct.Struct(">qi")
_SNAPSHOT_HEAD = struct.Struct(">hI")
_DESCRIPTION = ("This tool helps to parse a log file and dump its contents to the console, "
                "useful for debugging a seemingly corrupt log segment.")


class JavaException(Exception):
    """What Kafka's tool would die of: printed as Java's first stack-trace line, exit 1."""

    def __init__(self, java_class: str, message: str | None = None) -> None:
        super().__init__(java_class if message is None else f"{java_class}: {message}")


class _Parser(argparse.ArgumentParser):
    def error(self, message: str):
        print(message, file=sys.stderr)
        self.print_help(sys.stderr)
        sys.exit(1)


def _parser() -> _Parser:
    p = _Parser(prog="kafkapy-dump-log", description=_DESCRIPTION)
    p.add_argument("--files", metavar="file1, file2, ...",
                   help="REQUIRED: The comma separated list of data and index log files to be "
                        "dumped.")
    p.add_argument("--print-data-log", action="store_true",
                   help="If set, printing the messages content when dumping data logs. "
                        "Automatically set if any decoder option is specified.")
    p.add_argument("--verify-index-only", action="store_true",
                   help="If set, just verify the index log without printing its content.")
    p.add_argument("--index-sanity-check", action="store_true",
                   help="If set, just checks the index sanity without printing its content. "
                        "This is the same check that is executed on broker startup to determine "
                        "if an index needs rebuilding or not.")
    p.add_argument("--max-message-size", type=int, default=5 * 1024 * 1024, metavar="size",
                   help="Size of largest message. (default: 5242880)")
    p.add_argument("--max-bytes", type=int, default=_INT_MAX, metavar="size",
                   help="Limit the amount of total batches read in bytes avoiding reading the "
                        "whole .log file(s). (default: 2147483647)")
    p.add_argument("--deep-iteration", action="store_true",
                   help="If set, uses deep instead of shallow iteration. Automatically set if "
                        "print-data-log is enabled.")
    p.add_argument("--value-decoder-class", nargs="?", const="", default=None,
                   help="If set, used to deserialize the messages: Kafka's "
                        "org.apache.kafka.tools.api.StringDecoder (default), IntegerDecoder, "
                        "LongDecoder or DefaultDecoder.")
    p.add_argument("--key-decoder-class", nargs="?", const="", default=None,
                   help="If set, used to deserialize the keys: Kafka's "
                        "org.apache.kafka.tools.api.StringDecoder (default), IntegerDecoder, "
                        "LongDecoder or DefaultDecoder.")
    p.add_argument("--offsets-decoder", action="store_true",
                   help="If set, log data will be parsed as offset data from the "
                        "__consumer_offsets topic.")
    p.add_argument("--transaction-log-decoder", action="store_true",
                   help="If set, log data will be parsed as transaction metadata from the "
                        "__transaction_state topic.")
    p.add_argument("--cluster-metadata-decoder", action="store_true",
                   help="If set, log data will be parsed as cluster metadata records "
                        "(not supported: kafkapy runs in ZooKeeper mode).")
    p.add_argument("--remote-log-metadata-decoder", action="store_true",
                   help="If set, log data will be parsed as TopicBasedRemoteLogMetadataManager "
                        "(RLMM) metadata records (not supported by kafkapy).")
    p.add_argument("--share-group-state-decoder", action="store_true",
                   help="If set, log data will be parsed as share group state data from the "
                        "__share_group_state topic.")
    p.add_argument("--skip-record-metadata", action="store_true",
                   help="Whether to skip printing metadata for each record.")
    p.add_argument("--version", action="store_true", help="Display Kafka version.")
    return p


def main(argv: list[str] | None = None) -> int:
    parser = _parser()
    raw = sys.argv[1:] if argv is None else argv
    if not raw:
        print(_DESCRIPTION, file=sys.stderr)
        parser.print_help(sys.stderr)
        return 1
    args = parser.parse_args(raw)
    if args.version:
        print("3.9.0")
        return 0
    if not args.files:
        print('Missing required argument "[files]"', file=sys.stderr)
        parser.print_help(sys.stderr)
        return 1
    if args.cluster_metadata_decoder or args.remote_log_metadata_decoder:
        print("kafkapy-dump-log: --cluster-metadata-decoder and --remote-log-metadata-decoder "
              "are not supported (kafkapy has no KRaft or tiered-storage metadata)",
              file=sys.stderr)
        return 1
    dump = _Dump(args)
    try:
        dump.run()
    except JavaException as e:
        sys.stdout.flush()
        print(f'Exception in thread "main" {e}', file=sys.stderr)
        return 1
    except BrokenPipeError:
        os.dup2(os.open(os.devnull, os.O_WRONLY), sys.stdout.fileno())
        return 1
    except KeyboardInterrupt:
        return 130
    except Exception as e:  # damaged bytes nobody foresaw: Kafka dies too, in its words
        sys.stdout.flush()
        print(f'Exception in thread "main" org.apache.kafka.common.KafkaException: {e!r}',
              file=sys.stderr)
        return 1
    return 0


# ------------------------------------------------------------------ Java's File

def _java_path(path: str) -> str:
    """``new File(path).toString``: repeated and trailing separators removed."""
    text = re.sub("/+", "/", path)
    return text[:-1] if len(text) > 1 and text.endswith("/") else text


def _absolute(path: str) -> str:
    """``File.getAbsolutePath``: relative paths joined to the working directory, unnormalized."""
    return path if path.startswith("/") else os.path.join(os.getcwd(), path)


def _base_offset(name: str) -> int:
    """``name.split("\\\\.")(0).toLong``, Java's NumberFormatException included."""
    text = name.split(".")[0]
    if not re.fullmatch(r"[+-]?[0-9]+", text) or not -2 ** 63 <= int(text) < 2 ** 63:
        raise JavaException("java.lang.NumberFormatException", f'For input string: "{text}"')
    return int(text)


def _read_file(path: str):
    """The file's bytes, mapped read-only (a 1 GiB segment is not copied); b"" if empty."""
    try:
        with open(path, "rb") as f:
            if os.fstat(f.fileno()).st_size == 0:
                return b""
            return mmap.mmap(f.fileno(), 0, access=mmap.ACCESS_READ)
    except FileNotFoundError:
        raise JavaException("java.nio.file.NoSuchFileException", path) from None


def _print(*parts: str, end: str = "\n") -> None:
    sys.stdout.write("".join(parts) + end)


def _err(text: str) -> None:
    sys.stdout.flush()
    print(text, file=sys.stderr)


# ------------------------------------------------------------------ batches of a file

class _Batch:
    """One entry of a FileRecords by Kafka's FileLogInputStream: v2 batch or legacy message."""

    def __init__(self, data: bytes, pos: int, size: int, magic: int, offset: int) -> None:
        self.data, self.pos, self.size, self.magic, self.offset = data, pos, size, magic, offset
        self._header: BatchHeader | None = None
        self._legacy = None

    @property
    def header(self) -> BatchHeader:
        if self._header is None:
            if self.pos + HEADER_SIZE > len(self.data):
                raise JavaException(
                    "java.io.EOFException",
                    f"Failed to read `record batch header` from file channel. Expected to read "
                    f"{HEADER_SIZE} bytes, but reached end of file after reading "
                    f"{len(self.data) - self.pos} bytes. Started read from position {self.pos}.")
            self._header = read_header(self.data, self.pos)
        return self._header

    @property
    def legacy(self):
        if self._legacy is None:
            try:
                self._legacy = legacy.parse_message(memoryview(self.data), self.pos, self.size)
            except RecordError as e:
                raise JavaException("org.apache.kafka.common.errors.CorruptRecordException",
                                    e.message if hasattr(e, "message") else str(e)) from None
        return self._legacy

    @property
    def last_offset(self) -> int:
        return self.header.last_offset if self.magic >= 2 else self.offset


def _batches(data: bytes, start: int, end: int, path: str):
    """Kafka's FileLogInputStream over ``data[start:end]``."""
    pos = start
    while pos < end - _HEADER_SIZE_UP_TO_MAGIC:
        offset, size = struct.unpack_from(">qi", data, pos)
        if size < _RECORD_OVERHEAD_V0:
            raise JavaException(
                "org.apache.kafka.common.errors.CorruptRecordException",
                f"Found record size {size} smaller than minimum record overhead "
                f"({_RECORD_OVERHEAD_V0}) in file {path}.")
        if pos > end - LOG_OVERHEAD - size:
            return
        magic = struct.unpack_from(">b", data, pos + 16)[0]
        yield _Batch(data, pos, LOG_OVERHEAD + size, magic, offset)
        pos += LOG_OVERHEAD + size


# ------------------------------------------------------------------ the tool

class _Dump:
    def __init__(self, args: argparse.Namespace) -> None:
        self.args = args
        decoders = (args.offsets_decoder or args.transaction_log_decoder
                    or args.share_group_state_decoder
                    or args.value_decoder_class is not None or args.key_decoder_class is not None)
        self.print_data = args.print_data_log or decoders
        self.deep = args.deep_iteration or self.print_data
        self.index_mismatches: dict[str, list[tuple[int, int]]] = {}
        self.non_consecutive: dict[str, list[tuple[int, int]]] = {}
        self.time_mismatches: dict[str, list[tuple[int, int]]] = {}
        self.time_out_of_order: dict[str, list[tuple[int, int]]] = {}
        self.time_not_found: dict[str, list[tuple[int, int]]] = {}

    def run(self) -> None:
        try:
            for arg in self.args.files.split(","):
                self._dump_file(arg)
        finally:
            self._print_errors()

    def _dump_file(self, arg: str) -> None:
        path = _java_path(arg)
        _print(f"Dumping {path}")
        name = os.path.basename(path)
        dot = name.rfind(".")
        if dot < 0:
            raise JavaException("java.lang.StringIndexOutOfBoundsException",
                                f"begin -1, end {len(name)}, length {len(name)}")
        suffix = name[dot:]
        if suffix == ".log":
            self._dump_log(path)
        elif suffix == ".checkpoint":
            raise JavaException("java.lang.UnsupportedOperationException",
                                "kafkapy-dump-log cannot read KRaft snapshots")
        elif suffix == ".index":
            self._dump_index(path)
        elif suffix == ".timeindex":
            self._dump_time_index(path)
        elif suffix == ".snapshot":
            self._dump_producer_snapshot(path)
        elif suffix == ".txnindex":
            self._dump_txn_index(path)
        else:
            _err(f"Ignoring unknown file {path}")

    # ---------------------------------------------------------------- .log

    def _message_parser(self):
        a = self.args
        if a.offsets_decoder:
            return OffsetsParser()
        if a.transaction_log_decoder:
            return TransactionLogParser()
        if a.share_group_state_decoder:
            return ShareGroupStateParser()
        try:
            return DecoderParser(a.key_decoder_class or None, a.value_decoder_class or None)
        except ParseError as e:
            raise JavaException(*str(e).split(": ", 1)) from None

    def _dump_log(self, path: str) -> None:
        # Kafka evaluates the parser (and its deprecation notices) before reading the file.
        parser = self._message_parser()
        _print(f"Log starting offset: {_base_offset(os.path.basename(path))}")
        data = _read_file(path)
        end = min(self.args.max_bytes, len(data))
        valid_bytes = 0
        last_offset = -1
        for batch in _batches(data, 0, end, path):
            self._print_batch(batch, valid_bytes)
            if self.deep:
                for record in self._records(batch):
                    offset = record[0]
                    if last_offset != -1 and offset != last_offset + 1:
                        self.non_consecutive.setdefault(_absolute(path), []).insert(
                            0, (last_offset, offset))
                    last_offset = offset
                    self._print_record(batch, record, parser)
            valid_bytes += batch.size
        trailing = end - valid_bytes
        if trailing > 0 and self.args.max_bytes == _INT_MAX:
            _print(f"Found {trailing} invalid bytes at the end of {os.path.basename(path)}")

    def _print_batch(self, batch: _Batch, position: int) -> None:
        if batch.magic >= 2:
            h = batch.header
            horizon = (f"OptionalLong[{h.base_timestamp}]"
                       if h.attributes & ATTR_DELETE_HORIZON else "OptionalLong.empty")
            _print(f"baseOffset: {h.base_offset} lastOffset: {h.last_offset} "
                   f"count: {h.records_count} baseSequence: {h.base_sequence} "
                   f"lastSequence: {h.last_sequence} producerId: {h.producer_id} "
                   f"producerEpoch: {h.producer_epoch} "
                   f"partitionLeaderEpoch: {h.partition_leader_epoch} "
                   f"isTransactional: {_bool(h.is_transactional)} "
                   f"isControl: {_bool(h.is_control)} deleteHorizonMs: {horizon}", end="")
            valid = batch.size >= HEADER_SIZE and is_crc_valid(batch.data, h)
            _print(f" position: {position} {_timestamp_type(h.timestamp_type)}: "
                   f"{h.max_timestamp} size: {batch.size} magic: {h.magic} "
                   f"compresscodec: {_codec(h.compression)} crc: {h.crc} "
                   f"isvalid: {_bool(valid)}")
            return
        m = batch.legacy
        ts_type = "NoTimestampType" if m.magic == 0 else _timestamp_type((m.attributes >> 3) & 1)
        _print(f"offset: {batch.offset} position: {position} {ts_type}: {m.timestamp} "
               f"size: {batch.size} magic: {m.magic} compresscodec: {_codec(m.attributes & 7)} "
               f"crc: {m.crc} isvalid: {_bool(m.crc_ok)}")

    def _records(self, batch: _Batch):
        """(offset, timestamp, key, value, headers, sequence) of each record of ``batch``."""
        if batch.magic < 2:
            return _legacy_records(batch.legacy)
        h = batch.header
        try:
            records = decode_records(batch.data[batch.pos:batch.pos + batch.size])
        except RecordError as e:
            raise JavaException("org.apache.kafka.common.InvalidRecordException",
                                getattr(e, "message", None) or str(e)) from None
        out = []
        for r in records:
            seq = -1 if h.base_sequence < 0 else _increment(h.base_sequence,
                                                             r.offset - h.base_offset)
            out.append((r.offset, r.timestamp, r.key, r.value, r.headers, seq))
        return out

    def _print_record(self, batch: _Batch, record, parser) -> None:
        offset, timestamp, key, value, headers, sequence = record[:6]
        prefix = "| "
        line = []
        control = batch.magic >= 2 and batch.header.is_control
        if not self.args.skip_record_metadata:
            ts_type = _timestamp_type(batch.header.timestamp_type) if batch.magic >= 2 else (
                "NoTimestampType" if batch.magic == 0
                else _timestamp_type((batch.legacy.attributes >> 3) & 1))
            line.append(f"{prefix}offset: {offset} {ts_type}: {timestamp} "
                        f"keySize: {_size(key)} valueSize: {_size(value)}")
            prefix = " "
            if batch.magic >= 2:
                line.append(f" sequence: {sequence} headerKeys: "
                            f"[{','.join(k for k, _ in headers)}]")
            else:  # Kafka prints the inner message's CRC with a stray brace
                line.append(f" isValid: {_bool(record[6].crc_ok)} crc: {record[6].crc}}}")
            if control:
                line.append(_control_text(key, value))
        if self.print_data and not control:
            try:
                k, v = parser.parse(offset, key, value)
            except ParseError as e:
                _print("".join(line), end="")
                raise JavaException(*str(e).split(": ", 1)) from None
            if k is not None:
                line.append(f"{prefix}key: {k}")
                prefix = " "
            if v is not None:
                line.append(f" payload: {v}")
        _print("".join(line))

    # ---------------------------------------------------------------- .index

    def _dump_index(self, path: str) -> None:
        name = os.path.basename(path)
        base = _base_offset(name)
        log_path = os.path.join(os.path.dirname(_absolute(path)), name.split(".")[0] + ".log")
        log_data = _read_file(log_path)
        index = _read_file(path)
        entries = len(index) // 8
        if entries == 0:
            _print(f"{path} is empty.")
            return
        if self.args.index_sanity_check:
            last = base + _OFFSET_ENTRY.unpack_from(index, (entries - 1) * 8)[0]
            if last < base:
                raise JavaException(
                    "org.apache.kafka.storage.internals.log.CorruptIndexException",
                    f"Corrupt index found, index file {_absolute(path)} has non-zero size but "
                    f"the last offset is {last} which is less than the base offset {base}")
            if len(index) % 8:
                raise JavaException(
                    "org.apache.kafka.storage.internals.log.CorruptIndexException",
                    f"Index file {_absolute(path)} is corrupt, found {len(index)} bytes which "
                    f"is neither positive nor a multiple of 8")
            _print(f"{path} passed sanity check.")
            return
        for i in range(entries):
            rel, position = _OFFSET_ENTRY.unpack_from(index, i * 8)
            offset = base + rel
            if offset == base and i > 0:
                return
            first = self._first_batch(log_data, position, self.args.max_message_size, log_path)
            if first.last_offset != offset:
                self.index_mismatches.setdefault(_absolute(path), []).insert(
                    0, (offset, first.last_offset))
            if not self.args.verify_index_only:
                _print(f"offset: {offset} position: {position}")

    @staticmethod
    def _first_batch(log_data: bytes, position: int, size: int, log_path: str) -> _Batch:
        if position > len(log_data) or position < 0:
            raise JavaException("java.lang.IllegalArgumentException",
                                f"Slice from position {position} exceeds end position of "
                                f"FileRecords(size={len(log_data)}, file={log_path}, "
                                f"start=0, end={_INT_MAX})")
        end = min(position + size, len(log_data)) if size >= 0 else len(log_data)
        for batch in _batches(log_data, position, end, log_path):
            return batch
        raise JavaException("java.util.NoSuchElementException")

    # ---------------------------------------------------------------- .timeindex

    def _dump_time_index(self, path: str) -> None:
        name = os.path.basename(path)
        base = _base_offset(name)
        folder = os.path.dirname(_absolute(path))
        log_path = os.path.join(folder, name.split(".")[0] + ".log")
        log_data = _read_file(log_path)
        offset_index = _read_file(os.path.join(folder, name.split(".")[0] + ".index"))
        index = _read_file(path)
        entries = len(index) // 12
        if self.args.index_sanity_check:
            self._time_index_sanity(path, index, entries, base)
            _print(f"{path} passed sanity check.")
            return
        prev_ts = -1
        absolute = _absolute(path)
        for i in range(entries):
            timestamp, rel = _TIME_ENTRY.unpack_from(index, i * 12)
            offset = base + rel
            if offset == base and i > 0:
                return
            position = _lookup(offset_index, base, offset)
            found = None
            for batch in _batches(log_data, position, len(log_data), log_path):
                if batch.last_offset >= offset:
                    found = batch
                    break
            if found is None:
                self.time_not_found.setdefault(absolute, []).append((offset, -1))
            elif found.last_offset != offset:
                self.time_not_found.setdefault(absolute, []).append((offset, found.last_offset))
            else:
                max_ts = -1
                for record in self._records(found):
                    max_ts = max(max_ts, record[1])
                if max_ts != timestamp:
                    self.time_mismatches.setdefault(absolute, []).append((timestamp, max_ts))
                if prev_ts >= timestamp:
                    self.time_out_of_order.setdefault(absolute, []).append((timestamp, prev_ts))
            if not self.args.verify_index_only:
                _print(f"timestamp: {timestamp} offset: {offset}")
            prev_ts = timestamp

    @staticmethod
    def _time_index_sanity(path: str, index: bytes, entries: int, base: int) -> None:
        if entries:
            last_ts, last_rel = _TIME_ENTRY.unpack_from(index, (entries - 1) * 12)
            first_ts = _TIME_ENTRY.unpack_from(index, 0)[0]
            where = f"Corrupt time index found, time index file ({_absolute(path)}) has non-zero size"
            if last_ts < first_ts:
                raise JavaException(
                    "org.apache.kafka.storage.internals.log.CorruptIndexException",
                    f"{where} but the last timestamp is {last_ts} which is less than the first "
                    f"timestamp {first_ts}")
            if base + last_rel < base:
                raise JavaException(
                    "org.apache.kafka.storage.internals.log.CorruptIndexException",
                    f"{where} but the last offset is {base + last_rel} which is less than the "
                    f"first offset {base}")
        if len(index) % 12:
            raise JavaException(
                "org.apache.kafka.storage.internals.log.CorruptIndexException",
                f"Time index file {_absolute(path)} is corrupt, found {len(index)} bytes which "
                f"is neither positive nor a multiple of 12")

    # ---------------------------------------------------------------- .snapshot, .txnindex

    def _dump_producer_snapshot(self, path: str) -> None:
        data = _read_file(path)
        problem = _snapshot_schema_error(data)
        if problem:
            _err(f"Snapshot failed schema validation: {problem}")
            return
        version, stored = _SNAPSHOT_HEAD.unpack_from(data, 0)
        if version != 1:
            _err(f"Snapshot contained an unknown file version {version}")
            return
        computed = crc32c(data[_SNAPSHOT_HEAD.size:])
        if computed != stored:
            _err(f"Snapshot is corrupt (CRC is no longer valid). Stored crc: {stored}. "
                 f"Computed crc: {computed}")
            return
        state = ProducerStateManager(None)
        try:
            state.load_snapshot(path, 0)
        except ValueError as e:
            _err(f"Snapshot failed schema validation: {e}")
            return
        for entry in state.producers.values():
            txn = entry.current_txn_first_offset
            line = (f"producerId: {entry.producer_id} producerEpoch: {entry.epoch} "
                    f"coordinatorEpoch: {entry.coordinator_epoch} currentTxnFirstOffset: "
                    f"{f'OptionalLong[{txn}]' if txn >= 0 else 'OptionalLong.empty'} "
                    f"lastTimestamp: {entry.last_timestamp} ")
            if entry.batches:
                b = entry.batches[0]
                delta = b.last_offset - b.first_offset
                line += (f"firstSequence: {_decrement(b.last_seq, delta)} "
                         f"lastSequence: {b.last_seq} lastOffset: {b.last_offset} "
                         f"offsetDelta: {delta} timestamp: {b.timestamp}")
            _print(line)

    def _dump_txn_index(self, path: str) -> None:
        _base_offset(os.path.basename(path))
        if not os.path.exists(path):
            raise JavaException("java.nio.file.NoSuchFileException", path)
        for txn in TransactionIndex(path).entries:
            _print(f"version: 0 producerId: {txn.producer_id} firstOffset: {txn.first_offset} "
                   f"lastOffset: {txn.last_offset} lastStableOffset: {txn.last_stable_offset}")

    # ---------------------------------------------------------------- stderr summary

    def _print_errors(self) -> None:
        """What was collected, on stderr, in the order of Kafka's Scala hash maps."""
        for name, pairs in _scala_map(self.index_mismatches):
            _err(f"Mismatches in :{name}")
            for index_offset, log_offset in pairs:
                _err(f"  Index offset: {index_offset}, log offset: {log_offset}")
        for name, pairs in _scala_map(self.time_mismatches):
            _err(f"Found timestamp mismatch in :{name}")
            for index_ts, log_ts in pairs:
                _err(f"  Index timestamp: {index_ts}, log timestamp: {log_ts}")
        for name, pairs in _scala_map(self.time_out_of_order):
            _err(f"Found out of order timestamp in :{name}")
            for index_ts, prev in pairs:
                _err(f"  Index timestamp: {index_ts}, Previously indexed timestamp: {prev}")
        for _name, pairs in _scala_map(self.time_not_found):
            _err("The following indexed offsets are not found in the log.")
            for index_offset, log_offset in pairs:
                _err(f"Indexed offset: {index_offset}, found log offset: {log_offset}")
        for name, pairs in _scala_map(self.non_consecutive):
            _err(f"Non-consecutive offsets in {name}")
            for first, second in pairs:
                _err(f"  {first} is followed by {second}")


# ------------------------------------------------------------------ small Java shapes

def _scala_map(found: dict[str, list]) -> list[tuple[str, list]]:
    return [(name, found[name]) for name in scala_mutable_hash_order(list(found), string_hash)]


def _lookup(index: bytes, base: int, target: int) -> int:
    """Kafka's OffsetIndex.lookup(target).position over every slot of the file."""
    entries = len(index) // 8
    if entries == 0:
        return 0

    def rel(i: int) -> int:
        return _OFFSET_ENTRY.unpack_from(index, i * 8)[0]

    goal = target - base

    def search(lo: int, hi: int) -> int:
        while lo < hi:
            mid = (lo + hi + 1) >> 1
            found = rel(mid)
            if found > goal:
                hi = mid - 1
            elif found < goal:
                lo = mid
            else:
                return mid
        return lo

    hot = max(0, entries - 1 - 8192 // 8)
    if rel(hot) < goal:
        slot = search(hot, entries - 1)
    elif rel(0) > goal:
        slot = -1
    else:
        slot = search(0, hot)
    return 0 if slot == -1 else _OFFSET_ENTRY.unpack_from(index, slot * 8)[1]


_SNAPSHOT_ENTRY_FIELDS = (("producer_id", 8), ("epoch", 2), ("last_sequence", 4),
                          ("last_offset", 8), ("offset_delta", 4), ("timestamp", 8),
                          ("coordinator_epoch", 4), ("current_txn_first_offset", 8))


def _snapshot_schema_error(data) -> str | None:
    """What Kafka's Schema.read says of a producer snapshot too short for its fields."""
    underflow = "java.nio.BufferUnderflowException"
    n = len(data)
    if n < 2:
        return f"Error reading field 'version': {underflow}"
    if n < 6:
        return f"Error reading field 'crc': {underflow}"
    if n < 10:
        return f"Error reading field 'producer_entries': {underflow}"
    (count,) = struct.unpack_from(">i", data, 6)
    if count < 0:
        return f"Error reading field 'producer_entries': Array size {count} cannot be negative"
    if count > n - 10:
        return (f"Error reading field 'producer_entries': Error reading array of size {count}, "
                f"only {n - 10} bytes available")
    pos = 10
    for _ in range(count):
        for name, size in _SNAPSHOT_ENTRY_FIELDS:
            if pos + size > n:
                return (f"Error reading field 'producer_entries': Error reading field "
                        f"'{name}': {underflow}")
            pos += size
    return None


def _legacy_records(wrapper) -> list[tuple]:
    """Kafka's legacy record iteration: the message itself, or a wrapper's inner messages
    (absolute offsets: magic 1 inner offsets are relative to the wrapper's, which is the
    last one's; LogAppendTime wrappers give their timestamp to every inner message)."""
    codec = wrapper.attributes & 7
    if not codec:
        return [(wrapper.offset, wrapper.timestamp, wrapper.key, wrapper.value, [], -1, wrapper)]
    payload = wrapper.value or b""
    if codec == 3 and wrapper.magic == 0:
        payload = legacy.fix_lz4_header_checksum(payload)
    try:
        inner = memoryview(decompress(codec, payload))
    except RecordError as e:
        raise JavaException("org.apache.kafka.common.KafkaException", str(e)) from None
    messages = []
    pos = 0
    while len(inner) - pos >= LOG_OVERHEAD:
        size = LOG_OVERHEAD + struct.unpack_from(">i", inner, pos + 8)[0]
        if size < LOG_OVERHEAD + _RECORD_OVERHEAD_V0 or pos + size > len(inner):
            break
        messages.append(legacy.parse_message(inner, pos, size))
        pos += size
    shift = 0
    if wrapper.magic == 1 and messages:
        shift = wrapper.offset - messages[-1].offset
    log_append = wrapper.magic == 1 and wrapper.attributes & 8
    return [(m.offset + shift, wrapper.timestamp if log_append else m.timestamp, m.key,
             m.value, [], -1, m) for m in messages]


def _increment(sequence: int, increment: int) -> int:
    if sequence > _INT_MAX - increment:
        return increment - (_INT_MAX - sequence) - 1
    return sequence + increment


def _decrement(sequence: int, decrement: int) -> int:
    if sequence < decrement:
        return _INT_MAX - (decrement - sequence) + 1
    return sequence - decrement


def _bool(value: bool) -> str:
    return "true" if value else "false"


def _timestamp_type(kind: int) -> str:
    return "LogAppendTime" if kind == 1 else "CreateTime"


def _codec(codec: int) -> str:
    return _CODECS[codec] if codec < len(_CODECS) else f"unknown({codec})"


def _size(blob: bytes | None) -> int:
    return -1 if blob is None else len(blob)


def _control_text(key: bytes | None, value: bytes | None) -> str:
    if key is None or len(key) < 4:
        raise JavaException("org.apache.kafka.common.InvalidRecordException",
                            "Invalid value size found for end control record key. Must have at "
                            f"least 4 bytes, but found only {_size(key)}")
    version, type_id = struct.unpack_from(">hh", key, 0)
    kind = _CONTROL_TYPES.get(type_id, "UNKNOWN")
    if kind in ("ABORT", "COMMIT"):
        if value is None or len(value) < 6:
            raise JavaException("org.apache.kafka.common.InvalidRecordException",
                                "Invalid value size found for end transaction marker")
        coordinator_epoch = struct.unpack_from(">i", value, 2)[0]
        return f" endTxnMarker: {kind} coordinatorEpoch: {coordinator_epoch}"
    return f" controlType: {kind}({type_id})"


if __name__ == "__main__":
    sys.exit(main())
