"""Three-broker clusters on a real ZooKeeper for ``make bench``: kafkapy (result key
``kafkapy3``) and, side by side, Apache Kafka 3.9 in ZooKeeper mode (``kafka3``).

``KafkapyCluster`` starts one ZooKeeper server (``tests/zookeeper_server.py``'s
``ZooKeeperServer``: a standalone server on a free loopback port; jars from
``$ZOOKEEPER_CLASSPATH``/``$ZOOKEEPER_HOME``/Debian's package, else the ``libs/`` of Kafka 3.9
beside the repo), then brokers 1, 2 and 3 (``bench/brokers.py``'s ``KafkapyBroker``, each on
its own port and log dir, ``zookeeper.connect`` on a chroot of their own), and waits until
broker 1's Metadata lists all three and names a controller.  It has the surface
``run_bench.py`` expects of a broker (``name``, ``bootstrap``, ``pid``, ``start``, ``stop``,
``kill``, ``alive``, ``output_tail``, ``describe``), where ``bootstrap`` is broker 1 alone: the
driver's clients find the other brokers from it, as a user's do.  ``make_sampler()`` gives a
sampler that adds up the three brokers' RSS and CPU (ZooKeeper's JVM is not counted; its
own RSS is recorded in ``describe()['zookeeper_rss_mib']``).

``KafkaZkCluster`` is the same with three Kafka 3.9 brokers in ZooKeeper mode
(``KafkaZkBroker``: ``bin/kafka-server-start.sh`` on Kafka's own ZK-mode sample
``config/server.properties`` with only broker.id, addresses, ``log.dirs``,
``zookeeper.connect``, ``num.partitions=1`` and ``group.initial.rebalance.delay.ms=0`` set; the
start script's default heap unless ``--kafka-heap-opts``), sampled at the JVMs.

Invariants: every process listens on 127.0.0.1 only; everything written is under the work dir.
"""
from __future__ import annotations

import os
import shutil
import sys
import time
from pathlib import Path

from brokers import ROOT, KafkapyBroker
from procstats import RssSampler, cpu_seconds, read_status_kb

KAFKA_HOME = Path(os.environ.get("KAFKA_HOME") or ROOT.parent / "shared" / "kafka_2.13-3.9.0")
BROKER_IDS = (1, 2, 3)


class ClusterUnavailable(RuntimeError):
    """No ZooKeeper server can be run here (no jars or no java)."""


def zookeeper_classpath() -> str:
    """The tests' ZooKeeper classpath, else Kafka 3.9's libs (they hold ZooKeeper 3.8)."""
    sys.path.insert(0, str(ROOT))
    try:
        from tests.zookeeper_server import zookeeper_classpath as tests_classpath
        cp = tests_classpath()
    finally:
        sys.path.remove(str(ROOT))
    if cp:
        return cp
    libs = KAFKA_HOME / "libs"
    if list(libs.glob("zookeeper-*.jar")) and shutil.which("java"):
        return str(libs / "*")
    raise ClusterUnavailable("no ZooKeeper jars (tests/zookeeper_server.py's search, or "
                             f"{libs}) or no java")


class _SummedSampler(RssSampler):
    """RssSampler over several processes: RSS and CPU are the sums (HWM: sum of each's)."""

    def __init__(self, pids: list[int], interval: float = 0.05) -> None:
        super().__init__(pids[0] if pids else None, interval)
        self.pids = list(pids)

    def _rss_kb(self, key: str = "VmRSS") -> int:
        return sum(read_status_kb(p).get(key, 0) for p in self.pids)

    def _cpu(self) -> float:
        return sum(cpu_seconds(p) or 0.0 for p in self.pids)

    def sample(self) -> int:
        rss = self._rss_kb()
        with self._lock:
            self._samples += 1
            self._peak_kb = max(self._peak_kb, rss)
            self._overall_peak_kb = max(self._overall_peak_kb, rss)
        return rss

    def snapshot(self) -> dict:
        return {"rss_mib": round(self._rss_kb() / 1024, 1),
                "hwm_mib": round(self._rss_kb("VmHWM") / 1024, 1),
                "threads": sum(read_status_kb(p).get("Threads", 0) or 0 for p in self.pids),
                "cpu_seconds": round(self._cpu(), 2), "processes": len(self.pids)}

    def phase_start(self, name: str) -> None:
        super().phase_start(name)
        self._cpu0 = self._cpu()

    def phase_end(self):
        cpu_end = self._cpu()
        ph = super().phase_end()
        ph.cpu_seconds = cpu_end - self._cpu0
        ph.cpu_pct = 100.0 * ph.cpu_seconds / ph.seconds if ph.seconds > 0 else 0.0
        ph.rss_end_mib = self._rss_kb() / 1024
        ph.hwm_end_mib = self._rss_kb("VmHWM") / 1024
        return ph


class _ZkCluster:
    """ZooKeeper + brokers 1, 2, 3 (see the module docstring); subclasses make the brokers."""

    name = "cluster"
    kind_text = "brokers"

    def __init__(self, work_dir: Path, overrides: dict[str, str] | None = None,
                 ids=BROKER_IDS) -> None:
        self.work_dir = Path(work_dir)
        self.overrides = dict(overrides or {})
        self.ids = tuple(ids)
        self.zk = None
        self.brokers: dict = {}
        self.stop_returncode: int | None = None
        self._classpath = zookeeper_classpath()

    def _make_broker(self, node_id: int, zk_connect: str):
        raise NotImplementedError

    # -- the broker surface ---------------------------------------------------------------
    @property
    def bootstrap(self) -> str:
        return self.brokers[self.ids[0]].bootstrap

    @property
    def pid(self) -> int | None:
        b = self.brokers.get(self.ids[0])
        return b.pid if b is not None else None

    @property
    def pids(self) -> list[int]:
        return [b.pid for b in self.brokers.values() if b.pid is not None]

    def make_sampler(self) -> RssSampler:
        return _SummedSampler(self.pids)

    def start(self, timeout: float = 60.0) -> "KafkapyCluster":
        sys.path.insert(0, str(ROOT))
        try:
            from tests.zookeeper_server import ZooKeeperServer
        finally:
            sys.path.remove(str(ROOT))
        self.work_dir.mkdir(parents=True, exist_ok=True)
        (self.work_dir / "zookeeper").mkdir(exist_ok=True)
        self.zk = ZooKeeperServer(self.work_dir / "zookeeper", classpath=self._classpath)
        self.zk.start(timeout=timeout)
        connect = f"{self.zk.connect_string}/kafkapy-bench"
        try:
            self._ensure_chroot()
            for i in self.ids:
                self.brokers[i] = self._make_broker(i, connect)
            for b in self.brokers.values():
                b.start(timeout=timeout)
            self._wait_ready(timeout)
        except Exception:
            self.kill()
            raise
        return self

    def _ensure_chroot(self) -> None:
        from kazoo.client import KazooClient
        zk = KazooClient(self.zk.connect_string)
        zk.start(timeout=15)
        try:
            zk.ensure_path("/kafkapy-bench")
        finally:
            zk.stop()
            zk.close()

    def _wait_ready(self, timeout: float) -> None:
        """Until broker 1's Metadata lists every broker and names a controller."""
        from confluent_kafka.admin import AdminClient
        deadline = time.monotonic() + timeout
        last = None
        while time.monotonic() < deadline:
            for b in self.brokers.values():
                if not b.alive():
                    raise RuntimeError(f"broker exited:\n{b.output_tail(4000)}")
            try:
                md = AdminClient({"bootstrap.servers": self.bootstrap, "log_level": 3}
                                 ).list_topics(timeout=5)
                last = (sorted(md.brokers), md.controller_id)
                if sorted(md.brokers) == sorted(self.ids) and md.controller_id in self.ids:
                    return
            except Exception as e:  # noqa: BLE001 - not ready yet
                last = str(e)
            time.sleep(0.2)
        raise RuntimeError(f"cluster not ready within {timeout}s (last metadata: {last}):\n"
                           f"{self.output_tail(6000)}")

    def alive(self) -> bool:
        return bool(self.brokers) and all(b.alive() for b in self.brokers.values())

    def stop(self, timeout: float = 30.0) -> int | None:
        """SIGTERM every broker (controlled shutdown while the others run), then ZooKeeper.
        The first non-zero broker exit code, else 0."""
        codes = [b.stop(timeout) for b in self.brokers.values()]
        if self.zk is not None:
            self.zk.stop()
        self.stop_returncode = next((c for c in codes if c), 0)
        return self.stop_returncode

    def kill(self) -> None:
        for b in self.brokers.values():
            b.kill()
        if self.zk is not None:
            self.zk.kill()

    def output_tail(self, n: int = 20000) -> str:
        per = max(1000, n // max(1, len(self.brokers)))
        return "\n".join(f"--- broker {i} ---\n{b.output_tail(per)}"
                         for i, b in self.brokers.items())

    def leaders(self, topic: str, timeout: float = 15.0) -> dict[int, int]:
        """{partition: leader} from broker 1's Metadata, once every partition has one."""
        from confluent_kafka.admin import AdminClient
        admin = AdminClient({"bootstrap.servers": self.bootstrap, "log_level": 3})
        deadline = time.monotonic() + timeout
        leaders: dict[int, int] = {}
        while time.monotonic() < deadline:
            md = admin.list_topics(topic, timeout=5)
            t = md.topics.get(topic)
            leaders = {p: pm.leader for p, pm in (t.partitions if t else {}).items()}
            if leaders and all(l >= 0 for l in leaders.values()):
                break
            time.sleep(0.2)
        return leaders

    def describe(self) -> dict:
        first = self.brokers[self.ids[0]].describe() if self.brokers else {}
        zk_rss = None
        if self.zk is not None and self.zk.proc is not None:
            zk_rss = round(read_status_kb(self.zk.proc.pid).get("VmRSS", 0) / 1024, 1)
        return {"name": self.name, "bootstrap": self.bootstrap,
                "cluster": f"{len(self.ids)} {self.kind_text} on ZooKeeper",
                "brokers": {i: b.describe() for i, b in self.brokers.items()},
                "zookeeper": {"connect": self.zk.connect_string if self.zk else None,
                              "classpath": self._classpath},
                "zookeeper_rss_mib": zk_rss,
                "version": first.get("version"), "git_commit": first.get("git_commit"),
                "source_dir": first.get("source_dir")}


class KafkapyCluster(_ZkCluster):
    """kafkapy brokers 1, 2, 3 (``KafkapyBroker``, from the source snapshot when given)."""

    name = "kafkapy3"
    kind_text = "kafkapy brokers"

    def __init__(self, work_dir: Path, overrides: dict[str, str] | None = None,
                 source_dir: Path | None = None, ids=BROKER_IDS) -> None:
        super().__init__(work_dir, overrides, ids)
        self.source_dir = source_dir

    def _make_broker(self, node_id: int, zk_connect: str) -> KafkapyBroker:
        settings = {"broker.id": str(node_id), "zookeeper.connect": zk_connect}
        settings.update(self.overrides)
        return KafkapyBroker(self.work_dir / f"broker-{node_id}", overrides=settings,
                             source_dir=self.source_dir)


def _kafka_zk_broker_class():
    from peers import KafkaBroker, read_properties

    class KafkaZkBroker(KafkaBroker):
        """Kafka 3.9 in ZooKeeper mode on its own sample ``config/server.properties``."""

        name = "kafka"

        def __init__(self, work_dir: Path, node_id: int, zk_connect: str, **kw) -> None:
            super().__init__(work_dir, **kw)
            self.node_id = node_id
            self.zk_connect = zk_connect

        def settings(self) -> dict[str, str]:
            settings = read_properties(self.home / "config" / "server.properties")
            broker = f"127.0.0.1:{self.port}"
            settings.update({
                "broker.id": str(self.node_id),
                "listeners": f"PLAINTEXT://{broker}",
                "advertised.listeners": f"PLAINTEXT://{broker}",
                "log.dirs": str(self.data_dir),
                "zookeeper.connect": self.zk_connect,
                "num.partitions": "1",
                "group.initial.rebalance.delay.ms": "0",
            })
            settings.update(self.overrides)
            return settings

        @property
        def started_line(self) -> str:
            """ZK mode logs "[KafkaServer id=N] started" once it serves requests."""
            return f"[KafkaServer id={self.node_id}] started"

        def prepare_storage(self, timeout: float) -> None:
            """ZooKeeper mode needs no format: the properties only."""
            self._write_properties()

        def describe(self) -> dict:
            d = super().describe()
            d["mode"] = "ZooKeeper mode"
            return d

    return KafkaZkBroker


class KafkaZkCluster(_ZkCluster):
    """Kafka 3.9 brokers 1, 2, 3 in ZooKeeper mode (``kafka3``)."""

    name = "kafka3"
    kind_text = "Kafka 3.9 brokers (ZooKeeper mode)"

    def __init__(self, work_dir: Path, overrides: dict[str, str] | None = None,
                 heap_opts: str | None = None, ids=BROKER_IDS) -> None:
        super().__init__(work_dir, overrides, ids)
        self.heap_opts = heap_opts

    def _make_broker(self, node_id: int, zk_connect: str):
        return _kafka_zk_broker_class()(self.work_dir / f"broker-{node_id}", node_id, zk_connect,
                                        overrides=self.overrides, heap_opts=self.heap_opts)

    def describe(self) -> dict:
        d = super().describe()
        first = d["brokers"].get(self.ids[0], {}) if d.get("brokers") else {}
        d.update(version=first.get("version"), mode=f"{len(self.ids)} brokers, ZooKeeper mode",
                 heap_opts=str(first.get("heap_opts") or ""))
        return d
