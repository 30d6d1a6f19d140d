"""Start and stop a real kafkapy broker as a child process for tests.

The broker is started exactly as a user starts it:
``python -m kafkapy config/server.properties --override key=value ...``,
on a free loopback port with its own log directory.
"""
from __future__ import annotations

import os
import signal
import socket
import subprocess
import sys
import time
from pathlib import Path

from kafkapy.testing._broker import free_port

ROOT = Path(__file__).resolve().parents[2]
SERVER_PROPERTIES = ROOT / "config" / "server.properties"


class BrokerProcess:
    """One broker process; ``start()`` waits until the port accepts connections."""

    def __init__(self, log_dir: Path, port: int | None = None,
                 overrides: dict[str, str] | None = None, node_id: int = 0,
                 file_size_limit: int | None = None, open_files_limit: int | None = None) -> None:
        self.log_dir = Path(log_dir)
        # RLIMIT_FSIZE for the broker: a write past it fails with EFBIG (Python
        # ignores SIGXFSZ), which stands in for a full disk.
        self.file_size_limit = file_size_limit
        # RLIMIT_NOFILE, soft and hard: the broker cannot raise it past this.
        self.open_files_limit = open_files_limit
        self.port = port or free_port()
        self.node_id = node_id
        self.overrides = dict(overrides or {})
        self.proc: subprocess.Popen | None = None
        self.output_path = self.log_dir.parent / f"broker-{self.port}.out"

    @property
    def bootstrap(self) -> str:
        return f"127.0.0.1:{self.port}"

    def command(self) -> list[str]:
        settings = {
            "listeners": f"PLAINTEXT://127.0.0.1:{self.port}",
            "advertised.listeners": f"PLAINTEXT://127.0.0.1:{self.port}",
            "log.dirs": str(self.log_dir),
            "broker.id": str(self.node_id),
            "num.partitions": "1",
            "group.initial.rebalance.delay.ms": "0",
        }
        settings.update(self.overrides)
        cmd = [sys.executable, "-m", "kafkapy", str(SERVER_PROPERTIES)]
        for key, value in settings.items():
            cmd += ["--override", f"{key}={value}"]
        return cmd

    def start(self, timeout: float = 30.0) -> "BrokerProcess":
        self.log_dir.mkdir(parents=True, exist_ok=True)
        out = open(self.output_path, "ab")
        env = dict(os.environ, PYTHONUNBUFFERED="1")
        self.proc = subprocess.Popen(self.command(), stdout=out, stderr=subprocess.STDOUT,
                                     cwd=ROOT, env=env, preexec_fn=self._limits())
        out.close()
        deadline = time.monotonic() + timeout
        while time.monotonic() < deadline:
            if self.proc.poll() is not None:
                raise RuntimeError(f"broker exited with {self.proc.returncode}:\n{self.output()}")
            try:
                with socket.create_connection(("127.0.0.1", self.port), timeout=0.5):
                    return self
            except OSError:
                time.sleep(0.05)
        self.kill()
        raise RuntimeError(f"broker did not listen within {timeout}s:\n{self.output()}")

    def _limits(self):
        limits = {}
        if self.file_size_limit is not None:
            limits["RLIMIT_FSIZE"] = self.file_size_limit
        if self.open_files_limit is not None:
            limits["RLIMIT_NOFILE"] = self.open_files_limit
        if not limits:
            return None

        def apply() -> None:
            import resource
            for name, limit in limits.items():
                resource.setrlimit(getattr(resource, name), (limit, limit))
        return apply

    def output(self) -> str:
        try:
            return self.output_path.read_text(errors="replace")[-20000:]
        except OSError:
            return ""

    def stop(self, timeout: float = 30.0) -> int:
        """Graceful stop with SIGTERM; returns the exit code."""
        if self.proc is None or self.proc.poll() is not None:
            return self.proc.returncode if self.proc else 0
        self.proc.send_signal(signal.SIGTERM)
        try:
            return self.proc.wait(timeout)
        except subprocess.TimeoutExpired:
            self.kill()
            raise RuntimeError(f"broker ignored SIGTERM:\n{self.output()}")

    def kill(self) -> None:
        """kill -9."""
        if self.proc is not None and self.proc.poll() is None:
            self.proc.send_signal(signal.SIGKILL)
            self.proc.wait()

    def __enter__(self) -> "BrokerProcess":
        return self

    def __exit__(self, *exc) -> None:
        """Stops the broker (``with BrokerProcess(...).start() as b``)."""
        self.stop()

    def restart(self, hard: bool = False) -> "BrokerProcess":
        if hard:
            self.kill()
        else:
            self.stop()
        return self.start()
