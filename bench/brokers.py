"""Brokers under test for ``bench/run_bench.py``: start, stop, and identify them.

Every broker here is a separate OS process from the benchmark driver.  ``KafkapyBroker``
starts kafkapy exactly as a user does (``python -m kafkapy config/server.properties
--override key=value ...``, like ``tests/support/broker_process.py``) on a free loopback port with
its own log directory; ``ExistingBroker`` wraps a ``--bootstrap`` address the harness did not
start (its pid is optional and only used for memory/CPU sampling).  The peer brokers (Kafka
3.9 and tansu) live in ``bench/peers.py`` and have the same surface:

    name, bootstrap, pid, start(), stop(), describe() -> dict, output_tail() -> str
"""
from __future__ import annotations

import hashlib
import os
import shutil
import signal
import socket
import subprocess
import sys
import time
from pathlib import Path

from kafkapy.testing._broker import free_port

ROOT = Path(__file__).resolve().parents[1]
SERVER_PROPERTIES = ROOT / "config" / "server.properties"


def wait_listening(host: str, port: int, proc: subprocess.Popen | None, timeout: float,
                   what: str, output) -> None:
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        if proc is not None and proc.poll() is not None:
            raise RuntimeError(f"{what} exited with {proc.returncode}:\n{output()}")
        try:
            with socket.create_connection((host, port), timeout=0.5):
                return
        except OSError:
            time.sleep(0.05)
    raise RuntimeError(f"{what} did not listen on {host}:{port} within {timeout}s:\n{output()}")


def snapshot_source(dest: Path) -> dict:
    """Copy kafkapy's source (kafkapy/, protocol/, config/) to ``dest``.

    The broker under test then runs from the copy (``PYTHONPATH=dest``), so edits made to the
    work tree while a long benchmark runs cannot change the broker half-way.  Returns the git
    commit and a digest of the copied files.
    """
    dest = Path(dest)
    ignore = shutil.ignore_patterns("__pycache__", "*.pyc")
    for part in ("kafkapy", "protocol", "config"):
        if (ROOT / part).exists():
            shutil.copytree(ROOT / part, dest / part, ignore=ignore, dirs_exist_ok=True)
    h = hashlib.sha1()
    for f in sorted(dest.rglob("*")):
        if f.is_file():
            h.update(str(f.relative_to(dest)).encode())
            h.update(f.read_bytes())
    return {"dir": str(dest), "sha1": h.hexdigest()[:12], "git_commit": _git_commit()}


class _ChildBroker:
    """A broker child process with its output in a file; SIGTERM then SIGKILL on stop."""

    name = "broker"

    def __init__(self, work_dir: Path, port: int | None = None) -> None:
        self.work_dir = Path(work_dir)
        self.port = port or free_port()
        self.proc: subprocess.Popen | None = None
        self.output_path = self.work_dir / f"{self.name}-{self.port}.out"
        self.stop_returncode: int | None = None

    @property
    def bootstrap(self) -> str:
        return f"127.0.0.1:{self.port}"

    @property
    def pid(self) -> int | None:
        return self.proc.pid if self.proc is not None else None

    def command(self) -> list[str]:
        raise NotImplementedError

    def _env(self) -> dict[str, str]:
        return dict(os.environ, PYTHONUNBUFFERED="1")

    def launch(self) -> None:
        """The process started, its output appended to ``output_path``; no wait."""
        self.work_dir.mkdir(parents=True, exist_ok=True)
        with open(self.output_path, "ab") as out:
            self.proc = subprocess.Popen(self.command(), stdout=out, stderr=subprocess.STDOUT,
                                         cwd=ROOT, env=self._env(), start_new_session=True)

    def start(self, timeout: float = 60.0) -> "_ChildBroker":
        self.launch()
        try:
            wait_listening("127.0.0.1", self.port, self.proc, timeout, self.name,
                           self.output_tail)
        except Exception:
            self.kill()
            raise
        return self

    def alive(self) -> bool:
        return self.proc is not None and self.proc.poll() is None

    def stop(self, timeout: float = 30.0) -> int | None:
        if self.proc is None:
            return None
        if self.proc.poll() is None:
            self.proc.send_signal(signal.SIGTERM)
            try:
                self.proc.wait(timeout)
            except subprocess.TimeoutExpired:
                self.kill()
        self.stop_returncode = self.proc.returncode
        return self.stop_returncode

    def kill(self) -> None:
        if self.proc is not None and self.proc.poll() is None:
            self.proc.send_signal(signal.SIGKILL)
            self.proc.wait()

    def output_tail(self, n: int = 20000) -> str:
        try:
            return self.output_path.read_text(errors="replace")[-n:]
        except OSError:
            return ""

    def describe(self) -> dict:
        return {"name": self.name, "bootstrap": self.bootstrap, "command": self.command()}


class KafkapyBroker(_ChildBroker):
    """kafkapy started as ``python -m kafkapy config/server.properties --override ...``."""

    name = "kafkapy"

    def __init__(self, work_dir: Path, port: int | None = None,
                 overrides: dict[str, str] | None = None, python: str | None = None,
                 log_dir: Path | None = None, source_dir: Path | None = None) -> None:
        super().__init__(work_dir, port)
        self.log_dir = Path(log_dir) if log_dir else self.work_dir / "kafkapy-logs"
        self.overrides = dict(overrides or {})
        self.python = python or sys.executable
        # None: run the work tree's kafkapy; else a snapshot_source() copy.
        self.source_dir = Path(source_dir) if source_dir else None

    def _env(self) -> dict[str, str]:
        env = super()._env()
        if self.source_dir is not None:
            env["PYTHONPATH"] = os.pathsep.join(
                [str(self.source_dir)] + ([env["PYTHONPATH"]] if env.get("PYTHONPATH") else []))
        return env

    def command(self) -> list[str]:
        settings = {
            "listeners": f"PLAINTEXT://127.0.0.1:{self.port}",
            "advertised.listeners": f"PLAINTEXT://127.0.0.1:{self.port}",
            "log.dirs": str(self.log_dir),
            "broker.id": "0",
            "num.partitions": "1",
            "group.initial.rebalance.delay.ms": "0",
        }
        settings.update(self.overrides)
        props = (self.source_dir / "config" / "server.properties" if self.source_dir
                 else SERVER_PROPERTIES)
        # -P: ``-m`` would put the working directory (the work tree) ahead of PYTHONPATH.
        cmd = [self.python] + (["-P"] if self.source_dir else []) + ["-m", "kafkapy", str(props)]
        for key, value in settings.items():
            cmd += ["--override", f"{key}={value}"]
        return cmd

    def start(self, timeout: float = 60.0) -> "KafkapyBroker":
        self.log_dir.mkdir(parents=True, exist_ok=True)
        return super().start(timeout)

    def describe(self) -> dict:
        d = super().describe()
        d.update(overrides=self.overrides, log_dir=str(self.log_dir), version=_kafkapy_version(),
                 git_commit=_git_commit(),
                 source_dir=str(self.source_dir) if self.source_dir else str(ROOT))
        return d


class ExistingBroker:
    """A broker the harness did not start (``--bootstrap``); never stopped by us."""

    def __init__(self, bootstrap: str, pid: int | None = None, name: str = "external") -> None:
        self.name = name
        self.bootstrap = bootstrap
        self.pid = pid

    def start(self, timeout: float = 60.0) -> "ExistingBroker":
        host, _, port = self.bootstrap.split(",")[0].rpartition(":")
        wait_listening(host or "127.0.0.1", int(port), None, timeout, self.name, lambda: "")
        return self

    def alive(self) -> bool:
        return True

    def stop(self, timeout: float = 30.0) -> None:
        return None

    def kill(self) -> None:
        return None

    def output_tail(self, n: int = 20000) -> str:
        return ""

    def describe(self) -> dict:
        return {"name": self.name, "bootstrap": self.bootstrap, "pid": self.pid,
                "started_by_harness": False}


def _kafkapy_version() -> str | None:
    try:
        from importlib.metadata import version
        return version("kafkapy")
    except Exception:
        return None


def _git_commit() -> str | None:
    try:
        out = subprocess.run(["git", "-C", str(ROOT), "rev-parse", "--short", "HEAD"],
                             capture_output=True, text=True, timeout=5)
        commit = out.stdout.strip() or None
        dirty = subprocess.run(["git", "--no-optional-locks", "-C", str(ROOT), "status", "--porcelain", "--",
                                "kafkapy"], capture_output=True, text=True, timeout=5)
        if commit and dirty.stdout.strip():
            commit += "+dirty"
        return commit
    except Exception:
        return None
