"""ZkWrites on the embedded store and on a real ZooKeeper: state znode creation in
fenced multis (one bad partition does not fail its neighbours), conditional updates
(BadVersion -> retry, NoNode -> failed), fencing on /controller_epoch, topic removal."""
from __future__ import annotations

import pytest

from kafkapy.controller import zk_writes as zk_writes_mod
from kafkapy.controller.zk_writes import ControllerMovedError
from kafkapy.metadata import paths
from kafkapy.metadata.embedded import EmbeddedStore
from kafkapy.metadata.leader_and_isr import LeaderAndIsr
from kafkapy.metadata.store import BadVersionError, NodeExistsError, NoNodeError

from tests.support.sm_helpers import make_cluster
from tests.support.zookeeper_server import zk_connect, zookeeper_server  # noqa: F401  (fixtures)


@pytest.fixture(params=["embedded", "zookeeper"])
def cluster(request, tmp_path):
    if request.param == "embedded":
        store = EmbeddedStore(tmp_path / "metadata.json", fsync=False)
    else:
        from kafkapy.metadata.zk_store import ZooKeeperStore
        store = ZooKeeperStore(request.getfixturevalue("zk_connect"), 6000, 15000)
    c = make_cluster(tmp_path, store=store)
    yield c
    store.close()


def _li(leader, isr, epoch=0, partition_epoch=0):
    return LeaderAndIsr(leader=leader, leader_epoch=epoch, isr=tuple(isr), controller_epoch=2,
                     partition_epoch=partition_epoch)


def test_create_partition_states_per_partition_outcomes(cluster, monkeypatch):
    monkeypatch.setattr(zk_writes_mod, "OPS_PER_MULTI", 4)
    c = cluster
    c.add_topic("t", {p: [0, 1] for p in range(7)})
    c.store.create(paths.partition_state_path("t", 3), paths.encode_partition_state(1, 9, [1], 1),
                   makepath=True)
    states = {("t", p): _li(p % 2, [p % 2]) for p in range(7)}
    states[("gone", 0)] = _li(0, [0])                 # no /brokers/topics/gone
    out = c.zk.create_partition_states(states)
    assert isinstance(out[("t", 3)], NodeExistsError)
    assert isinstance(out[("gone", 0)], NoNodeError)
    for p in (0, 1, 2, 4, 5, 6):
        assert out[("t", p)] == _li(p % 2, [p % 2])
        z = c.state_znode("t", p)
        assert (z.leader, z.isr, z.controller_epoch, z.partition_epoch) == (p % 2, (p % 2,), 2, 0)
    assert c.state_znode("t", 3).leader_epoch == 9
    data, _ = c.store.get(paths.partition_state_path("t", 0))
    assert data == b'{"controller_epoch":2,"leader":0,"version":1,"leader_epoch":0,"isr":[0]}'


def test_get_partition_states(cluster):
    c = cluster
    c.add_topic("t", {0: [0, 1], 1: [1]}, states={0: _li(1, [1, 0], epoch=4)})
    c.store.set(paths.partition_state_path("t", 0), paths.encode_partition_state(1, 5, [1], 2))
    c.store.create(paths.partition_state_path("t", 2), b"not json", makepath=True)
    out = c.zk.get_partition_states([("t", 0), ("t", 1), ("t", 2)])
    assert out[("t", 0)] == LeaderAndIsr(1, 5, (1,), 2, partition_epoch=1)
    assert out[("t", 1)] is None
    assert isinstance(out[("t", 2)], ValueError)


def test_update_leader_and_isr_conditional(cluster):
    c = cluster
    c.add_topic("t", {p: [0, 1] for p in range(3)}, states={p: _li(0, [0, 1]) for p in range(3)})
    c.store.set(paths.partition_state_path("t", 1), paths.encode_partition_state(0, 0, [0], 2))
    c.store.delete(paths.partition_state_path("t", 2))
    result = c.zk.update_leader_and_isr({("t", p): _li(1, [1], epoch=1) for p in range(3)})
    assert result.to_retry == [("t", 1)]
    assert result.finished[("t", 0)] == _li(1, [1], epoch=1, partition_epoch=1)
    assert isinstance(result.finished[("t", 2)], NoNodeError)
    assert c.state_znode("t", 0).leader == 1
    assert c.state_znode("t", 1).isr == (0,)        # the conflicting write is untouched


def test_writes_are_fenced_by_the_controller_epoch(cluster):
    c = cluster
    c.add_topic("t", {0: [0, 1], 1: [0, 1]}, states={0: _li(0, [0, 1])})
    c.bump_epoch()
    with pytest.raises(ControllerMovedError):
        c.zk.update_leader_and_isr({("t", 0): _li(1, [1], epoch=1)})
    with pytest.raises(ControllerMovedError):
        c.zk.create_partition_states({("t", 1): _li(0, [0])})
    with pytest.raises(ControllerMovedError):
        c.zk.delete_topic("t")
    assert c.state_znode("t", 0).leader == 0
    assert c.store.exists(paths.partition_state_path("t", 1)) is None
    assert c.store.exists(paths.topic_path("t")) is not None


def test_delete_topic_removes_its_znodes(cluster, monkeypatch):
    monkeypatch.setattr(zk_writes_mod, "OPS_PER_MULTI", 3)
    c = cluster
    c.add_topic("t", {p: [0] for p in range(4)}, states={p: _li(0, [0]) for p in range(4)})
    c.add_topic("t2", {0: [0]}, states={0: _li(0, [0])})
    c.store.create(paths.topic_config_path("t"), paths.encode_entity_config({}), makepath=True)
    c.store.create(paths.delete_topic_path("t"), b"", makepath=True)
    c.zk.delete_topic("t")
    for gone in (paths.topic_path("t"), paths.topic_config_path("t"), paths.delete_topic_path("t")):
        assert c.store.exists(gone) is None
    assert c.store.exists(paths.partition_state_path("t2", 0)) is not None
    c.zk.delete_topic("t")                             # already gone: fine
    c.zk.delete_topic_deletions(["never"])


def test_bad_version_error_is_what_the_store_raises(cluster):
    """The per-op exception types ZkWrites relies on, from both stores."""
    c = cluster
    c.add_topic("t", {0: [0]}, states={0: _li(0, [0])})
    with pytest.raises(BadVersionError):
        c.store.set(paths.partition_state_path("t", 0), b"{}", version=5)
