"""Controller election: the ``/controller`` and ``/controller_epoch`` znodes (Kafka's
KafkaZkClient.registerControllerAndIncrementControllerEpoch and the reads around it).

Job: tell who holds ``/controller``, win it together with the next controller epoch,
and give it up.  What the controller does with the outcome (failover, resignation) is
``KafkaController``'s.

Invariants:
 - winning is one multi: create the ephemeral ``/controller`` and set
   ``/controller_epoch`` at the version read just before; losing it (NodeExists /
   BadVersion) means another broker won, unless a check shows that the node and the
   epoch are ours (a retried request): ``ControllerMovedError`` otherwise;
 - ``/controller`` holding this broker's id under another session (an earlier,
   expired one) is reported as ``EARLIER_SESSION``, never as this broker;
 - only the session that owns ``/controller`` deletes it.
"""
from __future__ import annotations

from kafkapy.controller.zk_writes import ControllerMovedError
from kafkapy.metadata import paths
from kafkapy.metadata.store import (
    BadVersionError, CreateOp, MetadataStore, NodeExistsError, NoNodeError, SetDataOp)

#: ``/controller`` is absent (or unreadable).
NO_CONTROLLER = -1
#: ``/controller`` holds this broker's id from an earlier session that has not expired yet.
EARLIER_SESSION = -2


def read_controller(store: MetadataStore, node_id: int, watch) -> int:
    """Who holds ``/controller`` (re-arming ``watch`` on it, or on its creation):
    a broker id, ``NO_CONTROLLER`` or ``EARLIER_SESSION``."""
    try:
        data, stat = store.get(paths.CONTROLLER, watch=watch)
    except NoNodeError:
        store.exists(paths.CONTROLLER, watch=watch)
        return NO_CONTROLLER
    try:
        holder = paths.decode_controller(data).broker_id
    except ValueError:
        holder = NO_CONTROLLER
    # Our broker id from an older, expired session is someone else.
    ours = holder == node_id and stat.ephemeral_owner == store.session_id
    return holder if holder != node_id or ours else EARLIER_SESSION


def register_controller_and_increment_epoch(store: MetadataStore, node_id: int,
                                            now_ms: int) -> tuple[int, int]:
    """Win ``/controller`` with the next epoch: ``(epoch, /controller_epoch's zk
    version)``; ``ControllerMovedError`` when another broker won."""
    try:
        data, stat = store.get(paths.CONTROLLER_EPOCH)
        cur_epoch, cur_version = paths.decode_controller_epoch(data), stat.version
    except NoNodeError:
        cur_epoch, cur_version = _create_controller_epoch(store)
    new_epoch = cur_epoch + 1
    payload = paths.encode_controller(node_id, now_ms)
    try:
        results = store.multi([
            CreateOp(paths.CONTROLLER, payload, ephemeral=True),
            SetDataOp(paths.CONTROLLER_EPOCH, paths.encode_controller_epoch(new_epoch),
                      cur_version)])
    except (NodeExistsError, BadVersionError):
        return _check_controller_and_epoch(store, node_id, new_epoch)
    return new_epoch, results[1].version


def delete_own_controller_node(store: MetadataStore) -> None:
    """Delete ``/controller`` if this session holds it (every broker's watch fires)."""
    try:
        _, stat = store.get(paths.CONTROLLER)
        if stat.ephemeral_owner == store.session_id:
            store.delete(paths.CONTROLLER, version=stat.version)
    except (NoNodeError, BadVersionError):
        pass


def _create_controller_epoch(store: MetadataStore) -> tuple[int, int]:
    initial = paths.INITIAL_CONTROLLER_EPOCH
    try:
        store.create(paths.CONTROLLER_EPOCH, paths.encode_controller_epoch(initial),
                     makepath=True)
        return initial, 0
    except NodeExistsError:
        data, stat = store.get(paths.CONTROLLER_EPOCH)
        return paths.decode_controller_epoch(data), stat.version


def _check_controller_and_epoch(store: MetadataStore, node_id: int,
                                new_epoch: int) -> tuple[int, int]:
    """The multi failed: it may still be ours (a retried request); else we lost."""
    try:
        data, stat = store.get(paths.CONTROLLER)
    except NoNodeError:
        raise ControllerMovedError(
            "The ephemeral node at /controller went away while checking whether the "
            "controller election succeeds. Aborting controller startup procedure") from None
    if (paths.decode_controller(data).broker_id == node_id
            and stat.ephemeral_owner == store.session_id):
        edata, estat = store.get(paths.CONTROLLER_EPOCH)
        if paths.decode_controller_epoch(edata) == new_epoch:
            return new_epoch, estat.version
    raise ControllerMovedError(
        "Controller moved to another broker. Aborting controller startup procedure")
