"""``kafkapy-consumer-groups`` for consumer-protocol groups (KIP-848), against what Kafka's
tools print for the same groups.

One broker (its consumer group heartbeat interval at 1 s) holds, for the whole module:
- a consumer-protocol group of three confluent-kafka 2.16 members (``group.protocol:
  consumer``) on two topics (12 and 3 partitions), Stable, every record consumed and
  committed;
- a classic group of one confluent-kafka member (``group.protocol: classic``) on both topics;
- an offsets-only group (committed offsets, no member: Empty).
Nothing changes while the tools run, so every tool sees the same state.

Kafka 4.x's tool is not at hand as a program: its oracle is tests/java/kafka4/ConsumerGroupsView.java,
Kafka 4.3's Admin client (the calls ConsumerGroupCommand makes) printed by the tool's rules,
so the values, the Java collections' row orders and the column widths are Java's own.  Each
view (offsets, members, state, with and without ``--verbose``; ``--list`` with ``--type``
and ``--state``) is compared byte for byte with it, and the verbose member rows column by
column with the group's ConsumerGroupDescribe answer.  Kafka 3.9's own
``kafka-consumer-groups.sh`` (which also describes consumer groups with ConsumerGroupDescribe)
runs against the same broker: its ``--describe`` and ``--members`` tables are byte-equal to
ours, its ``--state`` table has the same cells (3.9 lays it out differently), and ``--list``
(also ``--type``, ``--state``) the same groups.
"""
from __future__ import annotations

import subprocess

import pytest

from tests.support import cluster_clients as clients
from tests.support.broker_process import BrokerProcess
from tests.support.cli_tools import tool
from tests.support.cluster import kafka_tool, wait_for
from tests.support.consumer_protocol import ConfluentMembers, describe_group
from tests.support.java_clients import ROOT, client_jars, compiled

SUFFIX = "cli"      # fixed: test ids must be the same in every xdist worker
ORDERS, AUDIT = f"kip848-orders-{SUFFIX}", f"kip848-audit-{SUFFIX}"
PARTITIONS = {ORDERS: 12, AUDIT: 3}
CONSUMER_GROUP = f"kip848-consumers-{SUFFIX}"
CLASSIC_GROUP = f"kip848-classic-{SUFFIX}"
OFFSETS_GROUP = f"kip848-offsets-only-{SUFFIX}"
GROUPS = (CONSUMER_GROUP, CLASSIC_GROUP, OFFSETS_GROUP)
PER_PARTITION = 4


@pytest.fixture(scope="module")
def broker(tmp_path_factory):
    overrides = {"group.consumer.heartbeat.interval.ms": "1000",
                 "group.consumer.min.heartbeat.interval.ms": "500"}
    with BrokerProcess(tmp_path_factory.mktemp("kip848-cli") / "logs",
                       overrides=overrides).start() as b:
        yield b


@pytest.fixture(scope="module")
def oracle(broker, tmp_path_factory):
    """``view(name, *groups)``: what Kafka 4.x's tool prints (ConsumerGroupsView.java)."""
    client_jars(["4.3.0"])
    java = compiled("4.3.0", [ROOT / "tests" / "java" / "kafka4" / "ConsumerGroupsView.java"],
                    tmp_path_factory.mktemp("kip848-oracle"))

    def view(name: str, *groups: str) -> subprocess.CompletedProcess:
        result = subprocess.run(java.command("ConsumerGroupsView", broker.bootstrap, name, *groups),
                                capture_output=True, text=True, timeout=120)
        assert result.returncode == 0, result.stdout + result.stderr
        return result
    return view


@pytest.fixture(scope="module")
def groups(broker):
    """The module's three groups, settled (see the module docstring)."""
    for topic, count in PARTITIONS.items():
        clients.create_topic(broker.bootstrap, topic, partitions=count)
        clients.produce_confluent(broker.bootstrap, topic, {
            p: clients.record_values(topic, p, PER_PARTITION) for p in range(count)})
    clients.commit_offsets(broker.bootstrap, OFFSETS_GROUP, AUDIT, {0: 1, 2: 3})
    with ConfluentMembers(broker.bootstrap, CONSUMER_GROUP, [ORDERS, AUDIT],
                          ["cli-a", "cli-b", "cli-c"]) as members, \
            ConfluentMembers(broker.bootstrap, CLASSIC_GROUP, [ORDERS, AUDIT], ["cli-classic"],
                             protocol="classic") as classic:
        wait_for(lambda: _settled(broker), 90, lambda: "the consumer group to settle:\n"
                 + describe_group(broker.bootstrap, CONSUMER_GROUP).summary())
        total = sum(PARTITIONS.values()) * PER_PARTITION
        wait_for(lambda: len(set(members.consumed)) == len(set(classic.consumed)) == total
                 and _all_committed(broker), 90, "every record consumed and committed")
        yield describe_group(broker.bootstrap, CONSUMER_GROUP)


def _settled(broker) -> bool:
    view = describe_group(broker.bootstrap, CONSUMER_GROUP)
    wanted = {t: list(range(n)) for t, n in PARTITIONS.items()}
    return (view.settled() and len(view.members) == 3
            and all(view.assigned(t) == parts for t, parts in wanted.items()))


def _all_committed(broker) -> bool:
    return all(clients.committed_offsets(broker.bootstrap, group, t, range(n))
               == {p: PER_PARTITION for p in range(n)}
               for group in (CONSUMER_GROUP, CLASSIC_GROUP) for t, n in PARTITIONS.items())


def ours(broker, *args: str) -> subprocess.CompletedProcess:
    return tool("consumer-groups", "--bootstrap-server", broker.bootstrap, *args)


def kafka_39(broker, *args: str) -> subprocess.CompletedProcess:
    return kafka_tool("kafka-consumer-groups.sh", "--bootstrap-server", broker.bootstrap, *args)


def _group_args(*groups: str) -> list[str]:
    return [arg for g in groups for arg in ("--group", g)]


# --------------------------------------------------------------------------- --describe

@pytest.mark.parametrize("group", GROUPS)
def test_describe_offsets_as_kafka(broker, oracle, groups, group):
    result = ours(broker, "--describe", "--group", group)
    expected = oracle("offsets", group)
    assert (result.returncode, result.stdout) == (0, expected.stdout), result.stderr
    assert result.stderr == expected.stderr
    verbose = ours(broker, "--describe", "--offsets", "--verbose", "--group", group)
    assert verbose.stdout == oracle("offsets-verbose", group).stdout
    # Kafka 3.9's tool prints the same table (without the final line break).
    theirs = kafka_39(broker, "--describe", "--group", group)
    assert result.stdout.rstrip("\n") == theirs.stdout.rstrip("\n"), theirs.stderr


def test_describe_offsets_rows_of_the_consumer_group(broker, groups):
    """Each partition once, with its member (the current assignment), offsets and lag 0."""
    lines = ours(broker, "--describe", "--group", CONSUMER_GROUP).stdout.splitlines()
    rows = [line.split() for line in lines[2:]]
    owner = {(t, p): m for m in groups.members for t, ps in m.assigned.items() for p in ps}
    assert sorted((r[1], int(r[2])) for r in rows) == sorted(owner)
    for group, topic, partition, offset, end, lag, member_id, host, client in rows:
        member = owner[(topic, int(partition))]
        assert (group, offset, end, lag) == (CONSUMER_GROUP, str(PER_PARTITION),
                                              str(PER_PARTITION), "0")
        assert (member_id, host, client) == (member.member_id, member.client_host,
                                             member.client_id)


def test_describe_several_groups_in_name_order(broker, oracle, groups):
    result = ours(broker, "--describe", *_group_args(*reversed(GROUPS)))
    assert result.stdout == oracle("offsets", *GROUPS).stdout


@pytest.mark.parametrize("group", GROUPS)
def test_describe_members_as_kafka(broker, oracle, groups, group):
    result = ours(broker, "--describe", "--members", "--group", group)
    assert result.stdout == oracle("members", group).stdout, result.stderr
    theirs = kafka_39(broker, "--describe", "--members", "--group", group)
    assert result.stdout.rstrip("\n") == theirs.stdout.rstrip("\n"), theirs.stderr
    verbose = ours(broker, "--describe", "--members", "--verbose", "--group", group)
    assert verbose.stdout == oracle("members-verbose", group).stdout, verbose.stderr


def test_members_verbose_columns_of_the_consumer_group(broker, groups):
    """Kafka 4.x's verbose member columns, from the group's ConsumerGroupDescribe answer:
    the member epoch, the current assignment, the target assignment epoch and the target
    assignment (``topic:partitions`` sorted as Kafka sorts them: as strings)."""
    lines = ours(broker, "--describe", "--members", "--verbose",
                 "--group", CONSUMER_GROUP).stdout.splitlines()
    assert lines[1].split() == ["GROUP", "CONSUMER-ID", "HOST", "CLIENT-ID", "#PARTITIONS",
                                "CURRENT-EPOCH", "CURRENT-ASSIGNMENT", "TARGET-EPOCH",
                                "TARGET-ASSIGNMENT"]
    expected = [[CONSUMER_GROUP, m.member_id, m.client_host, m.client_id,
                 str(sum(len(p) for p in m.assigned.values())), str(m.member_epoch),
                 _kafka_assignment(m.assigned), str(groups.assignment_epoch),
                 _kafka_assignment(m.target)] for m in groups.members]
    assert [line.split() for line in lines[2:]] == expected


def _kafka_assignment(assigned: dict[str, tuple[int, ...]]) -> str:
    return ";".join(sorted(f"{t}:" + ",".join(sorted(str(p) for p in ps))
                           for t, ps in assigned.items() if ps)) or "-"


def test_members_of_a_classic_group_have_no_epochs(broker, groups):
    lines = ours(broker, "--describe", "--members", "--verbose",
                 "--group", CLASSIC_GROUP).stdout.splitlines()
    row = lines[2].split()
    every = f"{AUDIT}:0,1,2;{ORDERS}:0,1,10,11,2,3,4,5,6,7,8,9"
    assert row[4:] == ["15", "-", every, "-", "-"], lines


@pytest.mark.parametrize("group", GROUPS)
def test_describe_state_as_kafka(broker, oracle, groups, group):
    result = ours(broker, "--describe", "--state", "--group", group)
    assert result.stdout == oracle("state", group).stdout, result.stderr
    verbose = ours(broker, "--describe", "--state", "--verbose", "--group", group)
    assert verbose.stdout == oracle("state-verbose", group).stdout, verbose.stderr
    # Kafka 3.9 pads the columns otherwise; the cells are the same.
    theirs = kafka_39(broker, "--describe", "--state", "--group", group)
    assert result.stdout.split() == theirs.stdout.split(), theirs.stderr


def test_state_verbose_of_the_consumer_group(broker, groups):
    lines = ours(broker, "--describe", "--state", "--verbose",
                 "--group", CONSUMER_GROUP).stdout.splitlines()
    row = lines[2].split()
    assert row[0] == CONSUMER_GROUP and row[3:] == [
        "uniform", "Stable", str(groups.group_epoch), str(groups.assignment_epoch), "3"]


# --------------------------------------------------------------------------- --list

def test_list_as_kafka(broker, oracle, groups):
    result = ours(broker, "--list")
    assert sorted(result.stdout.splitlines()) == sorted(GROUPS)
    assert sorted(oracle("list").stdout.splitlines()) == sorted(GROUPS)
    assert sorted(kafka_39(broker, "--list").stdout.splitlines()) == sorted(GROUPS)


@pytest.mark.parametrize("options,view", [(["--type"], "list-type"),
                                          (["--type", "--state"], "list-type-state")])
def test_list_types_as_kafka(broker, oracle, groups, options, view):
    result = ours(broker, "--list", *options)
    expected = oracle(view).stdout.splitlines()
    lines = result.stdout.splitlines()
    assert lines[0] == expected[0] and sorted(lines[1:]) == sorted(expected[1:])
    types = {line.split()[0]: line.split()[1:] for line in lines[1:]}
    assert types[CONSUMER_GROUP][0] == "Consumer"
    assert types[CLASSIC_GROUP][0] == types[OFFSETS_GROUP][0] == "Classic"
    theirs = kafka_39(broker, "--list", *options).stdout.splitlines()
    assert theirs[0] == lines[0] and sorted(theirs[1:]) == sorted(lines[1:])


def test_list_filtered_by_type_and_state(broker, groups):
    consumer = ours(broker, "--list", "--type", "consumer").stdout.splitlines()
    assert [line.split() for line in consumer[1:]] == [[CONSUMER_GROUP, "Consumer"]]
    classic = ours(broker, "--list", "--type", "Classic", "--state", "empty").stdout.splitlines()
    assert [line.split() for line in classic[1:]] == [[OFFSETS_GROUP, "Classic", "Empty"]]
    stable = ours(broker, "--list", "--state", "Stable").stdout.splitlines()
    assert sorted(line.split()[0] for line in stable[1:]) == sorted([CONSUMER_GROUP,
                                                                     CLASSIC_GROUP])


def test_type_is_checked(broker):
    bogus = ours(broker, "--list", "--type", "bogus")
    assert bogus.returncode == 1
    assert bogus.stderr.splitlines()[0] == ("Invalid types list 'bogus'. Valid types are: "
                                            "Consumer, Classic, Share")
    describe = ours(broker, "--describe", "--group", CONSUMER_GROUP, "--type")
    assert describe.returncode == 1
    assert "[type]" in describe.stderr.splitlines()[0]


# --------------------------------------------------------------------------- mixed members
# (last: the group it makes stays listed)

def test_members_verbose_of_a_group_with_a_classic_member(broker, oracle, groups):
    """A classic member in a consumer-protocol group (the upgrade path): Kafka 4.x adds the
    UPGRADED column (true for the consumer-protocol member, false for the classic one)."""
    group = f"kip848-mixed-{SUFFIX}"
    with ConfluentMembers(broker.bootstrap, group, [AUDIT], ["cli-new"]):
        wait_for(lambda: describe_group(broker.bootstrap, group).settled(), 60,
                 "the consumer-protocol member alone")
        with ConfluentMembers(broker.bootstrap, group, [AUDIT], ["cli-old"], protocol="classic"):
            def mixed():
                view = describe_group(broker.bootstrap, group)
                return view if view.settled() and len(view.members) == 2 else None
            view = wait_for(mixed, 90, lambda: "both members Stable:\n"
                            + describe_group(broker.bootstrap, group).summary())
            result = ours(broker, "--describe", "--members", "--verbose", "--group", group)
            expected = oracle("members-verbose", group)
    assert result.stdout == expected.stdout, result.stderr
    lines = result.stdout.splitlines()
    assert lines[1].split()[-1] == "UPGRADED"
    upgraded = {line.split()[3]: line.split()[-1] for line in lines[2:]}
    assert upgraded == {"cli-new": "true", "cli-old": "false"}, view.summary()
