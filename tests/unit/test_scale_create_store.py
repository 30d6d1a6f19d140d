"""Issue 20: a topic's partition-state znodes written in one multi cost the embedded store
O(partitions), one file write per multi, and a failing multi still leaves nothing behind."""
from __future__ import annotations

import pytest

from kafkapy.metadata import embedded as embedded_mod
from kafkapy.metadata.embedded import EmbeddedStore
from kafkapy.metadata.store import CreateOp, NodeExistsError

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
