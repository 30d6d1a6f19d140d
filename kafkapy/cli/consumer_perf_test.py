"""``kafkapy-consumer-perf-test``: Kafka 3.9's ``bin/kafka-consumer-perf-test.sh``.

Like Kafka's ConsumerPerformance, consumes ``--messages`` records from ``--topic`` as a
member of ``--group`` (default ``perf-consumer-<random>``) and prints Kafka's header and
one summary line (each is one line; wrapped here)::

    start.time, end.time, data.consumed.in.MB, MB.sec, data.consumed.in.nMsg, nMsg.sec,
        rebalance.time.ms, fetch.time.ms, fetch.MB.sec, fetch.nMsg.sec
    2026-11-24 11:40:40:123, 2026-11-24 11:40:41:456, 1.9073, 1.4306, 20000, 15003.7509,
        312, 1021, 1.8681, 19588.6386

With ``--show-detailed-stats`` a line per ``--reporting-interval`` ms (header ``time,
threadId, ...``) replaces the summary. Bytes are key plus value lengths; MB are 2^20 bytes.
``rebalance.time.ms`` is the time spent waiting for partition assignments, ``fetch.time.ms``
the rest. The run ends when ``--messages`` records were read (all records of the last poll
count, so a busier topic may give a few more) or when no record came for ``--timeout`` ms
(then Kafka's WARNING line). Consumer settings: ``--consumer.config`` (Java client names),
``--fetch-size`` (max.partition.fetch.bytes), ``--socket-buffer-size``
(receive.buffer.bytes), ``--from-latest`` (auto.offset.reset=latest, else earliest).
``--date-format`` is a java.text.SimpleDateFormat pattern (letters y M d H h m s S a E, quoted
literals). ``--print-metrics`` prints the client's metrics after the summary.

As in Kafka 3.9, only the first detailed line reports the join time of its interval (a
quirk of ConsumerPerformance, kept so both tools print the same), and ``--threads`` and
``--num-fetch-threads`` are accepted and ignored.

The client is confluent-kafka when installed, else kafka-python (see ``_perf``).
Differences from Kafka: metric names under ``--print-metrics`` are the client library's;
a progress line counts every record of the poll that crossed the interval (Kafka's counts up
to the record that crossed it); an unreachable bootstrap server ends the tool with
"Error: ..." (exit 1). With confluent-kafka, ``fetch.queue.backoff.ms`` defaults to 10 ms
(librdkafka's 1 s pause after a full prefetch queue would dominate a perf run); a
``--consumer.config`` value wins. With kafka-python, a poll made before partitions are
assigned waits for the whole join, up to ``--timeout`` (see
``_common.kafka_python_poll``).
"""
from __future__ import annotations

import argparse
import math
import random
import sys
import time
from datetime import datetime

from kafkapy.cli import _common as common
from kafkapy.cli import _perf

_CLIENT_ID = "perf-consumer-client"
_HEADER_TAIL = ", rebalance.time.ms, fetch.time.ms, fetch.MB.sec, fetch.nMsg.sec"
_MB = 1024 * 1024


def main(argv: list[str] | None = None) -> int:
    return common.run(_execute, _parser(), argv, common.error_to_stderr)


def _parser() -> common.ToolParser:
    parser = common.ToolParser("kafkapy-consumer-perf-test",
                               "This tool is used to verify the consumer performance.")
    parser.add_argument("--broker-list", help="DEPRECATED, use --bootstrap-server instead; "
                                              "ignored if --bootstrap-server is specified")
    parser.add_argument("--topic", help="REQUIRED: The topic to consume from.")
    parser.add_argument("--messages", type=int, metavar="COUNT",
                        help="REQUIRED: The number of messages to send or consume")
    parser.add_argument("--group", default=f"perf-consumer-{random.randrange(100000)}",
                        metavar="GID", help="The group id to consume on. "
                                            "(default: perf-consumer-<random>)")
    parser.add_argument("--fetch-size", type=int, default=1024 * 1024, metavar="SIZE",
                        help="The amount of data to fetch in a single request. "
                             "(default: 1048576)")
    parser.add_argument("--from-latest", action="store_true",
                        help="If the consumer does not already have an established offset to "
                             "consume from, start with the latest message present in the log "
                             "rather than the earliest message.")
    parser.add_argument("--socket-buffer-size", type=int, default=2 * 1024 * 1024,
                        metavar="SIZE", help="The size of the tcp RECV size. (default: 2097152)")
    parser.add_argument("--consumer.config", dest="consumer_config", metavar="FILE",
                        help="Consumer config properties file.")
    parser.add_argument("--print-metrics", action="store_true", help="Print out the metrics.")
    parser.add_argument("--show-detailed-stats", action="store_true",
                        help="If set, stats are reported for each reporting interval as "
                             "configured by reporting-interval")
    parser.add_argument("--timeout", type=int, nargs="?", const=10000, default=10000,
                        metavar="MS", help="The maximum allowed time in milliseconds between "
                                           "returned records. (default: 10000)")
    parser.add_argument("--reporting-interval", type=int, default=5000, metavar="INTERVAL_MS",
                        help="Interval in milliseconds at which to print progress info. "
                             "(default: 5000)")
    parser.add_argument("--date-format", default="yyyy-MM-dd HH:mm:ss:SSS", metavar="FORMAT",
                        help="The date format to use for formatting the time field. See "
                             "java.text.SimpleDateFormat for options. "
                             "(default: yyyy-MM-dd HH:mm:ss:SSS)")
    parser.add_argument("--hide-header", action="store_true",
                        help="If set, skips printing the header for the stats")
    parser.add_argument("--threads", type=int, default=10, metavar="COUNT",
                        help="DEPRECATED AND IGNORED: Number of processing threads.")
    parser.add_argument("--num-fetch-threads", type=int, default=1, metavar="COUNT",
                        help="DEPRECATED AND IGNORED: Number of fetcher threads.")
    return parser


def _execute(args: argparse.Namespace) -> int:
    servers = args.bootstrap_server or args.broker_list
    if not servers:
        raise common.UsageError('Missing required argument "[bootstrap-server]"')
    for name in ("topic", "messages"):
        if getattr(args, name) is None:
            raise common.UsageError(f'Missing required argument "[{name}]"')
    if args.reporting_interval <= 0:
        raise common.UsageError("Reporting interval must be greater than 0.")
    date_format = JavaDateFormat(args.date_format)
    props = _consumer_props(args, servers)
    common.check_reachable(servers)
    if not args.hide_header:
        first = "time, threadId" if args.show_detailed_stats else "start.time, end.time"
        print(f"{first}, data.consumed.in.MB, MB.sec, data.consumed.in.nMsg, nMsg.sec"
              f"{_HEADER_TAIL}", flush=True)
    try:
        run, end_ms, metrics = _consume(args, props, date_format)
    except _perf.client_errors() as err:
        raise common.CommandError(_perf.failure_text(err)) from None
    if not args.show_detailed_stats:
        run.print_summary(end_ms)
    if metrics:
        _perf.print_metrics(metrics)
    return 0


def _consume(args: argparse.Namespace, props: dict[str, str],
             date_format: "JavaDateFormat") -> tuple["_Run", int, dict | None]:
    """The consume loop; the run's counters, its end time and the metrics asked for."""
    consumer = _make_consumer(props, args.print_metrics, args.timeout)
    try:
        run = _Run(args, date_format, _now_ms())
        consumer.subscribe(args.topic, run)
        run.consume(consumer)
        end_ms = _now_ms()
        return run, end_ms, consumer.metrics() if args.print_metrics else None
    finally:
        consumer.close()


def _consumer_props(args: argparse.Namespace, servers: str) -> dict[str, str]:
    """Kafka's ConsumerPerfOptions.props: the file, then what the options impose."""
    props = common.properties_file(args.consumer_config)
    props.update({
        "bootstrap.servers": servers,
        "group.id": args.group,
        "receive.buffer.bytes": str(args.socket_buffer_size),
        "max.partition.fetch.bytes": str(args.fetch_size),
        "auto.offset.reset": "latest" if args.from_latest else "earliest",
        "check.crcs": "false",
    })
    props.setdefault("client.id", _CLIENT_ID)
    return props


def _now_ms() -> int:
    return time.time_ns() // 1_000_000


def _java_double(value: float) -> str:
    """``%.4f`` as Java prints it, Infinity and NaN included (a zero-length interval)."""
    if math.isnan(value):
        return "NaN"
    if math.isinf(value):
        return "Infinity" if value > 0 else "-Infinity"
    return f"{value:.4f}"


def _div(a: float, b: float) -> float:
    if b == 0:
        return math.nan if a == 0 else math.copysign(math.inf, a)
    return a / b


class _Run:
    """The counters and the rebalance listener of one run (Kafka's consume loop)."""

    def __init__(self, args: argparse.Namespace, date_format: "JavaDateFormat",
                 start_ms: int) -> None:
        self._args = args
        self._date = date_format
        self._start_ms = start_ms
        self.messages = self.bytes = 0
        self.join_ms = 0
        self._join_start_ms = start_ms
        # Kafka passes the listener one counter and, after the first report, prints a
        # fresh one the listener never sees; ``_round_counted`` plays that part.
        self._join_round_ms = 0
        self._round_counted = True
        self._assigned: set = set()

    # -- rebalance listener --
    def revoked(self, partitions) -> None:
        self._assigned.difference_update(partitions)
        if not self._assigned:
            self._join_start_ms = _now_ms()

    def assigned(self, partitions) -> None:
        if not self._assigned:
            elapsed = _now_ms() - self._join_start_ms
            self.join_ms += elapsed
            if self._round_counted:
                self._join_round_ms += elapsed
        self._assigned.update(partitions)

    # -- the loop --
    def consume(self, consumer) -> None:
        args = self._args
        now = last_report = last_consumed = _now_ms()
        last_bytes = last_messages = 0
        while self.messages < args.messages and now - last_consumed <= args.timeout:
            count, size = consumer.poll_batch(0.1)
            now = _now_ms()
            if count:
                last_consumed = now
                self.messages += count
                self.bytes += size
                if now - last_report >= args.reporting_interval:
                    if args.show_detailed_stats:
                        self._print_progress(last_bytes, last_messages, last_report, now)
                    self._join_round_ms, self._round_counted = 0, False
                    last_report, last_messages, last_bytes = now, self.messages, self.bytes
        if self.messages < args.messages:
            print(f"WARNING: Exiting before consuming the expected number of messages: timeout "
                  f"({args.timeout} ms) exceeded. You can use the --timeout option to increase "
                  f"the timeout.", flush=True)

    def _print_progress(self, last_bytes: int, last_messages: int, start: int, end: int) -> None:
        elapsed = end - start
        interval_mb = (self.bytes - last_bytes) / _MB
        interval_messages = self.messages - last_messages
        fetch_ms = elapsed - self._join_round_ms
        fetch_mb_s = 0.0 if fetch_ms <= 0 else 1000.0 * interval_mb / fetch_ms
        fetch_n_s = 0.0 if fetch_ms <= 0 else 1000.0 * interval_messages / fetch_ms
        print(f"{self._date.format(end)}, 0, {_java_double(self.bytes / _MB)}, "
              f"{_java_double(_div(1000.0 * interval_mb, elapsed))}, {self.messages}, "
              f"{_java_double(_div(interval_messages, elapsed) * 1000.0)}, "
              f"{self._join_round_ms}, {fetch_ms}, {_java_double(fetch_mb_s)}, "
              f"{_java_double(fetch_n_s)}", flush=True)

    def print_summary(self, end_ms: int) -> None:
        elapsed_s = (end_ms - self._start_ms) / 1000.0
        fetch_ms = (end_ms - self._start_ms) - self.join_ms
        mb = self.bytes / _MB
        print(f"{self._date.format(self._start_ms)}, {self._date.format(end_ms)}, "
              f"{_java_double(mb)}, {_java_double(_div(mb, elapsed_s))}, {self.messages}, "
              f"{_java_double(_div(self.messages, elapsed_s))}, {self.join_ms}, {fetch_ms}, "
              f"{_java_double(_div(mb, fetch_ms / 1000.0))}, "
              f"{_java_double(_div(self.messages, fetch_ms / 1000.0))}", flush=True)


# -- the client ------------------------------------------------------------------------------

class _ConfluentConsumer:
    def __init__(self, props: dict[str, str], with_stats: bool) -> None:
        from confluent_kafka import Consumer

        self._stats = _perf.StatsSink()
        # librdkafka waits fetch.queue.backoff.ms (1 s) before fetching again once its
        # prefetch queue was full: a perf test drains that queue at once, so those pauses
        # would be most of the run. Java's consumer has no such pause.
        config = {"fetch.queue.backoff.ms": "10", **props}
        if with_stats:
            config.update({"statistics.interval.ms": "100", "stats_cb": self._stats})
        self._client_id = props["client.id"]
        self._auto_commit = props.get("enable.auto.commit", "true").lower() == "true"
        self._from_latest = props.get("auto.offset.reset") == "latest"
        self._consumer = _perf.confluent_client(Consumer, config)

    def subscribe(self, topic: str, run: _Run) -> None:
        self._consumer.subscribe([topic], on_assign=lambda _c, parts: run.assigned(_tps(parts)),
                                 on_revoke=lambda _c, parts: run.revoked(_tps(parts)))

    def poll_batch(self, timeout_s: float) -> tuple[int, int]:
        count = size = 0
        for message in self._consumer.consume(num_messages=10000, timeout=timeout_s):
            if message.error() is not None:
                continue
            count += 1
            key = message.key()
            size += len(message) + (len(key) if key else 0)
        return count, size

    def metrics(self) -> dict[str, object]:
        # Paused, polls serve the statistics callback without taking more records.
        self._consumer.pause(self._consumer.assignment())
        stats = self._stats.wait(self._consumer.poll)
        return _perf.librdkafka_metrics(stats, "consumer-metrics", self._client_id)

    def close(self) -> None:
        if self._auto_commit:
            self._commit_every_position()
        self._consumer.close()

    def _commit_every_position(self) -> None:
        """Commit a position for every assigned partition, as Kafka's tool does on close
        (Java's auto-commit covers each partition whose position was reset, records or
        not); librdkafka's covers only partitions it handed out records from.  A partition
        read nothing from stands at its reset offset: its low or high watermark."""
        from confluent_kafka import KafkaException

        try:
            positions = self._consumer.position(self._consumer.assignment())
            for tp in positions:
                if tp.offset < 0:
                    low, high = self._consumer.get_watermark_offsets(tp, timeout=10)
                    tp.offset = high if self._from_latest else low
            if positions:
                self._consumer.commit(offsets=positions, asynchronous=False)
        except KafkaException as e:     # close() commits what librdkafka has, as before
            print(f"WARN Committing every position on close failed: {e}", file=sys.stderr)


def _tps(partitions) -> set[tuple[str, int]]:
    return {(p.topic, p.partition) for p in partitions}


class _KafkaPythonConsumer:
    def __init__(self, props: dict[str, str], join_wait_ms: int) -> None:
        from kafka import KafkaConsumer

        props = {k: v for k, v in props.items() if not k.endswith(".deserializer")}
        config = common.client_config(props, KafkaConsumer.DEFAULT_CONFIG)
        self._client_id = props["client.id"]
        self._consumer = KafkaConsumer(**config)
        self._join_wait_ms = join_wait_ms

    def subscribe(self, topic: str, run: _Run) -> None:
        from kafka import ConsumerRebalanceListener

        class _Listener(ConsumerRebalanceListener):
            def on_partitions_revoked(self, revoked) -> None:
                run.revoked(_tps(revoked))

            def on_partitions_assigned(self, assigned) -> None:
                run.assigned(_tps(assigned))
        self._consumer.subscribe(topics=[topic], listener=_Listener())

    def poll_batch(self, timeout_s: float) -> tuple[int, int]:
        count = size = 0
        batch = common.kafka_python_poll(self._consumer, int(timeout_s * 1000),
                                         self._join_wait_ms)
        for records in batch.values():
            for record in records:
                count += 1
                size += len(record.key or b"") + len(record.value or b"")
        return count, size

    def metrics(self) -> dict[str, object]:
        return _perf.kafka_python_metrics(self._consumer.metrics(), self._client_id)

    def close(self) -> None:
        self._consumer.close()


def _make_consumer(props: dict[str, str], with_stats: bool, join_wait_ms: int):
    _perf.announce()
    if _perf.backend() == "confluent-kafka":
        return _ConfluentConsumer(props, with_stats)
    return _KafkaPythonConsumer(props, join_wait_ms)


# -- java.text.SimpleDateFormat --------------------------------------------------------------

class JavaDateFormat:
    """The common letters of a SimpleDateFormat pattern, in local time: runs of one letter
    are fields (``yyyy`` 2026, ``yy`` 26, ``MM`` 11, ``MMM`` Nov, ``dd``, ``HH``, ``hh``,
    ``mm``, ``ss``, ``SSS`` milliseconds, ``a`` AM/PM, ``E`` Tue, ``Z`` +0000); text in single
    quotes is literal ('' is a quote); other characters are copied."""

    _LETTERS = set("GyYMLwWDdFEuaHkKhmsSzZX")

    def __init__(self, pattern: str) -> None:
        self._parts = self._parse(pattern)

    def _parse(self, pattern: str) -> list[tuple[str, int | str]]:
        parts, i = [], 0
        while i < len(pattern):
            ch = pattern[i]
            if ch == "'":
                end = pattern.find("'", i + 1)
                if end == i + 1:
                    parts.append(("", "'"))
                    i += 2
                    continue
                if end < 0:
                    raise common.UsageError(f"Unterminated quote in date format {pattern}")
                parts.append(("", pattern[i + 1:end]))
                i = end + 1
            elif ch in self._LETTERS:
                run = 1
                while i + run < len(pattern) and pattern[i + run] == ch:
                    run += 1
                parts.append((ch, run))
                i += run
            elif ch.isalpha():
                raise common.UsageError(f"Illegal pattern character '{ch}'")
            else:
                parts.append(("", ch))
                i += 1
        return parts

    def format(self, ms: int) -> str:
        moment = datetime.fromtimestamp(ms / 1000).astimezone()
        return "".join(text if not letter else self._field(letter, text, moment, ms)
                       for letter, text in self._parts)

    @staticmethod
    def _field(letter: str, width, moment: datetime, ms: int) -> str:
        number = {
            "y": moment.year, "Y": moment.isocalendar()[0], "d": moment.day,
            "H": moment.hour, "k": moment.hour or 24, "K": moment.hour % 12,
            "h": moment.hour % 12 or 12, "m": moment.minute, "s": moment.second,
            "S": ms % 1000, "D": moment.timetuple().tm_yday, "u": moment.isoweekday(),
            "w": moment.isocalendar()[1],
        }
        if letter in ("y", "Y") and width == 2:
            return f"{number[letter] % 100:02d}"
        if letter in number:
            return f"{number[letter]:0{width}d}"
        if letter in ("M", "L"):
            if width >= 4:
                return moment.strftime("%B")
            return moment.strftime("%b") if width == 3 else f"{moment.month:0{width}d}"
        if letter == "E":
            return moment.strftime("%A") if width >= 4 else moment.strftime("%a")
        if letter == "a":
            return "AM" if moment.hour < 12 else "PM"
        if letter in ("Z", "X"):
            return moment.strftime("%z")
        if letter == "z":
            return moment.strftime("%Z")
        return "AD" if letter == "G" else ""
