"""kafkapy-acls option handling that needs no broker: AclCommand's usage errors, the
entries --producer / --consumer expand to, Kafka's printed forms."""
from __future__ import annotations

import pytest

from kafkapy.cli import acls as cli
from kafkapy.security import acls as A


def _run(capsys, *argv):
    code = cli.main(["--bootstrap-server", "127.0.0.1:1", *argv])
    out = capsys.readouterr()
    return code, out.out, out.err


@pytest.mark.parametrize("argv, message", [
    ((), "Command must include exactly one action: --list, --add, --remove."),
    (("--add", "--list"), "Command must include exactly one action"),
    (("--list", "--consumer", "--topic", "t", "--group", "g"), "can only be used with --add or --remove"),
    (("--add", "--consumer", "--topic", "t", "--allow-principal", "User:a"), "With --consumer you must specify a --group"),
    (("--add", "--idempotent", "--topic", "t"), "--idempotent is only valid with --producer"),
    (("--add", "--resource-pattern-type", "match", "--topic", "t"), "is not valid when adding acls"),
])
def test_usage_errors(capsys, argv, message):
    code, _, err = _run(capsys, *argv)
    assert code == 1 and message in err


def _args(*argv):
    return cli._parser().parse_args(["--bootstrap-server", "x:1", *argv])


def test_producer_and_consumer_entries():
    args = _args("--add", "--allow-principal", "User:a", "--producer", "--consumer", "--topic", "t",
                 "--group", "g", "--transactional-id", "x", "--idempotent")
    ops = lambda rt: {e.operation for e in cli._entries(args, rt)}  # noqa: E731
    assert ops(A.TOPIC) == {A.WRITE, A.DESCRIBE, A.CREATE, A.READ}
    assert ops(A.GROUP) == {A.READ}
    assert ops(A.TRANSACTIONAL_ID) == {A.WRITE, A.DESCRIBE}
    assert ops(A.CLUSTER) == {A.IDEMPOTENT_WRITE}
    assert (A.CLUSTER, A.CLUSTER_NAME) in cli._resources(args)


def test_hosts_and_permissions():
    args = _args("--add", "--allow-principal", "User:a", "--deny-principal", "User:b", "--deny-host", "1.2.3.4",
                 "--operation", "Read", "--topic", "t")
    assert cli._entries(args, A.TOPIC) == [A.AclEntry("User:a", "*", A.READ, A.ALLOW),
                                           A.AclEntry("User:b", "1.2.3.4", A.READ, A.DENY)]


def test_unsupported_operation():
    from kafkapy.cli._common import UsageError
    with pytest.raises(UsageError, match="ResourceType Group only supports operations"):
        cli._entries(_args("--add", "--allow-principal", "User:a", "--operation", "Write", "--group", "g"), A.GROUP)


def test_printed_forms():
    assert A.describe_pattern(A.Pattern(A.TOPIC, "foo", A.PREFIXED)) == \
        "ResourcePattern(resourceType=TOPIC, name=foo, patternType=PREFIXED)"
    assert A.describe_entry(A.AclEntry("User:a", "*", A.IDEMPOTENT_WRITE, A.ALLOW)) == \
        "(principal=User:a, host=*, operation=IDEMPOTENT_WRITE, permissionType=ALLOW)"
    assert cli._filter_text(A.GROUP, "g", A.LITERAL) == \
        "ResourcePatternFilter(resourceType=GROUP, name=g, patternType=LITERAL)"
