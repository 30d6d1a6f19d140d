"""EmbeddedStore: the metadata tree in memory, persisted to one file.

A single-process stand-in for ZooKeeper with the same semantics (see
``kafkapy.metadata.store``).  The process is the session: ephemeral nodes are
owned by ``session_id`` (random per open) and vanish when the store is closed or
the process dies; they are never written to the file.

Sessions: ``store.session()`` opens one more session on the same tree, a
``MetadataStore`` of its own (``EmbeddedSession``) - how several brokers of one
process (``kafkapy.testing.cluster``) share one store as if it were ZooKeeper:

* its ephemeral nodes are owned by its ``session_id``; a watch belongs to the
  session that set it (the same callable set on one path by two sessions fires
  in both);
* ``close()`` ends it: its watches are dropped, then its ephemeral nodes are
  deleted as one change whose watches fire in the other sessions (what a
  broker's ``/brokers/ids`` and ``/controller`` watchers see when a broker dies);
* ``expire()`` is ZooKeeper expiring the session while its client lives on
  (kazoo's LOST then CONNECTED): its pending watches get one ``EventType.NONE``
  event (``KeeperState.EXPIRED_SESSION``, path None), its ephemeral nodes go as
  on close, then it continues under a new session id and its
  ``on_new_session`` callbacks run on the event loop;
* closing the store closes every session; a closed session raises
  ``ConnectionClosedError``.

Invariants
* Every change (create, set, delete, a whole multi, a whole recursive delete)
  gets one new zxid; zxids are monotonic across restarts because the counter is
  persisted with every change - including changes to ephemeral nodes, so a
  broker's epoch (the czxid of its ``/brokers/ids/<id>`` registration) always
  grows.
* A change snapshots each node it modifies once, whatever the number of its
  operations (a multi creating N children of one parent copies the parent once:
  creating a 10,000-partition topic's znodes is O(N), not O(N^2)), and writes the
  file once.
* The file is replaced atomically after every change: write ``<file>.tmp``,
  fsync it, rename over ``<file>``, fsync the directory.  A kill -9 leaves either
  the old or the new file, never a torn one.  A stale ``.tmp`` is ignored.
* One process at a time: ``<file>.lock`` is held with ``flock`` while open.
* Watches fire after the change is applied and persisted: with
  ``loop.call_soon`` when called from a running event loop, else synchronously
  before the mutating call returns.  A callback's exception is logged, never
  propagated to the writer.

File format (UTF-8 JSON, one object)::

    {"format": "kafkapy-metadata-store", "version": 1, "zxid": <last zxid>,
     "nodes": {"<path>": {"data": "<base64>", "czxid": n, "mzxid": n, "pzxid": n,
                          "ctime": ms, "mtime": ms, "version": n, "cversion": n,
                          "cseq": n},
               ...}}

``nodes`` holds every persistent node including ``/`` (in no particular order);
children are implied by the paths.  ``cseq`` counts the node's child creations: it is the
counter of the next sequential child (ZooKeeper's counter grows on child
creates only, while ``cversion`` grows on creates and deletes).  ``num_children``/``data_length`` are derived on load.
A file that cannot be read or parsed, or that breaks these rules (missing
parent, ephemeral data, unknown format) raises ``MetadataStoreError`` naming the
file.
"""
from __future__ import annotations

import asyncio
import base64
import binascii
import errno
import fcntl
import json
import os
import secrets
from pathlib import Path
from typing import Callable, Sequence

from kafkapy.clock import SYSTEM_CLOCK, Clock
from kafkapy.metadata.store import (
    BadArgumentsError,
    BadVersionError,
    CheckOp,
    ConnectionClosedError,
    CreateOp,
    DeleteOp,
    EventType,
    KeeperState,
    MetadataStore,
    MetadataStoreError,
    NoChildrenForEphemeralsError,
    NodeExistsError,
    NoNodeError,
    NotEmptyError,
    Op,
    SetDataOp,
    Stat,
    WatchCallback,
    WatchedEvent,
    join_path,
    parent_of,
    run_watch,
    validate_path,
)

__all__ = ["EmbeddedSession", "EmbeddedStore"]


FILE_FORMAT = "kafkapy-metadata-store"
FILE_VERSION = 1

_DATA = "data"
_CHILD = "child"


class _Node:
    __slots__ = ("data", "czxid", "mzxid", "pzxid", "ctime", "mtime", "version",
                 "cversion", "cseq", "ephemeral_owner", "children")

    def __init__(self, data: bytes, zxid: int, now: int, ephemeral_owner: int = 0) -> None:
        self.data = data
        self.czxid = self.mzxid = self.pzxid = zxid
        self.ctime = self.mtime = now
        self.version = 0
        self.cversion = 0
        self.cseq = 0           # child creations: the next sequential child's counter
        self.ephemeral_owner = ephemeral_owner
        self.children: set[str] = set()

    def stat(self) -> Stat:
        return Stat(czxid=self.czxid, mzxid=self.mzxid, pzxid=self.pzxid,
                    ctime=self.ctime, mtime=self.mtime, version=self.version,
                    cversion=self.cversion, aversion=0,
                    ephemeral_owner=self.ephemeral_owner,
                    data_length=len(self.data), num_children=len(self.children))

    def snapshot(self) -> tuple:
        return (self.data, self.mzxid, self.pzxid, self.mtime, self.version,
                self.cversion, self.cseq, set(self.children))

    def restore(self, snap: tuple) -> None:
        (self.data, self.mzxid, self.pzxid, self.mtime, self.version,
         self.cversion, self.cseq, self.children) = snap


def _new_session_id() -> int:
    return secrets.randbits(62) | 1     # never 0: 0 is "persistent" in a Stat


def _check_data(data: bytes) -> bytes:
    if data is None:
        return b""
    if not isinstance(data, (bytes, bytearray, memoryview)):
        raise TypeError(f"znode data must be bytes, not {type(data).__name__}")
    return bytes(data)


class EmbeddedStore(MetadataStore):
    """The metadata tree in memory, persisted to ``path`` (see module docstring)."""

    #: No request size limit (ZooKeeper's jute.maxbuffer): a writer may put a whole batch
    #: in one multi, which writes the file once (``ZkWrites`` does).
    bounded_multi = False

    def __init__(self, path: str | os.PathLike, *, clock: Clock = SYSTEM_CLOCK,
                 fsync: bool = True) -> None:
        self._path = Path(path)
        self._tmp_path = self._path.with_name(self._path.name + ".tmp")
        self._clock = clock
        self._fsync = fsync
        self._closed = False
        self._session_id = _new_session_id()
        # Sessions opened by ``session()`` and alive (by id); the store's own is not listed.
        self._sessions: dict[int, "EmbeddedSession"] = {}
        self._nodes: dict[str, _Node] = {}
        self._zxid = 0
        # kind -> path -> {(session id, callback): None}: per-session one-shot watches
        self._watches: dict[str, dict[str, dict[tuple[int, WatchCallback], None]]] = {
            _DATA: {}, _CHILD: {}}
        # Undo log and pending watch triggers of the change being applied.
        self._undo: list[tuple[str, str, tuple | None]] | None = None
        # Nodes (by id) already snapshotted in the change being applied: a node is
        # snapshotted once per change, so a multi creating N children of one parent
        # copies the parent's child set once, not N times (O(N), not O(N^2)).
        self._touched: set[int] = set()
        self._triggers: list[tuple[str, str]] = []
        # Encoded file fragment of each persistent node; a write re-encodes only
        # the nodes in ``_dirty`` (touched since the last write).
        self._frags: dict[str, str] = {}
        self._dirty: set[str] = set()
        self._lock_fd = self._acquire_lock()
        try:
            self._load()
        except BaseException:
            self._release_lock()
            raise

    # --- properties ---------------------------------------------------------
    @property
    def session_id(self) -> int:
        return self._session_id

    @property
    def path(self) -> Path:
        return self._path

    @property
    def last_zxid(self) -> int:
        return self._zxid

    # --- sessions -----------------------------------------------------------
    def session(self) -> "EmbeddedSession":
        """Open another session on this tree (see the module docstring)."""
        self._check_open()
        sid = _new_session_id()
        while sid == self._session_id or sid in self._sessions:
            sid = _new_session_id()
        view = EmbeddedSession(self, sid)
        self._sessions[sid] = view
        return view

    # --- reads --------------------------------------------------------------
    def get(self, path: str, watch: WatchCallback | None = None) -> tuple[bytes, Stat]:
        return self._get(self._session_id, path, watch)

    def exists(self, path: str, watch: WatchCallback | None = None) -> Stat | None:
        return self._exists(self._session_id, path, watch)

    def get_children(self, path: str, watch: WatchCallback | None = None) -> list[str]:
        return self._get_children(self._session_id, path, watch)

    def _get(self, sid: int, path: str, watch: WatchCallback | None) -> tuple[bytes, Stat]:
        self._check_open()
        validate_path(path)
        node = self._nodes.get(path)
        if node is None:
            raise NoNodeError(path)
        if watch is not None:
            self._add_watch(sid, _DATA, path, watch)
        return node.data, node.stat()

    def _exists(self, sid: int, path: str, watch: WatchCallback | None) -> Stat | None:
        self._check_open()
        validate_path(path)
        if watch is not None:
            self._add_watch(sid, _DATA, path, watch)
        node = self._nodes.get(path)
        return None if node is None else node.stat()

    def _get_children(self, sid: int, path: str, watch: WatchCallback | None) -> list[str]:
        self._check_open()
        validate_path(path)
        node = self._nodes.get(path)
        if node is None:
            raise NoNodeError(path)
        if watch is not None:
            self._add_watch(sid, _CHILD, path, watch)
        return sorted(node.children)

    # --- writes -------------------------------------------------------------
    def create(self, path: str, data: bytes = b"", ephemeral: bool = False,
               sequence: bool = False, makepath: bool = False) -> str:
        return self._create(self._session_id, path, data, ephemeral, sequence, makepath)

    def _create(self, sid: int, path: str, data: bytes, ephemeral: bool, sequence: bool,
                makepath: bool) -> str:
        self._check_open()
        data = _check_data(data)
        validate_path(path, allow_trailing_slash=sequence)
        owner = sid if ephemeral else 0

        def apply(zxid: int, now: int) -> str:
            if makepath:
                self._make_parents(parent_of(path), zxid, now)
            return self._do_create(path, data, owner, sequence, zxid, now)

        return self._change(apply)

    def set(self, path: str, data: bytes, version: int = -1) -> Stat:
        self._check_open()
        data = _check_data(data)
        validate_path(path)
        return self._change(lambda zxid, now: self._do_set(path, data, version, zxid, now))

    def delete(self, path: str, version: int = -1, recursive: bool = False) -> None:
        self._check_open()
        validate_path(path)

        def apply(zxid: int, now: int) -> None:
            if recursive:
                node = self._nodes.get(path)
                if node is None:
                    raise NoNodeError(path)
                if version != -1 and node.version != version:
                    raise BadVersionError(path)
                for sub in self._subtree_bottom_up(path):
                    self._do_delete(sub, -1, zxid)
            else:
                self._do_delete(path, version, zxid)

        self._change(apply)

    def ensure_path(self, path: str) -> bool:
        self._check_open()
        validate_path(path)
        if path in self._nodes:
            return True
        self._change(lambda zxid, now: self._make_parents(path, zxid, now))
        return True

    def multi(self, ops: Sequence[Op]) -> list:
        return self._multi(self._session_id, ops)

    def _multi(self, sid: int, ops: Sequence[Op]) -> list:
        self._check_open()
        ops = list(ops)
        if not ops:
            return []
        for op in ops:
            if isinstance(op, CreateOp):
                validate_path(op.path, allow_trailing_slash=op.sequence)
                _check_data(op.data)
            elif isinstance(op, (SetDataOp, DeleteOp, CheckOp)):
                validate_path(op.path)
                if isinstance(op, SetDataOp):
                    _check_data(op.data)
            else:
                raise TypeError(f"not a multi operation: {op!r}")

        def apply(zxid: int, now: int) -> list:
            results: list = []
            for i, op in enumerate(ops):
                try:
                    if isinstance(op, CreateOp):
                        results.append(self._do_create(op.path, _check_data(op.data),
                                                       sid if op.ephemeral else 0,
                                                       op.sequence, zxid, now))
                    elif isinstance(op, SetDataOp):
                        results.append(self._do_set(op.path, _check_data(op.data),
                                                    op.version, zxid, now))
                    elif isinstance(op, DeleteOp):
                        self._do_delete(op.path, op.version, zxid)
                        results.append(True)
                    else:
                        node = self._nodes.get(op.path)
                        if node is None:
                            raise NoNodeError(op.path)
                        if op.version != -1 and node.version != op.version:
                            raise BadVersionError(op.path)
                        results.append(True)
                except Exception as e:
                    e.op_index = i  # type: ignore[attr-defined]
                    e.op = op       # type: ignore[attr-defined]
                    raise
            return results

        return self._change(apply)

    def close(self) -> None:
        if self._closed:
            return
        self._closed = True
        for view in list(self._sessions.values()):
            view._closed = True
        self._sessions.clear()
        # Every session ends: ephemeral nodes go; nothing else changes on disk.
        for path in sorted((p for p, n in self._nodes.items() if n.ephemeral_owner),
                           key=len, reverse=True):
            parent = self._nodes.get(parent_of(path))
            if parent is not None:
                parent.children.discard(path.rsplit("/", 1)[1])
            del self._nodes[path]
        self._watches = {_DATA: {}, _CHILD: {}}
        self._release_lock()

    def _end_session(self, sid: int) -> None:
        """Session ``sid`` ends (closed or expired): its watches go without firing, then
        its ephemeral nodes are deleted as one change, firing the other sessions' watches."""
        self._drop_watches(sid)
        owned = [p for p, n in self._nodes.items() if n.ephemeral_owner == sid]
        if not owned or self._closed:
            return

        def apply(zxid: int, now: int) -> None:
            for path in owned:       # ephemeral nodes have no children: any order
                self._do_delete(path, -1, zxid)

        self._change(apply)

    def _drop_watches(self, sid: int) -> list[WatchCallback]:
        """Forget every watch of session ``sid``; returns their callbacks (each once)."""
        dropped: dict[WatchCallback, None] = {}
        for by_path in self._watches.values():
            for path in list(by_path):
                keys = by_path[path]
                for key in [k for k in keys if k[0] == sid]:
                    del keys[key]
                    dropped[key[1]] = None
                if not keys:
                    del by_path[path]
        return list(dropped)

    # --- change machinery ---------------------------------------------------
    def _change(self, apply):
        """Run ``apply(zxid, now)`` atomically: undo on error, else persist and fire."""
        zxid = self._zxid + 1
        now = self._clock.time_ms()
        self._undo = []
        self._touched = set()
        self._triggers = []
        try:
            result = apply(zxid, now)
        except BaseException:
            self._rollback()
            raise
        finally:
            undo, self._undo = self._undo, None
            self._touched = set()
            for _kind, path, _snap in undo or ():
                self._dirty.add(path)
        if not undo:              # nothing changed (e.g. ensure_path of existing nodes)
            return result
        self._zxid = zxid
        try:
            self._persist()
        except BaseException:
            self._undo = undo
            self._zxid = zxid - 1
            self._rollback()
            self._undo = None
            raise
        triggers, self._triggers = self._triggers, []
        self._fire(triggers)
        return result

    def _rollback(self) -> None:
        undo = self._undo or []
        for kind, path, snap in reversed(undo):
            if kind == "created":
                self._nodes.pop(path, None)
            elif kind == "deleted":
                self._nodes[path] = snap  # type: ignore[assignment]
            else:  # "modified"
                self._nodes[path].restore(snap)  # type: ignore[arg-type]
        for _kind, path, _snap in undo:
            self._dirty.add(path)
        self._undo = []
        self._triggers = []

    def _touch(self, path: str, node: _Node) -> None:
        """Record ``node``'s state before its first modification in this change (once:
        rollback restores that first snapshot, later ones would be overwritten by it)."""
        if id(node) in self._touched:
            return
        self._touched.add(id(node))
        self._undo.append(("modified", path, node.snapshot()))  # type: ignore[union-attr]

    def _do_create(self, path: str, data: bytes, owner: int, sequence: bool,
                   zxid: int, now: int) -> str:
        """Create ``path``; ``owner`` is the owning session id of an ephemeral node, else 0."""
        if sequence and path.endswith("/"):
            parent_path = path[:-1] or "/"      # "/parent/" + counter
        elif path == "/":
            raise NodeExistsError(path)
        else:
            parent_path = parent_of(path)
        parent = self._nodes.get(parent_path)
        if parent is None:
            raise NoNodeError(path)
        if parent.ephemeral_owner:
            raise NoChildrenForEphemeralsError(path)
        if sequence:
            path = f"{path}{parent.cseq:010d}"
        if path in self._nodes:
            raise NodeExistsError(path)
        name = path.rsplit("/", 1)[1]
        self._touch(parent_path, parent)
        node = _Node(data, zxid, now, owner)
        self._nodes[path] = node
        self._undo.append(("created", path, None))  # type: ignore[union-attr]
        parent.children.add(name)
        parent.cversion += 1
        parent.cseq += 1
        parent.pzxid = zxid
        self._triggers.append((path, EventType.CREATED))
        self._triggers.append((parent_path, EventType.CHILD))
        return path

    def _do_set(self, path: str, data: bytes, version: int, zxid: int, now: int) -> Stat:
        node = self._nodes.get(path)
        if node is None:
            raise NoNodeError(path)
        if version != -1 and node.version != version:
            raise BadVersionError(path)
        self._touch(path, node)
        node.data = data
        node.version += 1
        node.mzxid = zxid
        node.mtime = now
        self._triggers.append((path, EventType.CHANGED))
        return node.stat()

    def _do_delete(self, path: str, version: int, zxid: int) -> None:
        if path == "/":
            raise BadArgumentsError(path)
        node = self._nodes.get(path)
        if node is None:
            raise NoNodeError(path)
        if version != -1 and node.version != version:
            raise BadVersionError(path)
        if node.children:
            raise NotEmptyError(path)
        parent_path = parent_of(path)
        parent = self._nodes[parent_path]
        self._touch(parent_path, parent)
        del self._nodes[path]
        self._undo.append(("deleted", path, node))  # type: ignore[union-attr]
        parent.children.discard(path.rsplit("/", 1)[1])
        parent.cversion += 1
        parent.pzxid = zxid
        self._triggers.append((path, EventType.DELETED))
        self._triggers.append((parent_path, EventType.CHILD))

    def _make_parents(self, path: str, zxid: int, now: int) -> None:
        """Create ``path`` and its missing ancestors as empty persistent nodes."""
        missing = []
        p = path
        while p not in self._nodes:
            missing.append(p)
            p = parent_of(p)
        for p in reversed(missing):
            self._do_create(p, b"", 0, False, zxid, now)

    def _subtree_bottom_up(self, path: str) -> list[str]:
        out: list[str] = []
        stack = [path]
        while stack:
            p = stack.pop()
            out.append(p)
            stack.extend(join_path(p, c) for c in self._nodes[p].children)
        out.reverse()
        return out

    # --- watches ------------------------------------------------------------
    def _add_watch(self, sid: int, kind: str, path: str, cb: WatchCallback) -> None:
        if not callable(cb):
            raise TypeError("watch must be callable")
        self._watches[kind].setdefault(path, {})[(sid, cb)] = None

    def _fire(self, triggers: list[tuple[str, str]]) -> None:
        if not (self._watches[_DATA] or self._watches[_CHILD]):
            return
        calls: list[tuple[WatchCallback, WatchedEvent]] = []
        data_w, child_w = self._watches[_DATA], self._watches[_CHILD]
        for path, etype in triggers:
            ev = WatchedEvent(etype, KeeperState.CONNECTED, path)
            if etype in (EventType.CREATED, EventType.CHANGED):
                keys = list(data_w.pop(path, ()))
            elif etype == EventType.DELETED:
                keys = list(data_w.pop(path, ())) + list(child_w.pop(path, ()))
            else:
                keys = list(child_w.pop(path, ()))
            calls.extend((cb, ev) for _sid, cb in keys)
        _deliver(calls)

    # --- persistence --------------------------------------------------------
    def _check_open(self) -> None:
        if self._closed:
            raise ConnectionClosedError("metadata store is closed")

    def _acquire_lock(self) -> int:
        lock_path = self._path.with_name(self._path.name + ".lock")
        try:
            self._path.parent.mkdir(parents=True, exist_ok=True)
            fd = os.open(lock_path, os.O_RDWR | os.O_CREAT, 0o644)
        except OSError as e:
            raise MetadataStoreError(f"cannot open metadata store lock file {lock_path}: {e}") from e
        try:
            fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
        except OSError as e:
            os.close(fd)
            if e.errno in (errno.EWOULDBLOCK, errno.EAGAIN, errno.EACCES):
                raise MetadataStoreError(
                    f"metadata store {self._path} is in use by another store "
                    f"(lock {lock_path} held)") from e
            raise MetadataStoreError(f"cannot lock metadata store {lock_path}: {e}") from e
        return fd

    def _release_lock(self) -> None:
        if self._lock_fd is not None:
            try:
                os.close(self._lock_fd)   # closing drops the flock
            finally:
                self._lock_fd = None

    def _load(self) -> None:
        if not self._path.exists():
            root = _Node(b"", 0, 0)
            self._nodes = {"/": root}
            self._zxid = 0
            self._dirty = {"/"}
            self._persist()
            return
        try:
            raw = self._path.read_bytes()
        except OSError as e:
            raise MetadataStoreError(f"cannot read metadata store file {self._path}: {e}") from e
        try:
            self._nodes, self._zxid = _decode(raw)
        except _FormatError as e:
            raise MetadataStoreError(
                f"metadata store file {self._path} is corrupt or not a kafkapy metadata "
                f"store: {e}") from None
        self._dirty = set(self._nodes)

    def _persist(self) -> None:
        frags = self._frags
        for path in self._dirty:
            n = self._nodes.get(path)
            if n is None or n.ephemeral_owner:
                frags.pop(path, None)
            else:
                frags[path] = (
                    f'{json.dumps(path)}:{{"data":"{base64.b64encode(n.data).decode("ascii")}",'
                    f'"czxid":{n.czxid},"mzxid":{n.mzxid},"pzxid":{n.pzxid},'
                    f'"ctime":{n.ctime},"mtime":{n.mtime},"version":{n.version},'
                    f'"cversion":{n.cversion},"cseq":{n.cseq}}}')
        self._dirty.clear()
        payload = (f'{{"format":"{FILE_FORMAT}","version":{FILE_VERSION},"zxid":{self._zxid},'
                   f'"nodes":{{{",".join(frags.values())}}}}}').encode("utf-8")
        try:
            fd = os.open(self._tmp_path, os.O_WRONLY | os.O_CREAT | os.O_TRUNC, 0o644)
            try:
                view = memoryview(payload)
                while view:
                    n = os.write(fd, view)
                    view = view[n:]
                if self._fsync:
                    os.fsync(fd)
            finally:
                os.close(fd)
            os.replace(self._tmp_path, self._path)
            if self._fsync:
                dfd = os.open(self._path.parent, os.O_RDONLY)
                try:
                    os.fsync(dfd)
                finally:
                    os.close(dfd)
        except OSError as e:
            raise MetadataStoreError(f"cannot write metadata store file {self._path}: {e}") from e


class EmbeddedSession(MetadataStore):
    """One more session on an ``EmbeddedStore``'s tree: its own session id, ephemeral
    nodes and watches (see the module docstring); made by ``EmbeddedStore.session()``."""

    bounded_multi = False

    def __init__(self, store: EmbeddedStore, session_id: int) -> None:
        self._store = store
        self._sid = session_id
        self._closed = False
        self._on_new_session: list[tuple[asyncio.AbstractEventLoop | None, Callable]] = []

    @property
    def session_id(self) -> int:
        return self._sid

    @property
    def store(self) -> EmbeddedStore:
        """The store whose tree this session shares."""
        return self._store

    @property
    def closed(self) -> bool:
        return self._closed or self._store._closed

    def on_new_session(self, callback: Callable[[], None]) -> None:
        try:
            loop: asyncio.AbstractEventLoop | None = asyncio.get_running_loop()
        except RuntimeError:
            loop = None
        self._on_new_session.append((loop, callback))

    # --- the tree, as this session ---------------------------------------------
    def get(self, path: str, watch: WatchCallback | None = None) -> tuple[bytes, Stat]:
        self._check_open()
        return self._store._get(self._sid, path, watch)

    def exists(self, path: str, watch: WatchCallback | None = None) -> Stat | None:
        self._check_open()
        return self._store._exists(self._sid, path, watch)

    def get_children(self, path: str, watch: WatchCallback | None = None) -> list[str]:
        self._check_open()
        return self._store._get_children(self._sid, path, watch)

    def create(self, path: str, data: bytes = b"", ephemeral: bool = False,
               sequence: bool = False, makepath: bool = False) -> str:
        self._check_open()
        return self._store._create(self._sid, path, data, ephemeral, sequence, makepath)

    def set(self, path: str, data: bytes, version: int = -1) -> Stat:
        self._check_open()
        return self._store.set(path, data, version)

    def delete(self, path: str, version: int = -1, recursive: bool = False) -> None:
        self._check_open()
        self._store.delete(path, version, recursive)

    def ensure_path(self, path: str) -> bool:
        self._check_open()
        return self._store.ensure_path(path)

    def multi(self, ops: Sequence[Op]) -> list:
        self._check_open()
        return self._store._multi(self._sid, ops)

    # --- the session's end ------------------------------------------------------
    def close(self) -> None:
        """End the session: watches dropped, ephemeral nodes deleted (others' watches fire)."""
        if self._closed:
            return
        self._closed = True
        self._store._sessions.pop(self._sid, None)
        self._store._end_session(self._sid)

    def expire(self) -> None:
        """ZooKeeper expires the session and the client gets a new one (kazoo's LOST, then
        CONNECTED): pending watches get ``EventType.NONE``, ephemeral nodes go, the session
        continues under a new id, then the ``on_new_session`` callbacks run."""
        self._check_open()
        store, old = self._store, self._sid
        pending = store._drop_watches(old)
        store._sessions.pop(old, None)
        new = _new_session_id()
        while new == store._session_id or new in store._sessions:
            new = _new_session_id()
        self._sid = new
        store._sessions[new] = self
        store._end_session(old)
        lost = WatchedEvent(EventType.NONE, KeeperState.EXPIRED_SESSION, None)
        _deliver([(cb, lost) for cb in pending])
        for loop, callback in self._on_new_session:
            if loop is None:
                run_watch(lambda _ev, cb=callback: cb(), lost)
            elif not loop.is_closed():
                loop.call_soon_threadsafe(run_watch, lambda _ev, cb=callback: cb(), lost)

    def _check_open(self) -> None:
        if self._closed or self._store._closed:
            raise ConnectionClosedError("metadata store session is closed")


def _deliver(calls: list[tuple[WatchCallback, WatchedEvent]]) -> None:
    """Run watch callbacks: on the running event loop (soon) if any, else now."""
    if calls:
        try:
            loop = asyncio.get_running_loop()
        except RuntimeError:
            loop = None
        for cb, ev in calls:
            if loop is not None:
                loop.call_soon(run_watch, cb, ev)
            else:
                run_watch(cb, ev)


class _FormatError(Exception):
    pass


_INT_FIELDS = ("czxid", "mzxid", "pzxid", "ctime", "mtime", "version", "cversion", "cseq")


def _decode(raw: bytes) -> tuple[dict[str, _Node], int]:
    try:
        doc = json.loads(raw.decode("utf-8"))
    except (UnicodeDecodeError, ValueError) as e:
        raise _FormatError(f"not valid JSON ({e})") from None
    if not isinstance(doc, dict) or doc.get("format") != FILE_FORMAT:
        raise _FormatError(f"missing \"format\": \"{FILE_FORMAT}\"")
    if doc.get("version") != FILE_VERSION:
        raise _FormatError(f"unsupported file version {doc.get('version')!r}")
    zxid = doc.get("zxid")
    raw_nodes = doc.get("nodes")
    if not isinstance(zxid, int) or zxid < 0 or not isinstance(raw_nodes, dict):
        raise _FormatError("bad \"zxid\" or \"nodes\"")
    nodes: dict[str, _Node] = {}
    for path, rec in raw_nodes.items():
        try:
            validate_path(path)
        except (ValueError, TypeError):
            raise _FormatError(f"bad node path {path!r}") from None
        if not isinstance(rec, dict) or not isinstance(rec.get("data"), str):
            raise _FormatError(f"bad node record for {path}")
        try:
            data = base64.b64decode(rec["data"], validate=True)
        except (binascii.Error, ValueError):
            raise _FormatError(f"bad base64 data for {path}") from None
        node = _Node(data, 0, 0)
        for f in _INT_FIELDS:
            v = rec.get(f)
            if not isinstance(v, int) or isinstance(v, bool) or v < 0:
                raise _FormatError(f"bad {f!r} for {path}")
            setattr(node, f, v)
        if node.czxid > zxid or node.mzxid > zxid or node.pzxid > zxid:
            raise _FormatError(f"node {path} has a zxid above the store's zxid {zxid}")
        nodes[path] = node
    if "/" not in nodes:
        raise _FormatError("no root node")
    for path in nodes:
        if path == "/":
            continue
        parent = nodes.get(parent_of(path))
        if parent is None:
            raise _FormatError(f"node {path} has no parent")
        parent.children.add(path.rsplit("/", 1)[1])
    return nodes, zxid
