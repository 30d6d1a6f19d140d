"""Spark's Kafka delegation token provider against kafkapy: the provider obtains a token
with a SCRAM user's JAAS login, then Spark's Kafka source reads a topic with that token
alone (``tokenauth=true`` SCRAM, the user's JAAS login gone).

Spark asks for tokens itself only under Hadoop security (Kerberos) in a YARN or Kubernetes
driver; this test makes the driver's call (``KafkaDelegationTokenProvider.
obtainDelegationTokens``, tokens added to the current user's credentials) in the local
session's JVM, and the rest is Spark's own code path: ``spark.kafka.clusters.<id>.*``
chooses the cluster, ``KafkaConfigUpdater`` gives the source the token's JAAS settings.
"""
from __future__ import annotations

import re

import pytest

from kafkapy.cli import configs
from tests.support.broker_process import BrokerProcess, free_port
from tests.support.spark import require_connector
from tests.support.zookeeper_server import new_chroot

pytestmark = [pytest.mark.timeout(600)]
SCRAM_JAAS = "org.apache.kafka.common.security.scram.ScramLoginModule required;"
USER, SECRET = "spark-user", "spark-secret"


@pytest.fixture(scope="module")
def broker(tmp_path_factory, zookeeper_server):
    connect = new_chroot(zookeeper_server, "spark-tokens")
    port, sasl_port = free_port(), free_port()
    listeners = f"PLAINTEXT://127.0.0.1:{port},SASL_PLAINTEXT://127.0.0.1:{sasl_port}"
    broker = BrokerProcess(tmp_path_factory.mktemp("spark-tokens") / "logs", port=port,
                           overrides={
        "zookeeper.connect": connect,
        "listeners": listeners, "advertised.listeners": listeners,
        "inter.broker.listener.name": "PLAINTEXT",
        "listener.name.sasl_plaintext.sasl.enabled.mechanisms": "SCRAM-SHA-512",
        "listener.name.sasl_plaintext.scram-sha-512.sasl.jaas.config": SCRAM_JAAS,
        "delegation.token.secret.key": "spark-token-secret",
    }).start()
    broker.sasl_bootstrap = f"127.0.0.1:{sasl_port}"
    try:
        assert configs.main(["--bootstrap-server", broker.bootstrap, "--alter", "--add-config",
                             f"SCRAM-SHA-512=[password={SECRET}]", "--entity-type", "users",
                             "--entity-name", USER]) == 0
        yield broker
    finally:
        broker.stop()


def test_spark_obtains_a_token_and_reads_with_it(spark, broker, tmp_path):
    require_connector()
    from kafka import KafkaProducer
    producer = KafkaProducer(bootstrap_servers=broker.bootstrap)
    producer.send("spark-token-topic", b"read-with-a-token").get(timeout=30)
    producer.close()

    jvm = spark.sparkContext._jvm
    conf = spark.sparkContext._jsc.sc().conf()         # the live SparkConf (local executors)
    prefix = "spark.kafka.clusters.kp."
    conf.set(prefix + "auth.bootstrap.servers", broker.sasl_bootstrap)
    conf.set(prefix + "security.protocol", "SASL_PLAINTEXT")
    conf.set(prefix + "sasl.token.mechanism", "SCRAM-SHA-512")
    conf.set(prefix + "kafka.sasl.mechanism", "SCRAM-SHA-512")     # the login for the token
    # only this broker's sources use the token (the session serves other tests too)
    conf.set(prefix + "target.bootstrap.servers.regex", re.escape(broker.sasl_bootstrap))
    try:
        _obtain_and_read(spark, jvm, conf, broker, tmp_path)
    finally:
        for key in ("auth.bootstrap.servers", "security.protocol", "sasl.token.mechanism",
                    "kafka.sasl.mechanism", "target.bootstrap.servers.regex"):
            conf.remove(prefix + key)


def _obtain_and_read(spark, jvm, conf, broker, tmp_path) -> None:
    jaas = tmp_path / "jaas.conf"
    jaas.write_text("KafkaClient {\n  org.apache.kafka.common.security.scram.ScramLoginModule "
                    f'required username="{USER}" password="{SECRET}";\n}};\n')
    system = jvm.java.lang.System
    login = jvm.javax.security.auth.login.Configuration
    system.setProperty("java.security.auth.login.config", str(jaas))
    login.setConfiguration(None)
    try:
        creds = jvm.org.apache.hadoop.security.Credentials()
        provider = jvm.org.apache.spark.kafka010.KafkaDelegationTokenProvider()
        renewal = provider.obtainDelegationTokens(
            spark.sparkContext._jsc.hadoopConfiguration(), conf, creds)
        assert creds.numberOfTokens() == 1 and renewal.isDefined()
    finally:
        system.clearProperty("java.security.auth.login.config")
        login.setConfiguration(None)
    # no JAAS login left: the source can only log in with the token
    assert not jvm.org.apache.spark.kafka010.KafkaTokenUtil.isGlobalJaasConfigurationProvided()
    jvm.org.apache.hadoop.security.UserGroupInformation.getCurrentUser().addCredentials(creds)

    rows = (spark.read.format("kafka")
            .option("kafka.bootstrap.servers", broker.sasl_bootstrap)
            .option("kafka.security.protocol", "SASL_PLAINTEXT")
            .option("subscribe", "spark-token-topic")
            .option("startingOffsets", "earliest").load()
            .selectExpr("CAST(value AS STRING) AS v").collect())
    assert [r.v for r in rows] == ["read-with-a-token"]
