"""Prometheus scrapes of a broker's /metrics: the samples and one sample's value."""
from __future__ import annotations

import time
import urllib.error
import urllib.request

from prometheus_client.parser import text_string_to_metric_families

from tests.support.broker_process import BrokerProcess


def scrape(broker: BrokerProcess) -> dict[tuple[str, tuple], float]:
    """{(sample name, sorted labels): value} from the broker's metrics endpoint (which
    opens just after the broker's listener: a refused connection is retried, bounded)."""
    url = f"http://127.0.0.1:{broker.metrics_port}/metrics"
    for attempt in range(100):
        try:
            with urllib.request.urlopen(url, timeout=10) as response:
                text = response.read().decode()
            break
        except urllib.error.URLError as err:
            if not isinstance(err.reason, ConnectionRefusedError) or attempt == 99:
                raise
            time.sleep(0.05)
    return {(s.name, tuple(sorted(s.labels.items()))): s.value
            for family in text_string_to_metric_families(text) for s in family.samples}


def value(samples: dict, name: str, **labels) -> float:
    return samples.get((name, tuple(sorted(labels.items()))), 0.0)
