"""``kafkapy-acls``: Kafka's ``kafka-acls.sh`` (AclCommand) over the admin protocol.

``--add`` / ``--remove`` / ``--list`` ACLs on ``--topic``, ``--group``, ``--cluster``,
``--transactional-id``, ``--delegation-token``, ``--user-principal`` resources with
``--resource-pattern-type`` (``literal`` by default for add/remove, ``any`` for list);
entries from ``--allow-principal``/``--deny-principal``, ``--allow-host``/``--deny-host``
(``*`` when no host is given) and ``--operation`` (``All`` by default), or the
``--producer`` (topic WRITE/DESCRIBE/CREATE, transactional id WRITE/DESCRIBE, with
``--idempotent`` cluster IDEMPOTENT_WRITE) and ``--consumer`` (topic READ/DESCRIBE, group
READ) conveniences.  Output lines are AclCommand's:
``Adding ACLs for resource `ResourcePattern(...)`: `` then one ``\\t(principal=..., ...)``
per entry; ``Current ACLs for resource ...`` for ``--list``; ``--remove`` asks for
confirmation unless ``--force``.  Requests go through kafka-python's admin client
(CreateAcls 30, DescribeAcls 29, DeleteAcls 31).
"""
from __future__ import annotations

import argparse
import sys

from kafka.protocol.admin.acl import CreateAclsRequest, DeleteAclsRequest, DescribeAclsRequest

from kafkapy.cli import _common as common
from kafkapy.cli._common import CommandError, UsageError
from kafkapy.security import acls as A

_NL = "\n"


def main(argv: list[str] | None = None) -> int:
    # Kafka's AclCommand prints the failure on stdout (its stack trace goes to stderr).
    return common.run(_execute, _parser(), argv, lambda message: print(
        f"Error while executing ACL command: {message}"))


def _parser() -> common.ToolParser:
    p = common.ToolParser("kafkapy-acls", "Manage ACLs (Kafka's kafka-acls.sh).")
    for name, kind, text in _OPTIONS:
        if kind == "flag":
            p.add_argument(name, action="store_true", help=text)
        elif kind == "many":
            p.add_argument(name, action="append", default=[], help=text)
        else:
            p.add_argument(name, default=None, help=text)
    return p


# (option, kind, description): kind "flag" (no value), "many" (repeatable) or "one".
_OPTIONS = (
    ("--add", "flag", "Add the ACLs described by the other options."),
    ("--remove", "flag", "Remove the ACLs described by the other options."),
    ("--list", "flag", "List ACLs of the given resources (all resources when none is given)."),
    ("--topic", "many", "A topic the ACLs apply to; '*' means every topic."),
    ("--group", "many", "A consumer group the ACLs apply to; '*' means every group."),
    ("--cluster", "flag", "The ACLs apply to the cluster resource."),
    ("--transactional-id", "many",
     "A transactional id the ACLs apply to; '*' means every transactional id."),
    ("--delegation-token", "many",
     "A delegation token the ACLs apply to; '*' means every token."),
    ("--user-principal", "many",
     "A user principal the ACLs apply to (USER resources, for delegation tokens)."),
    ("--resource-pattern-type", "one",
     "LITERAL or PREFIXED for --add; ANY, MATCH, LITERAL or PREFIXED for --list and "
     "--remove (default LITERAL, ANY for --list)."),
    ("--allow-principal", "many", "A principal (type:name) given ALLOW, e.g. User:alice."),
    ("--deny-principal", "many", "A principal (type:name) given DENY."),
    ("--principal", "many", "With --list: only ACLs of this principal."),
    ("--allow-host", "many", "A host the allowed principals may connect from ('*' by default)."),
    ("--deny-host", "many", "A host the denied principals are refused from ('*' by default)."),
    ("--operation", "many",
     "An operation (Read, Write, Create, Delete, Alter, Describe, ClusterAction, "
     "AlterConfigs, DescribeConfigs, IdempotentWrite, All); default All."),
    ("--producer", "flag",
     "The ACLs a producer needs: WRITE, DESCRIBE and CREATE on the topic (with "
     "--transactional-id: WRITE, DESCRIBE on it too; with --idempotent: IDEMPOTENT_WRITE)."),
    ("--consumer", "flag", "The ACLs a consumer needs: READ, DESCRIBE on the topic, READ on the group."),
    ("--idempotent", "flag", "With --producer: allow idempotent produce."),
    ("--force", "flag", "Do not ask for confirmation."),
)


def _execute(args: argparse.Namespace) -> int:
    action = common.single_action(args, ("add", "remove", "list"), "--list, --add, --remove. ")
    common.require_bootstrap(args)
    pattern_type = _check_options(args, action)
    admin = common.admin_client(args)
    try:
        if action == "add":
            _add(admin, args, pattern_type)
        elif action == "remove":
            _remove(admin, args, pattern_type)
        else:
            _list(admin, args, pattern_type)
    finally:
        admin.close()
    return 0


def _check_options(args, action: str) -> int:
    """AclCommand's option checks, before any connection; the resource pattern type."""
    if (args.producer or args.consumer) and action != "add" and action != "remove":
        raise UsageError("Option \"[producer]\" / \"[consumer]\" can only be used with --add or --remove")
    if args.consumer and not args.group:
        raise UsageError("With --consumer you must specify a --group")
    if args.idempotent and not args.producer:
        raise UsageError("--idempotent is only valid with --producer")
    pattern_type = _pattern_type(args, action)
    if action == "add" and not (args.allow_principal or args.deny_principal):
        raise UsageError("You must specify one of: --allow-principal, --deny-principal when trying to add ACLs.")
    if action != "list" and not _resources(args):
        raise UsageError("You must provide at least one resource: --topic <topic> or --cluster or "
                         "--group <group> or --delegation-token <Delegation Token ID>")
    return pattern_type


def _pattern_type(args, action: str) -> int:
    text = args.resource_pattern_type or ("any" if action == "list" else "literal")
    code = A.parse_enum(A.PATTERN_ENUM, text)
    if code == A.P_UNKNOWN:
        raise UsageError(f"Unrecognized --resource-pattern-type: {text}")
    if action == "add" and code not in (A.LITERAL, A.PREFIXED):
        raise UsageError(f"A '--resource-pattern-type' value of '{text.upper()}' is not valid when adding acls.")
    return code


def _resources(args) -> list[tuple[int, str]]:
    out = [(A.TOPIC, t) for t in args.topic] + [(A.GROUP, g) for g in args.group]
    if args.cluster or (args.idempotent and args.producer):
        out.append((A.CLUSTER, A.CLUSTER_NAME))
    out += [(A.TRANSACTIONAL_ID, t) for t in args.transactional_id]
    out += [(A.DELEGATION_TOKEN, t) for t in args.delegation_token]
    out += [(A.USER, u) for u in args.user_principal]
    return out


def _entries(args, resource_type: int) -> list[A.AclEntry]:
    """The entries wanted on one resource type (AclCommand's getAcl / producer / consumer)."""
    if args.producer or args.consumer:
        ops: list[int] = []
        if args.producer:
            ops += {A.TOPIC: [A.WRITE, A.DESCRIBE, A.CREATE], A.TRANSACTIONAL_ID: [A.WRITE, A.DESCRIBE],
                    A.CLUSTER: [A.IDEMPOTENT_WRITE]}.get(resource_type, [])
        if args.consumer:
            ops += {A.TOPIC: [A.READ, A.DESCRIBE], A.GROUP: [A.READ]}.get(resource_type, [])
        ops = list(dict.fromkeys(ops))
    else:
        ops = [_operation(o) for o in args.operation] or [A.ALL]
        for op in ops:
            if op != A.ALL and op not in A.SUPPORTED_OPERATIONS[resource_type]:
                raise UsageError(f"ResourceType {A.camel(A.RESOURCE_ENUM[resource_type])} only supports "
                                 "operations " + ",".join(A.camel(A.OPERATION_ENUM[o]) for o in
                                                           sorted(A.SUPPORTED_OPERATIONS[resource_type]))
                                 + ",All")
    out = []
    for permission, principals, hosts in ((A.ALLOW, args.allow_principal, args.allow_host),
                                          (A.DENY, args.deny_principal, args.deny_host)):
        for principal in principals:
            _check_principal(principal)
            for host in hosts or [A.WILDCARD_HOST]:
                out += [A.AclEntry(principal, host, op, permission) for op in ops]
    return list(dict.fromkeys(out))


def _operation(text: str) -> int:
    code = A.parse_enum(A.OPERATION_ENUM, text)
    if code in (A.OP_UNKNOWN, A.OP_ANY):
        raise UsageError(f"Unknown operation: {text}")
    return code


def _check_principal(text: str) -> None:
    kind, sep, _ = text.partition(":")
    if not sep or not kind:
        raise CommandError(f"expected a string in format principalType:principalName but got {text}")


def _add(admin, args, pattern_type: int) -> None:
    for resource_type, name in _resources(args):
        pattern = A.Pattern(resource_type, name, pattern_type)
        entries = _entries(args, resource_type)
        print(f"Adding ACLs for resource `{A.describe_pattern(pattern)}`: {_lines(entries)}")
        request = CreateAclsRequest(creations=[
            (resource_type, name, pattern_type, e.principal, e.host, e.operation, e.permission)
            for e in entries], min_version=1, max_version=3)
        for result in common.send(admin, request).results:
            if result.error_code:
                raise CommandError(common.error_text(result.error_code, result.error_message))


def _remove(admin, args, pattern_type: int) -> None:
    for resource_type, name in _resources(args):
        flt = _filter_text(resource_type, name, pattern_type)
        entries = _entries(args, resource_type) if (args.allow_principal or args.deny_principal) else []
        if entries:
            question = (f"Are you sure you want to remove ACLs: {_lines(entries)} "
                        f"from resource filter `{flt}`? (y/n)")
            filters = [(resource_type, name, pattern_type, e.principal, e.host, e.operation, e.permission)
                       for e in entries]
        else:
            question = f"Are you sure you want to delete all ACLs for resource filter `{flt}`? (y/n)"
            filters = [(resource_type, name, pattern_type, None, None, A.OP_ANY, A.PERM_ANY)]
        if not args.force:
            print(question)
            if sys.stdin.readline().strip().lower() != "y":
                continue
        answer = common.send(admin, DeleteAclsRequest(filters=filters, min_version=1, max_version=3))
        for result in answer.filter_results:
            if result.error_code:
                raise CommandError(common.error_text(result.error_code, result.error_message))


def _list(admin, args, pattern_type: int) -> None:
    filters = ([(rt, name, pattern_type) for rt, name in _resources(args)]
               or [(A.R_ANY, None, A.P_ANY)])
    grouped: dict[A.Pattern, list[A.AclEntry]] = {}
    for rt, name, pt in filters:
        request = DescribeAclsRequest(resource_type_filter=rt, resource_name_filter=name,
                                      pattern_type_filter=pt, principal_filter=None, host_filter=None,
                                      operation=A.OP_ANY, permission_type=A.PERM_ANY,
                                      min_version=1, max_version=3)
        answer = common.send(admin, request)
        if answer.error_code:
            raise CommandError(common.error_text(answer.error_code, answer.error_message))
        for r in answer.resources:
            entries = grouped.setdefault(A.Pattern(r.resource_type, r.resource_name, r.pattern_type), [])
            for acl in r.acls:
                entry = A.AclEntry(acl.principal, acl.host, acl.operation, acl.permission_type)
                if entry not in entries:
                    entries.append(entry)
    if args.principal:
        for principal in args.principal:
            print(f"ACLs for principal `{principal}`")
            _print_resources({p: [e for e in es if e.principal == principal] for p, es in grouped.items()})
    else:
        _print_resources(grouped)


def _print_resources(grouped) -> None:
    for pattern, entries in grouped.items():
        if entries:
            print(f"Current ACLs for resource `{A.describe_pattern(pattern)}`: {_lines(entries)}")


def _lines(entries) -> str:
    """AclCommand's layout of entries: each on its own tab-indented line, the list opened
    and closed by a space-padded newline."""
    return f"{_NL} {_NL.join(chr(9) + A.describe_entry(e) for e in entries)} {_NL}"


def _filter_text(resource_type: int, name: str, pattern_type: int) -> str:
    """Kafka's ResourcePatternFilter.toString."""
    return (f"ResourcePatternFilter(resourceType={A.RESOURCE_ENUM[resource_type]}, name={name}, "
            f"patternType={A.PATTERN_ENUM[pattern_type]})")
