"""Claiming an ephemeral znode (a broker registration, ``/controller``) as Kafka does.

Kafka's checked ephemeral create: a node that already exists is fine when this
session owns it (a create retried after a lost reply), and is refused otherwise
with "Error while creating ephemeral at <path>, node already exists and owner
'<owner>' does not match current session '<session>'".  A broker killed with
kill -9 leaves its registration behind until ZooKeeper expires its session
(zookeeper.session.timeout.ms); where Kafka then fails to start until an
operator retries, ``claim`` waits up to ``wait_ms`` for the node to go and only
then refuses.  A node held by a live session never goes, so it is never taken.

With the embedded store ephemeral nodes die with the process, so the wait never
happens there.
"""
from __future__ import annotations

import asyncio
import time

import structlog

from kafkapy.metadata.store import MetadataStoreError, NodeExistsError, NoNodeError, Stat

_log = structlog.get_logger("kafkapy.metadata")

_POLL_S = 0.2


async def claim(store, path: str, payload: bytes, wait_ms: int,
                describe_owner=lambda data: "") -> Stat:
    """Create ``path`` as an ephemeral node of this session, waiting out a stale owner;
    returns its stat (its czxid is a broker's epoch).

    ``describe_owner(data)`` words the current holder for the log line and the error.
    """
    deadline = time.monotonic() + wait_ms / 1000
    waiting = False
    while True:
        try:
            store.create(path, payload, ephemeral=True, makepath=True)
        except NodeExistsError:
            pass
        try:
            data, stat = store.get(path)
        except NoNodeError:
            continue
        if stat.ephemeral_owner == store.session_id:
            return stat
        holder = describe_owner(data)
        if time.monotonic() >= deadline:
            raise MetadataStoreError(
                f"Error while creating ephemeral at {path}, node already exists and owner "
                f"'{stat.ephemeral_owner}' does not match current session "
                f"'{store.session_id}'{holder}")
        if not waiting:
            waiting = True
            _log.warning("waiting for the session that holds the node to expire",
                         path=path, owner=stat.ephemeral_owner, holder=holder.strip(" ()"),
                         wait_ms=wait_ms)
        await asyncio.sleep(_POLL_S)
