"""One member of a classic group, as the coordinator sees it.

A member has a (coordinator-assigned) ``member_id``, optionally a static
``group_instance_id`` (KIP-345), its timeouts, its supported protocols in
preference order (name -> opaque metadata) and its current opaque assignment.
While a JoinGroup or SyncGroup of the member is parked, ``join_waiter`` /
``sync_waiter`` hold the callback that answers it; answering clears it, so a
request is answered exactly once.
"""
from __future__ import annotations

from typing import Callable

Protocols = list[tuple[str, bytes]]


class MemberMetadata:
    __slots__ = ("member_id", "group_instance_id", "client_id", "client_host",
                 "rebalance_timeout_ms", "session_timeout_ms", "protocol_type", "protocols",
                 "assignment", "join_waiter", "sync_waiter", "is_new", "heartbeat_task",
                 "heartbeat_satisfied")

    def __init__(self, member_id: str, group_instance_id: str | None, client_id: str,
                 client_host: str, rebalance_timeout_ms: int, session_timeout_ms: int,
                 protocol_type: str, protocols: Protocols) -> None:
        self.member_id = member_id
        self.group_instance_id = group_instance_id
        self.client_id = client_id
        self.client_host = client_host
        self.rebalance_timeout_ms = rebalance_timeout_ms
        self.session_timeout_ms = session_timeout_ms
        self.protocol_type = protocol_type
        self.protocols = list(protocols)
        self.assignment = b""
        self.join_waiter: Callable | None = None
        self.sync_waiter: Callable | None = None
        self.is_new = False
        self.heartbeat_task = None
        self.heartbeat_satisfied = False

    @property
    def is_static(self) -> bool:
        return self.group_instance_id is not None

    @property
    def awaiting_join(self) -> bool:
        return self.join_waiter is not None

    @property
    def awaiting_sync(self) -> bool:
        return self.sync_waiter is not None

    @property
    def protocol_names(self) -> list[str]:
        return [name for name, _ in self.protocols]

    def metadata(self, protocol: str) -> bytes:
        for name, data in self.protocols:
            if name == protocol:
                return data
        raise KeyError(protocol)

    def matches(self, protocols: Protocols) -> bool:
        """Same protocols, same order, same metadata."""
        return [(n, bytes(m)) for n, m in protocols] == [(n, bytes(m)) for n, m in self.protocols]

    def vote(self, candidates: set[str]) -> str:
        """This member's most preferred protocol among ``candidates``."""
        return next(name for name in self.protocol_names if name in candidates)

    def answer_join(self, result) -> bool:
        waiter, self.join_waiter = self.join_waiter, None
        if waiter is None:
            return False
        waiter(result)
        return True

    def answer_sync(self, result) -> bool:
        waiter, self.sync_waiter = self.sync_waiter, None
        if waiter is None:
            return False
        waiter(result)
        return True

    def __repr__(self) -> str:
        return (f"MemberMetadata({self.member_id!r}, instance={self.group_instance_id!r}, "
                f"protocols={self.protocol_names})")
