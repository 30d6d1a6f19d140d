"""TLS listeners on a real kafkapy broker process, with stock clients and bad input.

One broker, three listeners: PLAINTEXT (inter-broker), ``SSL`` (PEM key store,
``ssl.client.auth=required`` through the listener prefix) and ``ONEWAY`` (an SSL listener
with its own PKCS12 key store through ``listener.name.oneway.ssl.*``, no client
certificates).  Checked:
- kafka-python, confluent-kafka and aiokafka produce and consume over TLS;
- a client without a certificate is refused on the client-auth listener, a certificate
  from an unknown CA too; the one-way listener serves a client without one;
- garbage, a plaintext Kafka request and a truncated handshake on a TLS port close only
  that connection; the broker keeps serving everyone else;
- a multi-megabyte fetch over TLS returns every byte (the copying path of Fetch);
- every key store form loads (PEM, encrypted PEM, inline PEM, PKCS12, JKS), and the
  client certificate's principal is its subject DN as Java prints it.
"""
from __future__ import annotations

import asyncio
import os
import shutil
import socket
import ssl
import subprocess

import pytest

from kafkapy.config.broker import BrokerConfig
from kafkapy.security.ssl import client_context, distinguished_name, server_context
from tests.support.broker_process import BrokerProcess, free_port
from tests.support.certs import CLIENT_PRINCIPAL, broker_ssl_overrides
from tests.support.certs import certs  # noqa: F401 (fixture)
from tests.support.client_common import poll_values
from tests.support.wire import WireClient

pytestmark = pytest.mark.timeout(300)


@pytest.fixture(scope="module")
def tls_broker(tmp_path_factory, certs):
    plain, secure, oneway = free_port(), free_port(), free_port()
    listeners = (f"PLAINTEXT://127.0.0.1:{plain},SSL://127.0.0.1:{secure},"
                 f"ONEWAY://127.0.0.1:{oneway}")
    overrides = {
        "listeners": listeners, "advertised.listeners": listeners,
        "listener.security.protocol.map": "PLAINTEXT:PLAINTEXT,SSL:SSL,ONEWAY:SSL",
        "inter.broker.listener.name": "PLAINTEXT",
        **broker_ssl_overrides(certs, "PEM"),
        "listener.name.ssl.ssl.client.auth": "required",
        **broker_ssl_overrides(certs, "PKCS12", prefix="listener.name.oneway."),
        "message.max.bytes": str(8 * 1024 * 1024),
    }
    broker = BrokerProcess(tmp_path_factory.mktemp("tls") / "logs", port=plain,
                           overrides=overrides).start()
    broker.ssl_bootstrap = f"127.0.0.1:{secure}"
    broker.oneway_bootstrap = f"127.0.0.1:{oneway}"
    try:
        yield broker
    finally:
        broker.stop()


def _kafka_python_ssl(certs, with_cert: bool = True) -> dict:
    settings = {"security_protocol": "SSL", "ssl_cafile": str(certs.ca),
                "ssl_check_hostname": True}
    if with_cert:
        settings.update(ssl_certfile=str(certs.client_cert), ssl_keyfile=str(certs.client_key))
    return settings


def _roundtrip_kafka_python(bootstrap: str, topic: str, settings: dict, values: list[bytes]):
    from kafka import KafkaConsumer, KafkaProducer
    producer = KafkaProducer(bootstrap_servers=bootstrap, max_request_size=8 * 1024 * 1024,
                             **settings)
    for value in values:
        producer.send(topic, value)
    producer.flush(timeout=60)
    producer.close()
    consumer = KafkaConsumer(topic, bootstrap_servers=bootstrap, auto_offset_reset="earliest",
                             consumer_timeout_ms=15000, fetch_max_bytes=64 * 1024 * 1024,
                             max_partition_fetch_bytes=16 * 1024 * 1024, **settings)
    got = []
    for record in consumer:
        got.append(record.value)
        if len(got) == len(values):
            break
    consumer.close()
    return got


def test_kafka_python_over_tls_with_client_certificate(tls_broker, certs):
    values = [f"tls-{i}".encode() for i in range(200)]
    got = _roundtrip_kafka_python(tls_broker.ssl_bootstrap, "tls-kafka-python",
                                  _kafka_python_ssl(certs), values)
    assert got == values


def test_one_way_listener_serves_a_client_without_certificate(tls_broker, certs):
    values = [b"one-way-%d" % i for i in range(20)]
    got = _roundtrip_kafka_python(tls_broker.oneway_bootstrap, "tls-one-way",
                                  _kafka_python_ssl(certs, with_cert=False), values)
    assert got == values


def test_confluent_kafka_over_tls(tls_broker, certs):
    confluent = pytest.importorskip("confluent_kafka")
    conf = {"bootstrap.servers": tls_broker.ssl_bootstrap, "security.protocol": "SSL",
            "ssl.ca.location": str(certs.ca), "ssl.certificate.location": str(certs.client_cert),
            "ssl.key.location": str(certs.client_key)}
    producer = confluent.Producer(conf)
    for i in range(100):
        producer.produce("tls-confluent", value=b"c-%d" % i, key=b"k")
    assert producer.flush(60) == 0
    consumer = confluent.Consumer({**conf, "group.id": "tls-group",
                                   "auto.offset.reset": "earliest"})
    consumer.subscribe(["tls-confluent"])
    got = poll_values(consumer, 100, timeout=60)
    assert got == [b"c-%d" % i for i in range(100)]


async def test_aiokafka_over_tls(tls_broker, certs):
    aiokafka = pytest.importorskip("aiokafka")
    from aiokafka.helpers import create_ssl_context
    context = create_ssl_context(cafile=str(certs.ca), certfile=str(certs.client_cert),
                                 keyfile=str(certs.client_key))
    producer = aiokafka.AIOKafkaProducer(bootstrap_servers=tls_broker.ssl_bootstrap,
                                         security_protocol="SSL", ssl_context=context)
    await producer.start()
    try:
        for i in range(50):
            await producer.send_and_wait("tls-aiokafka", b"a-%d" % i)
    finally:
        await producer.stop()
    consumer = aiokafka.AIOKafkaConsumer("tls-aiokafka", bootstrap_servers=tls_broker.ssl_bootstrap,
                                         security_protocol="SSL", ssl_context=context,
                                         auto_offset_reset="earliest")
    await consumer.start()
    got = []
    try:
        async def read():
            async for record in consumer:
                got.append(record.value)
                if len(got) == 50:
                    return
        await asyncio.wait_for(read(), 60)
    finally:
        await consumer.stop()
    assert got == [b"a-%d" % i for i in range(50)]


def _tls_api_versions(bootstrap: str, context: ssl.SSLContext):
    """ApiVersions v0 over a raw TLS socket; the response, or the exception raised."""
    host, port = bootstrap.rsplit(":", 1)
    raw = socket.create_connection((host, int(port)), timeout=10)
    try:
        with context.wrap_socket(raw, server_hostname="localhost") as tls:
            client = WireClient.__new__(WireClient)
            client.sock, client._correlation = tls, 0
            return client.request(18, 0)
    except (OSError, ssl.SSLError, ConnectionError) as err:
        return err


def _client_context(certs, cert=None, key=None) -> ssl.SSLContext:
    context = ssl.create_default_context(cafile=str(certs.ca))
    if cert is not None:
        context.load_cert_chain(str(cert), str(key))
    return context


def test_client_auth_required_refuses_clients_without_a_trusted_certificate(tls_broker, certs):
    good = _tls_api_versions(tls_broker.ssl_bootstrap,
                             _client_context(certs, certs.client_cert, certs.client_key))
    assert not isinstance(good, Exception) and good.error_code == 0
    without = _tls_api_versions(tls_broker.ssl_bootstrap, _client_context(certs))
    assert isinstance(without, Exception), without
    stranger = _tls_api_versions(tls_broker.ssl_bootstrap, _client_context(
        certs, certs.other_client_cert, certs.other_client_key))
    assert isinstance(stranger, Exception), stranger
    # the broker did not trust the broker's own CA less for it
    again = _tls_api_versions(tls_broker.ssl_bootstrap,
                              _client_context(certs, certs.client_cert, certs.client_key))
    assert not isinstance(again, Exception)


def _closed(sock: socket.socket, timeout: float = 15.0) -> bool:
    sock.settimeout(timeout)
    try:
        while True:
            data = sock.recv(4096)
            if not data:
                return True
    except (ConnectionResetError, BrokenPipeError):
        return True
    except socket.timeout:
        return False


def test_bad_input_on_a_tls_port_closes_only_that_connection(tls_broker, certs):
    good_context = _client_context(certs, certs.client_cert, certs.client_key)
    host, port = tls_broker.ssl_bootstrap.rsplit(":", 1)
    # a TLS client that stays connected throughout
    bystander_raw = socket.create_connection((host, int(port)), timeout=10)
    bystander = good_context.wrap_socket(bystander_raw, server_hostname="localhost")
    wire = WireClient.__new__(WireClient)
    wire.sock, wire._correlation = bystander, 0
    assert wire.request(18, 0).error_code == 0

    garbage = socket.create_connection((host, int(port)), timeout=10)
    garbage.sendall(os.urandom(3000))
    assert _closed(garbage)

    plaintext = WireClient(tls_broker.ssl_bootstrap)   # a Kafka request, no TLS
    correlation, frame = plaintext.encode(18, 0)
    plaintext.send_raw(frame)
    assert _closed(plaintext.sock)

    # a ClientHello cut short, then silence: dropped at the handshake timeout at the latest
    hello = _client_hello(good_context)
    truncated = socket.create_connection((host, int(port)), timeout=10)
    truncated.sendall(hello[: len(hello) // 2])
    assert _closed(truncated, timeout=30)
    half = socket.create_connection((host, int(port)), timeout=10)
    half.sendall(hello[:20])
    half.close()                                        # and one that just goes away

    assert wire.request(18, 0).error_code == 0          # the bystander is still served
    fresh = _tls_api_versions(tls_broker.ssl_bootstrap, good_context)
    assert not isinstance(fresh, Exception)
    assert WireClient(tls_broker.bootstrap).request(18, 0).error_code == 0
    bystander.close()


def _client_hello(context: ssl.SSLContext) -> bytes:
    incoming, outgoing = ssl.MemoryBIO(), ssl.MemoryBIO()
    obj = context.wrap_bio(incoming, outgoing, server_hostname="localhost")
    try:
        obj.do_handshake()
    except ssl.SSLWantReadError:
        pass
    return outgoing.read()


def test_large_fetch_over_tls_returns_every_byte(tls_broker, certs):
    values = [os.urandom(1024 * 1024) for _ in range(6)]      # 6 MiB through TLS
    got = _roundtrip_kafka_python(tls_broker.ssl_bootstrap, "tls-large",
                                  _kafka_python_ssl(certs), values)
    assert len(got) == len(values) and got == values


@pytest.mark.parametrize("kind", ["PEM", "PEM_ENCRYPTED", "INLINE", "PKCS12", "JKS"])
def test_every_key_store_form_loads(certs, kind):
    if kind == "JKS" and certs.broker_jks is None:
        pytest.skip("keytool missing")
    props = {"listeners": "SSL://127.0.0.1:0", "listener.security.protocol.map": "SSL:SSL",
             "security.inter.broker.protocol": "SSL", "log.dirs": "/tmp/unused",
             "ssl.client.auth": "required", **broker_ssl_overrides(certs, kind)}
    config = BrokerConfig.from_properties(props)
    server = server_context(config, "SSL")
    assert server.verify_mode == ssl.CERT_REQUIRED
    client = client_context(config, "SSL")
    assert client.check_hostname          # ssl.endpoint.identification.algorithm=https


def test_client_certificate_principal_is_the_dn_java_prints(certs):
    subject = ssl._ssl._test_decode_cert(str(certs.client_cert))["subject"]
    assert distinguished_name(subject) == CLIENT_PRINCIPAL
    keytool = shutil.which("keytool")
    if keytool:
        printed = subprocess.run([keytool, "-printcert", "-file", str(certs.client_cert)],
                                 capture_output=True, text=True, timeout=60).stdout
        owner = next(line for line in printed.splitlines() if line.startswith("Owner: "))
        assert owner.removeprefix("Owner: ").replace(", ", ",") == CLIENT_PRINCIPAL
    assert distinguished_name(((("commonName", "a,b+c"),), (("emailAddress", "x@y"),))) == \
        "1.2.840.113549.1.9.1=#1603784079,CN=a\\,b\\+c"


def test_a_tls_listener_without_key_store_stops_start_up(tmp_path):
    port = free_port()
    broker = BrokerProcess(tmp_path / "logs", overrides={
        "listeners": f"PLAINTEXT://127.0.0.1:{free_port()},SSL://127.0.0.1:{port}",
        "advertised.listeners": f"SSL://127.0.0.1:{port}",
        "security.inter.broker.protocol": "SSL"})
    with pytest.raises(RuntimeError, match="SSL key store is not specified"):
        broker.start(timeout=30)




@pytest.mark.parametrize("protocol,settings,expected", [
    ("SSL", {"ssl.client.auth": "requested"}, ssl.CERT_OPTIONAL),
    ("SSL", {"ssl.client.auth": "none"}, ssl.CERT_NONE),
    ("SSL", {"listener.name.ssl.ssl.client.auth": "required", "ssl.client.auth": "none"},
     ssl.CERT_REQUIRED),
    # Kafka's ChannelBuilders: on SASL_SSL only the listener-prefixed key counts
    ("SASL_SSL", {"ssl.client.auth": "required"}, ssl.CERT_NONE),
    ("SASL_SSL", {"listener.name.ssl.ssl.client.auth": "required"}, ssl.CERT_REQUIRED),
])
def test_client_auth_per_listener(certs, protocol, settings, expected):
    props = {"listeners": "SSL://127.0.0.1:0", "listener.security.protocol.map": f"SSL:{protocol}",
             "inter.broker.listener.name": "SSL", "sasl.mechanism.inter.broker.protocol": "PLAIN",
             "sasl.enabled.mechanisms": "PLAIN", "log.dirs": "/tmp/unused",
             **broker_ssl_overrides(certs, "PEM"), **settings}
    config = BrokerConfig.from_properties(props)
    assert server_context(config, "SSL", protocol).verify_mode == expected


def test_enabled_protocols_and_cipher_suites(certs):
    props = {"listeners": "SSL://127.0.0.1:0", "listener.security.protocol.map": "SSL:SSL",
             "security.inter.broker.protocol": "SSL", "log.dirs": "/tmp/unused",
             "ssl.enabled.protocols": "TLSv1.2",
             "ssl.cipher.suites": "TLS_ECDHE_RSA_WITH_AES_128_GCM_SHA256",
             **broker_ssl_overrides(certs, "PEM")}
    context = server_context(BrokerConfig.from_properties(props), "SSL")
    assert context.maximum_version == ssl.TLSVersion.TLSv1_2
    names = {c["name"] for c in context.get_ciphers() if c["protocol"] == "TLSv1.2"}
    assert names == {"ECDHE-RSA-AES128-GCM-SHA256"}
