"""Prometheus metrics, served over HTTP when ``kafkapy.metrics.port`` is 0 or more.

Counters are module-level so the hot path pays one attribute lookup and one
increment; per-API children are resolved once (``api_requests``), not per
request.
"""
from __future__ import annotations

from functools import lru_cache

import prometheus_client as prom
import structlog

_log = structlog.get_logger("kafkapy.metrics")

REQUESTS = prom.Counter("kafkapy_requests", "Requests handled, by API", ["api"])
CONNECTIONS = prom.Gauge("kafkapy_connections", "Open client connections")
SENDFILE_BYTES = prom.Counter("kafkapy_fetch_sendfile_bytes",
                              "Record bytes sent from segment files with os.sendfile")
FALLBACK_BYTES = prom.Counter("kafkapy_fetch_copied_bytes",
                              "Record bytes read into memory and written (no sendfile)")
PRODUCE_BYTES = prom.Counter("kafkapy_produce_bytes", "Record batch bytes appended")
# Kafka's ReplicaManager IsrShrinksPerSec / IsrExpandsPerSec / FailedIsrUpdatesPerSec
# (counted when the controller's answer is applied) and UnderReplicatedPartitions
# (a function of the replica manager, set by the AlterPartitionManager).
ISR_SHRINKS = prom.Counter("kafkapy_isr_shrinks", "ISR shrinks committed by the controller")
ISR_EXPANDS = prom.Counter("kafkapy_isr_expands", "ISR expansions committed by the controller")
ISR_UPDATE_FAILURES = prom.Counter("kafkapy_failed_isr_updates",
                                   "ISR changes the controller refused or answered stale")
UNDER_REPLICATED_PARTITIONS = prom.Gauge(
    "kafkapy_under_replicated_partitions",
    "Partitions this broker leads with fewer in-sync replicas than assigned")


@lru_cache(maxsize=None)
def api_requests(api: str):
    return REQUESTS.labels(api=api)


def serve(port: int, addr: str = "127.0.0.1") -> int | None:
    """Start the metrics HTTP endpoint; returns the port, or None when disabled."""
    if port is None or port < 0:
        return None
    server, _ = prom.start_http_server(port, addr=addr)
    bound = server.server_address[1]
    _log.info("metrics endpoint", port=bound)
    return bound
