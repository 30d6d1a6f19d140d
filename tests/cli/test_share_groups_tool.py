"""``kafkapy-share-groups`` against a real kafkapy broker, beside what Kafka 4.x's
kafka-share-groups.sh prints for the same groups.

Kafka's tool is not at hand as a program: its oracle is tests/java/kafka4/ShareGroupsView.java,
Kafka 4.3's Admin client (the calls ShareGroupCommand makes: listGroups for share groups,
describeShareGroups, listShareGroupOffsets, alterShareGroupOffsets, deleteShareGroupOffsets,
deleteShareGroups) printed by the tool's rules, so values, row orders and column widths are
Java's own.  One broker for the module holds:
- ``sg-stable``: two members (raw ShareGroupHeartbeats from a thread of the test, every
  0.5 s) on ``sg-orders`` (3 partitions) and ``sg-audit`` (1), their share partitions
  initialized;
- groups the tests make Empty by setting offsets (``--reset-offsets --execute``, or the Java
  Admin's alterShareGroupOffsets), which AlterShareGroupOffsets creates.
Each view is compared byte for byte; a change made by the tool on one group and by the Java
Admin on another leaves both groups alike.
"""
from __future__ import annotations

import subprocess
import threading
import time

import pytest

import kafkapy.protocol.share_group_apis  # noqa: F401  (registers the share group APIs)
from tests.support import cluster_clients as clients
from tests.support.broker_process import BrokerProcess
from tests.support.cli_tools import tool
from tests.support.cluster import wait_for
from tests.support.java_clients import ROOT, client_jars, compiled
from tests.support.share_clients import SHARE_OVERRIDES
from tests.support.wire import WireClient

ORDERS, AUDIT = "sg-orders", "sg-audit"
PARTITIONS = {ORDERS: 3, AUDIT: 1}
PER_PARTITION = 5
STABLE = "sg-stable"
MEMBERS = ("sg-member-a-0000000000", "sg-member-b-0000000000")
FIND_COORDINATOR, SHARE_GROUP_HEARTBEAT = 10, 76


class RawMembers:
    """Share group members kept alive by heartbeats (ShareGroupHeartbeat v1) from a thread;
    ``assigned`` holds each member's last assignment (topic id -> partitions)."""

    def __init__(self, bootstrap: str, group: str, member_ids, topics) -> None:
        self._bootstrap, self._group, self._topics = bootstrap, group, list(topics)
        self.epochs = {m: 0 for m in member_ids}
        self.assigned: dict[str, dict] = {m: {} for m in member_ids}
        self.errors: list[str] = []
        self._stop = threading.Event()
        self._thread = threading.Thread(target=self._run, daemon=True)

    def __enter__(self) -> "RawMembers":
        self._thread.start()
        return self

    def __exit__(self, *exc) -> None:
        self._stop.set()
        self._thread.join(10)

    def _run(self) -> None:
        wire = WireClient(self._bootstrap, client_id="sg-cli")
        try:
            while (not self._stop.is_set() and wire.request(
                    FIND_COORDINATOR, 4, key_type=0,
                    coordinator_keys=[self._group]).coordinators[0].error_code):
                self._stop.wait(0.2)     # the first asks make __consumer_offsets
            while not self._stop.is_set():
                for member in self.epochs:
                    self._beat(wire, member)
                self._stop.wait(0.5)
            for member in self.epochs:
                self._beat(wire, member, leave=True)
        finally:
            wire.close()

    def _beat(self, wire: WireClient, member: str, leave: bool = False) -> None:
        epoch = -1 if leave else self.epochs[member]
        r = wire.request(SHARE_GROUP_HEARTBEAT, 1, group_id=self._group, member_id=member,
                         member_epoch=epoch, rack_id=None,
                         subscribed_topic_names=self._topics if epoch == 0 else None)
        if r.error_code:
            self.errors.append(f"{member}: {r.error_code} {r.error_message}")
            self.epochs[member] = 0
            return
        self.epochs[member] = r.member_epoch
        if r.assignment is not None:
            self.assigned[member] = {t.topic_id: list(t.partitions)
                                     for t in r.assignment.topic_partitions}


@pytest.fixture(scope="module")
def broker(tmp_path_factory):
    with BrokerProcess(tmp_path_factory.mktemp("share-groups-cli") / "logs",
                       overrides=SHARE_OVERRIDES).start() as b:
        yield b


@pytest.fixture(scope="module")
def oracle(broker, tmp_path_factory):
    """``view(*commands)``: what Kafka 4.x's tool prints for each command (a list of
    arguments of ShareGroupsView.java), all in one JVM."""
    client_jars(["4.3.0"])
    java = compiled("4.3.0", [ROOT / "tests" / "java" / "kafka4" / "ShareGroupsView.java"],
                    tmp_path_factory.mktemp("share-groups-oracle"))

    def view(*commands: list[str]) -> list[str]:
        args = [a for i, c in enumerate(commands) for a in ([] if i == 0 else ["--"]) + list(c)]
        done = subprocess.run(java.command("ShareGroupsView", broker.bootstrap, *args),
                              capture_output=True, text=True, timeout=120)
        assert done.returncode == 0, done.stdout + done.stderr
        blocks = done.stdout.split("=== ")[1:]
        return [block.split("\n", 1)[1] for block in blocks]
    return view


@pytest.fixture(scope="module")
def stable(broker):
    """The module's topics and its stable group, every partition assigned."""
    for topic, count in PARTITIONS.items():
        clients.create_topic(broker.bootstrap, topic, partitions=count)
        clients.produce_confluent(broker.bootstrap, topic, {
            p: clients.record_values(topic, p, PER_PARTITION) for p in range(count)})
    with RawMembers(broker.bootstrap, STABLE, MEMBERS, PARTITIONS) as members:
        wait_for(lambda: _all_assigned(members), 60,
                 lambda: f"every partition assigned: {members.assigned} {members.errors[-4:]}")
        yield members


def _all_assigned(members: RawMembers) -> bool:
    held = {(t, p) for a in members.assigned.values() for t, ps in a.items() for p in ps}
    return len(held) == sum(PARTITIONS.values()) and all(members.assigned.values())


def ours(broker, *args: str) -> subprocess.CompletedProcess:
    return tool("share-groups", "--bootstrap-server", broker.bootstrap, *args)


def _groups(*groups: str) -> list[str]:
    return [arg for g in groups for arg in ("--group", g)]


# -- --list and --describe: byte for byte with Kafka's ----------------------------------------

def test_views_as_kafka_prints_them(broker, oracle, stable):
    empty = "sg-views-empty"
    assert ours(broker, "--reset-offsets", "--group", empty, "--topic", f"{ORDERS}:0,2",
                "--to-latest", "--execute").returncode == 0
    groups = [STABLE, empty]
    views = {"offsets": [], "offsets-verbose": ["--verbose"], "members": ["--members"],
             "members-verbose": ["--members", "--verbose"], "state": ["--state"],
             "state-verbose": ["--state", "--verbose"]}
    expected = oracle(["list"], ["list-state"], ["list-state", "Stable"],
                      *([name, *groups] for name in views))
    assert ours(broker, "--list").stdout == expected[0]      # Java's HashMap order
    assert ours(broker, "--list", "--state").stdout == expected[1]
    assert ours(broker, "--list", "--state", "stable").stdout == expected[2]
    for (name, args), want in zip(views.items(), expected[3:]):
        result = ours(broker, "--describe", *_groups(*groups), *args)
        assert result.returncode == 0, (name, result.stdout, result.stderr)
        assert result.stdout == want, name
        if name != "offsets" and name != "offsets-verbose":
            assert f"Share group '{empty}' has no active members." in result.stderr


def test_the_stable_group_shows_its_members_and_start_offsets(broker, stable):
    members = ours(broker, "--describe", "--group", STABLE, "--members").stdout.splitlines()
    assert [line.split()[1] for line in members[2:]] == sorted(MEMBERS)
    state = ours(broker, "--describe", "--group", STABLE, "--state").stdout.splitlines()
    assert state[2].split()[-2:] == ["Stable", "2"]
    offsets = ours(broker, "--describe", "--group", STABLE).stdout.splitlines()
    assert [line.split()[1:3] for line in offsets[2:]] == [
        [AUDIT, "0"], [ORDERS, "0"], [ORDERS, "1"], [ORDERS, "2"]]


def test_an_unknown_group_fails_as_kafkas_tool_does(broker, oracle, stable):
    [expected] = oracle(["offsets", "sg-nobody"])
    result = ours(broker, "--describe", "--group", "sg-nobody")
    assert result.stdout == expected
    assert "GroupIdNotFoundException: Group sg-nobody not found." in result.stdout
    assert result.returncode == 1


# -- --reset-offsets ------------------------------------------------------------------------

def test_reset_offsets_sets_what_kafkas_admin_sets(broker, oracle, stable):
    plan = ours(broker, "--reset-offsets", "--group", "sg-reset-ours", "--topic", ORDERS,
                "--topic", f"{AUDIT}:0", "--to-earliest", "--dry-run")
    assert plan.returncode == 0, plan.stdout + plan.stderr
    rows = [line.split() for line in plan.stdout.splitlines()[2:]]
    assert sorted((t, int(p), int(o)) for _, t, p, o in rows) == [
        (AUDIT, 0, 0), (ORDERS, 0, 0), (ORDERS, 1, 0), (ORDERS, 2, 0)]
    assert "sg-reset-ours" not in ours(broker, "--list").stdout       # a dry run
    done = ours(broker, "--reset-offsets", "--group", "sg-reset-ours", "--topic", ORDERS,
                "--topic", f"{AUDIT}:0", "--to-earliest", "--execute")
    assert (done.returncode, done.stdout) == (0, plan.stdout)
    altered = oracle(["alter", "sg-reset-java", f"{ORDERS}:0=0", f"{ORDERS}:1=0",
                      f"{ORDERS}:2=0", f"{AUDIT}:0=0"])
    assert "OK" in altered[0] and "Exception" not in altered[0]
    ours_view, java_view = oracle(["offsets-verbose", "sg-reset-ours"],
                                  ["offsets-verbose", "sg-reset-java"])
    assert ours_view.replace("sg-reset-ours", "sg-reset-java") == java_view
    assert ours(broker, "--describe", "--group", "sg-reset-ours", "--verbose").stdout == ours_view


def test_reset_offsets_of_a_group_with_members_is_refused(broker, oracle, stable):
    result = ours(broker, "--reset-offsets", "--group", STABLE, "--all-topics", "--to-latest",
                  "--execute")
    assert (result.returncode, result.stderr.strip()) == (
        1, f"Share group '{STABLE}' is not empty.")
    [answer] = oracle(["alter", STABLE, f"{ORDERS}:0=1"])
    assert answer.splitlines()[0] == (f"{ORDERS}-0 org.apache.kafka.common.errors."
                                      "GroupNotEmptyException: The group is not empty.")


def test_reset_offsets_to_a_datetime(broker, stable):
    future = ours(broker, "--reset-offsets", "--group", "sg-reset-time", "--topic", f"{AUDIT}:0",
                  "--to-datetime", "2999-01-01T00:00:00.000", "--dry-run")
    assert "Partition 0 from topic sg-audit is empty. Falling back to latest known offset." \
        in future.stdout
    assert future.stdout.splitlines()[-1].split() == ["sg-reset-time", AUDIT, "0",
                                                      str(PER_PARTITION)]
    past = ours(broker, "--reset-offsets", "--group", "sg-reset-time", "--topic", f"{AUDIT}:0",
                "--to-datetime", "2000-01-01T00:00:00.000", "--dry-run")
    assert past.stdout.splitlines()[-1].split()[-1] == "0"


# -- --delete-offsets and --delete ----------------------------------------------------------

def test_delete_offsets_answers_as_kafkas_admin(broker, oracle, stable):
    for group in ("sg-delete-ours", "sg-delete-java"):
        assert ours(broker, "--reset-offsets", "--group", group, "--topic", ORDERS, "--to-latest",
                    "--execute").returncode == 0
    topics = [ORDERS, AUDIT, "sg-nosuch"]
    result = ours(broker, "--delete-offsets", "--group", "sg-delete-ours",
                  *[a for t in topics for a in ("--topic", t)])
    java, after_ours, after_java, non_empty = oracle(
        ["delete-offsets", "sg-delete-java", *topics], ["offsets", "sg-delete-ours"],
        ["offsets", "sg-delete-java"], ["delete-offsets", STABLE, ORDERS])
    assert result.stdout == java
    assert f"{ORDERS:<15} Successful" in java
    assert "Error: There is no offset information to delete." in java
    assert after_ours == "\nShare group 'sg-delete-ours' has no offset information.\n"
    assert after_java == after_ours.replace("ours", "java")
    refused = ours(broker, "--delete-offsets", "--group", STABLE, "--topic", ORDERS)
    assert (refused.stdout, refused.returncode) == (non_empty, 1)


def test_delete_deletes_empty_share_groups_only(broker, oracle, stable):
    for group in ("sg-gone-ours", "sg-gone-java"):
        assert ours(broker, "--reset-offsets", "--group", group, "--topic", AUDIT, "--to-latest",
                    "--execute").returncode == 0
    result = ours(broker, "--delete", *_groups("sg-gone-ours", "sg-never", STABLE))
    [java] = oracle(["delete", "sg-gone-java", "sg-never", STABLE])
    assert result.returncode == 1
    assert sorted(result.stdout.replace("ours", "java").splitlines()) == sorted(java.splitlines())
    assert "These share groups were deleted successfully: 'sg-gone-ours'" in result.stdout
    listed = ours(broker, "--list").stdout.split()
    assert "sg-gone-ours" not in listed and "sg-gone-java" not in listed and STABLE in listed
    gone = ours(broker, "--delete", "--group", "sg-views-empty")
    assert gone.stdout == "Deletion of requested share groups ('sg-views-empty') was successful.\n"


# -- usage --------------------------------------------------------------------------------------

@pytest.mark.parametrize("args,message", [
    ([], 'Missing required argument "[bootstrap-server]"'),
    (["--bootstrap-server", "x:1"], "Command must include exactly one action: --list, "
     "--describe, --delete, --reset-offsets, --delete-offsets."),
    (["--bootstrap-server", "x:1", "--describe"],
     "Option [describe] takes one of these options: [all-groups], [group]"),
    (["--bootstrap-server", "x:1", "--reset-offsets", "--group", "g", "--topic", "t",
      "--to-latest"], "Option [reset-offsets] takes the option: [execute] or [dry-run]"),
    (["--bootstrap-server", "x:1", "--list", "--members"],
     "Option(s) [members] are unavailable given other options on the command line"),
    (["--bootstrap-server", "x:1", "--list", "--state", "Assigning"],
     "Invalid state list 'Assigning'. Valid states are: Stable, Dead, Empty"),
])
def test_usage_errors(args, message):
    result = tool("share-groups", *args)
    assert (result.returncode, result.stderr.splitlines()[0]) == (1, message)
