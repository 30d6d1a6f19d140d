"""SASL and SCRAM credential cases: SaslHandshake (17), SaslAuthenticate (36),
DescribeUserScramCredentials (50), AlterUserScramCredentials (51).

The suite's listeners are PLAINTEXT, where Kafka's KafkaApis answers both SASL APIs with
ILLEGAL_SASL_STATE.  The credential APIs are compared fully (both brokers are their
cluster's controller): users are named after the case, so cases stay independent; the
describe-everything case sees what earlier cases created, the same on both sides.
"""
from __future__ import annotations

from tests.conformance.cases import Side, for_api
from tests.conformance.cases.common import case

SHA256, SHA512 = 1, 2
_SALT = b"7hxotvbtkhsgqsfc2z2ofhbn4"
_SALTED = bytes(range(32))


def _up(name: str, mechanism: int = SHA256, iterations: int = 4096) -> dict:
    return {"name": name, "mechanism": mechanism, "iterations": iterations,
            "salt": _SALT, "salted_password": _SALTED}


def _alter(upsertions=(), deletions=()) -> dict:
    return {"upsertions": list(upsertions), "deletions": list(deletions)}


def _created(*upsertions: dict):
    def setup(side: Side) -> None:
        answer = side.call(51, 0, _alter(upsertions))
        bad = [r for r in answer.results if r.error_code != 0]
        if bad:
            raise AssertionError(f"{side.name}: setting up SCRAM users failed: {bad}")
    return setup


@for_api(17)
def sasl_handshake(v: int):
    yield case("plain-on-plaintext", {"mechanism": "PLAIN"})
    yield case("unknown-on-plaintext", {"mechanism": "NOPE"})


@for_api(36)
def sasl_authenticate(v: int):
    yield case("on-plaintext", {"auth_bytes": b"\0alice\0alice-secret"})


@for_api(50)
def describe_user_scram_credentials(v: int):
    u = f"dusc{v}"
    yield case("one-user", {"users": [{"name": f"{u}-a"}]},
               setup=_created(_up(f"{u}-a"), _up(f"{u}-a", SHA512, 8192)))
    yield case("unknown-user", {"users": [{"name": f"{u}-none"}]})
    yield case("empty-name", {"users": [{"name": ""}]})
    yield case("twice", {"users": [{"name": f"{u}-b"}, {"name": f"{u}-b"}]},
               setup=_created(_up(f"{u}-b")))
    yield case("mixed", {"users": [{"name": f"{u}-c"}, {"name": f"{u}-none2"}, {"name": ""}]},
               setup=_created(_up(f"{u}-c", SHA512)))
    yield case("all-null", {"users": None})
    yield case("all-empty", {"users": []})


@for_api(51)
def alter_user_scram_credentials(v: int):
    u = f"ausc{v}"
    yield case("upsert", _alter([_up(f"{u}-a")]))
    yield case("upsert-both", _alter([_up(f"{u}-b"), _up(f"{u}-b", SHA512, 16384)]))
    yield case("replace", _alter([_up(f"{u}-c", iterations=5000)]), setup=_created(_up(f"{u}-c")))
    yield case("too-few-iterations", _alter([_up(f"{u}-d", iterations=4095)]))
    yield case("too-many-iterations", _alter([_up(f"{u}-e", iterations=16385)]))
    yield case("unknown-mechanism", _alter([_up(f"{u}-f", mechanism=0)]))
    yield case("unknown-mechanism-delete", _alter(deletions=[{"name": f"{u}-g", "mechanism": 3}]))
    yield case("empty-name", _alter([_up("")]))
    yield case("empty-name-delete", _alter(deletions=[{"name": "", "mechanism": SHA256}]))
    yield case("twice", _alter([_up(f"{u}-h"), _up(f"{u}-h", iterations=8192)]))
    yield case("delete-missing", _alter(deletions=[{"name": f"{u}-i", "mechanism": SHA256}]))
    yield case("delete", _alter(deletions=[{"name": f"{u}-j", "mechanism": SHA512}]),
               setup=_created(_up(f"{u}-j"), _up(f"{u}-j", SHA512)))
    yield case("delete-last", _alter(deletions=[{"name": f"{u}-k", "mechanism": SHA256}]),
               setup=_created(_up(f"{u}-k")))
    yield case("upsert-and-delete", _alter([_up(f"{u}-l", SHA512)],
                                           [{"name": f"{u}-l", "mechanism": SHA256}]),
               setup=_created(_up(f"{u}-l")))
    yield case("mixed", _alter([_up(f"{u}-m"), _up(f"{u}-n", iterations=1)],
                               [{"name": f"{u}-o", "mechanism": SHA256}]))
    yield case("nothing", _alter())
