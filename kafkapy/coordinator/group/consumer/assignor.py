"""The server-side assignors of the consumer group protocol, by Kafka's names.

An assignor computes a group's new target assignment from every member's subscription
and current target (``MemberSpec``) and the subscribed topics that exist
(``TopicMetadata`` by topic id):

- ``members``: every member of the group, in the order the coordinator keeps them (the
  assignors reproduce the order Kafka's coordinator hands its assignors from it, see
  ``_support``);
- ``topics``: every existing topic some member subscribes to; subscribed ids without an
  entry are ignored;
- ``homogeneous`` (optional): whether all members subscribe to the same topic *names*,
  as Kafka decides which algorithm runs; by default, whether their subscribed ids are equal;
- the answer has an entry for every member (an empty ``Assignment`` for some), and every
  partition of a subscribed topic belongs to exactly one member subscribed to it.

``ASSIGNORS`` holds Kafka's two: ``uniform`` (the default, ``DEFAULT``) and ``range``.
``PartitionAssignorError`` is Kafka's PartitionAssignorException (a target the assignor
cannot complete; not raised for a coordinator's consistent inputs).
"""
from __future__ import annotations

import uuid
from typing import Mapping, Protocol, runtime_checkable

from kafkapy.coordinator.group.consumer._support import PartitionAssignorError
from kafkapy.coordinator.group.consumer.range import RangeAssignor
from kafkapy.coordinator.group.consumer.types import Assignment, MemberSpec, TopicMetadata
from kafkapy.coordinator.group.consumer.uniform import UniformAssignor

__all__ = ["ASSIGNORS", "DEFAULT", "PartitionAssignor", "PartitionAssignorError",
           "RangeAssignor", "UniformAssignor"]


@runtime_checkable
class PartitionAssignor(Protocol):
    name: str

    def assign(self, members: Mapping[str, MemberSpec], topics: Mapping[uuid.UUID, TopicMetadata],
               *, homogeneous: bool | None = None) -> dict[str, Assignment]: ...


ASSIGNORS: dict[str, PartitionAssignor] = {a.name: a for a in (UniformAssignor(), RangeAssignor())}
DEFAULT = UniformAssignor.name
