"""Three-broker clusters on a real ZooKeeper for ``make bench``: kafkapy (result key
``kafkapy3``) and, side by side, Apache Kafka 3.9 in ZooKeeper mode (``kafka3``).

``KafkapyCluster`` starts one ZooKeeper server (``tests/support/zookeeper_server.py``'s
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

``python bench/cluster.py reassign`` (``reassign_main``) is a figure of its own: the time to
move one partition holding N MiB from broker 1 to broker 2 (AlterPartitionReassignments,
``workloads.reassign_time``) on a kafkapy cluster and on a Kafka 3.9 one in the same run;
results in ``bench/results/reassign-latest.json|md``.

Invariants: every process listens on 127.0.0.1 only; everything written is under the work dir.
"""
from __future__ import annotations

import os
import shutil
import sys
import time
from pathlib import Path

from brokers import ROOT, KafkapyBroker
from procstats import RssSampler, cpu_seconds, read_status_kb, sched_stats

KAFKA_HOME = Path(os.environ.get("KAFKA_HOME") or ROOT.parent / "shared" / "kafka_2.13-3.9.0")
BROKER_IDS = (1, 2, 3)


class ClusterUnavailable(RuntimeError):
    """No ZooKeeper server can be run here (no jars or no java)."""


def zookeeper_classpath() -> str:
    """The tests' ZooKeeper classpath, else Kafka 3.9's libs (they hold ZooKeeper 3.8)."""
    sys.path.insert(0, str(ROOT))
    try:
        from tests.support.zookeeper_server import zookeeper_classpath as tests_classpath
        cp = tests_classpath()
    finally:
        sys.path.remove(str(ROOT))
    if cp:
        return cp
    libs = KAFKA_HOME / "libs"
    if list(libs.glob("zookeeper-*.jar")) and shutil.which("java"):
        return str(libs / "*")
    raise ClusterUnavailable("no ZooKeeper jars (tests/support/zookeeper_server.py's search, or "
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

    def _sched(self) -> tuple[int, int, int]:
        each = [sched_stats(p) for p in self.pids]
        return tuple(sum(s[i] for s in each) for i in range(3))

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
            from tests.support.zookeeper_server import ZooKeeperServer
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


# --------------------------------------------------------------------------- reassignment figure
#
# ``python bench/cluster.py reassign [--mib N] [--repeat R] [--only kafkapy3,kafka3]``: the
# time to move one partition holding N MiB (RF 1) from broker 1 to broker 2 by
# AlterPartitionReassignments, on a kafkapy cluster and on a Kafka 3.9 one in the same run
# (``workloads.reassign_time``: request sent -> reassignment no longer listed and metadata
# showing the new replica alone).  Results: bench/results/reassign-latest.json|md plus
# timestamped copies.  A figure, never an assertion.

def _create_assigned(bootstrap: str, topic: str, assignment: dict[int, list[int]]) -> None:
    from kafka.admin import KafkaAdminClient, NewTopic
    admin = KafkaAdminClient(bootstrap_servers=bootstrap, client_id="kafkapy-bench-admin",
                             request_timeout_ms=30000)
    try:
        admin.create_topics([NewTopic(topic, -1, -1, replica_assignments=assignment)],
                            timeout_ms=30000, raise_errors=True)
    finally:
        admin.close()


def reassignment_runs(kind: str, work_dir: Path, mib: float, repeat: int,
                      log=print) -> dict:
    """One fresh cluster of ``kind``; ``repeat`` moves, each of a fresh N-MiB partition."""
    import workloads as wl
    cls = KafkapyCluster if kind == "kafkapy3" else KafkaZkCluster
    cluster = cls(work_dir / kind)
    out: dict = {"kind": kind, "mib": mib, "runs": []}
    log(f"{kind}: starting 3 brokers")
    cluster.start(timeout=180)
    sampler = cluster.make_sampler().start()
    try:
        out["cluster"] = cluster.describe()
        for rep in range(repeat):
            topic = f"bench-reassign-{rep + 1}"
            _create_assigned(cluster.bootstrap, topic, {0: [1]})
            leaders = cluster.leaders(topic, timeout=30)
            fill = wl.fill_partition(cluster.bootstrap, topic, 0, mib)
            log(f"{kind}: {topic} leader {leaders}, filled {fill}")
            if not fill["ok"]:
                out["runs"].append({"ok": False, "fill": fill, "error": fill.get("error")})
                continue
            time.sleep(1.0)
            sampler.phase_start(f"reassign-{rep + 1}")
            move = wl.reassign_time(cluster.bootstrap, topic, 0, [2])
            move["brokers"] = sampler.phase_end().as_dict()
            move["fill"] = fill
            if move.get("ok"):
                # The new replica alone now leads: it must serve every record written.
                _, high = wl.high_watermark(cluster.bootstrap, topic, 0)
                move["high_watermark"] = high
                if high != fill["records"]:
                    move.update(ok=False, error=f"high watermark {high} after the move, "
                                                f"{fill['records']} records written")
            if move.get("ok"):
                move["mib_per_s"] = round(fill["mib"] / move["seconds"], 1)
            log(f"{kind}: move of {fill['mib']} MiB 1 -> 2: {move.get('seconds')} s "
                f"{move.get('error', '')}")
            out["runs"].append(move)
    finally:
        sampler.stop()
        out["stop_exit_code"] = cluster.stop()
    return out


def _median(values):
    vals = sorted(v for v in values if v is not None)
    return vals[len(vals) // 2] if vals else None


def reassignment_report(doc: dict) -> str:
    kinds = [k for k in ("kafkapy3", "kafka3") if k in doc["clusters"]]
    labels = {"kafkapy3": "kafkapy 3 brokers", "kafka3": "Kafka 3.9 3 brokers (ZK)"}
    med = {k: _median([r.get("seconds") for r in doc["clusters"][k].get("runs", [])
                       if r.get("ok")]) for k in kinds}
    rate = {k: _median([r.get("mib_per_s") for r in doc["clusters"][k].get("runs", [])
                        if r.get("ok")]) for k in kinds}
    cpu = {k: _median([r.get("brokers", {}).get("cpu_pct")
                       for r in doc["clusters"][k].get("runs", []) if r.get("ok")]) for k in kinds}
    lines = [f"# Partition reassignment time ({doc['time_utc']})", "",
             f"One partition holding {doc['mib']} MiB (replication factor 1) moved from broker 1 "
             "to broker 2 by AlterPartitionReassignments; time from the request to the move "
             "being over (no longer listed by ListPartitionReassignments, metadata showing "
             f"the new replica alone). Median of {doc['repeat']} move(s) per cluster, each "
             "on a fresh topic; both clusters run in this invocation, one after the other, "
             "on the same machine.", "",
             "| | " + " | ".join(labels[k] for k in kinds) + " |",
             "|---|" + "---:|" * len(kinds)]

    def fmt(v, nd=2):
        return "—" if v is None else f"{v:,.{nd}f}"
    lines.append("| seconds | " + " | ".join(fmt(med[k]) for k in kinds) + " |")
    lines.append("| MiB/s | " + " | ".join(fmt(rate[k], 1) for k in kinds) + " |")
    lines.append("| brokers' CPU % (sum of 3) | "
                 + " | ".join(fmt(cpu[k], 0) for k in kinds) + " |")
    if med.get("kafkapy3") and med.get("kafka3"):
        lines += ["", f"kafkapy / Kafka time ratio: {med['kafkapy3'] / med['kafka3']:.2f} "
                      "(above 1: kafkapy slower)."]
    for k in kinds:
        for i, r in enumerate(doc["clusters"][k].get("runs", []), 1):
            if not r.get("ok"):
                lines.append(f"- {labels[k]} move {i} failed: {r.get('error')}")
        if doc["clusters"][k].get("error"):
            lines.append(f"- {labels[k]}: {doc['clusters'][k]['error']}")
    return "\n".join(lines) + "\n"


def reassign_main(argv: list[str] | None = None) -> int:
    import argparse
    import datetime as _dt
    import json
    import tempfile
    import traceback
    parser = argparse.ArgumentParser(prog="bench/cluster.py reassign",
                                     description="time to reassign one partition, kafkapy vs Kafka")
    parser.add_argument("--mib", type=float, default=100.0, help="MiB in the moved partition")
    parser.add_argument("--repeat", type=int, default=3)
    parser.add_argument("--only", default="kafkapy3,kafka3")
    parser.add_argument("--results-dir", default=str(ROOT / "bench" / "results"))
    args = parser.parse_args(argv)
    now = _dt.datetime.now(_dt.timezone.utc)
    doc = {"time_utc": now.strftime("%Y-%m-%dT%H:%M:%SZ"), "mib": args.mib,
           "repeat": args.repeat, "clusters": {}}

    def log(msg: str) -> None:
        print(f"[reassign {time.strftime('%H:%M:%S')}] {msg}", flush=True)
    with tempfile.TemporaryDirectory(prefix="kafkapy-bench-reassign-") as tmp:
        for kind in [k.strip() for k in args.only.split(",") if k.strip()]:
            try:
                doc["clusters"][kind] = reassignment_runs(kind, Path(tmp), args.mib, args.repeat,
                                                          log)
            except Exception as e:  # noqa: BLE001 - record, go on to the other cluster
                log(f"{kind}: FAILED {e}")
                doc["clusters"][kind] = {"error": f"{type(e).__name__}: {e}",
                                         "traceback": traceback.format_exc()[-3000:]}
    results = Path(args.results_dir)
    results.mkdir(parents=True, exist_ok=True)
    stamp = now.strftime("%Y%m%dT%H%M%SZ")
    text = reassignment_report(doc)
    for name in ("reassign-latest", f"reassign-{stamp}"):
        (results / f"{name}.json").write_text(json.dumps(doc, indent=2, default=str))
        (results / f"{name}.md").write_text(text)
    print(text)
    ok = all(c.get("runs") and all(r.get("ok") for r in c["runs"])
             for c in doc["clusters"].values())
    return 0 if ok else 1


if __name__ == "__main__":
    if len(sys.argv) > 1 and sys.argv[1] == "reassign":
        raise SystemExit(reassign_main(sys.argv[2:]))
    raise SystemExit("usage: python bench/cluster.py reassign [--mib N] [--repeat R] "
                     "[--only kafkapy3,kafka3]")
