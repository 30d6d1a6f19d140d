"""The scrape: Kafka's metric names, as the Prometheus JMX exporter's Kafka rules make them.

Names follow ``examples/kafka-2_0_0.yml`` (formerly ``example_configs/``) of
prometheus/jmx_exporter applied to Kafka's MBeans (lower-cased names, label names as
Kafka's MBean keys; the per-client quota rules in ``_quota_families``):
- a Meter ``kafka.X<type=T, name=NPerSec, k=v>`` -> counter ``kafka_X_T_N_total{k}``;
- a Gauge ``kafka.X<type=T, name=N, k=v>`` -> gauge ``kafka_X_T_N{k}``;
- a Histogram -> ``kafka_X_T_N{quantile="0.50".."0.999"}`` plus ``kafka_X_T_N_count``
  (a summary; ``_sum`` is added, the rules lack it);
- consumer-group lag has no broker MBean: it takes danielqsj/kafka_exporter's names
  (``kafka_consumergroup_lag{consumergroup,topic,partition}`` = high watermark minus the
  committed offset), for the groups this broker coordinates and the partitions it hosts.

What it reads: the broker hands the collector each part it reads, typed by the
protocols below (what the scrape reads of each, nothing more), so this lowest layer
imports none of them.

Invariants:
- Everything that is a state (sizes, counts, lag, idle) is computed here, at scrape
  time, never maintained on the hot path; the counters come from
  ``kafkapy.metrics.counters``.
- The HTTP server runs in its own thread; the broker's state is single-owner on the
  event loop, so ``collect`` hands the whole walk to the loop (``call_soon_threadsafe``)
  and waits for it (bounded).  A broker whose loop is gone answers only the process
  metrics.
- NetworkProcessorAvgIdlePercent is 1 - (CPU time of the loop's thread / wall time)
  between two scrapes (first: since the endpoint started): the loop is kafkapy's network
  processor and request handler in one.  A loop blocked on disk counts as idle.
"""
from __future__ import annotations

import asyncio
import concurrent.futures
import re
import time
from typing import Callable, Collection, Container, Iterable, Mapping, Protocol, Sequence, Sized

from prometheus_client.core import (CounterMetricFamily, GaugeMetricFamily, Metric,
                                    SummaryMetricFamily)
from prometheus_client.samples import Sample

from kafkapy.metrics import counters as C
from kafkapy.protocol.topic_partition import TopicPartition

_SCRAPE_TIMEOUT_S = 10.0
# Kafka's histogram percentiles, named as the rules name them (quantile "0.$N").
_QUANTILES = ((0.50, "0.50"), (0.75, "0.75"), (0.95, "0.95"), (0.98, "0.98"), (0.99, "0.99"),
              (0.999, "0.999"))
_MIN_IDLE_WINDOW_S = 0.5
_RUNNING = 3    # Kafka's BrokerState.RUNNING


# -- what the scrape reads ----------------------------------------------------------------------
class TopicNames(Protocol):
    """The metadata cache: the topics that exist (a deleted one's counters retire)."""
    @property
    def topics(self) -> Container[str]: ...


class Listener(Protocol):
    """A listener's socket server."""
    @property
    def connection_count(self) -> int: ...

    def inflight_requests(self) -> int: ...


class PartitionLog(Protocol):
    @property
    def offline(self) -> bool: ...

    @property
    def high_watermark(self) -> int: ...


class ReplicaSets(Protocol):
    """A partition's state as the controller gave it."""
    @property
    def replicas(self) -> Sized: ...

    @property
    def isr(self) -> Sized: ...


class HostedPartition(Protocol):
    @property
    def log(self) -> PartitionLog: ...

    @property
    def state(self) -> ReplicaSets: ...

    @property
    def is_leader(self) -> bool: ...

    @property
    def effective_min_isr(self) -> int: ...


class HostedPartitions(Protocol):
    """The replica manager: the partitions this broker hosts."""
    @property
    def partitions(self) -> Mapping[TopicPartition, HostedPartition]: ...


class Segment(Protocol):
    @property
    def size(self) -> int: ...


class LogView(Protocol):
    @property
    def segments(self) -> Sequence[Segment]: ...

    @property
    def log_end_offset(self) -> int: ...

    @property
    def log_start_offset(self) -> int: ...


class Logs(Protocol):
    """The log manager: every current log, and the log dirs gone offline."""
    @property
    def logs(self) -> Mapping[TopicPartition, LogView]: ...

    @property
    def offline_dirs(self) -> Collection[str]: ...


class ControllerCounts(Protocol):
    """The active controller's view of the cluster."""
    @property
    def assignments(self) -> Sized: ...

    def offline_partition_count(self) -> int: ...

    def partition_count(self) -> int: ...

    def preferred_replica_imbalance_count(self) -> int: ...


class Controller(Protocol):
    @property
    def is_active(self) -> bool: ...

    @property
    def ctx(self) -> ControllerCounts: ...


class PurgatoryCounts(Protocol):
    @property
    def name(self) -> str: ...

    @property
    def watched_count(self) -> int: ...

    @property
    def num_delayed(self) -> int: ...


class CommittedOffset(Protocol):
    @property
    def offset(self) -> int: ...


class Group(Protocol):
    """A consumer group this broker coordinates."""
    @property
    def members(self) -> Sized: ...

    @property
    def offsets(self) -> Mapping[TopicPartition, CommittedOffset]: ...


class ClientQuotaSensors(Protocol):
    """The client quotas: (resource, user, client id, byte rate, average throttle ms) per
    sensor, the tags a component does not have being ""."""
    def sensor_values(self) -> Iterable[tuple[str, str, str, float, float]]: ...


class ControllerMutationSensors(Protocol):
    """The controller mutation quota: (user, client id, mutation rate, tokens, average
    throttle ms) per sensor."""
    def sensor_values(self) -> Iterable[tuple[str, str, float, float, float]]: ...


class BrokerCollector:
    """A prometheus_client collector for one broker (see the module docstring); made on
    the broker's event loop, which every scrape then runs on."""

    def __init__(self, *, cache: TopicNames, listeners: Sequence[Listener],
                 replica_manager: HostedPartitions, log_manager: Logs, controller: Controller,
                 purgatories: Iterable[PurgatoryCounts],
                 groups: Callable[[], Mapping[str, Group]],
                 client_quotas: ClientQuotaSensors | None = None,
                 controller_mutation: ControllerMutationSensors | None = None) -> None:
        """``purgatories`` in the order their samples are listed; ``groups``: the groups
        this broker coordinates, by id, as they are at the scrape."""
        self._loop = asyncio.get_running_loop()
        self._cache = cache
        self._listeners = tuple(listeners)
        self._replica_manager = replica_manager
        self._log_manager = log_manager
        self._controller = controller
        self._purgatories = tuple(purgatories)
        self._groups = groups
        self._client_quotas = client_quotas
        self._controller_mutation = controller_mutation
        self._idle = _IdleMeter()

    def collect(self):
        loop = self._loop
        if loop.is_closed():
            return []
        try:
            if asyncio.get_running_loop() is loop:     # called on the loop itself (tests)
                return self.families()
        except RuntimeError:
            pass
        future: concurrent.futures.Future = concurrent.futures.Future()

        def run() -> None:
            try:
                future.set_result(self.families())
            except BaseException as exc:    # handed to the scraping thread
                future.set_exception(exc)
        try:
            loop.call_soon_threadsafe(run)
            return future.result(timeout=_SCRAPE_TIMEOUT_S)
        except (RuntimeError, concurrent.futures.TimeoutError):
            return []

    def families(self) -> list[Metric]:
        """Every family, read on the event loop."""
        partitions = self._replica_manager.partitions
        out: list[Metric] = []
        out += _topic_families(self._cache)
        out += _request_families()
        out += _network_families(self._listeners, self._idle.sample())
        out += _replica_manager_families(partitions)
        out += _controller_families(self._controller)
        out += _log_families(self._log_manager)
        out += _purgatory_families(self._purgatories)
        out += _group_families(self._groups(), partitions)
        out += _compat_families(self._listeners)
        if self._client_quotas is not None:
            out += _quota_families(self._client_quotas, self._controller_mutation)
        out.append(_gauge("kafka_server_kafkaserver_brokerstate",
                          "Kafka's BrokerState (3: running)", _RUNNING))
        return out


# -- client quotas -----------------------------------------------------------------------
# The per-client attribute besides throttle-time, by the MBean's type (Kafka's QuotaType).
_QUOTA_RATES = {"Produce": "byte_rate", "Fetch": "byte_rate", "Request": "request_time",
                "ControllerMutation": "mutation_rate"}
_QUOTA_DOCS = {"byte_rate": "Bytes per second of a client quota's sensor",
               "request_time": "Event-loop time of a client's requests, percent "
                               "(Kafka's request-time: percent of one request handler thread)",
               "mutation_rate": "Partition mutations per second of a client quota's sensor"}
_THROTTLE_DOC = "Average throttle time (ms) of a client quota's sensor"
# Sanitizer.jmxSanitize: a tag value outside these characters is quoted (ObjectName.quote)
_JMX_PLAIN = re.compile(r"[\w\-%. \t]*", re.ASCII)


def _quota_families(quotas: ClientQuotaSensors,
                    mutations: ControllerMutationSensors | None = None) -> list[Metric]:
    """Kafka's ``kafka.server<type=Produce|Fetch|Request, user=U, client-id=C>`` byte-rate
    (Request: request-time) and throttle-time, as the exporter's quota rules name them:
    ``kafka_server_quota_<attribute>{resource, user, clientId}``.  Kafka leaves an empty
    tag out of the MBean name, and the rules then match ``type, client-id`` or
    ``type, user`` only, so an empty user or client id has no label here; a sensor with
    neither (an empty client id under client-id quotas) matches no rule and is not
    exported.  ``mutations``: the controller mutation quota's sensors,
    ``type=ControllerMutation`` with mutation-rate, tokens and throttle-time."""
    families: dict[str, GaugeMetricFamily] = {}

    def family(attribute: str, doc: str) -> GaugeMetricFamily:
        found = families.get(attribute)
        if found is None:
            found = families[attribute] = GaugeMetricFamily(
                f"kafka_server_quota_{attribute}", doc, labels=())
        return found

    def add(resource: str, user: str, client_id: str, values) -> None:
        if not user and not client_id:
            return
        labels = {"resource": resource}
        if user:
            labels["user"] = _jmx_sanitize(user)
        if client_id:
            labels["clientId"] = _jmx_sanitize(client_id)
        for name, value, doc in values:
            metric = family(name, doc)
            metric.samples.append(Sample(metric.name, labels, value))

    for resource, user, client_id, rate, throttle_ms in quotas.sensor_values():
        attribute = _QUOTA_RATES.get(resource, "byte_rate")
        add(resource, user, client_id, ((attribute, rate, _QUOTA_DOCS[attribute]),
                                        ("throttle_time", throttle_ms, _THROTTLE_DOC)))
    for user, client_id, per_s, tokens, throttle_ms in (
            mutations.sensor_values() if mutations is not None else ()):
        add("ControllerMutation", user, client_id, (
            ("mutation_rate", per_s, _QUOTA_DOCS["mutation_rate"]),
            ("tokens", tokens, "Tokens left in a controller mutation quota's bucket"),
            ("throttle_time", throttle_ms, _THROTTLE_DOC)))
    return list(families.values())


def _jmx_sanitize(value: str) -> str:
    """Java's Sanitizer.jmxSanitize: as is, or quoted as ObjectName.quote quotes."""
    if _JMX_PLAIN.fullmatch(value):
        return value
    escaped = (value.replace("\\", "\\\\").replace('"', '\\"').replace("*", "\\*")
               .replace("?", "\\?").replace("\n", "\\n"))
    return f'"{escaped}"'


# -- BrokerTopicMetrics -------------------------------------------------------------------
def _topic_families(cache: TopicNames) -> list[Metric]:
    C.retire_topics(cache.topics)
    total = C.all_topics()
    families = []
    for attr, name, doc in (
            ("messages_in", "messagesin", "Records appended as leader (MessagesInPerSec)"),
            ("bytes_in", "bytesin", "Record batch bytes appended as leader (BytesInPerSec)"),
            ("bytes_out", "bytesout", "Record bytes sent to consumers (BytesOutPerSec)")):
        family = CounterMetricFamily(f"kafka_server_brokertopicmetrics_{name}", doc,
                                     labels=["topic"])
        family.samples.append(Sample(family.name + "_total", {}, getattr(total, attr)))
        for topic, counters in sorted(C.TOPICS.items()):
            family.add_metric([topic], getattr(counters, attr))
        families.append(family)
    b = C.BROKER
    families.append(_counter("kafka_server_brokertopicmetrics_replicationbytesin",
                             "Bytes appended as follower (ReplicationBytesInPerSec)",
                             b.replication_bytes_in))
    families.append(_counter("kafka_server_brokertopicmetrics_replicationbytesout",
                             "Record bytes sent to followers (ReplicationBytesOutPerSec)",
                             b.replication_bytes_out))
    return families


# -- RequestMetrics -------------------------------------------------------------------------
def _request_families() -> list[Metric]:
    requests = CounterMetricFamily("kafka_network_requestmetrics_requests",
                                   "Requests answered, by API and version (RequestsPerSec)",
                                   labels=["request", "version"])
    total = SummaryMetricFamily("kafka_network_requestmetrics_totaltimems",
                                "Milliseconds from a request read to its answer written, "
                                "over the latest requests (TotalTimeMs)", labels=["request"])
    for stats in sorted(C.all_api_stats(), key=lambda s: s.name):
        if not stats.count:
            continue
        for version, count in enumerate(stats.versions):
            if count:
                requests.add_metric([stats.name, str(version)], count)
        total.add_metric([stats.name], stats.count, stats.total_ms)
        for label, value in _percentiles(stats.samples()):
            total.samples.append(Sample(total.name, {"request": stats.name, "quantile": label},
                                        value))
    return [requests, total]


def _percentiles(values: list[float]):
    """(quantile label, value) as Yammer's Snapshot.getValue: the nearest rank."""
    values = sorted(values)
    n = len(values)
    for q, label in _QUANTILES:
        pos = q * (n + 1)
        if pos < 1:
            yield label, values[0]
        elif pos >= n:
            yield label, values[-1]
        else:
            low = values[int(pos) - 1]
            yield label, low + (pos - int(pos)) * (values[int(pos)] - low)


# -- SocketServer / RequestChannel --------------------------------------------------------------
def _network_families(listeners: Sequence[Listener], idle: float) -> list[Metric]:
    inflight = sum(listener.inflight_requests() for listener in listeners)
    return [
        _gauge("kafka_network_socketserver_networkprocessoravgidlepercent",
               "Fraction of time the event loop was idle (NetworkProcessorAvgIdlePercent)",
               idle),
        _gauge("kafka_network_requestchannel_requestqueuesize",
               "Requests read and not yet answered (RequestQueueSize)", inflight),
    ]


# -- ReplicaManager ------------------------------------------------------------------------------
def _replica_manager_families(hosted: Mapping[TopicPartition, HostedPartition]
                              ) -> list[Metric]:
    partitions = list(hosted.values())
    leaders = under = under_min = at_min = offline = 0
    for p in partitions:
        if p.log.offline:
            offline += 1
        if not p.is_leader:
            continue
        leaders += 1
        isr = len(p.state.isr)
        if isr < len(p.state.replicas):
            under += 1
        min_isr = p.effective_min_isr
        if isr < min_isr:
            under_min += 1
        elif isr == min_isr:
            at_min += 1
    b = C.BROKER
    prefix = "kafka_server_replicamanager_"
    return [
        _gauge(prefix + "partitioncount", "Partitions hosted here (PartitionCount)",
               len(partitions)),
        _gauge(prefix + "leadercount", "Partitions led here (LeaderCount)", leaders),
        _gauge(prefix + "underreplicatedpartitions",
               "Led partitions with fewer in-sync than assigned replicas", under),
        _gauge(prefix + "underminisrpartitioncount",
               "Led partitions below min.insync.replicas", under_min),
        _gauge(prefix + "atminisrpartitioncount",
               "Led partitions exactly at min.insync.replicas", at_min),
        _gauge(prefix + "offlinereplicacount", "Replicas whose log dir is offline", offline),
        _counter(prefix + "isrshrinks", "ISR shrinks committed (IsrShrinksPerSec)",
                 b.isr_shrinks),
        _counter(prefix + "isrexpands", "ISR expansions committed (IsrExpandsPerSec)",
                 b.isr_expands),
        _counter(prefix + "failedisrupdates",
                 "ISR changes refused or answered stale (FailedIsrUpdatesPerSec)",
                 b.failed_isr_updates),
    ]


# -- KafkaController ----------------------------------------------------------------------------
def _controller_families(controller: Controller) -> list[Metric]:
    active = controller.is_active
    offline = topics = partitions = imbalance = 0
    if active:
        ctx = controller.ctx
        offline = ctx.offline_partition_count()
        topics = len(ctx.assignments)
        partitions = ctx.partition_count()
        imbalance = ctx.preferred_replica_imbalance_count()
    prefix = "kafka_controller_kafkacontroller_"
    return [
        _gauge(prefix + "activecontrollercount", "1 on the active controller", int(active)),
        _gauge(prefix + "offlinepartitionscount", "Partitions without a live leader", offline),
        _gauge(prefix + "globaltopiccount", "Topics (active controller)", topics),
        _gauge(prefix + "globalpartitioncount", "Partitions (active controller)", partitions),
        _gauge(prefix + "preferredreplicaimbalancecount",
               "Partitions not led by their preferred replica", imbalance),
    ]


# -- Log / LogManager ---------------------------------------------------------------------------
def _log_families(manager: Logs) -> list[Metric]:
    names = (("size", "Bytes of the partition's segments (Size)"),
             ("logendoffset", "Log end offset (LogEndOffset)"),
             ("logstartoffset", "Log start offset (LogStartOffset)"),
             ("numlogsegments", "Segments (NumLogSegments)"))
    families = [GaugeMetricFamily(f"kafka_log_log_{n}", doc, labels=["topic", "partition"])
                for n, doc in names]
    for (topic, index), log in sorted(manager.logs.items()):
        labels = [topic, str(index)]
        segments = log.segments
        families[0].add_metric(labels, sum(s.size for s in segments))
        families[1].add_metric(labels, log.log_end_offset)
        families[2].add_metric(labels, log.log_start_offset)
        families[3].add_metric(labels, len(segments))
    families.append(_gauge("kafka_log_logmanager_offlinelogdirectorycount",
                           "Log dirs offline after an I/O error", len(manager.offline_dirs)))
    return families


# -- DelayedOperationPurgatory -------------------------------------------------------------------
def _purgatory_families(purgatories: Iterable[PurgatoryCounts]) -> list[Metric]:
    size = GaugeMetricFamily("kafka_server_delayedoperationpurgatory_purgatorysize",
                             "Watcher entries of delayed operations (PurgatorySize)",
                             labels=["delayedOperation"])
    delayed = GaugeMetricFamily("kafka_server_delayedoperationpurgatory_numdelayedoperations",
                                "Delayed operations waiting (NumDelayedOperations)",
                                labels=["delayedOperation"])
    for purgatory in purgatories:
        size.add_metric([purgatory.name], purgatory.watched_count)
        delayed.add_metric([purgatory.name], purgatory.num_delayed)
    return [size, delayed]


# -- groups: GroupMetadataManager and the lag exporters' names -----------------------------------
def _group_families(by_id: Mapping[str, Group],
                    partitions: Mapping[TopicPartition, HostedPartition]) -> list[Metric]:
    current = GaugeMetricFamily("kafka_consumergroup_current_offset",
                                "Committed offset of a group", labels=["consumergroup", "topic",
                                                                       "partition"])
    lag = GaugeMetricFamily("kafka_consumergroup_lag",
                            "High watermark minus the committed offset (partitions hosted here)",
                            labels=["consumergroup", "topic", "partition"])
    lag_sum = GaugeMetricFamily("kafka_consumergroup_lag_sum", "Lag summed over a topic",
                                labels=["consumergroup", "topic"])
    members = GaugeMetricFamily("kafka_consumergroup_members", "Members of a group",
                                labels=["consumergroup"])
    offsets = 0
    for group_id, group in sorted(by_id.items()):
        members.add_metric([group_id], len(group.members))
        sums: dict[str, int] = {}
        for (topic, index), committed in sorted(group.offsets.items()):
            offsets += 1
            labels = [group_id, topic, str(index)]
            current.add_metric(labels, committed.offset)
            partition = partitions.get((topic, index))
            if partition is None or committed.offset < 0:
                continue
            behind = partition.log.high_watermark - committed.offset
            lag.add_metric(labels, behind)
            sums[topic] = sums.get(topic, 0) + behind
        for topic, total in sorted(sums.items()):
            lag_sum.add_metric([group_id, topic], total)
    prefix = "kafka_coordinator_group_groupmetadatamanager_"
    return [current, lag, lag_sum, members,
            _gauge(prefix + "numgroups", "Groups this broker coordinates", len(by_id)),
            _gauge(prefix + "numoffsets", "Committed offsets of those groups", offsets)]


# -- kafkapy's earlier names (kept: tests and existing scrapes use them) ----------------------
def _compat_families(listeners: Sequence[Listener]) -> list[Metric]:
    requests = CounterMetricFamily("kafkapy_requests", "Requests handled, by API",
                                   labels=["api"])
    for key, stats in sorted(C.APIS.items()):
        requests.add_metric([stats.name], stats.count)
    b = C.BROKER
    return [
        requests,
        _gauge("kafkapy_connections", "Open client connections",
               sum(listener.connection_count for listener in listeners)),
        _counter("kafkapy_fetch_sendfile_bytes",
                 "Record bytes sent from segment files with os.sendfile", b.sendfile_bytes),
        _counter("kafkapy_fetch_copied_bytes",
                 "Record bytes read into memory and written (no sendfile)", b.copied_bytes),
    ]


def _gauge(name: str, doc: str, value: float) -> GaugeMetricFamily:
    return GaugeMetricFamily(name, doc, value=value)


def _counter(name: str, doc: str, value: float) -> CounterMetricFamily:
    return CounterMetricFamily(name, doc, value=value)


class _IdleMeter:
    """1 - busy fraction of the loop thread's CPU between samples (taken on the loop)."""

    def __init__(self) -> None:
        self._wall = time.monotonic()
        self._cpu = time.thread_time()
        self._value = 1.0

    def sample(self) -> float:
        wall, cpu = time.monotonic(), time.thread_time()
        elapsed = wall - self._wall
        if elapsed >= _MIN_IDLE_WINDOW_S:   # two scrapes close together keep the last value
            busy = (cpu - self._cpu) / elapsed
            self._value = min(1.0, max(0.0, 1.0 - busy))
            self._wall, self._cpu = wall, cpu
        return self._value
