"""``kafkapy-console-producer``: Kafka's ``bin/kafka-console-producer.sh`` over kafka-python.

Reads stdin a line at a time and sends each line as one record to ``--topic``; a ``>``
prompt is shown when stdin and stdout are a terminal. Lines are parsed as Kafka's
LineMessageReader parses them, configured with ``--property`` (or ``--reader-property``)
and ``--reader-config``: ``parse.key`` and ``key.separator`` (tab), ``parse.headers``,
``headers.delimiter`` (tab), ``headers.separator`` (comma, a regex), ``headers.key.separator``
(colon), ``null.marker`` and ``ignore.error``. A line without its separator stops the tool
with "No key separator found on line number N: '...'" (exit 1) unless ``ignore.error=true``.

Producer settings as Kafka builds them: ``--producer.config``/``--command-config`` file, then
``--producer-property``/``--command-property`` pairs, then ``--compression-codec`` (none
unless given; gzip when given without a value), client id ``console-producer``, and the
options ``--timeout`` (linger.ms 1000), ``--request-required-acks`` (-1),
``--request-timeout-ms`` (1500), ``--message-send-max-retries`` (3), ``--retry-backoff-ms``,
``--batch-size``/``--max-partition-memory-bytes``, ``--metadata-expiry-ms``,
``--max-block-ms`` and ``--socket-buffer-size``, each winning over a property only when given.
``--sync`` waits for every record before reading the next line.

Differences from Kafka:
- A record that cannot be sent is logged as Kafka's ErrorLoggingCallback logs it, and the
  tool then exits 1 (Kafka exits 0).
- ``--line-reader`` (custom reader classes) is not offered; ``--max-memory-bytes`` is accepted
  but kafka-python has no ``buffer.memory``.
- Idempotence follows the acks setting silently, as in the Java client: ``acks`` other than
  -1/all turns it off instead of logging kafka-python's warning.
"""
from __future__ import annotations

import argparse
import logging
import re
import sys
from dataclasses import dataclass, field

from kafka.producer import KafkaProducer

from kafkapy.cli import _common as common
from kafkapy.cli._common import UsageError

log = logging.getLogger("kafkapy.cli.console_producer")

_CODECS = ("none", "gzip", "snappy", "lz4", "zstd")
# (producer property, option, Kafka's default): the option wins when given, else an
# existing property, else the default (Kafka's CommandLineUtils.maybeMergeOptions).
_MERGED = (
    ("linger.ms", "timeout", "1000"),
    ("acks", "request_required_acks", "-1"),
    ("request.timeout.ms", "request_timeout_ms", "1500"),
    ("retries", "message_send_max_retries", "3"),
    ("retry.backoff.ms", "retry_backoff_ms", "100"),
    ("send.buffer.bytes", "socket_buffer_size", "102400"),
    ("buffer.memory", "max_memory_bytes", "33554432"),
    ("batch.size", "batch_size", "16384"),
    ("batch.size", "max_partition_memory_bytes", "16384"),
    ("metadata.max.age.ms", "metadata_expiry_ms", "300000"),
    ("max.block.ms", "max_block_ms", "60000"),
)


def main(argv: list[str] | None = None) -> int:
    return common.run(_produce, _parser(), argv, common.to_stderr)


def _parser() -> common.ToolParser:
    parser = common.ToolParser("kafkapy-console-producer",
                               "Read data from standard input and publish it to Kafka.")
    parser.add_argument("--topic", help="REQUIRED: the topic to produce messages to")
    parser.add_argument("--broker-list", help="DEPRECATED, use --bootstrap-server")
    parser.add_argument("--sync", action="store_true", help="send records one at a time")
    parser.add_argument("--compression-codec", nargs="?", const="gzip",
                        help="none, gzip, snappy, lz4 or zstd (gzip if given without a value)")
    for _, option, default in _MERGED:
        parser.add_argument(f"--{option.replace('_', '-')}", help=f"default {default}")
    parser.add_argument("--property", "--reader-property", dest="property", action="append",
                        default=[], metavar="key=value", help="line reader property")
    parser.add_argument("--reader-config", metavar="FILE", help="line reader properties file")
    parser.add_argument("--producer-property", "--command-property", dest="producer_property",
                        action="append", default=[], metavar="key=value",
                        help="a producer config property (may be repeated)")
    parser.add_argument("--producer.config", dest="producer_config", metavar="FILE",
                        help="producer config properties file (--producer-property wins)")
    return parser


def _produce(args: argparse.Namespace) -> int:
    if not args.topic:
        raise UsageError('Missing required argument "[topic]"')
    reader = LineReader(_reader_props(args))
    producer = common.new_client(KafkaProducer,
                                 _producer_config(args, KafkaProducer.DEFAULT_CONFIG))
    failures = []
    try:
        for record in reader.records(sys.stdin.buffer):
            future = producer.send(args.topic, key=record.key, value=record.value,
                                   headers=record.headers)
            if args.sync:
                future.get()
            else:
                future.add_errback(_log_failure, args.topic, record, failures)
    finally:
        producer.close()  # sends what is still buffered, as Kafka's shutdown hook does
    return 1 if failures else 0


def _log_failure(error, topic: str, record: "Record", failures: list) -> None:
    failures.append(error)
    log.error("Error when sending message to topic %s with key: %s, value: %s with error: %s",
              topic, _size(record.key), _size(record.value), common.failure_text(error))


def _size(data: bytes | None) -> str:
    return "null" if data is None else f"{len(data)} bytes"


def _reader_props(args: argparse.Namespace) -> dict[str, str]:
    props = common.properties_file(args.reader_config)
    props["topic"] = args.topic
    props.update(common.key_values(args.property))
    return props


def _producer_config(args: argparse.Namespace, defaults: dict) -> dict:
    props = common.properties_file(args.producer_config or args.command_config)
    props.update(common.key_values(args.producer_property))
    servers = args.bootstrap_server or args.broker_list
    if not servers:
        raise UsageError('Missing required argument "[bootstrap-server]"')
    props["bootstrap.servers"] = servers
    props["compression.type"] = _codec(args.compression_codec)
    props.setdefault("client.id", "console-producer")
    for name, option, default in _MERGED:
        given = getattr(args, option)
        known = name.replace(".", "_") in defaults
        if given is not None or (name not in props and known):
            props[name] = given if given is not None else default
    config = common.client_config(props, defaults)
    if config.get("acks", -1) not in (-1, "all"):
        config.setdefault("enable_idempotence", False)
    return config


def _codec(value: str | None) -> str:
    codec = value or "none"
    if codec not in _CODECS:
        raise UsageError(f"Invalid value {codec} for configuration compression.type: "
                         f"String must be one of: {', '.join(_CODECS)}")
    return codec


@dataclass
class Record:
    key: bytes | None
    value: bytes | None
    headers: list[tuple[str, bytes | None]] = field(default_factory=list)


class LineReader:
    """Kafka's LineMessageReader: ``[headers<delim>][key<sep>]value`` per line."""

    def __init__(self, props: dict[str, str]) -> None:
        self.parse_key = _flag(props, "parse.key")
        self.key_separator = props.get("key.separator", "\t")
        self.parse_headers = _flag(props, "parse.headers")
        self.headers_delimiter = props.get("headers.delimiter", "\t")
        self.headers_separator = props.get("headers.separator", ",")
        self.headers_key_separator = props.get("headers.key.separator", ":")
        self.ignore_error = _flag(props, "ignore.error")
        self.null_marker = props.get("null.marker")
        self._check_separators()
        self._split_headers = re.compile(self.headers_separator).split

    def _check_separators(self) -> None:
        named = {"headers.delimiter": self.headers_delimiter,
                 "headers.separator": self.headers_separator,
                 "headers.key.separator": self.headers_key_separator}
        pairs = [("headers.delimiter", "headers.separator"),
                 ("headers.delimiter", "headers.key.separator"),
                 ("headers.separator", "headers.key.separator")]
        for first, second in pairs:
            if named[first] == named[second]:
                raise UsageError(f"{first} and {second} may not be equal")
        named = {"key.separator": self.key_separator, **named}
        for name, value in named.items():
            if value == self.null_marker:
                raise UsageError(f"null.marker and {name} may not be equal")

    def records(self, stream):
        prompt = sys.stdin.isatty() and sys.stdout.isatty()
        number = 0
        while True:
            if prompt:
                print(">", end="", flush=True)
            raw = stream.readline()
            if not raw:
                return
            number += 1
            line = raw.decode("utf-8", errors="replace").rstrip("\n").removesuffix("\r")
            yield self.parse(line, number)

    def parse(self, line: str, number: int) -> Record:
        headers = self._field(self.parse_headers, line, 0, self.headers_delimiter,
                              "headers delimiter", number)
        start = 0 if headers is None else len(headers) + len(self.headers_delimiter)
        key = self._field(self.parse_key, line, start, self.key_separator, "key separator", number)
        start += 0 if key is None else len(key) + len(self.key_separator)
        record = Record(self._bytes(key), self._bytes(line[start:]))
        if headers is not None and headers != self.null_marker:
            record.headers = self._headers(headers, number)
        return record

    def _field(self, enabled: bool, line: str, start: int, separator: str, what: str,
               number: int) -> str | None:
        if not enabled:
            return None
        end = line.find(separator, start)
        if end == -1:
            if self.ignore_error:
                return None
            raise UsageError(f"No {what} found on line number {number}: '{line}'")
        return line[start:end]

    def _bytes(self, text: str | None) -> bytes | None:
        return None if text is None or text == self.null_marker else text.encode()

    def _headers(self, text: str, number: int) -> list[tuple[str, bytes | None]]:
        pairs = self._split_headers(text)
        while pairs and pairs[-1] == "":  # Java's String.split drops trailing empty parts
            pairs.pop()
        return [self._header(pair, number) for pair in pairs]

    def _header(self, pair: str, number: int) -> tuple[str, bytes | None]:
        end = pair.find(self.headers_key_separator)
        if end == -1:
            if self.ignore_error:
                return pair, None
            raise UsageError(f"No header key separator found in pair '{pair}' on line number "
                             f"{number}")
        key = pair[:end]
        if key == self.null_marker:
            raise UsageError(f"Header keys should not be equal to the null marker "
                             f"'{self.null_marker}' as they can't be null")
        return key, self._bytes(pair[end + len(self.headers_key_separator):])


def _flag(props: dict[str, str], name: str) -> bool:
    return props.get(name, "").strip().lower() == "true"


if __name__ == "__main__":
    sys.exit(main())
