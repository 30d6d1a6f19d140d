"""The connection's SASL gate on a real broker: order of requests before authentication,
session lifetime (``connections.max.reauth.ms``) and re-authentication, as Kafka's
SaslServerAuthenticator and SocketServer behave.

- before authentication only ApiVersions (once), SaslHandshake and SaslAuthenticate pass:
  any other request, or a second ApiVersions, closes the connection without an answer;
- SaslAuthenticate v1+ returns the session lifetime; a request after it expired closes
  the connection; a SaslHandshake after it re-authenticates (same mechanism and user),
  and the connection serves again;
- re-authenticating as another user, or with another mechanism, closes the connection.

``KAFKAPY_SASL_REFERENCE=kafka`` runs the same against Apache Kafka 3.9 (ZooKeeper mode),
which is how these expectations were checked.
"""
from __future__ import annotations

import os
import time

import pytest

from tests.support.broker_process import BrokerProcess, free_port
from tests.support.cluster_clients import create_topic
from tests.support.request_fields import fields
from tests.support.wire import WireClient
from tests.support.zookeeper_server import new_chroot
from tests.support.zookeeper_server import zookeeper_server  # noqa: F401 (fixture)

REFERENCE = os.environ.get("KAFKAPY_SASL_REFERENCE", "")

pytestmark = pytest.mark.timeout(120)

LIFETIME_MS = 1500
JAAS = ('org.apache.kafka.common.security.plain.PlainLoginModule required '
        'user_alice="alice-secret" user_bob="bob-secret";')


@pytest.fixture(scope="module")
def gate_broker(tmp_path_factory, zookeeper_server):  # noqa: F811
    port, sasl = free_port(), free_port()
    listeners = f"PLAINTEXT://127.0.0.1:{port},SASL_PLAINTEXT://127.0.0.1:{sasl}"
    connect = new_chroot(zookeeper_server, "gate")
    if REFERENCE == "kafka":
        from tests.support.sasl import _KafkaBroker as kind
    else:
        kind = BrokerProcess
    broker = kind(tmp_path_factory.mktemp("gate") / "logs", port=port, overrides={
        "zookeeper.connect": connect,
        "listeners": listeners, "advertised.listeners": listeners,
        "inter.broker.listener.name": "PLAINTEXT",
        "sasl.enabled.mechanisms": "PLAIN,SCRAM-SHA-256",
        "listener.name.sasl_plaintext.plain.sasl.jaas.config": JAAS,
        "listener.name.sasl_plaintext.scram-sha-256.sasl.jaas.config":
            "org.apache.kafka.common.security.scram.ScramLoginModule required;",
        "connections.max.reauth.ms": str(LIFETIME_MS),
        "connection.failed.authentication.delay.ms": "0"}).start()
    broker.sasl_bootstrap = f"127.0.0.1:{sasl}"
    try:
        yield broker
    finally:
        broker.stop()


def _login(client: WireClient, user: str = "alice", password: str | None = None,
           mechanism: str = "PLAIN"):
    handshake = client.request(17, 1, mechanism=mechanism)
    assert handshake.error_code == 0
    token = f"\0{user}\0{password or user + '-secret'}".encode()
    return client.request(36, 2, auth_bytes=token)


def _closed_after_at_most_an_answer(client: WireClient, timeout: float = 10.0) -> bool:
    """The broker closes the connection; Kafka may first send one error answer (for a
    request of another API during SASL authentication: ILLEGAL_SASL_STATE)."""
    client.sock.settimeout(timeout)
    try:
        while client.sock.recv(65536):
            pass
        return True
    except (ConnectionResetError, BrokenPipeError):
        return True
    except OSError:
        return False


def _metadata(client: WireClient):
    return client.request(3, 1, topics=[])


def test_only_authentication_requests_pass_before_login(gate_broker):
    first = WireClient(gate_broker.sasl_bootstrap)
    correlation, frame = first.encode(3, 1, topics=[])
    first.send_raw(frame)
    assert first.is_closed()

    twice = WireClient(gate_broker.sasl_bootstrap)
    assert twice.request(18, 0).error_code == 0
    correlation, frame = twice.encode(18, 0)
    twice.send_raw(frame)
    assert twice.is_closed()

    after_handshake = WireClient(gate_broker.sasl_bootstrap)
    assert after_handshake.request(17, 1, mechanism="PLAIN").error_code == 0
    correlation, frame = after_handshake.encode(3, 1, topics=[])
    after_handshake.send_raw(frame)
    assert _closed_after_at_most_an_answer(after_handshake)

    ok = WireClient(gate_broker.sasl_bootstrap)
    assert ok.request(18, 3, client_software_name="t", client_software_version="1").error_code == 0
    assert _login(ok).error_code == 0
    assert _metadata(ok).brokers


def test_session_expiry_closes_and_reauthentication_renews(gate_broker):
    expiring = WireClient(gate_broker.sasl_bootstrap)
    answer = _login(expiring)
    assert (answer.error_code, answer.session_lifetime_ms) == (0, LIFETIME_MS)
    assert _metadata(expiring).brokers
    time.sleep(LIFETIME_MS / 1000 + 0.3)
    correlation, frame = expiring.encode(3, 1, topics=[])
    expiring.send_raw(frame)
    assert expiring.is_closed()

    renewing = WireClient(gate_broker.sasl_bootstrap)
    assert _login(renewing).error_code == 0
    time.sleep(LIFETIME_MS / 1000 + 0.3)
    again = _login(renewing)                       # re-authentication after expiry
    assert (again.error_code, again.session_lifetime_ms) == (0, LIFETIME_MS)
    assert _metadata(renewing).brokers


def test_reauthentication_cannot_change_user_or_mechanism(gate_broker):
    other_user = WireClient(gate_broker.sasl_bootstrap)
    assert _login(other_user).error_code == 0
    other_user.request(17, 1, mechanism="PLAIN")
    correlation, frame = other_user.encode(36, 2, auth_bytes=b"\0bob\0bob-secret")
    other_user.send_raw(frame)
    try:
        other_user.recv_frame()
    except ConnectionError:
        pass
    assert other_user.is_closed()

    other_mechanism = WireClient(gate_broker.sasl_bootstrap)
    assert _login(other_mechanism).error_code == 0
    # Kafka answers the handshake, then closes at the next token (REAUTH_BAD_MECHANISM)
    assert other_mechanism.request(17, 1, mechanism="SCRAM-SHA-256").error_code == 0
    correlation, frame = other_mechanism.encode(36, 2, auth_bytes=b"n,,n=alice,r=abc")
    other_mechanism.send_raw(frame)
    assert _closed_after_at_most_an_answer(other_mechanism)


def test_plaintext_listener_of_the_same_broker_needs_no_login(gate_broker):
    assert _metadata(WireClient(gate_broker.bootstrap)).brokers


def test_failed_reauthentication_behind_a_long_poll_answers_in_order(gate_broker):
    """Kafka handles one request of a connection at a time, so a Fetch waiting in
    purgatory is answered before the re-authentication's handshake is even read: the
    client gets the Fetch, the handshake and the failed token's error answer, in that
    order, then the close; a request sent after the failed token is never answered."""
    create_topic(gate_broker.bootstrap, "reauth-long-poll", partitions=1)
    client = WireClient(gate_broker.sasl_bootstrap, timeout=30)
    assert _login(client).error_code == 0
    fetch_correlation, fetch = client.encode(1, 4, **fields(
        1, replica_id=-1, max_wait_ms=1500, min_bytes=1, max_bytes=1 << 20,
        isolation_level=0, topics=[dict(topic="reauth-long-poll", partitions=[dict(
            partition=0, fetch_offset=0, partition_max_bytes=1 << 20)])]))
    handshake_correlation, handshake = client.encode(17, 1, mechanism="PLAIN")
    token_correlation, token = client.encode(36, 2, auth_bytes=b"\0alice\0wrong")
    _, after = client.encode(3, 1, topics=[])
    started = time.monotonic()
    client.send_raw(fetch + handshake + token + after)

    fetched = client.read_response(1, 4, fetch_correlation)
    assert time.monotonic() - started >= 1.0          # it did wait in purgatory
    assert fetched.responses[0].partitions[0].error_code == 0
    assert client.read_response(17, 1, handshake_correlation).error_code == 0
    failed = client.read_response(36, 2, token_correlation)
    assert (failed.error_code, failed.error_message) == (
        58, "Authentication failed: Invalid username or password")
    assert client.is_closed(timeout=10)
