"""SCRAM credentials in ZooKeeper: Kafka's bytes, ZkAdminManager's checks and messages, the
broker's cache following ``users/<name>`` notifications; on a real ZooKeeper."""
from __future__ import annotations

import base64
import json
from types import SimpleNamespace

import pytest

from kafkapy.security.sasl import credentials as c
from tests.support.zookeeper_server import zk, zk_connect, zookeeper_server  # noqa: F401 (fixtures)

# What Kafka 3.9's kafka-configs.sh wrote to ZooKeeper for
#   --add-config 'SCRAM-SHA-256=[iterations=8192,password=alice-secret],SCRAM-SHA-512=[password=alice-secret]'
KAFKA_ALICE = (
    b'{"version":1,"config":{"SCRAM-SHA-512":"salt=c2FuYjB6cnc2cXc3b2ttNzh2ZnFnbW40YQ==,'
    b'stored_key=sSS/ZANKN4b4U7s+Eged7MML34e8yIirnTq9V6bo7dQtiiEzVawJJX3nvmvslAU4VRNYGNq8dO1kyzK0rf5IkA==,'
    b'server_key=ale7LkC5k7L1TzMZW2FvcTdHLEBUXmdyY+rJs+4tmloanbSSwpmYZ6q0klSx+pREnyIZfJ1IdIsUBQgluGhCWw==,'
    b'iterations=4096","SCRAM-SHA-256":"salt=bmsyZXh1Zm1jM2dnNWRxY3Rkd28xYXBnYg==,'
    b'stored_key=52LYKrZ/pnq/mPmlcU6sjlLaLshfRvnIgLPm8HPsJi0=,'
    b'server_key=RKN1mw5AS7btsoMnrK8rfkf0X3afC+7HgzSkCelkqZc=,iterations=8192"}}')
ALICE_512_SALT = base64.b64decode("c2FuYjB6cnc2cXc3b2ttNzh2ZnFnbW40YQ==")
ALICE_256_SALT = base64.b64decode("bmsyZXh1Zm1jM2dnNWRxY3Rkd28xYXBnYg==")


def test_znode_bytes_equal_kafkas():
    config = {"SCRAM-SHA-256": c.generate("SCRAM-SHA-256", "alice-secret", 8192, ALICE_256_SALT).to_string(),
              "SCRAM-SHA-512": c.generate("SCRAM-SHA-512", "alice-secret", 4096, ALICE_512_SALT).to_string()}
    assert c.encode_user_config(config) == KAFKA_ALICE


def test_credential_string_round_trip_and_errors():
    text = json.loads(KAFKA_ALICE)["config"]["SCRAM-SHA-256"]
    assert c.ScramCredential.from_string(text).to_string() == text
    for bad in ("salt=AA==,stored_key=AA==,server_key=AA==", "iterations=1", "=x",
                text + ",extra=1"):
        with pytest.raises(ValueError, match="Credentials not valid"):
            c.ScramCredential.from_string(bad)


def test_sanitize_as_kafka():
    # Kafka's Sanitizer wrote /config/users/bob%20smith%2Bx%2A%7E for "bob smith+x*~".
    assert c.sanitize("bob smith+x*~") == "bob%20smith%2Bx%2A%7E"
    assert c.desanitize("bob%20smith%2Bx%2A%7E") == "bob smith+x*~"
    assert c.sanitize("a.b-c_d") == "a.b-c_d"
    assert c.desanitize(c.sanitize("ünï/c@de")) == "ünï/c@de"


def test_random_strings_are_base36():
    values = {c.random_string() for _ in range(20)}
    assert len(values) == 20 and all(v.isalnum() and v == v.lower() for v in values)


# -- alter / describe on ZooKeeper ----------------------------------------------------

def _broker(zk):  # noqa: F811
    return SimpleNamespace(store=zk, scram_credentials=c.CredentialCache(zk))


def _up(name, mechanism=1, iterations=4096):
    return (name, mechanism, iterations, b"salt", bytes(32))


def test_alter_and_describe(zk):  # noqa: F811
    broker = _broker(zk)
    assert c.alter(broker.store, broker.scram_credentials, [_up("alice"), _up("alice", 2, 8192)], []) == [("alice", 0, "")]
    stored = json.loads(zk.get("/config/users/alice")[0])["config"]
    assert list(stored) == ["SCRAM-SHA-512", "SCRAM-SHA-256"]
    assert c.ScramCredential.from_string(stored["SCRAM-SHA-256"]) == \
        c.credential_from_salted("SCRAM-SHA-256", b"salt", bytes(32), 4096)
    change = sorted(zk.get_children("/config/changes"))[-1]
    assert json.loads(zk.get(f"/config/changes/{change}")[0]) == \
        {"version": 2, "entity_path": "users/alice"}
    assert c.describe(broker.store, None) == (0, "", [("alice", 0, "", [(1, 4096), (2, 8192)])])
    assert c.describe(broker.store, ["alice", "nobody", ""]) == (0, "", [
        ("alice", 0, "", [(1, 4096), (2, 8192)]),
        ("nobody", 91, "Attempt to describe a user credential that does not exist: nobody", []),
        ("", 91, "Username must not be empty", [])])
    assert c.describe(broker.store, ["alice", "alice"]) == (0, "", [
        ("alice", 92, "Cannot describe SCRAM credentials for the same user twice in a single "
                      "request: alice", [])])


def test_alter_refusals(zk):  # noqa: F811
    broker = _broker(zk)
    assert c.alter(broker.store, broker.scram_credentials, [_up("a", iterations=4095), _up("b", iterations=16385),
                            _up("m", mechanism=3), _up("")], []) == [
        ("a", 93, "Too few iterations"), ("b", 93, "Too many iterations"),
        ("m", 33, "Unknown SCRAM mechanism"), ("", 93, "Username must not be empty")]
    assert c.alter(broker.store, broker.scram_credentials, [_up("d"), _up("d")], []) == [
        ("d", 92, "A user credential cannot be altered twice in the same request")]
    assert c.alter(broker.store, broker.scram_credentials, [], [("e", 1)]) == [
        ("e", 91, "Attempt to delete a user credential that does not exist")]
    assert zk.exists("/config/users/d") is None and zk.exists("/config/users/e") is None


def test_delete_last_credential_drops_the_znode_keeps_other_keys(zk):  # noqa: F811
    broker = _broker(zk)
    c.alter(broker.store, broker.scram_credentials, [_up("f")], [])
    assert c.alter(broker.store, broker.scram_credentials, [], [("f", 1)]) == [("f", 0, "")]
    assert zk.exists("/config/users/f") is None
    zk.create("/config/users/g", b'{"version":1,"config":{"producer_byte_rate":"1024"}}')
    c.alter(broker.store, broker.scram_credentials, [_up("g")], [])
    c.alter(broker.store, broker.scram_credentials, [], [("g", 1)])
    assert json.loads(zk.get("/config/users/g")[0])["config"] == {"producer_byte_rate": "1024"}


def test_cache_follows_changes(zk):  # noqa: F811
    broker = _broker(zk)
    zk.ensure_path("/config/users")
    zk.create("/config/users/bob%20smith", KAFKA_ALICE)       # written by someone else
    cache = broker.scram_credentials
    assert cache.get("SCRAM-SHA-256", "bob smith").iterations == 8192
    assert cache.get("SCRAM-SHA-256", "carol") is None
    c.alter(broker.store, broker.scram_credentials, [_up("carol", 2)], [])                     # alter refreshes its own broker
    assert cache.get("SCRAM-SHA-512", "carol").iterations == 4096
    zk.delete("/config/users/bob%20smith")
    cache.user_changed("bob%20smith")                          # a users/<name> notification
    assert cache.get("SCRAM-SHA-256", "bob smith") is None
    zk.create("/config/users/bad", b'{"version":1,"config":{"SCRAM-SHA-256":"nonsense"}}')
    cache.user_changed("bad")
    assert cache.get("SCRAM-SHA-256", "bad") is None
