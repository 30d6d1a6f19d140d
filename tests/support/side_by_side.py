"""One Kafka 3.9 broker and one kafkapy broker side by side: each on a chroot of its own
(``/<prefix>-kafka-<random>``, ``/<prefix>-kafkapy-<random>``) of one ZooKeeper, so the
same requests can be sent to both and their znodes compared.  kafkapy serves its
Prometheus metrics on 127.0.0.1 (``SideBySide.kafkapy_metrics``); ``quota_metrics`` reads
its per-client quota series."""
from __future__ import annotations

import contextlib
import re
import urllib.request
import uuid
from dataclasses import dataclass
from pathlib import Path
from typing import Callable, Iterator

from kazoo.client import KazooClient

from tests.support.broker_process import BrokerProcess, free_port
from tests.support.sasl import _KafkaBroker

KINDS = ("kafka", "kafkapy")


@dataclass
class SideBySide:
    zk: KazooClient          # the ZooKeeper's root (both chroots below it)
    roots: dict[str, str]    # kind -> chroot
    kafka: _KafkaBroker
    kafkapy: BrokerProcess
    kafkapy_metrics: str     # kafkapy's /metrics URL


@contextlib.contextmanager
def side_by_side(tmp: Path, zookeeper_server, prefix: str,
                 kafka_overrides: Callable[[int], dict[str, str]] = lambda port: {},
                 kafkapy_overrides: Callable[[int], dict[str, str]] = lambda port: {},
                 ) -> Iterator[SideBySide]:
    """Both brokers started (Kafka on a PLAINTEXT listener at its port unless its overrides
    name listeners); each ``*_overrides(port)`` gets the broker's port.  Both are stopped
    afterwards, however the block ends."""
    zk = KazooClient(zookeeper_server.connect_string)
    zk.start()
    started = []
    try:
        roots = {kind: f"/{prefix}-{kind}-{uuid.uuid4().hex[:6]}" for kind in KINDS}
        for root in roots.values():
            zk.ensure_path(root)
        port = free_port()
        (tmp / "kafka").mkdir()
        plain = f"PLAINTEXT://127.0.0.1:{port}"
        kafka = _KafkaBroker(tmp / "kafka" / "logs", port=port, overrides={
            "listeners": plain, "advertised.listeners": plain, **kafka_overrides(port),
            "zookeeper.connect": zookeeper_server.connect_string + roots["kafka"]})
        kafka.start()
        started.append(kafka)
        our_port, metrics_port = free_port(), free_port()
        ours = BrokerProcess(tmp / "kafkapy" / "logs", port=our_port, overrides={
            "kafkapy.metrics.port": str(metrics_port), "kafkapy.metrics.host": "127.0.0.1",
            **kafkapy_overrides(our_port),
            "zookeeper.connect": zookeeper_server.connect_string + roots["kafkapy"]}).start()
        started.append(ours)
        yield SideBySide(zk, roots, kafka, ours, f"http://127.0.0.1:{metrics_port}/metrics")
    finally:
        for broker in started:
            broker.stop()
        zk.stop()


def quota_metrics(url: str) -> dict[tuple[str, str, str, str], float]:
    """kafkapy's ``kafka_server_quota_*`` samples by (name, resource, user, client id); the
    exporter's rules give no label for a tag Kafka leaves out (an empty one): "" here."""
    with urllib.request.urlopen(url, timeout=10) as answer:
        text = answer.read().decode()
    values = {}
    for line in text.splitlines():
        match = re.fullmatch(r'(kafka_server_quota_\w+)\{(.*)\} (\S+)', line)
        if match:
            labels = dict(re.findall(r'(\w+)="([^"]*)"', match.group(2)))
            values[(match.group(1), labels["resource"], labels.get("user", ""),
                    labels.get("clientId", ""))] = float(match.group(3))
    return values
