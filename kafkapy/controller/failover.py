"""Becoming the active controller (Kafka's onControllerFailover, after the election and
the ``/feature`` set-up): the view read afresh from the store, then everything brought
in line with it.

Order, as Kafka's: old notifications deleted (their watches armed); the context
initialized (live brokers into the channel, topics and their assignments, partitions
being reassigned, each partition's leader and ISR); topic deletion initialized with the
queued topics, those with an offline replica or a reassignment in flight ineligible;
UpdateMetadata to every broker; the replica then the partition state machine started
(electing leaders where needed); reassignments resumed; topic deletion tried; the
operator's preferred replica election, if one is waiting.

Invariants: runs on the controller's event task right after the machinery is built;
a failure propagates (the controller gives ``/controller`` up and runs again).
"""
from __future__ import annotations

from kafkapy.controller import notifications
from kafkapy.controller.elect_leaders import preferred_replica_election_from_znode
from kafkapy.controller.machinery import ControllerMachinery
from kafkapy.metadata import paths


def on_controller_failover(m: ControllerMachinery) -> None:
    notifications.delete_pending(m)
    initialize_context(m)
    # queued deletions first: the state machines leave those topics alone
    m.deletion.init(*_topics_to_delete(m))
    m.update_metadata_everywhere()
    m.rsm.startup()
    m.psm.startup()
    m.reassign.initialize()
    m.deletion.try_topic_deletion()
    preferred_replica_election_from_znode(m)


def initialize_context(m: ControllerMachinery) -> None:
    """Kafka's initializeControllerContext."""
    ctx, reads = m.ctx, m.reads
    for broker in reads.brokers().values():
        ctx.add_live_broker(broker)
        m.add_to_channel(broker)
    reads.topics_into_context(reads.topic_names())
    ctx.partitions_being_reassigned.update(
        tp for tp in ctx.all_partitions() if ctx.full_assignment(tp).is_being_reassigned)
    ctx.shutting_down_broker_ids.clear()
    reads.leader_and_isr_into_context(ctx.all_partitions())


def _topics_to_delete(m: ControllerMachinery) -> tuple[set[str], set[str]]:
    """(topics queued for deletion, those of them ineligible for now); markers of
    unknown topics are removed."""
    ctx = m.ctx
    to_delete = set(m.reads.children(paths.ADMIN_DELETE_TOPICS, m.reads.watches.delete_topics()))
    unknown = to_delete - ctx.all_topics()
    if unknown:
        m.zk.delete_topic_deletions(sorted(unknown))
    to_delete -= unknown
    # topics with a replica on a dead broker or being reassigned wait
    offline = {tp[0] for (tp, b) in ctx.all_replicas() if not ctx.is_replica_online(b, tp)}
    offline |= {tp[0] for tp in ctx.partitions_being_reassigned}
    return to_delete, {t for t in to_delete if t in offline}
