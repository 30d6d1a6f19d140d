"""Every metric on the Prometheus endpoint (``kafkapy.metrics.port``) counts something real.

A broker process serves its metrics on a free loopback port; the tests scrape it over HTTP
and compare each metric with what happened, known independently of the broker's counters:

- ``kafka_server_brokertopicmetrics_bytesin_total{topic}``: the record batch bytes the topic's
  segment files hold after a stock client produced (a produced batch is stored whole, so
  the two agree);
- ``kafkapy_fetch_sendfile_bytes_total`` / ``kafkapy_fetch_copied_bytes_total``: at least those
  bytes after a stock consumer read them all back, on the counter of the configured path
  (``kafkapy.fetch.sendfile.enable``), and nothing on the other;
- ``kafkapy_requests_total{api=...}``: grows by exactly the requests a raw socket client sent;
- ``kafkapy_connections``: the raw connections open (a closed one goes once the broker saw
  the close: polled in a bounded loop, as the broker learns of it asynchronously).
"""
from __future__ import annotations

import time
from pathlib import Path

import pytest

from tests.support.broker_process import BrokerProcess, free_port
from tests.support.client_common import produce_values, read_values
from tests.support.metrics import scrape, value
from tests.support.wire import WireClient

METADATA = 3
VALUES = [f"value-{i:04d}".encode() * 10 for i in range(200)]


def _start(base: Path, sendfile: bool) -> BrokerProcess:
    port = free_port()
    broker = BrokerProcess(base / "logs", overrides={
        "kafkapy.metrics.port": str(port),
        "kafkapy.fetch.sendfile.enable": "true" if sendfile else "false"})
    broker.metrics_port = port
    return broker.start()


@pytest.fixture(scope="module")
def sendfile_broker(tmp_path_factory):
    broker = _start(tmp_path_factory.mktemp("metrics-sendfile"), sendfile=True)
    yield broker
    broker.stop()


@pytest.fixture(scope="module")
def copying_broker(tmp_path_factory):
    broker = _start(tmp_path_factory.mktemp("metrics-copy"), sendfile=False)
    yield broker
    broker.stop()


def stored_bytes(broker: BrokerProcess, topic: str) -> int:
    return sum(f.stat().st_size for f in (broker.log_dir / f"{topic}-0").glob("*.log"))


BYTES_IN = "kafka_server_brokertopicmetrics_bytesin_total"


def test_produce_bytes_count_the_batches_appended_and_fetches_what_was_sent(sendfile_broker):
    before = scrape(sendfile_broker)
    assert value(before, BYTES_IN, topic="metrics-produce") == 0
    produce_values(sendfile_broker.bootstrap, "metrics-produce", VALUES)
    stored = stored_bytes(sendfile_broker, "metrics-produce")
    assert stored > 0
    assert value(scrape(sendfile_broker), BYTES_IN, topic="metrics-produce") == stored

    assert read_values(sendfile_broker.bootstrap, "metrics-produce", len(VALUES)) == VALUES
    after = scrape(sendfile_broker)
    assert value(after, "kafkapy_fetch_sendfile_bytes_total") >= stored
    assert value(after, "kafkapy_fetch_copied_bytes_total") == 0
    # Reading is not producing: the bytes appended are unchanged.
    assert value(after, BYTES_IN, topic="metrics-produce") == stored
    for api in ("Produce", "Fetch", "Metadata"):
        assert value(after, "kafkapy_requests_total", api=api) >= 1, api


def test_copied_fetch_bytes_without_sendfile(copying_broker):
    produce_values(copying_broker.bootstrap, "metrics-copy", VALUES)
    stored = stored_bytes(copying_broker, "metrics-copy")
    assert read_values(copying_broker.bootstrap, "metrics-copy", len(VALUES)) == VALUES
    after = scrape(copying_broker)
    assert value(after, "kafkapy_fetch_copied_bytes_total") >= stored > 0
    assert value(after, "kafkapy_fetch_sendfile_bytes_total") == 0


def test_requests_and_connections_follow_a_raw_client(copying_broker):
    # Earlier tests' clients have closed; wait until the broker has seen them go.
    assert connections_reach(copying_broker, 0)
    before = scrape(copying_broker)
    first, second = WireClient(copying_broker.bootstrap), WireClient(copying_broker.bootstrap)
    try:
        for _ in range(3):
            assert first.request(METADATA, 1, topics=[]).brokers
        assert second.request(METADATA, 1, topics=[]).brokers
        during = scrape(copying_broker)
        assert (value(during, "kafkapy_requests_total", api="Metadata")
                == value(before, "kafkapy_requests_total", api="Metadata") + 4)
        # Both connections answered a request, so the broker has counted them.
        assert value(during, "kafkapy_connections") == 2
    finally:
        first.close()
    assert connections_reach(copying_broker, 1)
    second.close()


def connections_reach(broker: BrokerProcess, expected: float) -> bool:
    """The gauge drops to ``expected`` once the broker has seen the close (bounded wait)."""
    for _ in range(600):
        if value(scrape(broker), "kafkapy_connections") == expected:
            return True
        time.sleep(0.05)
    return False
