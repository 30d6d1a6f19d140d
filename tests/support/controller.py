"""The controller tests' harness: brokers registered in ZooKeeper (zk_brokers, FakeBroker, an
embedded broker), each one's KafkaController built from its parts, a running controller,
topic state written and read as Kafka's znodes, eventually()."""
from __future__ import annotations

import asyncio
from contextlib import asynccontextmanager
from types import SimpleNamespace

import pytest

from kafkapy.clock import SYSTEM_CLOCK
from kafkapy.config.broker import BrokerConfig
from kafkapy.controller.controller import KafkaController
from kafkapy.metadata import paths
from kafkapy.metadata.embedded import EmbeddedStore
from kafkapy.metadata.paths import EndPoint
from kafkapy.metadata.store import NoNodeError
from kafkapy.protocol.errors import ErrorCode


LAI, STOP, UM = 4, 5, 6


# -- stand-ins ------------------------------------------------------------------------
def broker_config(node_id: int, settings: dict[str, str] | None = None) -> BrokerConfig:
    """Broker ``node_id``'s config: Kafka's defaults, a short controller socket timeout,
    then ``settings``."""
    return BrokerConfig.from_properties(
        {"broker.id": str(node_id), "controller.socket.timeout.ms": "3000"}, settings)


def _clean_elections_only(topic: str) -> dict:
    return {"unclean.leader.election.enable": False}


class FakeBroker:
    """One broker of the controller tests: its config, store and registration, the
    KafkaController made of them (``start_controller``), and the requests the
    controller sent it (``received``; ``apply`` answers them as a broker would)."""

    def __init__(self, node_id: int, store, network: dict) -> None:
        self.node_id = node_id
        self.store = store
        self.config = broker_config(node_id)
        self.broker_epoch = -1
        self.received: list = []
        self.failed_dirs: set = set()
        self.network = network
        network[node_id] = self
        self.controller: KafkaController | None = None
        self.authorizer = None

    def register(self) -> None:
        payload = paths.encode_broker_registration(
            [EndPoint("PLAINTEXT", "127.0.0.1", 19000 + self.node_id, "PLAINTEXT")],
            SYSTEM_CLOCK.time_ms())
        self.store.create(paths.broker_path(self.node_id), payload, ephemeral=True,
                          makepath=True)
        self.broker_epoch = self.store.get(paths.broker_path(self.node_id))[1].czxid

    def apply(self, request):
        self.received.append(request)
        if request.API_KEY == LAI:
            # partitions in self.failed_dirs answer KAFKA_STORAGE_ERROR
            return SimpleNamespace(error_code=0, topics=[SimpleNamespace(
                topic_id=t.topic_id, partition_errors=[SimpleNamespace(
                    partition_index=p.partition_index,
                    error_code=ErrorCode.KAFKA_STORAGE_ERROR
                    if (t.topic_name, p.partition_index) in self.failed_dirs else 0)
                    for p in t.partition_states]) for t in request.topic_states])
        if request.API_KEY == STOP:
            errors = [SimpleNamespace(topic_name=t.topic_name, partition_index=p.partition_index,
                                      error_code=0)
                      for t in request.topic_states for p in t.partition_states]
            return SimpleNamespace(error_code=0, partition_errors=errors)
        return SimpleNamespace(error_code=0)

    def start_controller(self, features=None) -> KafkaController:
        """The broker's controller; ``features`` its FinalizedFeatureCache (None: none)."""
        def channel(loop, node_id, deliver, client_id, timeout) -> FakeChannel:
            self.channels.append(FakeChannel(loop, node_id, deliver, self.network))
            return self.channels[-1]
        self.channels: list[FakeChannel] = []
        self.controller = KafkaController(
            config=self.config, node_id=self.node_id, clock=SYSTEM_CLOCK, store=self.store,
            topic_config=_clean_elections_only, local_deliver=self.apply,
            features=features, channel_factory=channel)
        return self.controller

    # what the requests said -------------------------------------------------
    def leader_and_isr(self) -> dict:
        """(topic, partition) -> last LeaderAndIsr partition state received."""
        return self._last_states(LAI)

    def metadata(self) -> dict:
        """(topic, partition) -> last UpdateMetadata partition state received."""
        return self._last_states(UM)

    def _last_states(self, api_key: int) -> dict:
        return {(t.topic_name, p.partition_index): p
                for r in self.received if r.API_KEY == api_key
                for t in r.topic_states for p in t.partition_states}

    def stopped(self) -> list:
        return [(t.topic_name, p.partition_index, p.delete_partition)
                for r in self.received if r.API_KEY == STOP
                for t in r.topic_states for p in t.partition_states]


class FakeChannel:
    """ControllerChannelManager's surface; remote requests go to the stub brokers on
    the loop (in order), local ones synchronously, as the real channel does."""

    def __init__(self, loop, node_id, deliver, network) -> None:
        self._loop, self._node_id, self._deliver, self._network = loop, node_id, deliver, network
        self.local_node_id = node_id
        self.brokers: set[int] = set()
        self.closed = False
        self.hold = False           # True: remote requests wait until released
        self.held: list = []

    def has_broker(self, node_id) -> bool:
        return node_id in self.brokers

    def release(self) -> None:
        self.hold = False
        for deliver in self.held:
            self._loop.call_soon(deliver)
        self.held.clear()

    def add_broker(self, node_id, host, port) -> None:
        if node_id != self._node_id:
            self.brokers.add(node_id)

    def remove_broker(self, node_id) -> None:
        self.brokers.discard(node_id)

    def send(self, node_id, request, callback=None) -> None:
        if node_id == self._node_id:
            response = self._deliver(request)
            if callback is not None:
                callback(response)
            return
        if self.closed or node_id not in self.brokers or node_id not in self._network:
            return

        def deliver() -> None:
            if node_id in self.brokers and not self.closed:
                response = self._network[node_id].apply(request)
                if callback is not None:
                    callback(response)
        if self.hold:
            self.held.append(deliver)
        else:
            self._loop.call_soon(deliver)

    def close(self) -> None:
        self.closed = True
        self.brokers.clear()


# -- helpers --------------------------------------------------------------------------
async def eventually(check, what: str, timeout_s: float = 15.0):
    """Poll ``check()`` until truthy (bounded); returns its value."""
    for _ in range(int(timeout_s / 0.02)):
        value = check()
        if value:
            return value
        await asyncio.sleep(0.02)
    raise AssertionError(f"timed out waiting for {what}")


def create_topic(store, name: str, assignment: dict[int, list[int]], topic_id: str | None
                 = "AAAAAAAAAAAAAAAAAAAAAQ") -> None:
    store.create(paths.topic_path(name), paths.encode_topic_assignment(assignment, topic_id),
                 makepath=True)


def state(store, topic: str, partition: int):
    try:
        data, stat = store.get(paths.partition_state_path(topic, partition))
    except NoNodeError:
        return None
    return paths.decode_partition_state(data, stat)


def set_isr(store, topic: str, partition: int, isr: list[int]) -> None:
    """Write a new ISR into the state znode and notify, as a partition leader does."""
    data, stat = store.get(paths.partition_state_path(topic, partition))
    doc = paths.decode_partition_state(data, stat)
    store.set(paths.partition_state_path(topic, partition),
              paths.encode_partition_state(doc.leader, doc.leader_epoch, isr,
                                           doc.controller_epoch), version=stat.version)
    store.create(paths.ISR_CHANGE_SEQ_PATH, paths.encode_isr_change([(topic, partition)]),
                 sequence=True)


@pytest.fixture
def zk(request):
    from kafkapy.metadata.zk_store import ZooKeeperStore
    connect = request.getfixturevalue("zk_connect")
    opened = []

    def open_store():
        store = ZooKeeperStore(connect, 6000, 15000)
        paths.ensure_base_paths(store)
        opened.append(store)
        return store
    yield open_store
    for store in opened:
        try:
            store.close()
        except Exception:
            pass


@asynccontextmanager
async def embedded_broker(tmp_path):
    """Broker 1, registered in a fresh embedded store (closed on exit)."""
    store = EmbeddedStore(tmp_path / "meta.json")
    paths.ensure_base_paths(store)
    try:
        broker = FakeBroker(1, store, {})
        broker.register()
        yield broker
    finally:
        store.close()


def zk_brokers(zk, count: int) -> list[FakeBroker]:
    """Brokers 1..count on one network, each registered with a session of its own."""
    network: dict = {}
    brokers = [FakeBroker(i, zk(), network) for i in range(1, count + 1)]
    for broker in brokers:
        broker.register()
    return brokers


@asynccontextmanager
async def running_controller(broker: FakeBroker):
    """The broker's controller, started (elected or not) and shut down on exit."""
    controller = broker.start_controller()
    await controller.startup()
    try:
        yield controller
    finally:
        await controller.shutdown()


def new_session(broker: FakeBroker, zk) -> None:
    """The broker comes back after its session ended: a new session, a new registration."""
    broker.store = zk()
    broker.register()
