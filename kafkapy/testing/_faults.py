"""Faults between the brokers of one ``cluster()``: partitions, isolation, pauses.

``Faults`` holds what is cut now, for the whole cluster:
* pairs of brokers that cannot reach each other (``cut``/``partition``), and brokers paused;
  each broker's ``BrokerLinks`` (the ``kafkapy.network.links.Links`` its ``Broker`` hands
  to every inter-broker connection) answers from it, so a cut link stalls as a network
  partition does (no clean close: connections made wait, open ones neither send nor
  receive) until ``heal``;
* brokers cut from the metadata store: their session (``LinkedSession``, wrapping the
  broker's ``EmbeddedSession``) raises kazoo's ``ConnectionLoss`` for every call, delivers
  no watch event (they wait, in order, until the link is back), and once the session
  timeout (``zookeeper.session.timeout.ms``) has passed on the cluster's clock since the cut,
  the store expires it: its ephemeral znodes go at once (the controller sees the broker
  leave), while the broker learns of the expiry - its watches' lost-session event, then its
  new session - only when the link is back, as a ZooKeeper client does on reconnecting.

Clients are never cut: only inter-broker connections ask the links.  Broker ids are mapped
from the port of their listeners (``map_ports``).

Invariants: a pair is cut in both directions or not at all; ``heal`` leaves nothing cut
and wakes every connection waiting on a link; all state changes on the event loop.
"""
from __future__ import annotations

import asyncio
import logging
from typing import Any, Callable, Iterable, Sequence

from kazoo.exceptions import ConnectionLoss

from kafkapy.clock import Clock
from kafkapy.metadata.embedded import EmbeddedSession
from kafkapy.metadata.store import MetadataStore, Op, Stat, WatchCallback, WatchedEvent

__all__ = ["BrokerLinks", "Faults", "LinkedSession", "groups_of"]


def groups_of(groups: Sequence[int | Iterable[int]]) -> list[set[int]]:
    """``partition(1, [2, 3])``'s arguments as sets of broker ids."""
    return [{g} if isinstance(g, int) else set(g) for g in groups]


class Faults:
    """What is cut in one cluster now (see the module docstring)."""

    def __init__(self, clock: Clock) -> None:
        self._clock = clock
        self._ports: dict[int, int] = {}           # listener port -> broker id
        self._cut: set[frozenset[int]] = set()
        self._paused: set[int] = set()
        self._store_cut: set[int] = set()          # cut from the metadata store
        self._sessions: dict[int, LinkedSession] = {}
        self._changed = asyncio.Event()

    # -- the links ---------------------------------------------------------------------
    def map_ports(self, broker_id: int, ports) -> None:
        """``ports`` (its listeners') reach broker ``broker_id``."""
        for port in ports:
            self._ports[port] = broker_id

    def links(self, broker_id: int) -> "BrokerLinks":
        return BrokerLinks(self, broker_id)

    def reachable(self, source: int, port: int) -> bool:
        target = self._ports.get(port)
        if target is None or target == source:
            return True
        if source in self._paused or target in self._paused:
            return False
        return frozenset((source, target)) not in self._cut

    async def wait_changed(self) -> None:
        """Return at the next change that may have restored a link."""
        await self._changed.wait()

    def _restored(self) -> None:
        self._changed.set()
        self._changed = asyncio.Event()

    # -- cutting -----------------------------------------------------------------------
    def cut(self, groups: list[set[int]]) -> None:
        """No broker of one group reaches a broker of another, both ways."""
        for i, group in enumerate(groups):
            for other in groups[i + 1:]:
                self._cut.update(frozenset((a, b)) for a in group for b in other if a != b)

    def pause(self, broker_id: int) -> None:
        """Nothing reaches ``broker_id`` nor leaves it, its metadata session included."""
        self._paused.add(broker_id)
        session = self._sessions.get(broker_id)
        if session is not None:
            session.disconnect()

    def resume(self, broker_id: int) -> None:
        self._paused.discard(broker_id)
        session = self._sessions.get(broker_id)
        if session is not None and broker_id not in self._store_cut:
            session.reconnect()
        self._restored()

    def heal(self) -> None:
        self._cut.clear()
        self._paused.clear()
        self._store_cut.clear()
        for session in self._sessions.values():
            session.reconnect()
        self._restored()

    @property
    def paused(self) -> set[int]:
        return set(self._paused)

    @property
    def cut_off(self) -> set[int]:
        """Brokers whose view of the metadata is not current: paused or cut from the store."""
        return self._paused | self._store_cut

    # -- the metadata sessions -------------------------------------------------------------
    def session(self, broker_id: int, inner: EmbeddedSession, timeout_ms: int) -> "LinkedSession":
        """``inner`` as broker ``broker_id`` sees it through its link to the store."""
        session = LinkedSession(inner, self._clock, timeout_ms)
        self._sessions[broker_id] = session
        if broker_id in self._store_cut or broker_id in self._paused:
            session.disconnect()        # a restarted broker stays cut
        return session

    def disconnect(self, broker_id: int) -> None:
        """Cut ``broker_id`` from the metadata store."""
        session = self._session_of(broker_id)
        self._store_cut.add(broker_id)
        session.disconnect()

    def expire_due(self) -> None:
        """Expire every session cut from the store for its session timeout by now."""
        for session in list(self._sessions.values()):
            session.expire_if_due()

    def _session_of(self, broker_id: int) -> "LinkedSession":
        session = self._sessions.get(broker_id)
        if session is None:
            raise RuntimeError(f"broker {broker_id} has no session on the embedded store "
                               "(cutting a ZooKeeper session is not supported)")
        return session


class BrokerLinks:
    """``kafkapy.network.links.Links`` of one broker, answered by its cluster's ``Faults``."""

    def __init__(self, faults: Faults, broker_id: int) -> None:
        self._faults = faults
        self._id = broker_id

    def reachable(self, host: str, port: int) -> bool:
        return self._faults.reachable(self._id, port)

    async def wait_reachable(self, host: str, port: int) -> None:
        while not self._faults.reachable(self._id, port):
            await self._faults.wait_changed()


class LinkedSession(MetadataStore):
    """An ``EmbeddedSession`` behind a link that can be cut (see the module docstring)."""

    def __init__(self, inner: EmbeddedSession, clock: Clock, timeout_ms: int) -> None:
        self._inner = inner
        self._clock = clock
        self._timeout_ms = timeout_ms
        self._cut_at: int | None = None     # clock ms of the cut, None while connected
        self._expired = False               # expired during this cut
        self._held: list[tuple[Callable, Any]] = []
        self._wrapped: dict[Callable, Callable] = {}
        self._new_session: list[Callable[[], None]] = []
        inner.on_new_session(lambda: self._arrive(self._renewed, None))

    bounded_multi = False

    # -- the link ----------------------------------------------------------------------------
    def disconnect(self) -> None:
        if self._cut_at is None:
            self._cut_at = self._clock.time_ms()
            self._expired = False

    def reconnect(self) -> None:
        """The link is back: what arrived meanwhile is delivered, in order."""
        if self._cut_at is None:
            return
        self._cut_at = None
        held, self._held = self._held, []
        for callback, arg in held:
            _run(callback, arg)

    def expire_if_due(self) -> None:
        if (self._cut_at is not None and not self._expired and not self._inner.closed
                and self._clock.time_ms() - self._cut_at >= self._timeout_ms):
            self._expired = True
            self._inner.expire()

    def _arrive(self, callback: Callable, arg: Any) -> None:
        if self._cut_at is None:
            _run(callback, arg)
        else:
            self._held.append((callback, arg))

    def _watch(self, cb: WatchCallback | None) -> WatchCallback | None:
        """The callback the store gets for ``cb``: the same one each time (the store keeps
        one watch per session and callable).  Kept for the session's life: the broker's
        watch callables are few and stable (one per kind and path)."""
        if cb is None:
            return None
        wrapped = self._wrapped.get(cb)
        if wrapped is None:
            def wrapped(event: WatchedEvent, cb=cb) -> None:
                self._arrive(cb, event)
            self._wrapped[cb] = wrapped
        return wrapped

    def _renewed(self, _arg: None) -> None:
        for callback in list(self._new_session):
            callback()

    def _check(self) -> None:
        if self._cut_at is not None:
            raise ConnectionLoss("the metadata store is unreachable (cut by the test)")

    # -- MetadataStore -----------------------------------------------------------------------
    @property
    def session_id(self) -> int:
        return self._inner.session_id

    @property
    def closed(self) -> bool:
        return self._inner.closed

    def on_new_session(self, callback: Callable[[], None]) -> None:
        self._new_session.append(callback)

    def get(self, path: str, watch: WatchCallback | None = None) -> tuple[bytes, Stat]:
        self._check()
        return self._inner.get(path, self._watch(watch))

    def exists(self, path: str, watch: WatchCallback | None = None) -> Stat | None:
        self._check()
        return self._inner.exists(path, self._watch(watch))

    def get_children(self, path: str, watch: WatchCallback | None = None) -> list[str]:
        self._check()
        return self._inner.get_children(path, self._watch(watch))

    def create(self, path: str, data: bytes = b"", ephemeral: bool = False,
               sequence: bool = False, makepath: bool = False) -> str:
        self._check()
        return self._inner.create(path, data, ephemeral, sequence, makepath)

    def set(self, path: str, data: bytes, version: int = -1) -> Stat:
        self._check()
        return self._inner.set(path, data, version)

    def delete(self, path: str, version: int = -1, recursive: bool = False) -> None:
        self._check()
        self._inner.delete(path, version, recursive)

    def ensure_path(self, path: str) -> bool:
        self._check()
        return self._inner.ensure_path(path)

    def multi(self, ops: Sequence[Op]) -> list:
        self._check()
        return self._inner.multi(ops)

    def expire(self) -> None:
        """The store expires the session now (``cluster().expire_session``)."""
        self._inner.expire()

    def close(self) -> None:
        self._cut_at = None
        self._held = []
        self._inner.close()


def _run(callback: Callable, arg: Any) -> None:
    try:
        callback(arg)
    except Exception:  # noqa: BLE001 - as the store runs watches: one failing is logged
        logging.getLogger("kafkapy.testing").exception("metadata callback failed")
