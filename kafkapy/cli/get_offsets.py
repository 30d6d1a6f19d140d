"""``kafkapy-get-offsets``: Kafka's ``bin/kafka-get-offsets.sh`` (GetOffsetShell) over kafka-python.

Prints ``topic:partition:offset`` for every partition chosen by ``--topic REGEX`` (all topics
without it) and ``--partitions 0,1`` (all without it), or by ``--topic-partitions``
(``t1:1,t2:0-3,t3,t4:5-,:-3``: a topic regex, then a partition, a half-open range, a lower or
an upper bound). ``--time`` picks the offset: ``-1``/``latest`` (default), ``-2``/``earliest``,
``-3``/``max-timestamp``, ``-4``/``earliest-local``, ``-5``/``latest-tiered``, or a timestamp
in ms (the first offset whose timestamp is at least that; a partition with none is left out).
``--exclude-internal-topics`` leaves out internal topics. Lines come in the order of
``topic-partition`` as text, like Kafka's (so partition 10 sorts before 2). A partition whose
lookup fails is skipped with "Skip getting offsets for topic-partition T-P due to error: ...";
bad input or no matching partition prints "Error occurred: ..." to stderr and exits 1.

Differences from Kafka: ``-6``/``earliest-pending-upload`` is not offered (kafka-python 3.0
has no such offset spec), nor the deprecated ``--broker-list``.
"""
from __future__ import annotations

import argparse
import re
import sys

import kafka.errors
from kafka.admin import OffsetSpec
from kafka.structs import TopicPartition

from kafkapy.cli import _common as common
from kafkapy.cli._common import CommandError

_SPECS = {"latest": "LATEST", "earliest": "EARLIEST", "max-timestamp": "MAX_TIMESTAMP",
          "earliest-local": "EARLIEST_LOCAL", "latest-tiered": "LATEST_TIERED"}
_SPEC_NUMBERS = {"-1": "latest", "-2": "earliest", "-3": "max-timestamp",
                 "-4": "earliest-local", "-5": "latest-tiered"}
_RULE = re.compile(r"([^:,]*)(?::(?:([0-9]*)|(?:([0-9]*)-([0-9]*))))?")
_NO_LIMIT = 2 ** 31 - 1


def main(argv: list[str] | None = None) -> int:
    return common.run(_execute, _parser(), argv, _report)


def _report(message: str) -> None:
    print(f"Error occurred: {message}", file=sys.stderr)


def _parser() -> common.ToolParser:
    parser = common.ToolParser("kafkapy-get-offsets",
                               "An interactive shell for getting topic-partition offsets.")
    parser.add_argument("--topic", help="topic regex (all topics without it)")
    parser.add_argument("--partitions", help="comma-separated partition ids (all without it)")
    parser.add_argument("--topic-partitions", help="t1:1,t2:0-3,t3,t4:5-,t5:-3")
    parser.add_argument("--time", default="latest",
                        help="-1/latest, -2/earliest, -3/max-timestamp, -4/earliest-local, "
                             "-5/latest-tiered, or a timestamp in ms")
    parser.add_argument("--exclude-internal-topics", action="store_true",
                        help="leave internal topics out of --topic's matches")
    return parser


def _execute(args: argparse.Namespace) -> None:
    common.require_bootstrap(args)
    if args.topic_partitions and (args.topic or args.partitions):
        raise CommandError("--topic-partitions cannot be used with --topic or --partitions")
    spec = _offset_spec(args.time)
    rules = _rules(args)
    admin = common.admin_client(args)
    try:
        partitions = _partitions(admin, rules, args.exclude_internal_topics)
        if not partitions:
            raise CommandError("Could not match any topic-partitions with the specified filters")
        offsets = _offsets(admin, partitions, spec)
    finally:
        admin.close()
    for tp in sorted(offsets, key=lambda tp: f"{tp.topic}-{tp.partition}"):
        print(f"{tp.topic}:{tp.partition}:{offsets[tp]}")


def _offset_spec(text: str):
    name = _SPEC_NUMBERS.get(text, text)
    if name in _SPECS:
        return OffsetSpec[_SPECS[name]]
    try:
        return int(text)
    except ValueError:
        raise CommandError(f"Malformed time argument {text}. Please use -1 or latest / -2 or "
                           "earliest / -3 or max-timestamp / -4 or earliest-local / -5 or "
                           "latest-tiered, or a specified long format timestamp") from None


class _Rule:
    """One topic regex with the partitions it accepts: a set, or a [low, high) range."""

    def __init__(self, topic: str, ids: set[int] | None = None, low: int = 0,
                 high: int = _NO_LIMIT) -> None:
        self.topic = common.TopicFilter(topic or ".*")
        self.ids, self.low, self.high = ids, low, high

    def allows(self, topic: str, partition: int) -> bool:
        if not self.topic.allows(topic):
            return False
        return partition in self.ids if self.ids else self.low <= partition < self.high


def _rules(args: argparse.Namespace) -> list[_Rule]:
    if args.topic_partitions:
        return [_rule(spec) for spec in args.topic_partitions.split(",")]
    return [_Rule(args.topic or ".*", _partition_ids(args.partitions))]


def _partition_ids(text: str | None) -> set[int]:
    if not text:
        return set()
    try:
        return {int(p) for p in text.split(",")}
    except ValueError:
        raise CommandError("--partitions expects a comma separated list of numeric partition "
                           f"ids, but received: {text}") from None


def _rule(spec: str) -> _Rule:
    match = _RULE.fullmatch(spec)
    if not match:
        raise CommandError(f"Invalid rule specification: {spec}")
    topic, single, low, high = (g or None for g in match.groups())
    if single is not None:
        return _Rule(topic, {int(single)})
    return _Rule(topic, low=int(low or 0), high=int(high) if high else _NO_LIMIT)


def _partitions(admin, rules: list[_Rule], exclude_internal: bool) -> list:
    chosen = []
    for topic in admin.describe_topics():
        if exclude_internal and topic["is_internal"]:
            continue
        for partition in topic["partitions"]:
            index = partition["partition_index"]
            if any(rule.allows(topic["name"], index) for rule in rules):
                chosen.append(TopicPartition(topic["name"], index))
    return chosen


def _offsets(admin, partitions: list, spec) -> dict:
    """Offsets found; -1 (no record at that time) is left out, like Kafka's UNKNOWN_OFFSET."""
    try:
        found = admin.list_partition_offsets({tp: spec for tp in partitions})
    except kafka.errors.KafkaError:
        found = {}
        for tp in partitions:
            try:
                found.update(admin.list_partition_offsets({tp: spec}))
            except kafka.errors.KafkaError as err:
                print(f"Skip getting offsets for topic-partition {tp.topic}-{tp.partition} due "
                      f"to error: {common.failure_text(err)}", file=sys.stderr)
    return {tp: result.offset for tp, result in found.items() if result.offset != -1}


if __name__ == "__main__":
    sys.exit(main())
