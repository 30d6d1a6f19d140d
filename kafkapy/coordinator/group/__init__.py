"""The classic consumer-group coordinator (JoinGroup/SyncGroup/Heartbeat protocol).

``GroupCoordinator`` (coordinator.py) owns every group whose ``__consumer_offsets``
partition (``partition_for``, hashing.py) this broker leads; a group is a
``GroupMetadata`` state machine (group.py) of ``MemberMetadata`` (member.py);
changes are written to ``__consumer_offsets`` in Kafka's record format
(records.py) by ``GroupStore`` (persistence.py) and replayed from it at start.
All of it runs on the event loop and is changed only from there.
"""
from __future__ import annotations

from kafkapy.coordinator.group.coordinator import GroupCoordinator
from kafkapy.coordinator.group.hashing import java_string_hash, partition_for

__all__ = ["GroupCoordinator", "java_string_hash", "partition_for"]
