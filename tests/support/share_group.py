"""The share group harness: a GroupCoordinator over a real Partition and Log of
``__consumer_offsets``, a mock clock and timer, topics the test creates (the group
coordinator harness's ``Topics``) and ``tests.support.share.InMemoryPersister`` as the
share coordinator; ``restart()`` replays the log into a new coordinator (a failover)."""
from __future__ import annotations

import asyncio

from kafkapy.clock import MockClock
from kafkapy.coordinator.group.coordinator import GroupCoordinator, GroupSettings
from kafkapy.coordinator.group.persistence import GroupStore, Loaded, load_partition
from kafkapy.coordinator.group.share.settings import ShareSettings
from kafkapy.coordinator.group.share.types import HeartbeatResult, ShareHeartbeatRequest
from kafkapy.coordinator.group.timers import Deadlines
from kafkapy.log.log import Log
from kafkapy.metadata.cache import PartitionState
from kafkapy.metadata.topics import OFFSETS_TOPIC
from kafkapy.purgatory.timer import Timer
from kafkapy.replication.partition import Partition
from tests.support.group_coordinator import Topics
from tests.support.share import InMemoryPersister


class _Replicas:
    """What GroupStore needs of a ReplicaManager."""

    def __init__(self, partition: Partition) -> None:
        self.partitions = {(OFFSETS_TOPIC, 0): partition}

    def appended(self, key) -> None:
        pass


class ShareHarness:
    def __init__(self, tmp_path, share: ShareSettings = ShareSettings(),
                 persister: InMemoryPersister | None = None, with_persister: bool = True) -> None:
        self.clock = MockClock()
        self.timer = Timer(None, self.clock)
        self.topics = Topics()
        self.share = share
        self.persister = (persister or InMemoryPersister()) if with_persister else None
        self.log = Log.load(str(tmp_path / f"{OFFSETS_TOPIC}-0"), {"cleanup.policy": "compact"},
                            self.clock)
        self.partition = Partition(OFFSETS_TOPIC, 0, self.log, PartitionState(0, [0], 0, 0, [0]), 0)
        self.replicas = _Replicas(self.partition)
        self.settings = GroupSettings(num_partitions=1, initial_rebalance_delay_ms=0)
        self.coordinator = self._coordinator(Loaded())

    def _coordinator(self, loaded: Loaded) -> GroupCoordinator:
        c = GroupCoordinator(self.settings, self.clock, Deadlines(self.timer),
                             GroupStore(self.replicas, self.clock), topics=self.topics,
                             share=self.share, persister=self.persister)
        c.begin_loading(0)
        c.finish_loading(0, loaded)
        return c

    def restart(self) -> GroupCoordinator:
        """A new coordinator that replays the partition (a coordinator failover)."""
        self.coordinator.shutdown()
        self.coordinator = self._coordinator(load_partition(self.log, self.clock.time_ms()))
        return self.coordinator

    def advance(self, ms: int) -> None:
        self.clock.advance(ms)
        while self.timer.advance_clock():
            pass

    async def heartbeat(self, member_id: str, epoch: int = 0, topics=None, group: str = "g",
                        rack_id: str | None = None) -> HeartbeatResult:
        """One ShareGroupHeartbeat; then the share partitions it asked for are initialized
        (``settle``)."""
        request = ShareHeartbeatRequest(
            group_id=group, member_id=member_id, member_epoch=epoch, client_id="client",
            client_host="/127.0.0.1", rack_id=rack_id,
            subscribed_topic_names=None if topics is None else tuple(topics))
        result = await self.coordinator.share_heartbeat(request)
        await self.settle()
        return result

    async def settle(self) -> None:
        """Wait for the share partitions being initialized."""
        while self.coordinator._share_tasks:
            await asyncio.gather(*self.coordinator._share_tasks, return_exceptions=True)

    async def joined(self, member_id: str, topics, group: str = "g") -> HeartbeatResult:
        """A member joins, then heartbeats once more to be assigned the partitions its join
        had initialized (as a share consumer's second heartbeat is)."""
        first = await self.heartbeat(member_id, 0, topics, group)
        assert first.error == 0, first
        return await self.heartbeat(member_id, first.member_epoch, None, group)

    def group(self, group_id: str = "g"):
        return self.coordinator.groups[group_id]
