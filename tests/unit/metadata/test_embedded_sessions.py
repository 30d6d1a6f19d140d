"""Sessions of one EmbeddedStore (``store.session()``): several ZooKeeper-like clients on one
in-process tree, as the brokers of ``kafkapy.testing.cluster`` use it.

Checked: ephemeral nodes belong to the session that made them and go when it closes or
expires, firing the other sessions' watches (not its own); watches are per session;
sequential nodes count across sessions; an expired session lives on under a new id and
calls its ``on_new_session`` callbacks; the broker's ephemeral ``claim`` refuses a node
held by another live session.
"""
from __future__ import annotations

import asyncio

import pytest

from kafkapy.metadata.embedded import EmbeddedSession, EmbeddedStore
from kafkapy.metadata.ephemeral import claim
from kafkapy.metadata.store import (
    ConnectionClosedError, EventType, KeeperState, MetadataStoreError, NodeExistsError,
    NoNodeError)


@pytest.fixture
def store(tmp_path):
    s = EmbeddedStore(tmp_path / "meta.json", fsync=False)
    yield s
    s.close()


def _recorder():
    events = []

    def cb(ev):
        events.append((ev.type, ev.path))
    return events, cb


def test_sessions_have_distinct_ids_and_own_their_ephemerals(store):
    a, b = store.session(), store.session()
    assert isinstance(a, EmbeddedSession)
    assert len({store.session_id, a.session_id, b.session_id}) == 3
    a.create("/brokers/ids/1", b"a", ephemeral=True, makepath=True)
    b.create("/brokers/ids/2", b"b", ephemeral=True)
    assert a.get("/brokers/ids/1")[1].ephemeral_owner == a.session_id
    assert b.exists("/brokers/ids/2").ephemeral_owner == b.session_id
    # every session sees the whole tree
    assert a.get_children("/brokers/ids") == b.get_children("/brokers/ids") == ["1", "2"]
    assert store.get_children("/brokers/ids") == ["1", "2"]
    with pytest.raises(NodeExistsError):
        b.create("/brokers/ids/1", b"b", ephemeral=True)


def test_close_removes_only_its_ephemerals_and_fires_others_watches(store):
    a, b = store.session(), store.session()
    a.create("/controller", b"1", ephemeral=True)
    a.create("/brokers/ids/1", b"a", ephemeral=True, makepath=True)
    b.create("/brokers/ids/2", b"b", ephemeral=True)
    a.create("/persistent", b"p")
    b_events, b_cb = _recorder()
    a_events, a_cb = _recorder()
    b.exists("/controller", watch=b_cb)
    b.get_children("/brokers/ids", watch=b_cb)
    a.get_children("/brokers/ids", watch=a_cb)
    cversion = store.exists("/brokers/ids").cversion
    a.close()
    assert sorted(b_events) == sorted([(EventType.DELETED, "/controller"),
                                       (EventType.CHILD, "/brokers/ids")])
    assert a_events == []                   # a closed session hears nothing more
    assert store.get_children("/brokers/ids") == ["2"]
    assert store.exists("/controller") is None
    assert store.exists("/persistent") is not None
    assert store.exists("/brokers/ids").cversion == cversion + 1
    with pytest.raises(ConnectionClosedError):
        a.get("/persistent")
    a.close()                               # idempotent


def test_watches_are_per_session(store):
    a, b = store.session(), store.session()
    store.create("/n", b"0")
    events, cb = _recorder()
    a.get("/n", watch=cb)
    b.get("/n", watch=cb)                   # the same callable in another session
    a.get("/n", watch=cb)                   # twice in one session: one delivery
    store.set("/n", b"1")
    assert events == [(EventType.CHANGED, "/n")] * 2
    store.set("/n", b"2")                   # one-shot
    assert len(events) == 2


def test_ephemeral_made_in_multi_belongs_to_the_session(store):
    a = store.session()
    a.transaction().create("/e", b"x", ephemeral=True).create("/p", b"y").commit()
    assert store.exists("/e").ephemeral_owner == a.session_id
    assert store.exists("/p").ephemeral_owner == 0
    a.close()
    assert store.exists("/e") is None and store.exists("/p") is not None


def test_sequential_nodes_count_across_sessions(store):
    a, b = store.session(), store.session()
    store.create("/seq", b"")
    first = a.create("/seq/n_", b"", sequence=True)
    second = b.create("/seq/n_", b"", ephemeral=True, sequence=True)
    third = store.create("/seq/n_", b"", sequence=True)
    assert (first, second, third) == ("/seq/n_0000000000", "/seq/n_0000000001",
                                      "/seq/n_0000000002")
    b.close()                               # deletes do not reuse the counter
    assert a.create("/seq/n_", b"", sequence=True) == "/seq/n_0000000003"
    assert store.get_children("/seq") == ["n_0000000000", "n_0000000002", "n_0000000003"]


def test_expire_fires_watches_and_starts_a_new_session(store):
    async def run():
        a, b = store.session(), store.session()
        new_sessions = []
        a.on_new_session(lambda: new_sessions.append(a.session_id))
        old = a.session_id
        a.create("/brokers/ids/1", b"a", ephemeral=True, makepath=True)
        a_events, a_cb = _recorder()
        b_events, b_cb = _recorder()
        a.get("/brokers/ids/1", watch=a_cb)
        b.get_children("/brokers/ids", watch=b_cb)
        b.get("/brokers/ids/1", watch=b_cb)
        a.expire()
        await asyncio.sleep(0)
        await asyncio.sleep(0)
        assert a.session_id != old and new_sessions == [a.session_id]
        assert a_events == [(EventType.NONE, None)]          # kazoo: lost-session event
        assert sorted(b_events, key=str) == sorted(
            [(EventType.CHILD, "/brokers/ids"), (EventType.DELETED, "/brokers/ids/1")], key=str)
        assert store.exists("/brokers/ids/1") is None
        # the session goes on: claim the node again, now under the new id
        a.create("/brokers/ids/1", b"a", ephemeral=True)
        assert store.exists("/brokers/ids/1").ephemeral_owner == a.session_id
        a.close()
        assert store.exists("/brokers/ids/1") is None
    asyncio.run(run())


def test_expire_event_state(store):
    a = store.session()
    store.create("/n")
    seen = []
    a.get("/n", watch=seen.append)
    a.expire()                              # no loop: delivered at once
    assert len(seen) == 1
    assert seen[0].type == EventType.NONE and seen[0].state == KeeperState.EXPIRED_SESSION


def test_claim_refuses_a_node_of_another_live_session(store):
    async def run():
        a, b = store.session(), store.session()
        stat = await claim(a, "/brokers/ids/7", b"a", wait_ms=0)
        assert stat.ephemeral_owner == a.session_id
        assert (await claim(a, "/brokers/ids/7", b"a", wait_ms=0)).czxid == stat.czxid
        with pytest.raises(MetadataStoreError, match="does not match current session"):
            await claim(b, "/brokers/ids/7", b"b", wait_ms=0)
        a.close()                           # the holder dies: the node is free
        assert (await claim(b, "/brokers/ids/7", b"b", wait_ms=0)).czxid > stat.czxid
    asyncio.run(run())


def test_closing_the_store_closes_every_session(tmp_path):
    s = EmbeddedStore(tmp_path / "meta.json", fsync=False)
    a = s.session()
    a.create("/e", b"", ephemeral=True)
    s.close()
    with pytest.raises(ConnectionClosedError):
        a.exists("/e")
    a.close()                               # nothing left to do
    with pytest.raises(NoNodeError):
        EmbeddedStore(tmp_path / "meta.json", fsync=False).get("/e")
