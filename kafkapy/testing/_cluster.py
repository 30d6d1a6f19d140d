"""Several real kafkapy brokers in one process and one event loop: ``cluster()``.

``async with cluster(brokers=3) as c`` starts brokers 1..N (``broker.id``) in the running loop,
each a ``_broker.BrokerHandle`` on its own 127.0.0.1 port and log dir under one temporary
directory (removed when the block ends).  ``with cluster(...) as c`` does the same on a
background ``LoopThread`` (``_sync``) and hands back blocking methods.

Metadata: without ``zookeeper`` the brokers share ONE in-process ``EmbeddedStore`` (a file in
the temporary directory, no fsyncs), each broker through a session of its own
(``EmbeddedStore.session()``), so broker registration (``/brokers/ids`` ephemerals), the
``/controller`` election and every controller path run as they do on ZooKeeper.  With
``zookeeper="host:port[/parent]"`` the brokers use that ZooKeeper under a fresh chroot
(``[/parent]/kafkapy-test-<random>``, deleted afterwards) - the same code as
``zookeeper.connect``.

The handle: ``bootstrap``, ``brokers`` (``BrokerHandle``s), ``controller``, ``broker(id)``,
``create_topic``, ``fail``, ``restart``, ``stop`` (clean), ``expire_session``,
``advance``, ``leader``/``isr`` (the controller's view), ``wait_ready``/``wait_leader``/
``wait_isr``, ``ready_ms`` (start-to-ready of the ``async with``, wall ms); faults
(``_faults``): ``partition``, ``isolate``, ``pause``/``resume``, ``heal``.

Faults: every broker is made with its ``_faults.BrokerLinks`` (the ``Links`` its inter-broker
connections ask) and, on the embedded store, its session behind a ``_faults.LinkedSession``;
``partition``/``isolate`` cut links, ``pause`` cuts all of a broker's links and pauses its
listeners, ``advance`` expires the sessions cut for their session timeout and runs no timer
of a paused broker.  A broker paused or cut from the store is left out of ``controller``,
``wait_ready`` and ``wait_leader`` (its view is stale).  Leaving the block heals first.

Start-up: the brokers start concurrently; each opens its listener just before it registers
(``_listen_before_registering``), so the controller's first requests to it connect at once.

Invariants
* ``async with`` returns once the cluster is ready: every broker is registered, a controller
  is elected, and every broker's metadata cache lists all N brokers and the same controller.
* ``fail(id)`` is a crash as the others see it: the listener and every client connection are
  closed first (no controlled shutdown, pending responses dropped), then the broker's
  metadata session ends (its ephemeral znodes go at once, as after a session expiry: the
  controller reacts), then everything else stops; the log dir is left without its
  clean-shutdown marker, so ``restart(id)`` (same port, same log dir) recovers the logs.
* Every wait is bounded (``timeout_ms``); a failure names what was not reached.
* With one ``MockClock`` (``clock=``) shared by all brokers, ``advance(ms)`` moves it once and
  runs what became due on every running broker.

Defaults for a cluster (settings given win): internal topics at replication factor
min(3, N) with ``transaction.state.log.min.isr`` and
``share.coordinator.state.topic.min.isr`` min(2, N); the rest are
``_broker._DEFAULTS``.
"""
from __future__ import annotations

import asyncio
import os
import shutil
import tempfile
import time
import uuid
from pathlib import Path
from typing import Any, Awaitable, Callable, Iterable, Mapping

import structlog
from kazoo.client import KazooClient

from kafkapy.clock import SYSTEM_CLOCK, Clock, MockClock
from kafkapy.log.manager import CLEAN_SHUTDOWN_FILE
from kafkapy.metadata.embedded import EmbeddedStore
from kafkapy.metadata.zk_store import ZooKeeperStore
from kafkapy.testing._broker import BrokerHandle, broker_settings, free_port, quiet_logging
from kafkapy.testing._faults import Faults, groups_of
from kafkapy.testing._sync import ThreadedContext

__all__ = ["ClusterHandle", "cluster"]

_log = structlog.get_logger("kafkapy.testing")

_READY_TIMEOUT_MS = 30_000
_POLL_S = 0.005


def _cluster_defaults(n: int) -> dict[str, str]:
    rf = str(min(3, n))
    return {
        "offsets.topic.replication.factor": rf,
        "transaction.state.log.replication.factor": rf,
        "transaction.state.log.min.isr": str(min(2, n)),
        "share.coordinator.state.topic.replication.factor": rf,
        "share.coordinator.state.topic.min.isr": str(min(2, n)),
    }


class ClusterHandle:
    """The running cluster as a test sees it (async methods; ``_sync`` makes them blocking)."""

    __kafkapy_handle__ = True

    def __init__(self, handles: list[BrokerHandle], clock: Clock | None,
                 zookeeper: str | None, faults: Faults) -> None:
        self._handles = handles
        self._faults = faults
        self.clock = clock if isinstance(clock, MockClock) else None
        self.zookeeper = zookeeper          # "host:port/chroot" when on a real ZooKeeper
        self.ready_ms: float | None = None  # start-to-ready of the last start, wall ms

    # -- views -----------------------------------------------------------------------------
    @property
    def brokers(self) -> list[BrokerHandle]:
        return list(self._handles)

    @property
    def bootstrap(self) -> str:
        """Every broker (running or not), comma-separated."""
        return ",".join(h.bootstrap for h in self._handles)

    @property
    def broker_ids(self) -> list[int]:
        return [h.broker_id for h in self._handles]

    async def broker(self, broker_id: int) -> BrokerHandle:
        """The handle of broker ``broker_id`` (async so that the sync form hands back a
        blocking handle too)."""
        return self._by_id(broker_id)

    def _by_id(self, broker_id: int) -> BrokerHandle:
        for h in self._handles:
            if h.broker_id == broker_id:
                return h
        raise KeyError(f"no broker {broker_id} in this cluster (ids {self.broker_ids})")

    @property
    def running(self) -> list[BrokerHandle]:
        return [h for h in self._handles if h.running]

    def _in_touch(self) -> list[BrokerHandle]:
        """Running brokers neither paused nor cut from the metadata store."""
        cut_off = self._faults.cut_off
        return [h for h in self.running if h.broker_id not in cut_off]

    @property
    def controller(self) -> BrokerHandle | None:
        """The broker whose controller is active, if any (one paused or cut from the
        metadata store may still believe it is: not counted)."""
        for h in self._in_touch():
            if h.server.controller is not None and h.server.controller.is_active:
                return h
        return None

    async def leader(self, topic: str, partition: int = 0) -> int:
        """The partition's leader as the controller's cache has it (-1: none)."""
        state = self._partition(topic, partition)
        return state.leader if state is not None else -1

    async def isr(self, topic: str, partition: int = 0) -> list[int]:
        """The partition's ISR as the controller's cache has it."""
        state = self._partition(topic, partition)
        return list(state.isr) if state is not None else []

    def _partition(self, topic: str, partition: int):
        h = self.controller or (self.running[0] if self.running else None)
        return h.server.cache.partition(topic, partition) if h is not None else None

    # -- helpers ---------------------------------------------------------------------------
    async def create_topic(self, name: str, partitions: int | None = None,
                           replication_factor: int | None = None,
                           configs: Mapping[str, Any] | None = None, timeout_ms: int = 30000,
                           **topic_configs: Any) -> None:
        """Create ``name`` on the controller (as CreateTopics does; replication factor
        min(3, running brokers) unless given) and wait until every partition has a leader
        in every running broker's cache."""
        deadline = _deadline(timeout_ms)
        await self.wait_ready(timeout_ms)
        ctl = self.controller
        if replication_factor is None:
            replication_factor = min(3, len(self.running))
        await ctl.create_topic(name, partitions, replication_factor, configs,
                               timeout_ms=_left_ms(deadline), **topic_configs)
        count = partitions if partitions is not None else ctl.server.config["num.partitions"]
        for h in self.running:
            late = await h.server.admin.wait_for_topics({name: count}, _left_ms(deadline))
            if late:
                raise TimeoutError(f"broker {h.broker_id} knows no leader for every partition "
                                   f"of {name} after {timeout_ms} ms")

    async def fail(self, broker_id: int) -> None:
        """Stop broker ``broker_id`` abruptly (see the module docstring)."""
        h = self._by_id(broker_id)
        server = h.server
        if server is None:
            raise RuntimeError(f"broker {broker_id} is not running")
        await _close_connections(server)
        if server.store is not None:
            server.store.close()        # the session ends: /brokers/ids/<id> (and /controller)
        self._faults.resume(broker_id)  # a process killed is no longer stopped
        await h.kill()
        for log_dir in server.config.log_dirs:
            try:
                os.unlink(Path(log_dir) / CLEAN_SHUTDOWN_FILE)    # as after a crash
            except FileNotFoundError:
                pass

    async def expire_session(self, broker_id: int, timeout_ms: int = _READY_TIMEOUT_MS) -> None:
        """Expire the broker's metadata session while it keeps running (a long GC pause
        as ZooKeeper sees it): its ephemeral znodes go, its pending watches get the lost-
        session event, then it gets a new session and registers again (a new broker
        epoch).  Returns once the cluster is ready again.  On ZooKeeper the session is
        expired the usual test way: a second client joins it (same id and password) and
        closes it."""
        store = self._by_id(broker_id)._running().store
        epoch = self._by_id(broker_id).server.broker_epoch
        if hasattr(store, "expire"):
            store.expire()
        else:
            hosts = self.zookeeper.partition("/")[0]
            await asyncio.get_running_loop().run_in_executor(
                None, _close_zookeeper_session, hosts, store.client.client_id)
        await _until(lambda: self._by_id(broker_id).server.broker_epoch > epoch, timeout_ms,
                     lambda: f"broker {broker_id} to register again")
        await self.wait_ready(timeout_ms)

    async def restart(self, broker_id: int, timeout_ms: int = _READY_TIMEOUT_MS) -> None:
        """Start broker ``broker_id`` again (same port, same log dir); returns once every
        running broker sees it and the controller again."""
        h = self._by_id(broker_id)
        if h.running:
            raise RuntimeError(f"broker {broker_id} is running")
        await h.start()
        self._map_ports()
        await self.wait_ready(timeout_ms)

    async def stop(self, broker_id: int) -> None:
        """Shut broker ``broker_id`` down cleanly (controlled shutdown when enabled; logs
        flushed, clean-shutdown marker written).  Without controlled shutdown its connections
        are closed first, as Kafka's shutdown drops in-flight requests (see ``_stop_all``)."""
        h = self._by_id(broker_id)
        if broker_id in self._faults.paused:
            await self.resume(broker_id)    # a stopped process is continued before SIGTERM
        if h.running and not h.server.config["controlled.shutdown.enable"]:
            await _close_connections(h.server)
        await h.stop()

    async def advance(self, ms: int) -> None:
        """Move the shared MockClock by ``ms`` once, expire the metadata sessions cut from
        the store for their session timeout by then, then run what became due on every
        running broker that is not paused."""
        if self.clock is None:
            raise RuntimeError("advance() needs cluster(clock=MockClock())")
        self.clock.advance(ms)
        self._faults.expire_due()
        paused = self._faults.paused
        for h in self.running:
            if h.broker_id not in paused:
                await h.run_due()

    # -- faults ------------------------------------------------------------------------------
    async def partition(self, *groups: int | Iterable[int]) -> None:
        """No broker of one group reaches a broker of another, both ways (``partition(1, 2)``,
        ``partition(1, [2, 3])``): inter-broker connections open stall (nothing sent nor
        received, no close), new ones do not connect.  Clients still reach every broker."""
        sets = groups_of(groups)
        for broker_id in set().union(*sets):
            self._by_id(broker_id)
        self._faults.cut(sets)

    async def isolate(self, broker_id: int, peers: bool = True, metadata: bool = True) -> None:
        """Cut ``broker_id`` from every other broker (``peers``) and/or from the metadata
        store (``metadata``: its calls fail with ConnectionLoss, its watches wait; the store
        expires its session once ``zookeeper.session.timeout.ms`` passed on the clock - with
        a MockClock, at the ``advance`` that passes it - and the broker learns of it at
        ``heal``; a broker restarted meanwhile cannot start, as without its ZooKeeper).
        Needs the embedded store for ``metadata``."""
        h = self._by_id(broker_id)
        if metadata and self.zookeeper is not None:
            raise RuntimeError("isolate(metadata=True) needs the in-process metadata store "
                               "(a ZooKeeper session cannot be cut from here)")
        if peers:
            self._faults.cut([{broker_id}, set(self.broker_ids) - {broker_id}])
        if metadata:
            self._faults.disconnect(broker_id)
            self._expire_later(h)

    async def pause(self, broker_id: int) -> None:
        """Stop broker ``broker_id`` as SIGSTOP would: its listeners accept, read and answer
        nothing (clients' bytes wait), its links to the other brokers and to the metadata
        store stall (its session expires after the session timeout, as in ``isolate``), and
        ``advance`` runs none of its timers, until ``resume`` or ``heal``.  Its own
        real-time loops (ISR expiration, log maintenance, a timer armed in real time) still
        run inside it, but nothing they do leaves it before ``resume``.  On a real
        ZooKeeper (``zookeeper=``) its session lives on: kazoo heartbeats from a thread."""
        server = self._by_id(broker_id)._running()
        self._faults.pause(broker_id)
        for listener in server.socket_servers:
            listener.pause()
        self._expire_later(self._by_id(broker_id))

    async def resume(self, broker_id: int) -> None:
        """Undo ``pause``: the broker runs its due timers, its held answers go out, and
        it reads what waited (SIGCONT)."""
        h = self._by_id(broker_id)
        self._faults.resume(broker_id)
        await self._unpause(h)

    async def heal(self) -> None:
        """Remove every fault: links, metadata sessions (a broker whose session expired
        meanwhile registers again) and pauses."""
        paused = self._faults.paused
        self._faults.heal()
        for h in self.running:
            if h.broker_id in paused:
                await self._unpause(h)

    async def _unpause(self, h: BrokerHandle) -> None:
        if h.running:
            for listener in h.server.socket_servers:
                listener.resume()
            await h.run_due()

    def _map_ports(self) -> None:
        """Every listener port of every running broker, for the links to tell brokers apart
        (an inter-broker listener of its own included)."""
        for h in self.running:
            self._faults.map_ports(h.broker_id, [s.port for s in h.server.socket_servers])

    def _expire_later(self, h: BrokerHandle) -> None:
        """Without a MockClock the session timeout passes in real time: check then."""
        if self.clock is None and h.running:
            timeout_s = h.server.config["zookeeper.session.timeout.ms"] / 1000
            asyncio.get_running_loop().call_later(timeout_s + 0.05, self._faults.expire_due)

    async def wait_ready(self, timeout_ms: int = _READY_TIMEOUT_MS) -> None:
        """Wait until a controller is elected and every running broker's cache lists every
        running broker and that controller (brokers paused or cut from the metadata store
        left out: the others see them gone once their session expired)."""
        expected = sorted(h.broker_id for h in self._in_touch())

        def ready() -> bool:
            ctl = self.controller
            if ctl is None:
                return False
            return all(h.server.cache is not None
                       and h.server.cache.live_broker_ids() == expected
                       and h.server.cache.controller_id == ctl.broker_id
                       for h in self._in_touch())
        await _until(ready, timeout_ms, lambda: f"cluster ready ({self._describe()})")

    async def wait_isr(self, topic: str, partition: int, isr: list[int] | None = None,
                       timeout_ms: int = _READY_TIMEOUT_MS) -> list[int]:
        """Wait until the partition's ISR (controller's cache) is ``isr`` (default: all of its
        replicas), in any order; returns it."""
        def done():
            state = self._partition(topic, partition) if self.controller else None
            if state is None:
                return None
            want = sorted(isr if isr is not None else state.replicas)
            return list(state.isr) if sorted(state.isr) == want else None

        def now() -> str:
            state = self._partition(topic, partition)
            return f"{topic}-{partition} ISR {isr or 'full'}, now {state.isr if state else None}"
        return await _until(done, timeout_ms, now)

    async def wait_leader(self, topic: str, partition: int = 0, *, other_than: int | None = None,
                          timeout_ms: int = _READY_TIMEOUT_MS) -> int:
        """Wait until the partition has a running leader (not ``other_than``) that every
        running broker's cache agrees on (brokers paused or cut from the metadata store
        left out); returns its id."""
        running = {h.broker_id for h in self._in_touch()}

        def done():
            leaders = {h.server.cache.partition(topic, partition).leader
                       if h.server.cache.partition(topic, partition) else -1
                       for h in self._in_touch()}
            if len(leaders) != 1:
                return None
            leader = leaders.pop()
            return leader if leader in running and leader != other_than else None
        return await _until(done, timeout_ms,
                            lambda: f"a leader of {topic}-{partition} other than {other_than}")

    def _describe(self) -> str:
        parts = []
        for h in self._handles:
            if not h.running:
                parts.append(f"{h.broker_id}: down")
                continue
            cache = h.server.cache
            parts.append(f"{h.broker_id}: live={cache.live_broker_ids() if cache else None} "
                         f"controller={cache.controller_id if cache else None}")
        return "; ".join(parts)

    def __repr__(self) -> str:
        return f"<kafkapy test cluster {self.bootstrap}>"


async def _until(condition: Callable[[], Any], timeout_ms: int, what: Callable[[], str]) -> Any:
    deadline = _deadline(timeout_ms)
    while True:
        value = condition()
        if value is not None and value is not False:
            return value
        if time.monotonic() >= deadline:
            raise TimeoutError(f"timed out after {timeout_ms} ms waiting for {what()}")
        await asyncio.sleep(_POLL_S)


def _deadline(timeout_ms: int) -> float:
    return time.monotonic() + timeout_ms / 1000


def _left_ms(deadline: float) -> int:
    return max(1, int((deadline - time.monotonic()) * 1000))


def _close_zookeeper_session(hosts: str, client_id: tuple) -> None:
    """Join the session ``client_id`` (id, password) and close it: ZooKeeper ends it, and
    its owner's client sees it expired."""
    twin = KazooClient(hosts=hosts, client_id=client_id, timeout=10.0)
    try:
        twin.start(timeout=10.0)
    finally:
        twin.stop()
        twin.close()


class _ZooKeeperChroot:
    """A fresh chroot on a real ZooKeeper; removed (recursively) by ``drop``."""

    def __init__(self, connect: str) -> None:
        # A chroot in the connect string is kept as the parent of ours.
        self.hosts, _, parent = connect.partition("/")
        parent = "/" + parent.strip("/") if parent.strip("/") else ""
        self.chroot = f"{parent}/kafkapy-test-{uuid.uuid4().hex[:12]}"

    @property
    def connect(self) -> str:
        return self.hosts + self.chroot

    def store_factory(self, server) -> Any:
        c = server.config
        return ZooKeeperStore(self.connect, c["zookeeper.session.timeout.ms"],
                              c["zookeeper.connection.timeout.ms"])

    def drop(self) -> None:
        client = KazooClient(hosts=self.hosts, timeout=5.0)
        try:
            client.start(timeout=5.0)
            client.delete(self.chroot, recursive=True)
        except Exception:  # noqa: BLE001 - best effort: a stale chroot only takes space
            _log.debug("dropping the test chroot failed", chroot=self.chroot, exc_info=True)
        finally:
            client.stop()
            client.close()


class _ClusterContext:
    """What ``cluster()`` returns: ``async with`` (this loop) or ``with`` (a thread)."""

    def __init__(self, brokers: int, zookeeper: str | None, clock: Clock | None,
                 settings: Mapping[str, Any] | None, quiet: bool, base_dir: str | Path | None,
                 timeout_ms: int, keywords: Mapping[str, Any]) -> None:
        if brokers < 1:
            raise ValueError("a cluster needs at least one broker")
        self._n = brokers
        self._zookeeper = zookeeper
        self._clock = clock
        self._settings = {**_cluster_defaults(brokers), **broker_settings(keywords, settings)}
        self._quiet = quiet
        self._base_dir = Path(base_dir) if base_dir is not None else None
        self._timeout_ms = timeout_ms
        self._tmp: str | None = None
        self._store = None
        self._chroot: _ZooKeeperChroot | None = None
        self._handle: ClusterHandle | None = None
        self._faults: Faults | None = None
        self._threaded = None

    # -- async form --------------------------------------------------------------------------
    async def __aenter__(self) -> ClusterHandle:
        if self._quiet:
            quiet_logging()
        started = time.perf_counter()
        try:
            handle = self._handle = self._make_handles()
            await _gather_or_cancel([h.start() for h in handle.brokers])
            handle._map_ports()
            await handle.wait_ready(self._timeout_ms)
        except BaseException:
            await self._teardown()
            raise
        handle.ready_ms = (time.perf_counter() - started) * 1000
        return handle

    async def __aexit__(self, exc_type, exc, tb) -> bool:
        await self._teardown()
        return False

    def _make_handles(self) -> ClusterHandle:
        if self._base_dir is not None:
            base = self._base_dir
        else:
            self._tmp = tempfile.mkdtemp(prefix="kafkapy-cluster-")
            base = Path(self._tmp)
        base.mkdir(parents=True, exist_ok=True)
        self._faults = Faults(self._clock or SYSTEM_CLOCK)
        store_factory = self._store_factory(base)
        handles = []
        for broker_id in range(1, self._n + 1):
            settings = {**self._settings, "broker.id": str(broker_id)}
            handles.append(BrokerHandle(settings, base / f"broker-{broker_id}", clock=self._clock,
                                        port=free_port(), store_factory=store_factory,
                                        links=self._faults.links(broker_id)))
        return ClusterHandle(handles, self._clock,
                             self._chroot.connect if self._chroot is not None else None,
                             self._faults)

    def _store_factory(self, base: Path) -> Callable[[Any], Any]:
        if self._zookeeper:
            self._chroot = _ZooKeeperChroot(self._zookeeper)
            open_store = self._chroot.store_factory
        else:
            kwargs = {"clock": self._clock} if self._clock is not None else {}
            self._store = EmbeddedStore(base / "kafkapy-metadata.json", fsync=False, **kwargs)
            open_store = lambda server: self._faults.session(   # noqa: E731
                server.node_id, self._store.session(),
                server.config["zookeeper.session.timeout.ms"])

        def factory(server) -> Any:
            _listen_before_registering(server)
            return open_store(server)
        return factory

    async def _teardown(self) -> None:
        """Stop every running broker (controller last: fewer elections), then the store and
        the temporary directory; errors of one step do not skip the next."""
        handle, self._handle = self._handle, None
        try:
            if handle is not None:
                await handle.heal()
                await _stop_all(handle)
        finally:
            store, self._store = self._store, None
            if store is not None:
                store.close()
            chroot, self._chroot = self._chroot, None
            if chroot is not None:
                await asyncio.get_running_loop().run_in_executor(None, chroot.drop)
            tmp, self._tmp = self._tmp, None
            if tmp is not None:
                shutil.rmtree(tmp, ignore_errors=True)

    # -- sync form ---------------------------------------------------------------------------
    def __enter__(self) -> Any:
        self._threaded = ThreadedContext(self, name="kafkapy-test-cluster")
        return self._threaded.__enter__()

    def __exit__(self, exc_type, exc, tb) -> bool:
        threaded, self._threaded = self._threaded, None
        return threaded.__exit__(exc_type, exc, tb)


def _listen_before_registering(server) -> None:
    """Open ``server``'s listeners just before it registers in ``/brokers/ids`` instead of
    at the end of its start-up (Kafka's order: its SocketServer binds before
    registerBroker).  Otherwise the controller, which connects as soon as it sees the
    registration, meets a closed port and retries only after its 100 ms reconnect back-off:
    a 3-broker cluster would be ready in ~115 ms instead of ~20 ms.  Nothing can reach the
    broker earlier than that anyway (its address is in the registration).  The broker's
    own ``_listen`` later (and a re-registration after a session expiry) find it done."""
    register, listen = server._register_broker, server._listen
    listening = False

    async def listen_once() -> None:
        nonlocal listening
        if not listening:
            await listen()
            listening = True

    async def register_listening() -> None:
        await listen_once()
        await register()
    server._listen = listen_once
    server._register_broker = register_listening


async def _close_connections(server) -> None:
    """Stop accepting and close every connection of ``server``'s listeners now."""
    for listener in server.socket_servers:
        await listener.stop_accepting()
        await listener.drain_and_close(timeout_s=0)


async def _stop_all(handle: ClusterHandle) -> None:
    """Stop the brokers one by one, the controller last; after each, let the controller
    take the broker out (bounded), so it never waits at its own shutdown for answers from
    a broker that is gone.

    Without controlled shutdown a broker's connections are closed before its shutdown: the
    shutdown otherwise waits (10 s) for in-flight requests, and a follower on another broker
    always has a Fetch in flight to its leader (one that never ends on a MockClock)."""
    ctl = handle.controller
    others = [h for h in handle.running if h is not ctl]
    for h in others + ([ctl] if ctl is not None else []):
        try:
            if not h.server.config["controlled.shutdown.enable"]:
                await _close_connections(h.server)
            await h.stop()
        except Exception:  # noqa: BLE001 - the rest must still stop
            _log.warning("stopping a test broker failed", broker=h.broker_id, exc_info=True)
        if ctl is not None and ctl.running and h is not ctl:
            try:
                await _until(lambda: h.broker_id not in ctl.server.cache.live_broker_ids(),
                             5000, lambda: f"the controller to drop broker {h.broker_id}")
            except TimeoutError:
                _log.warning("controller still lists a stopped test broker",
                             broker=h.broker_id)


async def _gather_or_cancel(coros: list[Awaitable]) -> None:
    """Run ``coros`` concurrently; on the first failure cancel the rest, then raise it."""
    tasks = [asyncio.ensure_future(c) for c in coros]
    try:
        await asyncio.gather(*tasks)
    except BaseException:
        for t in tasks:
            t.cancel()
        await asyncio.gather(*tasks, return_exceptions=True)
        raise


def cluster(brokers: int = 3, zookeeper: str | None = None, *, clock: Clock | None = None,
            settings: Mapping[str, Any] | None = None, quiet: bool = True,
            base_dir: str | Path | None = None, timeout_ms: int = _READY_TIMEOUT_MS,
            **keywords: Any) -> _ClusterContext:
    """``brokers`` real brokers (ids 1..N) in this process: ``async with cluster() as c`` or
    ``with cluster() as c``.

    ``zookeeper``: ``host:port`` of a real ZooKeeper (a fresh chroot is used), else one
    shared embedded store; ``clock``: one ``MockClock`` for every broker (``c.advance``);
    ``settings``: broker settings as spelled in server.properties; ``base_dir``: keep the
    log dirs there (not removed); ``quiet``: structlog at WARNING unless configured;
    ``timeout_ms``: how long start-up may take; any other keyword is a broker setting
    with ``_`` for ``.``."""
    return _ClusterContext(brokers, zookeeper, clock, settings, quiet, base_dir, timeout_ms,
                           keywords)
