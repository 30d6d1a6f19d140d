"""A broker started with ``zookeeper.connect`` keeps its metadata in a real ZooKeeper.

As a Kafka 3.9 broker in ZooKeeper mode: it registers ``/brokers/ids/<id>`` (ephemeral),
becomes controller through ``/controller`` with ``/controller_epoch`` bumped on every start,
and writes topics, partition states and the cluster id in Kafka's znode layout and JSON
payloads - under the chroot of the connect string.  A SIGTERM closes its session, so its
ephemeral nodes go at once; after kill -9 they stay until ZooKeeper expires the session,
and the restarted broker waits for that instead of failing.  Records written before each
restart are read back with a stock client.
"""
from __future__ import annotations

import json
import signal
import time

import pytest

from tests.support.broker_process import BrokerProcess
from tests.support.client_common import produce_values, read_values
from tests.support.zookeeper_server import zk, zk_connect, zookeeper_server  # noqa: F401  (fixtures)

SESSION_TIMEOUT_MS = 4000


@pytest.fixture
def zk_broker(tmp_path, zk_connect):  # noqa: F811
    broker = BrokerProcess(tmp_path / "logs", overrides={
        "zookeeper.connect": zk_connect,
        "zookeeper.session.timeout.ms": str(SESSION_TIMEOUT_MS)})
    yield broker.start()
    broker.kill()


def _json(zk, path: str) -> dict:
    data, _ = zk.get(path)
    return json.loads(data)


def test_metadata_lives_in_zookeeper_in_kafkas_layout(zk_broker, zk):
    values = [f"v{i}".encode() for i in range(20)]
    produce_values(zk_broker.bootstrap, "zk-topic", values)

    registration = _json(zk, "/brokers/ids/0")
    assert registration["endpoints"] == [f"PLAINTEXT://127.0.0.1:{zk_broker.port}"]
    assert (registration["host"], registration["port"]) == ("127.0.0.1", zk_broker.port)
    assert _json(zk, "/controller")["brokerid"] == 0
    assert zk.get("/controller_epoch")[0] == b"1"
    topic = _json(zk, "/brokers/topics/zk-topic")
    assert topic["partitions"] == {"0": [0]} and len(topic["topic_id"]) == 22
    state = _json(zk, "/brokers/topics/zk-topic/partitions/0/state")
    assert (state["leader"], state["isr"], state["controller_epoch"]) == (0, [0], 1)
    cluster_id = _json(zk, "/cluster/id")["id"]
    meta = (zk_broker.log_dir / "meta.properties").read_text()
    assert f"cluster.id={cluster_id}" in meta
    # The embedded store is not used at all.
    assert not (zk_broker.log_dir / "kafkapy-metadata.json").exists()

    # SIGTERM closes the session: the ephemeral registrations go with it.
    assert zk_broker.stop() == 0
    assert zk.get_children("/brokers/ids") == [] and zk.exists("/controller") is None
    zk_broker.start()
    assert zk.get("/controller_epoch")[0] == b"2"
    assert read_values(zk_broker.bootstrap, "zk-topic", 20) == values


def test_restart_after_kill_waits_out_the_old_session(zk_broker, zk):
    values = [f"k{i}".encode() for i in range(10)]
    produce_values(zk_broker.bootstrap, "zk-killed", values)
    _, old = zk.get("/brokers/ids/0")
    zk_broker.kill()
    # The killed broker's session still holds its nodes.
    assert zk.exists("/brokers/ids/0") is not None and zk.exists("/controller") is not None
    zk_broker.start(timeout=4 * SESSION_TIMEOUT_MS / 1000 + 30)
    _, new = zk.get("/brokers/ids/0")
    assert new.ephemeralOwner != old.ephemeralOwner
    assert _json(zk, "/controller")["brokerid"] == 0
    assert zk.get("/controller_epoch")[0] == b"2"
    assert read_values(zk_broker.bootstrap, "zk-killed", 10) == values
    assert "waiting for the session that holds the node to expire" in zk_broker.output()


def test_a_live_broker_with_the_same_id_is_not_displaced(zk_broker, zk, tmp_path,
                                                         zk_connect):  # noqa: F811
    twin = BrokerProcess(tmp_path / "twin-logs", overrides={
        "zookeeper.connect": zk_connect,
        "zookeeper.session.timeout.ms": str(SESSION_TIMEOUT_MS)})
    _, before = zk.get("/brokers/ids/0")
    with pytest.raises(RuntimeError) as failed:
        twin.start(timeout=4 * SESSION_TIMEOUT_MS / 1000 + 30)
    assert "Error while creating ephemeral at /brokers/ids/0, node already exists" in str(
        failed.value)
    _, after = zk.get("/brokers/ids/0")
    assert after.ephemeralOwner == before.ephemeralOwner
    produce_values(zk_broker.bootstrap, "zk-still-serving", [b"ok"])


def _wait_for(condition, timeout: float, what: str) -> None:
    deadline = time.monotonic() + timeout
    while not condition():
        assert time.monotonic() < deadline, f"timed out waiting for {what}"
        time.sleep(0.1)


def test_registration_is_claimed_again_after_the_session_expires(zk_broker, zk):
    """A broker paused past its session timeout (a long GC or VM pause) loses its
    ZooKeeper session and with it its ephemeral nodes; when it runs again it registers
    and becomes controller again with the next controller epoch, and keeps serving."""
    produce_values(zk_broker.bootstrap, "zk-paused", [b"before"])
    _, old = zk.get("/brokers/ids/0")
    zk_broker.proc.send_signal(signal.SIGSTOP)
    try:
        _wait_for(lambda: zk.exists("/brokers/ids/0") is None, 6 * SESSION_TIMEOUT_MS / 1000,
                  "ZooKeeper to expire the paused broker's session")
    finally:
        zk_broker.proc.send_signal(signal.SIGCONT)
    _wait_for(lambda: zk.exists("/brokers/ids/0") is not None and zk.exists("/controller"),
              30, "the broker to register again")
    _, new = zk.get("/brokers/ids/0")
    assert new.ephemeralOwner not in (0, old.ephemeralOwner)
    assert _json(zk, "/controller")["brokerid"] == 0
    assert zk.get("/controller_epoch")[0] == b"2"
    produce_values(zk_broker.bootstrap, "zk-paused", [b"after"])
    assert read_values(zk_broker.bootstrap, "zk-paused", 2) == [b"before", b"after"]
    assert "registering again" in zk_broker.output()
