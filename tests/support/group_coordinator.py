"""The group coordinator's harnesses: a GroupCoordinator over a real Partition and Log of
``__consumer_offsets``, a mock clock and timer, and topics the test creates and grows
(``CoordinatorHarness``, whose ``restart()`` replays the log into a new coordinator);
``Harness`` drives classic and consumer groups (the share groups' is
``tests.support.share_group.ShareHarness``)."""
from __future__ import annotations

import asyncio
import uuid

from kafkapy.clock import MockClock
from kafkapy.coordinator.group.consumer.settings import ConsumerSettings
from kafkapy.coordinator.group.consumer.types import HeartbeatRequest, TopicMetadata
from kafkapy.coordinator.group.coordinator import GroupCoordinator, GroupSettings
from kafkapy.coordinator.group.group import GroupState
from kafkapy.coordinator.group.persistence import GroupStore, Loaded, load_partition
from kafkapy.coordinator.group.timers import Deadlines
from kafkapy.log.log import Log
from kafkapy.metadata.cache import PartitionState
from kafkapy.metadata.topics import OFFSETS_TOPIC
from kafkapy.protocol.errors import ErrorCode as E
from kafkapy.purgatory.timer import Timer
from kafkapy.replication.partition import Partition


SESSION = 10_000


REBALANCE = 30_000


PROTOCOLS = [("range", b"r-meta"), ("roundrobin", b"rr-meta")]


class _Replicas:
    """The two things GroupStore needs of a ReplicaManager."""

    def __init__(self, partition: Partition) -> None:
        self.partitions = {(OFFSETS_TOPIC, 0): partition}
        self.woken = 0

    def appended(self, key) -> None:
        self.woken += 1


class Topics:
    """The metadata a consumer group's assignors read: topics by name, made by the test."""

    def __init__(self) -> None:
        self.by_name: dict[str, TopicMetadata] = {}

    def create(self, name: str, partitions: int) -> uuid.UUID:
        old = self.by_name.get(name)
        topic_id = old.topic_id if old else uuid.uuid5(uuid.NAMESPACE_OID, name)
        self.by_name[name] = TopicMetadata(topic_id, name, partitions)
        return topic_id

    def delete(self, name: str) -> None:
        self.by_name.pop(name, None)

    def topic(self, name: str):
        return self.by_name.get(name)

    def names(self):
        return self.by_name.keys()


class CoordinatorHarness:
    """The coordinator, its partition and clock (see the module docstring)."""

    def __init__(self, tmp_path, settings: GroupSettings) -> None:
        self.clock = MockClock()
        self.timer = Timer(None, self.clock)
        self.topics = Topics()
        self.log = Log.load(str(tmp_path / f"{OFFSETS_TOPIC}-0"), {"cleanup.policy": "compact"},
                            self.clock)
        self.partition = Partition(OFFSETS_TOPIC, 0, self.log,
                                   PartitionState(0, [0], 0, 0, [0]), 0)
        self.replicas = _Replicas(self.partition)
        self.coordinator = self._new_coordinator(settings)

    def _new_coordinator(self, settings: GroupSettings) -> GroupCoordinator:
        return self._coordinator(settings, Loaded())

    def _coordinator(self, settings: GroupSettings, loaded: Loaded) -> GroupCoordinator:
        c = GroupCoordinator(settings, self.clock, Deadlines(self.timer),
                             GroupStore(self.replicas, self.clock), topics=self.topics,
                             **self._kinds())
        c.begin_loading(0)
        c.finish_loading(0, loaded)
        return c

    def _kinds(self) -> dict:
        """The coordinator's arguments for the kinds of group the harness drives."""
        return {}

    def restart(self) -> GroupCoordinator:
        """A new coordinator that replays the partition (a broker restart, a coordinator
        failover)."""
        self.coordinator.shutdown()
        self.coordinator = self._coordinator(self.coordinator.settings,
                                             load_partition(self.log, self.clock.time_ms()))
        return self.coordinator

    def advance(self, ms: int) -> None:
        self.clock.advance(ms)
        while self.timer.advance_clock():      # tasks re-added with no delay run next step
            pass


class Harness(CoordinatorHarness):
    def __init__(self, tmp_path, consumer: ConsumerSettings = ConsumerSettings(),
                 **settings) -> None:
        self.consumer = consumer
        base = dict(num_partitions=1, initial_rebalance_delay_ms=0, min_session_timeout_ms=1000,
                    max_session_timeout_ms=60_000)
        base.update(settings)
        super().__init__(tmp_path, GroupSettings(**base))

    def _kinds(self) -> dict:
        return {"consumer": self.consumer}

    def join(self, group="g", member_id="", instance_id=None, protocols=PROTOCOLS,
             session=SESSION, rebalance=REBALANCE, require_known=True, protocol_type="consumer"):
        out = []
        self.coordinator.join(group, member_id, instance_id, protocol_type, protocols, session,
                              rebalance, "client", "/127.0.0.1", require_known, out.append)
        return out

    def sync(self, member_id, generation, assignments=None, group="g", instance_id=None,
             protocol_type=None, protocol_name=None):
        out = []
        self.coordinator.sync(group, generation, member_id, instance_id, protocol_type,
                              protocol_name, assignments or {}, out.append)
        return out

    def heartbeat(self, member_id, generation, group="g", instance_id=None) -> int:
        return self.coordinator.heartbeat(group, member_id, instance_id, generation)

    def state(self, group="g") -> GroupState:
        return self.coordinator._groups[group].state

    def first_join(self, **kw):
        """KIP-394: the first join gets MEMBER_ID_REQUIRED and an id; rejoin with it."""
        first = self.join(**kw)
        assert first[0].error == E.MEMBER_ID_REQUIRED
        return self.join(member_id=first[0].member_id, **kw)

    def stable_group(self, n: int, **kw):
        """n members joined and synced; returns their member ids (leader first)."""
        pending = [self.first_join(**kw) for _ in range(n)]
        self.advance(0)
        results = [p[0] for p in pending]
        assert all(r.error == 0 for r in results)
        leader = next(r for r in results if r.member_id == r.leader_id)
        assignments = {r.member_id: r.member_id.encode() for r in results}
        followers = [self.sync(r.member_id, r.generation) for r in results if r is not leader]
        assert self.sync(leader.member_id, leader.generation, assignments)[0].error == 0
        assert all(f[0].error == 0 for f in followers)
        return [leader.member_id] + [r.member_id for r in results if r is not leader]


    # -- the consumer group protocol ----------------------------------------------------
    def consumer_heartbeat(self, member_id="", epoch=0, group="g", topics=None, owned=None,
                           rebalance_timeout_ms=-1, **fields):
        """One ConsumerGroupHeartbeat (v1); a join (epoch 0) sends a full request by
        default, with a member id of its own as a Kafka 4.x client makes one."""
        if epoch == 0:
            member_id = member_id or uuid.uuid4().hex
            owned = {} if owned is None else owned
            rebalance_timeout_ms = 30_000 if rebalance_timeout_ms == -1 else rebalance_timeout_ms
        request = HeartbeatRequest(group_id=group, member_id=member_id, member_epoch=epoch,
                                   client_id="client", client_host="/127.0.0.1", version=1,
                                   rebalance_timeout_ms=rebalance_timeout_ms,
                                   subscribed_topic_names=topics, owned=owned, **fields)
        return asyncio.run(self.coordinator.consumer_heartbeat(request))
