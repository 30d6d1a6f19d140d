"""``kafkapy-console-consumer``: Kafka's ``bin/kafka-console-consumer.sh`` over kafka-python.

Consumes ``--topic`` (subscribed, in a consumer group) or ``--include REGEX``, or with
``--partition P`` one partition by assignment starting at ``--offset`` (earliest, latest
(the default) or a number). ``--from-beginning`` starts a group without committed offsets at
the earliest record. ``--group`` names the group; without one a ``console-consumer-NNNNN``
group is used with auto-commit off, as in Kafka. ``--max-messages`` stops after N records,
``--timeout-ms`` after that long without a record; Ctrl-C and SIGTERM stop too. At the end
"Processed a total of N messages" goes to stderr and, with a group and auto-commit, the
offsets of the records printed (not those fetched but unprinted) are committed on close.

Records are printed by Kafka's DefaultMessageFormatter rules, set with ``--property`` (or
``--formatter-property``) and ``--formatter-config``: ``print.timestamp``
(``CreateTime:<ms>``), ``print.partition`` (``Partition:N``), ``print.offset``
(``Offset:N``), ``print.headers`` (``k:v`` joined by ``headers.separator``, or
``NO_HEADERS``), ``print.key``, ``print.value`` (on by default), ``key.separator`` (tab,
between fields), ``line.separator`` (newline) and ``null.literal`` (``null``).
Consumer settings: ``--consumer.config``/``--command-config`` file, then
``--consumer-property``/``--command-property`` pairs (Kafka property names), then
``--isolation-level`` (read_uncommitted) when given or not set as a property.

Differences from Kafka:
- Keys and values are printed as raw bytes: ``--key-deserializer``/``--value-deserializer``,
  ``--formatter`` and ``print.delivery`` (share groups) are not offered.
- A timeout is logged as "Error processing message, terminating consumer process:
  TimeoutException" without a Java stack trace; as in Kafka the exit code is 0.
"""
from __future__ import annotations

import argparse
import logging
import random
import sys
import time
from collections import deque

from kafka.consumer import KafkaConsumer
from kafka.structs import TopicPartition

from kafkapy.cli import _common as common
from kafkapy.cli._common import UsageError

log = logging.getLogger("kafkapy.cli.console_consumer")

EARLIEST, LATEST = -2, -1
_TIMESTAMP_TYPES = {0: "CreateTime", 1: "LogAppendTime"}
_IDLE_POLL_MS = 1000


class ConsumerTimeout(Exception):
    """No record arrived within ``--timeout-ms``."""


def main(argv: list[str] | None = None) -> int:
    return common.run(_consume, _parser(), argv, _report)


def _report(message: str) -> None:
    log.error("Unknown error when running consumer: %s", message)


def _parser() -> common.ToolParser:
    parser = common.ToolParser("kafkapy-console-consumer",
                               "Read data from Kafka topics and write it to standard output.")
    parser.add_argument("--topic", help="the topic to consume")
    parser.add_argument("--include", help="regex of the topics to consume")
    parser.add_argument("--partition", type=int, help="consume only this partition")
    parser.add_argument("--offset", help="earliest, latest (default) or a non-negative offset")
    parser.add_argument("--from-beginning", action="store_true",
                        help="start at the earliest offset when there is no committed one")
    parser.add_argument("--max-messages", type=int, default=-1,
                        help="exit after this many messages (default: no limit)")
    parser.add_argument("--timeout-ms", type=int, default=-1,
                        help="exit when no message arrives for this long (default: never)")
    parser.add_argument("--group", help="the consumer group id")
    parser.add_argument("--isolation-level", help="read_uncommitted (default) or read_committed")
    parser.add_argument("--skip-message-on-error", action="store_true",
                        help="skip a message that cannot be printed instead of stopping")
    parser.add_argument("--property", "--formatter-property", dest="property", action="append",
                        default=[], metavar="key=value", help="formatter property")
    parser.add_argument("--formatter-config", metavar="FILE",
                        help="properties file for the message formatter")
    parser.add_argument("--consumer-property", "--command-property", dest="consumer_property",
                        action="append", default=[], metavar="key=value",
                        help="a consumer config property (may be repeated)")
    parser.add_argument("--consumer.config", dest="consumer_config", metavar="FILE",
                        help="consumer config properties file (--consumer-property wins)")
    return parser


def _consume(args: argparse.Namespace) -> int:
    _check_args(args)
    offset = _offset(args)
    formatter = Formatter(_formatter_props(args))
    consumer = common.new_client(KafkaConsumer,
                                 _consumer_config(args, KafkaConsumer.DEFAULT_CONFIG))
    source = RecordSource(consumer, args.timeout_ms)
    count = 0
    try:
        _start(consumer, args, offset)
        count = _process(source, formatter, args)
    finally:
        source.close()
        print(f"Processed a total of {count} messages", file=sys.stderr)
    return 0


def _check_args(args: argparse.Namespace) -> None:
    if (args.topic is None) == (args.include is None):
        raise UsageError("Exactly one of the following arguments is required: [topic], [include]")
    if args.partition is not None:
        if args.topic is None:
            raise UsageError("The topic is required when partition is specified.")
        if args.from_beginning and args.offset is not None:
            raise UsageError("Options from-beginning and offset cannot be specified together.")
    elif args.offset is not None:
        raise UsageError("The partition is required when offset is specified.")
    common.require_bootstrap(args)


def _offset(args: argparse.Namespace) -> int:
    if args.offset is None:
        return EARLIEST if args.from_beginning else LATEST
    named = {"earliest": EARLIEST, "latest": LATEST}.get(args.offset.lower())
    if named is not None:
        return named
    if args.offset.isdigit():
        return int(args.offset)
    raise UsageError(f"The provided offset value '{args.offset}' is incorrect. Valid values are "
                     "'earliest', 'latest', or a non-negative long.")


def _consumer_config(args: argparse.Namespace, defaults: dict) -> dict:
    from_file = common.properties_file(args.consumer_config or args.command_config)
    extra = common.key_values(args.consumer_property)
    groups = {g for g in (args.group, from_file.get("group.id"), extra.get("group.id")) if g}
    if len(groups) > 1:
        detected = ", ".join(f"'{g}'" for g in sorted(groups))
        raise UsageError("The group ids provided in different places (directly using '--group', "
                         "via '--consumer-property', or via '--consumer.config') do not match. "
                         f"Detected group ids: {detected}")
    if groups and args.partition is not None:
        raise UsageError("Options group and partition cannot be specified together.")
    props = {**from_file, **extra}
    _set_offset_reset(props, args.from_beginning)
    props["bootstrap.servers"] = args.bootstrap_server
    props.setdefault("client.id", "console-consumer")
    if args.isolation_level is not None or "isolation.level" not in props:
        props["isolation.level"] = args.isolation_level or "read_uncommitted"
    if groups:
        props["group.id"] = groups.pop()
    else:
        # A throwaway group: do not fill the coordinator with offsets nobody will read.
        props["group.id"] = f"console-consumer-{random.randrange(100000)}"
        props.setdefault("enable.auto.commit", "false")
    return common.client_config(props, defaults)


def _set_offset_reset(props: dict[str, str], from_beginning: bool) -> None:
    explicit = props.get("auto.offset.reset")
    if explicit is None:
        props["auto.offset.reset"] = "earliest" if from_beginning else "latest"
    elif from_beginning and explicit != "earliest":
        raise UsageError(f"Can't simultaneously specify --from-beginning and "
                         f"'auto.offset.reset={explicit}', please remove one option")


def _formatter_props(args: argparse.Namespace) -> dict[str, str]:
    props = common.properties_file(args.formatter_config)
    props.update(common.key_values(args.property))
    return props


def _start(consumer, args: argparse.Namespace, offset: int) -> None:
    if args.partition is None:
        if args.topic is not None:
            consumer.subscribe([args.topic])
        else:
            consumer.subscribe(pattern=args.include)
        return
    partition = TopicPartition(args.topic, args.partition)
    consumer.assign([partition])
    if offset == EARLIEST:
        consumer.seek_to_beginning(partition)
    elif offset == LATEST:
        consumer.seek_to_end(partition)
    else:
        consumer.seek(partition, offset)


def _process(source: "RecordSource", formatter: "Formatter", args: argparse.Namespace) -> int:
    out = sys.stdout.buffer
    count = 0
    while args.max_messages < 0 or count < args.max_messages:
        try:
            record = source.receive(before_wait=out.flush)
        except ConsumerTimeout:
            log.error("Error processing message, terminating consumer process: TimeoutException")
            break
        count += 1
        try:
            out.write(formatter.format(record))
        except BrokenPipeError:
            print("Unable to write to standard out, closing consumer.", file=sys.stderr)
            break
        except Exception as err:
            if not args.skip_message_on_error:
                raise
            log.error("Error processing message, skipping this message: %s", err)
    _flush(out)
    return count


def _flush(out) -> None:
    try:
        out.flush()
    except BrokenPipeError:
        print("Unable to write to standard out, closing consumer.", file=sys.stderr)


class RecordSource:
    """Records one at a time from ``poll`` batches, like Kafka's ConsumerWrapper."""

    def __init__(self, consumer, timeout_ms: int) -> None:
        self._consumer = consumer
        self._timeout_ms = timeout_ms if timeout_ms >= 0 else None
        self._pending: deque = deque()

    def receive(self, before_wait=lambda: None):
        started = time.monotonic()
        while not self._pending:
            before_wait()
            wait_ms = self._timeout_ms if self._timeout_ms is not None else _IDLE_POLL_MS
            for records in self._consumer.poll(timeout_ms=wait_ms).values():
                self._pending.extend(records)
            waited_ms = (time.monotonic() - started) * 1000
            if not self._pending and self._timeout_ms is not None and waited_ms >= self._timeout_ms:
                raise ConsumerTimeout()
        return self._pending.popleft()

    def close(self) -> None:
        # Rewind to the first record not printed, so auto-commit on close commits only
        # what was printed (Kafka's resetUnconsumedOffsets).

        first_unprinted = {}
        for record in self._pending:
            first_unprinted.setdefault(TopicPartition(record.topic, record.partition),
                                       record.offset)
        for partition, offset in first_unprinted.items():
            self._consumer.seek(partition, offset)
        self._consumer.close()


class Formatter:
    """Kafka's DefaultMessageFormatter: chosen fields joined by ``key.separator``."""

    def __init__(self, props: dict[str, str]) -> None:
        self.print_timestamp = _flag(props, "print.timestamp")
        self.print_partition = _flag(props, "print.partition")
        self.print_offset = _flag(props, "print.offset")
        self.print_headers = _flag(props, "print.headers")
        self.print_key = _flag(props, "print.key")
        self.print_value = _flag(props, "print.value", default=True)
        self.key_separator = props.get("key.separator", "\t").encode()
        self.line_separator = props.get("line.separator", "\n").encode()
        self.headers_separator = props.get("headers.separator", ",").encode()
        self.null_literal = props.get("null.literal", "null").encode()

    def format(self, record) -> bytes:
        fields = []
        if self.print_timestamp:
            fields.append(self._timestamp(record))
        if self.print_partition:
            fields.append(b"Partition:%d" % record.partition)
        if self.print_offset:
            fields.append(b"Offset:%d" % record.offset)
        if self.print_headers:
            fields.append(self._headers(record.headers))
        if self.print_key:
            fields.append(self._bytes(record.key))
        if self.print_value:
            fields.append(self._bytes(record.value))
        return self.key_separator.join(fields) + self.line_separator if fields else b""

    def _timestamp(self, record) -> bytes:
        kind = _TIMESTAMP_TYPES.get(record.timestamp_type)
        return b"NO_TIMESTAMP" if kind is None else f"{kind}:{record.timestamp}".encode()

    def _headers(self, headers) -> bytes:
        if not headers:
            return b"NO_HEADERS"
        return self.headers_separator.join(key.encode() + b":" + self._bytes(value)
                                           for key, value in headers)

    def _bytes(self, data: bytes | None) -> bytes:
        return self.null_literal if data is None else data


def _flag(props: dict[str, str], name: str, default: bool = False) -> bool:
    if name not in props:
        return default
    return props[name].strip().lower() == "true"


if __name__ == "__main__":
    sys.exit(main())
