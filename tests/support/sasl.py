"""Kafka 3.9 as the reference broker of the SASL tests (KAFKA_HOME, a ZooKeeper-mode Kafka
process)."""
from __future__ import annotations

import os
import subprocess
import time
from pathlib import Path

from tests.support.broker_process import ROOT
from tests.support.wire import WireClient


KAFKA_HOME = Path(os.environ.get("KAFKA_HOME", ROOT.parent / "shared" / "kafka_2.13-3.9.0"))


class _KafkaBroker:
    """Reference mode: Apache Kafka 3.9 in ZooKeeper mode, the same surface as BrokerProcess."""

    def __init__(self, log_dir: Path, port: int, overrides: dict[str, str]) -> None:
        from tests.support.broker_process import SERVER_PROPERTIES
        self.log_dir, self.port, self.settings = Path(log_dir), port, dict(overrides)
        self.base = self.log_dir.parent
        self.props = self.base / "server.properties"
        self.props.write_text(SERVER_PROPERTIES.read_text() + "\n" + "".join(
            f"{k}={v}\n" for k, v in {"broker.id": "0", "log.dirs": str(self.log_dir),
                                      "offsets.topic.replication.factor": "1",
                                      "transaction.state.log.replication.factor": "1",
                                      "transaction.state.log.min.isr": "1",
                                      "group.initial.rebalance.delay.ms": "0",
                                      **self.settings}.items()))
        self.proc = None

    @property
    def bootstrap(self) -> str:
        return f"127.0.0.1:{self.port}"

    def start(self) -> "_KafkaBroker":
        import socket
        from tests.support.cluster import kafka_env
        out = open(self.base / "kafka.out", "ab")
        self.proc = subprocess.Popen([str(KAFKA_HOME / "bin" / "kafka-server-start.sh"),
                                      str(self.props)], stdout=out, stderr=subprocess.STDOUT,
                                     env=kafka_env(self.base / "app-logs"))
        deadline = time.monotonic() + 120
        while time.monotonic() < deadline:
            if self.proc.poll() is not None:
                raise RuntimeError((self.base / "kafka.out").read_text()[-3000:])
            try:
                with socket.create_connection(("127.0.0.1", self.port), timeout=0.5):
                    pass
                if self._knows_itself():
                    return self
            except OSError:
                pass
            time.sleep(0.2)
        raise RuntimeError("Kafka did not start")

    def _knows_itself(self) -> bool:
        """Kafka listens before its metadata cache has its own registration."""
        client = WireClient(self.bootstrap)
        try:
            return bool(client.request(3, 1, topics=[]).brokers)
        finally:
            client.close()

    def stop(self) -> None:
        if self.proc is not None and self.proc.poll() is None:
            self.proc.kill()
            self.proc.wait(30)
