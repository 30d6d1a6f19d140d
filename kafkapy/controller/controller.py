"""The ZooKeeper-mode controller (Kafka 3.9's KafkaController.scala): its event loop.

Job: every broker runs one ``KafkaController``; it races for ``/controller`` and the
winner (the *active* controller) owns the cluster's partition leadership.  This module
is the event loop and the controller's lifecycle: the public API and the watches only
put events on one queue; one task takes them in order and dispatches each (``match``
on its type) to the capability that handles it:

==========================================  ============================================
election and resignation                    here, over ``election`` (the znodes)
failover                                    ``feature_versioning``, ``machinery``
                                            (what an active controller holds), ``failover``
brokers: join, leave, bounce, modify;       ``broker_changes``
offline replicas in LeaderAndIsr answers
topics: new, grown, marked for deletion     ``topic_changes``
ISR change / log dir event notifications    ``notifications``
AlterPartition                              ``alter_partition``
ElectLeaders, the preferred election znode  ``elect_leaders``
auto leader rebalance                       ``leader_rebalance`` (the timer is here)
ControlledShutdown                          ``controlled_shutdown``
UpdateFeatures (``/feature``)               ``feature_updates``
AllocateProducerIds                         ``producer_id_blocks``
partition reassignment                      ``reassignment``
topic deletion                              ``topic_deletion``
==========================================  ============================================

Invariants:
 - one ``asyncio.Queue`` drained by one task; watch callbacks and the public API
   only enqueue events, so ``ControllerContext`` has one writer;
 - events that change cluster state do nothing unless this controller is active:
   ``_machinery`` exists exactly while it is, and an event that finds none gets the
   answer a non-controller gives (a resigned controller's leftover watches are
   harmless);
 - election is Kafka's registerControllerAndIncrementControllerEpoch: one multi
   creating the ephemeral ``/controller`` and setting ``/controller_epoch`` at the
   version read before; losing it (NodeExists / BadVersion) means another broker won;
 - a fenced write failing on the ``/controller_epoch`` check means another
   controller was elected: resign at once (and give up ``/controller`` if we
   still hold it, Kafka's triggerControllerMove);
 - a batch of broker requests left unsent by a state change that failed half way
   (``BatchStateError``, Kafka's IllegalStateException) resigns the same way
   (Kafka's handleIllegalState): the next election rebuilds the view from the store;
 - a lost store connection mid-event resigns and runs for controller again shortly;
 - every awaited event is answered exactly once, also when it fails or is dropped;
 - on resignation the machinery is closed and the context cleared; on shutdown the
   channel first gets a bounded time to deliver what was already decided.
"""
from __future__ import annotations

import asyncio
from typing import Any, Callable

import prometheus_client as prom
import structlog

from kafkapy.clock import Clock
from kafkapy.config.broker import BrokerConfig
from kafkapy.controller import (
    alter_partition, broker_changes, elect_leaders, election, events as ev, failover,
    leader_rebalance, notifications, topic_changes)
from kafkapy.controller.context import ControllerContext, PartitionStateName
from kafkapy.controller.controlled_shutdown import process_controlled_shutdown
from kafkapy.controller.feature_updates import FeatureUpdate, process_feature_updates
from kafkapy.controller.feature_versioning import setup_feature_versioning
from kafkapy.controller.machinery import ControllerMachinery, build_machinery
from kafkapy.controller.producer_id_blocks import allocate_producer_ids
from kafkapy.controller.request_batch import BatchStateError
from kafkapy.controller.watches import ControllerWatches
from kafkapy.controller.zk_writes import ControllerMovedError
from kafkapy.metadata import paths
from kafkapy.metadata.features import SUPPORTED_FEATURES, FinalizedFeatureCache, served_levels
from kafkapy.metadata.store import STORE_UNAVAILABLE, MetadataStore
from kafkapy.protocol.errors import ErrorCode
from kafkapy.protocol.topic_partition import TopicPartition

_log = structlog.get_logger("kafkapy.controller")

# Kafka's kafka.controller:type=KafkaController gauges (set by the event task).
ACTIVE_CONTROLLER = prom.Gauge("kafkapy_controller_active",
                               "1 on the active controller (Kafka's ActiveControllerCount)")
OFFLINE_PARTITIONS = prom.Gauge("kafkapy_controller_offline_partitions",
                                "Partitions without a live leader (OfflinePartitionsCount)")
CONTROLLER_EPOCH = prom.Gauge("kafkapy_controller_epoch", "This controller's epoch")

NOT_CONTROLLER_MESSAGE = "This is not the correct controller for this cluster."

_FAILOVER_RETRY_S = 1.0
_FIRST_REBALANCE_CHECK_S = 5
_DRAIN_ON_SHUTDOWN_S = 5.0
_STORE_RETRY_S = 1.0


class KafkaController:
    def __init__(self, *, config: BrokerConfig, node_id: int, clock: Clock,
                 store: MetadataStore, topic_config: Callable[[str], dict],
                 local_deliver: Callable[[Any], Any],
                 features: FinalizedFeatureCache | None = None,
                 channel_factory=None) -> None:
        """The controller of broker ``node_id``: ``config`` is the broker's (read at use
        time: dynamic changes apply; its inter-broker listener names the endpoint the
        brokers are reached on); ``topic_config`` (topic -> its effective config) decides
        unclean elections; ``local_deliver`` (request -> response) applies the requests
        this controller sends its own broker (the broker hands in
        ``kafkapy.handlers.controller_delivery``); ``features`` is this broker's view of
        ``/feature``, refreshed once a failover set the znode up (None: nothing to
        refresh); ``channel_factory`` (the ``ControllerChannelManager`` signature)
        replaces the default in tests."""
        self._config = config
        self._node_id = node_id
        self._clock = clock
        self._store = store
        self._topic_config = topic_config
        self._local_deliver = local_deliver
        self._features = features
        self._channel_factory = channel_factory
        self._closed_channels: list = []
        self.ctx = ControllerContext()
        self._active = False
        #: the broker id in /controller as last read (-1: none)
        self.active_controller_id = election.NO_CONTROLLER
        self._queue: asyncio.Queue[ev.ControllerEvent] | None = None
        self._task: asyncio.Task | None = None
        self._watches = ControllerWatches(self._enqueue)
        self._machinery: ControllerMachinery | None = None
        self._stopped = False
        self._retry_after = 0.0      # loop time before which no election is attempted
        self._rebalance_timer: asyncio.TimerHandle | None = None

    # -- public surface --------------------------------------------------------------
    @property
    def is_active(self) -> bool:
        return self._active

    @property
    def epoch(self) -> int:
        return self.ctx.epoch

    @property
    def store(self) -> MetadataStore:
        return self._store

    async def startup(self) -> None:
        """Start the event task, then watch ``/controller`` and run for controller;
        returns once that is done (failover included when this broker won)."""
        self._start_task()
        await self._submit(ev.Startup())

    async def reelect(self) -> None:
        """Resign if active and run again (after the broker registered again).
        A controller that is shutting down stays down: the broker is stopping."""
        if self._stopped:
            return
        self._start_task()
        await self._submit(ev.Reelect())

    def on_session_expired(self) -> None:
        """The store's session expired: drop queued work and resign (Kafka's Expire)."""
        if self._queue is None:
            return
        while not self._queue.empty():
            self._preempt(self._queue.get_nowait())
        self._queue.put_nowait(ev.Expire())

    async def shutdown(self) -> None:
        """Resign (without giving up /controller: our session ends with the broker)
        and stop the event task."""
        if self._queue is None or self._stopped:
            return
        self._stopped = True
        while not self._queue.empty():
            self._preempt(self._queue.get_nowait())
        done = ev.ShutdownEventThread(future=asyncio.get_running_loop().create_future())
        self._queue.put_nowait(done)
        try:
            await asyncio.wait_for(done.future, 30)
        except asyncio.TimeoutError:
            self._task.cancel()
        if self._machinery is not None:
            # What was decided (a controlled shutdown's new leaders) reaches the
            # brokers before the channel drops its queues; bounded: a broker may be gone.
            await self._machinery.channel.drained(_DRAIN_ON_SHUTDOWN_S)
        self._resign()
        for channel in self._closed_channels:
            if hasattr(channel, "wait_closed"):
                await channel.wait_closed()
        self._closed_channels.clear()

    async def controlled_shutdown(self, broker_id: int,
                                  broker_epoch: int) -> tuple[int, list[TopicPartition]]:
        """Kafka's doControlledShutdown: move leadership off ``broker_id``; answers
        ``(error_code, partitions it still leads)``."""
        if self._queue is None or self._stopped:
            return ErrorCode.NOT_CONTROLLER, []
        return await self._submit(ev.ControlledShutdown(broker_id=broker_id,
                                                        broker_epoch=broker_epoch))

    async def elect_leaders(self, election_type: int,
                            partitions: list[TopicPartition] | None
                            ) -> dict[TopicPartition, tuple]:
        """ElectLeaders (preferred 0 / unclean 1); ``None`` = every partition.  Per
        partition ``(error_code, message)``, or ``(NO_ERROR, None, new_leader)``."""
        if self._queue is None or self._stopped:
            return {tp: (ErrorCode.NOT_CONTROLLER, None) for tp in partitions or ()}
        return await self._submit(ev.ReplicaLeaderElection(
            election_type=election_type, partitions=None if partitions is None
            else list(dict.fromkeys(TopicPartition(*tp) for tp in partitions))))

    async def alter_partition_reassignments(
            self, reassignments: dict[TopicPartition, list[int] | None]):
        """AlterPartitionReassignments: per partition ``(error_code, message)``, or a
        top-level ``(NOT_CONTROLLER, message)`` tuple when this is not the controller."""
        if self._queue is None or self._stopped:
            return ErrorCode.NOT_CONTROLLER, NOT_CONTROLLER_MESSAGE
        return await self._submit(ev.ApiPartitionReassignment(reassignments={
            TopicPartition(*tp): target for tp, target in reassignments.items()}))

    async def list_partition_reassignments(self, partitions: list[TopicPartition] | None):
        """ListPartitionReassignments: ``{(t, p): ReplicaAssignment}`` of the partitions
        being reassigned among ``partitions`` (None: all), or ``(NOT_CONTROLLER, message)``."""
        if self._queue is None or self._stopped:
            return ErrorCode.NOT_CONTROLLER, NOT_CONTROLLER_MESSAGE
        return await self._submit(ev.ListPartitionReassignments(
            partitions=None if partitions is None
            else [TopicPartition(*tp) for tp in partitions]))

    async def alter_partition(self, request, version: int):
        """AlterPartition (any version) from a partition leader, answered on the event
        queue (Kafka's AlterPartitionReceived); NOT_CONTROLLER when not running."""
        if self._queue is None or self._stopped:
            return alter_partition.error_response(version, ErrorCode.NOT_CONTROLLER)
        return await self._submit(ev.AlterPartitionReceived(request=request, version=version))

    async def allocate_producer_ids(self, broker_id: int, broker_epoch: int):
        """AllocateProducerIds from a broker, answered on the event queue:
        ``(error_code, ProducerIdBlock | None)``; NOT_CONTROLLER when not running."""
        if self._queue is None or self._stopped:
            return ErrorCode.NOT_CONTROLLER, None
        return await self._submit(ev.AllocateProducerIds(broker_id=broker_id,
                                                         broker_epoch=broker_epoch))

    async def update_features(self, updates: list[FeatureUpdate], validate_only: bool):
        """UpdateFeatures, answered on the event queue (``feature_updates``):
        ``{feature: (error_code, message)}``, or ``(NOT_CONTROLLER, message)``."""
        if self._queue is None or self._stopped:
            return ErrorCode.NOT_CONTROLLER, NOT_CONTROLLER_MESSAGE
        return await self._submit(ev.UpdateFeatures(
            updates=list(updates), validate_only=validate_only))

    def enable_topic_unclean_leader_election(self, topic: str) -> None:
        """``unclean.leader.election.enable`` became true for ``topic``."""
        self._enqueue(ev.TopicUncleanLeaderElectionEnable(topic=topic))

    def topic_config_changed(self, topic: str, overrides: dict[str, str]) -> None:
        """A topic's overrides changed (a ``TopicConfigs`` listener): as Kafka's
        TopicConfigHandler, an active controller retries the topic's offline partitions
        when they now allow unclean elections."""
        enabled = overrides.get("unclean.leader.election.enable", "").strip().lower() == "true"
        if enabled and self._active:
            self.enable_topic_unclean_leader_election(topic)

    def is_topic_queued_for_deletion(self, topic: str) -> bool:
        """Kafka's isTopicQueuedForDeletion, from this controller's context."""
        return self.ctx.is_topic_queued_for_deletion(topic)

    # -- the event queue -------------------------------------------------------------
    def _start_task(self) -> None:
        if self._queue is None:
            self._queue = asyncio.Queue()
        if self._task is None or self._task.done():
            self._stopped = False
            self._task = asyncio.get_running_loop().create_task(self._run(),
                                                                name="controller-events")

    async def _submit(self, event: ev.ControllerEvent):
        event.future = asyncio.get_running_loop().create_future()
        self._queue.put_nowait(event)
        return await event.future

    def _enqueue(self, event: ev.ControllerEvent) -> None:
        if self._queue is not None and not self._stopped:
            self._queue.put_nowait(event)

    async def _run(self) -> None:
        while True:
            event = await self._queue.get()
            if isinstance(event, ev.ShutdownEventThread):
                event.complete()
                return
            try:
                event.complete(self._process(event))
            except Exception as e:      # one bad event must not stop the controller
                self._recover(event, e)
            self._update_gauges()
            # let handlers and the channel run between events
            await asyncio.sleep(0)

    def _process(self, event: ev.ControllerEvent):
        """Run one event; what it returns answers an awaited event."""
        match event:
            case ev.Startup():
                self._read_controller_id()
                return self._elect()
            case ev.ControllerChange():
                return self._maybe_resign()
            case ev.Reelect():
                self._maybe_resign()
                return self._elect()
            case ev.Expire():
                self.active_controller_id = election.NO_CONTROLLER
                if self._active:
                    self._resign()
                return None
        m = self._machinery
        if m is None:
            return _not_controller_answer(event)
        config = self._config
        match event:
            case ev.BrokerChange():
                broker_changes.process_broker_change(m)
            case ev.BrokerModification(broker_id=broker_id):
                broker_changes.process_broker_modification(m, broker_id)
            case ev.LeaderAndIsrResponseReceived(broker_id=broker_id, response=response):
                broker_changes.process_leader_and_isr_response(m, broker_id, response)
            case ev.TopicChange():
                topic_changes.process_topic_change(m)
            case ev.PartitionModifications(topic=topic):
                topic_changes.process_partition_modifications(m, topic)
            case ev.TopicDeletion():
                topic_changes.process_topic_deletion(m, bool(config["delete.topic.enable"]))
            case ev.TopicDeletionStopReplicaResponseReceived():
                m.deletion.handle_stop_replica_response(event.broker_id, event.error_code,
                                                        event.partition_errors)
            case ev.TopicUncleanLeaderElectionEnable(topic=topic):
                m.psm.trigger_online_partition_state_change(topic)
            case ev.IsrChangeNotification():
                notifications.process_isr_change_notification(m)
            case ev.LogDirEventNotification():
                notifications.process_log_dir_event_notification(m)
            case ev.AlterPartitionReceived(request=request, version=version):
                response, changed = alter_partition.process_alter_partition(m, request,
                                                                            version)
                # Kafka answers first, then completes the reassignments the new ISRs allow.
                self._after_answer(lambda: m.reassign.on_isr_changed(changed))
                return response
            case ev.ReplicaLeaderElection(election_type=kind, partitions=partitions):
                results, changed = elect_leaders.process_replica_leader_election(
                    m, kind, partitions)
                if changed is not None:
                    # an unclean election may leave the ISR at a reassignment's targets
                    self._after_answer(lambda: m.reassign.on_isr_changed(changed))
                return results
            case ev.ZkPreferredReplicaElection():
                elect_leaders.preferred_replica_election_from_znode(m)
            case ev.AutoPreferredReplicaLeaderElection():
                self._auto_leader_rebalance(m)
            case ev.ControlledShutdown(broker_id=broker_id, broker_epoch=broker_epoch):
                return process_controlled_shutdown(m, broker_id, broker_epoch)
            case ev.AllocateProducerIds(broker_id=broker_id, broker_epoch=broker_epoch):
                # A failure raises: _answer_error answers UNKNOWN_SERVER_ERROR (and a lost
                # store connection also resigns, as for every event).
                return allocate_producer_ids(self.ctx, self.store, broker_id, broker_epoch)
            case ev.ApiPartitionReassignment(reassignments=reassignments):
                return m.reassign.process_api(reassignments)
            case ev.ListPartitionReassignments(partitions=partitions):
                return m.reassign.list(partitions)
            case ev.UpdateFeatures():
                return self._update_features(event)
            case ev.ZkPartitionReassignment(created=created):
                # Kafka acts on the legacy znode's creation only; other watch events
                # just re-arm the exists watch.
                if created:
                    m.reassign.process_zk()
                else:
                    self.store.exists(paths.ADMIN_REASSIGN_PARTITIONS,
                                      watch=self._watches.reassign_partitions())
            case _:
                raise TypeError(f"unknown controller event {event.name}")
        return None

    def _preempt(self, event: ev.ControllerEvent) -> None:
        """Answer an event that will not run as Kafka's ``preempt`` does."""
        event.complete(_not_controller_answer(event))

    def _answer_error(self, event: ev.ControllerEvent, exc: Exception) -> None:
        match event:
            case ev.ControlledShutdown():
                event.complete((ErrorCode.UNKNOWN, []))
            case ev.ReplicaLeaderElection(partitions=partitions):
                event.complete({tp: (ErrorCode.UNKNOWN, str(exc)) for tp in partitions or ()})
            case ev.AlterPartitionReceived(version=version):
                _log.error("Error when processing AlterPartition", error=repr(exc))
                event.complete(alter_partition.error_response(version, ErrorCode.UNKNOWN))
            case ev.ApiPartitionReassignment() | ev.ListPartitionReassignments():
                event.complete((ErrorCode.UNKNOWN, None))
            case ev.UpdateFeatures():
                event.complete((ErrorCode.UNKNOWN, str(exc)))
            case ev.AllocateProducerIds():
                # Kafka's Errors.forException of a failed getNewProducerIdBlock
                event.complete((ErrorCode.UNKNOWN, None))
            case ev.Startup() | ev.Reelect() if event.future is not None:
                event.fail(exc)
            case _:
                event.complete(None)

    def _recover(self, event: ev.ControllerEvent, exc: Exception) -> None:
        """After an event failed: resign where Kafka would and answer the event.  The
        recovery itself may fail (giving up ``/controller`` needs the store); that must
        neither end the event task nor leave the event's caller waiting forever."""
        try:
            if isinstance(exc, ControllerMovedError):
                _log.info(f"Controller moved to another broker when processing {event.name}.",
                          reason=str(exc))
                self._preempt(event)
                self._move_controller(event)
            elif isinstance(exc, STORE_UNAVAILABLE):
                self._store_unavailable(event, exc)
            elif isinstance(exc, BatchStateError):
                self._resign_after_illegal_state(event, exc)
            else:
                _log.exception(f"Error processing event {event.name}")
                self._answer_error(event, exc)
        except Exception:               # noqa: BLE001 - the task must live on
            _log.exception(f"Error recovering from a failed event {event.name}")
            self._answer_error(event, exc)

    def _resign_after_illegal_state(self, event: ev.ControllerEvent, exc: Exception) -> None:
        """Kafka's handleIllegalState: a state change stopped half way (its requests were
        never sent), so what this controller holds can no longer be trusted: resign (the
        unsent batch goes with the machinery); the next election rebuilds the view."""
        _log.error(f"Error processing event {event.name}: forcing the controller to resign",
                   error=str(exc))
        self._answer_error(event, exc)
        self._move_controller(event)

    def _move_controller(self, event: ev.ControllerEvent) -> None:
        """Kafka's triggerControllerMove after a failed event; without the store, resign
        and run again later."""
        try:
            self._trigger_controller_move()
        except STORE_UNAVAILABLE as e:
            self._store_unavailable(event, e)

    def _store_unavailable(self, event: ev.ControllerEvent, exc: Exception) -> None:
        """The store connection dropped mid-event (Kafka's client would block until it
        is back).  What the event did so far may be half done, so an active controller
        resigns and, like every broker, runs again shortly: the failover rebuilds its
        view from the store.  Awaited events are answered with an error."""
        _log.warning(f"Metadata store unavailable while processing {event.name}; "
                     f"running for controller again in {_STORE_RETRY_S} s", error=repr(exc))
        if self._active:
            self._resign()
        if isinstance(event, (ev.Startup, ev.Reelect)):
            event.complete(None)        # the broker goes on; the election comes later
        else:
            self._answer_error(event, exc)
        if not self._stopped:
            asyncio.get_running_loop().call_later(_STORE_RETRY_S, self._enqueue, ev.Reelect())

    def _after_answer(self, work) -> None:
        """Work that Kafka runs after the event's callback was answered: its failure
        must not change the answer (a moved controller still resigns)."""
        try:
            work()
        except ControllerMovedError as e:
            _log.info("Controller moved to another broker after answering", reason=str(e))
            self._trigger_controller_move()
        except STORE_UNAVAILABLE as e:
            self._store_unavailable(ev.Expire(), e)
        except Exception:           # noqa: BLE001 - logged, as Kafka's event thread does
            _log.exception("Error completing partition reassignments")

    def _update_gauges(self) -> None:
        ACTIVE_CONTROLLER.set(1 if self._active else 0)
        CONTROLLER_EPOCH.set(self.ctx.epoch)
        OFFLINE_PARTITIONS.set(sum(1 for st in self.ctx.partition_states.values()
                                   if st is PartitionStateName.OFFLINE) if self._active else 0)

    # -- election (Kafka's elect / maybeResign / onControllerResignation) --------------
    def _read_controller_id(self) -> int:
        """(Re)register the /controller watch and read who holds it."""
        self.active_controller_id = election.read_controller(
            self.store, self._node_id, self._watches.controller())
        return self.active_controller_id

    def _maybe_resign(self) -> None:
        was_active = self._active
        self._read_controller_id()
        if was_active and self.active_controller_id != self._node_id:
            self._resign()

    def _elect(self) -> None:
        if self._stopped:
            return
        node_id = self._node_id
        wait = self._retry_after - asyncio.get_running_loop().time()
        if wait > 0:
            asyncio.get_running_loop().call_later(wait, self._enqueue, ev.Reelect())
            return
        if self.active_controller_id == node_id and not self._active:
            # held by this session without a failover behind it: a leftover, give it up
            election.delete_own_controller_node(self.store)
            self.active_controller_id = election.NO_CONTROLLER
        if self.active_controller_id == election.EARLIER_SESSION:
            _log.info("/controller is held by an earlier session of this broker; waiting "
                      "for ZooKeeper to expire it")
            return
        if self.active_controller_id != election.NO_CONTROLLER:
            _log.debug(f"Broker {self.active_controller_id} has been elected as the "
                       "controller, so stopping the election process.")
            return
        try:
            epoch, zk_version = election.register_controller_and_increment_epoch(
                self.store, node_id, self._clock.time_ms())
        except ControllerMovedError as e:
            self._read_controller_id()
            _log.debug("controller election lost", reason=str(e),
                       controller=self.active_controller_id)
            return
        self.ctx.epoch, self.ctx.epoch_zk_version = epoch, zk_version
        self.active_controller_id = node_id
        self._active = True
        _log.info(f"{node_id} successfully elected as the controller. Epoch "
                  f"incremented to {epoch} and epoch zk version is now {zk_version}")
        try:
            self._on_controller_failover()
        except ControllerMovedError:
            raise
        except Exception:
            # Kafka: "Error while electing or becoming controller" -> triggerControllerMove.
            # The next attempt waits a little, so a failover that always fails does not spin.
            _log.exception(f"Error while electing or becoming controller on broker "
                           f"{node_id}. Trigger controller movement immediately")
            self._retry_after = asyncio.get_running_loop().time() + _FAILOVER_RETRY_S
            self._trigger_controller_move()
            raise

    def _trigger_controller_move(self) -> None:
        """Kafka's triggerControllerMove: resign and give up /controller if we hold it,
        so every broker (this one too) runs again against the current epoch."""
        was_ours = self._active
        self._resign()
        self.active_controller_id = election.NO_CONTROLLER
        if was_ours:
            election.delete_own_controller_node(self.store)

    def _resign(self) -> None:
        """Kafka's onControllerResignation."""
        if not self._active and self._machinery is None:
            return
        was = self.ctx.epoch
        self._active = False
        if self._rebalance_timer is not None:
            self._rebalance_timer.cancel()
            self._rebalance_timer = None
        if self._machinery is not None:
            self._closed_channels.append(self._machinery.close())
            self._machinery = None
        self.ctx.clear()
        _log.info(f"Resigned as the controller (epoch {was})", node_id=self._node_id)

    # -- failover (Kafka's onControllerFailover) ---------------------------------------
    def _on_controller_failover(self) -> None:
        config = self._config
        setup_feature_versioning(self.store, str(config["inter.broker.protocol.version"]))
        if self._features is not None:
            self._features.refresh()    # Kafka waits for its own broker's cache to see it
        self._machinery = build_machinery(
            self.ctx, self.store, self._watches, node_id=self._node_id,
            inter_broker_listener=config.inter_broker_listener_name, config=config,
            topic_config=self._topic_config, local_deliver=self._local_deliver,
            channel_factory=self._channel_factory, enqueue=self._enqueue)
        failover.on_controller_failover(self._machinery)
        if config["auto.leader.rebalance.enable"]:
            self._schedule_auto_leader_rebalance(_FIRST_REBALANCE_CHECK_S)
        _log.info("controller failover done", epoch=self.ctx.epoch,
                  live_brokers=sorted(self.ctx.live_broker_ids()),
                  topics=len(self.ctx.assignments), partitions=self.ctx.partition_count())

    def _update_features(self, event: ev.UpdateFeatures):
        """Kafka's processFeatureUpdatesWithActiveController over this broker's cache."""
        if self._features is None:      # built without a broker's view (some tests)
            return ErrorCode.FEATURE_UPDATE_FAILED, "This controller keeps no view of /feature."
        return process_feature_updates(
            self.store, self._features, updates=event.updates,
            validate_only=event.validate_only, supported=SUPPORTED_FEATURES,
            brokers=[b.features for b in self.ctx.live_brokers.values()],
            served=served_levels(self._config["group.coordinator.rebalance.protocols"]),
            inter_broker_protocol=str(self._config["inter.broker.protocol.version"]))

    # -- auto leader rebalance (the timer; the check is leader_rebalance's) -------------
    def _schedule_auto_leader_rebalance(self, delay_s: float) -> None:
        if self._rebalance_timer is not None:
            self._rebalance_timer.cancel()
        self._rebalance_timer = asyncio.get_running_loop().call_later(
            delay_s, self._enqueue, ev.AutoPreferredReplicaLeaderElection())

    def _auto_leader_rebalance(self, m: ControllerMachinery) -> None:
        config = self._config
        try:
            _log.info("Processing automatic preferred replica leader election")
            leader_rebalance.check_and_trigger_auto_leader_rebalance(
                m, config["leader.imbalance.per.broker.percentage"])
        finally:
            if self._active:
                self._schedule_auto_leader_rebalance(
                    config["leader.imbalance.check.interval.seconds"])


def _not_controller_answer(event: ev.ControllerEvent):
    """What an event gets when this broker is not the active controller (Kafka's
    ``preempt`` answers)."""
    match event:
        case ev.ControlledShutdown():
            return ErrorCode.NOT_CONTROLLER, []
        case ev.ReplicaLeaderElection(partitions=partitions):
            return {tp: (ErrorCode.NOT_CONTROLLER, None) for tp in partitions or ()}
        case ev.AlterPartitionReceived(version=version):
            return alter_partition.error_response(version, ErrorCode.NOT_CONTROLLER)
        case ev.ApiPartitionReassignment() | ev.ListPartitionReassignments() | \
                ev.UpdateFeatures():
            return ErrorCode.NOT_CONTROLLER, NOT_CONTROLLER_MESSAGE
        case ev.AllocateProducerIds():
            # Kafka's preempt leaves it unanswered until the broker's request times out;
            # NOT_CONTROLLER makes the broker find the new controller at once.
            return ErrorCode.NOT_CONTROLLER, None
        case _:
            return None
