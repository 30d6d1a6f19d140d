"""The share group harness: the group coordinator's ``CoordinatorHarness`` (a real
``__consumer_offsets`` partition, a mock clock and timer, topics the test creates,
``restart()`` a failover) with ``tests.support.share.InMemoryPersister`` as the share
coordinator."""
from __future__ import annotations

import asyncio

from kafkapy.coordinator.group.coordinator import GroupSettings
from kafkapy.coordinator.group.share.settings import ShareSettings
from kafkapy.coordinator.group.share.types import HeartbeatResult, ShareHeartbeatRequest
from tests.support.group_coordinator import CoordinatorHarness
from tests.support.share import InMemoryPersister


class ShareHarness(CoordinatorHarness):
    def __init__(self, tmp_path, share: ShareSettings = ShareSettings(),
                 persister: InMemoryPersister | None = None, with_persister: bool = True) -> None:
        self.share = share
        self.persister = (persister or InMemoryPersister()) if with_persister else None
        super().__init__(tmp_path, GroupSettings(num_partitions=1, initial_rebalance_delay_ms=0))

    def _kinds(self) -> dict:
        return {"share": self.share, "persister": self.persister}

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
