"""The delegation token handlers with the AclAuthorizer on an embedded store: which
connections may ask, CREATE_TOKENS for another owner, the describe filter by DESCRIBE on
DELEGATION_TOKEN and DESCRIBE_TOKENS on USER (Kafka's KafkaApis rules)."""
from __future__ import annotations

import pytest

from kafkapy.api.principal import ANONYMOUS, KafkaPrincipal, Session
from kafkapy.clock import MockClock
from kafkapy.handlers import create_delegation_token as create
from kafkapy.handlers import describe_delegation_token as describe
from kafkapy.handlers import expire_delegation_token as expire
from kafkapy.protocol.delegation_token_apis import (CreateDelegationTokenRequest,
                                                    DescribeDelegationTokenRequest,
                                                    ExpireDelegationTokenRequest)
from kafkapy.security import acls as A
from kafkapy.security.authorizer import AclAuthorizer
from kafkapy.security.delegation_tokens import DelegationTokenManager
from tests.support.services import context, services

ALICE = KafkaPrincipal("User", "alice")
BOB = KafkaPrincipal("User", "bob")
ADMIN = KafkaPrincipal("User", "admin")


@pytest.fixture
def parts(store):
    authorizer = AclAuthorizer(store)
    authorizer.start()
    clock = MockClock()
    tokens = DelegationTokenManager(store, clock, "secret")
    tokens.start()
    return services(authorizer=authorizer, delegation_tokens=tokens, clock=clock)


def _ctx(parts, api_key, version, principal, protocol="SASL_PLAINTEXT"):
    return context(parts, api_key, version,
                   session=Session(principal, "127.0.0.1", "SASL", protocol))


def _create(parts, principal, owner=None, renewers=(), protocol="SASL_PLAINTEXT"):
    request = CreateDelegationTokenRequest(
        version=3, owner_principal_type="User" if owner else None, owner_principal_name=owner,
        renewers=[CreateDelegationTokenRequest.CreatableRenewers(
            principal_type=t, principal_name=n) for t, n in renewers], max_lifetime_ms=-1)
    return create.handle(_ctx(parts, 38, 3, principal, protocol), request)


def _allow(parts, resource_type, name, principal, op):
    results = parts.authorizer.create_acls([A.AclBinding(
        A.Pattern(resource_type, name, A.LITERAL), A.AclEntry(str(principal), "*", op, A.ALLOW))])
    assert all(code == 0 for code, _ in results)


@pytest.mark.parametrize("protocol,principal", [
    ("PLAINTEXT", ALICE), ("SSL", ANONYMOUS),
    ("SASL_SSL", KafkaPrincipal("User", "alice", token_authenticated=True))],
    ids=["plaintext", "ssl-without-certificate", "token-authenticated"])
def test_refused_connections(parts, protocol, principal):
    answer = _create(parts, principal, protocol=protocol)
    assert (answer.error_code, answer.principal_name, answer.token_id,
            answer.issue_timestamp_ms) == (64, principal.name, "", -1)
    assert describe.handle(_ctx(parts, 41, 3, principal, protocol),
                           DescribeDelegationTokenRequest(version=3, owners=None)).error_code == 64


def test_ssl_with_a_certificate_may_ask(parts):
    assert _create(parts, KafkaPrincipal("User", "CN=alice"), protocol="SSL").error_code == 0


def test_create_for_another_owner_needs_create_tokens(parts):
    denied = _create(parts, ADMIN, owner="alice")
    assert (denied.error_code, denied.principal_name, denied.token_requester_principal_name) == (
        65, "alice", "admin")
    _allow(parts, A.USER, "User:alice", ADMIN, A.CREATE_TOKENS)
    made = _create(parts, ADMIN, owner="alice")
    assert (made.error_code, made.principal_name, made.token_requester_principal_name) == (
        0, "alice", "admin")
    assert _create(parts, ALICE, renewers=[("Group", "g")]).error_code == 67


def test_describe_filters_by_acls(parts):
    mine = _create(parts, ALICE, renewers=[("User", "bob")])
    other = _create(parts, ADMIN)

    def seen(principal, owners=None):
        owners = None if owners is None else [
            DescribeDelegationTokenRequest.DescribeDelegationTokenOwner(
                principal_type="User", principal_name=o) for o in owners]
        answer = describe.handle(_ctx(parts, 41, 3, principal),
                                 DescribeDelegationTokenRequest(version=3, owners=owners))
        assert answer.error_code == 0
        return {t.token_id for t in answer.tokens}
    assert seen(ALICE) == {mine.token_id}
    assert seen(BOB) == {mine.token_id}                    # a renewer
    assert seen(BOB, ["admin"]) == set()
    assert seen(ALICE, []) == set()                        # an empty list: nothing
    _allow(parts, A.DELEGATION_TOKEN, other.token_id, BOB, A.DESCRIBE)
    assert seen(BOB) == {mine.token_id, other.token_id}
    carol = KafkaPrincipal("User", "carol")
    _allow(parts, A.USER, "User:alice", carol, A.DESCRIBE_TOKENS)
    assert seen(carol) == {mine.token_id}


def test_expire_by_a_renewer_and_not_by_the_requester(parts):
    _allow(parts, A.USER, "User:alice", ADMIN, A.CREATE_TOKENS)
    token = _create(parts, ADMIN, owner="alice", renewers=[("User", "bob")])
    request = ExpireDelegationTokenRequest(version=2, hmac=token.hmac, expiry_time_period_ms=-1)
    assert expire.handle(_ctx(parts, 40, 2, ADMIN), request).error_code == 63
    answer = expire.handle(_ctx(parts, 40, 2, BOB), request)
    assert (answer.error_code, answer.expiry_timestamp_ms) == (0, parts.clock.time_ms())
