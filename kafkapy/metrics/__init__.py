"""Prometheus metrics with Kafka's names, served over HTTP when ``kafkapy.metrics.port`` >= 0.

- ``counters``: what the hot path counts (plain integers, one broker's loop writes them);
- ``collector``: the scrape, on the event loop, with the names the Prometheus JMX
  exporter's Kafka rules give Kafka's MBeans (and kafka_exporter's for group lag), of
  the broker parts it is handed (typed by its protocols: this layer imports none);
- ``serve``: the endpoint on ``kafkapy.metrics.host``:``kafkapy.metrics.port``, a
  prometheus_client HTTP server thread whose registry holds this broker's collector
  and the process's default registry (process_*, python_*, and module-level gauges).
- ``rate``: Kafka's sampled Rate and SimpleRate, which every quota measures with.

The full list of names is in ``docker/grafana/kafkapy-dashboard.json``'s queries and
``tests/integration/test_metrics.py``.
"""
from __future__ import annotations

import prometheus_client as prom
import structlog

from kafkapy.metrics import counters
from kafkapy.metrics.collector import BrokerCollector

_log = structlog.get_logger("kafkapy.metrics")

__all__ = ["counters", "serve", "BrokerCollector"]


class _ProcessDefaults:
    """The default registry's families, so one scrape has them too."""

    def collect(self):
        return prom.REGISTRY.collect()


def serve(collector: BrokerCollector, port: int, host: str = "127.0.0.1") -> int | None:
    """Start the metrics endpoint serving a broker's ``collector``; returns the bound port,
    or None when ``port`` is -1 (disabled).  An empty host binds every interface."""
    if port is None or port < 0:
        return None
    registry = prom.CollectorRegistry(auto_describe=False)
    registry.register(collector)
    registry.register(_ProcessDefaults())
    server, _thread = prom.start_http_server(port, addr=host or "0.0.0.0", registry=registry)
    bound = server.server_address[1]
    _log.info("metrics endpoint", host=host or "0.0.0.0", port=bound)
    return bound
