"""DescribeClientQuotas (48) cases: read-only on both brokers (no quotas are stored, so
these compare the filter checks and empty answers)."""
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
