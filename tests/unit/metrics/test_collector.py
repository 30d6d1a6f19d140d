"""kafkapy.metrics.collector over small fakes of exactly the parts a scrape reads.

- the replica manager's gauges (leaders, under-replicated, min ISR, offline replicas);
- the controller's gauges only while it is active;
- the logs' sizes and offsets, the offline log dirs, the purgatories in the order given;
- consumer-group offsets and lag (high watermark minus the committed offset, only for
  partitions hosted here);
- the listeners' in-flight requests and connections;
- a scrape from another thread runs on the collector's loop; a closed loop answers nothing.
"""
from __future__ import annotations

import asyncio
from dataclasses import dataclass, field

from kafkapy.metrics.collector import BrokerCollector
from kafkapy.protocol.topic_partition import TopicPartition


@dataclass
class Cache:
    topics: dict = field(default_factory=dict)


@dataclass
class Listener:
    connection_count: int
    inflight: int

    def inflight_requests(self) -> int:
        return self.inflight


@dataclass
class PartitionLog:
    high_watermark: int
    offline: bool = False


@dataclass
class ReplicaSets:
    replicas: list[int]
    isr: list[int]


@dataclass
class Partition:
    log: PartitionLog
    state: ReplicaSets
    is_leader: bool
    effective_min_isr: int = 1


@dataclass
class ReplicaManager:
    partitions: dict = field(default_factory=dict)


@dataclass
class Segment:
    size: int


@dataclass
class Log:
    segments: list[Segment]
    log_end_offset: int
    log_start_offset: int = 0


@dataclass
class LogManager:
    logs: dict = field(default_factory=dict)
    offline_dirs: set = field(default_factory=set)


@dataclass
class ControllerContext:
    assignments: dict
    offline: int
    partitions: int
    imbalance: int

    def offline_partition_count(self) -> int:
        return self.offline

    def partition_count(self) -> int:
        return self.partitions

    def preferred_replica_imbalance_count(self) -> int:
        return self.imbalance


@dataclass
class Controller:
    ctx: ControllerContext
    is_active: bool = True


@dataclass
class Purgatory:
    name: str
    watched_count: int
    num_delayed: int


@dataclass
class Committed:
    offset: int


@dataclass
class Group:
    members: dict
    offsets: dict


def _partitions() -> dict:
    return {
        # led, one replica out of the ISR, below min ISR
        TopicPartition("a", 0): Partition(PartitionLog(40), ReplicaSets([1, 2, 3], [1]),
                                          is_leader=True, effective_min_isr=2),
        # led, exactly at min ISR
        TopicPartition("a", 1): Partition(PartitionLog(7), ReplicaSets([1, 2], [1, 2]),
                                          is_leader=True, effective_min_isr=2),
        # followed, its log dir offline
        TopicPartition("b", 0): Partition(PartitionLog(0, offline=True),
                                          ReplicaSets([2, 1], [2, 1]), is_leader=False),
    }


def _collector(controller: Controller, groups: dict) -> BrokerCollector:
    logs = LogManager({TopicPartition("a", 0): Log([Segment(100), Segment(23)], 40, 5)},
                      {"/dead"})
    return BrokerCollector(
        cache=Cache({"a": None, "b": None}),
        listeners=[Listener(connection_count=3, inflight=2), Listener(1, 0)],
        replica_manager=ReplicaManager(_partitions()), log_manager=logs,
        controller=controller,
        purgatories=[Purgatory("Produce", 4, 2), Purgatory("Fetch", 9, 5)],
        groups=lambda: groups)


def _samples(families) -> dict:
    return {(s.name, tuple(sorted(s.labels.items()))): s.value
            for family in families for s in family.samples}


def _active() -> Controller:
    return Controller(ControllerContext({"a": {}, "b": {}}, offline=1, partitions=3,
                                        imbalance=2))


async def test_scrape_reads_every_part():
    groups = {"g": Group(members={"m1": None, "m2": None},
                         offsets={TopicPartition("a", 0): Committed(30),
                                  TopicPartition("a", 1): Committed(7),
                                  TopicPartition("z", 0): Committed(3)})}
    got = _samples(_collector(_active(), groups).collect())

    def value(name, **labels):
        return got[(name, tuple(sorted(labels.items())))]
    rm = "kafka_server_replicamanager_"
    assert value(rm + "partitioncount") == 3 and value(rm + "leadercount") == 2
    assert value(rm + "underreplicatedpartitions") == 1
    assert value(rm + "underminisrpartitioncount") == 1
    assert value(rm + "atminisrpartitioncount") == 1
    assert value(rm + "offlinereplicacount") == 1
    kc = "kafka_controller_kafkacontroller_"
    assert value(kc + "activecontrollercount") == 1
    assert value(kc + "offlinepartitionscount") == 1
    assert value(kc + "globaltopiccount") == 2 and value(kc + "globalpartitioncount") == 3
    assert value(kc + "preferredreplicaimbalancecount") == 2
    assert value("kafka_log_log_size", topic="a", partition="0") == 123
    assert value("kafka_log_log_logendoffset", topic="a", partition="0") == 40
    assert value("kafka_log_log_logstartoffset", topic="a", partition="0") == 5
    assert value("kafka_log_log_numlogsegments", topic="a", partition="0") == 2
    assert value("kafka_log_logmanager_offlinelogdirectorycount") == 1
    size = [(s.labels["delayedOperation"], s.value) for f in _collector(_active(), {}).families()
            if f.name == "kafka_server_delayedoperationpurgatory_purgatorysize"
            for s in f.samples]
    assert size == [("Produce", 4), ("Fetch", 9)]
    assert value("kafka_server_delayedoperationpurgatory_numdelayedoperations",
                 delayedOperation="Fetch") == 5
    assert value("kafka_consumergroup_current_offset", consumergroup="g", topic="z",
                 partition="0") == 3
    assert value("kafka_consumergroup_lag", consumergroup="g", topic="a", partition="0") == 10
    assert value("kafka_consumergroup_lag", consumergroup="g", topic="a", partition="1") == 0
    assert ("kafka_consumergroup_lag", (("consumergroup", "g"), ("partition", "0"),
                                        ("topic", "z"))) not in got     # not hosted here
    assert value("kafka_consumergroup_lag_sum", consumergroup="g", topic="a") == 10
    assert value("kafka_consumergroup_members", consumergroup="g") == 2
    assert value("kafka_coordinator_group_groupmetadatamanager_numoffsets") == 3
    assert value("kafka_network_requestchannel_requestqueuesize") == 2
    assert value("kafkapy_connections") == 4


async def test_an_inactive_controller_counts_nothing():
    inactive = _active()
    inactive.is_active = False
    got = _samples(_collector(inactive, {}).collect())
    kc = "kafka_controller_kafkacontroller_"
    for name in ("activecontrollercount", "offlinepartitionscount", "globaltopiccount",
                 "globalpartitioncount", "preferredreplicaimbalancecount"):
        assert got[(kc + name, ())] == 0


async def test_a_scrape_from_another_thread_runs_on_the_loop():
    collector = _collector(_active(), {})
    families = await asyncio.get_running_loop().run_in_executor(None, collector.collect)
    assert _samples(families)[("kafka_server_replicamanager_leadercount", ())] == 2


def test_a_closed_loop_answers_nothing():
    loop = asyncio.new_event_loop()

    async def make() -> BrokerCollector:
        return _collector(_active(), {})
    collector = loop.run_until_complete(make())
    loop.close()
    assert collector.collect() == []


class QuotaSensors:
    def __init__(self, rows) -> None:
        self.rows = rows

    def sensor_values(self):
        return iter(self.rows)


async def test_client_quota_families_as_the_exporter_names_them():
    """Kafka's quota MBeans through the exporter's three quota rules: an empty user or
    client id is not in the MBean name, so it has no label; with neither, no rule
    matches; Request's rate is request-time; tag values are JMX-sanitized."""
    collector = BrokerCollector(
        cache=Cache({}), listeners=[], replica_manager=ReplicaManager({}),
        log_manager=LogManager({}, set()), controller=_active(), purgatories=[],
        groups=lambda: {}, client_quotas=QuotaSensors([
            ("Produce", "", "p1", 100.0, 0.0), ("Fetch", "alice", "", 50.0, 12.5),
            ("Request", "alice", "c=1", 3.5, 1000.0), ("Fetch", "", "", 9.0, 0.0)]))
    quota = [(s.name, s.labels, s.value) for f in collector.families()
             if f.name.startswith("kafka_server_quota_") for s in f.samples]
    assert sorted(quota, key=repr) == sorted([
        ("kafka_server_quota_byte_rate", {"resource": "Produce", "clientId": "p1"}, 100.0),
        ("kafka_server_quota_throttle_time", {"resource": "Produce", "clientId": "p1"}, 0.0),
        ("kafka_server_quota_byte_rate", {"resource": "Fetch", "user": "alice"}, 50.0),
        ("kafka_server_quota_throttle_time", {"resource": "Fetch", "user": "alice"}, 12.5),
        ("kafka_server_quota_request_time",
         {"resource": "Request", "user": "alice", "clientId": '"c=1"'}, 3.5),
        ("kafka_server_quota_throttle_time",
         {"resource": "Request", "user": "alice", "clientId": '"c=1"'}, 1000.0)], key=repr)
