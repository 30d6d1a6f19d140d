"""Kafka's ZkNodeChangeNotificationListener: follow one root of sequential change nodes.

Whoever changes something other brokers cache (a topic's configs, a user's credentials,
a resource's ACLs) writes it, then creates a persistent sequential child
``<root>/<prefix><10 digits>`` naming it.  A listener hands each child numbered above
the last one handled, in order and once, to ``handle(path, data)``; re-arms the children
watch on every pass; deletes the children older than 15 minutes (Kafka's
changeExpirationMs) on every pass; and runs a pass when the store opens a new session
(the old session's watches died with it).

Invariants: with an event loop, passes run on the loop (watch callbacks from the store's
thread only schedule one, at most one pending); the last number handled only grows; a
notification that cannot be read or handled is logged and skipped, never stopping the
others or the listener; a lost connection while listing retries the pass after a second.
"""
from __future__ import annotations

import asyncio
import time
from typing import Callable

import structlog
from kazoo.exceptions import ConnectionLoss, NoNodeError

_log = structlog.get_logger("kafkapy.change_notifications")
CHANGE_EXPIRATION_MS = 15 * 60 * 1000
_RETRY_S = 1.0


def _wall_ms() -> float:
    return time.time() * 1000


class ChangeNotificationListener:
    def __init__(self, store, root: str, prefix: str, handle: Callable[[str, bytes], None],
                 now_ms: Callable[[], float] = _wall_ms) -> None:
        self._store = store
        self._root = root
        self._prefix = prefix
        self._handle = handle
        self._now_ms = now_ms
        self.last_change = -1
        self._started = False
        self._scheduled = False
        self._loop: asyncio.AbstractEventLoop | None = None

    def start(self, skip_existing: bool = False) -> None:
        """Follow the root; ``skip_existing``: the notifications present now are taken as
        handled (the caller has just read everything they could name)."""
        if self._started:
            return
        self._started = True
        try:
            self._loop = asyncio.get_running_loop()
        except RuntimeError:
            self._loop = None
        if self._loop is not None:
            self._store.on_new_session(self._on_children)
        self._store.ensure_path(self._root)
        self.process_changes(skip=skip_existing)

    def stop(self) -> None:
        self._started = False

    def _on_children(self, _event=None) -> None:
        if not self._started or self._scheduled:
            return
        if self._loop is None or self._loop.is_closed():
            self.process_changes()
            return
        self._scheduled = True
        try:
            self._loop.call_soon_threadsafe(self._scheduled_pass)
        except RuntimeError:       # loop closed under us
            self._scheduled = False

    def _scheduled_pass(self) -> None:
        self._scheduled = False
        self.process_changes()

    def process_changes(self, skip: bool = False) -> None:
        """One pass of Kafka's processNotifications; re-arms the children watch."""
        if not self._started:
            return
        store = self._store
        try:
            try:
                children = store.get_children(self._root, watch=self._on_children)
            except NoNodeError:
                store.ensure_path(self._root)
                children = store.get_children(self._root, watch=self._on_children)
        except ConnectionLoss as err:
            # The store is away: try again shortly (the watch that brought us here fired).
            _log.warning("reading change notifications failed; retrying", root=self._root,
                         error=str(err))
            if self._loop is not None and not self._loop.is_closed():
                self._loop.call_later(_RETRY_S, self._on_children)
            return
        except Exception:
            _log.exception("reading change notifications failed", root=self._root)
            return
        numbered = sorted((n, child) for child in children
                          if (n := self._number(child)) is not None)
        for number, child in numbered:
            if number <= self.last_change:
                continue
            if not skip:
                self._process(f"{self._root}/{child}")
            self.last_change = number
        self._purge(children)

    def _number(self, child: str) -> int | None:
        if not child.startswith(self._prefix):
            return None
        try:
            return int(child[len(self._prefix):])
        except ValueError:
            return None

    def _process(self, path: str) -> None:
        try:
            data, _ = self._store.get(path)
        except NoNodeError:
            return              # purged by another broker: too old to matter
        try:
            self._handle(path, data)
        except Exception:
            _log.exception("handling a change notification failed", path=path)

    def _purge(self, children: list[str]) -> None:
        now = self._now_ms()
        for child in children:
            path = f"{self._root}/{child}"
            try:
                stat = self._store.exists(path)
                if stat is not None and now - stat.ctime > CHANGE_EXPIRATION_MS:
                    self._store.delete(path)
            except NoNodeError:
                pass            # another broker purged it first
            except Exception:
                _log.exception("purging a change notification failed", path=path)
