"""``kafkapy-reassign-partitions``: Kafka 3.9's ``bin/kafka-reassign-partitions.sh``
(ReassignPartitionsCommand) over kafka-python, for any broker.

Exactly one action: ``--generate`` (``--topics-to-move-json-file``, ``--broker-list``,
``--disable-rack-aware``), ``--execute`` (``--reassignment-json-file``, ``--throttle``,
``--replica-alter-log-dirs-throttle``, ``--additional``, ``--timeout``), ``--verify``
(``--reassignment-json-file``, ``--preserve-throttles``), ``--cancel`` (the same plus
``--timeout``) or ``--list``; ``--bootstrap-server`` and ``--command-config`` always.

JSON formats (Kafka's): topics to move ``{"topics": [{"topic": "foo"}], "version": 1}``; a
plan ``{"version":1,"partitions":[{"topic":"foo","partition":0,"replicas":[1,2],
"log_dirs":["any","any"]}]}`` (``log_dirs`` optional). A plan is printed compactly, sorted
by topic then partition, exactly as Kafka's ``formatAsReassignmentJson`` writes it.

What each action does, as Kafka's tool:
- ``--generate``: the topics' current assignment and a proposal from Kafka's placement
  (``kafkapy.admin.assignment``: AdminUtils.assignReplicasToBrokers, random start, rack
  aware unless ``--disable-rack-aware``) over the listed brokers that exist, each topic keeping
  its replication factor.  Nothing is changed.
- ``--execute``: refused while any reassignment is in flight unless ``--additional``; prints
  the current assignment (for rollback); with ``--throttle N`` sets, through
  IncrementalAlterConfigs, ``leader/follower.replication.throttled.replicas`` on each moving
  topic (leader side: every source replica ``p:b``; follower side: every new replica) and
  ``leader/follower.replication.throttled.rate = N`` on every broker involved; then
  AlterPartitionReassignments.
- ``--verify``: the state of each planned partition (ListPartitionReassignments, else the
  topic's replicas); when no reassignment at all is in flight, clears the throttles (the three
  broker rates on every broker and every target broker, the two topic keys on every planned
  topic) unless ``--preserve-throttles``.
- ``--cancel``: AlterPartitionReassignments with no replicas for the planned partitions in
  flight, then clears throttles as ``--verify`` does.
- ``--list``: every reassignment in flight with its adding / removing replicas.
- A plan's ``log_dirs`` other than "any": after the reassignment, AlterReplicaLogDirs until
  each move has started (``--timeout``, with ``--replica-alter-log-dirs-throttle`` setting
  ``replica.alter.log.dirs.io.max.bytes.per.second``); ``--verify``/``--cancel`` read where
  the replicas are through DescribeLogDirs; a broker refusing AlterReplicaLogDirs (or without
  the API) fails the command with Kafka's "Failed to alter dir for t-0-1".

Output, streams and exit codes are Kafka's: usage errors (Kafka's words: "Command must include
exactly one action: ...", "Please specify --bootstrap-server", 'Missing required argument
"[broker-list]"', 'Option "[throttle]" can't be used with action "[list]"') go to stderr with
the usage, exit 1; a failed operation prints "Error: <message>" on stdout, exit 1 (Kafka's
"terse" failures, e.g. "Cannot execute because there is an existing partition assignment...",
print the bare message).  Where Kafka prints a Java hash set (brokers and topics whose
throttles are cleared, duplicates, the first unknown broker or topic) the same order is used
(``_common.java_set_order``).

Differences from Kafka:
- ``--help`` prints argparse's help on stdout and exits 0 (Kafka: its option table on stderr,
  exit 1); no stack trace follows an "Error: ..." line; ``--version`` prints kafkapy's
  version; a JSON syntax error's text is Python's, not Jackson's.
- ``--generate`` takes the brokers in id order (Kafka: the order DescribeCluster lists them,
  which changes only which of the equally random proposals comes out).
- A broker that is down is reported at once in Kafka's NetworkClient words
  (``_common.check_reachable``), not after Kafka's 60 s admin timeout.
"""
from __future__ import annotations

import argparse
import json
import re
import sys
import time
from dataclasses import dataclass, field
from importlib import metadata

import kafka.errors
from kafka.admin import AlterConfigOp, ConfigResource, ConfigResourceType
from kafka.protocol.admin import AlterPartitionReassignmentsRequest
from kafka.structs import TopicPartition, TopicPartitionReplica

from kafkapy.cli import _common as common
from kafkapy.cli._common import (CommandError, UsageError, int_hash, java_set_order,
                                 string_hash, topic_partition_hash)
from kafkapy.config.errors import ConfigError
from kafkapy.admin.assignment import RACK_INFO_MISSING_ENFORCED, assign_replicas
from kafkapy.protocol.errors import KafkaError

_ANY_LOG_DIR = "any"
_BROKER_THROTTLES = ("leader.replication.throttled.rate",
                     "follower.replication.throttled.rate",
                     "replica.alter.log.dirs.io.max.bytes.per.second")
_TOPIC_THROTTLES = ("leader.replication.throttled.replicas",
                    "follower.replication.throttled.replicas")
_ACTIONS = ("generate", "execute", "verify", "cancel", "list")
_REQUIRED = {"verify": ("reassignment_json_file",),
             "generate": ("topics_to_move_json_file", "broker_list"),
             "execute": ("reassignment_json_file",),
             "cancel": ("reassignment_json_file",),
             "list": ()}
_PERMITTED = {"verify": ("bootstrap_server", "command_config", "preserve_throttles"),
              "generate": ("bootstrap_server", "broker_list", "command_config",
                           "disable_rack_aware"),
              "execute": ("additional", "bootstrap_server", "command_config", "throttle",
                          "replica_alter_log_dirs_throttle", "timeout"),
              "cancel": ("bootstrap_server", "command_config", "preserve_throttles", "timeout"),
              "list": ("bootstrap_server", "command_config")}
_CANNOT_EXECUTE = ("Cannot execute because there is an existing partition assignment.  Use "
                   "--additional to override this and create a new partition assignment in "
                   "addition to the existing one. The --additional flag can also be used to "
                   "change the throttle by resubmitting the current reassignment.")
_RUN_VERIFY = ("Warning: You must run --verify periodically, until the reassignment completes, "
               "to ensure the throttle is removed.")
_UNKNOWN_TOPIC = "org.apache.kafka.common.errors.UnknownTopicOrPartitionException"
_REPLICA_NOT_AVAILABLE = 9
_PLAN_HELP = ('The JSON file with the partition reassignment configuration: {"partitions": '
              '[{"topic": "foo", "partition": 1, "replicas": [1,2,3], "log_dirs": '
              '["dir1","dir2","dir3"]}], "version":1}; "log_dirs" is optional ("any" or an '
              'absolute log directory on the broker)')


class TerseError(CommandError):
    """A failure Kafka reports with its bare message (its TerseException); any other
    CommandError is printed as ``Error: <message>`` (Kafka adds a stack trace)."""


@dataclass
class _Plan:
    """A parsed reassignment JSON: partitions in file order (duplicates kept, so they can be
    refused) and the replicas given a log dir other than "any"."""
    parts: list[tuple[tuple[str, int], list[int]]] = field(default_factory=list)
    log_dirs: dict[tuple[str, int, int], str] = field(default_factory=dict)


def main(argv: list[str] | None = None) -> int:
    argv = sys.argv[1:] if argv is None else list(argv)
    parser = _parser()
    if not argv:
        # Kafka's CommandLineUtils: no arguments at all print the help text and usage.
        parser.print_help(sys.stderr)
        return 1
    return common.run(lambda args: _run(args, argv, parser), parser, argv, print)


# --------------------------------------------------------------------------- options

class _Parser(common.ToolParser):
    """ToolParser with joptsimple's words for an unknown option or a missing value (Kafka's
    tool lets those exceptions escape: the sentence, exit 1)."""

    def error(self, message: str):
        unknown = re.match(r"unrecognized arguments: -*(\S+)", message)
        missing = re.match(r"argument --([\w-]+).*: expected one argument", message)
        if unknown:
            message = f"{unknown.group(1).split('=')[0]} is not a recognized option"
        elif missing:
            message = f"Option {missing.group(1)} requires an argument"
        super().error(message)


def _parser() -> common.ToolParser:
    parser = _Parser("kafkapy-reassign-partitions",
                     "This tool helps to move topic partitions between replicas.")
    parser.allow_abbrev = False   # Kafka's option parser takes no abbreviations
    flags = {
        "generate": "Generate a candidate partition reassignment configuration. Note that this "
                    "only generates a candidate assignment, it does not execute it.",
        "execute": "Kick off the reassignment as specified by the --reassignment-json-file "
                   "option.",
        "verify": "Verify if the reassignment completed as specified by the "
                  "--reassignment-json-file option. If there is a throttle engaged for the "
                  "replicas specified, and the rebalance has completed, the throttle will be "
                  "removed",
        "cancel": "Cancel an active reassignment.",
        "list": "List all active partition reassignments.",
        "additional": "Execute this reassignment in addition to any other ongoing ones. This "
                      "option can also be used to change the throttle of an ongoing "
                      "reassignment.",
        "disable-rack-aware": "Disable rack aware replica assignment",
        "preserve-throttles": "Do not modify broker or topic throttles.",
        "version": "Display the version.",
    }
    for flag, text in flags.items():
        parser.add_argument(f"--{flag}", action="store_true", help=text)
    parser.add_argument("--reassignment-json-file", metavar="FILE", help=_PLAN_HELP)
    parser.add_argument("--topics-to-move-json-file", metavar="FILE",
                        help='Generate a reassignment configuration to move the partitions of '
                             'the specified topics to the list of brokers specified by the '
                             '--broker-list option: {"topics": [{"topic": "foo"},'
                             '{"topic": "foo1"}], "version":1}')
    parser.add_argument("--broker-list", metavar="BROKERLIST",
                        help='The list of brokers to which the partitions need to be '
                             'reassigned in the form "0,1,2". This is required if '
                             '--topics-to-move-json-file is used to generate reassignment '
                             'configuration')
    parser.add_argument("--throttle", metavar="BYTES_PER_SEC",
                        help="The movement of partitions between brokers will be throttled to "
                             "this value (bytes/sec); with --execute, or with --additional to "
                             "change it. (default: -1)")
    parser.add_argument("--replica-alter-log-dirs-throttle", metavar="BYTES_PER_SEC",
                        help="The movement of replicas between log directories on the same "
                             "broker will be throttled to this value (bytes/sec). (default: -1)")
    parser.add_argument("--timeout", metavar="MS",
                        help="The maximum time in ms to wait for log directory replica "
                             "assignment to begin. (default: 10000)")
    return parser


def _given_options(argv: list[str], parser: argparse.ArgumentParser) -> list[str]:
    """The options on the command line as ``dest`` names, in order (joptsimple's specs())."""
    dests = {s: a.dest for a in parser._actions for s in a.option_strings}
    given = []
    for token in argv:
        if token == "--":
            break
        dest = dests.get(token.split("=", 1)[0])
        if dest is not None and dest not in given:
            given.append(dest)
    return given


def _check_args(args: argparse.Namespace, argv: list[str], parser) -> str | None:
    """Kafka's validateAndParseArgs; the action, or None for --version."""
    if args.version:
        return None
    action = common.single_action(args, _ACTIONS,
                                  "--generate, --execute, --verify, --cancel, --list")
    if not args.bootstrap_server:
        raise UsageError("Please specify --bootstrap-server")
    for required in _REQUIRED[action]:
        if getattr(args, required) is None:
            raise UsageError(f'Missing required argument "[{_dashed(required)}]"')
    for dest in _given_options(argv, parser):
        if dest != action and dest not in _REQUIRED[action] and dest not in _PERMITTED[action]:
            raise UsageError(f'Option "[{_dashed(dest)}]" can\'t be used with action '
                             f'"[{action}]"')
    return action


def _dashed(dest: str) -> str:
    return dest.replace("_", "-")


def _long_option(value: str | None, name: str, default: int) -> int:
    """A Long option's value (joptsimple converts it when the tool reads it)."""
    if value is None:
        return default
    if not re.fullmatch(r"[+-]?\d+", value) or not -2**63 <= int(value) < 2**63:
        raise CommandError(f"Cannot parse argument '{value}' of option {name}")
    return int(value)


# --------------------------------------------------------------------------- running

def _run(args: argparse.Namespace, argv: list[str], parser: common.ToolParser) -> int:
    try:
        action = _check_args(args, argv, parser)
    except UsageError as err:
        parser.error(str(err))   # Kafka's printUsageAndExit: the message, the usage, exit 1
    if action is None:
        print(_version())
        return 0
    try:
        return _act(action, args)
    except TerseError:
        raise
    except (CommandError, kafka.errors.KafkaError, ConfigError, OSError) as err:
        # Kafka prints every other failure as "Error: <message>" (then a stack trace).
        raise TerseError(f"Error: {common.failure_text(err)}") from None


def _act(action: str, args: argparse.Namespace) -> int:
    if action == "list":
        return _with_admin(args, _list)
    if action == "generate":
        brokers, topics = _generate_args(common.read_text(args.topics_to_move_json_file),
                                         args.broker_list)
        return _with_admin(args, lambda admin: _generate(admin, topics, brokers,
                                                         not args.disable_rack_aware))
    # Kafka reads the file, then the options' values, then parses the file.
    text = common.read_text(args.reassignment_json_file)
    if action == "verify":
        plan = _parse_plan(text)
        return _with_admin(args, lambda admin: _verify(admin, plan, args.preserve_throttles))
    if action == "cancel":
        timeout_ms = _long_option(args.timeout, "timeout", 10000)
        plan = _parse_plan(text)
        return _with_admin(args, lambda admin: _cancel(admin, plan, args.preserve_throttles,
                                                       timeout_ms))
    throttle = _long_option(args.throttle, "throttle", -1)
    log_dir_throttle = _long_option(args.replica_alter_log_dirs_throttle,
                                    "replica-alter-log-dirs-throttle", -1)
    timeout_ms = _long_option(args.timeout, "timeout", 10000)
    plan = _parse_plan(text)
    _check_execute_plan(plan)
    return _with_admin(args, lambda admin: _execute(admin, plan, args.additional, throttle,
                                                    log_dir_throttle, timeout_ms))


def _version() -> str:
    try:
        return metadata.version("kafkapy")
    except metadata.PackageNotFoundError:
        return "unknown"


def _with_admin(args: argparse.Namespace, body) -> int:
    props = common.properties_file(args.command_config)
    overrides = {} if "client.id" in props else {"client_id": "reassign-partitions-tool"}
    admin = common.admin_client(args, **overrides)
    try:
        body(admin)
    finally:
        admin.close()
    return 0


# --------------------------------------------------------------------------- JSON

def _json_text(value) -> str:
    """A JSON value as Jackson prints a JsonNode (compact)."""
    return json.dumps(value, separators=(",", ":"), ensure_ascii=False)


def _load_json(text: str):
    if not text.strip():
        return _MISSING
    return json.loads(text)


class _Missing:
    def __str__(self) -> str:
        return ""


_MISSING = _Missing()


def _object(value) -> dict:
    if not isinstance(value, dict):
        shown = value if isinstance(value, _Missing) else _json_text(value)
        raise CommandError(f"Expected JSON object, received {shown}")
    return value


def _array(value) -> list:
    if not isinstance(value, list):
        raise CommandError(f"Expected JSON array, received {_json_text(value)}")
    return value


def _field(obj: dict, name: str):
    if name not in obj:
        raise CommandError(f"No such field exists: `{name}`")
    return obj[name]


def _int(value) -> int:
    # Jackson's isInt(): a JSON integer within Java's int range.
    if isinstance(value, bool) or not isinstance(value, int) or not -2**31 <= value < 2**31:
        raise CommandError(f"Expected `Integer` value, received {_json_text(value)}")
    return value


def _str(value) -> str:
    if not isinstance(value, str):
        raise CommandError(f"Expected `String` value, received {_json_text(value)}")
    return value


def _version_of(obj: dict, default: int = 1) -> int:
    version = _int(obj["version"]) if "version" in obj else default
    if version != 1:
        raise CommandError(f"Not supported version field value {version}")
    return version


def _parse_topics(text: str) -> list[str]:
    """Kafka's parseTopicsData: ``{"topics": [{"topic": "foo"}, ...], "version": 1}``."""
    try:
        doc = _load_json(text)
    except ValueError:
        doc = _MISSING
    if isinstance(doc, _Missing):
        raise CommandError("The input string is not a valid JSON")
    doc = _object(doc)
    _version_of(doc)
    return [_str(_field(_object(entry), "topic")) for entry in _array(doc.get("topics", []))]


def _parse_plan(text: str) -> _Plan:
    """Kafka's parsePartitionReassignmentData (duplicates kept for the checks)."""
    try:
        doc = _load_json(text)
    except ValueError as err:
        raise CommandError(f"com.fasterxml.jackson.core.JsonParseException: {err}") from None
    doc = _object(doc)
    _version_of(doc)
    plan = _Plan()
    for entry in _array(doc.get("partitions", [])):
        entry = _object(entry)
        topic = _str(_field(entry, "topic"))
        partition = _int(_field(entry, "partition"))
        replicas = [_int(r) for r in _array(_field(entry, "replicas"))]
        dirs = ([_str(d) for d in _array(entry["log_dirs"])] if "log_dirs" in entry
                else [_ANY_LOG_DIR] * len(replicas))
        if len(dirs) != len(replicas):
            raise CommandError(f"Size of replicas list {_java_list(replicas)} is different from "
                               f"size of log dirs list {_java_list(dirs)} for partition "
                               f"{topic}-{partition}")
        plan.parts.append(((topic, partition), replicas))
        for replica, log_dir in zip(replicas, dirs):
            if log_dir != _ANY_LOG_DIR:
                plan.log_dirs[(topic, partition, replica)] = log_dir
    return plan


def _check_execute_plan(plan: _Plan) -> None:
    """Kafka's parseExecuteAssignmentArgs checks."""
    if not plan.parts:
        raise CommandError("Partition reassignment list cannot be empty")
    if any(not replicas for _, replicas in plan.parts):
        raise CommandError("Partition replica list cannot be empty")
    duplicate_parts = _duplicates([tp for tp, _ in plan.parts])
    if duplicate_parts:
        raise CommandError("Partition reassignment contains duplicate topic partitions: "
                           + ",".join(_tp(tp) for tp in java_set_order(duplicate_parts,
                                                                       topic_partition_hash)))
    duplicate_replicas = [(tp, _duplicates(replicas)) for tp, replicas in plan.parts
                          if _duplicates(replicas)]
    if duplicate_replicas:
        text = ". ".join(f"{_tp(tp)} contains multiple entries for "
                         + ",".join(str(r) for r in java_set_order(dups, int_hash))
                         for tp, dups in duplicate_replicas)
        raise CommandError(f"Partition replica lists may not contain duplicate entries: {text}")


def _format_plan(assignment: dict[tuple[str, int], list[int]],
                 log_dirs: dict[tuple[str, int, int], str] | None = None) -> str:
    """Kafka's formatAsReassignmentJson: sorted by topic then partition, compact."""
    log_dirs = log_dirs or {}
    partitions = [{"topic": topic, "partition": partition, "replicas": replicas,
                   "log_dirs": [log_dirs.get((topic, partition, r), _ANY_LOG_DIR)
                                for r in replicas]}
                  for (topic, partition), replicas in sorted(assignment.items())]
    return _json_text({"version": 1, "partitions": partitions})


# --------------------------------------------------------------------------- Java shapes

def _tp(tp: tuple[str, int]) -> str:
    return f"{tp[0]}-{tp[1]}"


def _java_list(items) -> str:
    """A Java List's toString: ``[1, 2]``."""
    return "[" + ", ".join(str(i) for i in items) + "]"


def _duplicates(items) -> list:
    seen, dups = set(), []
    for item in items:
        if item in seen and item not in dups:
            dups.append(item)
        seen.add(item)
    return dups


def _java_set(items, hash_fn) -> str:
    """A HashSet's toString: ``[a, b]``."""
    return _java_list(java_set_order(items, hash_fn))


# --------------------------------------------------------------------------- cluster reads

def _node_ids(admin) -> list[int]:
    return [b["broker_id"] for b in admin.describe_cluster()["brokers"]]


def _describe(admin, topics) -> dict[str, dict[int, list[int]]]:
    """{topic: {partition: replicas}}; Kafka's "Topic X not found." for the first missing one
    (in the order Kafka's HashMap of futures is walked)."""
    topics = java_set_order(topics, string_hash)
    if not topics:
        return {}
    found = {t["name"]: t for t in admin.describe_topics(topics)}
    result = {}
    for topic in topics:
        info = found.get(topic)
        if info is None or info["error_code"] == 3:
            raise CommandError(f"{_UNKNOWN_TOPIC}: Topic {topic} not found.")
        common.check_error(info["error_code"])
        result[topic] = {p["partition_index"]: list(p["replica_nodes"])
                         for p in info["partitions"]}
    return result


def _reassignments(admin, partitions=None) -> dict[tuple[str, int], dict]:
    listed = admin.list_partition_reassignments(partitions)
    return {(tp.topic, tp.partition): value for tp, value in listed.items()}


# --------------------------------------------------------------------------- --list

def _list(admin) -> None:
    current = _reassignments(admin)
    lines = []
    for tp in sorted(current):
        r = current[tp]
        line = f"{_tp(tp)}: replicas: {_csv(r['replicas'])}."
        if r["adding_replicas"]:
            line += f" adding: {_csv(r['adding_replicas'])}."
        if r["removing_replicas"]:
            line += f" removing: {_csv(r['removing_replicas'])}."
        lines.append(line)
    print("Current partition reassignments:\n" + "\n".join(lines) if lines
          else "No partition reassignments found.")


def _csv(items) -> str:
    return ",".join(str(i) for i in items)


# --------------------------------------------------------------------------- --generate

def _generate_args(text: str, broker_list: str) -> tuple[list[int], list[str]]:
    """Kafka's parseGenerateAssignmentArgs: broker ids and topics, no duplicates."""
    brokers = []
    for item in broker_list.split(","):
        if not re.fullmatch(r"[+-]?\d+", item) or not -2**31 <= int(item) < 2**31:
            raise CommandError(f'For input string: "{item}"')
        brokers.append(int(item))
    if _duplicates(brokers):
        raise CommandError("Broker list contains duplicate entries: "
                           + _java_set(_duplicates(brokers), int_hash))
    topics = _parse_topics(text)
    if _duplicates(topics):
        raise CommandError("List of topics to reassign contains duplicate entries: "
                           + _java_set(_duplicates(topics), string_hash))
    return brokers, topics


def _generate(admin, topics: list[str], brokers: list[int], rack_aware: bool) -> None:
    current = {(topic, p): replicas
               for topic, parts in _describe(admin, topics).items()
               for p, replicas in parts.items()}
    wanted = set(brokers)
    racks = {b["broker_id"]: (b["rack"] if rack_aware else None)
             for b in admin.describe_cluster()["brokers"] if b["broker_id"] in wanted}
    rackless = sum(1 for rack in racks.values() if rack is None)
    if rack_aware and rackless not in (0, len(racks)):
        raise CommandError(RACK_INFO_MISSING_ENFORCED)
    proposed = {}
    for topic in sorted({t for t, _ in current}):
        parts = sorted(p for t, p in current if t == topic)
        try:
            placed = assign_replicas(list(racks), len(parts),
                                     len(current[(topic, parts[0])]), racks=racks)
        except KafkaError as err:
            reason = getattr(err, "reason", None) or err.message or str(err)
            raise CommandError(reason) from None
        proposed.update({(topic, p): replicas for p, replicas in placed.items()})
    print(f"Current partition replica assignment\n{_format_plan(current)}\n")
    print(f"Proposed partition reassignment configuration\n{_format_plan(proposed)}")


# --------------------------------------------------------------------------- --execute

def _execute(admin, plan: _Plan, additional: bool, throttle: int, log_dir_throttle: int,
             timeout_ms: int) -> None:
    proposed = dict(plan.parts)
    in_flight = _reassignments(admin)
    if not additional and in_flight:
        raise TerseError(_CANNOT_EXECUTE)
    wanted = {b for replicas in proposed.values() for b in replicas}
    known = set(_node_ids(admin))
    unknown = [b for b in java_set_order(wanted, int_hash) if b not in known]
    if unknown:
        raise CommandError(f"Unknown broker id {unknown[0]}")
    current = _current_parts(admin, set(proposed))
    print("Current partition replica assignment\n\n" + _format_plan(current)
          + "\n\nSave this to use as the --reassignment-json-file option during rollback")
    if throttle >= 0 or log_dir_throttle >= 0:
        print(_RUN_VERIFY)
        if throttle >= 0:
            moves = _proposed_moves(in_flight, proposed, current)
            _set_topic_throttles(admin, moves)
            _set_broker_rates(admin, _moving_brokers(moves), throttle,
                              _BROKER_THROTTLES[:2])
            print(f"The inter-broker throttle limit was set to {throttle} B/s")
        if log_dir_throttle >= 0:
            _set_broker_rates(admin, {b for _, _, b in plan.log_dirs}, log_dir_throttle,
                              _BROKER_THROTTLES[2:])
            print(f"The replica-alter-dir throttle limit was set to {log_dir_throttle} B/s")
    errors = _alter(admin, {tp: replicas for tp, replicas in proposed.items()})
    if errors:
        raise TerseError("Error reassigning partition(s):\n" + "\n".join(
            f"{_tp(tp)}: {errors[tp]}" for tp in sorted(errors)))
    print(f"Successfully started partition reassignment{'' if len(proposed) == 1 else 's'} "
          f"for {','.join(_tp(tp) for tp in sorted(proposed))}")
    if plan.log_dirs:
        _execute_moves(admin, dict(plan.log_dirs), timeout_ms)


def _current_parts(admin, partitions: set[tuple[str, int]]) -> dict[tuple[str, int], list[int]]:
    """Kafka's getReplicaAssignmentForPartitions."""
    described = _describe(admin, {t for t, _ in partitions})
    current = {(t, p): replicas for t, parts in described.items()
               for p, replicas in parts.items() if (t, p) in partitions}
    missing = [tp for tp in java_set_order(partitions, topic_partition_hash) if tp not in current]
    if missing:
        raise CommandError(f"{_UNKNOWN_TOPIC}: Unable to find partition: "
                           + ", ".join(_tp(tp) for tp in missing))
    return current


def _proposed_moves(in_flight, proposed, current) -> dict[str, dict[int, tuple[set, set]]]:
    """Kafka's calculateProposedMoveMap: {topic: {partition: (sources, destinations)}}; a
    partition already moving keeps its original replicas as sources."""
    moves: dict[str, dict[int, tuple[set, set]]] = {}
    for (topic, partition), r in in_flight.items():
        sources = set(r["replicas"]) - set(r["adding_replicas"])
        moves.setdefault(topic, {})[partition] = (sources, set(r["adding_replicas"]))
    for (topic, partition), replicas in proposed.items():
        partition_moves = moves.setdefault(topic, {})
        if partition in partition_moves:
            sources = set(partition_moves[partition][0])
        else:
            sources = set(current[(topic, partition)])
        partition_moves[partition] = (sources, set(replicas) - sources)
    return moves


def _throttle_list(pairs) -> str:
    # Kafka collects "p:b" strings in a TreeSet: string order.
    return ",".join(sorted({f"{p}:{b}" for p, b in pairs}))


def _set_topic_throttles(admin, moves) -> None:
    resources = []
    for topic, partition_moves in moves.items():
        leader = _throttle_list((p, b) for p, (sources, _) in partition_moves.items()
                                for b in sources)
        follower = _throttle_list((p, b) for p, (sources, dests) in partition_moves.items()
                                  for b in dests if b not in sources)
        resources.append(ConfigResource(ConfigResourceType.TOPIC, topic, configs={
            _TOPIC_THROTTLES[0]: (AlterConfigOp.SET, leader),
            _TOPIC_THROTTLES[1]: (AlterConfigOp.SET, follower)}))
    _alter_configs(admin, resources)


def _moving_brokers(moves) -> set[int]:
    return {b for partition_moves in moves.values()
            for sources, dests in partition_moves.values() for b in sources | dests}


def _set_broker_rates(admin, brokers, rate: int, keys) -> None:
    _alter_configs(admin, [ConfigResource(ConfigResourceType.BROKER, str(b), configs={
        key: (AlterConfigOp.SET, str(rate)) for key in keys}) for b in sorted(brokers)])


def _alter_configs(admin, resources) -> None:
    """IncrementalAlterConfigs (broker resources go to their own broker, as Kafka's admin
    client sends them); the first refusal fails the command, as Kafka's ``all().get()``."""
    if not resources:
        return
    results = admin.alter_configs(resources, raise_on_unknown=False, incremental=True)
    for by_name in results.values():
        for outcome in by_name.values():
            if outcome != "OK":
                raise CommandError(_java_exception_text(outcome))


def _java_exception_text(outcome: str) -> str:
    """kafka-python's "[Error 40] InvalidConfigurationError: msg" as Kafka's future prints
    it: "org.apache.kafka.common.errors.InvalidConfigurationException: msg"."""
    found = re.match(r"\[Error -?\d+\] (\w+?)(?:Error)?: (.*)", outcome, re.DOTALL)
    if not found:
        return outcome
    return f"org.apache.kafka.common.errors.{found.group(1)}Exception: {found.group(2)}"


def _alter(admin, reassignments: dict) -> dict[tuple[str, int], str]:
    """AlterPartitionReassignments; {partition: Kafka's exception message} for refusals."""
    request = AlterPartitionReassignmentsRequest(
        timeout_ms=admin._validate_timeout(None),
        topics=admin._process_alter_partition_reassignments_input(
            {TopicPartition(t, p): r for (t, p), r in reassignments.items()}))

    def top_level_error(response):
        yield kafka.errors.for_code(response.error_code)
    response = admin._manager.run(admin._send_request_to_controller, request, top_level_error)
    errors = {}
    for topic in response.responses:
        for p in topic.partitions:
            if p.error_code:
                errors[(topic.name, p.partition_index)] = common.error_text(p.error_code,
                                                                            p.error_message)
    return errors


# --------------------------------------------------------------------------- --verify

def _verify(admin, plan: _Plan, preserve_throttles: bool) -> None:
    in_flight = _reassignments(admin)
    lines = ["Status of partition reassignment:"]
    not_found = {t for (t, p), _ in plan.parts if (t, p) not in in_flight}
    described = _describe_lenient(admin, not_found)
    for tp, target in sorted(dict(plan.parts).items()):
        if tp in in_flight:
            lines.append(f"Reassignment of partition {_tp(tp)} is still in progress.")
            continue
        current = described.get(tp[0], {}).get(tp[1], [])
        if current == target:
            lines.append(f"Reassignment of partition {_tp(tp)} is completed.")
        else:
            lines.append(f"There is no active reassignment of partition {_tp(tp)}, but replica "
                         f"set is {_csv(current)} rather than {_csv(target)}.")
    print("\n".join(lines))
    moves_ongoing = _verify_moves(admin, plan.log_dirs)
    if not in_flight and not moves_ongoing and not preserve_throttles:
        _clear_throttles(admin, plan)


def _describe_lenient(admin, topics) -> dict[str, dict[int, list[int]]]:
    """Like ``_describe`` but a missing topic has no partitions (Kafka's verify)."""
    if not topics:
        return {}
    result = {}
    for info in admin.describe_topics(sorted(topics)):
        if info["error_code"] == 3:
            continue
        common.check_error(info["error_code"])
        result[info["name"]] = {p["partition_index"]: list(p["replica_nodes"])
                                for p in info["partitions"]}
    return result


def _clear_throttles(admin, plan: _Plan) -> None:
    """Kafka's clearAllThrottles: every broker's rates and every planned topic's lists."""
    brokers = java_set_order(_node_ids(admin) + [b for _, replicas in plan.parts
                                              for b in replicas], int_hash)
    print(f"Clearing broker-level throttles on broker{'' if len(brokers) == 1 else 's'} "
          + ",".join(str(b) for b in brokers))
    _alter_configs(admin, [ConfigResource(ConfigResourceType.BROKER, str(b), configs={
        key: (AlterConfigOp.DELETE, None) for key in _BROKER_THROTTLES}) for b in brokers])
    topics = java_set_order([t for (t, _), _ in plan.parts], string_hash)
    print(f"Clearing topic-level throttles on topic{'' if len(topics) == 1 else 's'} "
          + ",".join(topics))
    _alter_configs(admin, [ConfigResource(ConfigResourceType.TOPIC, t, configs={
        key: (AlterConfigOp.DELETE, None) for key in _TOPIC_THROTTLES}) for t in topics])


# --------------------------------------------------------------------------- --cancel

def _cancel(admin, plan: _Plan, preserve_throttles: bool, timeout_ms: int) -> None:
    targets = [TopicPartition(t, p) for (t, p), _ in plan.parts]
    in_flight = _reassignments(admin, targets) if targets else {}
    # Kafka's test: a reassignment that only adds replicas (and removes none) is left alone.
    cancelling = sorted(tp for tp, r in in_flight.items()
                        if not r["adding_replicas"] or r["removing_replicas"])
    if cancelling:
        errors = _alter(admin, {tp: None for tp in cancelling})
        if errors:
            raise TerseError(f"Error cancelling partition reassignment"
                             f"{'' if len(errors) == 1 else 's'} for:\n" + "\n".join(
                                 f"{_tp(tp)}: {errors[tp]}" for tp in sorted(errors)))
        print(f"Successfully cancelled partition reassignment"
              f"{'' if len(cancelling) == 1 else 's'} for: "
              + ",".join(_tp(tp) for tp in cancelling))
    else:
        print("None of the specified partition reassignments are active.")
    moving = {replica: state[1] for replica, state in _move_states(admin, plan.log_dirs).items()
              if state[0] == "active"}
    if moving:
        _execute_moves(admin, moving, timeout_ms)
    else:
        # Kafka prints this one without a line end.
        print("None of the specified partition moves are active.", end="")
    sys.stdout.flush()
    if not preserve_throttles:
        _clear_throttles(admin, plan)


# --------------------------------------------------------------------------- log dirs

def _move_states(admin, targets: dict[tuple[str, int, int], str]) -> dict:
    """Kafka's findLogDirMoveStates: {replica: (state, current dir, target, future dir)} with
    state one of missing-replica, missing-dir, completed, cancelled, active."""
    if not targets:
        return {}
    found: dict[tuple[str, int, int], dict] = {}
    for described in admin.describe_log_dirs(brokers=sorted({b for _, _, b in targets})):
        broker = described["broker"]
        for log_dir in described["log_dirs"]:
            for topic in log_dir.get("topics", []):
                for p in topic.get("partitions", []):
                    key = (topic["name"], p["partition_index"], broker)
                    slot = found.setdefault(key, {})
                    slot["future" if p.get("is_future_key") else "current"] = log_dir["log_dir"]
    states = {}
    for replica, target in targets.items():
        slot = found.get(replica)
        if slot is None:
            states[replica] = ("missing-replica", None, target, None)
        elif "current" not in slot:
            states[replica] = ("missing-dir", None, target, None)
        elif "future" not in slot:
            kind = "completed" if slot["current"] == target else "cancelled"
            states[replica] = (kind, slot["current"], target, None)
        else:
            states[replica] = ("active", slot["current"], target, slot["future"])
    return states


def _by_broker(replica: tuple[str, int, int]) -> tuple[int, str, int]:
    """Kafka's order of replicas (TopicPartitionReplica compared by broker, topic, partition)."""
    topic, partition, broker = replica
    return broker, topic, partition


def _replica(replica: tuple[str, int, int]) -> str:
    return "-".join(str(part) for part in replica)


def _verify_moves(admin, targets) -> bool:
    """Prints Kafka's replicaMoveStatesToString; True while a move is unfinished."""
    states = _move_states(admin, targets)
    lines = []
    for (topic, partition, broker) in sorted(states, key=_by_broker):
        kind, current, target, future = states[(topic, partition, broker)]
        name = f"{topic}-{partition}"
        replica = _replica((topic, partition, broker))
        if kind == "missing-dir":
            lines.append(f"Partition {name} is not found in any live log dir on broker {broker}. "
                         "There is likely an offline log directory on the broker.")
        elif kind == "missing-replica":
            lines.append(f"Partition {name} cannot be found in any live log directory on "
                         f"broker {broker}.")
        elif kind == "active" and future == target:
            lines.append(f"Reassignment of replica {replica} is still in progress.")
        elif kind == "active":
            lines.append(f"Partition {name} on broker {broker} is being moved to log dir "
                         f"{future} instead of {target}.")
        elif kind == "cancelled":
            lines.append(f"Partition {name} on broker {broker} is not being moved from log dir "
                         f"{current} to {target}.")
        else:
            lines.append(f"Reassignment of replica {replica} completed successfully.")
    print("\n".join(lines))
    # Only an active move is unfinished (Kafka's LogDirMoveState.done()).
    return any(state[0] == "active" for state in states.values())


def _execute_moves(admin, pending: dict[tuple[str, int, int], str], timeout_ms: int) -> None:
    """Kafka's executeMoves: AlterReplicaLogDirs until each replica's move has started
    (REPLICA_NOT_AVAILABLE: not on that broker yet, retried every 100 ms) or the timeout."""
    deadline = time.monotonic() + timeout_ms / 1000
    while True:
        try:
            results = admin.alter_replica_log_dirs(
                {TopicPartitionReplica(t, p, b): d for (t, p, b), d in pending.items()})
        except kafka.errors.KafkaError:
            # Kafka wraps a failed AlterReplicaLogDirs (a broker without the API, say) so.
            first = min(pending, key=_by_broker)
            raise CommandError(f"Failed to alter dir for {_replica(first)}") from None
        started = []
        for tpr, error in results.items():
            key = (tpr.topic, tpr.partition, tpr.broker_id)
            code = getattr(error, "errno", 0) or 0
            if code == 0:
                started.append(key)
            elif code != _REPLICA_NOT_AVAILABLE:
                raise CommandError(f"Failed to alter dir for {_replica(key)}")
        for key in sorted(started, key=_by_broker):
            print(f"Successfully started moving log directory to {pending[key]} for replica "
                  f"{key[0]}-{key[1]} with broker {key[2]} ")
            del pending[key]
        if not pending:
            return
        if time.monotonic() >= deadline:
            raise TerseError(
                f"Timed out before log directory move{'' if len(pending) == 1 else 's'} could "
                f"be started for: "
                + ",".join(_replica(r) for r in sorted(pending, key=_by_broker)))
        time.sleep(0.1)


if __name__ == "__main__":
    sys.exit(main())
