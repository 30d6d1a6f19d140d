"""Contract tests of the metadata store, run against both backends.

``embedded``: ``EmbeddedStore`` on a file in the test's temp dir.
``zookeeper``: ``ZooKeeperStore`` on a real ZooKeeper server (started once per
session by ``tests.support.zookeeper_server``), each test in a chroot of its own; skipped
with a reason when no ZooKeeper jars or java are installed.

Watch events of the ZooKeeper backend arrive on kazoo's thread; to show that a
watch did *not* fire, tests fire a sentinel watch afterwards and wait for it
(ZooKeeper delivers a session's events in order).
"""
from __future__ import annotations

import asyncio
import json
import signal
import subprocess
import sys
import textwrap
import threading
from pathlib import Path

import pytest

from kafkapy.clock import MockClock
from kafkapy.metadata import paths
from kafkapy.metadata.embedded import EmbeddedStore
from kafkapy.metadata.store import (
    BadVersionError,
    CheckOp,
    ConnectionClosedError,
    CreateOp,
    DeleteOp,
    EventType,
    MetadataStoreError,
    NoChildrenForEphemeralsError,
    NodeExistsError,
    NoNodeError,
    NotEmptyError,
    SetDataOp,
    Stat,
)
from kafkapy.metadata.zk_store import ZooKeeperStore, split_connect_string
from tests.support.zookeeper_server import zk_connect, zookeeper_server  # noqa: F401  (fixtures)

ROOT = Path(__file__).resolve().parents[3]


def _open(kind: str, request, tmp_path: Path):
    if kind == "embedded":
        return EmbeddedStore(tmp_path / "metadata.json")
    return ZooKeeperStore(request.getfixturevalue("zk_connect"), 6000, 15000)


@pytest.fixture(params=["embedded", "zookeeper"])
def store(request, tmp_path):
    s = _open(request.param, request, tmp_path)
    yield s
    s.close()


@pytest.fixture
def zk(request, tmp_path):
    s = _open("zookeeper", request, tmp_path)
    yield s
    s.close()


class Recorder:
    """A watch callback recording ``(type, path)``; safe from any thread."""

    def __init__(self) -> None:
        self.events: list[tuple[str, str]] = []
        self.threads: list[int] = []
        self._cond = threading.Condition()

    def __call__(self, ev) -> None:
        with self._cond:
            self.events.append((ev.type, ev.path))
            self.threads.append(threading.get_ident())
            self._cond.notify_all()

    def wait(self, n: int, timeout: float = 15.0) -> list[tuple[str, str]]:
        with self._cond:
            assert self._cond.wait_for(lambda: len(self.events) >= n, timeout), self.events
            return list(self.events)


def settle(store) -> None:
    """Return once every watch event caused by earlier changes has been delivered."""
    rec = Recorder()
    path = "/__sentinel"
    assert store.exists(path, watch=rec) is None
    store.create(path)
    rec.wait(1)
    store.delete(path)


# --- basic operations ------------------------------------------------------------

def test_create_get_set_delete_with_versions(store):
    assert store.create("/a", b"one") == "/a"
    data, stat = store.get("/a")
    assert data == b"one"
    assert isinstance(stat, Stat)
    assert (stat.version, stat.cversion, stat.data_length, stat.num_children) == (0, 0, 3, 0)
    assert stat.czxid == stat.mzxid == stat.pzxid > 0
    assert stat.ephemeral_owner == 0 and stat.ctime == stat.mtime > 0
    # kazoo's ZnodeStat spellings work too
    assert (stat.dataLength, stat.numChildren, stat.ephemeralOwner) == (3, 0, 0)
    assert stat.owner_session_id is None and stat.children_count == 0

    s1 = store.set("/a", b"two", version=0)
    assert s1.version == 1 and s1.mzxid > stat.mzxid and s1.czxid == stat.czxid
    assert store.set("/a", b"two").version == 2        # -1: any version; same bytes still count
    with pytest.raises(BadVersionError):
        store.set("/a", b"x", version=1)
    assert store.get("/a") == (b"two", store.exists("/a"))
    with pytest.raises(BadVersionError):
        store.delete("/a", version=0)
    store.delete("/a", version=2)
    assert store.exists("/a") is None


def test_errors(store):
    store.create("/a")
    with pytest.raises(NodeExistsError):
        store.create("/a")
    with pytest.raises(NoNodeError):
        store.get("/missing")
    with pytest.raises(NoNodeError):
        store.set("/missing", b"")
    with pytest.raises(NoNodeError):
        store.delete("/missing")
    with pytest.raises(NoNodeError):
        store.get_children("/missing")
    with pytest.raises(NoNodeError):
        store.create("/no/parent")
    store.create("/a/b")
    with pytest.raises(NotEmptyError):
        store.delete("/a")
    for bad in ("a", "/a/", "/a//b", "/a/./b", ""):
        with pytest.raises(ValueError):
            store.create(bad)


def test_children_sorted_and_parent_stat(store):
    store.create("/p")
    for name in ("c", "a", "b10", "b2"):
        store.create(f"/p/{name}")
    assert store.get_children("/p") == ["a", "b10", "b2", "c"]
    stat = store.exists("/p")
    assert stat.num_children == 4 and stat.cversion == 4 and stat.version == 0
    store.delete("/p/a")
    stat2 = store.exists("/p")
    assert stat2.num_children == 3 and stat2.cversion == 5 and stat2.pzxid > stat.pzxid
    assert store.get_children("/") == ["p"]


def test_makepath_and_ensure_path(store):
    assert store.create("/x/y/z", b"d", makepath=True) == "/x/y/z"
    assert store.get("/x/y")[0] == b""
    assert store.ensure_path("/x/y/z/w") is True
    assert store.ensure_path("/x/y/z/w") is True          # idempotent
    assert store.get_children("/x/y/z") == ["w"]
    assert store.get("/x/y/z")[0] == b"d"


def test_sequence_nodes(store):
    store.create("/n")
    assert store.create("/n/x_", b"1", sequence=True) == "/n/x_0000000000"
    assert store.create("/n/x_", sequence=True) == "/n/x_0000000001"
    store.create("/n/plain")                               # every child create counts
    assert store.create("/n/y_", sequence=True) == "/n/y_0000000003"
    store.delete("/n/x_0000000000")                        # deletes do not
    store.delete("/n/plain")
    assert store.create("/n/x_", sequence=True) == "/n/x_0000000004"
    assert store.exists("/n").cversion == 7                # but cversion counts both
    assert store.get("/n/x_0000000001")[1].version == 0
    assert paths.sequence_number("/n/x_0000000004", "x_") == 4


def test_recursive_delete(store):
    store.create("/r/a/b/c", makepath=True)
    store.create("/r/a/d", makepath=True)
    store.create("/r/e", makepath=True)
    store.delete("/r/a", recursive=True)
    assert store.get_children("/r") == ["e"]
    with pytest.raises(NoNodeError):
        store.delete("/r/a", recursive=True)
    with pytest.raises(BadVersionError):
        store.delete("/r", version=3, recursive=True)
    store.delete("/r", recursive=True)
    assert store.exists("/r") is None


def test_ephemeral(store, request, tmp_path):
    store.create("/eph")
    path = store.create("/eph/me", b"x", ephemeral=True)
    stat = store.exists(path)
    assert stat.ephemeral_owner == store.session_id != 0
    assert stat.ephemeral and stat.owner_session_id == store.session_id
    with pytest.raises(NoChildrenForEphemeralsError):
        store.create("/eph/me/child")
    seq = store.create("/eph/s_", ephemeral=True, sequence=True)
    assert seq == "/eph/s_0000000001"
    store.close()
    if isinstance(store, EmbeddedStore):
        again = EmbeddedStore(store.path)
    else:
        again = ZooKeeperStore(request.getfixturevalue("zk_connect"), 6000, 15000)
    try:
        assert again.get_children("/eph") == []
        assert again.exists("/eph").num_children == 0
    finally:
        again.close()


def test_closed_store_refuses(store):
    store.close()
    with pytest.raises(ConnectionClosedError):
        store.create("/a")


# --- watches -------------------------------------------------------------------

def test_data_watch_fires_once_on_set(store):
    store.create("/w", b"0")
    rec = Recorder()
    store.get("/w", watch=rec)
    store.get("/w", watch=rec)                # same callable twice: one delivery
    store.exists("/w", watch=rec)             # exists on an existing node: same data watch
    store.create("/w/child")                  # a child is not a data change
    store.set("/w", b"1")
    store.set("/w", b"2")                     # one-shot: no second event
    settle(store)
    assert rec.events == [(EventType.CHANGED, "/w")]


def test_data_watch_fires_on_delete(store):
    store.create("/w")
    rec = Recorder()
    store.get("/w", watch=rec)
    store.delete("/w")
    settle(store)
    assert rec.events == [(EventType.DELETED, "/w")]


def test_exists_watch_fires_on_create(store):
    rec = Recorder()
    assert store.exists("/later", watch=rec) is None
    store.create("/later", b"x")
    store.set("/later", b"y")
    settle(store)
    assert rec.events == [(EventType.CREATED, "/later")]


def test_child_watch(store):
    store.create("/c")
    rec = Recorder()
    assert store.get_children("/c", watch=rec) == []
    store.set("/c", b"data")                  # data change: not a child event
    store.create("/c/a")
    store.create("/c/b")                      # one-shot
    settle(store)
    assert rec.events == [(EventType.CHILD, "/c")]

    rec2 = Recorder()
    store.get_children("/c", watch=rec2)
    store.set("/c/a", b"x")                   # a child's data: not a child event
    store.delete("/c/a")
    settle(store)
    assert rec2.events == [(EventType.CHILD, "/c")]

    rec3 = Recorder()
    store.get_children("/c/b", watch=rec3)
    store.delete("/c/b")                      # the watched node itself goes
    settle(store)
    assert rec3.events == [(EventType.DELETED, "/c/b")]


def test_failed_read_sets_no_watch(store):
    rec = Recorder()
    with pytest.raises(NoNodeError):
        store.get("/nope", watch=rec)
    with pytest.raises(NoNodeError):
        store.get_children("/nope", watch=rec)
    store.create("/nope")
    store.create("/nope/kid")
    settle(store)
    assert rec.events == []


def test_watch_rearmed_after_firing(store):
    store.create("/re")
    rec = Recorder()
    store.get("/re", watch=rec)
    store.set("/re", b"1")
    rec.wait(1)
    store.get("/re", watch=rec)
    store.set("/re", b"2")
    rec.wait(2)
    settle(store)
    assert rec.events == [(EventType.CHANGED, "/re")] * 2


async def test_watches_delivered_on_the_event_loop(store):
    loop_thread = threading.get_ident()
    store.create("/loop")
    got = asyncio.Event()
    seen: list = []

    def cb(ev):
        seen.append((ev.type, ev.path, threading.get_ident()))
        got.set()                              # asyncio.Event: only legal on the loop thread

    store.get("/loop", watch=cb)
    store.set("/loop", b"x")
    if isinstance(store, EmbeddedStore):
        assert seen == []                      # scheduled with call_soon, not called inline
    await asyncio.wait_for(got.wait(), 15)
    assert seen == [(EventType.CHANGED, "/loop", loop_thread)]


# --- multi / transaction ---------------------------------------------------------

def test_multi_applies_all(store):
    store.create("/controller_epoch", b"0")
    store.create("/t", b"v0")
    store.create("/gone")
    results = store.multi([
        CheckOp("/controller_epoch", 0),
        CreateOp("/t/new", b"n"),
        CreateOp("/t/seq_", sequence=True),
        SetDataOp("/t", b"v1", version=0),
        DeleteOp("/gone"),
    ])
    assert results[0] is True and results[1] == "/t/new"
    assert results[2] == "/t/seq_0000000001"
    assert isinstance(results[3], Stat) and results[3].version == 1
    assert results[4] is True
    assert store.get("/t")[0] == b"v1" and store.exists("/gone") is None
    assert store.get_children("/t") == ["new", "seq_0000000001"]
    # one transaction, one zxid
    assert store.exists("/t/new").czxid == results[3].mzxid
    assert store.multi([]) == []


@pytest.mark.parametrize("failing", ["check", "create", "set", "delete"])
def test_multi_is_all_or_nothing(store, failing):
    store.create("/controller_epoch", b"3")
    store.create("/s", b"v0")
    store.create("/exists")
    rec_data, rec_child = Recorder(), Recorder()
    store.get("/s", watch=rec_data)
    store.get_children("/s", watch=rec_child)
    before = {p: store.exists(p) for p in ("/controller_epoch", "/s", "/exists")}
    ops = [
        CheckOp("/controller_epoch", 5 if failing == "check" else 0),
        CreateOp("/s/child", b"c"),
        SetDataOp("/s", b"v1", version=7 if failing == "set" else 0),
        CreateOp("/exists" if failing == "create" else "/fresh"),
        DeleteOp("/missing" if failing == "delete" else "/exists"),
    ]
    expected = {"check": (BadVersionError, 0), "set": (BadVersionError, 2),
                "create": (NodeExistsError, 3), "delete": (NoNodeError, 4)}[failing]
    with pytest.raises(expected[0]) as info:
        store.multi(ops)
    assert info.value.op_index == expected[1] and info.value.op == ops[expected[1]]
    assert store.get_children("/s") == []
    assert store.exists("/fresh") is None
    assert {p: store.exists(p) for p in before} == before
    settle(store)
    assert rec_data.events == [] and rec_child.events == []


def test_transaction_controller_epoch_fencing(store):
    store.create(paths.CONTROLLER_EPOCH, paths.encode_controller_epoch(0))
    _, stat = store.get(paths.CONTROLLER_EPOCH)
    # controller election: create /controller and bump the epoch, atomically
    t = store.transaction()
    t.create(paths.CONTROLLER, paths.encode_controller(1, 1700000000000), ephemeral=True)
    t.set_data(paths.CONTROLLER_EPOCH, paths.encode_controller_epoch(1), version=stat.version)
    path, epoch_stat = t.commit()
    assert path == "/controller" and epoch_stat.version == 1
    with pytest.raises(ValueError):
        t.commit()
    # a fenced write: the epoch's zk version moved on, nothing applies
    store.set(paths.CONTROLLER_EPOCH, paths.encode_controller_epoch(2))
    with pytest.raises(BadVersionError) as info:
        with store.transaction() as t2:
            t2.check(paths.CONTROLLER_EPOCH, epoch_stat.version)
            t2.create("/fenced", b"")
    assert info.value.op_index == 0
    assert store.exists("/fenced") is None


# --- paths and payloads ----------------------------------------------------------

def test_ensure_base_paths(store):
    paths.ensure_base_paths(store)
    paths.ensure_base_paths(store)
    for p in ("/consumers", "/brokers/ids", "/brokers/topics", "/brokers/seqid",
              "/config/changes", "/config/topics", "/config/clients", "/config/users",
              "/config/brokers", "/config/ips", "/admin/delete_topics",
              "/isr_change_notification", "/latest_producer_id_block",
              "/log_dir_event_notification"):
        assert store.exists(p) is not None, p
    assert store.get_children("/config") == ["brokers", "changes", "clients", "ips",
                                             "topics", "users"]
    assert paths.generate_broker_sequence_id(store) == 1
    assert paths.generate_broker_sequence_id(store) == 2


def test_topic_creation_flow(store):
    paths.ensure_base_paths(store)
    store.create(paths.topic_path("orders"), paths.encode_topic_assignment(
        {1: [2, 1], 0: [1, 2]}, topic_id="AAAAAAAAAAAAAAAAAAAAAQ"))
    store.create(paths.topic_config_path("orders"),
                 paths.encode_entity_config({"cleanup.policy": "compact"}))
    seq = store.create(paths.CONFIG_CHANGE_SEQ_PATH,
                       paths.encode_config_change("topics/orders"), sequence=True)
    assert seq == "/config/changes/config_change_0000000000"
    for p in (0, 1):
        store.create(paths.partition_state_path("orders", p),
                     paths.encode_partition_state(1, 0, [1, 2], 1), makepath=True)
    data, stat = store.get(paths.partition_state_path("orders", 1))
    st = paths.decode_partition_state(data, stat)
    assert (st.leader, st.isr, st.partition_epoch) == (1, (1, 2), 0)
    assert store.get_children("/brokers/topics/orders/partitions") == ["0", "1"]
    a = paths.decode_topic_assignment(store.get("/brokers/topics/orders")[0], "orders")
    assert a.partitions == {0: [1, 2], 1: [2, 1]} and a.topic_id == "AAAAAAAAAAAAAAAAAAAAAQ"


def test_payload_bytes():
    assert paths.encode_cluster_id("abc") == b'{"version":"1","id":"abc"}'
    assert paths.decode_cluster_id(b'{"version":"1","id":"abc"}') == "abc"
    assert paths.encode_controller(1, 1700000000000) == (
        b'{"version":2,"brokerid":1,"timestamp":"1700000000000","kraftControllerEpoch":-1}')
    c = paths.decode_controller(b'{"version":1,"brokerid":0,"timestamp":"1596122550321"}')
    assert (c.broker_id, c.timestamp_ms, c.kraft_controller_epoch, c.version) == (
        0, 1596122550321, None, 1)
    assert paths.encode_controller_epoch(5) == b"5"
    assert paths.decode_controller_epoch(b"5") == 5
    assert paths.encode_topic_assignment({1: [2, 3, 1], 0: [1, 2, 3]}, "tid") == (
        b'{"partitions":{"0":[1,2,3],"1":[2,3,1]},"topic_id":"tid",'
        b'"adding_replicas":{},"removing_replicas":{},"version":3}')
    assert paths.encode_partition_state(1, 4, [1, 2, 3], 5) == (
        b'{"controller_epoch":5,"leader":1,"version":1,"leader_epoch":4,"isr":[1,2,3]}')
    assert paths.encode_partition_state(1, 4, [1], 5, paths.LEADER_RECOVERING) == (
        b'{"controller_epoch":5,"leader":1,"version":1,"leader_recovery_state":1,'
        b'"leader_epoch":4,"isr":[1]}')
    # Kafka's own key order (a real ZooKeeper dump) parses the same
    st = paths.decode_partition_state(
        b'{"controller_epoch":1272,"leader":0,"version":1,"leader_epoch":4,"isr":[0,2]}')
    assert (st.leader, st.leader_epoch, st.isr, st.controller_epoch,
            st.leader_recovery_state) == (0, 4, (0, 2), 1272, 0)
    assert paths.encode_entity_config({"retention.ms": 1000}) == (
        b'{"version":1,"config":{"retention.ms":"1000"}}')
    assert paths.decode_entity_config(b'{"version":1,"config":{"a":"b"}}') == {"a": "b"}
    assert paths.decode_entity_config(b"") == {}
    assert paths.encode_config_change("topics/t") == b'{"version":2,"entity_path":"topics/t"}'
    assert paths.decode_config_change(
        b'{"version":1,"entity_type":"topics","entity_name":"t"}') == "topics/t"
    assert paths.encode_isr_change([("t", 0)]) == (
        b'{"version":1,"partitions":[{"topic":"t","partition":0}]}')
    assert paths.decode_isr_change(paths.encode_isr_change([("t", 0), ("u", 3)])) == [
        ("t", 0), ("u", 3)]
    assert paths.encode_log_dir_event(1) == b'{"version":1,"broker":1,"event":1}'
    assert paths.decode_log_dir_event(b'{"version":1,"broker":1,"event":1}') == 1
    assert paths.encode_producer_id_block(1, 0, 999) == (
        b'{"version":1,"broker":1,"block_start":"0","block_end":"999"}')
    blk = paths.decode_producer_id_block(paths.encode_producer_id_block(2, 1000, 1999))
    assert (blk.broker, blk.block_start, blk.block_end, blk.size) == (2, 1000, 1999, 1000)
    assert paths.decode_reassign_partitions(paths.encode_reassign_partitions(
        {("t", 0): [1, 2]})) == {("t", 0): [1, 2]}
    assert paths.decode_preferred_replica_election(
        paths.encode_preferred_replica_election([("t", 1)])) == [("t", 1)]
    assert paths.broker_path(3) == "/brokers/ids/3"
    assert paths.partition_state_path("t", 2) == "/brokers/topics/t/partitions/2/state"
    assert paths.topic_config_path("t") == "/config/topics/t"
    assert paths.delete_topic_path("t") == "/admin/delete_topics/t"
    assert paths.broker_config_path(paths.DEFAULT_ENTITY) == "/config/brokers/<default>"


def test_broker_registration_payload():
    eps = [paths.EndPoint("PLAINTEXT", "h1", 9092, "PLAINTEXT"),
           paths.EndPoint("SSL", "h1", 9093, "SSL")]
    raw = paths.encode_broker_registration(eps, 1700000000000, rack="r1",
                                           features={"metadata.version": (1, 3)})
    assert raw == (
        b'{"version":5,"host":"h1","port":9092,"jmx_port":-1,"timestamp":"1700000000000",'
        b'"endpoints":["PLAINTEXT://h1:9092","SSL://h1:9093"],'
        b'"listener_security_protocol_map":{"PLAINTEXT":"PLAINTEXT","SSL":"SSL"},'
        b'"rack":"r1","features":{"metadata.version":{"min_version":1,"max_version":3}}}')
    reg = paths.decode_broker_registration(7, raw)
    assert reg.broker_id == 7 and reg.endpoints == tuple(eps) and reg.rack == "r1"
    assert reg.features == {"metadata.version": (1, 3)} and reg.timestamp_ms == 1700000000000
    # no PLAINTEXT listener: null host, port -1; custom listener names; IPv6
    eps2 = [paths.EndPoint("CLIENT", "::1", 9094, "SASL_SSL")]
    obj = json.loads(paths.encode_broker_registration(eps2, 1))
    assert obj["host"] is None and obj["port"] == -1 and "rack" not in obj
    assert obj["endpoints"] == ["CLIENT://[::1]:9094"]
    assert paths.decode_broker_registration(1, json.dumps(obj).encode()).endpoints == tuple(eps2)
    # version 1: host and port only
    v1 = paths.decode_broker_registration(
        0, b'{"version":1,"host":"h","port":9092,"jmx_port":9999,"timestamp":"1"}')
    assert v1.endpoints == (paths.EndPoint("PLAINTEXT", "h", 9092, "PLAINTEXT"),)
    for bad in (b"not json", b"[]", b'{"version":0,"jmx_port":1}',
                b'{"version":4,"jmx_port":-1,"endpoints":["CLIENT://h:1"]}'):
        with pytest.raises(paths.ZNodeDataError):
            paths.decode_broker_registration(0, bad)


# --- embedded backend: persistence ---------------------------------------------------

def test_embedded_persisted_across_reopen(tmp_path):
    f = tmp_path / "meta.json"
    clock = MockClock()
    s = EmbeddedStore(f, clock=clock)
    s.create("/a/b", b"\x00\xffbin", makepath=True)
    s.set("/a/b", b"v2")
    s.create("/a/seq_", sequence=True)
    before = {p: s.get(p) for p in ("/a", "/a/b", "/a/seq_0000000001")}
    last = s.last_zxid
    s.close()
    s2 = EmbeddedStore(f, clock=clock)
    try:
        assert {p: s2.get(p) for p in before} == before
        assert s2.get_children("/a") == ["b", "seq_0000000001"]
        assert s2.create("/a/seq_", sequence=True) == "/a/seq_0000000002"
        assert s2.exists("/a/seq_0000000002").czxid == last + 1
    finally:
        s2.close()
    doc = json.loads(f.read_text())
    assert doc["format"] == "kafkapy-metadata-store" and doc["zxid"] == last + 1


def test_embedded_ephemeral_not_persisted_and_zxid_monotonic(tmp_path):
    f = tmp_path / "meta.json"
    s = EmbeddedStore(f)
    s.create("/brokers/ids", makepath=True)
    s.create("/brokers/ids/0", b"reg", ephemeral=True)
    epoch1 = s.exists("/brokers/ids/0").czxid
    assert "/brokers/ids/0" not in json.loads(f.read_text())["nodes"]
    s.close()
    s = EmbeddedStore(f)
    try:
        assert s.get_children("/brokers/ids") == []
        s.create("/brokers/ids/0", b"reg", ephemeral=True)
        assert s.exists("/brokers/ids/0").czxid > epoch1     # broker epoch grows
    finally:
        s.close()


_CRASH_SCRIPT = textwrap.dedent("""
    import os, signal, sys
    from kafkapy.metadata.embedded import EmbeddedStore
    s = EmbeddedStore(sys.argv[1])
    s.create("/brokers/ids", makepath=True)
    s.create("/brokers/topics/t", b'{"version":3}', makepath=True)
    s.create("/brokers/ids/1", b"me", ephemeral=True)
    for i in range(50):
        s.set("/brokers/topics/t", str(i).encode())
    print(s.exists("/brokers/ids/1").czxid, s.last_zxid, flush=True)
    os.kill(os.getpid(), signal.SIGKILL)
""")


def test_embedded_survives_kill_9(tmp_path):
    f = tmp_path / "meta.json"
    proc = subprocess.run([sys.executable, "-c", _CRASH_SCRIPT, str(f)], cwd=ROOT,
                          capture_output=True, text=True, timeout=60)
    assert proc.returncode == -signal.SIGKILL, proc.stderr
    eph_czxid, last = map(int, proc.stdout.split())
    s = EmbeddedStore(f)                         # the lock died with the process
    try:
        assert s.get("/brokers/topics/t")[0] == b"49"
        assert s.get("/brokers/topics/t")[1].version == 50
        assert s.get_children("/brokers/ids") == []
        assert s.last_zxid == last
        s.create("/brokers/ids/1", b"me", ephemeral=True)
        assert s.exists("/brokers/ids/1").czxid > eph_czxid
    finally:
        s.close()


@pytest.mark.parametrize("content", [
    b"garbage\x00\xff",
    b"",
    b'{"format":"kafkapy-metadata-store","version":1,"zxid":3,"nodes":{"/":',   # torn
    b'{"some":"other json"}',
    b'{"format":"kafkapy-metadata-store","version":1,"zxid":3,"nodes":{}}',     # no root
    b'{"format":"kafkapy-metadata-store","version":1,"zxid":3,"nodes":{"/a/b":'
    b'{"data":"","czxid":1,"mzxid":1,"pzxid":1,"ctime":0,"mtime":0,"version":0,'
    b'"cversion":0,"cseq":0}}}',                                                          # orphan
])
def test_embedded_bad_file_is_a_clear_error(tmp_path, content):
    f = tmp_path / "meta.json"
    f.write_bytes(content)
    with pytest.raises(MetadataStoreError, match=str(f)):
        EmbeddedStore(f)
    # the failed open released its lock: a good file opens now
    f.unlink()
    EmbeddedStore(f).close()


def test_embedded_unreadable_file(tmp_path):
    f = tmp_path / "meta.json"
    f.mkdir()                                          # a directory where the file should be
    with pytest.raises(MetadataStoreError, match=str(f)):
        EmbeddedStore(f)


def test_embedded_stale_tmp_ignored_and_single_opener(tmp_path):
    f = tmp_path / "meta.json"
    s = EmbeddedStore(f)
    s.create("/keep", b"1")
    s.close()
    (tmp_path / "meta.json.tmp").write_bytes(b"half a wri")     # crash before the rename
    s = EmbeddedStore(f)
    try:
        assert s.get("/keep")[0] == b"1"
        with pytest.raises(MetadataStoreError, match="in use"):
            EmbeddedStore(f)
    finally:
        s.close()


def test_embedded_watch_runs_synchronously_without_loop(tmp_path):
    s = EmbeddedStore(tmp_path / "m.json")
    try:
        s.create("/w")
        rec = Recorder()
        s.get("/w", watch=rec)

        def boom(ev):
            raise RuntimeError("callback failure is logged, not raised")

        s.get("/w", watch=boom)
        s.set("/w", b"x")
        assert rec.events == [(EventType.CHANGED, "/w")]       # already delivered
    finally:
        s.close()


# --- ZooKeeper backend specifics ------------------------------------------------------

def test_split_connect_string():
    assert split_connect_string("h1:2181,h2:2181/kafka") == ("h1:2181,h2:2181", "/kafka")
    assert split_connect_string("h:2181") == ("h:2181", "")
    assert split_connect_string("h:2181/") == ("h:2181", "")
    assert split_connect_string("h:2181/a/b") == ("h:2181", "/a/b")
    with pytest.raises(ValueError):
        split_connect_string("h:2181/a/")


def test_zookeeper_chroot_is_created_and_used(zk, zookeeper_server):  # noqa: F811
    zk.create("/brokers/ids", makepath=True)
    zk.create("/brokers/ids/1", b"x", ephemeral=True)
    raw = ZooKeeperStore(zookeeper_server.connect_string, 6000, 15000)
    try:
        assert raw.get_children(zk.chroot + "/brokers/ids") == ["1"]
        assert raw.exists(zk.chroot + "/brokers/ids/1").ephemeral_owner == zk.session_id
        rec = Recorder()
        zk.get_children("/brokers/ids", watch=rec)            # event paths are chroot-relative
        raw.create(zk.chroot + "/brokers/ids/2")
        assert rec.wait(1) == [(EventType.CHILD, "/brokers/ids")]
    finally:
        raw.close()


def test_zookeeper_unreachable_is_a_clear_error():
    from tests.support.zookeeper_server import free_port
    port = free_port()
    with pytest.raises(MetadataStoreError, match=f"127.0.0.1:{port}"):
        ZooKeeperStore(f"127.0.0.1:{port}", 2000, 500)
