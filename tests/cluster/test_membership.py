"""Broker ids and broker epochs as Kafka's ZooKeeper mode hands them out.

With ``broker.id=-1`` a broker draws its id from ``/brokers/seqid`` (each draw sets the
node; its new data version plus ``reserved.broker.max.id`` is the id, so Kafka's first
drawn id is 1001) and keeps it in ``meta.properties``, so a restart comes back with the
same id.  Each registration's czxid is the broker's epoch: a restart gets a higher one.
"""
from __future__ import annotations

import json

from kazoo.client import KazooClient

from tests.support.broker_process import BrokerProcess
from tests.support.zookeeper_server import zk_connect, zookeeper_server  # noqa: F401 (fixtures)

SESSION_MS = 4000


def _broker(tmp_path, name: str, zk_connect: str, **extra: str) -> BrokerProcess:
    overrides = {"zookeeper.connect": zk_connect, "broker.id": "-1",
                 "zookeeper.session.timeout.ms": str(SESSION_MS), **extra}
    return BrokerProcess(tmp_path / name, overrides=overrides)


def _meta_broker_id(broker: BrokerProcess) -> int:
    lines = (broker.log_dir / "meta.properties").read_text().splitlines()
    return int(next(line for line in lines if line.startswith("broker.id=")).split("=")[1])


def test_generated_ids_are_kafkas_and_survive_a_restart(tmp_path, zk_connect):  # noqa: F811
    host, chroot = zk_connect.split("/", 1)
    zk = KazooClient(hosts=host)
    zk.start()
    first = _broker(tmp_path, "first", zk_connect)
    second = _broker(tmp_path, "second", zk_connect, **{"reserved.broker.max.id": "2000"})
    try:
        first.start()
        second.start()
        ids = sorted(int(i) for i in zk.get_children(f"/{chroot}/brokers/ids"))
        # seqid versions 1 and 2 over reserved.broker.max.id 1000 and 2000.
        assert ids == [1001, 2002]
        assert _meta_broker_id(first) == 1001 and _meta_broker_id(second) == 2002
        data, before = zk.get(f"/{chroot}/brokers/ids/1001")
        assert json.loads(data)["endpoints"] == [f"PLAINTEXT://127.0.0.1:{first.port}"]

        assert first.stop() == 0
        first.start()
        _, after = zk.get(f"/{chroot}/brokers/ids/1001")
        assert sorted(int(i) for i in zk.get_children(f"/{chroot}/brokers/ids")) == ids
        assert after.czxid > before.czxid          # a new broker epoch
        assert "broker_epoch=" + str(after.czxid) in first.output()
    finally:
        for broker in (second, first):
            broker.kill()
        zk.stop()
        zk.close()


def test_a_fixed_id_must_match_the_stored_one(tmp_path, zk_connect):  # noqa: F811
    broker = _broker(tmp_path, "fixed", zk_connect).start()
    assert broker.stop() == 0
    broker.overrides["broker.id"] = "7"
    try:
        broker.start(timeout=30)
    except RuntimeError as failed:
        assert "doesn't match previous node id 7" in str(failed)
    else:
        broker.kill()
        raise AssertionError("a broker.id differing from meta.properties was accepted")
