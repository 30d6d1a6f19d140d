"""ACLs with two SASL PLAIN users (alice, bob) and a super user (admin) on a real broker.

The broker's PLAINTEXT listener (inter-broker) runs as ``User:ANONYMOUS``, a super user as
brokers are in Kafka deployments.  Kafka's ``kafka-acls.sh`` logs in as admin over
SASL_PLAINTEXT and grants bob READ on one topic, his group and his transactional id;
alice gets nothing: she does not see the topic in Metadata, her fetch is
TOPIC_AUTHORIZATION_FAILED, her group GROUP_AUTHORIZATION_FAILED, her transactional id
TRANSACTIONAL_ID_AUTHORIZATION_FAILED, her ACL requests CLUSTER_AUTHORIZATION_FAILED;
her produce, topic configs, group offsets and group description are refused too; bob
passes where granted; admin passes everywhere.  A stock client (confluent-kafka) as alice
sees TOPIC_AUTHORIZATION_FAILED for her produce.
"""
from __future__ import annotations

import pytest

from kafkapy.protocol.errors import ErrorCode
from tests.support.broker_process import BrokerProcess, free_port
from tests.support.request_fields import fields
from tests.support.acls import (ACLS_SH, _create_topic, _fetch, _kafka_acls, _metadata,
                                         _produce, _until)
from tests.support.wire import WireClient
from tests.support.zookeeper_server import new_chroot
from tests.support.zookeeper_server import zookeeper_server  # noqa: F401 (fixture)

PLAIN_JAAS = ('org.apache.kafka.common.security.plain.PlainLoginModule required '
              'username="admin" password="admin-secret" user_admin="admin-secret" '
              'user_alice="alice-secret" user_bob="bob-secret";')

pytestmark = pytest.mark.skipif(not ACLS_SH.exists(), reason="Kafka 3.9 tools not found")


@pytest.fixture(scope="module")
def broker(tmp_path_factory, zookeeper_server):  # noqa: F811
    connect = new_chroot(zookeeper_server, "acl-sasl")
    port, sasl_port = free_port(), free_port()
    listeners = f"PLAINTEXT://127.0.0.1:{port},SASL_PLAINTEXT://127.0.0.1:{sasl_port}"
    b = BrokerProcess(tmp_path_factory.mktemp("aclsasl") / "logs", port=port, overrides={
        "zookeeper.connect": connect,
        "listeners": listeners, "advertised.listeners": listeners,
        "inter.broker.listener.name": "PLAINTEXT",
        "listener.name.sasl_plaintext.sasl.enabled.mechanisms": "PLAIN",
        "listener.name.sasl_plaintext.plain.sasl.jaas.config": PLAIN_JAAS,
        "authorizer.class.name": "kafka.security.authorizer.AclAuthorizer",
        "super.users": "User:admin;User:ANONYMOUS",
        "num.partitions": "1", "offsets.topic.replication.factor": "1",
        "offsets.topic.num.partitions": "1", "transaction.state.log.replication.factor": "1",
        "transaction.state.log.min.isr": "1",
    })
    b.start()
    b.sasl_bootstrap = f"127.0.0.1:{sasl_port}"
    try:
        _login(b, "admin", "admin-secret").close()
        yield b
    finally:
        b.stop()


def _login(broker, user: str, password: str) -> WireClient:
    conn = WireClient(broker.sasl_bootstrap)
    assert conn.request(17, 1, mechanism="PLAIN").error_code == 0
    assert conn.request(36, 2, auth_bytes=f"\0{user}\0{password}".encode()).error_code == 0
    return conn


def _admin_config(tmp_path) -> str:
    path = tmp_path / "admin.properties"
    path.write_text("security.protocol=SASL_PLAINTEXT\nsasl.mechanism=PLAIN\n"
                    "sasl.jaas.config=org.apache.kafka.common.security.plain.PlainLoginModule required "
                    'username="admin" password="admin-secret";\n')
    return str(path)


def _join(conn, group: str) -> int:
    return conn.request(11, 5, **fields(
        11, group_id=group, session_timeout_ms=10000, rebalance_timeout_ms=10000, member_id="",
        group_instance_id=None, protocol_type="consumer",
        protocols=[dict(name="range", metadata=b"")])).error_code


def test_two_users(broker, tmp_path):
    admin = _login(broker, "admin", "admin-secret")
    alice = _login(broker, "alice", "alice-secret")
    bob = _login(broker, "bob", "bob-secret")
    try:
        _create_topic(admin, "secret")
        config = _admin_config(tmp_path)
        for args in (("--topic", "secret", "--consumer", "--group", "bobs"),
                     ("--transactional-id", "bob-tx", "--operation", "Write")):
            done = _kafka_acls("--bootstrap-server", broker.sasl_bootstrap, "--command-config", config,
                               "--add", "--allow-principal", "User:bob", *args)
            assert done.returncode == 0, done.stdout + done.stderr
        # the admin (super user) sees and reads everything
        assert _metadata(admin, None).get("secret") == 0
        assert _fetch(admin, "secret") == 0
        # bob: granted
        assert _until(lambda: _metadata(bob, None), {"secret": 0}) == {"secret": 0}
        assert _fetch(bob, "secret") == 0
        assert _join(bob, "bobs") != ErrorCode.GROUP_AUTHORIZATION_FAILED
        assert bob.request(10, 3, key="bob-tx", key_type=1).error_code != \
            ErrorCode.TRANSACTIONAL_ID_AUTHORIZATION_FAILED
        # alice: nothing
        assert "secret" not in _metadata(alice, None)
        assert _metadata(alice, ["secret"]) == {"secret": ErrorCode.TOPIC_AUTHORIZATION_FAILED}
        assert _fetch(alice, "secret") == ErrorCode.TOPIC_AUTHORIZATION_FAILED
        assert _join(alice, "bobs") == ErrorCode.GROUP_AUTHORIZATION_FAILED
        assert alice.request(10, 3, key="bob-tx", key_type=1).error_code == \
            ErrorCode.TRANSACTIONAL_ID_AUTHORIZATION_FAILED
        assert alice.request(22, 4, transactional_id="bob-tx", transaction_timeout_ms=60000,
                             producer_id=-1, producer_epoch=-1).error_code == \
            ErrorCode.TRANSACTIONAL_ID_AUTHORIZATION_FAILED
        r = alice.request(29, 1, resource_type_filter=1, resource_name_filter=None, pattern_type_filter=1,
                          principal_filter=None, host_filter=None, operation=1, permission_type=1)
        assert r.error_code == ErrorCode.CLUSTER_AUTHORIZATION_FAILED
        r = alice.request(19, 5, **fields(19, topics=[dict(name="hers", num_partitions=1, replication_factor=1,
                                                          assignments=[], configs=[])],
                                          timeout_ms=10000, validate_only=False))
        assert r.topics[0].error_code == ErrorCode.TOPIC_AUTHORIZATION_FAILED
        assert _produce(alice, "secret") == ErrorCode.TOPIC_AUTHORIZATION_FAILED
        assert _produce(admin, "secret") == 0
        r = alice.request(32, 1, resources=[(2, "secret", None)], include_synonyms=False)
        assert r.results[0].error_code == ErrorCode.TOPIC_AUTHORIZATION_FAILED
        r = alice.request(9, 7, **fields(9, group_id="bobs", topics=None, require_stable=False))
        assert r.error_code == ErrorCode.GROUP_AUTHORIZATION_FAILED
        r = alice.request(15, 5, groups=["bobs"], include_authorized_operations=False)
        assert r.groups[0].error_code == ErrorCode.GROUP_AUTHORIZATION_FAILED
        r = bob.request(9, 7, **fields(9, group_id="bobs", topics=None, require_stable=False))
        assert r.error_code != ErrorCode.GROUP_AUTHORIZATION_FAILED
        # Kafka's tool lists what it added, through kafkapy
        listed = _kafka_acls("--bootstrap-server", broker.sasl_bootstrap, "--command-config", config,
                             "--list", "--principal", "User:bob")
        assert listed.returncode == 0, listed.stderr
        assert "ACLs for principal `User:bob`" in listed.stdout
        assert "(principal=User:bob, host=*, operation=READ, permissionType=ALLOW)" in listed.stdout
    finally:
        for conn in (admin, alice, bob):
            conn.close()


def test_stock_clients_see_the_refusals(broker):
    """confluent-kafka (librdkafka) as alice: her produce to the topic fails with
    TOPIC_AUTHORIZATION_FAILED; as admin it is delivered."""
    confluent_kafka = pytest.importorskip("confluent_kafka")
    admin = _login(broker, "admin", "admin-secret")
    try:
        if _metadata(admin, None).get("stock") is None:
            _create_topic(admin, "stock")
    finally:
        admin.close()
    outcomes = {}
    for user in ("alice", "admin"):
        producer = confluent_kafka.Producer({
            "bootstrap.servers": broker.sasl_bootstrap, "security.protocol": "SASL_PLAINTEXT",
            "sasl.mechanism": "PLAIN", "sasl.username": user, "sasl.password": f"{user}-secret",
            "message.timeout.ms": 10000, "retries": 0})
        errors = []
        producer.produce("stock", b"v", on_delivery=lambda err, msg: errors.append(err))
        producer.flush(15)
        outcomes[user] = errors
    assert outcomes["admin"] == [None]
    assert len(outcomes["alice"]) == 1
    assert outcomes["alice"][0].code() == confluent_kafka.KafkaError.TOPIC_AUTHORIZATION_FAILED
