"""ZooKeeperStore: the ``MetadataStore`` interface over a real ZooKeeper (kazoo).

A thin translation layer; the ZooKeeper controller builds on it.

* ``connect_string`` is Kafka's ``zookeeper.connect``: ``host:port[,host:port...][/chroot]``.
  The chroot is created if missing (as Kafka does) and all paths are relative to it.
* The constructor connects (blocking, up to ``connection_timeout_ms``) and raises
  ``MetadataStoreError`` naming the servers on failure, in one line with kazoo's last
  connection error.  kazoo's log records of that first attempt are held back: replayed
  once connected, dropped (summed up by the error) if the attempt fails.
* Calls are synchronous kazoo calls (one round trip each); stats are converted to
  ``Stat``, missing data (null) is returned as ``b""``.  They run on the broker's
  event loop, so they must never wait for a ZooKeeper that is not there: while kazoo
  is not connected a call raises ``ConnectionLoss`` at once, and a call whose
  connection dies under it waits at most ``op_timeout_ms`` (a third of the session
  timeout) before raising ``ConnectionLoss`` (a write's outcome is then unknown, as
  with ZooKeeper's own ConnectionLoss).  Callers retry later; the broker keeps
  serving everything that does not need ZooKeeper.
* Reconnecting: kazoo's back-off is capped at 1 s (its default grows to minutes), so a
  broker cut off from ZooKeeper learns of its expired session within a second of the
  network healing, as Kafka's ZooKeeper client does.
* Watch callbacks: kazoo calls watchers on its own thread.  A watch registered
  while an asyncio loop is running in the calling thread is delivered onto that
  loop with ``loop.call_soon_threadsafe``; otherwise (no loop) it runs on kazoo's
  callback thread.  Registering the same callable twice of one kind (data/exists
  vs child) on one path gives one delivery, as with kazoo and ZooKeeper.  When
  kazoo's session is lost, pending watches receive an ``EventType.NONE`` event.
* ``multi`` uses a kazoo transaction but raises the first failing operation's
  exception (``op_index``/``op`` attributes set) instead of returning it.
* ``on_new_session(callback)``: after ZooKeeper expired the session and kazoo opened a
  new one, ``callback`` runs on the event loop that registered it, so the broker can
  claim its ephemeral nodes again.
* ``client`` exposes the ``KazooClient`` for session-state listeners and async calls.
"""
from __future__ import annotations

import asyncio
import logging
import threading
from typing import Sequence

from kazoo.client import KazooClient, KazooState
from kazoo.exceptions import ConnectionLoss, RolledBackError
from kazoo.handlers.threading import KazooTimeoutError

from kafkapy.metadata.store import (
    BadVersionError,
    CheckOp,
    ConnectionClosedError,
    CreateOp,
    DeleteOp,
    MetadataStore,
    MetadataStoreError,
    NoNodeError,
    Op,
    SetDataOp,
    Stat,
    WatchCallback,
    WatchedEvent,
    run_watch,
    validate_path,
)

__all__ = ["ZooKeeperStore", "split_connect_string"]

_log = logging.getLogger(__name__)

_DATA = "data"
_CHILD = "child"
_KAZOO_LOGGERS = ("kazoo.client", "kazoo.protocol.connection")
_MAX_HELD_RECORDS = 1000   # a long timeout of retries to a closed port logs two a try
_DROPPED = "Connection dropped: "


def split_connect_string(connect_string: str) -> tuple[str, str]:
    """``"h1:2181,h2:2181/kafka"`` -> ``("h1:2181,h2:2181", "/kafka")``; chroot ``""`` if none."""
    s = connect_string.strip()
    i = s.find("/")
    if i < 0:
        return s, ""
    hosts, chroot = s[:i], s[i:]
    if not hosts:
        raise ValueError(f"no ZooKeeper hosts in {connect_string!r}")
    if chroot == "/":
        return hosts, ""
    validate_path(chroot)
    return hosts, chroot


class _Watch:
    """One pending kazoo registration of a caller's callback."""

    __slots__ = ("store", "key", "callback", "loop", "registered")

    def __init__(self, store: "ZooKeeperStore", key: tuple, callback: WatchCallback,
                 loop: asyncio.AbstractEventLoop | None) -> None:
        self.store = store
        self.key = key
        self.callback = callback
        self.loop = loop
        self.registered = False

    def __call__(self, event: WatchedEvent) -> None:   # on kazoo's callback thread
        if self.store._closed:
            return
        self.store._forget(self)
        loop = self.loop
        if loop is not None:
            try:
                loop.call_soon_threadsafe(run_watch, self.callback, event)
                return
            except RuntimeError:       # loop closed: nobody to deliver to
                _log.debug("dropping watch event %s: event loop closed", event)
                return
        run_watch(self.callback, event)


class _HeldBack(logging.Filter):
    """Holds kazoo's log records (any thread) while attached to its loggers."""

    def __init__(self) -> None:
        super().__init__()
        self.records: list[logging.LogRecord] = []

    def __enter__(self) -> "_HeldBack":
        for name in _KAZOO_LOGGERS:
            logging.getLogger(name).addFilter(self)
        return self

    def __exit__(self, *exc) -> None:
        for name in _KAZOO_LOGGERS:
            logging.getLogger(name).removeFilter(self)

    def filter(self, record: logging.LogRecord) -> bool:
        if len(self.records) < _MAX_HELD_RECORDS:
            self.records.append(record)
        return False

    def replay(self) -> None:
        for record in self.records:
            logging.getLogger(record.name).handle(record)

    def last_error(self) -> str | None:
        """Why the last connection attempt failed, as kazoo logged it."""
        for record in reversed(self.records):
            message = record.getMessage()
            if message.startswith(_DROPPED):
                return message[len(_DROPPED):]
        return None


class ZooKeeperStore(MetadataStore):
    """``MetadataStore`` over kazoo's ``KazooClient`` (see module docstring)."""

    def __init__(self, connect_string: str, session_timeout_ms: int = 18000,
                 connection_timeout_ms: int | None = None) -> None:
        hosts, chroot = split_connect_string(connect_string)
        self._connect_string = connect_string
        self._chroot = chroot
        self._closed = False
        self._watch_lock = threading.Lock()
        self._watches: dict[tuple, _Watch] = {}
        timeout_ms = connection_timeout_ms if connection_timeout_ms is not None else session_timeout_ms
        self._op_timeout_s = max(1.0, session_timeout_ms / 3000.0)
        self._client = KazooClient(hosts=hosts, timeout=session_timeout_ms / 1000.0,
                                   connection_retry=dict(max_tries=-1, delay=0.1, backoff=2,
                                                         max_delay=1.0, max_jitter=0.2))
        with _HeldBack() as held:
            try:
                self._client.start(timeout=timeout_ms / 1000.0)
            except KazooTimeoutError:
                self._client.close()
                cause = held.last_error()
                raise MetadataStoreError(
                    "Timed out waiting for connection while in state: CONNECTING to ZooKeeper "
                    f"at {connect_string} after {timeout_ms} ms (zookeeper.connection.timeout.ms)"
                    + (f"; last error: {cause}" if cause else "")) from None
        held.replay()
        try:
            if chroot:
                self._client.ensure_path(chroot)
                self._client.chroot = chroot
        except Exception:
            self._client.stop()
            self._client.close()
            raise

    # --- properties ---------------------------------------------------------
    @property
    def client(self) -> KazooClient:
        return self._client

    @property
    def chroot(self) -> str:
        return self._chroot

    @property
    def session_id(self) -> int:
        return self._client.client_id[0] if self._client.client_id else 0

    def on_new_session(self, callback) -> None:
        # kazoo reports LOST when ZooKeeper expired the session, then CONNECTED once
        # it has a new one; its listeners run on kazoo's thread and must not block.
        loop = asyncio.get_running_loop()
        lost = False

        def listener(state) -> None:
            nonlocal lost
            if state == KazooState.LOST:
                lost = True
            elif state == KazooState.CONNECTED and lost:
                lost = False
                loop.call_soon_threadsafe(callback)
        self._client.add_listener(listener)

    # --- watches ------------------------------------------------------------
    def _wrap(self, kind: str, path: str, cb: WatchCallback | None) -> _Watch | None:
        if cb is None:
            return None
        if not callable(cb):
            raise TypeError("watch must be callable")
        try:
            loop: asyncio.AbstractEventLoop | None = asyncio.get_running_loop()
        except RuntimeError:
            loop = None
        key = (kind, path, cb)
        with self._watch_lock:
            w = self._watches.get(key)
            if w is None:
                w = self._watches[key] = _Watch(self, key, cb, loop)
            return w

    def _forget(self, w: _Watch) -> None:
        with self._watch_lock:
            if self._watches.get(w.key) is w:
                del self._watches[w.key]

    def _registered(self, w: _Watch | None, ok: bool) -> None:
        """After a call: a fresh wrapper kazoo did not register is dropped."""
        if w is None:
            return
        if ok:
            w.registered = True
        elif not w.registered:
            self._forget(w)

    # --- operations ---------------------------------------------------------
    def _check_open(self) -> None:
        if self._closed:
            raise ConnectionClosedError("metadata store is closed")
        if self._client.state != KazooState.CONNECTED:
            raise ConnectionLoss(f"not connected to ZooKeeper ({self._client.state})")

    def _wait(self, result):
        """The result of a kazoo async call, waiting at most the op timeout."""
        try:
            return result.get(timeout=self._op_timeout_s)
        except KazooTimeoutError:
            raise ConnectionLoss(f"no answer from ZooKeeper within "
                                 f"{self._op_timeout_s:.1f} s") from None

    def create(self, path: str, data: bytes = b"", ephemeral: bool = False,
               sequence: bool = False, makepath: bool = False) -> str:
        self._check_open()
        validate_path(path, allow_trailing_slash=sequence)
        return self._wait(self._client.create_async(path, bytes(data or b""),
                                                    ephemeral=ephemeral, sequence=sequence,
                                                    makepath=makepath))

    def get(self, path: str, watch: WatchCallback | None = None) -> tuple[bytes, Stat]:
        self._check_open()
        validate_path(path)
        w = self._wrap(_DATA, path, watch)
        try:
            data, zstat = self._wait(self._client.get_async(path, watch=w))
        except BaseException:
            self._registered(w, False)
            raise
        self._registered(w, True)
        return (data or b""), Stat.from_znode_stat(zstat)

    def sync(self, path: str) -> None:
        self._check_open()
        validate_path(path)
        self._wait(self._client.sync_async(path))

    def get_many(self, paths: Sequence[str]) -> list:
        try:
            self._check_open()
        except Exception as err:            # noqa: BLE001 - every read fails alike
            return [err for _ in paths]
        for path in paths:
            validate_path(path)
        pending = [self._client.get_async(path) for path in paths]
        out: list = []
        for result in pending:
            try:
                data, zstat = self._wait(result)
                out.append(((data or b""), Stat.from_znode_stat(zstat)))
            except Exception as err:        # noqa: BLE001 - reported per path
                out.append(err)
        return out

    def set(self, path: str, data: bytes, version: int = -1) -> Stat:
        self._check_open()
        validate_path(path)
        return Stat.from_znode_stat(self._wait(self._client.set_async(path, bytes(data or b""),
                                                                      version)))

    def delete(self, path: str, version: int = -1, recursive: bool = False) -> None:
        self._check_open()
        validate_path(path)
        if recursive:
            # kazoo's recursive delete ignores the version and is silent on a
            # missing node; check both first (not atomic, like kazoo's own walk).
            zstat = self._client.exists(path)
            if zstat is None:
                raise NoNodeError(path)
            if version != -1 and zstat.version != version:
                raise BadVersionError(path)
        self._client.delete(path, version=version, recursive=recursive)

    def exists(self, path: str, watch: WatchCallback | None = None) -> Stat | None:
        self._check_open()
        validate_path(path)
        w = self._wrap(_DATA, path, watch)
        try:
            zstat = self._wait(self._client.exists_async(path, watch=w))
        except BaseException:
            self._registered(w, False)
            raise
        self._registered(w, True)
        return None if zstat is None else Stat.from_znode_stat(zstat)

    def get_children(self, path: str, watch: WatchCallback | None = None) -> list[str]:
        self._check_open()
        validate_path(path)
        w = self._wrap(_CHILD, path, watch)
        try:
            children = self._wait(self._client.get_children_async(path, watch=w))
        except BaseException:
            self._registered(w, False)
            raise
        self._registered(w, True)
        return sorted(children)

    def ensure_path(self, path: str) -> bool:
        self._check_open()
        validate_path(path)
        self._client.ensure_path(path)
        return True

    def multi(self, ops: Sequence[Op]) -> list:
        self._check_open()
        ops = list(ops)
        if not ops:
            return []
        t = self._client.transaction()
        for op in ops:
            if isinstance(op, CreateOp):
                validate_path(op.path, allow_trailing_slash=op.sequence)
                t.create(op.path, bytes(op.data or b""), ephemeral=op.ephemeral,
                         sequence=op.sequence)
            elif isinstance(op, SetDataOp):
                validate_path(op.path)
                t.set_data(op.path, bytes(op.data or b""), op.version)
            elif isinstance(op, DeleteOp):
                validate_path(op.path)
                t.delete(op.path, op.version)
            elif isinstance(op, CheckOp):
                validate_path(op.path)
                t.check(op.path, op.version)
            else:
                raise TypeError(f"not a multi operation: {op!r}")
        results = self._wait(t.commit_async())
        failed = [(i, r) for i, r in enumerate(results)
                  if isinstance(r, Exception) and not isinstance(r, RolledBackError)]
        if failed or any(isinstance(r, Exception) for r in results):
            i, exc = failed[0] if failed else next(
                (i, r) for i, r in enumerate(results) if isinstance(r, Exception))
            exc.op_index = i     # type: ignore[attr-defined]
            exc.op = ops[i]      # type: ignore[attr-defined]
            raise exc
        out: list = []
        for op, r in zip(ops, results):
            if isinstance(op, SetDataOp):
                out.append(Stat.from_znode_stat(r))
            elif isinstance(op, CreateOp):
                out.append(r)
            else:
                out.append(True)
        return out

    def close(self) -> None:
        if self._closed:
            return
        self._closed = True
        with self._watch_lock:
            self._watches.clear()
        try:
            self._client.stop()
        finally:
            self._client.close()
