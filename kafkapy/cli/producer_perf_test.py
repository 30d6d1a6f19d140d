"""``kafkapy-producer-perf-test``: Kafka 3.9's ``bin/kafka-producer-perf-test.sh``.

Like Kafka's ProducerPerformance, sends ``--num-records`` records to ``--topic`` as fast as
``--throughput`` allows (records/s, -1 for no limit) and prints Kafka's lines: every 5 s of
acknowledgements a window line
``N records sent, X records/sec (Y MB/sec), A ms avg latency, B ms max latency.`` and at the
end ``N records sent, X records/sec (Y MB/sec), A ms avg latency, B ms max latency,
P ms 50th, P ms 95th, P ms 99th, P ms 99.9th.``. A record's latency is from its send call to
its acknowledgement; percentiles come from at most 500,000 samples (every
``num-records / min(num-records, 500000)``-th record), as Kafka's Stats class keeps them.

Payloads: ``--record-size`` (random upper-case letters), ``--payload-file`` (split at
``--payload-delimiter``, a regex as Java's Scanner takes it, one picked at random per
record), or ``--payload-monotonic`` (the record's index as text). Producer settings are the
Java client's names from ``--producer.config`` and ``--producer-props k=v ...`` (the latter
win; ``bootstrap.servers`` must come from one of them). ``--transaction-duration-ms`` > 0
turns on transactions with ``--transactional-id`` (default
``performance-producer-default-transactional-id``), committed each time that long has passed.
``--print-metrics`` prints the client's metrics after the summary.

The client is confluent-kafka when installed, else kafka-python (see ``_perf``). Only
acknowledged records are counted; a failed send prints its error on stderr.

Differences from Kafka: metric names under ``--print-metrics`` are the client library's;
``--record-size`` payloads are slices of one random block rather than fresh random bytes
per record (the same letters and compressibility, without per-byte Python work); an
unreachable bootstrap server ends the tool with "Error: ..." (exit 1) instead of a hang.
"""
from __future__ import annotations

import argparse
import os
import random
import re
import sys
import time
from array import array

from kafkapy.cli import _common as common
from kafkapy.cli import _perf

_DEFAULT_TRANSACTIONAL_ID = "performance-producer-default-transactional-id"
_CLIENT_ID = "perf-producer-client"
_REPORTING_INTERVAL_MS = 5000


class _Parser(argparse.ArgumentParser):
    def error(self, message: str):
        # argparse4j's handleError: usage and message on stderr, exit 1.
        self.print_usage(sys.stderr)
        print(f"{self.prog}: error: {message}", file=sys.stderr)
        sys.exit(1)


def main(argv: list[str] | None = None) -> int:
    parser = _parser()
    argv = sys.argv[1:] if argv is None else argv
    if not argv:
        parser.print_help()     # Kafka's tool prints its help when given nothing
        return 0
    return common.run(lambda args: _execute(args, parser), parser, argv, common.error_to_stderr)


def _parser() -> argparse.ArgumentParser:
    parser = _Parser(prog="kafkapy-producer-perf-test",
                     description="This tool is used to verify the producer performance.")
    parser.add_argument("--topic", required=True, metavar="TOPIC",
                        help="produce messages to this topic")
    parser.add_argument("--num-records", required=True, type=int, metavar="NUM-RECORDS",
                        help="number of messages to produce")
    parser.add_argument("--payload-delimiter", default="\\n", metavar="PAYLOAD-DELIMITER",
                        help="provides delimiter to be used when --payload-file is provided. "
                             "Defaults to new line. Note that this parameter will be ignored "
                             "if --payload-file is not provided. (default: \\n)")
    parser.add_argument("--throughput", required=True, type=float, metavar="THROUGHPUT",
                        help="throttle maximum message throughput to *approximately* "
                             "THROUGHPUT messages/sec. Set this to -1 to disable throttling.")
    parser.add_argument("--producer-props", nargs="+", metavar="PROP-NAME=PROP-VALUE",
                        help="kafka producer related configuration properties like "
                             "bootstrap.servers,client.id etc. These configs take precedence "
                             "over those passed via --producer.config.")
    parser.add_argument("--producer.config", dest="producer_config", metavar="CONFIG-FILE",
                        help="producer config properties file.")
    parser.add_argument("--print-metrics", action="store_true",
                        help="print out metrics at the end of the test. (default: false)")
    parser.add_argument("--transactional-id", default=_DEFAULT_TRANSACTIONAL_ID,
                        metavar="TRANSACTIONAL-ID",
                        help="The transactionalId to use if transaction-duration-ms is > 0. "
                             "Useful when testing the performance of concurrent transactions. "
                             f"(default: {_DEFAULT_TRANSACTIONAL_ID})")
    parser.add_argument("--transaction-duration-ms", type=int, default=0,
                        metavar="TRANSACTION-DURATION",
                        help="The max age of each transaction. The commitTransaction will be "
                             "called after this time has elapsed. Transactions are only "
                             "enabled if this value is positive. (default: 0)")
    payload = parser.add_argument_group(
        description="either --record-size or --payload-file must be specified but not both."
    ).add_mutually_exclusive_group(required=True)
    payload.add_argument("--record-size", type=int, metavar="RECORD-SIZE",
                         help="message size in bytes. Note that you must provide exactly one "
                              "of --record-size or --payload-file or --payload-monotonic.")
    payload.add_argument("--payload-file", metavar="PAYLOAD-FILE",
                         help="file to read the message payloads from. This works only for "
                              "UTF-8 encoded text files. Payloads will be read from this file "
                              "and a payload will be randomly selected when sending messages. "
                              "Note that you must provide exactly one of --record-size or "
                              "--payload-file or --payload-monotonic.")
    payload.add_argument("--payload-monotonic", action="store_true",
                         help="payload is monotonically increasing integer. Note that you "
                              "must provide exactly one of --record-size or --payload-file or "
                              "--payload-monotonic. (default: false)")
    return parser


def _execute(args: argparse.Namespace, parser: argparse.ArgumentParser) -> int:
    if args.num_records <= 0:
        parser.error("--num-records should be greater than zero")
    if args.record_size is not None and args.record_size <= 0:
        parser.error("--record-size should be greater than zero")
    if args.producer_props is None and args.producer_config is None:
        parser.error("Either --producer-props or --producer.config must be specified.")
    payloads = _Payloads(args)
    props = _producer_props(args)
    transactional = args.transaction_duration_ms > 0
    if transactional:
        props["transactional.id"] = args.transactional_id
    common.check_reachable(props.get("bootstrap.servers", "localhost:9092"))
    try:
        producer = _make_producer(props, args.print_metrics)
        return _run(producer, args, payloads, transactional)
    except _perf.client_errors() as err:
        raise common.CommandError(_perf.failure_text(err)) from None


def _producer_props(args: argparse.Namespace) -> dict[str, str]:
    """Kafka's readProps: the file, then the pairs (each exactly one '=')."""
    props = common.properties_file(args.producer_config)
    for item in args.producer_props or []:
        pieces = item.split("=")
        if len(pieces) != 2:
            raise common.UsageError(f"Invalid property: {item}")
        props[pieces[0]] = pieces[1]
    props.setdefault("client.id", _CLIENT_ID)
    return props


class _Payloads:
    """Kafka's generateRandomPayload, one record at a time (``next(i)``)."""

    def __init__(self, args: argparse.Namespace) -> None:
        self._random = random.Random(0)
        self._size = args.record_size
        self._monotonic = args.payload_monotonic
        self._choices = _read_payload_file(args.payload_file, args.payload_delimiter)
        if self._size is not None:
            letters = bytes(self._random.randrange(26) + 65 for _ in range(65536))
            self._block = letters * (self._size // len(letters) + 2)

    def next(self, index: int) -> bytes:
        if self._choices:
            return self._choices[self._random.randrange(len(self._choices))]
        if self._size is not None:
            start = self._random.randrange(65536)
            return self._block[start:start + self._size]
        return str(index).encode()


def _read_payload_file(path: str | None, delimiter: str) -> list[bytes]:
    if path is None:
        return []
    print(f"Reading payloads from: {os.path.abspath(path)}")
    if not os.path.exists(path) or os.path.getsize(path) == 0:
        raise common.CommandError("File does not exist or empty file provided.")
    with open(path, encoding="utf-8") as f:
        text = f.read()
    pattern = "\n" if delimiter == "\\n" else delimiter
    tokens = re.split(pattern, text)
    if tokens and tokens[-1] == "":
        tokens.pop()         # Java's Scanner gives no token after a final delimiter
    payloads = [token.encode() for token in tokens]
    print(f"Number of messages read: {len(payloads)}")
    return payloads


# -- the client ------------------------------------------------------------------------------

class _Transactions:
    """The transaction calls, the same on both clients' producers (``self._producer``)."""

    def init_transactions(self) -> None:
        self._producer.init_transactions()

    def begin_transaction(self) -> None:
        self._producer.begin_transaction()

    def commit_transaction(self) -> None:
        self._producer.commit_transaction()


class _ConfluentProducer(_Transactions):
    """librdkafka's producer: ``send`` queues, ``poll`` serves delivery callbacks."""

    def __init__(self, props: dict[str, str], with_stats: bool) -> None:
        from confluent_kafka import Producer

        self._stats = _perf.StatsSink()
        config = dict(props)
        if with_stats:
            config.update({"statistics.interval.ms": "100", "stats_cb": self._stats})
        self._client_id = props["client.id"]
        self._producer = _perf.confluent_client(Producer, config)

    def report_to(self, stats: "_Stats") -> None:
        # One callback for every record: librdkafka measures each record's latency itself
        # (``msg.latency()``, produce() to acknowledgement), so none needs a closure.
        def delivered(err, msg) -> None:
            if err is not None:
                print(err, file=sys.stderr)
                return
            stats.record(int(msg.latency() * 1000), len(msg), _now_ms())
        self._delivered = delivered

    def send(self, topic: str, payload: bytes) -> None:
        while True:
            try:
                self._producer.produce(topic, payload, on_delivery=self._delivered)
                break
            except BufferError:  # queue full: Java's send blocks too (max.block.ms)
                self._producer.poll(0.01)
        self._producer.poll(0)

    def flush(self) -> None:
        while self._producer.flush(1.0):
            pass

    def metrics(self) -> dict[str, object]:
        stats = self._stats.wait(self._producer.poll)
        return _perf.librdkafka_metrics(stats, "producer-metrics", self._client_id)

    def close(self) -> None:
        self.flush()


class _KafkaPythonProducer(_Transactions):
    def __init__(self, props: dict[str, str]) -> None:
        from kafka import KafkaProducer

        props = {k: v for k, v in props.items() if not k.endswith(".serializer")}
        config = common.client_config(props, KafkaProducer.DEFAULT_CONFIG)
        self._client_id = props["client.id"]
        self._producer = KafkaProducer(**config)

    def report_to(self, stats: "_Stats") -> None:
        self._stats = stats

    def send(self, topic: str, payload: bytes) -> None:
        start = _now_ms()
        future = self._producer.send(topic, payload)
        size, stats = len(payload), self._stats

        def delivered(_metadata) -> None:
            now = _now_ms()
            stats.record(now - start, size, now)
        future.add_callback(delivered)
        future.add_errback(lambda err: print(err, file=sys.stderr))

    def flush(self) -> None:
        self._producer.flush()

    def metrics(self) -> dict[str, object]:
        return _perf.kafka_python_metrics(self._producer.metrics(), self._client_id)

    def close(self) -> None:
        self._producer.close()


def _make_producer(props: dict[str, str], with_stats: bool):
    _perf.announce()
    if _perf.backend() == "confluent-kafka":
        return _ConfluentProducer(props, with_stats)
    return _KafkaPythonProducer(props)


# -- the run ---------------------------------------------------------------------------------

def _run(producer, args: argparse.Namespace, payloads: _Payloads, transactional: bool) -> int:
    if transactional:
        producer.init_transactions()
    stats = _Stats(args.num_records)
    producer.report_to(stats)
    throttler = _Throttler(args.throughput, _now_ms())
    in_transaction, transaction_start = 0, 0
    for i in range(args.num_records):
        payload = payloads.next(i)
        if transactional and in_transaction == 0:
            producer.begin_transaction()
            transaction_start = _now_ms()
        send_start = _now_ms()
        producer.send(args.topic, payload)
        in_transaction += 1
        if transactional and args.transaction_duration_ms <= send_start - transaction_start:
            producer.commit_transaction()
            in_transaction = 0
        if throttler.should_throttle(i, send_start):
            throttler.throttle()
    if transactional and in_transaction:
        producer.commit_transaction()
    if not args.print_metrics:
        producer.close()
        stats.print_total()
        return 0
    producer.flush()
    stats.print_total()
    _perf.print_metrics(producer.metrics())
    producer.close()
    return 0


def _now_ms() -> int:
    return time.time_ns() // 1_000_000


class _Stats:
    """Kafka's ProducerPerformance.Stats: totals, 5 s windows, sampled latencies."""

    def __init__(self, num_records: int) -> None:
        self._start = self._window_start = _now_ms()
        self._sampling = num_records // min(num_records, 500000)
        self._latencies = array("i", bytes(4 * (num_records // self._sampling + 1)))
        self._index = self._iteration = 0
        self._count = self._bytes = self._max_latency = self._total_latency = 0
        self._new_window()

    def _new_window(self) -> None:
        self._window_start = _now_ms()
        self._window_count = self._window_bytes = 0
        self._window_max = self._window_total = 0

    def record(self, latency: int, size: int, now: int) -> None:
        self._count += 1
        self._bytes += size
        self._total_latency += latency
        self._max_latency = max(self._max_latency, latency)
        self._window_count += 1
        self._window_bytes += size
        self._window_total += latency
        self._window_max = max(self._window_max, latency)
        if self._iteration % self._sampling == 0 and self._index < len(self._latencies):
            self._latencies[self._index] = latency
            self._index += 1
        if now - self._window_start >= _REPORTING_INTERVAL_MS:
            self._print_window()
            self._new_window()
        self._iteration += 1

    def _print_window(self) -> None:
        elapsed = max(_now_ms() - self._window_start, 1)
        print(f"{self._window_count} records sent, "
              f"{1000.0 * self._window_count / elapsed:.1f} records/sec "
              f"({1000.0 * self._window_bytes / elapsed / (1024.0 * 1024.0):.2f} MB/sec), "
              f"{self._window_total / self._window_count:.1f} ms avg latency, "
              f"{float(self._window_max):.1f} ms max latency.", flush=True)

    def print_total(self) -> None:
        elapsed = max(_now_ms() - self._start, 1)
        percentiles = self._percentiles(0.5, 0.95, 0.99, 0.999)
        average = self._total_latency / self._count if self._count else float("nan")
        print(f"{self._count} records sent, {1000.0 * self._count / elapsed:f} records/sec "
              f"({1000.0 * self._bytes / elapsed / (1024.0 * 1024.0):.2f} MB/sec), "
              f"{average:.2f} ms avg latency, {float(self._max_latency):.2f} ms max latency, "
              f"{percentiles[0]} ms 50th, {percentiles[1]} ms 95th, {percentiles[2]} ms 99th, "
              f"{percentiles[3]} ms 99.9th.", flush=True)

    def _percentiles(self, *fractions: float) -> list[int]:
        size = min(self._index, len(self._latencies))
        ordered = sorted(self._latencies[:size]) or [0]
        return [ordered[min(int(f * size), len(ordered) - 1)] for f in fractions]


class _Throttler:
    """Kafka's ThroughputThrottler: sleep off the deficit in steps of at least 2 ms."""
    _MIN_SLEEP_NS = 2_000_000

    def __init__(self, target: float, start_ms: int) -> None:
        self._target = target
        self._start_ms = start_ms
        self._sleep_ns = 1e9 / target if target > 0 else 0
        self._deficit_ns = 0.0

    def should_throttle(self, so_far: int, send_start_ms: int) -> bool:
        if self._target < 0:
            return False
        elapsed_s = (send_start_ms - self._start_ms) / 1000.0
        return elapsed_s > 0 and so_far / elapsed_s > self._target

    def throttle(self) -> None:
        if self._target == 0:
            while True:             # Kafka's throttler waits forever at 0 records/s
                time.sleep(3600)
        self._deficit_ns += self._sleep_ns
        if self._deficit_ns >= self._MIN_SLEEP_NS:
            started = time.monotonic_ns()
            time.sleep(self._deficit_ns / 1e9)
            self._deficit_ns = max(0.0, self._deficit_ns - (time.monotonic_ns() - started))


if __name__ == "__main__":
    sys.exit(main())
