"""One real kafkapy broker inside the test process: ``broker()``.

``async with broker(**settings) as b`` starts a ``kafkapy.server.Broker`` in the running event
loop; ``with broker(**settings) as b`` does the same on a background ``LoopThread``
(``_sync``) and hands back blocking methods.  The broker listens on 127.0.0.1 on a free port,
keeps its logs and its embedded metadata store in a temporary directory that is removed when
the block ends (also after a failure), and logs only warnings unless structlog was configured
by the caller.

Settings: keywords with ``_`` for ``.`` (``num_partitions=3`` -> ``num.partitions``), values
rendered as Kafka's properties (booleans ``true``/``false``, lists comma-joined); ``settings=``
for keys spelled otherwise.  Test-friendly defaults below (``_DEFAULTS``) apply unless given.

Clock: ``clock=MockClock()`` runs every deadline of the broker on that clock (purgatory, group
and transaction coordinators share the broker's timing wheel; log retention, checkpoints and
producer expiry read it too); ``await b.advance(ms)`` moves it and runs what became due.

The broker's own modules (``kafkapy.server``, the configuration, the metadata store, the
records reader) and structlog are imported inside the functions that use them: this
module comes with ``kafkapy.testing``, which the pytest plugin imports in every session.
"""
from __future__ import annotations

import asyncio
import logging
import os
import shutil
import socket
import tempfile
import warnings
from pathlib import Path
from typing import Any, Callable, Mapping

from kafkapy.clock import SYSTEM_CLOCK, Clock
from kafkapy.clock import MockClock as _BaseMockClock
from kafkapy.testing._sync import ThreadedContext

_DEFAULTS = {
    "broker.id": "0",
    "num.partitions": "1",
    "offsets.topic.replication.factor": "1",
    # Few internal partitions: the first group or transaction creates them on demand.
    "offsets.topic.num.partitions": "5",
    "transaction.state.log.num.partitions": "5",
    "transaction.state.log.replication.factor": "1",
    "transaction.state.log.min.isr": "1",
    "share.coordinator.state.topic.num.partitions": "5",
    "share.coordinator.state.topic.replication.factor": "1",
    "share.coordinator.state.topic.min.isr": "1",
    "group.initial.rebalance.delay.ms": "0",
    # Retention is checked on every advance() (and each second), not every 5 minutes.
    "log.retention.check.interval.ms": "1000",
    # A single test broker has nobody to hand leadership to.
    "controlled.shutdown.enable": "false",
}
_BIND_ATTEMPTS = 5


class MockClock(_BaseMockClock):
    """``kafkapy.clock.MockClock`` starting at the real wall time (so timestamps that clients
    put on records compare sensibly with the broker's now), moved only by ``advance``."""

    def __init__(self, start_ms: int | None = None) -> None:
        if start_ms is None:
            start_ms = Clock().time_ms()
        super().__init__(start_ms)


def property_value(value: Any) -> str:
    """A Python value as a Kafka properties string."""
    if isinstance(value, bool):
        return "true" if value else "false"
    if isinstance(value, (list, tuple, set)):
        return ",".join(property_value(v) for v in value)
    return str(value)


def broker_settings(keywords: Mapping[str, Any], settings: Mapping[str, Any] | None) -> dict:
    """Keywords (``_`` -> ``.``) then ``settings`` (as spelled), rendered as strings."""
    out = {key.replace("_", "."): property_value(v) for key, v in keywords.items()}
    out.update({key: property_value(v) for key, v in (settings or {}).items()})
    return out


# Ports free_port has handed out in this process. The kernel may give the
# same port to two binds in a row once the first socket closes, so callers that
# take several ports before binding any would otherwise get duplicates.
_handed_out: set[int] = set()
_HANDED_OUT_LIMIT = 10_000      # well under Linux's ~28,000 ephemeral ports

# Parallel test processes (pytest-xdist workers) each take ports from a range of their own,
# below Linux's ephemeral range (32768 and up), so no worker can draw a port another worker
# was handed, nor one the kernel gives an outgoing connection.
_WORKER_PORTS_FROM = 20_000
_WORKER_PORTS_EACH = 1_500
_WORKER_SLOTS = 8
_next_in_range = 0


def _own_range() -> range | None:
    """``KAFKAPY_TEST_PORTS=lo-hi``, else the range of this pytest-xdist worker, else None."""
    spec = os.environ.get("KAFKAPY_TEST_PORTS")
    if spec:
        low, high = (int(part) for part in spec.split("-", 1))
        return range(low, high + 1)
    worker = os.environ.get("PYTEST_XDIST_WORKER", "")
    if worker.startswith("gw") and worker[2:].isdigit():
        low = _WORKER_PORTS_FROM + (int(worker[2:]) % _WORKER_SLOTS) * _WORKER_PORTS_EACH
        return range(low, low + _WORKER_PORTS_EACH)
    return None


def _bindable(port: int) -> bool:
    with socket.socket() as s:
        try:
            s.bind(("127.0.0.1", port))
        except OSError:
            return False
    return True


def _from_range(ports: range) -> int:
    """The next bindable port of ``ports`` after the last one handed out, wrapping around."""
    global _next_in_range
    for _ in range(len(ports)):
        port = ports[_next_in_range % len(ports)]
        _next_in_range += 1
        if _bindable(port):
            return port
    raise OSError(f"no free loopback port in {ports.start}-{ports.stop - 1}")


def free_port() -> int:
    """A loopback port nothing listens on, never one this process got before (in a range of
    its own, cycled through, when one is set: see ``_own_range``)."""
    ports = _own_range()
    if ports is not None:
        return _from_range(ports)
    if len(_handed_out) >= _HANDED_OUT_LIMIT:
        _handed_out.clear()
    while True:
        with socket.socket() as s:
            s.bind(("127.0.0.1", 0))
            port = s.getsockname()[1]
        if port not in _handed_out:
            _handed_out.add(port)
            return port


def quiet_logging() -> None:
    """structlog at WARNING unless the test process configured structlog itself."""
    import structlog
    if not structlog.is_configured():
        structlog.configure(wrapper_class=structlog.make_filtering_bound_logger(logging.WARNING))


class BrokerHandle:
    """The running broker as a test sees it (async methods; see ``_sync`` for blocking ones).

    ``start()``/``stop()`` are separate so that ``cluster()`` can fail and restart a broker
    on the same log dir and port; ``store_factory(broker)`` (a cluster's shared store) replaces
    the embedded store in the log dir; ``links`` (a cluster's ``_faults.BrokerLinks``) is the
    broker's ``kafkapy.network.links.Links``."""

    __kafkapy_handle__ = True

    def __init__(self, settings: Mapping[str, str], log_dir: str | Path, *,
                 clock: Clock | None = None, port: int | None = None,
                 store_factory: Callable[[Any], Any] | None = None,
                 links: Any = None) -> None:
        self.settings = {**_DEFAULTS, **settings}
        self._links = links
        self.log_dir = Path(log_dir)
        self.clock = clock if isinstance(clock, _BaseMockClock) else None
        self._clock = clock
        self.port = port or 0
        self._fixed_port = port is not None or "listeners" in settings
        self._store_factory = store_factory
        self.server = None        # the kafkapy.server.Broker while running

    # -- identity -----------------------------------------------------------------------
    @property
    def broker_id(self) -> int:
        if self.server is not None:
            return self.server.node_id
        return int(self.settings.get("broker.id", self.settings.get("node.id", 0)))

    @property
    def host(self) -> str:
        return "127.0.0.1"

    @property
    def bootstrap(self) -> str:
        return f"{self.host}:{self.port}"

    @property
    def running(self) -> bool:
        return self.server is not None

    # -- life cycle -----------------------------------------------------------------------
    async def start(self) -> "BrokerHandle":
        """Start the broker; returns once the port accepts and it answers requests."""
        from kafkapy.server import StartupError
        attempts = 1 if self._fixed_port else _BIND_ATTEMPTS
        for attempt in range(attempts):
            if not self._fixed_port:
                self.port = free_port()
            try:
                await self._start_once()
                return self
            except StartupError as err:
                # Another process took the free port between the probe and the bind: retry.
                if "failed to bind" not in str(err) or attempt == attempts - 1:
                    raise
        raise AssertionError("unreachable")

    async def _start_once(self) -> None:
        from kafkapy.config.broker import BrokerConfig
        self.log_dir.mkdir(parents=True, exist_ok=True)
        props = dict(self.settings)
        listener = f"PLAINTEXT://127.0.0.1:{self.port}"
        props.setdefault("log.dirs", str(self.log_dir))
        if "listeners" not in self.settings:
            props["listeners"] = listener
            props.setdefault("advertised.listeners", listener)
        config = BrokerConfig.from_properties(props)
        _warn_unknown(config)
        server = _test_broker_class()(config, self._clock or _system_clock(),
                                      self._store_factory, self._links)
        try:
            await server.start()
        except BaseException:
            await _close_quietly(server)
            raise
        self.server = server
        self.port = server.socket_server.port

    async def stop(self) -> None:
        """Shut the broker down cleanly (idempotent)."""
        server, self.server = self.server, None
        if server is not None:
            server.request_stop()
            await server.shutdown()

    async def kill(self) -> None:
        """Stop abruptly: no controlled shutdown, logs closed without the clean marker's
        guarantees being relied upon (used by ``cluster().fail``)."""
        server, self.server = self.server, None
        if server is not None:
            await _close_quietly(server)

    # -- helpers ---------------------------------------------------------------------------
    async def create_topic(self, name: str, partitions: int | None = None,
                           replication_factor: int = 1, configs: Mapping[str, Any] | None = None,
                           timeout_ms: int = 30000, **topic_configs: Any) -> None:
        """Create ``name`` through the broker's admin path (as CreateTopics does) and wait
        until every partition has a leader.  Topic configs as ``configs=`` or keywords
        (``**{"cleanup.policy": "compact"}``, or ``cleanup_policy="compact"``)."""
        server = self._running()
        if partitions is None:
            partitions = server.config["num.partitions"]
        merged = broker_settings(topic_configs, configs)
        server.admin.create_topic(name, partitions, replication_factor, configs=merged)
        late = await server.admin.wait_for_topics({name: partitions}, timeout_ms)
        if late:
            raise TimeoutError(f"topic {name} has no leader for every partition "
                               f"after {timeout_ms} ms")

    async def records(self, topic: str, partition: int = 0):
        """Every record of the partition up to its high watermark, read from the log."""
        from kafkapy.testing._records import read_records
        log = self._running().log_manager.get_log(topic, partition)
        if log is None:
            raise KeyError(f"{topic}-{partition} is not hosted by broker {self.broker_id}")
        return read_records(log)

    async def advance(self, ms: int) -> None:
        """Move the MockClock by ``ms`` and run whatever became due."""
        if self.clock is None:
            raise RuntimeError("advance() needs broker(clock=MockClock())")
        self.clock.advance(ms)
        await self.run_due()

    async def run_due(self) -> None:
        """Run what is due at the clock's now: timing-wheel tasks (delayed produce/fetch,
        group session/rebalance/join deadlines, transaction timeouts and expiry), then log
        maintenance (flushes, checkpoints, retention, producer-id expiry), then the log
        cleaner while it finds logs to compact (min.compaction.lag.ms, delete.retention.ms
        and max.compaction.lag.ms read the clock).  ISR shrinking keeps its real-time
        cadence (it reads the clock too)."""
        server = self.server
        if server is None:
            return
        server.timer.advance_clock()
        await _settle()
        await server._log_maintenance()
        await _settle()
        await _clean_logs(server.log_cleaner)
        await _settle()

    def _running(self):
        if self.server is None:
            raise RuntimeError(f"broker {self.broker_id} is not running")
        return self.server

    def __repr__(self) -> str:
        state = "running" if self.server is not None else "stopped"
        return f"<kafkapy test broker {self.broker_id} {self.bootstrap} {state}>"


def _warn_unknown(config) -> None:
    """A misspelt keyword (``num_partition=3``) would otherwise be silently ignored."""
    from kafkapy.config.definitions import BROKER_DYNAMIC_ONLY_CONFIGS
    unknown = [k for k in config.unknown_keys if k not in BROKER_DYNAMIC_ONLY_CONFIGS]
    if unknown:
        warnings.warn(f"kafkapy.testing: unknown broker setting(s) {', '.join(sorted(unknown))} "
                      "(keywords take _ for .)", UserWarning, stacklevel=2)


async def _settle(rounds: int = 5) -> None:
    """Let callbacks scheduled by what just ran (call_soon, tasks) take their turn."""
    for _ in range(rounds):
        await asyncio.sleep(0)


async def _clean_logs(cleaner, max_rounds: int = 50) -> None:
    """Compact what is cleanable now instead of at the cleaner's next real-time wake-up
    (log.cleaner.backoff.ms).  Concurrent with its own task: both take logs through
    ``grab_filthiest``, which skips logs being cleaned."""
    if cleaner is None or getattr(cleaner, "_executor", None) is None:
        return                          # log.cleaner.enable=false
    loop = asyncio.get_running_loop()
    for _ in range(max_rounds):
        if not await cleaner._clean_one(loop):
            return


async def _close_quietly(server) -> None:
    try:
        await server.shutdown(after_failed_start=True)
    except Exception:
        logging.getLogger("kafkapy.testing").debug("cleanup failed", exc_info=True)


def _system_clock() -> Clock:
    return SYSTEM_CLOCK


_BROKER_CLASS = None


def _test_broker_class():
    """``kafkapy.server.Broker`` with its metadata store supplied by the test harness:
    the embedded store without fsyncs (a temp dir need not survive power loss), or a
    cluster's shared store."""
    global _BROKER_CLASS
    if _BROKER_CLASS is None:
        from kafkapy.metadata import paths
        from kafkapy.metadata.embedded import EmbeddedStore
        from kafkapy.server import Broker

        class TestBroker(Broker):
            def __init__(self, config, clock, store_factory=None, links=None) -> None:
                super().__init__(config, clock, links)
                self._store_factory = store_factory

            def _open_store(self):
                if self._store_factory is not None:
                    store = self._store_factory(self)
                else:
                    store = EmbeddedStore(Path(self.config.log_dirs[0]) / "kafkapy-metadata.json",
                                          clock=self.clock, fsync=False)
                paths.ensure_base_paths(store)
                return store

        _BROKER_CLASS = TestBroker
    return _BROKER_CLASS


class _BrokerContext:
    """What ``broker()`` returns: ``async with`` (this loop) or ``with`` (a thread)."""

    def __init__(self, clock: Clock | None, settings: Mapping[str, Any] | None,
                 log_dir: str | Path | None, quiet: bool, keywords: Mapping[str, Any]) -> None:
        self._clock = clock
        self._settings = broker_settings(keywords, settings)
        self._given_dir = Path(log_dir) if log_dir is not None else None
        self._quiet = quiet
        self._tmp: str | None = None
        self._handle: BrokerHandle | None = None
        self._threaded = None

    async def __aenter__(self) -> BrokerHandle:
        if self._quiet:
            quiet_logging()
        if self._given_dir is not None:
            log_dir = self._given_dir
        else:
            self._tmp = tempfile.mkdtemp(prefix="kafkapy-test-")
            log_dir = Path(self._tmp) / "logs"
        self._handle = BrokerHandle(self._settings, log_dir, clock=self._clock)
        try:
            return await self._handle.start()
        except BaseException:
            self._remove_tmp()
            raise

    async def __aexit__(self, exc_type, exc, tb) -> bool:
        try:
            if self._handle is not None:
                await self._handle.stop()
        finally:
            self._remove_tmp()
        return False

    def _remove_tmp(self) -> None:
        tmp, self._tmp = self._tmp, None
        if tmp is not None:
            shutil.rmtree(tmp, ignore_errors=True)

    def __enter__(self):
        self._threaded = ThreadedContext(self, name="kafkapy-test-broker")
        return self._threaded.__enter__()

    def __exit__(self, exc_type, exc, tb) -> bool:
        threaded, self._threaded = self._threaded, None
        return threaded.__exit__(exc_type, exc, tb)


def broker(*, clock: Clock | None = None, settings: Mapping[str, Any] | None = None,
           log_dir: str | Path | None = None, quiet: bool = True,
           **keywords: Any) -> _BrokerContext:
    """A real broker for a test: ``async with broker(...) as b`` or ``with broker(...) as b``.

    ``clock``: a ``MockClock`` to drive with ``b.advance(ms)``; ``settings``: broker settings
    as spelled in server.properties; ``log_dir``: keep the logs there (not removed);
    ``quiet``: structlog at WARNING unless already configured; any other keyword is a
    broker setting with ``_`` for ``.``."""
    return _BrokerContext(clock, settings, log_dir, quiet, keywords)
