"""SASL/PLAIN and SASL/SCRAM mechanisms: Kafka's message parsing and error messages, the
RFC 7677 / RFC 5802 test vectors, and kafkapy's server against its own client."""
from __future__ import annotations

import base64
from types import SimpleNamespace

import pytest

from kafkapy.security.sasl import SaslAuthenticationError, enabled_mechanisms, jaas_config
from kafkapy.security.sasl import credentials as creds
from kafkapy.security.sasl.client import PlainClient, ScramClient, broker_credentials
from kafkapy.security.sasl.jaas import parse, single_module
from kafkapy.security.sasl.plain import PlainServer, users_from_jaas
from kafkapy.security.sasl.scram import ScramServer, username
from kafkapy.security.sasl.server import server_for

JAAS = ('org.apache.kafka.common.security.plain.PlainLoginModule required '
        'username="admin" password="admin-secret" user_admin="admin-secret" '
        'user_alice="alice-secret";')


# -- JAAS -----------------------------------------------------------------------------

def test_jaas_users():
    assert users_from_jaas(JAAS) == {"admin": "admin-secret", "alice": "alice-secret"}


def test_jaas_syntax():
    text = ("/* c */ org.apache.kafka.common.security.scram.ScramLoginModule Required // x\n"
            "  username='bob' password=\"p\\\"w\" bare=word ;")
    assert parse(text) == [("org.apache.kafka.common.security.scram.ScramLoginModule",
                            "required", {"username": "bob", "password": 'p"w', "bare": "word"})]


@pytest.mark.parametrize("text, message", [
    ("Mod", "Login module control flag not specified in JAAS config"),
    ("Mod maybe;", "Invalid login module control flag 'maybe' in JAAS config"),
    ("Mod required a=;", "Value not specified for key 'a' in JAAS config"),
    ("Mod required a=12;", "Value not specified for key 'a' in JAAS config"),
    ('Mod required a="b"', "JAAS config entry not terminated by semi-colon"),
])
def test_jaas_errors(text, message):
    with pytest.raises(ValueError, match=message):
        parse(text)


def test_jaas_single_module():
    with pytest.raises(ValueError, match="should be 1 module"):
        single_module("A required; B required;")
    with pytest.raises(ValueError, match="does not contain any login modules"):
        single_module("  ")


# -- listener settings ----------------------------------------------------------------

class _Config:
    def __init__(self, originals: dict, typed: dict | None = None) -> None:
        self.originals = originals
        self._typed = typed or {}

    def __getitem__(self, key):
        return self._typed[key]


def _broker(originals: dict, typed: dict | None = None):
    return SimpleNamespace(config=_Config(originals, typed))


def test_enabled_mechanisms_listener_override():
    broker = _broker({"listener.name.sasl_plaintext.sasl.enabled.mechanisms": "PLAIN, SCRAM-SHA-512"},
                     {"sasl.enabled.mechanisms": ["GSSAPI"]})
    assert enabled_mechanisms(broker.config, "SASL_PLAINTEXT") == ["PLAIN", "SCRAM-SHA-512"]
    assert enabled_mechanisms(broker.config, "OTHER") == ["GSSAPI"]
    assert server_for("GSSAPI", broker.config, None, "OTHER") is None           # not served by kafkapy
    assert server_for("PLAIN", broker.config, None, "OTHER") is None            # not enabled there


def test_plain_jaas_is_listener_and_mechanism_prefixed():
    broker = _broker({"listener.name.sasl_plaintext.plain.sasl.jaas.config": JAAS,
                      "sasl.jaas.config": "ignored by Kafka on a broker",
                      "listener.name.sasl_plaintext.sasl.enabled.mechanisms": "PLAIN"})
    assert jaas_config(broker.config, "SASL_PLAINTEXT", "PLAIN") == JAAS
    assert jaas_config(broker.config, "OTHER", "PLAIN") is None
    server = server_for("PLAIN", broker.config, None, "SASL_PLAINTEXT")
    assert server.evaluate(b"\0alice\0alice-secret") == b"" and server.principal_name == "alice"
    assert broker_credentials(broker.config, "SASL_PLAINTEXT", "PLAIN") == ("admin", "admin-secret")


# -- PLAIN ----------------------------------------------------------------------------

@pytest.mark.parametrize("token, message", [
    (b"\0alice\0wrong", "Authentication failed: Invalid username or password"),
    (b"\0nobody\0x", "Authentication failed: Invalid username or password"),
    (b"\0\0x", "Authentication failed: username not specified"),
    (b"\0alice\0", "Authentication failed: password not specified"),
    (b"bob\0alice\0alice-secret",
     "Authentication failed: Client requested an authorization id that is different from username"),
    (b"alice-secret", "Invalid SASL/PLAIN response: expected 3 tokens, got 1"),
    (b"\0alice", "Invalid SASL/PLAIN response: expected 3 tokens, got 2"),
    (b"\0alice\0alice-secret\0", "Invalid SASL/PLAIN response: expected 3 tokens, got 4"),
    (b"a\0b\0c\0d\0e\0f", "Invalid SASL/PLAIN response: expected 3 tokens, got 4"),
])
def test_plain_failures(token, message):
    server = PlainServer(users_from_jaas(JAAS))
    with pytest.raises(SaslAuthenticationError) as err:
        server.evaluate(token)
    assert err.value.message == message
    assert not server.complete


def test_plain_success_with_authzid():
    server = PlainServer(users_from_jaas(JAAS))
    assert server.evaluate(PlainClient("alice", "alice-secret", authzid="alice").first()) == b""
    assert server.complete and server.principal_name == "alice"


# -- SCRAM ----------------------------------------------------------------------------

RFC7677 = dict(
    salt="W22ZaJ0SNY7soEsUEjb6gQ==", client_nonce="rOprNGfwEbeRWgbNEkqO",
    server_nonce="%hvYDpWUa2RaTCAfuxFIlj)hNlF$k0",
    client_first=b"n,,n=user,r=rOprNGfwEbeRWgbNEkqO",
    server_first=b"r=rOprNGfwEbeRWgbNEkqO%hvYDpWUa2RaTCAfuxFIlj)hNlF$k0,"
                 b"s=W22ZaJ0SNY7soEsUEjb6gQ==,i=4096",
    client_final=b"c=biws,r=rOprNGfwEbeRWgbNEkqO%hvYDpWUa2RaTCAfuxFIlj)hNlF$k0,"
                 b"p=dHzbZapWIk4jUhN+Ute9ytag9zjfMHgsqmmiz7AndVQ=",
    server_final=b"v=6rriTRBi23WpRR/wtup+mMhUZUn/dB5nLTJRsjl95G4=")


def _rfc_credential():
    return creds.generate("SCRAM-SHA-256", "pencil", 4096, base64.b64decode(RFC7677["salt"]))


def test_scram_sha256_rfc7677_server():
    cred = _rfc_credential()
    server = ScramServer("SCRAM-SHA-256", {"user": cred}.get,
                         nonce=lambda: RFC7677["server_nonce"])
    assert server.evaluate(RFC7677["client_first"]) == RFC7677["server_first"]
    assert not server.complete
    assert server.evaluate(RFC7677["client_final"]) == RFC7677["server_final"]
    assert server.complete and server.principal_name == "user"


def test_scram_sha256_rfc7677_client():
    client = ScramClient("SCRAM-SHA-256", "user", "pencil", nonce=RFC7677["client_nonce"])
    assert client.first() == RFC7677["client_first"]
    assert client.evaluate(RFC7677["server_first"]) == RFC7677["client_final"]
    assert client.evaluate(RFC7677["server_final"]) == b"" and client.complete


def test_scram_client_rejects_wrong_server_signature():
    client = ScramClient("SCRAM-SHA-256", "user", "pencil", nonce=RFC7677["client_nonce"])
    client.evaluate(RFC7677["server_first"])
    with pytest.raises(SaslAuthenticationError, match="Invalid server signature"):
        client.evaluate(b"v=" + base64.b64encode(bytes(32)))


@pytest.mark.parametrize("mechanism", ["SCRAM-SHA-256", "SCRAM-SHA-512"])
@pytest.mark.parametrize("user", ["alice", "we,ird=name"])
def test_scram_round_trip(mechanism, user):
    cred = creds.generate(mechanism, "s3cret", 4096)
    server = ScramServer(mechanism, {user: cred}.get)
    client = ScramClient(mechanism, user, "s3cret")
    token = client.first()
    while not server.complete:
        token = client.evaluate(server.evaluate(token))
    assert client.complete and server.principal_name == user


GENERIC = ("Authentication failed during authentication due to invalid credentials with "
           "SASL mechanism SCRAM-SHA-256")


def _exchange_failure(server, client) -> str:
    with pytest.raises(SaslAuthenticationError) as err:
        token = client.first()
        for _ in range(3):
            token = client.evaluate(server.evaluate(token))
    return err.value.message


def test_scram_wrong_password_gets_the_generic_message():
    server = ScramServer("SCRAM-SHA-256", {"alice": creds.generate("SCRAM-SHA-256", "right", 4096)}.get)
    assert _exchange_failure(server, ScramClient("SCRAM-SHA-256", "alice", "wrong")) == GENERIC
    with pytest.raises(SaslAuthenticationError, match="Unexpected challenge"):
        server.evaluate(b"c=biws,r=x,p=AAAA")     # a failed exchange stays failed


def test_scram_unknown_user_and_low_iterations_get_the_generic_message():
    weak = creds.generate("SCRAM-SHA-256", "pw", 1000)
    server = ScramServer("SCRAM-SHA-256", {"weak": weak}.get)
    assert _exchange_failure(server, ScramClient("SCRAM-SHA-256", "nobody", "pw")) == GENERIC
    server = ScramServer("SCRAM-SHA-256", {"weak": weak}.get)
    assert _exchange_failure(server, ScramClient("SCRAM-SHA-256", "weak", "pw")) == GENERIC


@pytest.mark.parametrize("first", [
    b"y,,n=alice,r=abc",                 # channel binding flags other than "n"
    b"p=tls-unique,,n=alice,r=abc",
    b"n,,n=alice",                       # no nonce
    b"n,,n=al\xc3\xa9ce,r=abc",          # non-ASCII name: outside Kafka's SASLNAME
    b"n,,n=al=ice,r=abc",                # a stray '='
    b"n,,n=alice,r=abc,tokenauth=true",  # delegation token: none exists
    b"",
])
def test_scram_bad_client_first(first):
    server = ScramServer("SCRAM-SHA-256", {"alice": _rfc_credential()}.get)
    with pytest.raises(SaslAuthenticationError) as err:
        server.evaluate(first)
    assert err.value.message == GENERIC


def test_scram_extensions_accepted_and_authzid_checked():
    cred = _rfc_credential()
    server = ScramServer("SCRAM-SHA-256", {"user": cred}.get)
    server.evaluate(b"n,,n=user,r=abc,foo=bar")
    assert server.extensions == {"foo": "bar"}
    server = ScramServer("SCRAM-SHA-256", {"user": cred}.get)
    with pytest.raises(SaslAuthenticationError) as err:
        server.evaluate(b"n,a=other,n=user,r=abc")
    assert err.value.message == ("Authentication failed: Client requested an authorization "
                                 "id that is different from username")


def test_scram_final_nonce_must_end_with_server_nonce():
    server = ScramServer("SCRAM-SHA-256", {"user": _rfc_credential()}.get,
                         nonce=lambda: RFC7677["server_nonce"])
    server.evaluate(RFC7677["client_first"])
    with pytest.raises(SaslAuthenticationError) as err:
        server.evaluate(b"c=biws,r=rOprNGfwEbeRWgbNEkqOother,p=dHzbZapWIk4jUhN+Ute9ytag9zjfMHgsqmmiz7AndVQ=")
    assert err.value.message == GENERIC


def test_scram_usernames():
    assert username("a=2Cb=3Dc") == "a,b=c"
    with pytest.raises(ValueError):
        username("a=b")
