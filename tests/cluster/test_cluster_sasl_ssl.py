"""Three kafkapy brokers whose inter-broker listener is SASL_SSL.

Each broker has a PLAINTEXT listener (the test tooling's, on its usual port) and an
``INTERNAL`` listener mapped to SASL_SSL, named by ``inter.broker.listener.name``; the
brokers log in to each other with PLAIN (``sasl.mechanism.inter.broker.protocol``, the
user and password from ``listener.name.internal.plain.sasl.jaas.config``) over TLS (the
test CA from ``tests/support/certs.py``, host names checked).  Everything between brokers goes
through it: the controller's LeaderAndIsr/UpdateMetadata, replica fetching (the ISR of a
replicated topic fills up and acks=all produce completes), controlled shutdown.
A stock client logs in on the SASL_SSL listener as well; a wrong password is refused.

Reference mode (``KAFKAPY_CLUSTER_REFERENCE=kafka``) runs the same on Kafka 3.9 brokers
only where their listeners can be set per node, which the reference nodes do not allow:
the module is kafkapy-only.
"""
from __future__ import annotations

import pytest

from tests.support.broker_process import free_port
from tests.support.certs import broker_ssl_overrides
from tests.support.certs import certs  # noqa: F401 (fixture)
from tests.support.client_common import kafka_python_values
from tests.support.cluster import REFERENCE, running_cluster, wait_for
from tests.support.zookeeper_server import zookeeper_server  # noqa: F401 (fixture)

pytestmark = [pytest.mark.timeout(400),
              pytest.mark.skipif(REFERENCE == "kafka", reason="kafkapy nodes only (per-node listeners)")]

JAAS = ('org.apache.kafka.common.security.plain.PlainLoginModule required '
        'username="broker" password="broker-secret" '
        'user_broker="broker-secret" user_alice="alice-secret";')


@pytest.fixture(scope="module")
def secure_cluster(tmp_path_factory, zookeeper_server, certs):  # noqa: F811
    settings = {
        "listener.security.protocol.map": "PLAINTEXT:PLAINTEXT,INTERNAL:SASL_SSL",
        "inter.broker.listener.name": "INTERNAL",
        "sasl.mechanism.inter.broker.protocol": "PLAIN",
        "listener.name.internal.sasl.enabled.mechanisms": "PLAIN",
        "listener.name.internal.plain.sasl.jaas.config": JAAS,
        **broker_ssl_overrides(certs, "PEM", prefix="listener.name.internal."),
    }

    def per_node_listeners(cluster):
        for node in cluster.nodes.values():
            internal = free_port()
            node.internal_port = internal
            listeners = (f"PLAINTEXT://127.0.0.1:{node.port},"
                         f"INTERNAL://localhost:{internal}")
            node.process.overrides.update({"listeners": listeners,
                                           "advertised.listeners": listeners})
        return None

    yield from running_cluster(tmp_path_factory.mktemp("sasl-ssl-cluster"), zookeeper_server,
                               settings, prepare=per_node_listeners)


def _registrations(cluster) -> dict[int, dict]:
    return {i: cluster.znode_json(f"/brokers/ids/{i}") for i in cluster.registered()}


def test_brokers_register_the_sasl_ssl_listener(secure_cluster):
    for node_id, reg in _registrations(secure_cluster).items():
        assert reg["listener_security_protocol_map"]["INTERNAL"] == "SASL_SSL"
        port = secure_cluster.nodes[node_id].internal_port
        assert f"INTERNAL://localhost:{port}" in reg["endpoints"]


def test_replication_and_controller_requests_run_over_sasl_ssl(secure_cluster):
    from kafka import KafkaConsumer, KafkaProducer
    from kafka.admin import KafkaAdminClient, NewTopic
    c = secure_cluster
    controller = c.controller_id()
    admin = KafkaAdminClient(bootstrap_servers=c.bootstrap(controller))
    admin.create_topics([NewTopic("secure-replicated", 3, 3)])
    admin.close()
    c.wait_topic("secure-replicated", 3)
    # every replica joins the ISR: followers fetch from their leaders over SASL_SSL
    wait_for(lambda: all(len(s["isr"]) == 3 for s in c.states("secure-replicated").values()),
             60, lambda: f"full ISRs\n{c.states('secure-replicated')}")
    producer = KafkaProducer(bootstrap_servers=",".join(c.bootstrap(i) for i in c.running_ids()),
                             acks="all")
    for i in range(300):
        producer.send("secure-replicated", b"v-%d" % i, partition=i % 3)
    producer.flush(timeout=60)
    producer.close()
    consumer = KafkaConsumer("secure-replicated", bootstrap_servers=c.bootstrap(controller),
                             auto_offset_reset="earliest", consumer_timeout_ms=15000)
    assert sorted(kafka_python_values(consumer, 300)) == sorted(b"v-%d" % i for i in range(300))
    for node_id in c.running_ids():
        text = c.log_text(node_id)
        assert "SASL login" not in text, text[-3000:]


def test_a_client_logs_in_on_the_sasl_ssl_listener(secure_cluster, certs):
    from kafka import KafkaConsumer, KafkaProducer
    from kafka.errors import KafkaError
    c = secure_cluster
    node = c.nodes[c.running_ids()[0]]
    bootstrap = f"localhost:{node.internal_port}"
    common = {"security_protocol": "SASL_SSL", "ssl_cafile": str(certs.ca),
              "sasl_mechanism": "PLAIN", "sasl_plain_username": "alice"}
    producer = KafkaProducer(bootstrap_servers=bootstrap, sasl_plain_password="alice-secret",
                             acks="all", **common)
    producer.send("secure-client", b"hello").get(timeout=60)
    producer.close()
    consumer = KafkaConsumer("secure-client", bootstrap_servers=bootstrap,
                             sasl_plain_password="alice-secret", auto_offset_reset="earliest",
                             consumer_timeout_ms=15000, **common)
    assert kafka_python_values(consumer, 1) == [b"hello"]
    with pytest.raises(KafkaError):
        KafkaProducer(bootstrap_servers=bootstrap, sasl_plain_password="wrong",
                      max_block_ms=10000, bootstrap_timeout_ms=5000,
                      **common).send("secure-client", b"x").get(20)


def test_controlled_shutdown_and_restart_over_sasl_ssl(secure_cluster):
    c = secure_cluster
    victim = next(i for i in c.running_ids() if i != c.controller_id())
    leaders_before = c.leaders("secure-replicated", via=c.controller_id())
    assert c.terminate(victim) == 0
    # controlled shutdown moved its leaderships away before it stopped
    moved = c.leaders("secure-replicated", via=c.controller_id())
    assert victim not in moved.values(), (leaders_before, moved)
    c.restart(victim)
    wait_for(lambda: all(len(s["isr"]) == 3 for s in c.states("secure-replicated").values()),
             60, lambda: f"the restarted broker back in every ISR\n{c.states('secure-replicated')}")
