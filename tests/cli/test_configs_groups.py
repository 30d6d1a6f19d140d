"""``kafkapy-configs`` for groups (``--entity-type groups``, ``--group``) against a real kafkapy
broker, beside what Kafka 4.x's kafka-configs.sh prints for the same groups.

Kafka 3.9's kafka-configs.sh refuses ``--entity-type groups``, so Kafka's tool is not at hand as
a program: its oracle is tests/java/kafka4/GroupConfigsView.java, Kafka 4.3's Admin client (the
calls ConfigCommand makes for groups: listGroups, listConfigResources, describeConfigs and
incrementalAlterConfigs on ConfigResource.Type.GROUP) printed by the tool's rules.  A change
made by this tool on one group and by the Java Admin on another leaves both described alike,
byte for byte, by both.  Kafka 4.1+'s ListConfigResources, which kafkapy does not serve, is
exercised against a stand-in admin client (``FakeAdmin``).
"""
from __future__ import annotations

import subprocess

import pytest
from kafka import TopicPartition
from kafka.admin import KafkaAdminClient
from kafka.errors import NoError, UnsupportedVersionError
from kafka.structs import OffsetAndMetadata

from kafkapy.cli import configs
from tests.support.broker_process import BrokerProcess
from tests.support.cli_tools import tool
from tests.support.cluster import wait_for
from tests.support.java_clients import ROOT, client_jars, compiled
from tests.support.share_clients import SHARE_OVERRIDES

README_SETTINGS = {"share.auto.offset.reset": "earliest", "share.delivery.count.limit": "4",
                   "kafkapy.share.redelivery.backoff.ms": "1000",
                   "errors.deadletterqueue.topic.name": "dlq.jobs"}
# More groups than a 16-bucket HashSet holds before it grows (12), so the order is Java's.
LISTED_GROUPS = [f"cfg-listed-{i}" for i in range(14)]


@pytest.fixture(scope="module")
def broker(tmp_path_factory):
    with BrokerProcess(tmp_path_factory.mktemp("configs-groups") / "logs",
                       overrides=SHARE_OVERRIDES).start() as b:
        yield b


@pytest.fixture(scope="module")
def oracle(broker, tmp_path_factory):
    """``view(*commands)``: what Kafka 4.x's tool prints for each command (the arguments of
    GroupConfigsView.java), all in one JVM."""
    client_jars(["4.3.0"])
    java = compiled("4.3.0", [ROOT / "tests" / "java" / "kafka4" / "GroupConfigsView.java"],
                    tmp_path_factory.mktemp("group-configs-oracle"))

    def view(*commands: list[str]) -> list[str]:
        args = [a for i, c in enumerate(commands) for a in ([] if i == 0 else ["--"]) + list(c)]
        done = subprocess.run(java.command("GroupConfigsView", broker.bootstrap, *args),
                              capture_output=True, text=True, timeout=120)
        assert done.returncode == 0, done.stdout + done.stderr
        return [block.split("\n", 1)[1] for block in done.stdout.split("=== ")[1:]]
    return view


def ours(broker, *args: str) -> subprocess.CompletedProcess:
    return tool("configs", "--bootstrap-server", broker.bootstrap, *args)


def add_config(settings: dict[str, str]) -> str:
    return ",".join(f"{k}={v}" for k, v in settings.items())


def test_alter_and_describe_as_kafka(broker, oracle):
    """The README's four settings, set by this tool on one group and by the Java Admin on
    another: both tools describe both groups alike (dynamic, and --all)."""
    done = ours(broker, "--alter", "--entity-type", "groups", "--entity-name", "cfg-ours",
                "--add-config", add_config(README_SETTINGS))
    assert (done.returncode, done.stdout, done.stderr) == (
        0, "Completed updating config for group cfg-ours.\n", "")
    (java_alter,) = oracle(["alter", "cfg-java", *[f"{k}={v}" for k, v in README_SETTINGS.items()]])
    assert java_alter == "Completed updating config for group cfg-java.\n"

    kafka = oracle(["describe", "cfg-ours"], ["describe", "cfg-java"],
                   ["describe-all", "cfg-ours"])
    mine = [ours(broker, "--describe", "--entity-type", "groups", "--entity-name", "cfg-ours"),
            ours(broker, "--describe", "--group", "cfg-java"),
            ours(broker, "--describe", "--all", "--group", "cfg-ours")]
    assert [r.stdout for r in mine] == kafka
    assert kafka[1] == kafka[0].replace("cfg-ours", "cfg-java")
    assert kafka[0].splitlines() == ["Dynamic configs for group cfg-ours are:"] + [
        f"  {k}={v} sensitive=false synonyms={{DYNAMIC_GROUP_CONFIG:{k}={v}}}"
        for k, v in sorted(README_SETTINGS.items())]
    assert "  share.isolation.level=read_uncommitted sensitive=false synonyms={DEFAULT_CONFIG:" \
           "share.isolation.level=read_uncommitted}" in kafka[2].splitlines()


def test_delete_config_as_kafka(broker, oracle):
    """--delete-config on one group by each tool; a key that is not set is refused by both."""
    for group in ("cfg-del-ours", "cfg-del-java"):
        assert ours(broker, "--alter", "--group", group, "--add-config",
                    "share.record.lock.duration.ms=15000,share.isolation.level=read_committed"
                    ).returncode == 0
    done = ours(broker, "--alter", "--group", "cfg-del-ours", "--delete-config",
                "share.isolation.level")
    assert done.stdout == "Completed updating config for group cfg-del-ours.\n", done.stderr
    unset = ours(broker, "--alter", "--group", "cfg-del-ours", "--delete-config",
                 "share.isolation.level")
    kafka = oracle(["alter", "cfg-del-java", "-share.isolation.level"],
                   ["alter", "cfg-del-java", "-share.isolation.level"],
                   ["describe", "cfg-del-ours"], ["describe", "cfg-del-java"])
    assert kafka[0] == "Completed updating config for group cfg-del-java.\n"
    assert (unset.returncode, unset.stderr) == (1, "Invalid config(s): share.isolation.level\n")
    assert kafka[1] == "Invalid config(s): share.isolation.level\n"
    assert ours(broker, "--describe", "--group", "cfg-del-ours").stdout == kafka[2]
    assert kafka[2].splitlines()[1:] == [
        "  share.record.lock.duration.ms=15000 sensitive=false "
        "synonyms={DYNAMIC_GROUP_CONFIG:share.record.lock.duration.ms=15000}"]
    assert kafka[3] == kafka[2].replace("cfg-del-ours", "cfg-del-java")


def test_refused_settings_report_the_brokers_reason(broker, oracle):
    kafka = oracle(["alter", "cfg-bad", "foo=1"],
                   ["alter", "cfg-bad", "share.delivery.count.limit=1"])
    for setting, line in zip(("foo=1", "share.delivery.count.limit=1"), kafka):
        done = ours(broker, "--alter", "--group", "cfg-bad", "--add-config", setting)
        reason = line.removeprefix("Error: org.apache.kafka.common.errors."
                                   "InvalidConfigurationException: ")
        assert reason != line, line
        assert (done.returncode, done.stdout) == (1, "")
        assert done.stderr.splitlines() == [
            f"Error while executing config command with args '--bootstrap-server "
            f"{broker.bootstrap} --alter --group cfg-bad --add-config {setting}'", reason.strip()]
    assert ours(broker, "--describe", "--group", "cfg-bad").stdout == (
        "Dynamic configs for group cfg-bad are:\n")


def test_every_group_in_kafkas_order(broker, oracle):
    """Without a name: every group ListGroups names (classic and share groups), each described,
    in the order of Kafka's tool; a group no one knows is described (empty) by both, since
    kafkapy does not serve ListConfigResources."""
    admin = KafkaAdminClient(bootstrap_servers=broker.bootstrap)
    try:
        assert ours(broker, "--describe", "--group", "cfg-unknown").stdout == (
            "Dynamic configs for group cfg-unknown are:\n")
        tool("topics", "--bootstrap-server", broker.bootstrap, "--create", "--topic",
             "cfg-topic", "--partitions", "1")
        offsets = {TopicPartition("cfg-topic", 0): OffsetAndMetadata(0, "", -1)}
        for group in LISTED_GROUPS:    # the first waits for __consumer_offsets
            wait_for(lambda: set(admin.alter_group_offsets(group, offsets).values())
                     == {NoError}, 30, f"offsets committed for {group}")
        shared = tool("share-groups", "--bootstrap-server", broker.bootstrap, "--reset-offsets",
                      "--group", "cfg-share", "--topic", "cfg-topic", "--to-earliest",
                      "--execute")
        assert shared.returncode == 0, shared.stdout + shared.stderr
        assert ours(broker, "--alter", "--group", LISTED_GROUPS[3], "--add-config",
                    "consumer.session.timeout.ms=50000").returncode == 0
    finally:
        admin.close()
    kafka_all, kafka_unknown = oracle(["describe"], ["describe", "cfg-unknown"])
    mine = ours(broker, "--describe", "--entity-type", "groups")
    assert mine.stdout == kafka_all
    headers = [line for line in kafka_all.splitlines() if line.startswith("Dynamic")]
    described = {h.removeprefix("Dynamic configs for group ").removesuffix(" are:")
                 for h in headers}
    assert described == {*LISTED_GROUPS, "cfg-share"}
    assert [h.split()[4] for h in headers] != sorted(described)     # Java's order, not sorted
    assert kafka_unknown == "Dynamic configs for group cfg-unknown are:\n"


def test_usage_errors_as_kafka():
    """Kafka's words for what --entity-default cannot do with groups; no broker needed."""
    base = ("--bootstrap-server", "127.0.0.1:1", "--entity-type", "groups")
    cases = {("--describe", "--entity-default"):
             "--entity-default must not be specified with --describe of groups",
             ("--alter", "--entity-default", "--add-config", "a=1"):
             "An entity name must be specified with --alter of groups",
             ("--alter", "--add-config", "a=1"):
             "An entity name must be specified with --alter of groups"}
    for args, message in cases.items():
        done = tool("configs", *base, *args)
        assert (done.returncode, done.stdout) == (1, ""), done.stderr
        assert message in done.stderr, done.stderr


# -- Kafka 4.1+'s ListConfigResources (a broker kafkapy does not stand in for) -----------------

class FakeAdmin:
    """The admin client calls the groups path makes: ListGroups, ListConfigResources (or
    UnsupportedVersionError without it), DescribeConfigs through ``common.send``."""

    def __init__(self, groups: list[str], resources: list[str] | None) -> None:
        self.groups, self.resources = groups, resources

    def list_groups(self):
        return [{"group_id": g} for g in self.groups]

    def list_config_resources(self, resource_types):
        assert resource_types == ["GROUP"]
        if self.resources is None:
            raise UnsupportedVersionError("ListConfigResourcesRequest")
        return {"group": list(self.resources)} if self.resources else {}


@pytest.fixture
def described(monkeypatch):
    """The groups DescribeConfigs was sent for, each answered with no settings."""
    seen: list[str] = []

    def entries(admin, kind, name, describe_all, synonyms):
        assert kind == configs.GROUP
        seen.append(name)
        return []
    monkeypatch.setattr(configs, "_entries", entries)
    return seen


@pytest.mark.parametrize("groups, resources, shown", [
    ([], [], False),                       # known to neither list
    (["g"], [], True),                     # a group
    ([], ["g"], True),                     # settings only
    ([], None, True),                      # no ListConfigResources: Kafka's tool describes it
])
def test_unknown_group_rule(capsys, described, groups, resources, shown):
    configs._describe(FakeAdmin(groups, resources), configs.GROUP, "g", False)
    expected = ("Dynamic configs for group g are:\n" if shown else
                "The group 'g' doesn't exist and doesn't have dynamic config.\n")
    assert (capsys.readouterr().out, described) == (expected, ["g"] if shown else [])


def test_every_group_with_config_resources(capsys, described):
    """Groups and config resources gathered as Kafka's tool does: a HashSet of the groups,
    copied, the resources added (the table grown past 12), iterated."""
    groups = ["alpha", "beta", "delta", "orders", "audit", "billing"]
    resources = ["beta", "res-0", "res-1", "res-2", "res-3", "res-4", "res-7", "res-8", "res-10"]
    configs._describe(FakeAdmin(groups, resources), configs.GROUP, None, False)
    assert sorted(described) == sorted(set(groups) | set(resources))
    # java.util.HashSet<String> of these 14 names (String.hashCode, 32 buckets) iterates so:
    assert described == java_order(set(groups) | set(resources))


def java_order(names: set[str]) -> list[str]:
    """A HashSet's iteration order, computed here from String.hashCode independently of
    kafkapy.jvm: bucket (h ^ h >>> 16) & (n - 1) of the table length n; no two of the test's
    names share a bucket, so insertion order never matters."""
    def string_hash(text: str) -> int:
        h = 0
        for ch in text:
            h = (31 * h + ord(ch)) & 0xFFFFFFFF
        return h
    length = 32
    buckets = {name: (string_hash(name) ^ (string_hash(name) >> 16)) & (length - 1)
               for name in names}
    assert len(set(buckets.values())) == len(names), "names sharing a bucket"
    return sorted(names, key=buckets.__getitem__)
