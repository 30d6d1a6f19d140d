"""``kafkapy-leader-election``: Kafka's ``bin/kafka-leader-election.sh`` (LeaderElectionCommand).

``--election-type preferred|unclean`` (required, any case) with exactly one of
``--topic T --partition N``, ``--all-topic-partitions`` or ``--path-to-json-file F``
(``{"partitions": [{"topic": "foo", "partition": 1}, ...]}``); ``--admin.config`` (or
``--command-config``) names a client properties file.  Prints Kafka's lines:
"Successfully completed leader election (PREFERRED) for partitions t-0, t-1",
"Valid replica already elected for partitions t-2", and for each failure
"Error completing leader election (PREFERRED) for partition: t-3: <error>", after
which it reports "N replica(s) could not be elected" on stderr and exits 1.  Bad
options print Kafka's messages ("Missing required option(s): election-type", "One
and only one of the following options is required: topic, all-topic-partitions,
path-to-json-file", ...) on stderr and exit 1.

With ``--all-topic-partitions`` the partitions that need no election are not reported, as
with Kafka (whose broker leaves them out of the answer to a request naming no partitions;
kafka-python names every partition, so the tool leaves them out itself).

Partitions are listed in the iteration order of Kafka's ``HashSet<TopicPartition>``
(``_common.java_set_order``), an error as Java's ``Throwable.toString``
("org.apache.kafka.common.errors.<Name>Exception: <message>").

Differences from Kafka: no stack trace follows the final message.
"""
from __future__ import annotations

import argparse
import json
import sys

import kafka.errors

from kafkapy.cli import _common as common
from kafkapy.cli._common import (CommandError, UsageError, java_set_order,
                                 topic_partition_hash)

_TYPES = {"PREFERRED": 0, "UNCLEAN": 1}
_ELECTION_NOT_NEEDED = kafka.errors.ElectionNotNeededError.errno


def main(argv: list[str] | None = None) -> int:
    return common.run(_execute, _parser(), argv, common.to_stderr)


def _parser() -> common.ToolParser:
    parser = common.ToolParser(
        "kafkapy-leader-election",
        "This tool attempts to elect a new leader for a set of topic partitions. The type of "
        "elections supported are preferred replicas and unclean replicas.")
    parser.add_argument("--admin.config", dest="command_config", metavar="FILE",
                        help="configuration properties file to pass to the admin client")
    parser.add_argument("--election-type", help="preferred or unclean (REQUIRED)")
    parser.add_argument("--topic", help="topic of the partition to elect a leader for")
    parser.add_argument("--partition", type=int, help="partition id (REQUIRED with --topic)")
    parser.add_argument("--all-topic-partitions", action="store_true",
                        help="every eligible partition of every topic")
    parser.add_argument("--path-to-json-file", help='{"partitions": [{"topic": "foo", '
                                                    '"partition": 1}, ...]}')
    return parser


def _execute(args: argparse.Namespace) -> int:
    election = _validate(args)
    partitions = _chosen_partitions(args)
    admin = common.admin_client(args)
    try:
        response = admin.elect_leaders(_TYPES[election], partitions, raise_errors=False)
    finally:
        admin.close()
    if response.API_VERSION >= 1:
        common.check_error(response.error_code)
    return _print_results(election, response, report_noop=partitions is not None)


def _validate(args: argparse.Namespace) -> str:
    missing = [name for name, given in (("bootstrap-server", args.bootstrap_server),
                                        ("election-type", args.election_type)) if not given]
    if missing:
        raise UsageError("Missing required option(s): " + ", ".join(missing))
    election = args.election_type.upper()
    if election not in _TYPES:
        raise UsageError(f"Cannot convert argument '{args.election_type}' of option "
                         f"['election-type']. Possible values: PREFERRED, UNCLEAN")
    chosen = [args.topic is not None, args.all_topic_partitions,
              args.path_to_json_file is not None]
    if sum(chosen) != 1:
        raise UsageError("One and only one of the following options is required: topic, "
                         "all-topic-partitions, path-to-json-file")
    if args.topic is not None and args.partition is None:
        raise UsageError("Missing required option(s): partition")
    if args.topic is None and args.partition is not None:
        raise UsageError("Option partition is only allowed if topic is used")
    return election


def _chosen_partitions(args: argparse.Namespace) -> dict[str, list[int]] | None:
    if args.topic is not None:
        return {args.topic: [args.partition]}
    if args.path_to_json_file is not None:
        return _json_partitions(args.path_to_json_file)
    return None


def _json_partitions(path: str) -> dict[str, list[int]]:
    with open(path, encoding="utf-8") as f:
        text = f.read()
    if not text.strip():
        raise CommandError("Replica election data is empty")
    try:
        entries = json.loads(text).get("partitions")
        if entries is None:
            raise CommandError('Replica election data is missing "partitions" field')
        pairs = [(str(e["topic"]), int(e["partition"])) for e in entries]
    except (ValueError, TypeError, KeyError, AttributeError) as err:
        raise CommandError(f"Malformed replica election data in {path}: {err}") from None
    duplicates = sorted({f"{t}-{p}" for t, p in pairs if pairs.count((t, p)) > 1})
    if duplicates:
        raise CommandError("Replica election data contains duplicate partitions: "
                           + ",".join(duplicates))
    chosen: dict[str, list[int]] = {}
    for topic, partition in pairs:
        chosen.setdefault(topic, []).append(partition)
    return chosen


def _print_results(election: str, response, report_noop: bool) -> int:
    succeeded, noop, failed, errors = [], [], [], {}
    for result in response.replica_election_results:
        for p in result.partition_result:
            tp = (result.topic, p.partition_id)
            if p.error_code == 0:
                succeeded.append(tp)
            elif p.error_code == _ELECTION_NOT_NEEDED:
                if report_noop:
                    noop.append(tp)
            else:
                failed.append(tp)
                errors[tp] = _error(p.error_code, p.error_message)
    if succeeded:
        print(f"Successfully completed leader election ({election}) for partitions "
              + _names(succeeded))
    if noop:
        print("Valid replica already elected for partitions " + _names(noop))
    if not failed:
        return 0
    for tp in java_set_order(failed, topic_partition_hash):
        print(f"Error completing leader election ({election}) for partition: "
              f"{tp[0]}-{tp[1]}: {errors[tp]}")
    raise CommandError(f"{len(failed)} replica(s) could not be elected")


def _names(partitions: list[tuple[str, int]]) -> str:
    """Partitions as Kafka joins its HashSet<TopicPartition>: "t-2, t-0, t-1"."""
    return ", ".join(f"{t}-{p}" for t, p in java_set_order(partitions, topic_partition_hash))


def _error(code: int, message: str | None) -> str:
    cls = kafka.errors.for_code(code).__name__
    java_name = cls[:-len("Error")] + "Exception" if cls.endswith("Error") else cls
    return f"org.apache.kafka.common.errors.{java_name}: {common.error_text(code, message)}"


if __name__ == "__main__":
    sys.exit(main())
