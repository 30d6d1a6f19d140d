"""Kafka's verifiable producer and consumer (JSON-lines tools) against a cluster."""
from __future__ import annotations

import json
import shutil
import subprocess
import threading

import pytest

from tests.support import cluster_clients as clients
from tests.support.cluster import _die_with_parent, KAFKA_BIN, kafka_env, wait_for


class JsonLinesTool:
    """One of Kafka's verifiable tools as a child process; its stdout JSON lines collected
    by a thread into ``events`` (non-JSON lines are ignored)."""

    def __init__(self, script: str, args: list[str], log_dir) -> None:
        path = KAFKA_BIN / script
        if not path.is_file():
            pytest.skip(f"no Kafka 3.9 scripts at {KAFKA_BIN}")
        if shutil.which("java") is None:
            pytest.skip("no java on PATH")
        log_dir.mkdir(parents=True, exist_ok=True)
        self.stderr_path = log_dir / f"{script}.stderr"
        self._stderr = open(self.stderr_path, "wb")
        self.proc = subprocess.Popen([str(path), *args], stdout=subprocess.PIPE,
                                     stderr=self._stderr, stdin=subprocess.DEVNULL,
                                     env=kafka_env(log_dir, heap="-Xmx256m -Xms32m"),
                                     preexec_fn=_die_with_parent)
        self.events: list[dict] = []
        self._lock = threading.Lock()
        self._thread = threading.Thread(target=self._read, daemon=True, name=f"{script}-stdout")
        self._thread.start()

    def _read(self) -> None:
        for line in self.proc.stdout:
            try:
                event = json.loads(line)
            except ValueError:
                continue
            with self._lock:
                self.events.append(event)

    def named(self, name: str) -> list[dict]:
        with self._lock:
            return [e for e in self.events if e.get("name") == name]

    def stop(self, timeout: float = 30.0) -> None:
        if self.proc.poll() is None:
            self.proc.terminate()
            try:
                self.proc.wait(timeout)
            except subprocess.TimeoutExpired:
                self.proc.kill()
                self.proc.wait(10)
        self._thread.join(10)
        self._stderr.close()

    def stderr_tail(self) -> str:
        try:
            return self.stderr_path.read_text(errors="replace")[-3000:]
        except OSError:
            return ""

    # --- the verifiable producer's view

    def acked(self) -> dict[str, tuple[int, int]]:
        """{value: (partition, offset)} of every acknowledged send."""
        return {e["value"]: (e["partition"], e["offset"])
                for e in self.named("producer_send_success")}

    # --- the verifiable consumer's view

    def wait_read(self, acked: dict[str, tuple[int, int]], timeout: float) -> None:
        """Until every acknowledged value was read (at some place)."""
        def read_all():
            seen = {e["value"] for e in self.named("record_data")}
            return all(v in seen for v in acked)
        wait_for(read_all, timeout, lambda: (
            f"the verifiable consumer to read all {len(acked)} acknowledged values (read "
            f"{len(self.named('record_data'))})\n{self.stderr_tail()}"))

    def lost_and_moved(self, acked: dict[str, tuple[int, int]]) -> tuple[list, list]:
        """``clients.audit_acked`` of ``acked`` against every record read."""
        lost, moved, _ = clients.audit_acked(acked, (
            (e["value"], e["partition"], e["offset"]) for e in self.named("record_data")))
        return lost, moved


def verifiable_consumer(bootstrap: str, topic: str, group: str, log_dir) -> JsonLinesTool:
    """Kafka's verifiable consumer: ``group`` from the earliest offset, every record printed."""
    return JsonLinesTool("kafka-verifiable-consumer.sh", [
        "--bootstrap-server", bootstrap, "--topic", topic, "--group-id", group,
        "--verbose", "--reset-policy", "earliest", "--session-timeout", "10000"], log_dir)
