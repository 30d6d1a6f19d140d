"""``kafkapy-share-groups``: Kafka 4.x's ``bin/kafka-share-groups.sh`` (ShareGroupCommand) over
kafka-python, for share groups (KIP-932).

The requests are those Kafka's admin client sends for the tool: ListGroups v5 with the
``share`` type filter (every broker), FindCoordinator v4 for the groups, then to each group's
coordinator ShareGroupDescribe, DescribeShareGroupOffsets (v1: start offset, leader epoch,
lag), AlterShareGroupOffsets, DeleteShareGroupOffsets and DeleteGroups.  COORDINATOR_LOAD_IN_
PROGRESS, COORDINATOR_NOT_AVAILABLE and NOT_COORDINATOR are retried (the coordinator looked
up again) until ``--timeout`` (default 30000 ms).

Exactly one action:
- ``--list``: share group ids, one a line; with ``--state [S1,S2]`` a GROUP STATE table
  (states among Stable, Dead, Empty; none given: every share group).
- ``--describe --group G`` (repeatable, or ``--all-groups``), groups in name order:
  - offsets (the default, or ``--offsets``): GROUP TOPIC PARTITION START-OFFSET LAG per
    partition with share state, by topic and partition (``--verbose`` adds LEADER-EPOCH);
    ``-`` where the coordinator has no value; "Share group 'G' has no offset information."
    when there is none;
  - ``--members``: GROUP CONSUMER-ID HOST CLIENT-ID #PARTITIONS ASSIGNMENT by consumer id
    (``--verbose`` adds MEMBER-EPOCH); assignments as ``topic:0,1;other:2``;
  - ``--state``: GROUP COORDINATOR (ID) STATE #MEMBERS (``--verbose`` adds GROUP-EPOCH and
    ASSIGNMENT-EPOCH).
  An empty group prints "Share group 'G' has no active members." to stderr (members and
  state views); a group that is gone "Error: Share group 'G' does not exist.".  A group the
  coordinator does not know fails the command with Kafka's GroupIdNotFoundException text.
- ``--delete --group G`` (or ``--all-groups``): only listed, Empty share groups are asked
  to be deleted (others are refused by the tool with Kafka's reasons), then "Deletion of
  requested share groups ('G') was successful." or the failures.
- ``--reset-offsets --group G`` with ``--topic T[:P,...]`` (repeatable) or ``--all-topics``
  (the partitions the group has start offsets for) and ``--to-earliest``, ``--to-latest``
  or ``--to-datetime YYYY-MM-DDTHH:mm:SS.sss`` (UTC unless a zone is given): prints the plan
  as GROUP TOPIC PARTITION NEW-OFFSET; ``--execute`` sets it (AlterShareGroupOffsets; the
  group must be Empty or not exist), ``--dry-run`` only prints.
- ``--delete-offsets --group G --topic T`` (repeatable): a TOPIC STATUS table.

Tables use Kafka's ``printf`` layouts: each row starts a new line, columns at least 15 wide
(group, topic, consumer id, host, client id widen to their longest value).  Rows that Kafka
prints from Java hash maps come in those maps' iteration order (``kafkapy.jvm``).

Differences from Kafka:
- Exit code 1 whenever an error is printed (Kafka 4.x's tool exits 0 after some).
- Usage errors print the message without the option table.
- No stack traces; ``--to-offset``, ``--to-current``, ``--from-file`` and ``--export``
  (later than Kafka 4.2) are not offered.
- When a state filter is invalid, the valid states are listed as Stable, Dead, Empty
  (Kafka lists them in the random order of a ``Set.of``).
"""
from __future__ import annotations

import argparse
import sys
import time
from dataclasses import dataclass
from datetime import datetime, timezone

import kafka.errors
from kafka.admin import OffsetSpec, OffsetTimestamp
from kafka.protocol.admin import DeleteGroupsRequest
from kafka.protocol.metadata import FindCoordinatorRequest
from kafka.structs import TopicPartition

from kafkapy.cli import _common as common
from kafkapy.cli._common import CommandError, UsageError
from kafkapy.cli._group_describe import Coordinator
from kafkapy.jvm import java_hash_order, string_hash, topic_partition_hash
from kafkapy.protocol.share_group_apis import (AlterShareGroupOffsetsRequest,
                                               DeleteShareGroupOffsetsRequest,
                                               DescribeShareGroupOffsetsRequest,
                                               ShareGroupDescribeRequest)

_ACTIONS = ("list", "describe", "delete", "reset_offsets", "delete_offsets")
_SHARE_STATES = ("Stable", "Dead", "Empty")   # Kafka's GroupState.groupStatesForType(SHARE)
MISSING = "-"
_LOAD_IN_PROGRESS, _NOT_AVAILABLE, _NOT_COORDINATOR = 14, 15, 16
_RETRIABLE = (_LOAD_IN_PROGRESS, _NOT_AVAILABLE, _NOT_COORDINATOR)
_UNKNOWN_TOPIC_OR_PARTITION, _TOPIC_AUTHORIZATION_FAILED = 3, 29
_INVALID_GROUP_ID, _GROUP_AUTHORIZATION_FAILED = 24, 30
_NON_EMPTY_GROUP, _GROUP_ID_NOT_FOUND = 68, 69
_RETRY_BACKOFF_S = 0.1
# Java's names and default messages where kafka-python's differ (see _common for others).
_JAVA_NAMES = {_NON_EMPTY_GROUP: "GroupNotEmptyException",
               _GROUP_AUTHORIZATION_FAILED: "GroupAuthorizationException"}
_MESSAGES = {_INVALID_GROUP_ID: "The configured groupId is invalid.",
             _GROUP_AUTHORIZATION_FAILED: "Group authorization failed.",
             0: None}
_FLAGS = {
    "list": "list all share groups",
    "describe": "describe share groups: offsets (the default), --members or --state",
    "delete": "delete share groups (they must be empty)",
    "reset-offsets": "reset the start offsets of one share group (it must be inactive)",
    "delete-offsets": "delete the share group's offsets of --topic",
    "all-groups": "every share group",
    "all-topics": "with --reset-offsets: every topic the group has offsets for",
    "to-earliest": "reset to the earliest offsets",
    "to-latest": "reset to the latest offsets",
    "dry-run": "only show the new offsets",
    "execute": "set the new offsets",
    "members": "describe the groups' members",
    "offsets": "describe the groups' start offsets (the default)",
    "verbose": "more columns",
}


class _Errors:
    """Whether any error was printed; decides the exit code."""
    seen = False


@dataclass(frozen=True)
class _Member:
    member_id: str
    client_id: str
    host: str
    member_epoch: int
    assignment: tuple[TopicPartition, ...]


@dataclass(frozen=True)
class _Described:
    """Kafka's ``ShareGroupDescription``."""
    group_id: str
    state: str
    coordinator: Coordinator
    group_epoch: int
    assignment_epoch: int
    members: tuple[_Member, ...]


@dataclass(frozen=True)
class _StartOffset:
    """Kafka's ``SharePartitionOffsetInfo``: None for a value the coordinator lacks."""
    offset: int
    leader_epoch: int | None
    lag: int | None


class _GroupFailure(CommandError):
    """A group the admin client could not act on: its error code and message."""

    def __init__(self, code: int, message: str | None) -> None:
        self.code = code
        self.message = message or _kafka_message(code)
        super().__init__(self.message)

    def java(self) -> str:
        return f"{_java_name(self.code)}: {self.message}"


def main(argv: list[str] | None = None) -> int:
    return common.run(_execute, _parser(), argv, _report)


def _report(message: str) -> None:
    _print_error(f"Executing share group command failed due to {message}")


def _print_error(message: str) -> None:
    _Errors.seen = True
    print(f"\nError: {message}")


def _parser() -> common.ToolParser:
    parser = common.ToolParser("kafkapy-share-groups",
                               "This tool helps to list, describe, reset and delete share groups.")
    for flag, text in _FLAGS.items():
        parser.add_argument(f"--{flag}", action="store_true", help=text)
    parser.add_argument("--group", action="append", default=[], help="share group (repeatable)")
    parser.add_argument("--topic", action="append", default=[], metavar="TOPIC[:P1,P2]",
                        help="topic (and partitions) to reset or delete offsets of")
    parser.add_argument("--to-datetime", metavar="YYYY-MM-DDTHH:mm:SS.sss",
                        help="reset to the first offset at or after this time")
    parser.add_argument("--state", nargs="?", const="",
                        help="show the group state (with --list: a filter, e.g. Stable,Empty)")
    parser.add_argument("--timeout", type=int, default=30000,
                        help="ms to wait for the cluster's answers (default 30000)")
    return parser


def _execute(args: argparse.Namespace) -> int:
    _check_args(args)
    action = common.single_action(args, _ACTIONS, "--list, --describe, --delete, "
                                  "--reset-offsets, --delete-offsets.")
    _Errors.seen = False
    admin = common.admin_client(args, request_timeout_ms=args.timeout)
    try:
        deadline = time.monotonic() + args.timeout / 1000
        {"list": _list, "describe": _describe, "delete": _delete,
         "reset_offsets": _reset_offsets, "delete_offsets": _delete_offsets}[action](
            admin, args, deadline)
    finally:
        admin.close()
    return 1 if _Errors.seen else 0


# -- arguments (ShareGroupCommandOptions.checkArgs, in its order) -----------------------------

def _check_args(args: argparse.Namespace) -> None:
    _check_available(args)
    common.require_bootstrap(args)
    if args.describe:
        _check_describe(args)
    if args.delete:
        _check_delete(args)
    if args.delete_offsets and not (args.group and args.topic):
        raise UsageError("Option [delete-offsets] takes the following options: [group], [topic]")
    if args.reset_offsets:
        _check_reset(args)
    if args.list and args.state:
        _states(args.state)
    if args.group and args.all_groups:
        raise UsageError('Option "[group]" can\'t be used with option "[all-groups]"')
    if args.group and args.list:
        raise UsageError('Option "[group]" can\'t be used with option "[list]"')
    for action in ("list", "describe"):
        if args.topic and getattr(args, action):
            raise UsageError(f'Option "[topic]" can\'t be used with option "[{action}]"')


def _check_available(args: argparse.Namespace) -> None:
    """joptsimple's ``availableIf``: these options only with --describe (--state: or --list)."""
    for name in ("members", "offsets", "verbose"):
        if getattr(args, name) and not args.describe:
            raise UsageError(_unavailable(name))
    if args.state is not None and not (args.describe or args.list):
        raise UsageError(_unavailable("state"))


def _unavailable(name: str) -> str:
    return f"Option(s) [{name}] are unavailable given other options on the command line"


def _check_describe(args: argparse.Namespace) -> None:
    if not (args.group or args.all_groups):
        raise UsageError("Option [describe] takes one of these options: [all-groups], [group]")
    if sum([args.members, args.offsets, args.state is not None]) > 1:
        raise UsageError("Option [describe] takes at most one of these options: [members], "
                         "[offsets], [state]")
    if args.state:
        raise UsageError("Option [describe] does not take a value for [state]")


def _check_delete(args: argparse.Namespace) -> None:
    if not (args.group or args.all_groups):
        raise UsageError("Option [delete] takes the options [group] or [all-groups]")
    if args.group and args.all_groups:
        raise UsageError("Option [delete] takes either [group] or [all-groups], not both.")
    if args.topic:
        raise UsageError("Option [delete] does not take the option: [topic]")


def _check_reset(args: argparse.Namespace) -> None:
    if args.dry_run and args.execute:
        raise UsageError("Option [reset-offsets] only accepts one of [execute] and [dry-run]")
    if not (args.dry_run or args.execute):
        raise UsageError("Option [reset-offsets] takes the option: [execute] or [dry-run]")
    if not args.group:
        raise UsageError("Option [reset-offsets] takes the option: [group]")
    if not (args.topic or args.all_topics):
        raise UsageError("Option [reset-offsets] takes one of these options: [all-topics], [topic]")
    scenarios = [name for name, given in (("to-datetime", args.to_datetime is not None),
                                          ("to-earliest", args.to_earliest),
                                          ("to-latest", args.to_latest)) if given]
    if not scenarios:
        raise UsageError("Option [reset-offsets] takes one of these options: [to-datetime], "
                         "[to-earliest], [to-latest]")
    if len(scenarios) > 1:
        raise UsageError(f'Option "[{scenarios[0]}]" can\'t be used with option "[{scenarios[1]}]"')


# -- --list ----------------------------------------------------------------------------------

def _list(admin, args: argparse.Namespace, deadline: float) -> None:
    if args.state is None:
        for group in _listed(admin):
            print(group["group_id"])
        return
    groups = _listed(admin, _states(args.state))
    width = max([15] + [len(g["group_id"]) for g in groups])
    print(f"{'GROUP':<{width}} STATE")
    for group in groups:
        print(f"{group['group_id']:<{width}} {group.get('group_state') or 'Unknown'}")


def _listed(admin, states: list[str] | None = None) -> list[dict]:
    """ListGroups (share type, the states filter) of every broker, in the order of the Java
    HashMap Kafka's admin client gathers them in."""
    groups = admin.list_groups(types_filter=["share"], states_filter=states or None)
    by_id = {g["group_id"]: g for g in groups}
    return [by_id[g] for g in java_hash_order(by_id, string_hash)]


def _states(text: str) -> list[str]:
    """Kafka's groupStatesFromString: states by name (any case), all of them share states."""
    if not text:
        return []
    names = {s.lower(): s for s in _SHARE_STATES}
    parsed = [names.get(s.strip().lower()) for s in text.split(",")]
    if None in parsed:
        raise UsageError(f"Invalid state list '{text}'. Valid states are: "
                         + ", ".join(_SHARE_STATES))
    return list(dict.fromkeys(parsed))


# -- coordinators ----------------------------------------------------------------------------

def _coordinators(admin, groups: list[str], deadline: float) -> dict[str, Coordinator]:
    """FindCoordinator v4 (all keys at once) until every group has its coordinator."""
    wanted, found = list(dict.fromkeys(groups)), {}
    while wanted:
        response = common.send(admin, FindCoordinatorRequest(key_type=0, coordinator_keys=wanted,
                                                             min_version=4))
        missing = []
        for c in response.coordinators:
            if c.error_code in _RETRIABLE:
                missing.append(c.key)
            elif c.error_code:
                raise _GroupFailure(c.error_code, c.error_message)
            else:
                found[c.key] = Coordinator(c.node_id, c.host, c.port)
        wanted = missing
        if wanted:
            _wait(deadline, "FindCoordinator")
    return found


def _wait(deadline: float, call: str) -> None:
    if time.monotonic() >= deadline:
        raise CommandError(f"org.apache.kafka.common.errors.TimeoutException: {call} timed out "
                           "waiting for the group coordinator")
    time.sleep(_RETRY_BACKOFF_S)


def _at_coordinator(admin, group: str, deadline: float, call: str, ask):
    """``ask(coordinator)`` -> (error code, message, result), repeated on the errors Kafka's
    admin client retries; the result, or _GroupFailure."""
    while True:
        coordinator = _coordinators(admin, [group], deadline)[group]
        code, message, result = ask(coordinator)
        if code not in _RETRIABLE:
            if code:
                raise _GroupFailure(code, message)
            return result
        _wait(deadline, call)


# -- ShareGroupDescribe ---------------------------------------------------------------------

def _describe_share_groups(admin, groups: list[str],
                           deadline: float) -> dict[str, _Described | _GroupFailure]:
    """Each group's description, or the failure Kafka's admin client completes it with."""
    pending, found = list(dict.fromkeys(groups)), {}
    while pending:
        retry = []
        coordinators = _coordinators(admin, pending, deadline)
        by_node: dict[Coordinator, list[str]] = {}
        for group in pending:
            by_node.setdefault(coordinators[group], []).append(group)
        for coordinator, ids in by_node.items():
            request = ShareGroupDescribeRequest(group_ids=ids, include_authorized_operations=False)
            for g in common.send(admin, request, coordinator.node_id).groups:
                if g.error_code in _RETRIABLE:
                    retry.append(g.group_id)
                elif g.error_code:
                    found[g.group_id] = _GroupFailure(g.error_code, g.error_message)
                else:
                    found[g.group_id] = _share_group(g, coordinator)
        pending = retry
        if pending:
            _wait(deadline, "describeShareGroups")
    return found


def _share_group(g, coordinator: Coordinator) -> _Described:
    members = tuple(_Member(
        m.member_id, m.client_id, m.client_host, m.member_epoch,
        tuple(TopicPartition(t.topic_name, p) for t in m.assignment.topic_partitions
              for p in t.partitions)) for m in g.members)
    return _Described(g.group_id, _state(g.group_state), coordinator, g.group_epoch,
                      g.assignment_epoch, members)


def _state(name: str) -> str:
    """Kafka's GroupState.parse(name).toString()."""
    known = ("PreparingRebalance", "CompletingRebalance", "Stable", "Dead", "Empty",
             "Assigning", "Reconciling", "NotReady")
    return next((s for s in known if s.lower() == (name or "").lower()), "Unknown")


def _described(admin, groups: list[str], deadline: float) -> dict[str, _Described]:
    """Every group described, or the first failure (in the order Kafka's tool meets them)."""
    described = _describe_share_groups(admin, groups, deadline)
    for group in java_hash_order(described, string_hash):
        failure = described[group]
        if isinstance(failure, _GroupFailure):
            raise CommandError(failure.java())
    return described


# -- DescribeShareGroupOffsets ----------------------------------------------------------------

def _share_group_offsets(admin, group: str,
                         deadline: float) -> dict[TopicPartition, _StartOffset | None]:
    """Every partition the group has share state for (Kafka's listShareGroupOffsets): its
    start offset, None when the coordinator has none; partitions answered with an error
    are left out, as Kafka's admin client leaves them out."""
    request = DescribeShareGroupOffsetsRequest(groups=[
        DescribeShareGroupOffsetsRequest.DescribeShareGroupOffsetsRequestGroup(
            group_id=group, topics=None)])

    def ask(coordinator: Coordinator):
        answer = common.send(admin, request, coordinator.node_id).groups[0]
        return answer.error_code, answer.error_message, answer.topics
    offsets = {}
    for topic in _at_coordinator(admin, group, deadline, "listShareGroupOffsets", ask):
        for p in topic.partitions:
            if not p.error_code:
                offsets[TopicPartition(topic.topic_name, p.partition_index)] = _start_offset(p)
    return offsets


def _start_offset(p) -> _StartOffset | None:
    if p.start_offset < 0:
        return None
    lag = getattr(p, "lag", -1)
    return _StartOffset(p.start_offset, p.leader_epoch if p.leader_epoch >= 0 else None,
                       lag if lag >= 0 else None)


# -- --describe -------------------------------------------------------------------------------

def _describe(admin, args: argparse.Namespace, deadline: float) -> None:
    groups = [g["group_id"] for g in _listed(admin)] if args.all_groups else args.group
    if not groups:
        return
    described = _described(admin, groups, deadline)
    if args.members:
        for group in sorted(described):
            _print_members(described[group], args.verbose)
    elif args.state is not None:
        for group in sorted(described):
            _print_state(described[group], args.verbose)
    else:
        offsets = {g: _share_group_offsets(admin, g, deadline)
                   for g in java_hash_order(described, string_hash)}
        for group in sorted(described):
            _print_offsets(group, offsets[group], args.verbose)


def _worth_printing(group: _Described, rows: int) -> bool:
    """Kafka's maybePrintEmptyGroupState."""
    if group.state == "Dead":
        _print_error(f"Share group '{group.group_id}' does not exist.")
    elif group.state == "Empty":
        print(f"\nShare group '{group.group_id}' has no active members.", file=sys.stderr)
    return group.state != "Dead" and rows > 0


def _table(widths: list[int], *rows: list[str]) -> None:
    """Rows as Kafka's ``printf("\\n%-Ns %-Ms %s", ...)`` prints them (width 0: ``%s``),
    then the closing newline."""
    for row in rows:
        print("\n" + " ".join(f"{v:<{w}}" for v, w in zip(row, widths)), end="")
    print()


def _print_offsets(group: str, offsets: dict, verbose: bool) -> None:
    rows = sorted(offsets.items(), key=lambda kv: (kv[0].topic, kv[0].partition))
    if not rows:
        print(f"\nShare group '{group}' has no offset information.")
        return
    topic_width = max([15] + [len(tp.topic) for tp, _ in rows])
    widths = [max(15, len(group)), topic_width, 10] + ([13] if verbose else []) + [13, 0]
    header = ["GROUP", "TOPIC", "PARTITION"] + (["LEADER-EPOCH"] if verbose else []) \
        + ["START-OFFSET", "LAG"]
    lines = []
    for tp, info in rows:
        epoch = [_text(info and info.leader_epoch)] if verbose else []
        lines.append([group, tp.topic, str(tp.partition), *epoch,
                      _text(info and info.offset), _text(info and info.lag)])
    _table(widths, header, *lines)


def _text(value) -> str:
    return MISSING if value is None else str(value)


def _print_members(group: _Described, verbose: bool) -> None:
    members = sorted(group.members, key=lambda m: m.member_id)
    if not _worth_printing(group, len(members)):
        return
    widths = [max(15, len(group.group_id))] + [
        max([15] + [len(getattr(m, field)) for m in members])
        for field in ("member_id", "host", "client_id")] + [12] + ([13] if verbose else []) + [0]
    header = ["GROUP", "CONSUMER-ID", "HOST", "CLIENT-ID", "#PARTITIONS"] \
        + (["MEMBER-EPOCH"] if verbose else []) + ["ASSIGNMENT"]
    rows = [[group.group_id, m.member_id, m.host, m.client_id, str(len(set(m.assignment))),
             *([str(m.member_epoch)] if verbose else []), _assignment_text(m.assignment)]
            for m in members]
    _table(widths, header, *rows)


def _assignment_text(partitions) -> str:
    """Kafka's getAssignmentString: ``topic:0,1,2;other:3``, partitions ascending, the
    per-topic texts sorted."""
    by_topic: dict[str, set[int]] = {}
    for tp in partitions:
        by_topic.setdefault(tp.topic, set()).add(tp.partition)
    return ";".join(sorted(f"{topic}:" + ",".join(str(p) for p in sorted(parts))
                           for topic, parts in by_topic.items()))


def _print_state(group: _Described, verbose: bool) -> None:
    _worth_printing(group, 1)     # Kafka prints the table whatever the state
    c = group.coordinator
    coordinator = f"{c.host}:{c.port}  ({c.node_id})"
    widths = [max(15, len(group.group_id)), max(25, len(coordinator)), 15] \
        + ([12, 17] if verbose else []) + [0]
    header = ["GROUP", "COORDINATOR (ID)", "STATE"] \
        + (["GROUP-EPOCH", "ASSIGNMENT-EPOCH"] if verbose else []) + ["#MEMBERS"]
    row = [group.group_id, coordinator, group.state] \
        + ([str(group.group_epoch), str(group.assignment_epoch)] if verbose else []) \
        + [str(len(group.members))]
    _table(widths, header, row)


# -- --delete ---------------------------------------------------------------------------------

def _delete(admin, args: argparse.Namespace, deadline: float) -> None:
    listed = {g["group_id"]: g for g in _listed(admin)}
    asked = list(listed) if args.all_groups else list(dict.fromkeys(args.group))
    failed = {g: reason for g in asked if (reason := _undeletable(g, listed.get(g)))}
    wanted = [g for g in asked if g not in failed]
    for group, code in (_delete_groups(admin, wanted, deadline) if wanted else {}).items():
        if code:
            failed[group] = f"{_java_name(code)}: {_kafka_message(code)}"
    done = [g for g in wanted if g not in failed]
    if not failed:
        print("Deletion of requested share groups ("
              + ", ".join(f"'{g}'" for g in java_hash_order(done, string_hash))
              + ") was successful.")
        return
    _print_error("Deletion of some share groups failed:")
    for group in java_hash_order(failed, string_hash):
        print(f"* Group '{group}' could not be deleted due to: {failed[group]}")
    if done:
        print("\nThese share groups were deleted successfully: "
              + ", ".join(f"'{g}'" for g in java_hash_order(done, string_hash)))


def _undeletable(group: str, listing: dict | None) -> str | None:
    """The tool's own checks before it asks: Kafka's reason, as Java prints the exception."""
    if listing is None:
        return (f"org.apache.kafka.common.errors.GroupIdNotFoundException: Group '{group}' "
                "is not a share group.")
    state = _state(listing.get("group_state") or "")
    if state == "Dead":
        return f"java.lang.IllegalStateException: Share group '{group}' group state is DEAD."
    if state != "Empty":
        return (f"org.apache.kafka.common.errors.GroupNotEmptyException: Share group '{group}' "
                "is not EMPTY.")
    return None


def _delete_groups(admin, groups: list[str], deadline: float) -> dict[str, int]:
    """DeleteGroups at each group's coordinator: error code by group."""
    results, pending = {}, list(groups)
    while pending:
        retry = []
        coordinators = _coordinators(admin, pending, deadline)
        by_node: dict[int, list[str]] = {}
        for group in pending:
            by_node.setdefault(coordinators[group].node_id, []).append(group)
        for node, ids in by_node.items():
            response = common.send(admin, DeleteGroupsRequest(groups_names=ids), node)
            for result in response.results:
                if result.error_code in _RETRIABLE:
                    retry.append(result.group_id)
                else:
                    results[result.group_id] = result.error_code
        pending = retry
        if pending:
            _wait(deadline, "deleteShareGroups")
    return results


# -- --reset-offsets --------------------------------------------------------------------------

def _reset_offsets(admin, args: argparse.Namespace, deadline: float) -> None:
    group = args.group[0]
    described = _describe_share_groups(admin, [group], deadline).get(group)
    if isinstance(described, _GroupFailure) and described.code != _GROUP_ID_NOT_FOUND:
        raise CommandError(described.message)
    if isinstance(described, _Described) and described.state not in ("Empty", "Dead"):
        raise UsageError(f"Share group '{group}' is not empty.")
    partitions = _partitions_to_reset(admin, group, args, deadline)
    _check_partitions(admin, partitions)
    offsets = _new_offsets(admin, partitions, args)
    if args.execute and offsets:
        _alter_offsets(admin, group, offsets, deadline)
    _print_plan(group, offsets)


def _partitions_to_reset(admin, group: str, args: argparse.Namespace, deadline: float) -> list:
    if not args.topic:
        return java_hash_order(_share_group_offsets(admin, group, deadline), topic_partition_hash)
    named, whole = [], []
    for arg in args.topic:
        if ":" in arg:
            named += _topic_partitions(arg)
        else:
            whole.append(arg)
    if whole:
        described = _topics(admin, whole)
        for topic in java_hash_order(described, string_hash):
            named += [TopicPartition(topic, p) for p in described[topic]]
    return named


def _topic_partitions(arg: str) -> list:
    """Kafka's parseTopicsWithPartitions: ``topic:0,1,2``."""
    parts = arg.split(":")
    if len(parts) != 2:
        raise UsageError(f"Invalid topic arg '{arg}', expected topic name and partitions")
    topic, listed = parts
    try:
        return [TopicPartition(topic, int(p)) for p in listed.split(",")]
    except ValueError:
        bad = next(p for p in listed.split(",") if not p.strip().lstrip("-").isdigit())
        raise UsageError(f"Invalid partition '{bad}' specified in topic arg '{arg}''") from None


def _topics(admin, names: list[str]) -> dict[str, list[int]]:
    """Each topic's partitions (Metadata); a missing topic fails as describeTopics does."""
    described = {}
    for info in admin.describe_topics(list(dict.fromkeys(names))):
        if info["error_code"]:
            raise CommandError(_kafka_message(info["error_code"]))
        described[info["name"]] = sorted(p["partition_index"] for p in info["partitions"])
    return described


def _check_partitions(admin, partitions: list) -> None:
    """Kafka's checkAllTopicPartitionsValid: every partition exists and has a leader."""
    if not partitions:
        return
    described = admin.describe_topics(list(dict.fromkeys(tp.topic for tp in partitions)))
    failed = next((info for info in described if info["error_code"]), None)
    if failed is not None:
        code = failed["error_code"]
        raise CommandError("java.util.concurrent.ExecutionException: "
                           f"{_java_name(code)}: {_kafka_message(code)}")
    leaders = {(info["name"], p["partition_index"]): p["leader_id"]
               for info in described for p in info["partitions"]}
    for problem, check in (("do not exist", lambda tp: tp in leaders),
                           ("have no leader", lambda tp: leaders[tp] >= 0)):
        bad = [tp for tp in partitions if not check(tp)]
        if bad:
            raise CommandError('The partitions "' + ",".join(f"{t}-{p}" for t, p in bad)
                               + f'" {problem}')


def _new_offsets(admin, partitions: list, args: argparse.Namespace) -> dict:
    """The plan, keyed in the order of the Java HashMap Kafka's tool builds it in."""
    if args.to_earliest:
        found = _log_offsets(admin, partitions, OffsetSpec.EARLIEST)
    elif args.to_latest:
        found = _log_offsets(admin, partitions, OffsetSpec.LATEST)
    else:
        found = _offsets_at(admin, partitions, _timestamp(args.to_datetime))
    return {tp: found[tp] for tp in java_hash_order(partitions, topic_partition_hash)}


def _log_offsets(admin, partitions: list, spec) -> dict:
    if not partitions:
        return {}
    return {tp: o.offset for tp, o in admin.list_partition_offsets(
        {tp: spec for tp in partitions}).items()}


def _offsets_at(admin, partitions: list, timestamp: int) -> dict:
    """Kafka's getLogTimestampOffsets: a partition without a record at or after the time
    falls back to its end, with Kafka's warning."""
    found = {tp: o for tp, o in _log_offsets(admin, partitions, OffsetTimestamp(timestamp)).items()
             if o >= 0}
    empty = [tp for tp in partitions if tp not in found]
    for tp in java_hash_order(empty, topic_partition_hash):
        print(f"\nWarn: Partition {tp.partition} from topic {tp.topic} is empty. Falling back "
              "to latest known offset.")
    return {**found, **_log_offsets(admin, empty, OffsetSpec.LATEST)}


def _timestamp(text: str) -> int:
    """Kafka's Utils.getDateTime: ``yyyy-MM-dd'T'HH:mm:ss.SSS`` with an optional zone, UTC
    without one."""
    date, sep, clock = text.partition("T")
    if not sep:
        raise CommandError("java.text.ParseException: Error parsing timestamp. It does not "
                           "contain a 'T' according to ISO8601 format")
    if not any(c in clock for c in "+-Z"):
        text += "Z"
    try:
        moment = datetime.strptime(text.replace("Z", "+0000"), "%Y-%m-%dT%H:%M:%S.%f%z")
    except ValueError:
        raise CommandError(f'java.text.ParseException: Unparseable date: "{text}"') from None
    return int(moment.astimezone(timezone.utc).timestamp() * 1000)


def _alter_offsets(admin, group: str, offsets: dict, deadline: float) -> None:
    """AlterShareGroupOffsets; a partition refused fails the command as Kafka's
    AlterShareGroupOffsetsResult.all() does."""
    by_topic: dict[str, list] = {}
    for tp, offset in offsets.items():
        by_topic.setdefault(tp.topic, []).append(
            AlterShareGroupOffsetsRequest.AlterShareGroupOffsetsRequestTopic
            .AlterShareGroupOffsetsRequestPartition(partition_index=tp.partition,
                                                    start_offset=offset))
    request = AlterShareGroupOffsetsRequest(group_id=group, topics=[
        AlterShareGroupOffsetsRequest.AlterShareGroupOffsetsRequestTopic(
            topic_name=topic, partitions=parts) for topic, parts in by_topic.items()])

    def ask(coordinator: Coordinator):
        response = common.send(admin, request, coordinator.node_id)
        return response.error_code, response.error_message, response.responses
    try:
        answered = _at_coordinator(admin, group, deadline, "alterShareGroupOffsets", ask)
        errors = {TopicPartition(t.topic_name, p.partition_index): p.error_code
                  for t in answered for p in t.partitions}
    except _GroupFailure as failure:
        errors = {tp: failure.code for tp in offsets}
    failed = [tp for tp in java_hash_order(errors, topic_partition_hash) if errors[tp]]
    if failed:
        raise CommandError("Failed altering group offsets for the following partitions: ["
                           + ", ".join(f"{t}-{p}" for t, p in failed) + "]")


def _print_plan(group: str, offsets: dict) -> None:
    """Kafka's printOffsetsToReset (nothing but the newline for an empty plan)."""
    if not offsets:
        print()
        return
    widths = [max(15, len(group)), max([15] + [len(tp.topic) for tp in offsets]), 10, 0]
    rows = [[group, tp.topic, str(tp.partition), str(o)] for tp, o in offsets.items()]
    _table(widths, ["GROUP", "TOPIC", "PARTITION", "NEW-OFFSET"], *rows)


# -- --delete-offsets -------------------------------------------------------------------------

def _delete_offsets(admin, args: argparse.Namespace, deadline: float) -> None:
    group = args.group[0]
    topics = java_hash_order(args.topic, string_hash)
    try:
        answered = _delete_share_group_offsets(admin, group, topics, deadline)
        results = {t: answered.get(t, (-1, f'Offset deletion result for topic "{t}" was not '
                                           "included in the response")) for t in topics}
        group_failure = None
    except _GroupFailure as failure:
        results = {t: (failure.code, failure.message) for t in topics}
        group_failure = failure
    _report_group_failure(group_failure, results, topics)
    width = max([15] + [len(t) for t in results])
    rows = [[t, "Successful" if not code else f"Error: {message}"]
            for t, (code, message) in sorted(results.items())]
    _table([width, 0], ["TOPIC", "STATUS"], *rows)


def _report_group_failure(failure: _GroupFailure | None, results: dict, topics: list) -> None:
    """Kafka's switch on the first error of ``all()``: group errors by their message,
    topic errors only in the table, others as "Encounter some unknown error"."""
    if failure is None:
        first = next((t for t in topics if results[t][0]), None)
        if first is None:
            return
        code, message = results[first]
        if code in (_TOPIC_AUTHORIZATION_FAILED, _UNKNOWN_TOPIC_OR_PARTITION):
            return
        text = (f"java.lang.IllegalArgumentException: {message}" if code < 0
                else f"{_java_name(code)}: {message}")
        _print_error(f"Encounter some unknown error: {text}")
        return
    if failure.code in (_INVALID_GROUP_ID, _GROUP_ID_NOT_FOUND, _GROUP_AUTHORIZATION_FAILED,
                        _NON_EMPTY_GROUP):
        _print_error(failure.message)
    else:
        _print_error(f"Encounter some unknown error: {failure.java()}")


def _delete_share_group_offsets(admin, group: str, topics: list[str],
                               deadline: float) -> dict[str, tuple[int, str | None]]:
    """DeleteShareGroupOffsets: (error code, message) by topic, or _GroupFailure."""
    request = DeleteShareGroupOffsetsRequest(group_id=group, topics=[
        DeleteShareGroupOffsetsRequest.DeleteShareGroupOffsetsRequestTopic(topic_name=t)
        for t in topics])

    def ask(coordinator: Coordinator):
        response = common.send(admin, request, coordinator.node_id)
        return response.error_code, response.error_message, response.responses
    answered = _at_coordinator(admin, group, deadline, "deleteShareGroupOffsets", ask)
    return {t.topic_name: (t.error_code, t.error_message or _kafka_message(t.error_code))
            for t in answered}


# -- Java's texts -----------------------------------------------------------------------------

def _java_name(code: int) -> str:
    if code in _JAVA_NAMES:
        return f"org.apache.kafka.common.errors.{_JAVA_NAMES[code]}"
    return common.java_exception_name(code)


def _kafka_message(code: int) -> str | None:
    if not code:
        return None
    return _MESSAGES.get(code) or common.kafka_error_message(code)


if __name__ == "__main__":
    sys.exit(main())
