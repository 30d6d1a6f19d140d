"""The delegation token manager on an embedded store and a mock clock: Kafka's
DelegationTokenManagerZk rules, znode bytes and change notifications, and SCRAM
authentication with ``tokenauth=true`` through the manager's credentials."""
from __future__ import annotations

import base64
import hashlib
import hmac
import json

import pytest

from kafkapy.api.principal import KafkaPrincipal
from kafkapy.clock import MockClock
from kafkapy.protocol.errors import ErrorCode as E
from kafkapy.security.delegation_tokens import (CHANGES, TOKENS, DelegationTokenManager,
                                                TokenInformation, decode_token, encode_token,
                                                filter_token)
from kafkapy.security.sasl import SaslAuthenticationError
from kafkapy.security.sasl.client import ScramClient
from kafkapy.security.sasl.scram import ScramServer
from tests.support.metadata_store import embedded_store

ALICE = KafkaPrincipal("User", "alice")
BOB = KafkaPrincipal("User", "bob")
CAROL = KafkaPrincipal("User", "carol")
HOUR = 3600 * 1000


@pytest.fixture
def env(tmp_path):
    with embedded_store(tmp_path) as store:
        clock = MockClock(1_700_000_000_000)
        manager = DelegationTokenManager(store, clock, "secret", max_lifetime_ms=48 * HOUR,
                                         expiry_time_ms=24 * HOUR)
        manager.start()
        yield store, clock, manager


def test_create_writes_kafkas_znode_and_a_notification(env):
    store, clock, manager = env
    result = manager.create(ALICE, ALICE, [BOB], -1)
    assert result.error == 0 and len(result.token_id) == 22
    assert result.hmac == hmac.new(b"secret", result.token_id.encode(), hashlib.sha512).digest()
    assert (result.issue_timestamp, result.expiry_timestamp, result.max_timestamp) == (
        clock.time_ms(), clock.time_ms() + 24 * HOUR, clock.time_ms() + 48 * HOUR)
    data, _ = store.get(f"{TOKENS}/{result.token_id}")
    stored = json.loads(data)
    assert stored == {"version": 3, "owner": "User%3Aalice", "tokenRequester": "User%3Aalice",
                      "renewers": ["User%3Abob"], "issueTimestamp": result.issue_timestamp,
                      "maxTimestamp": result.max_timestamp,
                      "expiryTimestamp": result.expiry_timestamp, "tokenId": result.token_id}
    assert decode_token(data) == TokenInformation(
        result.token_id, ALICE, ALICE, (BOB,), result.issue_timestamp, result.max_timestamp,
        result.expiry_timestamp)
    changes = store.get_children(CHANGES)
    assert [store.get(f"{CHANGES}/{c}")[0] for c in changes] == [result.token_id.encode()]


def test_max_lifetime_is_capped_and_expiry_within_it(env):
    _store, clock, manager = env
    short = manager.create(ALICE, ALICE, [], HOUR)
    assert short.max_timestamp == clock.time_ms() + HOUR == short.expiry_timestamp
    long = manager.create(ALICE, ALICE, [], 1000 * HOUR)
    assert long.max_timestamp == clock.time_ms() + 48 * HOUR


def test_renew_and_expire_rules(env):
    _store, clock, manager = env
    token = manager.create(ALICE, CAROL, [BOB], -1)
    assert manager.renew(CAROL, token.hmac, HOUR) == (E.DELEGATION_TOKEN_OWNER_MISMATCH, -1)
    assert manager.renew(ALICE, b"nope", HOUR) == (E.DELEGATION_TOKEN_NOT_FOUND, -1)
    clock.advance(HOUR)
    assert manager.renew(BOB, token.hmac, 30 * HOUR) == (0, clock.time_ms() + 30 * HOUR)
    assert manager.renew(ALICE, token.hmac, -1) == (0, clock.time_ms() + 24 * HOUR)
    assert manager.renew(ALICE, token.hmac, 100 * HOUR) == (0, token.max_timestamp)
    assert manager.expire(BOB, token.hmac, HOUR) == (0, clock.time_ms() + HOUR)
    clock.advance(HOUR + 1)
    assert manager.renew(ALICE, token.hmac, HOUR) == (E.DELEGATION_TOKEN_EXPIRED, -1)
    assert manager.expire(ALICE, token.hmac, HOUR) == (E.DELEGATION_TOKEN_EXPIRED, -1)
    assert manager.expire(ALICE, token.hmac, -1) == (0, clock.time_ms())
    assert manager.expire(ALICE, token.hmac, -1) == (E.DELEGATION_TOKEN_NOT_FOUND, -1)


def test_sweep_removes_expired_tokens(env):
    store, clock, manager = env
    keep = manager.create(ALICE, ALICE, [], -1)
    gone = manager.create(ALICE, ALICE, [], HOUR)
    clock.advance(HOUR + 1)
    assert manager.expire_tokens() == [gone.token_id]
    assert store.get_children(TOKENS) == [keep.token_id]
    assert manager.credential("SCRAM-SHA-256", gone.token_id) is None


def test_disabled_without_a_secret(tmp_path):
    with embedded_store(tmp_path) as store:
        manager = DelegationTokenManager(store, MockClock(), None)
        manager.start()
        assert not manager.enabled
        assert manager.create(ALICE, ALICE, [], -1).error == E.DELEGATION_TOKEN_AUTH_DISABLED
        assert manager.renew(ALICE, b"x", 1) == (E.DELEGATION_TOKEN_AUTH_DISABLED, -1)
        assert manager.expire(ALICE, b"x", 1) == (E.DELEGATION_TOKEN_AUTH_DISABLED, -1)


def test_another_broker_learns_through_notifications(env):
    store, clock, manager = env
    other = DelegationTokenManager(store, clock, "secret")
    other.start()
    token = manager.create(ALICE, ALICE, [], -1)
    other._listener.process_changes()      # the children watch fires on the loop
    assert other.credential("SCRAM-SHA-512", token.token_id)[1:] == (
        "alice", token.expiry_timestamp - clock.time_ms())       # the time left
    assert other.renew(ALICE, token.hmac, HOUR)[0] == 0
    manager._listener.process_changes()
    assert manager.tokens(lambda t: True)[0][0].expiry_timestamp == clock.time_ms() + HOUR
    assert manager.expire(ALICE, token.hmac, -1)[0] == 0
    other._listener.process_changes()
    assert other.credential("SCRAM-SHA-512", token.token_id) is None
    late = DelegationTokenManager(store, clock, "secret")
    kept = manager.create(BOB, BOB, [], -1)
    late.start()                            # loads what is stored
    assert late.credential("SCRAM-SHA-256", kept.token_id)[1] == "bob"


def test_describe_filter():
    token = TokenInformation("t1", ALICE, CAROL, (BOB,), 0, 10, 10)
    no = lambda _x: False  # noqa: E731
    assert filter_token(BOB, None, token, no, no)
    assert filter_token(CAROL, [ALICE], token, no, no)
    assert not filter_token(CAROL, [KafkaPrincipal("User", "dave")], token, no, no)
    dave = KafkaPrincipal("User", "dave")
    assert not filter_token(dave, None, token, no, no)
    assert filter_token(dave, None, token, lambda tid: tid == "t1", no)
    assert filter_token(dave, None, token, no, lambda owner: owner == ALICE)


def test_znode_bytes_are_kafkas():
    """Key order of Kafka's Scala immutable HashMap (the integration test compares a token
    Kafka 3.9 wrote when run against it)."""
    info = TokenInformation("abc", ALICE, BOB, (), 1, 3, 2)
    data = encode_token(info)
    assert data == (b'{"issueTimestamp":1,"renewers":[],"tokenRequester":"User%3Abob",'
                    b'"tokenId":"abc","owner":"User%3Aalice","expiryTimestamp":2,'
                    b'"maxTimestamp":3,"version":3}')
    assert decode_token(data) == info
    v1 = json.dumps({"version": 1, "owner": "User%3Aalice", "renewers": [],
                     "issueTimestamp": 1, "maxTimestamp": 3, "expiryTimestamp": 2,
                     "tokenId": "abc"}).encode()
    assert decode_token(v1).requester == ALICE         # before v3 the owner requested
    with pytest.raises(ValueError):
        decode_token(b'{"version":4}')


@pytest.mark.parametrize("mechanism", ["SCRAM-SHA-256", "SCRAM-SHA-512"])
def test_scram_tokenauth_logs_in_as_the_owner(env, mechanism):
    _store, _clock, manager = env
    token = manager.create(ALICE, BOB, [], -1)
    password = base64.b64encode(token.hmac).decode()

    def login(user: str, secret: str) -> ScramServer:
        server = ScramServer(mechanism, lambda _u: None,
                             token_lookup=lambda tid: manager.credential(mechanism, tid))
        client = ScramClient(mechanism, user, secret, extensions={"tokenauth": "true"})
        client.evaluate(server.evaluate(client.evaluate(server.evaluate(client.first()))))
        return server
    server = login(token.token_id, password)
    assert server.complete and server.principal_name == "alice" and server.token_authenticated
    assert server.credential_left_ms == token.expiry_timestamp - _clock.time_ms()
    with pytest.raises(SaslAuthenticationError):
        login(token.token_id, "wrong")
    manager.expire(ALICE, token.hmac, -1)
    with pytest.raises(SaslAuthenticationError):
        login(token.token_id, password)


def test_a_token_session_ends_at_the_tokens_expiry():
    """Kafka's credential expiration: the session of a token login lasts until the token's
    expiry (0 left: the next request closes the connection)."""
    import time as _time
    from types import SimpleNamespace

    from kafkapy.config.broker import BrokerConfig
    from kafkapy.security import gate as G

    def login(left_ms: int) -> G.SaslGate:
        seen = []
        gate = G.SaslGate(BrokerConfig.from_properties({}), "SASL_PLAINTEXT", seen.append)
        auth = gate.auth_for(1)
        auth.begin(SimpleNamespace(mechanism="SCRAM-SHA-256"))
        assert auth.authenticated("alice", True, left_ms) == max(left_ms, 0)
        assert seen[0] == ALICE and seen[0].token_authenticated
        return gate
    gate = login(10_000)
    assert gate.admit(3, 10, now=_time.monotonic() + 5) == G.SERVE
    assert gate.admit(3, 10, now=_time.monotonic() + 11) == G.CLOSE
    expired = login(0)
    assert expired.admit(3, 10, now=_time.monotonic()) == G.CLOSE
