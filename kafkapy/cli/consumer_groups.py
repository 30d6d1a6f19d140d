"""``kafkapy-consumer-groups``: Kafka's ``bin/kafka-consumer-groups.sh`` over kafka-python, for
classic groups and consumer-protocol groups (KIP-848) as Kafka 4.x's tool shows them.

Groups are described as Kafka's admin client describes them (``_group_describe``):
ConsumerGroupDescribe first, DescribeGroups for a classic group.

Exactly one action:
- ``--list``: consumer group ids, one a line; with ``--state [S1,S2]`` and/or ``--type
  [classic,consumer]`` a GROUP [TYPE] [STATE] table (types print as Kafka's GroupType:
  ``Classic``, ``Consumer``), filtered by the values given.
- ``--describe --group G`` (repeatable, or ``--all-groups``), groups in name order:
  - offsets (the default, or ``--offsets``): per group and partition the columns GROUP TOPIC
    PARTITION CURRENT-OFFSET LOG-END-OFFSET LAG CONSUMER-ID HOST CLIENT-ID (``--verbose``
    adds LEADER-EPOCH); a member's partitions are its current assignment.  Partitions
    committed but assigned to nobody show ``-`` as consumer.  Rows come in Kafka's order:
    members with most partitions first, each member's partitions in the iteration order of
    the Java HashMap Kafka's tool puts them in.
  - ``--members``: GROUP CONSUMER-ID [GROUP-INSTANCE-ID] HOST CLIENT-ID #PARTITIONS;
    ``--verbose`` adds CURRENT-EPOCH (the member epoch), CURRENT-ASSIGNMENT, TARGET-EPOCH
    (the group's target assignment epoch) and TARGET-ASSIGNMENT (``-`` for what a classic
    group lacks), and UPGRADED (true/false) when a consumer group has classic members.
    Assignments print as ``topic:0,1;other:10,9`` (partitions sorted as strings).
  - ``--state``: GROUP COORDINATOR (ID) ASSIGNMENT-STRATEGY STATE #MEMBERS; ``--verbose``
    adds GROUP-EPOCH and TARGET-ASSIGNMENT-EPOCH (consumer groups; ``-`` otherwise).
  An empty group prints "Consumer group 'G' has no active members." to stderr, a group
  reconciling or rebalancing "Warning: Consumer group 'G' is rebalancing.".
- ``--delete --group G``: "Deletion of requested consumer groups ('G') was successful."
- ``--reset-offsets --group G`` with a scope (``--topic T``, ``--topic T:0,1`` or
  ``--all-topics``) and one scenario (``--to-earliest``, ``--to-latest``, ``--to-offset N``,
  ``--to-current``, ``--shift-by N``, ``--to-datetime YYYY-MM-DDTHH:mm:SS.sss``,
  ``--by-duration PnDTnHnMnS``): prints the plan as GROUP TOPIC PARTITION NEW-OFFSET and
  commits it with ``--execute`` (``--dry-run`` is the default). Only an Empty or unknown group
  can be reset. Offsets outside the log are moved to its start or end, with Kafka's warning.
- ``--delete-offsets --group G --topic T[:partitions]``: a TOPIC PARTITION STATUS table.

Tables use Kafka's layout: a leading empty line, columns at least 15 wide (group, topic,
consumer id and host widen to their longest value), ``-`` for missing values.

Differences from Kafka:
- Exit code 1 whenever an error is printed (Kafka prints "Error: ..." and still exits 0).
- ``--export``, ``--from-file``, ``--validate-regex`` and share/streams groups are not offered.
- A group the coordinator does not know is reported as Kafka 3.9's tool reports it ("Error:
  Consumer group 'G' does not exist."), not with Kafka 4.x's GroupIdNotFoundException.
- Error details are the broker's error descriptions, not Java exception class names (but a
  group that cannot be described fails with the Java exception text Kafka's tool prints).
- ``--list`` filters by state and type on the client side (Kafka asks the brokers to).
"""
from __future__ import annotations

import argparse
import logging
import re
import sys
import time
from datetime import datetime

import kafka.errors
from kafka.admin import OffsetSpec, OffsetTimestamp
from kafka.structs import OffsetAndMetadata, TopicPartition

from kafkapy.cli import _common as common
from kafkapy.cli._common import CommandError, UsageError
from kafkapy.cli._group_describe import CONSUMER, Group, Member, java_hash_set
from kafkapy.cli._group_describe import describe as describe_groups

log = logging.getLogger("kafkapy.cli.consumer_groups")

_ACTIONS = ("list", "describe", "delete", "reset_offsets", "delete_offsets")
_SCENARIOS = ("to_offset", "to_datetime", "by_duration", "to_earliest", "to_latest",
              "shift_by", "to_current")
_INACTIVE = ("Empty", "Dead")
_REBALANCING = ("PreparingRebalance", "CompletingRebalance", "Assigning", "Reconciling")
# Kafka's ConsumerGroupState values (in enum order) and GroupType names.
_VALID_STATES = ("PreparingRebalance", "CompletingRebalance", "Stable", "Dead", "Empty",
                 "Assigning", "Reconciling")
_GROUP_TYPES = {"consumer": "Consumer", "classic": "Classic", "share": "Share"}
_DURATION = re.compile(r"P(?:(\d+)D)?(?:T(?:(\d+)H)?(?:(\d+)M)?(?:(\d+(?:\.\d+)?)S)?)?",
                       re.IGNORECASE)
MISSING = "-"
_FLAGS = {
    "list": "list all consumer groups",
    "describe": "describe the groups' offsets (or --members, --state)",
    "delete": "delete the groups",
    "reset-offsets": "reset the groups' committed offsets",
    "delete-offsets": "delete the group's committed offsets of --topic",
    "all-groups": "every consumer group",
    "all-topics": "every topic the group has offsets for",
    "to-earliest": "reset to the earliest offsets",
    "to-latest": "reset to the latest offsets",
    "to-current": "reset to the committed offsets",
    "dry-run": "only show the new offsets (the default)",
    "execute": "commit the new offsets",
    "members": "describe the groups' members",
    "offsets": "describe the groups' offsets (the default)",
    "verbose": "more columns",
}


class _Errors:
    """Whether any error was printed; decides the exit code."""
    seen = False


def main(argv: list[str] | None = None) -> int:
    return common.run(_execute, _parser(), argv, _report)


def _report(message: str) -> None:
    _print_error(f"Executing consumer group command failed due to {message}")


def _print_error(message: str) -> None:
    _Errors.seen = True
    print(f"\nError: {message}")


def _parser() -> common.ToolParser:
    parser = common.ToolParser("kafkapy-consumer-groups",
                               "List all consumer groups, describe a consumer group, delete "
                               "consumer group info, or reset consumer group offsets.")
    for flag, text in _FLAGS.items():
        parser.add_argument(f"--{flag}", action="store_true", help=text)
    parser.add_argument("--group", action="append", default=[], help="consumer group (repeatable)")
    parser.add_argument("--topic", action="append", default=[], metavar="TOPIC[:P1,P2]",
                        help="topic (and partitions) to reset or delete offsets of")
    parser.add_argument("--to-offset", type=int, help="reset to this offset")
    parser.add_argument("--shift-by", type=int, help="move the committed offsets by N")
    parser.add_argument("--to-datetime", metavar="YYYY-MM-DDTHH:mm:SS.sss",
                        help="reset to the first offset at or after this time")
    parser.add_argument("--by-duration", metavar="PnDTnHnMnS",
                        help="reset to the first offset at or after this long ago")
    parser.add_argument("--state", nargs="?", const="", help="show group state (filter for --list)")
    parser.add_argument("--type", nargs="?", const="", metavar="TYPES",
                        help="with --list: show group types (filter: classic,consumer)")
    parser.add_argument("--timeout", type=int, default=5000,
                        help="ms to wait for each answer from the cluster (default 5000)")
    return parser


def _execute(args: argparse.Namespace) -> int:
    action = _check_args(args)
    _Errors.seen = False
    admin = common.admin_client(args, request_timeout_ms=args.timeout)
    try:
        {"list": _list, "describe": _describe, "delete": _delete,
         "reset_offsets": _reset_offsets, "delete_offsets": _delete_offsets}[action](admin, args)
    finally:
        admin.close()
    return 1 if _Errors.seen else 0


def _check_args(args: argparse.Namespace) -> str:
    action = common.single_action(args, _ACTIONS, "--list, --describe, --delete, "
                                  "--reset-offsets, --delete-offsets")
    common.require_bootstrap(args)
    if args.type is not None and action != "list":
        raise UsageError("Option(s) [type] are unavailable given other options on the command line")
    if action in ("describe", "delete", "reset_offsets") and not (args.group or args.all_groups):
        raise UsageError(f"Option [{_dashed(action)}] takes one of these options: "
                         "[all-groups], [group]")
    if action == "delete_offsets" and (len(args.group) != 1 or not args.topic):
        raise UsageError("Option [delete-offsets] takes the following options: [group], [topic]")
    if action == "reset_offsets":
        _check_reset_args(args)
    return action


def _check_reset_args(args: argparse.Namespace) -> None:
    if args.dry_run and args.execute:
        raise UsageError("Option [reset-offsets] only accepts one of [execute], [dry-run]")
    if bool(args.topic) == args.all_topics:
        raise UsageError("One of the reset scopes should be defined: --all-topics, --topic.")
    chosen = [s for s in _SCENARIOS if getattr(args, s) not in (None, False)]
    if len(chosen) != 1:
        raise UsageError("Option [reset-offsets] takes exactly one of these options: "
                         + ", ".join(f"[{_dashed(s)}]" for s in _SCENARIOS))


def _dashed(name: str) -> str:
    return name.replace("_", "-")


# --list -------------------------------------------------------------------

def _consumer_groups(admin) -> list[dict]:
    # Kafka lists groups of the consumer protocol type (classic consumer groups and
    # consumer-protocol groups) and offset-only groups (empty type).
    return [g for g in admin.list_groups() if g.get("protocol_type") in ("consumer", "")]


def _list(admin, args: argparse.Namespace) -> None:
    groups = _consumer_groups(admin)
    if args.state is None and args.type is None:
        for group in groups:
            print(group["group_id"])
        return
    states = _states(args.state or "")
    types = _types(args.type or "")
    shown = [g for g in groups
             if (not states or (g.get("group_state") or "").lower() in states)
             and (not types or _type_name(g).lower() in types)]
    width = max([15] + [len(g["group_id"]) for g in shown]) + 10
    columns = [("GROUP", lambda g: g["group_id"], width)]
    if args.type is not None:
        columns.append(("TYPE", _type_name, 20))
    if args.state is not None:
        columns.append(("STATE", lambda g: g.get("group_state") or "Unknown", 20))
    # Kafka's printGroupInfo pads every column, the last one too.
    print(" ".join(f"{name:<{w}}" for name, _, w in columns))
    for group in shown:
        print(" ".join(f"{value(group):<{w}}" for _, value, w in columns))


def _type_name(group: dict) -> str:
    """Kafka's GroupType of a ListGroups v5 entry, as it prints (``Consumer``, ``Classic``)."""
    return _GROUP_TYPES.get((group.get("group_type") or "").lower(), "Unknown")


def _states(text: str) -> set[str]:
    states = {s.strip().lower() for s in text.split(",") if s.strip()}
    valid = {s.lower() for s in _VALID_STATES}
    if not states <= valid:
        raise UsageError(f"Invalid state list '{text}'. Valid states are: "
                         + ", ".join(_VALID_STATES))
    return states


def _types(text: str) -> set[str]:
    types = {t.strip().lower() for t in text.lower().split(",") if t.strip()}
    if not types <= set(_GROUP_TYPES):
        raise UsageError(f"Invalid types list '{text}'. Valid types are: "
                         + ", ".join(_GROUP_TYPES.values()))
    return types


def _group_ids(admin, args: argparse.Namespace) -> list[str]:
    if args.all_groups:
        return [g["group_id"] for g in _consumer_groups(admin)]
    return list(dict.fromkeys(args.group))


# --describe ---------------------------------------------------------------

def _describe(admin, args: argparse.Namespace) -> None:
    groups = sorted(_group_ids(admin, args))
    descriptions = describe_groups(admin, groups, args.timeout) if groups else {}
    for group in groups:
        description = descriptions.get(group)
        if args.members:
            _describe_members(group, description, args.verbose)
        elif args.state is not None:
            _describe_state(group, description, args.verbose)
        else:
            _describe_offsets(admin, group, description, args.verbose)


def _worth_printing(group: str, description: Group | None, rows: int) -> bool:
    """Kafka's shouldPrintMemberState: notes about the state, then whether rows follow."""
    if description is None:
        _print_error(f"The consumer group '{group}' does not exist.")
        return False
    state = description.state
    if state == "Dead":
        _print_error(f"Consumer group '{group}' does not exist.")
    elif state == "Empty":
        print(f"\nConsumer group '{group}' has no active members.", file=sys.stderr)
    elif state in _REBALANCING:
        print(f"\nWarning: Consumer group '{group}' is rebalancing.", file=sys.stderr)
    return state != "Dead" and rows > 0


def _describe_offsets(admin, group: str, description: Group | None, verbose: bool) -> None:
    rows = _offset_rows(admin, group, description) if description else []
    if not _worth_printing(group, description, len(rows)):
        return
    g, t, c, h = (max([15] + [len(row[key]) for row in rows])
                  for key in ("group", "topic", "id", "host"))
    columns = [("GROUP", "group", g), ("TOPIC", "topic", t), ("PARTITION", "partition", 10)]
    if verbose:
        columns.append(("LEADER-EPOCH", "epoch", 15))
    columns += [("CURRENT-OFFSET", "offset", 15), ("LOG-END-OFFSET", "end", 15),
                ("LAG", "lag", 15), ("CONSUMER-ID", "id", c), ("HOST", "host", h),
                ("CLIENT-ID", "client", 0)]
    widths = [width for _, _, width in columns]
    print()
    print(_row([name for name, _, _ in columns], widths))
    for row in rows:
        print(_row([row[key] for _, key, _ in columns], widths))


def _row(values: list[str], widths: list[int]) -> str:
    """Columns as Java's ``%-Ns`` pads them; width 0 is a plain ``%s``."""
    return " ".join(f"{v:<{w}}" for v, w in zip(values, widths))


def _offset_rows(admin, group: str, description: Group) -> list[dict]:
    """Kafka's collectGroupsOffsets: members with partitions, most partitions first (ties
    in the group's order), then the committed partitions nobody is assigned."""
    committed = admin.list_group_offsets(group).get(group, {})
    members = sorted((m for m in description.members if m.assignment),
                     key=lambda m: len(m.assignment), reverse=True)
    rows, assigned = [], set()
    for member in members:
        assigned.update(member.assignment)
        rows += _partition_rows(admin, group, member.assignment, committed,
                                (member.member_id, member.host, member.client_id))
    unassigned = java_hash_set(tp for tp in java_hash_set(committed) if tp not in assigned)
    if unassigned:
        rows += _partition_rows(admin, group, unassigned, committed, (MISSING,) * 3)
    return rows


def _partition_rows(admin, group: str, partitions, committed: dict,
                    consumer: tuple[str, str, str]) -> list[dict]:
    """One row per partition, in Kafka's order: the partitions sorted by number (a stable
    sort of the set's order) then put in a HashMap with their log end offsets, whose
    iteration order the rows follow."""
    ordered = java_hash_set(sorted(partitions, key=lambda tp: tp.partition))
    ends = _log_end_offsets(admin, ordered)
    rows = []
    for tp in ordered:
        meta = committed.get(tp)
        offset = None if meta is None or meta.offset == -1 else meta.offset
        end = ends.get(tp)
        epoch = meta.leader_epoch if meta is not None and meta.leader_epoch not in (None, -1) \
            else None
        lag = end - offset if offset is not None and end is not None else None
        rows.append({"group": group, "topic": tp.topic, "partition": str(tp.partition),
                     "epoch": _text(epoch), "offset": _text(offset), "end": _text(end),
                     "lag": _text(lag), "id": consumer[0], "host": consumer[1],
                     "client": consumer[2]})
    return rows


def _text(value) -> str:
    return MISSING if value is None else str(value)


def _log_end_offsets(admin, partitions: list) -> dict:
    return {tp: o.offset for tp, o in _list_offsets(admin, partitions, _spec("LATEST")).items()}


def _list_offsets(admin, partitions: list, spec) -> dict:
    """ListOffsets for many partitions; one that fails (deleted topic) is left out."""
    if not partitions:
        return {}
    try:
        return admin.list_partition_offsets({tp: spec for tp in partitions})
    except kafka.errors.KafkaError:
        found = {}
        for tp in partitions:
            try:
                found.update(admin.list_partition_offsets({tp: spec}))
            except kafka.errors.KafkaError:
                pass
        return found


def _spec(name: str):
    return OffsetSpec[name]


def _describe_members(group: str, description: Group | None, verbose: bool) -> None:
    members = description.members if description else ()
    _worth_printing(group, description, len(members))
    rows = [_member_row(group, m, description) for m in members]
    with_instance = any(r["instance"] for r in rows)
    keys = ["group", "id"] + (["instance"] if with_instance else []) + ["host", "client", "count"]
    names = {"group": "GROUP", "id": "CONSUMER-ID", "instance": "GROUP-INSTANCE-ID",
             "host": "HOST", "client": "CLIENT-ID", "count": "#PARTITIONS"}
    minimum = {"instance": 17}
    widths = [max([minimum.get(k, 15)] + [len(r[k]) for r in rows]) if k != "count" else 15
              for k in keys]
    extra = _verbose_member_columns(rows) if verbose else []
    extra_widths = [width for _, _, width in extra]
    # Kafka's member table pads every column (#PARTITIONS too, then a space), then the
    # verbose ones.
    print("\n" + _row([names[k] for k in keys], widths) + " "
          + _row([name for name, _, _ in extra], extra_widths))
    for row in rows:
        print(_row([row[k] for k in keys], widths) + " "
              + _row([row[key] for _, key, _ in extra], extra_widths))


def _member_row(group: str, m: Member, description: Group) -> dict[str, str]:
    consumer = description.group_type == CONSUMER
    return {"group": group, "id": m.member_id, "instance": m.instance_id or "",
            "host": m.host, "client": m.client_id, "count": str(len(m.assignment)),
            "epoch": _text(m.member_epoch if consumer else None),
            "assignment": _assignment_text(m.assignment),
            "target_epoch": _text(description.target_assignment_epoch if consumer else None),
            "target": _assignment_text(m.target or ()),
            "upgraded": MISSING if m.upgraded is None else str(m.upgraded).lower()}


def _verbose_member_columns(rows: list[dict]) -> list[tuple[str, str, int]]:
    """Kafka 4.x's ``--members --verbose`` columns: epochs and assignments (current and
    target), and UPGRADED when classic members share a consumer group with others."""
    columns = [("CURRENT-EPOCH", "epoch", 15),
               ("CURRENT-ASSIGNMENT", "assignment",
                max([20] + [len(r["assignment"]) for r in rows])),
               ("TARGET-EPOCH", "target_epoch", 15), ("TARGET-ASSIGNMENT", "target", 20)]
    if any(r["upgraded"] == "false" for r in rows):
        columns.append(("UPGRADED", "upgraded", 0))
    return columns


def _assignment_text(partitions) -> str:
    """Kafka 4.x's assignment text: ``topic:p,p;topic:p``, topics sorted, and partitions
    sorted as strings (``t:10,11,9``), as its tool sorts them."""
    if not partitions:
        return MISSING
    by_topic: dict[str, list[str]] = {}
    for tp in partitions:
        by_topic.setdefault(tp.topic, []).append(str(tp.partition))
    return ";".join(sorted(f"{topic}:" + ",".join(sorted(parts))
                           for topic, parts in by_topic.items()))


def _describe_state(group: str, description: Group | None, verbose: bool) -> None:
    if not _worth_printing(group, description, 1):
        return
    coordinator = description.coordinator.text()
    consumer = description.group_type == CONSUMER
    columns = [("GROUP", group, max(15, len(group))),
               ("COORDINATOR (ID)", coordinator, max(25, len(coordinator))),
               ("ASSIGNMENT-STRATEGY", description.assignor, 20),
               ("STATE", description.state, 20)]
    if verbose:
        columns += [("GROUP-EPOCH", _text(description.group_epoch if consumer else None), 15),
                    ("TARGET-ASSIGNMENT-EPOCH",
                     _text(description.target_assignment_epoch if consumer else None), 25)]
    columns.append(("#MEMBERS", str(len(description.members)), 0))
    widths = [width for _, _, width in columns]
    print("\n" + _row([name for name, _, _ in columns], widths))
    print(_row([value for _, value, _ in columns], widths))


# --delete -----------------------------------------------------------------

def _delete(admin, args: argparse.Namespace) -> None:
    groups = _group_ids(admin, args)
    results = admin.delete_groups(groups) if groups else {}
    done = [g for g in groups if results.get(g) == "OK"]
    failed = {g: results.get(g) for g in groups if results.get(g) != "OK"}
    if not failed:
        print("Deletion of requested consumer groups ("
              + ", ".join(f"'{g}'" for g in done) + ") was successful.")
        return
    _print_error("Deletion of some consumer groups failed:")
    for group, name in failed.items():
        error = getattr(kafka.errors, name or "", None)
        reason = getattr(error, "description", None) or name
        print(f"* Group '{group}' could not be deleted due to: {reason}")
    if done:
        print("\nThese consumer groups were deleted successfully: "
              + ", ".join(f"'{g}'" for g in done))


# --reset-offsets ------------------------------------------------------------

def _reset_offsets(admin, args: argparse.Namespace) -> None:
    if not args.dry_run and not args.execute:
        print("WARN: No action will be performed as the --execute option is missing. "
              "In a future major release, the default behavior of this command will be to "
              "prompt the user before executing the reset rather than doing a dry run. You "
              "should add the --dry-run option explicitly if you are scripting this command "
              "and want to keep the current default behavior without prompting.",
              file=sys.stderr)
    groups = _group_ids(admin, args)
    descriptions = describe_groups(admin, groups, args.timeout) if groups else {}
    plan = {}
    for group in groups:
        described = descriptions.get(group)
        state = described.state if described is not None else "Dead"
        if state in _INACTIVE:
            plan[group] = _reset_group(admin, group, args)
        else:
            _print_error(f"Assignments can only be reset if the group '{group}' is inactive, "
                         f"but the current state is {state}.")
            plan[group] = {}
    _print_plan(plan)


def _reset_group(admin, group: str, args: argparse.Namespace) -> dict:
    committed = admin.list_group_offsets(group).get(group, {})
    partitions = list(committed) if args.all_topics else _partitions(admin, args.topic)
    offsets = _new_offsets(admin, partitions, committed, args)
    if args.execute and offsets:
        results = admin.alter_group_offsets(
            group, {tp: OffsetAndMetadata(o, "", None) for tp, o in offsets.items()})
        for error in results.values():
            common.check_error(error.errno)
    return offsets


def _partitions(admin, topics: list[str]) -> list:
    """``T`` -> all of T's partitions; ``T:0,2`` -> those; a partition must exist."""
    wanted = [_topic_arg(arg) for arg in topics]
    described = {t["name"]: t for t in admin.describe_topics(list({t for t, _ in wanted}))}
    partitions = []
    for topic, chosen in wanted:
        info = described.get(topic)
        if info is None or info["error_code"]:
            raise CommandError(common.error_text(info["error_code"] if info else 3))
        existing = {p["partition_index"] for p in info["partitions"]}
        missing = [p for p in chosen or [] if p not in existing]
        if missing:
            raise CommandError("The partitions \"" + ",".join(f"{topic}-{p}" for p in missing)
                               + "\" do not exist")
        partitions += [TopicPartition(topic, p) for p in (chosen or sorted(existing))]
    return partitions


def _topic_arg(arg: str) -> tuple[str, list[int] | None]:
    if ":" not in arg:
        return arg, None
    parts = arg.split(":")
    if len(parts) != 2:
        raise UsageError(f"Invalid topic arg '{arg}', expected topic name and partitions")
    try:
        return parts[0], [int(p) for p in parts[1].split(",")]
    except ValueError:
        raise UsageError(f"Invalid partition specified in topic arg '{arg}'") from None


def _new_offsets(admin, partitions: list, committed: dict, args: argparse.Namespace) -> dict:
    if args.to_earliest:
        return _offsets(admin, partitions, _spec("EARLIEST"))
    if args.to_latest:
        return _offsets(admin, partitions, _spec("LATEST"))
    if args.to_offset is not None:
        return _clamped(admin, {tp: args.to_offset for tp in partitions})
    if args.shift_by is not None:
        return _clamped(admin, _shifted(partitions, committed, args.shift_by))
    if args.to_current:
        current = {tp: committed[tp].offset for tp in partitions if tp in committed}
        rest = [tp for tp in partitions if tp not in committed]
        return {**current, **_offsets(admin, rest, _spec("LATEST"))}
    return _offsets_at(admin, partitions, _timestamp(args))


def _offsets(admin, partitions: list, spec) -> dict:
    return {tp: o.offset for tp, o in admin.list_partition_offsets(
        {tp: spec for tp in partitions}).items()} if partitions else {}


def _shifted(partitions: list, committed: dict, shift: int) -> dict:
    missing = [tp for tp in partitions if tp not in committed]
    if missing:
        tp = missing[0]
        raise CommandError(f"Cannot shift offset for partition {tp.topic}-{tp.partition} "
                           "since there is no current committed offset")
    return {tp: committed[tp].offset + shift for tp in partitions}


def _clamped(admin, wanted: dict) -> dict:
    starts = _offsets(admin, list(wanted), _spec("EARLIEST"))
    ends = _offsets(admin, list(wanted), _spec("LATEST"))
    offsets = {}
    for tp, offset in wanted.items():
        name = f"{tp.topic}-{tp.partition}"
        if offset > ends[tp]:
            log.warning("New offset (%d) is higher than latest offset for topic partition %s. "
                        "Value will be set to %d.", offset, name, ends[tp])
            offset = ends[tp]
        elif offset < starts[tp]:
            log.warning("New offset (%d) is lower than earliest offset for topic partition %s. "
                        "Value will be set to %d.", offset, name, starts[tp])
            offset = starts[tp]
        offsets[tp] = offset
    return offsets


def _timestamp(args: argparse.Namespace) -> int:
    if args.to_datetime is not None:
        try:
            moment = datetime.fromisoformat(args.to_datetime)
        except ValueError:
            raise UsageError(f"Error parsing timestamp: {args.to_datetime} (expected "
                             "YYYY-MM-DDTHH:mm:SS.sss, optionally with a time zone)") from None
        return int(moment.timestamp() * 1000)
    match = _DURATION.fullmatch(args.by_duration)
    if not match or not any(match.groups()):
        raise UsageError(f"Text cannot be parsed to a Duration: {args.by_duration}")
    days, hours, minutes, seconds = (float(g or 0) for g in match.groups())
    span = ((days * 24 + hours) * 60 + minutes) * 60 + seconds
    return int((time.time() - span) * 1000)


def _offsets_at(admin, partitions: list, timestamp: int) -> dict:
    found = _offsets(admin, partitions, OffsetTimestamp(timestamp))
    empty = [tp for tp in partitions if found.get(tp, -1) < 0]
    for tp in empty:
        print(f"\nWarn: Partition {tp.partition} from topic {tp.topic} is empty. Falling back "
              "to latest known offset.")
    return {**found, **_offsets(admin, empty, _spec("LATEST"))}


def _print_plan(plan: dict[str, dict]) -> None:
    g = max([15] + [len(group) for group in plan])
    t = max([15] + [len(tp.topic) for offsets in plan.values() for tp in offsets])
    print()  # Kafka starts the table (or, with no group, the output) with an empty line
    if plan:
        print(_row(["GROUP", "TOPIC", "PARTITION", "NEW-OFFSET"], [g, t, 10, 0]))
    for group, offsets in plan.items():
        for tp in sorted(offsets):
            print(_row([group, tp.topic, str(tp.partition), str(offsets[tp])], [g, t, 10, 0]))


# --delete-offsets -----------------------------------------------------------

def _delete_offsets(admin, args: argparse.Namespace) -> None:
    group = args.group[0]
    results, partitions = {}, []
    for arg in args.topic:
        topic, chosen = _topic_arg(arg)
        try:
            partitions += _partitions(admin, [arg]) if chosen is None else \
                [_tp(topic, p) for p in chosen]
        except CommandError as err:
            results[(topic, MISSING)] = f"Error: {err}"
    try:
        outcome = admin.delete_group_offsets(group, partitions) if partitions else {}
    except kafka.errors.BrokerResponseError as err:
        _print_error(common.error_text(err.errno))
        outcome = {}
    for tp, error in outcome.items():
        results[(tp.topic, str(tp.partition))] = "Successful" if not error.errno \
            else f"Error: {error.description}"
    failed = any(status != "Successful" for status in results.values())
    if not _Errors.seen and not failed:
        print(f"Request succeeded for deleting offsets from group {group}.")
    elif failed:
        _print_error("Encountered some partition-level error, see the follow-up details.")
    _print_offset_deletions(results)


def _tp(topic: str, partition: int):
    return TopicPartition(topic, partition)


def _print_offset_deletions(results: dict) -> None:
    t = max([15] + [len(topic) for topic, _ in results])
    print()
    print(_row(["TOPIC", "PARTITION", "STATUS"], [t, 10, 15]))
    for (topic, partition), status in sorted(results.items(), key=lambda r: r[0][0] + r[0][1]):
        print(_row([topic, partition, status], [t, 10, 15]))


if __name__ == "__main__":
    sys.exit(main())
