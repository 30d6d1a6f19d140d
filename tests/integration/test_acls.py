"""The AclAuthorizer on a real kafkapy broker over a real ZooKeeper, with Kafka 3.9's tools.

- Kafka's own ``kafka-acls.sh --bootstrap-server`` adds, lists and removes ACLs on kafkapy;
  ``kafkapy-acls`` prints what it prints;
- the znodes kafkapy writes are byte-equal to those Kafka's AclAuthorizer writes for the
  same commands (``kafka-acls.sh --authorizer-properties zookeeper.connect=...`` into
  another chroot of the same ZooKeeper), change notifications included;
- enforcement on a PLAINTEXT listener, whose principal is ``User:ANONYMOUS``, with
  ``allow.everyone.if.no.acl.found=false``: ACLs written by Kafka's tool straight into
  ZooKeeper reach the broker through the change notifications; a topic without DESCRIBE is
  hidden from Metadata and refused (TOPIC_AUTHORIZATION_FAILED) when named, without READ
  its fetch is refused, without WRITE its produce; groups (GROUP_AUTHORIZATION_FAILED),
  transactional ids (TRANSACTIONAL_ID_AUTHORIZATION_FAILED), the cluster
  (CLUSTER_AUTHORIZATION_FAILED for DescribeAcls); a DENY wins over an ALLOW; a super
  user passes everything; a follower fetch needs CLUSTER_ACTION;
- an ACL created through one broker applies on another (change notifications); three brokers
  whose principal is a super user replicate with no ACLs and no allow-everyone.
"""
from __future__ import annotations

import json
import uuid

import pytest
from kazoo.client import KazooClient

from kafkapy.cli import acls as acls_cli
from kafkapy.protocol.errors import ErrorCode
from tests.support.acls import (ACLS_SH, _create_topic, _fetch, _kafka_acls, _metadata, _produce,
                                _until)
from tests.support.broker_process import BrokerProcess
from tests.support.request_fields import fields
from tests.support.wire import WireClient
from tests.support.zookeeper_server import zk_connect, zookeeper_server  # noqa: F401 (fixtures)

AUTHORIZER = "kafka.security.authorizer.AclAuthorizer"

pytestmark = pytest.mark.skipif(not ACLS_SH.exists(), reason="Kafka 3.9 tools not found")


def _broker(tmp_path, zk_connect, **overrides) -> BrokerProcess:  # noqa: F811
    settings = {"zookeeper.connect": zk_connect, "authorizer.class.name": AUTHORIZER,
                "num.partitions": "1", "offsets.topic.replication.factor": "1",
                "offsets.topic.num.partitions": "1", "transaction.state.log.replication.factor": "1",
                "transaction.state.log.min.isr": "1"}
    settings.update(overrides)
    return BrokerProcess(tmp_path / "logs", overrides=settings).start()


def _dump(zk: KazooClient, roots) -> dict[str, bytes | None]:
    out = {}

    def walk(path: str) -> None:
        data, _ = zk.get(path)
        out[path] = data
        for child in sorted(zk.get_children(path)):
            walk(f"{path}/{child}")
    for root in roots:
        if zk.exists(root):
            walk(root)
    return out


def _canonical(data: bytes):
    doc = json.loads(data)
    return {**doc, "acls": sorted(json.dumps(a) for a in doc["acls"])}


def _lines(text: str) -> list[str]:
    """Kafka prints a resource's entries from a hash set: compared as sorted, stripped lines."""
    return sorted(line.strip() for line in text.splitlines())


_ROOTS = ("/kafka-acl", "/kafka-acl-extended", "/kafka-acl-changes", "/kafka-acl-extended-changes")
_COMMANDS = [
    ("--add", "--allow-principal", "User:alice", "--operation", "Read", "--operation", "Write", "--topic", "foo"),
    ("--add", "--deny-principal", "User:bob", "--deny-host", "10.0.0.1", "--operation", "Describe",
     "--topic", "foo"),
    ("--add", "--allow-principal", "User:alice", "--operation", "All", "--topic", "pre",
     "--resource-pattern-type", "prefixed"),
    ("--add", "--allow-principal", "User:alice", "--operation", "ClusterAction", "--cluster"),
    ("--add", "--allow-principal", "User:alice", "--consumer", "--topic", "t2", "--group", "g1"),
    ("--remove", "--force", "--allow-principal", "User:alice", "--operation", "Write", "--topic", "foo"),
]


def test_kafka_tool_on_kafkapy_and_znodes_equal_kafkas(tmp_path, zk_connect, capsys):  # noqa: F811
    """Kafka's kafka-acls.sh through kafkapy, and straight into ZooKeeper as Kafka's
    AclAuthorizer writes: the same znodes, byte for byte."""
    server, _, chroot = zk_connect.partition("/")
    reference = f"{server}/ref-{uuid.uuid4().hex[:8]}"
    zk_ref = KazooClient(server)
    zk_ref.start()
    zk_ref.ensure_path("/" + reference.partition("/")[2])
    broker = _broker(tmp_path, zk_connect, **{"super.users": "User:ANONYMOUS"})
    zk = KazooClient(zk_connect)
    zk.start()
    try:
        for command in _COMMANDS:
            ours = _kafka_acls("--bootstrap-server", broker.bootstrap, *command)
            assert ours.returncode == 0, ours.stderr
            theirs = _kafka_acls("--authorizer-properties", f"zookeeper.connect={reference}", *command)
            assert theirs.returncode == 0, theirs.stderr
            assert _lines(ours.stdout) == _lines(theirs.stdout)
        zk_kafka = KazooClient(reference)
        zk_kafka.start()
        try:
            expected = _dump(zk_kafka, _ROOTS)
        finally:
            zk_kafka.stop()
        got = _dump(zk, _ROOTS)
        # Kafka's authorizer makes the type nodes with null data; values compared on ACL nodes.
        # Byte for byte, up to the order of the entries one command added together (both the
        # tool and Kafka's authorizer iterate a Java hash set there).
        assert {p for p, v in got.items() if v} == {p for p, v in expected.items() if v}
        for path, value in expected.items():
            if value:
                assert got[path] == value or _canonical(got[path]) == _canonical(value), path
        assert set(expected) <= set(got)
        assert got["/kafka-acl/Topic/foo"] == (
            b'{"acls":[{"principal":"User:alice","permissionType":"Allow","host":"*","operation":"Read"},'
            b'{"principal":"User:bob","permissionType":"Deny","host":"10.0.0.1","operation":"Describe"}],'
            b'"version":1}')

        listed = _kafka_acls("--bootstrap-server", broker.bootstrap, "--list", "--topic", "foo")
        assert listed.returncode == 0, listed.stderr
        assert acls_cli.main(["--bootstrap-server", broker.bootstrap, "--list", "--topic", "foo"]) == 0
        mine = capsys.readouterr().out
        # Within a resource Kafka prints a hash set: compare the lines, not their order.
        assert _lines(mine) == _lines(listed.stdout)
        assert "Current ACLs for resource `ResourcePattern(resourceType=TOPIC, name=foo, " \
               "patternType=LITERAL)`:" in mine

        # kafkapy-acls adds what kafka-acls.sh adds (same output, same znode)
        args = ("--add", "--allow-principal", "User:carol", "--operation", "Describe", "--group", "gc")
        assert acls_cli.main(["--bootstrap-server", broker.bootstrap, *args]) == 0
        mine = capsys.readouterr().out
        theirs = _kafka_acls("--authorizer-properties", f"zookeeper.connect={reference}", *args)
        assert _lines(mine) == _lines(theirs.stdout)
        zk_kafka = KazooClient(reference)
        zk_kafka.start()
        try:
            assert zk.get("/kafka-acl/Group/gc")[0] == zk_kafka.get("/kafka-acl/Group/gc")[0]
        finally:
            zk_kafka.stop()
    finally:
        zk.stop()
        zk_ref.stop()
        broker.stop()


# -- enforcement -----------------------------------------------------------------------

def _grant(zk_connect: str, *args: str) -> None:  # noqa: F811
    done = _kafka_acls("--authorizer-properties", f"zookeeper.connect={zk_connect}", "--add", *args)
    assert done.returncode == 0, done.stderr


@pytest.fixture
def locked_broker(tmp_path, zk_connect):  # noqa: F811
    # The admin ACLs are Kafka's writes into ZooKeeper before the broker starts: loaded at start-up.
    _grant(zk_connect, "--allow-principal", "User:ANONYMOUS", "--operation", "Create", "--operation",
           "Describe", "--cluster")
    broker = _broker(tmp_path, zk_connect, **{"allow.everyone.if.no.acl.found": "false"})
    wire = WireClient(broker.bootstrap)
    try:
        yield broker, wire
    finally:
        wire.close()
        broker.stop()


def test_anonymous_principal_is_subject_to_acls(locked_broker, zk_connect):  # noqa: F811
    broker, wire = locked_broker
    created = _create_topic(wire, "open")
    # CREATE on the cluster, no DESCRIBE_CONFIGS on the topic: created, configs withheld.
    assert (created.topic_config_error_code, created.configs, created.num_partitions) == \
        (ErrorCode.TOPIC_AUTHORIZATION_FAILED, None, -1)
    _create_topic(wire, "closed")
    # No ACL on either topic yet: allow.everyone.if.no.acl.found=false hides both.
    assert _metadata(wire, None) == {}
    assert _metadata(wire, ["closed"]) == {"closed": ErrorCode.TOPIC_AUTHORIZATION_FAILED}
    assert _fetch(wire, "closed") == ErrorCode.TOPIC_AUTHORIZATION_FAILED
    assert _produce(wire, "closed") == ErrorCode.TOPIC_AUTHORIZATION_FAILED
    # A topic that does not exist is refused the same way (its existence is not disclosed).
    assert _fetch(wire, "nowhere") == ErrorCode.TOPIC_AUTHORIZATION_FAILED

    # Kafka's tool writes to ZooKeeper; the broker follows the change notifications.
    _grant(zk_connect, "--allow-principal", "User:ANONYMOUS", "--operation", "Read", "--operation",
           "Write", "--topic", "open")
    assert _until(lambda: _metadata(wire, None), {"open": 0}) == {"open": 0}   # DESCRIBE implied
    assert _produce(wire, "open") == 0
    assert _fetch(wire, "open") == 0
    # a follower's fetch needs CLUSTER_ACTION on the cluster, whatever the topic's ACLs
    assert _fetch(wire, "open", replica_id=5) == ErrorCode.TOPIC_AUTHORIZATION_FAILED
    assert _fetch(wire, "closed") == ErrorCode.TOPIC_AUTHORIZATION_FAILED
    assert _metadata(wire, ["open", "closed"]) == {"open": 0, "closed": ErrorCode.TOPIC_AUTHORIZATION_FAILED}

    # A prefixed DENY beats the literal ALLOW.
    _grant(zk_connect, "--deny-principal", "User:ANONYMOUS", "--operation", "Read", "--topic", "op",
           "--resource-pattern-type", "prefixed")
    assert _until(lambda: _fetch(wire, "open"), ErrorCode.TOPIC_AUTHORIZATION_FAILED) == \
        ErrorCode.TOPIC_AUTHORIZATION_FAILED
    assert _produce(wire, "open") == 0

    # Groups and transactional ids.
    r = wire.request(10, 3, key="g1", key_type=0)
    assert r.error_code == ErrorCode.GROUP_AUTHORIZATION_FAILED
    r = wire.request(10, 3, key="tx1", key_type=1)
    assert r.error_code == ErrorCode.TRANSACTIONAL_ID_AUTHORIZATION_FAILED
    r = wire.request(22, 4, transactional_id="tx1", transaction_timeout_ms=60000,
                     producer_id=-1, producer_epoch=-1)
    assert r.error_code == ErrorCode.TRANSACTIONAL_ID_AUTHORIZATION_FAILED
    r = wire.request(11, 5, **fields(11, group_id="g1", session_timeout_ms=10000, rebalance_timeout_ms=10000,
                                     member_id="", group_instance_id=None, protocol_type="consumer",
                                     protocols=[dict(name="range", metadata=b"")]))
    assert r.error_code == ErrorCode.GROUP_AUTHORIZATION_FAILED
    _grant(zk_connect, "--allow-principal", "User:ANONYMOUS", "--operation", "Read", "--group", "g1")
    assert _until(lambda: wire.request(10, 3, key="g1", key_type=0).error_code in (0, 15), True)
    _grant(zk_connect, "--allow-principal", "User:ANONYMOUS", "--operation", "Write",
           "--transactional-id", "tx1")
    assert _until(lambda: wire.request(10, 3, key="tx1", key_type=1).error_code in (0, 15), True)

    # The cluster: DESCRIBE was granted, ALTER was not.
    r = wire.request(29, 1, resource_type_filter=1, resource_name_filter=None, pattern_type_filter=1,
                     principal_filter=None, host_filter=None, operation=1, permission_type=1)
    assert r.error_code == 0 and r.resources
    r = wire.request(30, 1, creations=[(2, "x", 3, "User:eve", "*", 3, 3)])
    assert r.results[0].error_code == ErrorCode.CLUSTER_AUTHORIZATION_FAILED
    r = wire.request(31, 1, filters=[(2, "x", 3, None, None, 1, 1)])
    assert r.filter_results[0].error_code == ErrorCode.CLUSTER_AUTHORIZATION_FAILED

    # An ACL naming the client's host applies on the default PLAINTEXT listener too (the
    # session carries the peer's address there as well).
    _grant(zk_connect, "--deny-principal", "User:ANONYMOUS", "--deny-host", "127.0.0.1",
           "--operation", "Write", "--topic", "open")
    assert _until(lambda: _produce(wire, "open"), ErrorCode.TOPIC_AUTHORIZATION_FAILED) == \
        ErrorCode.TOPIC_AUTHORIZATION_FAILED


def test_super_user_passes(tmp_path, zk_connect):  # noqa: F811
    _grant(zk_connect, "--deny-principal", "User:ANONYMOUS", "--operation", "All", "--topic", "*")
    broker = _broker(tmp_path, zk_connect, **{"super.users": "User:admin;User:ANONYMOUS"})
    wire = WireClient(broker.bootstrap)
    try:
        _create_topic(wire, "t")
        assert _produce(wire, "t") == 0
        assert _fetch(wire, "t") == 0
        assert _metadata(wire, None) == {"t": 0}
    finally:
        wire.close()
        broker.stop()


def test_other_authorizer_class_is_refused(tmp_path, zk_connect):  # noqa: F811
    broker = BrokerProcess(tmp_path / "logs", overrides={
        "zookeeper.connect": zk_connect,
        "authorizer.class.name": "org.apache.kafka.metadata.authorizer.StandardAuthorizer"})
    with pytest.raises(Exception):
        broker.start(timeout=20)
    broker.stop()
    assert "org.apache.kafka.metadata.authorizer.StandardAuthorizer" in broker.output()


def test_acl_created_on_one_broker_applies_on_another(tmp_path, zk_connect):  # noqa: F811
    """Two brokers on one ZooKeeper: an ACL created through one reaches the other's cache
    through the change notifications."""
    first = _broker(tmp_path / "a", zk_connect, **{"allow.everyone.if.no.acl.found": "true"})
    second = BrokerProcess(tmp_path / "b" / "logs", node_id=1, overrides={
        "zookeeper.connect": zk_connect, "broker.id": "1", "authorizer.class.name": AUTHORIZER,
        "allow.everyone.if.no.acl.found": "true"}).start()
    a, b = WireClient(first.bootstrap), WireClient(second.bootstrap)
    try:
        # create the topic on whichever broker is the controller
        for conn in (a, b):
            r = conn.request(19, 5, **fields(19, topics=[dict(name="hidden", num_partitions=1,
                                                              replication_factor=1, assignments=[],
                                                              configs=[])],
                                             timeout_ms=10000, validate_only=False))
            if r.topics[0].error_code == 0:
                break
        assert _until(lambda: _metadata(b, None).get("hidden"), 0) == 0
        r = a.request(30, 1, creations=[(2, "hidden", 3, "User:ANONYMOUS", "*", 8, 2)])
        assert r.results[0].error_code == 0
        assert _until(lambda: "hidden" in _metadata(b, None), False) is False
        assert _metadata(b, ["hidden"]) == {"hidden": ErrorCode.TOPIC_AUTHORIZATION_FAILED}
        r = b.request(29, 1, resource_type_filter=2, resource_name_filter="hidden", pattern_type_filter=3,
                      principal_filter=None, host_filter=None, operation=1, permission_type=1)
        assert [(x.resource_name, [(acl.principal, acl.operation, acl.permission_type) for acl in x.acls])
                for x in r.resources] == [("hidden", [("User:ANONYMOUS", 8, 2)])]
        r = b.request(31, 1, filters=[(2, "hidden", 3, None, None, 1, 1)])
        assert len(r.filter_results[0].matching_acls) == 1
        assert _until(lambda: _metadata(a, None).get("hidden"), 0) == 0
    finally:
        a.close()
        b.close()
        second.stop()
        first.stop()


def test_three_brokers_replicate_as_super_users(tmp_path, zk_connect):  # noqa: F811
    """Brokers authorize each other's LeaderAndIsr, UpdateMetadata and replica fetches
    (CLUSTER_ACTION): with their principal a super user a replicated topic reaches a full
    ISR under allow.everyone.if.no.acl.found=false."""
    brokers = [BrokerProcess(tmp_path / f"b{i}" / "logs", node_id=i, overrides={
        "zookeeper.connect": zk_connect, "broker.id": str(i), "authorizer.class.name": AUTHORIZER,
        "super.users": "User:ANONYMOUS", "allow.everyone.if.no.acl.found": "false"}).start()
        for i in range(3)]
    conns = [WireClient(b.bootstrap) for b in brokers]
    try:
        for conn in conns:
            r = conn.request(19, 5, **fields(19, topics=[dict(name="r3", num_partitions=1, replication_factor=3,
                                                              assignments=[], configs=[])],
                                             timeout_ms=10000, validate_only=False))
            if r.topics[0].error_code == 0:
                break
        else:
            pytest.fail("no broker created the topic")

        def isr() -> int:
            r = conns[0].request(3, 9, **fields(3, topics=[dict(name="r3")], allow_auto_topic_creation=False,
                                                include_cluster_authorized_operations=False,
                                                include_topic_authorized_operations=False))
            parts = r.topics[0].partitions
            return len(parts[0].isr_nodes) if parts else 0
        assert _until(isr, 3, timeout=30) == 3
    finally:
        for conn in conns:
            conn.close()
        for b in brokers:
            b.stop()
