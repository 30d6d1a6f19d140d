"""``kafkapy-delete-records``: Kafka's ``bin/kafka-delete-records.sh`` (DeleteRecordsCommand).

Deletes the records of each partition of ``--offset-json-file`` below its offset
(``{"partitions": [{"topic": "foo", "partition": 1, "offset": 1}], "version": 1}``; offset
-1 means the high watermark) and prints, in Kafka's words::

    Executing records delete operation
    Records delete operation completed:
    partition: foo-1\tlow_watermark: 1
    partition: bar-0\terror: org.apache.kafka.common.errors.OffsetOutOfRangeException: ...

Invariants, as Kafka's tool and admin client behave:
- Result lines come in the iteration order of the Java ``HashMap`` of TopicPartitions Kafka
  prints from (``java_set_order``; partitions of one bucket in reverse file order, as
  Kafka's admin client leaves them), one per partition of the file; the exit code is 0
  even when partitions fail.
- Each partition goes to its leader (one Metadata request per round). A partition with no
  known leader (a topic that does not exist) or a retriable error is retried until the
  admin client's ``default.api.timeout.ms`` (``--command-config``, 60 s by default), then
  reported with Kafka's TimeoutException text; a non-retriable error fails the partition at
  once and is also logged at ERROR as Kafka's DeleteRecordsHandler logs it.
- Bad input (unreadable file, not JSON, no ``partitions``, a version other than 1, a
  partition twice) is printed to stderr before anything is deleted; exit 1.
"""
from __future__ import annotations

import argparse
import json
import logging
import sys
import time

from kafka.protocol.admin import DeleteRecordsRequest

from kafkapy.cli import _common as common
from kafkapy.cli._common import CommandError, UsageError
from kafkapy.protocol.errors import ErrorCode

# The logger Kafka's admin client logs partition failures under (shown in the log line).
_handler_log = logging.getLogger("org.apache.kafka.clients.admin.internals.DeleteRecordsHandler")
_JSON_FORMAT = ('{"partitions":\n  [{"topic": "foo", "partition": 1, "offset": 1}],\n'
                ' "version":1\n}')
# Errors Kafka's client retries: InvalidMetadataException (a new leader is looked up) and
# the other RetriableExceptions DeleteRecords can answer.
_REMAP = {3, 5, 6}            # UNKNOWN_TOPIC_OR_PARTITION, LEADER_NOT_AVAILABLE, NOT_LEADER
_RETRY = {7, 13, 14, 15, 16, 19, 20, 56}
_BACKOFF_S = 0.1


def main(argv: list[str] | None = None) -> int:
    return common.run(_execute, _parser(), argv, common.to_stderr)


def _parser() -> common.ToolParser:
    parser = common.ToolParser(
        "kafkapy-delete-records",
        "This tool helps to delete records of the given partitions down to the specified "
        "offset.")
    parser.add_argument("--offset-json-file", metavar="FILE",
                        help="REQUIRED: The JSON file with offset per partition. The format "
                             "to use is: " + _JSON_FORMAT.replace("\n", " "))
    return parser


def _execute(args: argparse.Namespace) -> None:
    common.require_bootstrap(args)
    if not args.offset_json_file:
        raise UsageError('Missing required argument "[offset-json-file]"')
    offsets = _offsets(common.read_text(args.offset_json_file))
    print("Executing records delete operation")
    admin, timeout_ms = common.admin_client_and_timeout(args)
    try:
        outcomes = _delete(admin, offsets, timeout_ms)
    finally:
        admin.close()
    print("Records delete operation completed:")
    # Kafka's result map holds partitions of one hash bucket in the reverse of the file's
    # order (seen with Kafka 3.9's tool), hence reversed() before the HashMap order.
    for tp in common.java_set_order(list(reversed(offsets)), common.topic_partition_hash):
        kind, value = outcomes[tp]
        print(f"partition: {tp[0]}-{tp[1]}\t{kind}: {value}")


def _offsets(text: str) -> dict[tuple[str, int], int]:
    """The file's partitions and offsets, in file order, after Kafka's checks."""
    try:
        document = json.loads(text)
    except ValueError:
        raise CommandError("The input string is not a valid JSON") from None
    if not isinstance(document, dict):
        raise CommandError("The input string is not a valid JSON")
    version = document.get("version", 1)
    if version != 1:
        raise CommandError(f"Not supported version field value {version}")
    if "partitions" not in document:
        raise CommandError("Missing partitions field")
    seen: dict[tuple[str, int], list[int]] = {}
    for entry in document["partitions"]:
        try:
            tp = (str(entry["topic"]), int(entry["partition"]))
            seen.setdefault(tp, []).append(int(entry["offset"]))
        except (KeyError, TypeError, ValueError) as err:
            raise CommandError(f"Invalid partition entry {json.dumps(entry)}: {err}") from None
    duplicates = [tp for tp, found in seen.items() if len(found) > 1]
    if duplicates:
        listed = ",".join(f"{t}-{p}" for t, p in
                          common.java_set_order(duplicates, common.topic_partition_hash))
        raise CommandError(f"Offset json file contains duplicate topic partitions: {listed}")
    return {tp: found[0] for tp, found in seen.items()}


def _delete(admin, offsets: dict, timeout_ms: int) -> dict[tuple[str, int], tuple[str, str]]:
    """{partition: ("low_watermark", n) or ("error", Kafka's exception text)}."""
    started = _now_ms()
    outcomes: dict = {}
    pending = set(offsets)
    tries = 0
    while pending:
        tries += 1
        leaders = common.partition_leaders(admin, {t for t, _ in pending})
        waiting_on = "DELETE_RECORDS" if all(tp in leaders for tp in pending) else "METADATA"
        by_leader: dict[int, list] = {}
        for tp in pending:
            if tp in leaders:
                by_leader.setdefault(leaders[tp], []).append(tp)
        for leader, tps in by_leader.items():
            for tp, code, low in _send(admin, leader, tps, offsets, timeout_ms):
                if code == 0:
                    outcomes[tp] = ("low_watermark", str(low))
                elif code not in _REMAP and code not in _RETRY:
                    _log_failure(tp, code)
                    outcomes[tp] = ("error", common.java_exception_text(code))
        pending -= set(outcomes)
        if not pending:
            break
        now = _now_ms()
        if now - started >= timeout_ms:
            text = common.call_timeout_text("deleteRecords", waiting_on, started, timeout_ms,
                                            tries, now)
            for tp in pending:
                outcomes[tp] = ("error", f"org.apache.kafka.common.errors.TimeoutException: "
                                         f"{text}")
            break
        time.sleep(_BACKOFF_S)
    return outcomes


def _send(admin, leader: int, tps: list, offsets: dict, timeout_ms: int):
    """One DeleteRecords request to ``leader``: (partition, error code, low watermark)s."""
    by_topic: dict[str, list] = {}
    for topic, partition in tps:
        by_topic.setdefault(topic, []).append((partition, offsets[(topic, partition)]))
    request = DeleteRecordsRequest(topics=list(by_topic.items()), timeout_ms=timeout_ms)
    response = common.send(admin, request, leader)
    return [((topic.name, p.partition_index), p.error_code, p.low_watermark)
            for topic in response.topics for p in topic.partitions]


def _log_failure(tp: tuple[str, int], code: int) -> None:
    how = "an error" if code == 29 else "an unexpected error"
    _handler_log.error("[AdminClient clientId=adminclient-1] DeleteRecords request for topic "
                       "partition %s-%s failed due to %s %s", tp[0], tp[1], how,
                       ErrorCode(code).name)


def _now_ms() -> int:
    return int(time.time() * 1000)


if __name__ == "__main__":
    sys.exit(main())
