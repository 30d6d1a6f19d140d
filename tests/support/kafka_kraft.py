"""Apache Kafka 3.9 in KRaft combined mode (one node, broker + controller) for tests.

The process is ``bench/peers.py``'s ``KafkaBroker`` (``kafka-storage.sh format`` on a fresh
dir, then ``kafka-server-start.sh`` on Kafka's own ``config/kraft/server.properties`` with
the addresses, ``log.dirs`` and the given overrides), loaded from its file as module
``bench_peers`` (bench/ is no package; the bench dir it puts on ``sys.path`` is taken off
again).  For a test it differs in three ways: a small heap, the serial GC and C1 only (a
2-core machine also runs kafkapy and ZooKeeper), and the JVM dies with the test process
(``PR_SET_PDEATHSIG``), so an aborted run leaves no broker behind.

``start_kraft_kafka(work_dir, overrides)`` returns the started broker (``port``,
``bootstrap``, ``stop()``, ``kill()``, ``output_tail()``), or raises ``RuntimeError`` with
the output's tail; ``kraft_kafka_home()`` is None when Kafka or Java is missing.
"""
from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

from tests.support.bench_scripts import load_bench_script
from tests.support.kafka_jvm import SCRIPT_ENV, kafka_jvm_opts
from tests.support.zookeeper_server import _die_with_parent

HEAP_OPTS = "-Xmx512m -Xms256m"
START_TIMEOUT_S = 120.0


_peers = load_bench_script("peers.py", "bench_peers")


def kraft_kafka_home() -> Path | None:
    """Kafka 3.9's install dir (``$KAFKA_HOME`` or ``../shared/kafka_2.13-3.9.0``) when it and
    java are there, else None."""
    try:
        return _peers.find_kafka_home()
    except _peers.PeerUnavailable:
        return None


class _TestKafka(_peers.KafkaBroker):
    """``KafkaBroker`` with a test's JVM options, tied to the test process."""

    def _env(self) -> dict[str, str]:
        env = super()._env()
        env["KAFKA_JVM_PERFORMANCE_OPTS"] = kafka_jvm_opts()
        env.update(SCRIPT_ENV)
        return env

    def launch(self) -> None:
        self.work_dir.mkdir(parents=True, exist_ok=True)
        with open(self.output_path, "ab") as out:
            self.proc = subprocess.Popen(
                self.command(), stdout=out, stderr=subprocess.STDOUT, stdin=subprocess.DEVNULL,
                cwd=self.work_dir, env=self._env(), preexec_fn=_setsid_and_die_with_parent)


def _setsid_and_die_with_parent() -> None:
    os.setsid()             # its own process group, as KafkaBroker.kill expects
    _die_with_parent()


def start_kraft_kafka(work_dir: Path, overrides: dict[str, str] | None = None,
                      timeout: float = START_TIMEOUT_S):
    """A started Kafka 3.9 KRaft node in ``work_dir`` with ``overrides`` on Kafka's sample
    config; raises RuntimeError (with its output) if it does not start within ``timeout``."""
    broker = _TestKafka(Path(work_dir), overrides=overrides, heap_opts=HEAP_OPTS)
    return broker.start(timeout)
