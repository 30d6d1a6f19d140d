"""Delegation tokens on a real broker with SASL_PLAINTEXT/SCRAM on a real ZooKeeper.

- the four APIs over the wire: refused on PLAINTEXT and on a token-authenticated
  connection, INVALID_PRINCIPAL_TYPE, OWNER_MISMATCH, renew, describe by owner;
- SCRAM with ``tokenauth=true`` logs in as the token's owner; an expired token fails the
  next login; the expiry sweep removes the znode; a second broker learns a token from the
  change notifications and the first forgets it when the second expires it;
- Kafka 3.9's ``kafka-delegation-tokens.sh`` creates, describes, renews and expires, and
  Kafka's console producer and consumer (kafka-clients 3.9.0) produce and consume with the
  token; ``kafkapy-delegation-tokens`` prints what Kafka's tool prints.

librdkafka (confluent-kafka) has no ``tokenauth`` SCRAM extension, so it cannot use a token.
KAFKAPY_SASL_REFERENCE=kafka runs the module against Apache Kafka 3.9 (ZooKeeper mode) with
the same settings: how the tests themselves are checked against Kafka.
"""
from __future__ import annotations

import base64
import json
import os
import re
import shutil
import subprocess
import time

import pytest
from kazoo.client import KazooClient

from kafkapy.cli import configs, delegation_tokens
from kafkapy.protocol import delegation_token_apis as api
from kafkapy.security.delegation_tokens import decode_token, encode_token
from kafkapy.security.sasl.client import ScramClient
from tests.support.broker_process import BrokerProcess, free_port
from tests.support.sasl import KAFKA_HOME, _KafkaBroker
from tests.support.wire import WireClient
from tests.support.zookeeper_server import new_chroot
from tests.support.zookeeper_server import zookeeper_server  # noqa: F401 (fixture)

REFERENCE = os.environ.get("KAFKAPY_SASL_REFERENCE", "")
SCRAM_JAAS = "org.apache.kafka.common.security.scram.ScramLoginModule required;"
MECHANISM = "SCRAM-SHA-256"
OWNER, OWNER_SECRET = "tk-owner", "tk-owner-secret"
OTHER, OTHER_SECRET = "tk-other", "tk-other-secret"


def _start(base, connect: str, node_id: int):
    """A broker with PLAINTEXT (inter-broker, admin) and SASL_PLAINTEXT listeners, tokens
    enabled, the expiry sweep every second."""
    port, sasl_port = free_port(), free_port()
    listeners = f"PLAINTEXT://127.0.0.1:{port},SASL_PLAINTEXT://127.0.0.1:{sasl_port}"
    kind = _KafkaBroker if REFERENCE == "kafka" else BrokerProcess
    broker = kind(base / "logs", port=port, overrides={
        "zookeeper.connect": connect, "broker.id": str(node_id),
        "listeners": listeners, "advertised.listeners": listeners,
        "inter.broker.listener.name": "PLAINTEXT",
        "listener.name.sasl_plaintext.sasl.enabled.mechanisms": "SCRAM-SHA-256,SCRAM-SHA-512",
        "listener.name.sasl_plaintext.scram-sha-256.sasl.jaas.config": SCRAM_JAAS,
        "listener.name.sasl_plaintext.scram-sha-512.sasl.jaas.config": SCRAM_JAAS,
        "delegation.token.secret.key": "token-secret",
        "delegation.token.expiry.check.interval.ms": "1000",
    })
    broker.start()
    broker.sasl_bootstrap = f"127.0.0.1:{sasl_port}"
    return broker


@pytest.fixture(scope="module")
def broker(tmp_path_factory, zookeeper_server):  # noqa: F811
    """One broker (see ``_start``) and two SCRAM users."""
    connect = new_chroot(zookeeper_server, "tokens")
    broker = _start(tmp_path_factory.mktemp("tokens"), connect, 0)
    broker.connect = connect
    broker.zk = KazooClient(connect)
    broker.zk.start()
    try:
        for user, secret in ((OWNER, OWNER_SECRET), (OTHER, OTHER_SECRET)):
            assert configs.main(["--bootstrap-server", broker.bootstrap, "--alter",
                                 "--add-config", f"{MECHANISM}=[password={secret}]",
                                 "--entity-type", "users", "--entity-name", user]) == 0
            _login(broker, user, secret).close()
        yield broker
    finally:
        broker.zk.stop()
        broker.stop()


def _scram(broker, user: str, secret: str, token: bool) -> tuple[WireClient, object]:
    conn = WireClient(broker.sasl_bootstrap)
    assert conn.request(17, 1, mechanism=MECHANISM).error_code == 0
    client = ScramClient(MECHANISM, user, secret,
                         extensions={"tokenauth": "true"} if token else None)
    first = conn.request(36, 2, auth_bytes=client.first())
    if first.error_code:
        return conn, first
    return conn, conn.request(36, 2, auth_bytes=client.evaluate(first.auth_bytes))


def _login(broker, user: str, secret: str, token: bool = False) -> WireClient:
    """An authenticated connection (retried until the broker has learned the credential)."""
    deadline = time.monotonic() + 30
    while True:
        conn, answer = _scram(broker, user, secret, token)
        if answer.error_code == 0:
            return conn
        conn.close()
        assert time.monotonic() < deadline, answer.error_message
        time.sleep(0.2)


def _create(conn: WireClient, renewers=(), max_lifetime_ms: int = -1, owner=None):
    return conn.request(38, 3, owner_principal_type="User" if owner else None,
                        owner_principal_name=owner, max_lifetime_ms=max_lifetime_ms,
                        renewers=[api.CreateDelegationTokenRequest.CreatableRenewers(
                            principal_type=t, principal_name=n) for t, n in renewers])


def _describe(conn: WireClient, owners):
    return conn.request(41, 3, owners=None if owners is None else [
        api.DescribeDelegationTokenRequest.DescribeDelegationTokenOwner(
            principal_type="User", principal_name=o) for o in owners])


def _password(hmac: bytes) -> str:
    return base64.b64encode(bytes(hmac)).decode()


def test_apis_over_the_wire(broker):
    plain = WireClient(broker.bootstrap)
    refused = _create(plain)
    assert (refused.error_code, refused.token_id, refused.max_timestamp_ms) == (64, "", -1)
    assert plain.request(39, 2, hmac=b"x", renew_period_ms=1).error_code == 64
    assert _describe(plain, None).error_code == 64
    plain.close()

    owner = _login(broker, OWNER, OWNER_SECRET)
    assert _create(owner, renewers=[("Group", "g")]).error_code == 67
    created = _create(owner, renewers=[("User", OTHER)])
    assert created.error_code == 0
    assert (created.principal_name, created.token_requester_principal_name) == (OWNER, OWNER)
    assert created.max_timestamp_ms - created.issue_timestamp_ms == 7 * 24 * 3600 * 1000
    assert created.expiry_timestamp_ms - created.issue_timestamp_ms == 24 * 3600 * 1000
    data = broker.zk.get(f"/delegation_token/tokens/{created.token_id}")[0]
    assert encode_token(decode_token(data)) == data     # Kafka's bytes, key order included
    stored = json.loads(data)
    assert (stored["owner"], stored["renewers"], stored["version"]) == (
        "User%3Atk-owner", ["User%3Atk-other"], 3)

    other = _login(broker, OTHER, OTHER_SECRET)
    described = _describe(other, [OWNER])       # a renewer sees it
    assert [(t.token_id, t.principal_name, [r.principal_name for r in t.renewers])
            for t in described.tokens] == [(created.token_id, OWNER, [OTHER])]
    assert _describe(other, []).tokens == []
    renewed = other.request(39, 2, hmac=created.hmac, renew_period_ms=3600 * 1000)
    assert renewed.error_code == 0
    assert 0 < renewed.expiry_timestamp_ms - created.issue_timestamp_ms <= 3600 * 1000 + 60000
    mine = _create(other)
    assert owner.request(40, 2, hmac=mine.hmac, expiry_time_period_ms=-1).error_code == 63
    # without an authorizer every DESCRIBE is allowed: the other user's token shows too
    assert {t.token_id for t in _describe(owner, None).tokens} >= {created.token_id,
                                                                   mine.token_id}

    tokened, login = _scram(broker, created.token_id, _password(created.hmac), token=True)
    assert login.error_code == 0      # the session ends when the token (renewed: 1 h) does
    assert 3_500_000 < login.session_lifetime_ms <= 3_600_000
    assert _create(tokened).error_code == 64           # not over a token's connection
    assert tokened.request(3, 1, topics=[]).brokers    # but served as its owner
    assert owner.request(40, 2, hmac=created.hmac, expiry_time_period_ms=-1).error_code == 0
    conn, answer = _scram(broker, created.token_id, _password(created.hmac), token=True)
    assert answer.error_code == 58 and conn.is_closed()
    assert owner.request(39, 2, hmac=created.hmac, renew_period_ms=1).error_code == 62
    for c in (owner, other, tokened):
        c.close()


def test_expired_tokens_are_swept(broker):
    owner = _login(broker, OWNER, OWNER_SECRET)
    token = _create(owner, max_lifetime_ms=1500)
    owner.close()
    assert token.expiry_timestamp_ms == token.max_timestamp_ms == token.issue_timestamp_ms + 1500
    path = f"/delegation_token/tokens/{token.token_id}"
    assert broker.zk.exists(path)
    deadline = time.monotonic() + 15
    while broker.zk.exists(path):
        assert time.monotonic() < deadline, "the sweep did not remove the token"
        time.sleep(0.2)
    conn, answer = _scram(broker, token.token_id, _password(token.hmac), token=True)
    assert answer.error_code == 58
    conn.close()


def _command_config(tmp_path, user: str, secret: str, token: bool = False) -> str:
    path = tmp_path / f"{user[:12]}.properties"
    extra = ' tokenauth="true"' if token else ""
    path.write_text("security.protocol=SASL_PLAINTEXT\n"
                    f"sasl.mechanism={MECHANISM}\n"
                    "sasl.jaas.config=org.apache.kafka.common.security.scram.ScramLoginModule "
                    f'required username="{user}" password="{secret}"{extra};\n')
    return str(path)


def _kafka_tool(script: str, *args: str, stdin: str | None = None) -> subprocess.CompletedProcess:
    return subprocess.run([str(KAFKA_HOME / "bin" / script), *args], input=stdin,
                          capture_output=True, text=True, timeout=120)


def _rows(out: str) -> list[list[str]]:
    """The token rows of the tools' table (after the TOKENID header)."""
    lines = [line.split() for line in out.splitlines() if line.strip()]
    start = next(i for i, line in enumerate(lines) if line[:1] == ["TOKENID"])
    return lines[start + 1:]


def test_kafka_tool_and_java_clients_with_a_token(broker, tmp_path):
    if not (KAFKA_HOME / "bin").exists() or not shutil.which("java"):
        pytest.fail("Kafka 3.9 and java are required")
    owner_config = _command_config(tmp_path, OWNER, OWNER_SECRET)
    tool = ["--bootstrap-server", broker.sasl_bootstrap, "--command-config", owner_config]
    run = _kafka_tool("kafka-delegation-tokens.sh", *tool, "--create",
                      "--max-life-time-period", "-1", "--renewer-principal", f"User:{OTHER}")
    assert run.returncode == 0, run.stderr
    assert run.stdout.startswith("Calling create token operation with renewers :"
                                 f"[User:{OTHER}] , max-life-time-period :-1\n")
    token_id = re.search(r"Created delegation token with tokenId : (\S+)", run.stdout).group(1)
    row = _rows(run.stdout)[0]
    hmac = row[1]
    assert row[:5] == [token_id, hmac, f"User:{OWNER}", f"User:{OWNER}", f"[User:{OTHER}]"]

    token_config = _command_config(tmp_path, token_id, hmac, token=True)
    topic = "token-topic"
    produced = _kafka_tool("kafka-console-producer.sh", "--bootstrap-server",
                           broker.sasl_bootstrap, "--topic", topic, "--producer.config",
                           token_config, stdin="with-a-token\n")
    assert produced.returncode == 0, produced.stderr
    consumed = _kafka_tool("kafka-console-consumer.sh", "--bootstrap-server",
                           broker.sasl_bootstrap, "--topic", topic, "--from-beginning",
                           "--max-messages", "1", "--timeout-ms", "30000",
                           "--consumer.config", token_config)
    assert consumed.stdout.splitlines() == ["with-a-token"], consumed.stderr

    run = _kafka_tool("kafka-delegation-tokens.sh", *tool, "--describe",
                      "--owner-principal", f"User:{OWNER}")
    assert run.returncode == 0, run.stderr
    assert [r[:5] for r in _rows(run.stdout)] == [
        [token_id, hmac, f"User:{OWNER}", f"User:{OWNER}", f"[User:{OTHER}]"]]
    run = _kafka_tool("kafka-delegation-tokens.sh", *tool, "--renew", "--hmac", hmac,
                      "--renew-time-period", "-1")
    assert run.returncode == 0 and "Completed renew operation. New expiry date : " in run.stdout
    run = _kafka_tool("kafka-delegation-tokens.sh", *tool, "--expire", "--hmac", hmac,
                      "--expiry-time-period", "-1")
    assert run.returncode == 0 and "Completed expire operation. New expiry date : " in run.stdout
    conn, answer = _scram(broker, token_id, hmac, token=True)
    assert answer.error_code == 58
    conn.close()


def test_kafkapy_tool_prints_what_kafkas_prints(broker, tmp_path, capsys):
    owner_config = _command_config(tmp_path, OWNER, OWNER_SECRET)
    tool = ["--bootstrap-server", broker.sasl_bootstrap, "--command-config", owner_config]
    assert delegation_tokens.main([*tool, "--create", "--max-life-time-period", "-1",
                                   "--owner-principal", f"User:{OWNER}"]) == 0
    out = capsys.readouterr().out
    assert out.startswith("Calling create token operation with renewers :[] , "
                          "max-life-time-period :-1\nCreated delegation token with tokenId : ")
    token_id, hmac = _rows(out)[0][:2]
    header = out.split("\n")[3]
    assert header == ("TOKENID         HMAC                           OWNER           "
                      "REQUESTER       RENEWERS                  ISSUEDATE       "
                      "EXPIRYDATE      MAXDATE        ")

    assert delegation_tokens.main([*tool, "--describe"]) == 0     # Kafka's empty owner list
    assert capsys.readouterr().out.startswith(
        "Calling describe token operation for current user.\nTotal number of tokens : 0")
    assert delegation_tokens.main([*tool, "--describe", "--owner-principal",
                                   f"User:{OWNER}"]) == 0
    out = capsys.readouterr().out
    assert [r[0] for r in _rows(out)].count(token_id) == 1
    assert delegation_tokens.main([*tool, "--renew", "--hmac", hmac,
                                   "--renew-time-period", "60000"]) == 0
    assert re.fullmatch(r"Calling renew token operation with hmac :\S+ , renew-time-period "
                        r":60000\nCompleted renew operation\. New expiry date : "
                        r"\d{4}-\d\d-\d\dT\d\d:\d\d", capsys.readouterr().out)
    assert delegation_tokens.main([*tool, "--expire", "--hmac", hmac,
                                   "--expiry-time-period", "-1"]) == 0
    capsys.readouterr()
    assert delegation_tokens.main([*tool, "--renew", "--hmac", hmac,
                                   "--renew-time-period", "-1"]) == 1
    assert capsys.readouterr().err == (
        "org.apache.kafka.common.errors.DelegationTokenNotFoundException: "
        "Delegation Token is not found on server.\n")
    plain = ["--bootstrap-server", broker.bootstrap,
             "--command-config", str(tmp_path / "plain.properties")]
    (tmp_path / "plain.properties").write_text("")
    assert delegation_tokens.main([*plain, "--describe"]) == 1
    assert "UnsupportedByAuthenticationException" in capsys.readouterr().err


def test_every_broker_learns_tokens_from_the_notifications(broker, tmp_path):
    second = _start(tmp_path, broker.connect, 1)
    try:
        owner = _login(broker, OWNER, OWNER_SECRET)
        token = _create(owner)
        owner.close()
        password = _password(token.hmac)
        _login(second, token.token_id, password, token=True).close()   # learned it
        other = _login(second, OWNER, OWNER_SECRET)
        assert other.request(40, 2, hmac=token.hmac, expiry_time_period_ms=-1).error_code == 0
        other.close()
        deadline = time.monotonic() + 30
        while True:                      # the first broker forgets it on the notification
            conn, answer = _scram(broker, token.token_id, password, token=True)
            conn.close()
            if answer.error_code == 58:
                break
            assert time.monotonic() < deadline, "the first broker still accepts the token"
            time.sleep(0.2)
    finally:
        second.stop()
