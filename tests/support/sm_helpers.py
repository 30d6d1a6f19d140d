"""Shared set-up for the controller state machine tests: a real EmbeddedStore in
tmp_path holding Kafka's znodes, a ControllerContext at a known epoch, and a fake
channel that records what would be sent (the only fake: no brokers to talk to)."""
from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

from kafkapy.controller.context import ControllerContext, LiveBroker
from kafkapy.controller.partition_state_machine import PartitionStateMachine
from kafkapy.controller.replica_state_machine import ReplicaStateMachine
from kafkapy.controller.request_batch import BatchCallbacks, ControllerBrokerRequestBatch
from kafkapy.controller.topic_deletion import ControllerDeletionClient, TopicDeletionManager
from kafkapy.controller.zk_writes import ZkWrites
from kafkapy.metadata.leader_and_isr import LeaderAndIsr
from kafkapy.metadata import paths
from kafkapy.metadata.embedded import EmbeddedStore
from kafkapy.metadata.paths import EndPoint
from kafkapy.metadata.topics import new_topic_id, topic_id_text

CONTROLLER_ID = 0


class FakeChannel:
    """Records ``send(node_id, request, callback)``; ``respond`` calls callbacks."""

    def __init__(self) -> None:
        self.sent: list[tuple[int, Any, Any]] = []

    def send(self, node_id: int, request: Any, callback: Any) -> None:
        self.sent.append((node_id, request, callback))

    def of(self, api_key: int, node_id: int | None = None) -> list:
        return [r for n, r, _ in self.sent
                if r.API_KEY == api_key and (node_id is None or n == node_id)]

    def targets(self, api_key: int) -> list[int]:
        return [n for n, r, _ in self.sent if r.API_KEY == api_key]

    def clear(self) -> None:
        self.sent.clear()


def endpoints(b: int) -> tuple[EndPoint, ...]:
    return (EndPoint("PLAINTEXT", f"host{b}", 9092 + b, "PLAINTEXT"),
            EndPoint("SSL", f"host{b}", 9192 + b, "SSL"))


@dataclass
class Cluster:
    store: EmbeddedStore
    ctx: ControllerContext
    channel: FakeChannel
    zk: ZkWrites
    batch: ControllerBrokerRequestBatch
    psm: PartitionStateMachine
    rsm: ReplicaStateMachine
    tdm: TopicDeletionManager
    callbacks: BatchCallbacks
    topic_configs: dict = field(default_factory=dict)
    muted: list = field(default_factory=list)

    def add_topic(self, topic: str, partitions: dict[int, list[int]], *,
                  states: dict[int, LeaderAndIsr] | None = None) -> str:
        """Write /brokers/topics/T (and state znodes if given) and tell the context."""
        tid = topic_id_text(new_topic_id())
        self.store.create(paths.topic_path(topic),
                          paths.encode_topic_assignment(partitions, tid), makepath=True)
        self.ctx.add_topic(topic, tid, partitions)
        for p, li in (states or {}).items():
            self.store.create(paths.partition_state_path(topic, p),
                              paths.encode_partition_state(li.leader, li.leader_epoch, li.isr,
                                                           li.controller_epoch),
                              makepath=True)
            self.ctx.put_leadership((topic, p), li)
        return tid

    def state_znode(self, topic: str, p: int) -> LeaderAndIsr:
        data, stat = self.store.get(paths.partition_state_path(topic, p))
        return paths.decode_partition_state(data, stat)

    def bump_epoch(self) -> None:
        """Another controller was elected: /controller_epoch moves on."""
        data, stat = self.store.get(paths.CONTROLLER_EPOCH)
        self.store.set(paths.CONTROLLER_EPOCH,
                       paths.encode_controller_epoch(paths.decode_controller_epoch(data) + 1),
                       version=stat.version)


def make_cluster(tmp_path, live=(0, 1, 2), *, delete_topic_enable: bool = True,
                 unclean_default: bool = False, store=None) -> Cluster:
    if store is None:
        store = EmbeddedStore(tmp_path / "metadata.json", fsync=False)
    paths.ensure_base_paths(store)
    store.create(paths.CONTROLLER_EPOCH, paths.encode_controller_epoch(1))
    stat = store.set(paths.CONTROLLER_EPOCH, paths.encode_controller_epoch(2))
    ctx = ControllerContext(epoch=2, epoch_zk_version=stat.version)
    for b in live:
        ctx.add_live_broker(LiveBroker(b, endpoints(b), f"rack{b}", epoch=1000 + b))
    channel = FakeChannel()
    zk = ZkWrites(store, ctx)
    callbacks = BatchCallbacks()
    batch = ControllerBrokerRequestBatch(ctx, channel, CONTROLLER_ID, "PLAINTEXT", callbacks)
    topic_configs: dict = {}
    psm = PartitionStateMachine(ctx, zk, batch, node_id=CONTROLLER_ID,
                                topic_config=lambda t: topic_configs.get(t, {}),
                                unclean_default=unclean_default)
    rsm = ReplicaStateMachine(ctx, zk, batch, node_id=CONTROLLER_ID)
    muted: list = []
    client = ControllerDeletionClient(ctx, zk, batch, muted.append)
    tdm = TopicDeletionManager(ctx, rsm, psm, client, delete_topic_enable)
    return Cluster(store, ctx, channel, zk, batch, psm, rsm, tdm, callbacks, topic_configs, muted)
