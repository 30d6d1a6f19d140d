"""A topic's partition-state znodes written in one multi cost the embedded store
O(partitions), one file write per multi, and a failing multi still leaves nothing behind;
ZkWrites puts a large topic's states in one multi on the embedded store and still reports
a failing partition alone."""
from __future__ import annotations

import pytest

from kafkapy.metadata import embedded as embedded_mod
from kafkapy.metadata import paths
from kafkapy.metadata.embedded import EmbeddedStore
from kafkapy.metadata.leader_and_isr import LeaderAndIsr
from kafkapy.metadata.store import CreateOp, NodeExistsError
from tests.support.sm_helpers import make_cluster

PARENT = "/brokers/topics/t/partitions"
N = 3000


@pytest.fixture
def store(tmp_path):
    s = EmbeddedStore(tmp_path / "meta", fsync=False)
    s.create(PARENT, b"", makepath=True)
    yield s
    s.close()


def _count_calls(monkeypatch, cls, name) -> list:
    calls: list = []
    real = getattr(cls, name)

    def spy(self, *args, **kwargs):
        calls.append(self)
        return real(self, *args, **kwargs)

    monkeypatch.setattr(cls, name, spy)
    return calls


def test_many_children_one_snapshot_of_the_parent_and_one_persist(store, monkeypatch):
    snapshots = _count_calls(monkeypatch, embedded_mod._Node, "snapshot")
    persists = _count_calls(monkeypatch, EmbeddedStore, "_persist")
    store.multi([CreateOp(f"{PARENT}/{p}") for p in range(N)])
    assert len(snapshots) == 1          # the parent, once, not once per child
    assert len(persists) == 1
    assert len(store.get_children(PARENT)) == N
    assert store.exists(PARENT).cversion == N


def test_failed_multi_restores_the_parent_and_the_file(store, tmp_path):
    store.multi([CreateOp(f"{PARENT}/0")])
    before = store.exists(PARENT)
    with pytest.raises(NodeExistsError):
        store.multi([CreateOp(f"{PARENT}/{p}") for p in range(1, N)] + [CreateOp(f"{PARENT}/0")])
    assert store.get_children(PARENT) == ["0"]
    assert store.exists(PARENT) == before
    store.close()
    reopened = EmbeddedStore(tmp_path / "meta", fsync=False)
    try:
        assert reopened.get_children(PARENT) == ["0"]
        assert reopened.exists(PARENT).cversion == before.cversion
    finally:
        reopened.close()


def test_delete_and_recreate_in_one_multi_rolls_back(store):
    """A node deleted and created again in one failing multi comes back as it was."""
    from kafkapy.metadata.store import DeleteOp, SetDataOp
    store.create(f"{PARENT}/x", b"old")
    before = store.get(f"{PARENT}/x")
    with pytest.raises(NodeExistsError):
        store.multi([SetDataOp(f"{PARENT}/x", b"mid", -1), DeleteOp(f"{PARENT}/x"),
                     CreateOp(f"{PARENT}/x", b"new"), SetDataOp(f"{PARENT}/x", b"newer", -1),
                     CreateOp(PARENT)])
    assert store.get(f"{PARENT}/x") == before
    assert store.get_children(PARENT) == ["x"]


def _zk_cluster(tmp_path):
    return make_cluster(tmp_path, live=(0,))


def _li(leader):
    return LeaderAndIsr(leader=leader, leader_epoch=0, isr=(leader,), controller_epoch=2,
                     partition_epoch=0)


def test_partition_states_of_a_large_topic_are_two_file_writes(tmp_path, monkeypatch):
    c = _zk_cluster(tmp_path)
    c.add_topic("big", {p: [0] for p in range(N)})
    persists = _count_calls(monkeypatch, EmbeddedStore, "_persist")
    out = c.zk.create_partition_states({("big", p): _li(0) for p in range(N)})
    assert len(persists) == 2           # the partition znodes, then the state znodes
    assert all(out[("big", p)] == _li(0) for p in range(N))
    assert c.state_znode("big", N - 1).leader == 0


def test_a_failing_state_in_a_large_batch_fails_alone(tmp_path):
    c = _zk_cluster(tmp_path)
    c.add_topic("big", {p: [0] for p in range(N)})
    c.store.create(paths.partition_state_path("big", 1500),
                   paths.encode_partition_state(0, 7, [0], 1), makepath=True)
    out = c.zk.create_partition_states({("big", p): _li(0) for p in range(N)})
    assert isinstance(out[("big", 1500)], NodeExistsError)
    assert all(out[("big", p)] == _li(0) for p in range(N) if p != 1500)
    assert c.state_znode("big", 1500).leader_epoch == 7
    assert c.state_znode("big", 1499).leader_epoch == 0
