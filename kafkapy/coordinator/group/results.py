"""What the coordinator answers a JoinGroup and a SyncGroup with (handed to the request's
``respond`` callback, which the handler encodes): the classic group's answers and those a
consumer group gives its members of the classic protocol."""
from __future__ import annotations

from dataclasses import dataclass, field


@dataclass
class JoinResult:
    error: int
    member_id: str
    generation: int = -1
    protocol_type: str | None = None
    protocol_name: str | None = None
    leader_id: str = ""
    members: list[tuple[str, str | None, bytes]] = field(default_factory=list)
    skip_assignment: bool = False
    old_leader_id: str | None = None   # static leader rejoining Stable: leader for v<9


@dataclass
class SyncResult:
    error: int
    assignment: bytes = b""
    protocol_type: str | None = None
    protocol_name: str | None = None
