"""SaslHandshake / SaslAuthenticate handlers against the gate's ConnectionAuth: what they
answer and what they tell the connection (``ctx.connection_auth``: begin / authenticated /
failed).  The connection side is a recording stand-in here; tests/integration/test_sasl.py
runs the real gate."""
from __future__ import annotations

from types import SimpleNamespace

import pytest

from kafkapy.config.broker import BrokerConfig
from kafkapy.handlers import sasl_authenticate, sasl_handshake
from kafkapy.api.context import CloseConnection
from kafkapy.security.sasl import credentials
from kafkapy.security.sasl.client import ScramClient
from tests.support.services import context, services

JAAS = ('org.apache.kafka.common.security.plain.PlainLoginModule required '
        'user_alice="alice-secret";')


class _Auth:
    """Records the calls the handlers make on the connection."""

    def __init__(self) -> None:
        self.server = None
        self.calls: list = []

    def begin(self, server) -> None:
        self.server = server
        self.calls.append(("begin", server.mechanism))

    def authenticated(self, principal_name: str, token_authenticated: bool = False,
                      credential_left_ms: int | None = None) -> int:
        assert not token_authenticated and credential_left_ms is None   # no tokens here
        self.calls.append(("authenticated", principal_name))
        return 0

    def failed(self) -> None:
        self.calls.append(("failed",))


def _ctx(api_key: int, version: int, auth, props: dict | None = None):
    config = BrokerConfig.from_properties({
        "listener.name.sasl_plaintext.sasl.enabled.mechanisms": "SCRAM-SHA-512,PLAIN",
        "listener.name.sasl_plaintext.plain.sasl.jaas.config": JAAS, **(props or {})})
    cred = credentials.generate("SCRAM-SHA-512", "bob-secret", 4096)
    cache = credentials.CredentialCache(store=None)
    cache._loaded, cache._users = True, {"bob": {"SCRAM-SHA-512": cred}}
    return context(services(config=config, scram_credentials=cache), api_key, version,
                   listener="SASL_PLAINTEXT", connection_auth=auth)


def _handshake(auth, mechanism: str, version: int = 1):
    return sasl_handshake.handle(_ctx(17, version, auth), SimpleNamespace(mechanism=mechanism))


def _authenticate(auth, token: bytes, version: int = 2, props: dict | None = None):
    return sasl_authenticate.handle(_ctx(36, version, auth, props),
                                    SimpleNamespace(auth_bytes=token))


def test_plaintext_listener_answers_illegal_sasl_state():
    answer = _handshake(None, "PLAIN")
    assert (answer.error_code, answer.mechanisms) == (34, [])
    answer = _authenticate(None, b"x")
    assert answer.error_code == 34
    assert answer.error_message == "SaslAuthenticate request received after successful authentication"


def test_handshake_unknown_mechanism():
    auth = _Auth()
    answer = _handshake(auth, "GSSAPI")
    assert (answer.error_code, answer.mechanisms) == (33, ["SCRAM-SHA-512", "PLAIN"])
    assert auth.calls == [("failed",)]


@pytest.mark.parametrize("version", [0, 1, 2])
def test_plain_login(version):
    auth = _Auth()
    assert _handshake(auth, "PLAIN").error_code == 0
    answer = _authenticate(auth, b"\0alice\0alice-secret", version)
    assert (answer.error_code, answer.auth_bytes) == (0, b"")
    assert auth.calls == [("begin", "PLAIN"), ("authenticated", "alice")]


def test_plain_wrong_password():
    auth = _Auth()
    _handshake(auth, "PLAIN")
    answer = _authenticate(auth, b"\0alice\0nope")
    assert (answer.error_code, answer.error_message) == (
        58, "Authentication failed: Invalid username or password")
    assert auth.calls[-1] == ("failed",)


def test_scram_login_and_wrong_password():
    auth = _Auth()
    _handshake(auth, "SCRAM-SHA-512")
    client = ScramClient("SCRAM-SHA-512", "bob", "bob-secret")
    first = _authenticate(auth, client.first())
    assert first.error_code == 0 and first.session_lifetime_ms == 0
    final = _authenticate(auth, client.evaluate(first.auth_bytes))
    assert final.error_code == 0 and client.evaluate(final.auth_bytes) == b""
    assert auth.calls == [("begin", "SCRAM-SHA-512"), ("authenticated", "bob")]

    auth = _Auth()
    _handshake(auth, "SCRAM-SHA-512")
    client = ScramClient("SCRAM-SHA-512", "bob", "wrong")
    first = _authenticate(auth, client.first())
    final = _authenticate(auth, client.evaluate(first.auth_bytes))
    assert final.error_code == 58
    assert final.error_message == ("Authentication failed during authentication due to "
                                   "invalid credentials with SASL mechanism SCRAM-SHA-512")
    assert auth.calls[-1] == ("failed",)


def test_authenticate_before_handshake_closes():
    auth = _Auth()
    with pytest.raises(CloseConnection):
        _authenticate(auth, b"\0alice\0alice-secret")
    assert auth.calls == [("failed",)]


@pytest.mark.parametrize("props, lifetime", [
    ({}, 0),
    ({"connections.max.reauth.ms": "60000"}, 60000),
    ({"connections.max.reauth.ms": "60000",
      "listener.name.sasl_plaintext.plain.connections.max.reauth.ms": "5000"}, 5000),
], ids=["unset", "listener", "per-mechanism"])
def test_session_lifetime_from_the_gate(props, lifetime):
    """The answer's session_lifetime_ms is the one the connection's gate keeps."""
    from kafkapy.security import gate as G
    gate = G.SaslGate(_ctx(17, 1, None, props).services.config, "SASL_PLAINTEXT", [].append)
    assert gate.admit(17, 20) == G.SERVE_AUTH
    sasl_handshake.handle(_ctx(17, 1, gate.auth_for(1), props), SimpleNamespace(mechanism="PLAIN"))
    answer = _authenticate(gate.auth_for(2), b"\0alice\0alice-secret", 2, props)
    assert (answer.error_code, answer.session_lifetime_ms) == (0, lifetime)
    assert (gate.expires_at is None) == (lifetime == 0)


def test_reauthentication_failure_says_so():
    auth = _Auth()
    auth.reauthenticating = True
    _handshake(auth, "SCRAM-SHA-512")
    client = ScramClient("SCRAM-SHA-512", "bob", "wrong")
    first = _authenticate(auth, client.first())
    final = _authenticate(auth, client.evaluate(first.auth_bytes))
    assert final.error_message == ("Authentication failed during re-authentication due to "
                                   "invalid credentials with SASL mechanism SCRAM-SHA-512")


def test_reauthentication_as_another_user_is_answered_failed():
    """Kafka's ensurePrincipalUnchanged: SASL_AUTHENTICATION_FAILED with its message, and
    the connection (the real gate) closes; the session keeps the first user."""
    from kafkapy.security import gate as G
    props = {"connections.max.reauth.ms": "60000",
             "listener.name.sasl_plaintext.plain.sasl.jaas.config":
                 'org.apache.kafka.common.security.plain.PlainLoginModule required '
                 'user_alice="a" user_bob="b";'}
    principals = []
    gate = G.SaslGate(_ctx(17, 1, None, props).services.config, "SASL_PLAINTEXT", principals.append)

    def login(user: str, password: str):
        assert gate.admit(17, 20) == G.SERVE_AUTH
        sasl_handshake.handle(_ctx(17, 1, gate.auth_for(1), props), SimpleNamespace(mechanism="PLAIN"))
        assert gate.admit(36, 20) == G.SERVE_AUTH
        return sasl_authenticate.handle(_ctx(36, 2, gate.auth_for(2), props),
                                        SimpleNamespace(auth_bytes=f"\0{user}\0{password}".encode()))
    assert login("alice", "a").error_code == 0 and gate.state == G.COMPLETE
    again = login("bob", "b")
    assert (again.error_code, again.error_message) == (
        58, "Cannot change principals during re-authentication from User.alice: User.bob")
    assert gate.state == G.FAILED and [str(p) for p in principals] == ["User:alice"]
