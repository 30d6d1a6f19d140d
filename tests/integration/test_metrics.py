"""Kafka's metric names on kafkapy's Prometheus endpoint, checked against a known workload.

One broker process (embedded store) serves ``kafkapy.metrics.port``.  A stock client
(kafka-python) produces N records of known sizes one batch at a time, a consumer group
reads them all and commits offset K, then the scrape is compared with what happened,
known independently of the broker's counters:
- ``kafka_server_brokertopicmetrics_messagesin_total{topic}`` = N; ``bytesin`` = the bytes
  of the topic's segment files = ``kafka_log_log_size``; ``bytesout`` >= those bytes (the
  consumer read them all); the all-topics series (no ``topic`` label) at least as much;
- ``kafka_log_log_logendoffset`` = N, ``logstartoffset`` = 0, ``numlogsegments`` = the
  segment files;
- ``kafka_consumergroup_current_offset`` = K and ``kafka_consumergroup_lag`` = N - K;
- ``kafka_network_requestmetrics_requests_total{request="Produce"}`` >= N, the
  TotalTimeMs summary has Kafka's quantile labels and a count >= N; a Fetch counts under
  Fetch and FetchConsumer;
- single broker: partition count = leader count, nothing under-replicated or offline,
  one active controller;
- a fetch waiting in the purgatory shows in ``purgatorysize{delayedOperation="Fetch"}``;
- a deleted topic's series go; the all-topics totals stay;
- every metric an expression of ``docker/grafana/kafkapy-dashboard.json`` names is in a
  scrape (the per-client quota series once every client id has quotas far above its use).
Waits are bounded loops (the broker learns of closes and deletions asynchronously).
"""
from __future__ import annotations

import json
import re
import threading
import time
from pathlib import Path

import pytest
from kafka import KafkaAdminClient, KafkaConsumer, KafkaProducer, OffsetAndMetadata, TopicPartition

from tests.support.broker_process import BrokerProcess, free_port
from tests.support.metrics import scrape, value
from tests.support.wire import WireClient

TOPIC = "metrics-known"
GROUP = "metrics-group"
N = 40
K = 15
VALUES = [bytes([65 + i % 26]) * (10 + 7 * i) for i in range(N)]
DASHBOARD = Path(__file__).resolve().parents[2] / "docker" / "grafana" / "kafkapy-dashboard.json"
QUANTILES = {"0.50", "0.75", "0.95", "0.98", "0.99", "0.999"}


@pytest.fixture(scope="module")
def broker(tmp_path_factory):
    port = free_port()
    process = BrokerProcess(tmp_path_factory.mktemp("metrics") / "logs", overrides={
        "kafkapy.metrics.port": str(port), "kafkapy.metrics.host": "127.0.0.1",
        "offsets.topic.num.partitions": "3"})
    process.metrics_port = port
    process.start()
    yield process
    process.stop()


@pytest.fixture(scope="module")
def workload(broker):
    """N records one batch each (every send waited for), the group's read and commit."""
    producer = KafkaProducer(bootstrap_servers=broker.bootstrap, acks=1, linger_ms=0)
    try:
        for v in VALUES:
            producer.send(TOPIC, v).get(timeout=10)
    finally:
        producer.close()
    consumer = KafkaConsumer(TOPIC, bootstrap_servers=broker.bootstrap, group_id=GROUP,
                             auto_offset_reset="earliest", enable_auto_commit=False)
    read = []
    deadline = time.monotonic() + 30
    while len(read) < N and time.monotonic() < deadline:
        for records in consumer.poll(500).values():
            read += [r.value for r in records]
    consumer.commit({TopicPartition(TOPIC, 0): OffsetAndMetadata(K, None)})
    assert read == VALUES
    yield consumer
    consumer.close()


def _segment_files(broker) -> list[Path]:
    return sorted((broker.log_dir / f"{TOPIC}-0").glob("*.log"))


def _labelled(samples: dict, name: str) -> dict[tuple, float]:
    return {labels: v for (n, labels), v in samples.items() if n == name}


def test_topic_counters_and_log_gauges_match_the_workload(broker, workload):
    samples = scrape(broker)
    stored = sum(f.stat().st_size for f in _segment_files(broker))
    assert stored > sum(len(v) for v in VALUES)
    prefix = "kafka_server_brokertopicmetrics_"
    assert value(samples, prefix + "messagesin_total", topic=TOPIC) == N
    assert value(samples, prefix + "bytesin_total", topic=TOPIC) == stored
    assert value(samples, prefix + "bytesout_total", topic=TOPIC) >= stored
    # The all-topics series: no topic label (Kafka's allTopicsStats MBean); the group's
    # commit is an append to __consumer_offsets too.
    assert value(samples, prefix + "messagesin_total") > N
    assert value(samples, prefix + "bytesin_total") > stored
    assert value(samples, prefix + "bytesout_total") >= stored

    log = {"topic": TOPIC, "partition": "0"}
    assert value(samples, "kafka_log_log_size", **log) == stored
    assert value(samples, "kafka_log_log_logendoffset", **log) == N
    assert value(samples, "kafka_log_log_logstartoffset", **log) == 0
    assert value(samples, "kafka_log_log_numlogsegments", **log) == len(_segment_files(broker))


def test_group_offsets_and_lag(broker, workload):
    samples = scrape(broker)
    labels = {"consumergroup": GROUP, "topic": TOPIC, "partition": "0"}
    assert value(samples, "kafka_consumergroup_current_offset", **labels) == K
    assert value(samples, "kafka_consumergroup_lag", **labels) == N - K
    assert value(samples, "kafka_consumergroup_lag_sum", consumergroup=GROUP, topic=TOPIC) == N - K
    assert value(samples, "kafka_consumergroup_members", consumergroup=GROUP) == 1
    assert value(samples, "kafka_coordinator_group_groupmetadatamanager_numgroups") >= 1


def test_request_counts_and_latency_summaries(broker, workload):
    samples = scrape(broker)
    requests = _labelled(samples, "kafka_network_requestmetrics_requests_total")
    by_api: dict[str, float] = {}
    for labels, count in requests.items():
        d = dict(labels)
        assert set(d) == {"request", "version"} and d["version"].isdigit(), d
        by_api[d["request"]] = by_api.get(d["request"], 0) + count
    assert by_api["Produce"] >= N
    assert by_api["Fetch"] >= 1 and by_api["FetchConsumer"] >= 1
    assert by_api["Fetch"] == by_api["FetchConsumer"] + by_api.get("FetchFollower", 0)
    for api in ("Produce", "Fetch", "Metadata", "OffsetCommit"):
        assert by_api[api] == value(samples, "kafkapy_requests_total", api=api)   # old name
        count = value(samples, "kafka_network_requestmetrics_totaltimems_count", request=api)
        assert count == by_api[api], api
        assert value(samples, "kafka_network_requestmetrics_totaltimems_sum", request=api) > 0
        quantiles = {dict(labels)["quantile"]: v for labels, v in
                     _labelled(samples, "kafka_network_requestmetrics_totaltimems").items()
                     if dict(labels)["request"] == api}
        assert set(quantiles) == QUANTILES, api
        ordered = [quantiles[q] for q in sorted(QUANTILES, key=float)]
        assert ordered == sorted(ordered) and ordered[0] >= 0, (api, ordered)


def test_broker_state_gauges_of_a_single_broker(broker, workload):
    samples = scrape(broker)
    partitions = value(samples, "kafka_server_replicamanager_partitioncount")
    assert partitions == 1 + 3      # the topic and __consumer_offsets' three partitions
    assert value(samples, "kafka_server_replicamanager_leadercount") == partitions
    for name in ("kafka_server_replicamanager_underreplicatedpartitions",
                 "kafka_server_replicamanager_offlinereplicacount",
                 "kafka_server_replicamanager_isrshrinks_total",
                 "kafka_controller_kafkacontroller_offlinepartitionscount",
                 "kafka_log_logmanager_offlinelogdirectorycount"):
        assert value(samples, name) == 0, name
    assert value(samples, "kafka_controller_kafkacontroller_activecontrollercount") == 1
    assert value(samples, "kafka_controller_kafkacontroller_globalpartitioncount") == partitions
    assert value(samples, "kafka_server_kafkaserver_brokerstate") == 3
    idle = value(samples, "kafka_network_socketserver_networkprocessoravgidlepercent")
    assert 0 <= idle <= 1


def test_a_waiting_fetch_is_in_the_purgatory(broker, workload):
    """A consumer long-polling past the log end waits in the fetch purgatory; the scrape
    sees it there (bounded: the consumer's poll lasts at most its wait)."""
    consumer = KafkaConsumer(bootstrap_servers=broker.bootstrap, fetch_max_wait_ms=5000,
                             enable_auto_commit=False)
    tp = TopicPartition(TOPIC, 0)
    consumer.assign([tp])
    consumer.seek(tp, N)
    stop = threading.Event()

    def poll():
        while not stop.is_set():
            consumer.poll(1000)
    thread = threading.Thread(target=poll, daemon=True)
    thread.start()
    try:
        seen = 0.0
        for _ in range(600):
            samples = scrape(broker)
            seen = value(samples, "kafka_server_delayedoperationpurgatory_numdelayedoperations",
                         delayedOperation="Fetch")
            if seen >= 1:
                break
            time.sleep(0.05)
        assert seen >= 1
        assert value(samples, "kafka_server_delayedoperationpurgatory_purgatorysize",
                     delayedOperation="Fetch") >= 1
    finally:
        stop.set()
        thread.join(15)
        consumer.close()


def test_a_deleted_topic_goes_and_the_totals_stay(broker, workload):
    producer = KafkaProducer(bootstrap_servers=broker.bootstrap, linger_ms=0)
    producer.send("metrics-doomed", b"x" * 100).get(timeout=10)
    producer.close()
    name = "kafka_server_brokertopicmetrics_messagesin_total"
    before = scrape(broker)
    assert value(before, name, topic="metrics-doomed") == 1
    total = value(before, name)
    admin = KafkaAdminClient(bootstrap_servers=broker.bootstrap)
    try:
        admin.delete_topics(["metrics-doomed"], timeout_ms=10000)
    finally:
        admin.close()
    for _ in range(600):
        after = scrape(broker)
        if (name, (("topic", "metrics-doomed"),)) not in after:
            break
        time.sleep(0.05)
    assert (name, (("topic", "metrics-doomed"),)) not in after
    assert value(after, name) >= total
    assert not [k for k in after if ("topic", "metrics-doomed") in k[1]]


def _dashboard_metric_names() -> set[str]:
    dashboard = json.loads(DASHBOARD.read_text())
    exprs = [t["expr"] for p in dashboard["panels"] for t in p.get("targets", [])]
    names = {re.match(r"label_values\(([a-zA-Z_:][a-zA-Z0-9_:]*)", v["query"]).group(1)
             for v in dashboard["templating"]["list"] if v["type"] == "query"}
    for expr in exprs:
        # metric names: identifiers not followed by "(" (functions), not label names
        # (inside {...} or by (...)), not PromQL keywords.
        stripped = re.sub(r"\{[^}]*\}", "", expr)
        stripped = re.sub(r"\b(by|without)\s*\([^)]*\)", "", stripped)
        stripped = re.sub(r"\[[^\]]*\]", "", stripped)
        for m in re.finditer(r"[a-zA-Z_:][a-zA-Z0-9_:]*", stripped):
            rest = stripped[m.end():].lstrip()
            if not rest.startswith("(") and m.group(0) not in ("by", "without", "on",
                                                              "ignoring", "and", "or"):
                names.add(m.group(0))
    return names


def _default_client_quotas(broker, value: float | None) -> None:
    """Quotas far above any use for every client id (the per-client quota series exist
    only for clients under a quota), or (None) none."""
    client = WireClient(broker.bootstrap)
    try:
        answer = client.request(49, 1, validate_only=False, entries=[(
            [("client-id", None)],
            [(key, value or 0.0, value is None)
             for key in ("producer_byte_rate", "request_percentage")])])
        assert [e[0] for e in answer.entries] == [0]
    finally:
        client.close()


def test_every_metric_of_the_grafana_dashboard_is_scraped(broker, workload):
    names = _dashboard_metric_names()
    assert len(names) >= 15, names
    assert all(n.startswith("kafka_") for n in names), names
    _default_client_quotas(broker, 1e12)
    try:
        producer = KafkaProducer(bootstrap_servers=broker.bootstrap, client_id="dashboard")
        try:
            deadline = time.monotonic() + 20
            while True:     # until the quotas reached the broker: the client's series show
                producer.send("metrics-dashboard", b"d").get(timeout=10)
                scraped = {name for name, _labels in scrape(broker)}
                if not names - scraped or time.monotonic() > deadline:
                    break
                time.sleep(0.2)
        finally:
            producer.close()
    finally:
        _default_client_quotas(broker, None)
    assert names - scraped == set()
