"""A Spark standalone cluster for tests, and the process-group handling of what a test starts.

``SparkStandalone(base, workers=2, cores=1, memory="1g").start()`` runs a master
(``org.apache.spark.deploy.master.Master``) and workers
(``org.apache.spark.deploy.worker.Worker``) from pyspark's own ``bin/spark-class``, so the
Spark that runs the jobs is the installed pyspark. ``start`` is ``launch`` (the master),
``launch_workers`` (once the master is ALIVE) and ``wait_workers``: a test may do other
things between them while the JVMs start. Layout under ``base``: ``conf/`` (an empty
``SPARK_CONF_DIR``: no ``spark-defaults.conf`` from elsewhere), ``master.log``,
``worker-<i>.log`` and ``worker-<i>/``, the worker's work dir, which holds one
``<app id>/<executor id>/stderr`` per executor the worker ran (``executor_logs``), and
``local/``, the executors' scratch space (``SPARK_LOCAL_DIRS``).
``state()`` is the master's JSON (``http://127.0.0.1:<web UI port>/json/``: workers and
their state, active and completed applications); ``worker_state(i)`` a worker's (its
executors, running and finished).

``start_group``/``stop_group`` run a command in a process group of its own and end the whole
group; the daemons use them, and so can a test for the driver it starts.

``spark_defaults(conf_dir, settings)`` writes a ``spark-defaults.conf`` (a driver started with
``SPARK_CONF_DIR=conf_dir`` reads it, as ``spark-submit`` does); ``TEST_JVM_OPTIONS`` are the
JVM flags that make the short-lived test JVMs (daemons, and a driver's and its executors'
through those defaults) start faster on a small machine: the client JIT only and the serial
collector; they change no Spark behaviour.

Invariants: everything binds to 127.0.0.1 (``SPARK_LOCAL_IP``, and ``SPARK_LOCAL_HOSTNAME``
so no name resolves elsewhere) on ports from ``free_port``; each daemon is the leader of a
process group of its own, and the executors a worker forks stay in its group, so stopping
the group ends them too; each daemon gets PR_SET_PDEATHSIG, so a killed pytest leaves none
behind (an orphaned executor exits when its worker's connection drops); every wait is
bounded; ``stop()`` ends master, workers and executors however the test went, and raises if
a process of theirs outlives SIGKILL.
"""
from __future__ import annotations

import json
import os
import signal
import subprocess
import time
import urllib.request
from pathlib import Path

from kafkapy.testing._broker import free_port
from tests.support.cluster import wait_for
from tests.support.zookeeper_server import _die_with_parent

MASTER_CLASS = "org.apache.spark.deploy.master.Master"
WORKER_CLASS = "org.apache.spark.deploy.worker.Worker"
DAEMON_HEAP = "256m"      # SPARK_DAEMON_MEMORY: the master and the workers only schedule
TEST_JVM_OPTIONS = "-XX:TieredStopAtLevel=1 -XX:+UseSerialGC"


def spark_home() -> Path:
    import pyspark  # optional (the spark extra): only Spark tests get here
    return Path(pyspark.__file__).resolve().parent


def local_env(**extra: str) -> dict[str, str]:
    """This environment with Spark bound to 127.0.0.1 (driver, daemons and executors)."""
    return dict(os.environ, SPARK_LOCAL_IP="127.0.0.1", SPARK_LOCAL_HOSTNAME="127.0.0.1",
                **extra)


def spark_defaults(conf_dir: Path, settings: dict[str, str]) -> Path:
    """``conf_dir/spark-defaults.conf`` holding ``settings``; ``conf_dir``."""
    conf_dir.mkdir(parents=True, exist_ok=True)
    (conf_dir / "spark-defaults.conf").write_text(
        "".join(f"{key} {value}\n" for key, value in settings.items()))
    return conf_dir


# --------------------------------------------------------------------------- process groups

def start_group(cmd: list[str], log_path: Path, env: dict[str, str],
                cwd: Path | None = None) -> subprocess.Popen:
    """``cmd`` as the leader of a new process group, stdout and stderr to ``log_path``,
    killed with the test process."""
    with open(log_path, "ab") as out:
        return subprocess.Popen(cmd, stdout=out, stderr=subprocess.STDOUT,
                                stdin=subprocess.DEVNULL, env=env, cwd=cwd,
                                start_new_session=True, preexec_fn=_die_with_parent)


def group_members(pgid: int) -> list[int]:
    """The live processes of group ``pgid`` (zombies, which nothing may reap, do not count)."""
    members = []
    for entry in Path("/proc").iterdir():
        if not entry.name.isdigit():
            continue
        try:
            stat = (entry / "stat").read_text()
        except OSError:
            continue
        fields = stat[stat.rindex(")") + 2:].split()   # after "pid (comm) "
        if fields[0] != "Z" and int(fields[2]) == pgid:
            members.append(int(entry.name))
    return members


def _signal_group(pgid: int, sig: int) -> None:
    try:
        os.killpg(pgid, sig)
    except ProcessLookupError:
        pass


def _wait_empty(pgid: int, timeout: float) -> bool:
    deadline = time.monotonic() + timeout
    while group_members(pgid):
        if time.monotonic() >= deadline:
            return False
        time.sleep(0.1)
    return True


def stop_group(proc: subprocess.Popen | None, grace: float = 10.0) -> None:
    """SIGTERM to the group of ``proc`` (its leader), SIGKILL to what is left after
    ``grace`` seconds; RuntimeError if a member is still alive 10 s later."""
    if proc is None:
        return
    pgid = proc.pid
    _signal_group(pgid, signal.SIGTERM)
    if not _wait_empty(pgid, grace):
        _signal_group(pgid, signal.SIGKILL)
    try:
        proc.wait(10)               # our own child: reaped here
    except subprocess.TimeoutExpired:
        pass
    if not _wait_empty(pgid, 10):
        raise RuntimeError(f"processes {group_members(pgid)} of group {pgid} outlived SIGKILL")


# --------------------------------------------------------------------------- the cluster

def _http_json(url: str) -> dict:
    with urllib.request.urlopen(url, timeout=5) as answer:
        return json.loads(answer.read())


class SparkStandalone:
    """A master and ``workers`` workers of ``cores`` cores and ``memory`` each (see the
    module docstring)."""

    def __init__(self, base: Path, workers: int = 2, cores: int = 1, memory: str = "1g") -> None:
        self.base = Path(base)
        self.cores, self.memory = cores, memory
        self.master_port, self.master_ui = free_port(), free_port()
        self.worker_ports = [(free_port(), free_port()) for _ in range(workers)]
        self.master: subprocess.Popen | None = None
        self.workers: list[subprocess.Popen] = []

    @property
    def master_url(self) -> str:
        return f"spark://127.0.0.1:{self.master_port}"

    def _env(self) -> dict[str, str]:
        return local_env(SPARK_HOME=str(spark_home()), SPARK_CONF_DIR=str(self.base / "conf"),
                         SPARK_LOCAL_DIRS=str(self.base / "local"),
                         SPARK_DAEMON_MEMORY=DAEMON_HEAP, SPARK_DAEMON_JAVA_OPTS=TEST_JVM_OPTIONS)

    def _spark_class(self, *args: str) -> list[str]:
        return [str(spark_home() / "bin" / "spark-class"), *args]

    def work_dir(self, index: int) -> Path:
        return self.base / f"worker-{index}"

    def start(self, timeout: float = 90.0) -> "SparkStandalone":
        """``launch`` and ``wait_ready``."""
        self.launch()
        return self.wait_ready(timeout)

    def launch(self) -> None:
        """Start the master (a JVM takes seconds: a caller may start other things meanwhile)."""
        (self.base / "conf").mkdir(parents=True, exist_ok=True)
        self.master = start_group(self._spark_class(
            MASTER_CLASS, "--host", "127.0.0.1", "--port", str(self.master_port),
            "--webui-port", str(self.master_ui)), self.base / "master.log", self._env())

    def wait_ready(self, timeout: float = 90.0) -> "SparkStandalone":
        """``launch_workers`` and ``wait_workers``."""
        self.launch_workers(timeout)
        return self.wait_workers(timeout)

    def launch_workers(self, timeout: float = 90.0) -> None:
        """Once the master is ALIVE, the workers (a worker that finds no master retries
        only after seconds); not waited for."""
        self._wait(lambda: self.state()["status"] == "ALIVE", timeout,
                   "the Spark master to be ALIVE")
        for index, (port, ui) in enumerate(self.worker_ports):
            self.work_dir(index).mkdir(parents=True, exist_ok=True)
            self.workers.append(start_group(self._spark_class(
                WORKER_CLASS, self.master_url, "--host", "127.0.0.1", "--port", str(port),
                "--webui-port", str(ui), "--cores", str(self.cores), "--memory", self.memory,
                "--work-dir", str(self.work_dir(index))),
                self.base / f"worker-{index}.log", self._env()))

    def wait_workers(self, timeout: float = 90.0) -> "SparkStandalone":
        """Until every worker ``launch_workers`` started is ALIVE on the master."""
        self._wait(lambda: self.state()["aliveworkers"] == len(self.workers), timeout,
                   f"{len(self.workers)} ALIVE Spark workers")
        return self

    def _exited(self) -> list[int]:
        return [p.returncode for p in [self.master, *self.workers] if p.poll() is not None]

    def _wait(self, condition, timeout: float, what: str) -> None:
        """Until ``condition()``; RuntimeError at once when a daemon exits."""
        wait_for(lambda: self._exited() or condition(), timeout,
                 lambda: f"{what}\n{self.summary()}")
        if self._exited():
            raise RuntimeError(f"a Spark daemon exited ({self._exited()})\n{self.summary()}")

    def state(self) -> dict:
        return _http_json(f"http://127.0.0.1:{self.master_ui}/json/")

    def worker_state(self, index: int) -> dict:
        return _http_json(f"http://127.0.0.1:{self.worker_ports[index][1]}/json/")

    def executor_logs(self, index: int) -> list[Path]:
        """The stderr of every executor worker ``index`` ran."""
        return sorted(self.work_dir(index).glob("*/*/stderr"))

    def stop(self) -> None:
        """Workers (with their executors) first, then the master; every group emptied."""
        errors = []
        for proc in [*self.workers, self.master]:
            try:
                stop_group(proc)
            except RuntimeError as err:
                errors.append(str(err))
        if errors:
            raise RuntimeError("; ".join(errors))

    def summary(self) -> str:
        """Each daemon's log tail (for failures)."""
        parts = []
        for path in [self.base / "master.log",
                     *(self.base / f"worker-{i}.log" for i in range(len(self.worker_ports)))]:
            try:
                parts.append(f"--- {path.name} ---\n{path.read_text(errors='replace')[-2500:]}")
            except OSError:
                pass
        return "\n".join(parts)
