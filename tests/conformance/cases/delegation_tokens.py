"""Delegation token cases: CreateDelegationToken (38), RenewDelegationToken (39),
ExpireDelegationToken (40), DescribeDelegationToken (41).

The suite's listeners are PLAINTEXT, where Kafka answers all four
DELEGATION_TOKEN_REQUEST_NOT_ALLOWED (before any other check: an owner the requester may
not name, a renewer that is no User, an unknown HMAC), Create with the requester
``User:ANONYMOUS`` as owner and -1 timestamps.  Tokens themselves need a SASL or SSL
listener: tests/integration/test_delegation_tokens.py, which runs against Kafka 3.9 too.
"""
from __future__ import annotations

from kafkapy.protocol import delegation_token_apis  # noqa: F401 (registers 38-41)
from tests.conformance.cases import for_api
from tests.conformance.cases.common import case


def _create(v: int, renewers=(), owner=None, max_lifetime_ms: int = -1) -> dict:
    fields = {"renewers": [{"principal_type": t, "principal_name": n} for t, n in renewers],
              "max_lifetime_ms": max_lifetime_ms}
    if v >= 3:
        fields.update(owner_principal_type="User" if owner else None,
                      owner_principal_name=owner)
    return fields


@for_api(38)
def create_delegation_token(v: int):
    yield case("on-plaintext", _create(v))
    yield case("renewers-on-plaintext", _create(v, [("User", "bob"), ("Group", "g")], None, 1000))
    if v >= 3:
        yield case("owner-on-plaintext", _create(v, owner="alice"))


@for_api(39)
def renew_delegation_token(v: int):
    yield case("on-plaintext", {"hmac": b"\x01\x02", "renew_period_ms": -1})


@for_api(40)
def expire_delegation_token(v: int):
    yield case("on-plaintext", {"hmac": b"\x01\x02", "expiry_time_period_ms": -1})


@for_api(41)
def describe_delegation_token(v: int):
    yield case("all-on-plaintext", {"owners": None})
    yield case("none-on-plaintext", {"owners": []})
    yield case("owner-on-plaintext",
               {"owners": [{"principal_type": "User", "principal_name": "alice"}]})
