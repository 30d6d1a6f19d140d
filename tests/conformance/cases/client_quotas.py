"""DescribeClientQuotas (48) cases: the filter checks and answers; AlterClientQuotas (49)
cases: validate-only changes and Kafka's refusals (changes that would be stored name an
entity of their own, so the describe cases still see no quotas)."""
from __future__ import annotations

from tests.conformance.cases import for_api
from tests.conformance.cases.common import case


def _c(entity_type: str, match_type: int, match=None) -> dict:
    return {"entity_type": entity_type, "match_type": match_type, "match": match}


@for_api(48)
def describe_client_quotas(v: int):
    yield case("all", {"components": [], "strict": False})
    yield case("all-strict", {"components": [], "strict": True})
    yield case("user-exact", {"components": [_c("user", 0, "alice")], "strict": True})
    yield case("user-default", {"components": [_c("user", 1)], "strict": False})
    yield case("user-any-client-any", {"components": [_c("user", 2), _c("client-id", 2)],
                                       "strict": True})
    yield case("ip-any", {"components": [_c("ip", 2)], "strict": False})
    yield case("ip-exact", {"components": [_c("ip", 0, "127.0.0.1")], "strict": False})
    yield case("duplicate-user", {"components": [_c("user", 2), _c("user", 0, "a")],
                                  "strict": False})
    yield case("empty-type", {"components": [_c("", 2)], "strict": False})
    yield case("custom-type", {"components": [_c("group", 2)], "strict": False})
    yield case("ip-with-user", {"components": [_c("user", 2), _c("ip", 2)], "strict": False})
    yield case("bad-match-type", {"components": [_c("user", 7)], "strict": False})
    yield case("exact-null", {"components": [_c("client-id", 0, None)], "strict": False})


def _alter(entity: list, ops: list, validate_only: bool = True) -> dict:
    return {"entries": [{"entity": [{"entity_type": t, "entity_name": n} for t, n in entity],
                         "ops": [{"key": k, "value": v, "remove": r} for k, v, r in ops]}],
            "validate_only": validate_only}


@for_api(49)
def alter_client_quotas(v: int):
    rate = [("producer_byte_rate", 1024.0, False)]
    yield case("client-validate", _alter([("client-id", "app")], rate))
    yield case("user-client-validate", _alter([("user", "alice"), ("client-id", None)],
                                              [("request_percentage", 12.5, False)]))
    yield case("ip-default-validate", _alter([("ip", None)],
                                             [("connection_creation_rate", 5.0, False)]))
    yield case("remove-absent", _alter([("client-id", f"gone-v{v}")],
                                       [("consumer_byte_rate", 0.0, True)], validate_only=False))
    yield case("empty-entity", _alter([], rate))
    yield case("empty-name", _alter([("user", "")], rate))
    yield case("not-integral", _alter([("client-id", "app")],
                                      [("producer_byte_rate", 1.5, False)]))
    yield case("unknown-key", _alter([("client-id", "app")], [("nope", 1.0, False)]))
    yield case("ip-key-for-client", _alter([("client-id", "app")],
                                           [("connection_creation_rate", 1.0, False)]))
    yield case("ip-with-user", _alter([("user", "u"), ("ip", "127.0.0.1")], rate))
    yield case("custom-type", _alter([("group", "g")], rate))
    yield case("bad-ip", _alter([("ip", "no such host.invalid")],
                                [("connection_creation_rate", 1.0, False)]))
