"""A real ZooKeeper server for tests, run from the installed jars.

``ZooKeeperServer(dir).start()`` writes a standalone ``zoo.cfg`` in ``dir``
(free loopback port, admin server off, short tick so session timeouts can be
small, no fsync) and runs ``java -cp <classpath> org.apache.zookeeper.server.ZooKeeperServerMain``,
waiting until ``srvr`` reports that it serves requests.  The Java process is tied to the test
process (``PR_SET_PDEATHSIG``), so a killed pytest leaves no server behind.

Classpath discovery, first that works: ``$ZOOKEEPER_CLASSPATH``;
``$ZOOKEEPER_HOME/lib/*`` plus the ``zookeeper-*.jar`` next to it (tarball
layout); Debian's ``/usr/share/java/zookeeper.jar`` (its manifest ``Class-Path``
names its dependencies) plus an slf4j binding.  ``zookeeper_classpath()`` returns
None when nothing is found; tests then skip with ``ZOOKEEPER_SKIP_REASON``.

Fixtures (import them into a test module to use them):
* ``zookeeper_server`` - one server for the whole test session;
* ``zk_connect`` - a connect string with a fresh chroot per test
  (``127.0.0.1:port/t-<hex>``), so tests never see each other's znodes;
* ``zk`` - a started KazooClient on ``zk_connect``, closed after the test.
"""
from __future__ import annotations

import ctypes
import os
import shutil
import signal
import socket
import subprocess
import tempfile
import time
import uuid
from pathlib import Path

import pytest

from kafkapy.testing._broker import free_port

_DEBIAN_JAVA = Path("/usr/share/java")
ZOOKEEPER_SKIP_REASON = (
    "no ZooKeeper server jars found (set ZOOKEEPER_CLASSPATH or ZOOKEEPER_HOME, or "
    "install Debian's zookeeper package) or no java on PATH")


def zookeeper_classpath() -> str | None:
    """A java classpath that runs a ZooKeeper server, or None."""
    if shutil.which("java") is None:
        return None
    env_cp = os.environ.get("ZOOKEEPER_CLASSPATH")
    if env_cp:
        return env_cp
    home = os.environ.get("ZOOKEEPER_HOME")
    if home:
        h = Path(home)
        jars = sorted(h.glob("zookeeper-*.jar")) + sorted((h / "lib").glob("*.jar"))
        if any(j.name.startswith("zookeeper-") for j in jars):
            return os.pathsep.join(str(j) for j in jars)
    zk_jar = _DEBIAN_JAVA / "zookeeper.jar"
    if zk_jar.exists():
        cp = [str(zk_jar)]
        for extra in ("zookeeper-jute.jar", "slf4j-api.jar"):
            if (_DEBIAN_JAVA / extra).exists():
                cp.append(str(_DEBIAN_JAVA / extra))
        for binding in ("slf4j-simple.jar", "slf4j-nop.jar"):
            if (_DEBIAN_JAVA / binding).exists():
                cp.append(str(_DEBIAN_JAVA / binding))
                break
        return os.pathsep.join(cp)
    return None


def _die_with_parent() -> None:
    """preexec_fn: SIGKILL the child when the test process dies (Linux)."""
    try:
        libc = ctypes.CDLL("libc.so.6", use_errno=True)
        libc.prctl(1, signal.SIGKILL)       # PR_SET_PDEATHSIG
    except OSError:
        pass


def child_setup(gid: int | None = None):
    """preexec_fn: ``_die_with_parent``, after moving the child into group ``gid`` when one is
    given (the fault tests cut the network between groups: tests/support/faults/net.py)."""
    if gid is None:
        return _die_with_parent

    def run() -> None:
        os.setgroups([gid])
        os.setgid(gid)
        _die_with_parent()
    return run


class ZooKeeperServer:
    """One standalone ZooKeeper server process (see module docstring)."""

    def __init__(self, base_dir: Path, port: int | None = None, tick_time_ms: int = 200,
                 classpath: str | None = None, gid: int | None = None) -> None:
        self.gid = gid              # the group the server runs under (None: the test's)
        self.base_dir = Path(base_dir)
        self.port = port or free_port()
        self.tick_time_ms = tick_time_ms
        self.classpath = classpath or zookeeper_classpath()
        self.proc: subprocess.Popen | None = None
        self.log_path = self.base_dir / "zookeeper.out"

    @property
    def connect_string(self) -> str:
        return f"127.0.0.1:{self.port}"

    def _write_config(self) -> Path:
        data_dir = self.base_dir / "data"
        data_dir.mkdir(parents=True, exist_ok=True)
        cfg = self.base_dir / "zoo.cfg"
        cfg.write_text("\n".join([
            f"tickTime={self.tick_time_ms}",
            f"dataDir={data_dir}",
            f"clientPort={self.port}",
            "clientPortAddress=127.0.0.1",
            "maxClientCnxns=0",
            f"minSessionTimeout={2 * self.tick_time_ms}",
            "maxSessionTimeout=60000",
            "admin.enableServer=false",
            "4lw.commands.whitelist=ruok,srvr,stat,cons",
            "forceSync=no",
            "",
        ]))
        return cfg

    def start(self, timeout: float = 30.0) -> "ZooKeeperServer":
        if self.classpath is None:
            raise RuntimeError(ZOOKEEPER_SKIP_REASON)
        cfg = self._write_config()
        out = open(self.log_path, "ab")
        cmd = ["java", "-Xms32m", "-Xmx256m", "-XX:+UseSerialGC", "-XX:TieredStopAtLevel=1",
               "-Dzookeeper.admin.enableServer=false",
               "-Dzookeeper.4lw.commands.whitelist=ruok,srvr,stat,cons",
               "-cp", self.classpath,
               "org.apache.zookeeper.server.ZooKeeperServerMain", str(cfg)]
        self.proc = subprocess.Popen(cmd, stdout=out, stderr=subprocess.STDOUT,
                                     stdin=subprocess.DEVNULL, cwd=self.base_dir,
                                     preexec_fn=child_setup(self.gid))
        out.close()
        deadline = time.monotonic() + timeout
        while time.monotonic() < deadline:
            if self.proc.poll() is not None:
                raise RuntimeError(
                    f"ZooKeeper exited with {self.proc.returncode}; log:\n{self._log_tail()}")
            # "ruok" answers as soon as the process listens; "srvr" reports a
            # Mode only once the server serves requests.
            if "Mode:" in (self.four_letter("srvr") or ""):
                return self
            time.sleep(0.1)
        self.kill()
        raise RuntimeError(f"ZooKeeper did not start within {timeout}s; log:\n{self._log_tail()}")

    def four_letter(self, word: str, timeout: float = 1.0) -> str | None:
        """Send a four-letter command; the reply, or None if not reachable."""
        try:
            with socket.create_connection(("127.0.0.1", self.port), timeout=timeout) as s:
                s.sendall(word.encode())
                chunks = []
                while True:
                    b = s.recv(4096)
                    if not b:
                        break
                    chunks.append(b)
                return b"".join(chunks).decode(errors="replace")
        except OSError:
            return None

    def _log_tail(self, n: int = 40) -> str:
        try:
            return "\n".join(self.log_path.read_text(errors="replace").splitlines()[-n:])
        except OSError:
            return "(no log)"

    def stop(self, timeout: float = 10.0) -> None:
        if self.proc is None or self.proc.poll() is not None:
            return
        self.proc.terminate()
        try:
            self.proc.wait(timeout)
        except subprocess.TimeoutExpired:
            self.kill()

    def kill(self) -> None:
        if self.proc is not None and self.proc.poll() is None:
            self.proc.kill()
            self.proc.wait()


_shared: "ZooKeeperServer | None" = None


@pytest.fixture(scope="session")
def zookeeper_server():
    """One ZooKeeper server for the test session; skips if none can be run.

    Every module that imports this fixture gets a session-scoped definition of its own, so
    the server is kept in ``_shared`` and handed to all of them: one JVM for the session,
    not one per importing module alive until the end (each test or cluster works under a
    chroot of its own).  Stopped at the end of the session, or restarted if it died."""
    global _shared
    if zookeeper_classpath() is None:
        pytest.skip(ZOOKEEPER_SKIP_REASON)
    if _shared is None or _shared.proc is None or _shared.proc.poll() is not None:
        _shared = ZooKeeperServer(Path(tempfile.mkdtemp(prefix="kafkapy-zk-"))).start()
    server = _shared
    yield server
    server.stop()
    shutil.rmtree(server.base_dir, ignore_errors=True)


def new_chroot(server: ZooKeeperServer, prefix: str) -> str:
    """A connect string under a fresh chroot ``/<prefix>-<random>``, created first: for a
    broker shared by a module (a test of its own takes the ``zk_connect`` fixture)."""
    from kazoo.client import KazooClient
    path = f"/{prefix}-{uuid.uuid4().hex[:8]}"
    client = KazooClient(server.connect_string)
    client.start()
    try:
        client.ensure_path(path)
    finally:
        client.stop()
        client.close()
    return server.connect_string + path


@pytest.fixture
def zk_connect(zookeeper_server) -> str:
    """A connect string with a chroot of this test's own."""
    return f"{zookeeper_server.connect_string}/t-{uuid.uuid4().hex[:12]}"


@pytest.fixture
def zk(zk_connect):  # noqa: F811
    """A KazooClient connected under this test's ``zk_connect`` chroot."""
    from kazoo.client import KazooClient
    client = KazooClient(zk_connect)
    client.start(timeout=15)
    yield client
    client.stop()
    client.close()
