"""The ZooKeeper-mode controller (Kafka 3.9's KafkaController.scala).

Job: every broker runs one ``KafkaController``; it races for ``/controller`` and the
winner (the *active* controller) owns the cluster's partition leadership: it
watches brokers (``/brokers/ids`` and each registration), topics (``/brokers/topics``
and each assignment), ``/admin/delete_topics``, ``/isr_change_notification`` and
``/log_dir_event_notification``, elects leaders through the partition and replica
state machines, writes partition state znodes fenced by ``/controller_epoch``'s zk
version, and tells brokers through the ``ControllerChannelManager`` (requests to
itself are applied in-process, synchronously).  It also answers ControlledShutdown,
AlterPartition (a leader's ISR change, Kafka's processAlterPartition: checked
against the broker epoch and the partition's leader and partition epochs, written
to the state znode conditionally on its zk version, then UpdateMetadata to every
broker), AllocateProducerIds (a producer id block claimed in
``/latest_producer_id_block`` for the asking broker, Kafka's processAllocateProducerIds)
and ElectLeaders, and moves leaders back to preferred replicas periodically
(``auto.leader.rebalance.enable``) or when ``/admin/preferred_replica_election``
asks.  Partition reassignments (AlterPartitionReassignments, ListPartitionReassignments,
``/admin/reassign_partitions``) run through ``reassignment.PartitionReassignments``;
their completion is checked wherever the ISR of a reassigning partition may change
(AlterPartition, ISR change notifications, elections), and a new controller resumes
them from the topic znodes.  Every failover starts as Kafka's does, with
``/feature`` created or switched to Enabled (``maybeSetupFeatureVersioning``; a
ZooKeeper-mode cluster finalizes no features).

Invariants:
 - one ``asyncio.Queue`` drained by one task; watch callbacks and the public API
   only enqueue events, so ``ControllerContext`` has one writer;
 - events that change cluster state do nothing unless this controller is active
   (a resigned controller's leftover watches are harmless);
 - election is Kafka's registerControllerAndIncrementControllerEpoch: one multi
   creating the ephemeral ``/controller`` and setting ``/controller_epoch`` at the
   version read before; losing it (NodeExists / BadVersion) means another broker won;
 - a fenced write failing on the ``/controller_epoch`` check means another
   controller was elected: resign at once (and give up ``/controller`` if we
   still hold it, Kafka's triggerControllerMove);
 - a batch of broker requests left unsent by a state change that failed half way
   (``BatchStateError``, Kafka's IllegalStateException) resigns the same way
   (Kafka's handleIllegalState): the next election rebuilds the view from the store;
 - on resignation the channel is closed and the context cleared; on shutdown the
   channel first gets a bounded time to deliver what was already decided.
"""
from __future__ import annotations

import asyncio
import uuid
from typing import Iterable

import prometheus_client as prom
import structlog

from kafkapy.controller import events as ev
from kafkapy.controller.channel import ControllerChannelManager
from kafkapy.controller.context import (
    ControllerContext, LiveBroker, PartitionStateName, ReplicaState)
from kafkapy.controller.leader_election import (
    CONTROLLED_SHUTDOWN, OFFLINE, OFFLINE_UNCLEAN, PREFERRED as PREFERRED_STRATEGY)
from kafkapy.controller.partition_state_machine import PartitionStateMachine
from kafkapy.controller.reassignment import PartitionReassignments
from kafkapy.controller.replica_state_machine import ReplicaStateMachine
from kafkapy.controller.request_batch import (
    BatchCallbacks, BatchStateError, ControllerBrokerRequestBatch)
from kafkapy.controller.topic_deletion import ControllerDeletionClient, TopicDeletionManager
from kafkapy.controller.zk_writes import ControllerMovedError, ZkWrites
from kafkapy.metadata import paths
from kafkapy.metadata.features import FinalizedFeatureCache
from kafkapy.metadata.leader_and_isr import (
    LEADER_RECOVERED, LEADER_RECOVERING, NO_LEADER, LeaderAndIsr)
from kafkapy.metadata.producer_ids import new_producer_id_block
from kafkapy.metadata.store import (
    STORE_UNAVAILABLE, BadVersionError, CreateOp, DeleteOp, EventType, NodeExistsError,
    NoNodeError, SetDataOp)
from kafkapy.metadata.topics import new_topic_id, parse_topic_id, topic_id_text
from kafkapy.protocol.errors import ErrorCode
from kafkapy.protocol.inter_broker import AlterPartitionResponse
from kafkapy.protocol.topic_partition import TopicPartition

_log = structlog.get_logger("kafkapy.controller")

# Kafka's kafka.controller:type=KafkaController gauges (set by the event task).
ACTIVE_CONTROLLER = prom.Gauge("kafkapy_controller_active",
                               "1 on the active controller (Kafka's ActiveControllerCount)")
OFFLINE_PARTITIONS = prom.Gauge("kafkapy_controller_offline_partitions",
                                "Partitions without a live leader (OfflinePartitionsCount)")
CONTROLLER_EPOCH = prom.Gauge("kafkapy_controller_epoch", "This controller's epoch")

PREFERRED = 0
UNCLEAN = 1

_FAILOVER_RETRY_S = 1.0
_FIRST_REBALANCE_CHECK_S = 5
_DRAIN_ON_SHUTDOWN_S = 5.0
_STORE_RETRY_S = 1.0
_NOT_NEEDED = "Leader election not needed for topic partition."
_STRATEGY_NAMES = {PREFERRED: "PreferredReplicaPartitionLeaderElectionStrategy",
                   UNCLEAN: "OfflinePartitionLeaderElectionStrategy(true)"}


class KafkaController:
    def __init__(self, broker, *, local_deliver,
                 features: FinalizedFeatureCache | None = None,
                 channel_factory=None) -> None:
        """``local_deliver`` (request -> response) applies the requests this controller
        sends its own broker (the broker hands in ``kafkapy.handlers.controller_delivery``);
        ``features`` is this broker's view of ``/feature``, refreshed once a failover set
        the znode up (None: nothing to refresh); ``channel_factory`` (the
        ``ControllerChannelManager`` signature) replaces the default in tests."""
        self._broker = broker
        self._local_deliver = local_deliver
        self._features = features
        self._channel_factory = channel_factory
        self._closed_channels: list = []
        self.ctx = ControllerContext()
        self._active = False
        #: the broker id in /controller as last read (-1: none)
        self.active_controller_id = -1
        self._queue: asyncio.Queue[ev.ControllerEvent] | None = None
        self._task: asyncio.Task | None = None
        self._channel = None
        self._batch = None
        self._zk = None
        self._rsm = None
        self._psm = None
        self._deletion = None
        self._reassign = None
        self._watchers: dict[tuple[str, str], object] = {}
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
    def store(self):
        return self._broker.store

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
        if self._channel is not None:
            # What was decided (a controlled shutdown's new leaders) reaches the
            # brokers before the channel drops its queues; bounded: a broker may be gone.
            await self._channel.drained(_DRAIN_ON_SHUTDOWN_S)
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
            else list(dict.fromkeys(partitions))))

    async def alter_partition_reassignments(
            self, reassignments: dict[TopicPartition, list[int] | None]):
        """AlterPartitionReassignments: per partition ``(error_code, message)``, or a
        top-level ``(NOT_CONTROLLER, message)`` tuple when this is not the controller."""
        if self._queue is None or self._stopped:
            return ErrorCode.NOT_CONTROLLER, NOT_CONTROLLER_MESSAGE
        return await self._submit(ev.ApiPartitionReassignment(reassignments=dict(reassignments)))

    async def list_partition_reassignments(self, partitions: list[TopicPartition] | None):
        """ListPartitionReassignments: ``{(t, p): ReplicaAssignment}`` of the partitions
        being reassigned among ``partitions`` (None: all), or ``(NOT_CONTROLLER, message)``."""
        if self._queue is None or self._stopped:
            return ErrorCode.NOT_CONTROLLER, NOT_CONTROLLER_MESSAGE
        return await self._submit(ev.ListPartitionReassignments(
            partitions=None if partitions is None else list(partitions)))

    async def alter_partition(self, request, version: int):
        """AlterPartition (any version) from a partition leader, answered on the event
        queue (Kafka's AlterPartitionReceived); NOT_CONTROLLER when not running."""
        if self._queue is None or self._stopped:
            return _alter_partition_error(version, ErrorCode.NOT_CONTROLLER)
        return await self._submit(ev.AlterPartitionReceived(request=request, version=version))

    async def allocate_producer_ids(self, broker_id: int, broker_epoch: int):
        """AllocateProducerIds from a broker, answered on the event queue:
        ``(error_code, ProducerIdBlock | None)``; NOT_CONTROLLER when not running."""
        if self._queue is None or self._stopped:
            return ErrorCode.NOT_CONTROLLER, None
        return await self._submit(ev.AllocateProducerIds(broker_id=broker_id,
                                                         broker_epoch=broker_epoch))

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

    def _process_TopicUncleanLeaderElectionEnable(self, event) -> None:
        if self._active:
            self._psm.trigger_online_partition_state_change(event.topic)

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

    def _update_gauges(self) -> None:
        ACTIVE_CONTROLLER.set(1 if self._active else 0)
        CONTROLLER_EPOCH.set(self.ctx.epoch)
        OFFLINE_PARTITIONS.set(sum(1 for st in self.ctx.partition_states.values()
                                   if st is PartitionStateName.OFFLINE) if self._active else 0)

    def _process(self, event: ev.ControllerEvent):
        handler = getattr(self, "_process_" + type(event).__name__)
        return handler(event)

    def _preempt(self, event: ev.ControllerEvent) -> None:
        """Answer an event that will not run as Kafka's ``preempt`` does."""
        if isinstance(event, ev.ControlledShutdown):
            event.complete((ErrorCode.NOT_CONTROLLER, []))
        elif isinstance(event, ev.ReplicaLeaderElection):
            event.complete({tp: (ErrorCode.NOT_CONTROLLER, None)
                            for tp in event.partitions or ()})
        elif isinstance(event, ev.AlterPartitionReceived):
            event.complete(_alter_partition_error(event.version, ErrorCode.NOT_CONTROLLER))
        elif isinstance(event, (ev.ApiPartitionReassignment, ev.ListPartitionReassignments)):
            event.complete((ErrorCode.NOT_CONTROLLER, NOT_CONTROLLER_MESSAGE))
        elif isinstance(event, ev.AllocateProducerIds):
            # Kafka's preempt leaves it unanswered until the broker's request times out;
            # NOT_CONTROLLER makes the broker find the new controller at once.
            event.complete((ErrorCode.NOT_CONTROLLER, None))
        else:
            event.complete(None)

    def _answer_error(self, event: ev.ControllerEvent, exc: Exception) -> None:
        if isinstance(event, ev.ControlledShutdown):
            event.complete((ErrorCode.UNKNOWN, []))
        elif isinstance(event, ev.ReplicaLeaderElection):
            event.complete({tp: (ErrorCode.UNKNOWN, str(exc)) for tp in event.partitions or ()})
        elif isinstance(event, ev.AlterPartitionReceived):
            _log.error("Error when processing AlterPartition", error=repr(exc))
            event.complete(_alter_partition_error(event.version, ErrorCode.UNKNOWN))
        elif isinstance(event, (ev.ApiPartitionReassignment, ev.ListPartitionReassignments)):
            event.complete((ErrorCode.UNKNOWN, None))
        elif isinstance(event, ev.AllocateProducerIds):
            # Kafka's Errors.forException of a failed getNewProducerIdBlock
            event.complete((ErrorCode.UNKNOWN, None))
        elif isinstance(event, (ev.Startup, ev.Reelect)) and event.future is not None:
            event.fail(exc)
        else:
            event.complete(None)

    # -- watches: callbacks only enqueue ---------------------------------------------
    def _watcher(self, kind: str, path: str, make_event):
        """One callable per (kind, path): the store delivers a watch registered twice
        with the same callable once, so re-reading never multiplies events."""
        key = (kind, path)
        cb = self._watchers.get(key)
        if cb is None:
            def cb(event, make_event=make_event) -> None:
                if event.type == EventType.NONE:    # connection state, not a change
                    return
                self._enqueue(make_event(event))
            self._watchers[key] = cb
        return cb

    def _controller_watch(self):
        return self._watcher("data", paths.CONTROLLER, lambda e: (
            ev.Reelect() if e.type == EventType.DELETED else ev.ControllerChange()))

    def _children(self, path: str, make_event) -> list[str]:
        try:
            return self.store.get_children(path, watch=self._watcher("child", path, make_event))
        except NoNodeError:
            self.store.ensure_path(path)
            return self.store.get_children(path, watch=self._watcher("child", path, make_event))

    # -- election (Kafka's elect / maybeResign / onControllerResignation) --------------
    def _process_Startup(self, _event) -> None:
        self._read_controller_id()
        self._elect()

    def _process_ControllerChange(self, _event) -> None:
        self._maybe_resign()

    def _process_Reelect(self, _event) -> None:
        self._maybe_resign()
        self._elect()

    def _process_Expire(self, _event) -> None:
        self.active_controller_id = -1
        if self._active:
            self._resign()

    def _read_controller_id(self) -> int:
        """(Re)register the /controller watch and read who holds it."""
        watch = self._controller_watch()
        try:
            data, stat = self.store.get(paths.CONTROLLER, watch=watch)
        except NoNodeError:
            self.store.exists(paths.CONTROLLER, watch=watch)
            self.active_controller_id = -1
            return -1
        try:
            holder = paths.decode_controller(data).broker_id
        except ValueError:
            holder = -1
        # Our broker id from an older, expired session is someone else.
        ours = holder == self._broker.node_id and stat.ephemeral_owner == self.store.session_id
        self.active_controller_id = holder if holder != self._broker.node_id or ours else -2
        return self.active_controller_id

    def _maybe_resign(self) -> None:
        was_active = self._active
        self._read_controller_id()
        if was_active and self.active_controller_id != self._broker.node_id:
            self._resign()

    def _elect(self) -> None:
        if self._stopped:
            return
        wait = self._retry_after - asyncio.get_running_loop().time()
        if wait > 0:
            asyncio.get_running_loop().call_later(wait, self._enqueue, ev.Reelect())
            return
        if self.active_controller_id == self._broker.node_id and not self._active:
            # held by this session without a failover behind it: a leftover, give it up
            self._delete_own_controller_node()
            self.active_controller_id = -1
        if self.active_controller_id == -2:
            _log.info("/controller is held by an earlier session of this broker; waiting "
                      "for ZooKeeper to expire it")
            return
        if self.active_controller_id != -1:
            _log.debug(f"Broker {self.active_controller_id} has been elected as the "
                       "controller, so stopping the election process.")
            return
        try:
            epoch, zk_version = self._register_controller_and_increment_epoch()
        except ControllerMovedError as e:
            self._read_controller_id()
            _log.debug("controller election lost", reason=str(e),
                       controller=self.active_controller_id)
            return
        self.ctx.epoch, self.ctx.epoch_zk_version = epoch, zk_version
        self.active_controller_id = self._broker.node_id
        self._active = True
        _log.info(f"{self._broker.node_id} successfully elected as the controller. Epoch "
                  f"incremented to {epoch} and epoch zk version is now {zk_version}")
        try:
            self._on_controller_failover()
        except ControllerMovedError:
            raise
        except Exception:
            # Kafka: "Error while electing or becoming controller" -> triggerControllerMove.
            # The next attempt waits a little, so a failover that always fails does not spin.
            _log.exception(f"Error while electing or becoming controller on broker "
                           f"{self._broker.node_id}. Trigger controller movement immediately")
            self._retry_after = asyncio.get_running_loop().time() + _FAILOVER_RETRY_S
            self._trigger_controller_move()
            raise

    def _register_controller_and_increment_epoch(self) -> tuple[int, int]:
        store = self.store
        try:
            data, stat = store.get(paths.CONTROLLER_EPOCH)
            cur_epoch, cur_version = paths.decode_controller_epoch(data), stat.version
        except NoNodeError:
            cur_epoch, cur_version = self._create_controller_epoch()
        new_epoch = cur_epoch + 1
        payload = paths.encode_controller(self._broker.node_id, self._broker.clock.time_ms())
        try:
            results = store.multi([
                CreateOp(paths.CONTROLLER, payload, ephemeral=True),
                SetDataOp(paths.CONTROLLER_EPOCH, paths.encode_controller_epoch(new_epoch),
                          cur_version)])
        except (NodeExistsError, BadVersionError):
            return self._check_controller_and_epoch(new_epoch)
        return new_epoch, results[1].version

    def _create_controller_epoch(self) -> tuple[int, int]:
        initial = paths.INITIAL_CONTROLLER_EPOCH
        try:
            self.store.create(paths.CONTROLLER_EPOCH, paths.encode_controller_epoch(initial),
                              makepath=True)
            return initial, 0
        except NodeExistsError:
            data, stat = self.store.get(paths.CONTROLLER_EPOCH)
            return paths.decode_controller_epoch(data), stat.version

    def _check_controller_and_epoch(self, new_epoch: int) -> tuple[int, int]:
        """The multi failed: it may still be ours (a retried request); else we lost."""
        try:
            data, stat = self.store.get(paths.CONTROLLER)
        except NoNodeError:
            raise ControllerMovedError(
                "The ephemeral node at /controller went away while checking whether the "
                "controller election succeeds. Aborting controller startup procedure") from None
        if (paths.decode_controller(data).broker_id == self._broker.node_id
                and stat.ephemeral_owner == self.store.session_id):
            edata, estat = self.store.get(paths.CONTROLLER_EPOCH)
            if paths.decode_controller_epoch(edata) == new_epoch:
                return new_epoch, estat.version
        raise ControllerMovedError(
            "Controller moved to another broker. Aborting controller startup procedure")

    def _trigger_controller_move(self) -> None:
        """Kafka's triggerControllerMove: resign and give up /controller if we hold it,
        so every broker (this one too) runs again against the current epoch."""
        was_ours = self._active
        self._resign()
        self.active_controller_id = -1
        if was_ours:
            self._delete_own_controller_node()

    def _delete_own_controller_node(self) -> None:
        """Delete /controller if this session holds it (every broker's watch fires)."""
        try:
            _, stat = self.store.get(paths.CONTROLLER)
            if stat.ephemeral_owner == self.store.session_id:
                self.store.delete(paths.CONTROLLER, version=stat.version)
        except (NoNodeError, BadVersionError):
            pass

    def _resign(self) -> None:
        """Kafka's onControllerResignation."""
        if not self._active and self._channel is None:
            return
        was = self.ctx.epoch
        self._active = False
        if self._deletion is not None:
            self._deletion.reset()
        for sm in (self._rsm, self._psm):
            if sm is not None:
                sm.shutdown()
        if self._rebalance_timer is not None:
            self._rebalance_timer.cancel()
            self._rebalance_timer = None
        if self._channel is not None:
            self._channel.close()
            self._closed_channels.append(self._channel)
        self._channel = self._batch = self._zk = self._rsm = self._psm = None
        self._deletion = self._reassign = None
        self.ctx.clear()
        _log.info(f"Resigned as the controller (epoch {was})", node_id=self._broker.node_id)

    # -- failover (Kafka's onControllerFailover) ---------------------------------------
    def _on_controller_failover(self) -> None:
        self._maybe_setup_feature_versioning()
        self._build_machinery()
        self._delete_notifications(paths.ISR_CHANGE_NOTIFICATION, self._children(
            paths.ISR_CHANGE_NOTIFICATION, lambda e: ev.IsrChangeNotification()))
        self._delete_notifications(paths.LOG_DIR_EVENT_NOTIFICATION, self._children(
            paths.LOG_DIR_EVENT_NOTIFICATION, lambda e: ev.LogDirEventNotification()))
        self._initialize_context()
        # queued deletions first: the state machines leave those topics alone
        self._deletion.init(*self._initialize_topic_deletion())
        self._send_update_metadata(sorted(self.ctx.live_or_shutting_down_broker_ids()), [])
        self._rsm.startup()
        self._psm.startup()
        self._reassign.initialize()
        self._deletion.try_topic_deletion()
        self._preferred_replica_election_from_znode()
        if self._broker.config["auto.leader.rebalance.enable"]:
            self._schedule_auto_leader_rebalance(_FIRST_REBALANCE_CHECK_S)
        _log.info("controller failover done", epoch=self.ctx.epoch,
                  live_brokers=sorted(self.ctx.live_broker_ids()),
                  topics=len(self.ctx.assignments), partitions=self.ctx.partition_count())

    # -- /feature (Kafka's maybeSetupFeatureVersioning, KIP-584) -------------------------
    def _maybe_setup_feature_versioning(self) -> None:
        """First step of every failover, as in Kafka: with IBP >= 2.7 the feature znode is
        created Enabled (a ZooKeeper-mode broker finalizes no features) or switched to
        Enabled keeping its features; below 2.7 it is created or rewritten Disabled and
        empty.  The znode version follows the IBP (v2 from 3.3-IV0)."""
        try:
            ibp = str(self._broker.config["inter.broker.protocol.version"])
        except KeyError:        # a config without the key (tests): the current protocol
            ibp = "3.9"
        version = paths.feature_znode_version(_ibp_at_least(ibp, (3, 3)))
        if _ibp_at_least(ibp, (2, 7)):
            self._enable_feature_versioning(version)
        else:
            self._disable_feature_versioning(version)
        if self._features is not None:
            self._features.refresh()    # Kafka waits for its own broker's cache to see it

    def _enable_feature_versioning(self, version: int) -> None:
        existing = self._read_feature_znode()
        if existing is None:
            self._create_feature_znode(paths.FeatureZNode(version, paths.FEATURE_ENABLED, {}))
            return
        features = existing.features
        if existing.status == paths.FEATURE_DISABLED:
            if features:
                _log.warning(f"FeatureZNode at path: {paths.FEATURE} with disabled status "
                             f"contains non-empty features: {dict(features)}")
            features = {}
        wanted = paths.FeatureZNode(version, paths.FEATURE_ENABLED, features)
        if not wanted.same_content(existing):
            self._update_feature_znode(wanted)

    def _disable_feature_versioning(self, version: int) -> None:
        wanted = paths.FeatureZNode(version, paths.FEATURE_DISABLED, {})
        existing = self._read_feature_znode()
        if existing is None:
            self._create_feature_znode(wanted)
            return
        if existing.status == paths.FEATURE_DISABLED and existing.features:
            _log.warning(f"FeatureZNode at path: {paths.FEATURE} with disabled status "
                         f"contains non-empty features: {dict(existing.features)}")
        if not wanted.same_content(existing):
            self._update_feature_znode(wanted)

    def _read_feature_znode(self) -> paths.FeatureZNode | None:
        try:
            data, stat = self.store.get(paths.FEATURE)
        except NoNodeError:
            return None
        return paths.decode_feature_znode(data, stat)

    def _create_feature_znode(self, node: paths.FeatureZNode) -> None:
        _log.info(f"Creating FeatureZNode at path: {paths.FEATURE} with contents: {node}")
        self.store.create(paths.FEATURE,
                          paths.encode_feature_znode(node.version, node.status, node.features),
                          makepath=True)

    def _update_feature_znode(self, node: paths.FeatureZNode) -> None:
        _log.info(f"Updating FeatureZNode at path: {paths.FEATURE} with contents: {node}")
        self.store.set(paths.FEATURE,
                       paths.encode_feature_znode(node.version, node.status, node.features))

    def _build_machinery(self) -> None:
        broker = self._broker
        config = broker.config
        factory = self._channel_factory
        if factory is None:
            factory = ControllerChannelManager
        self._channel = _TrackedChannel(factory(asyncio.get_running_loop(), broker.node_id,
                                                self._local_deliver, None,
                                                config["controller.socket.timeout.ms"]))
        self._batch = ControllerBrokerRequestBatch(
            self.ctx, self._channel, broker.node_id, broker.inter_broker_listener,
            self._batch_callbacks())
        self._zk = ZkWrites(self.store, self.ctx)
        self._rsm = ReplicaStateMachine(self.ctx, self._zk, self._batch, node_id=broker.node_id)
        self._psm = PartitionStateMachine(
            self.ctx, self._zk, self._batch, node_id=broker.node_id,
            topic_config=broker.topic_config,
            unclean_default=bool(config["unclean.leader.election.enable"]))
        # Muting a deleted topic's /brokers/topics/<t> watch needs nothing: its
        # PartitionModifications events are ignored once the topic left the context.
        client = ControllerDeletionClient(self.ctx, self._zk, self._batch, lambda topic: None)
        self._deletion = TopicDeletionManager(self.ctx, self._rsm, self._psm, client,
                                              bool(config["delete.topic.enable"]))
        self._reassign = PartitionReassignments(
            self.ctx, self._zk, self._batch, self._rsm, self._psm, self._deletion,
            znode_watch=self._reassign_znode_watch(),
            rearm_znode_watch=lambda: self._enqueue(ev.ZkPartitionReassignment()))

    def _batch_callbacks(self):
        def stop_replica_deleted(broker_id: int, error_code: int, partition_errors) -> None:
            self._enqueue(ev.TopicDeletionStopReplicaResponseReceived(
                broker_id=broker_id, error_code=error_code,
                partition_errors=dict(partition_errors)))
        def leader_and_isr_answered(broker_id: int, response) -> None:
            self._enqueue(ev.LeaderAndIsrResponseReceived(broker_id=broker_id,
                                                          response=response))
        return BatchCallbacks(on_leader_and_isr_response=leader_and_isr_answered,
                              on_stop_replica_deletion=stop_replica_deleted)

    def _initialize_context(self) -> None:
        ctx = self.ctx
        for broker in self._read_brokers().values():
            ctx.add_live_broker(broker)
            self._add_to_channel(broker)
        topics = self._children(paths.BROKER_TOPICS, lambda e: ev.TopicChange())
        self._read_topics(topics)
        ctx.partitions_being_reassigned.update(
            tp for tp in ctx.all_partitions() if ctx.full_assignment(tp).is_being_reassigned)
        ctx.shutting_down_broker_ids.clear()
        self._update_leader_and_isr_cache(ctx.all_partitions())

    def _initialize_topic_deletion(self) -> tuple[set[str], set[str]]:
        to_delete = set(self._children(paths.ADMIN_DELETE_TOPICS, lambda e: ev.TopicDeletion()))
        unknown = to_delete - self.ctx.all_topics()
        if unknown:
            self._delete_topic_deletions(unknown)
        to_delete -= unknown
        # topics with a replica on a dead broker or being reassigned wait
        offline = {tp[0] for (tp, b) in self.ctx.all_replicas()
                   if not self.ctx.is_replica_online(b, tp)}
        offline |= {tp[0] for tp in self.ctx.partitions_being_reassigned}
        return to_delete, {t for t in to_delete if t in offline}

    # -- reading the store -------------------------------------------------------------
    def _read_brokers(self) -> dict[int, LiveBroker]:
        """Every registered broker (with its data watch) and its epoch (czxid)."""
        out: dict[int, LiveBroker] = {}
        for child in self._children(paths.BROKER_IDS, lambda e: ev.BrokerChange()):
            broker = self._read_broker(int(child))
            if broker is not None:
                out[broker.broker_id] = broker
        return out

    def _read_broker(self, broker_id: int) -> LiveBroker | None:
        path = paths.broker_path(broker_id)
        watch = self._watcher("data", path, lambda e, b=broker_id: ev.BrokerModification(
            broker_id=b))
        try:
            data, stat = self.store.get(path, watch=watch)
        except NoNodeError:
            return None
        try:
            reg = paths.decode_broker_registration(broker_id, data)
        except ValueError as e:
            _log.warning("unreadable broker registration", broker=broker_id, error=str(e))
            return None
        return LiveBroker(broker_id, tuple(reg.endpoints), reg.rack, stat.czxid,
                          dict(reg.features))

    def _add_to_channel(self, broker: LiveBroker) -> None:
        ep = broker.endpoint(self._broker.inter_broker_listener) or (
            broker.endpoints[0] if broker.endpoints else None)
        if ep is None:
            _log.warning("broker has no endpoint", broker=broker.broker_id)
            return
        self._channel.add_broker(broker.broker_id, ep.host or "127.0.0.1", ep.port)

    def _read_topics(self, topics: Iterable[str]) -> dict[str, dict[int, list[int]]]:
        """Assignments (with a data watch per topic) into the context; a topic without
        an id gets one written.  Returns what was read."""
        read: dict[str, dict[int, list[int]]] = {}
        for topic in topics:
            got = self._read_topic(topic)
            if got is None:
                continue
            topic_id, parts, assignment = got
            self.ctx.add_topic(topic, topic_id, parts, dict(assignment.adding_replicas),
                               dict(assignment.removing_replicas))
            read[topic] = parts
        return read

    def _read_topic(self, topic: str):
        """(topic id, partition -> RS, the decoded ``TopicAssignment``) or None."""
        path = paths.topic_path(topic)
        watch = self._watcher("data", path,
                              lambda e, t=topic: ev.PartitionModifications(topic=t))
        try:
            data, stat = self.store.get(path, watch=watch)
            assignment = paths.decode_topic_assignment(data, topic)
        except NoNodeError:
            return None
        except ValueError as e:
            _log.warning("unreadable topic assignment", topic=topic, error=str(e))
            return None
        topic_id = assignment.topic_id
        if topic_id is None:
            topic_id = self._write_topic_id(topic, assignment, stat.version)
        return topic_id, {p: list(r) for p, r in assignment.partitions.items()}, assignment

    def _write_topic_id(self, topic: str, assignment, version: int) -> str:
        """Kafka's processTopicIds: a topic created without an id (an old tool) gets one."""
        topic_id = topic_id_text(new_topic_id())
        payload = paths.encode_topic_assignment(assignment.partitions, topic_id,
                                                assignment.adding_replicas,
                                                assignment.removing_replicas)
        self._zk.write_fenced(SetDataOp(paths.topic_path(topic), payload, version))
        _log.info("assigned topic id", topic=topic, topic_id=topic_id)
        return topic_id

    def _update_leader_and_isr_cache(self, partitions: Iterable[TopicPartition]) -> None:
        """Kafka's updateLeaderAndIsrCache: the state znodes into the context."""
        partitions = list(partitions)
        got = self._zk.get_partition_states(partitions)
        for tp, li in got.items():
            if isinstance(li, STORE_UNAVAILABLE):
                raise li        # the event is retried on a new failover
            if li is None:
                self.ctx.leadership.pop(tp, None)
            elif isinstance(li, Exception):
                _log.warning("unreadable partition state", partition=f"{tp[0]}-{tp[1]}",
                             error=str(li))
            else:
                self.ctx.put_leadership(tp, li)

    def _delete_topic_deletions(self, topics: Iterable[str]) -> None:
        self._zk.delete_topic_deletions(sorted(topics))

    def _delete_notifications(self, parent: str, names: Iterable[str]) -> None:
        for name in names:
            try:
                self._zk.write_fenced(DeleteOp(f"{parent}/{name}"))
            except NoNodeError:
                pass

    # -- requests ------------------------------------------------------------------
    def _send_update_metadata(self, brokers: Iterable[int],
                              partitions: Iterable[TopicPartition]) -> None:
        self._batch.new_batch()
        self._batch.add_update_metadata(list(brokers), list(partitions))
        self._batch.send()

    # -- broker changes (Kafka's processBrokerChange / onBrokerStartup / onBrokerFailure) -
    def _process_BrokerChange(self, _event) -> None:
        if not self._active:
            return
        ctx = self.ctx
        current = self._read_brokers()
        known = ctx.live_or_shutting_down_broker_ids()
        new_ids = sorted(set(current) - known)
        dead_ids = sorted(known - set(current))
        bounced_ids = sorted(b for b in set(current) & known
                             if current[b].epoch > ctx.broker_epoch(b))
        live = sorted(current)
        _log.info(f"Newly added brokers: {_join(new_ids)}, deleted brokers: {_join(dead_ids)}, "
                  f"bounced brokers: {_join(bounced_ids)}, all live brokers: {_join(live)}")
        for b in new_ids:
            self._add_to_channel(current[b])
        for b in bounced_ids:
            self._channel.remove_broker(b)
            self._add_to_channel(current[b])
        for b in dead_ids:
            self._channel.remove_broker(b)
        if new_ids:
            for b in new_ids:
                ctx.add_live_broker(current[b])
            self._on_broker_startup(new_ids)
        if bounced_ids:
            ctx.remove_live_brokers(bounced_ids)
            self._on_broker_failure(bounced_ids)
            for b in bounced_ids:
                ctx.add_live_broker(current[b])
            self._on_broker_startup(bounced_ids)
        if dead_ids:
            ctx.remove_live_brokers(dead_ids)
            self._on_broker_failure(dead_ids)

    def _on_broker_startup(self, new_brokers: list[int]) -> None:
        ctx = self.ctx
        _log.info(f"New broker startup callback for {_join(new_brokers)}")
        for b in new_brokers:
            ctx.replicas_on_offline_dirs.pop(b, None)
        existing = sorted(ctx.live_or_shutting_down_broker_ids() - set(new_brokers))
        # the others learn about the new brokers; the new ones get every partition
        self._send_update_metadata(existing, [])
        self._send_update_metadata(new_brokers, [
            tp for tp in ctx.all_partitions()
            if tp in ctx.leadership and not ctx.is_topic_queued_for_deletion(tp[0])])
        replicas = ctx.replicas_on_brokers(new_brokers)
        self._rsm.handle_state_changes(replicas, ReplicaState.ONLINE)
        elected = self._psm.trigger_online_partition_state_change()
        self._reassign.on_isr_changed(_elected(elected))
        self._reassign.on_broker_startup(new_brokers)
        resumed = {tp[0] for tp, _ in replicas if ctx.is_topic_queued_for_deletion(tp[0])}
        if resumed:
            _log.info(f"Some replicas {sorted(resumed)} for topics scheduled for deletion are "
                      "on the newly restarted brokers. Signaling restart of topic deletion "
                      "for these topics")
            self._deletion.resume_deletion_for_topics(resumed)

    def _on_broker_failure(self, dead_brokers: list[int]) -> None:
        _log.info(f"Broker failure callback for {_join(dead_brokers)}")
        for b in dead_brokers:
            self.ctx.replicas_on_offline_dirs.pop(b, None)
        self._on_replicas_become_offline(self.ctx.replicas_on_brokers(dead_brokers))

    def _on_replicas_become_offline(self, replicas) -> None:
        """Kafka's onReplicasBecomeOffline."""
        ctx = self.ctx
        for_deletion = [r for r in replicas if ctx.is_topic_queued_for_deletion(r[0][0])]
        not_for_deletion = [r for r in replicas if not ctx.is_topic_queued_for_deletion(r[0][0])]
        offline_leader = [tp for tp, li in ctx.leadership.items()
                          if not ctx.is_replica_online(li.leader, tp)
                          and not ctx.is_topic_queued_for_deletion(tp[0])]
        self._psm.handle_state_changes(offline_leader, PartitionStateName.OFFLINE)
        results = self._psm.trigger_online_partition_state_change()
        self._rsm.handle_state_changes(not_for_deletion, ReplicaState.OFFLINE)
        if for_deletion:
            self._deletion.fail_replica_deletion(for_deletion)
        # an election may have left the ISR at the targets of a reassignment
        self._reassign.on_isr_changed(_elected(results))
        if not not_for_deletion and not any(_succeeded(r) for r in (results or {}).values()):
            # nothing changed leader or ISR: tell the brokers about the dead ones directly
            self._send_update_metadata(sorted(ctx.live_or_shutting_down_broker_ids()), [])

    def _process_BrokerModification(self, event: ev.BrokerModification) -> None:
        if not self._active:
            return
        old = self.ctx.live_brokers.get(event.broker_id)
        new = self._read_broker(event.broker_id)
        if old is None or new is None or new.epoch != old.epoch:
            return          # registration gone or replaced: BrokerChange handles it
        if (new.endpoints, new.rack, new.features) == (old.endpoints, old.rack, old.features):
            return
        _log.info(f"Updated broker {event.broker_id}", endpoints=[
            e.connection_string() for e in new.endpoints], rack=new.rack)
        self.ctx.add_live_broker(new)
        self._add_to_channel(new)
        self._send_update_metadata(sorted(self.ctx.live_or_shutting_down_broker_ids()), [])

    # -- topics (Kafka's processTopicChange / processPartitionModifications) ------------
    def _process_TopicChange(self, _event) -> None:
        if not self._active:
            return
        ctx = self.ctx
        topics = set(self._children(paths.BROKER_TOPICS, lambda e: ev.TopicChange()))
        new_topics = topics - ctx.all_topics()
        deleted = ctx.all_topics() - topics
        for topic in deleted:
            ctx.remove_topic(topic)
        added = self._read_topics(sorted(new_topics))
        _log.info(f"New topics: [{_set(new_topics)}], deleted topics: [{_set(deleted)}], "
                  f"new partition replica assignment [{_assignment_text(added)}]")
        new_partitions = [(t, p) for t, parts in added.items() for p in sorted(parts)]
        if new_partitions:
            self._on_new_partition_creation(new_partitions)

    def _process_PartitionModifications(self, event: ev.PartitionModifications) -> None:
        if not self._active:
            return
        ctx, topic = self.ctx, event.topic
        if topic not in ctx.assignments:
            return
        got = self._read_topic(topic)
        if got is None:
            return
        _, parts, _ = got
        to_add = {p: r for p, r in parts.items() if p not in ctx.assignments[topic]}
        if ctx.is_topic_queued_for_deletion(topic):
            if to_add:
                _log.warning(f"Skipping adding partitions {sorted(to_add)} for topic {topic} "
                             "since it is currently being deleted")
                self._restore_assignment(topic)
            else:
                _log.info("Ignoring partition change during topic deletion as no new "
                          "partitions are added")
            return
        if to_add:
            _log.info(f"New partitions to be added {_assignment_text({topic: to_add})}")
            for p, replicas in to_add.items():
                ctx.update_assignment((topic, p), replicas)
            self._on_new_partition_creation([(topic, p) for p in sorted(to_add)])

    def _restore_assignment(self, topic: str) -> None:
        """Kafka's restorePartitionReplicaAssignment: write back the known assignment."""
        try:
            _, stat = self.store.get(paths.topic_path(topic))
            self._zk.set_topic_assignment(topic, self.ctx.topic_ids.get(topic),
                                          self.ctx.full_assignments_for_topic(topic),
                                          version=stat.version)
        except (NoNodeError, BadVersionError) as e:
            _log.warning("could not restore the assignment", topic=topic, error=str(e))

    def _on_new_partition_creation(self, partitions: list[TopicPartition]) -> None:
        _log.info(f"New partition creation callback for {_tps(partitions)}")
        replicas = [(tp, r) for tp in partitions for r in self.ctx.replicas(tp)]
        self._psm.handle_state_changes(partitions, PartitionStateName.NEW)
        self._rsm.handle_state_changes(replicas, ReplicaState.NEW)
        self._psm.handle_state_changes(partitions, PartitionStateName.ONLINE, OFFLINE)
        self._rsm.handle_state_changes(replicas, ReplicaState.ONLINE)

    # -- deletion and ISR notifications ---------------------------------------------
    def _process_TopicDeletion(self, _event) -> None:
        if not self._active:
            return
        ctx = self.ctx
        to_delete = set(self._children(paths.ADMIN_DELETE_TOPICS, lambda e: ev.TopicDeletion()))
        unknown = to_delete - ctx.all_topics()
        if unknown:
            _log.warning(f"Ignoring request to delete non-existing topics {_set(unknown)}")
            self._delete_topic_deletions(unknown)
        to_delete -= unknown
        if not self._broker.config["delete.topic.enable"]:
            if to_delete:
                _log.info(f"Removing {_set(to_delete)} since delete topic is disabled")
                self._delete_topic_deletions(to_delete)
            return
        # Kafka 3.9 marks topics with a reassignment in flight ineligible *before*
        # queueing them, which only halts topics already queued: a newly deleted topic
        # goes at once (its reassignment with it); after a failover it waits.
        self._deletion.mark_topic_ineligible_for_deletion(
            {tp[0] for tp in ctx.partitions_being_reassigned} & to_delete,
            "topic reassignment in progress")
        to_delete -= ctx.topics_to_be_deleted
        if to_delete:
            _log.info(f"Starting topic deletion for topics {_set(to_delete)}")
            self._deletion.enqueue_topics_for_deletion(to_delete)

    def _process_TopicDeletionStopReplicaResponseReceived(
            self, event: ev.TopicDeletionStopReplicaResponseReceived) -> None:
        """Kafka's processTopicDeletionStopReplicaResponseReceived."""
        if not self._active:
            return
        self._deletion.handle_stop_replica_response(event.broker_id, event.error_code,
                                                    event.partition_errors)

    def _process_IsrChangeNotification(self, _event) -> None:
        if not self._active:
            return
        names = self._children(paths.ISR_CHANGE_NOTIFICATION,
                               lambda e: ev.IsrChangeNotification())
        try:
            partitions: list[TopicPartition] = []
            for name in names:
                try:
                    data, _ = self.store.get(f"{paths.ISR_CHANGE_NOTIFICATION}/{name}")
                    partitions += [tp for tp in paths.decode_isr_change(data)
                                   if tp not in partitions]
                except (NoNodeError, ValueError):
                    continue
            partitions = [tp for tp in partitions if self.ctx.replicas(tp)]
            if partitions:
                self._update_leader_and_isr_cache(partitions)
                self._send_update_metadata(
                    sorted(self.ctx.live_or_shutting_down_broker_ids()), partitions)
                self._reassign.on_isr_changed(partitions)
        finally:
            self._delete_notifications(paths.ISR_CHANGE_NOTIFICATION, names)

    # -- failed log dirs (Kafka's processLogDirEventNotification, LeaderAndIsr responses) --
    def _process_LogDirEventNotification(self, _event) -> None:
        if not self._active:
            return
        names = self._children(paths.LOG_DIR_EVENT_NOTIFICATION,
                               lambda e: ev.LogDirEventNotification())
        try:
            brokers: list[int] = []
            for name in names:
                try:
                    data, _ = self.store.get(f"{paths.LOG_DIR_EVENT_NOTIFICATION}/{name}")
                    broker_id = paths.decode_log_dir_event(data)
                except (NoNodeError, ValueError):
                    continue
                if broker_id not in brokers:
                    brokers.append(broker_id)
            if brokers:
                # LeaderAndIsr to every replica there: the answers name the offline ones
                _log.info(f"Handling log directory failure for brokers {_join(brokers)}")
                self._rsm.handle_state_changes(self.ctx.replicas_on_brokers(brokers),
                                               ReplicaState.ONLINE)
        finally:
            self._delete_notifications(paths.LOG_DIR_EVENT_NOTIFICATION, names)

    def _process_LeaderAndIsrResponseReceived(self, event: ev.LeaderAndIsrResponseReceived
                                              ) -> None:
        if not self._active:
            return
        response, broker_id = event.response, event.broker_id
        if getattr(response, "error_code", 0) != ErrorCode.NO_ERROR:
            _log.error(f"Received error {response.error_code} in LeaderAndIsr response from "
                       f"broker {broker_id}")
            return
        offline, online = set(), set()
        for tp, code in _partition_errors(response, self.ctx.topic_ids):
            if code == ErrorCode.KAFKA_STORAGE_ERROR:
                offline.add(tp)
            elif code == ErrorCode.NO_ERROR:
                online.add(tp)
        previous = self.ctx.replicas_on_offline_dirs.get(broker_id, set())
        current = (previous - online) | offline
        self.ctx.replicas_on_offline_dirs[broker_id] = current
        new = sorted(current - previous)
        if new:
            _log.info(f"Mark replicas {_tps(new)} on broker {broker_id} as offline")
            self._on_replicas_become_offline([(tp, broker_id) for tp in new])

    # -- controlled shutdown (Kafka's doControlledShutdown) --------------------------
    def _process_ControlledShutdown(self, event: ev.ControlledShutdown):
        if not self._active:
            return ErrorCode.NOT_CONTROLLER, []
        ctx, broker_id = self.ctx, event.broker_id
        if event.broker_epoch != -1:
            cached = ctx.broker_epoch(broker_id)
            if event.broker_epoch < cached:
                _log.info(f"Received controlled shutdown request from an old broker epoch "
                          f"{event.broker_epoch} for broker {broker_id}. Current broker "
                          f"epoch is {cached}.")
                return ErrorCode.STALE_BROKER_EPOCH, []
        _log.info(f"Shutting down broker {broker_id}")
        if broker_id not in ctx.live_brokers:
            return ErrorCode.BROKER_NOT_AVAILABLE, []
        ctx.shutting_down_broker_ids.add(broker_id)
        to_act = [tp for tp in ctx.partitions_on_broker(broker_id)
                  if len(ctx.replicas(tp)) > 1 and tp in ctx.leadership
                  and not ctx.is_topic_queued_for_deletion(tp[0])]
        led = [tp for tp in to_act if ctx.leadership[tp].leader == broker_id]
        followed = [tp for tp in to_act if ctx.leadership[tp].leader != broker_id]
        self._psm.handle_state_changes(led, PartitionStateName.ONLINE, CONTROLLED_SHUTDOWN)
        self._batch.new_batch()
        for tp in followed:
            self._batch.add_stop_replica([broker_id], tp, False)
        self._batch.send()
        self._rsm.handle_state_changes([(tp, broker_id) for tp in followed],
                                       ReplicaState.OFFLINE)
        # Kafka's replicatedPartitionsBrokerLeads: a partition with one replica cannot
        # move, so it does not hold the shutdown back.
        remaining = [tp for tp, li in ctx.leadership.items() if li.leader == broker_id
                     and len(ctx.replicas(tp)) > 1
                     and not ctx.is_topic_queued_for_deletion(tp[0])]
        return ErrorCode.NO_ERROR, sorted(remaining)

    # -- AllocateProducerIds (Kafka's processAllocateProducerIds) ------------------------
    def _process_AllocateProducerIds(self, event: ev.AllocateProducerIds):
        if not self._active:
            return ErrorCode.NOT_CONTROLLER, None
        broker_id, broker_epoch = event.broker_id, event.broker_epoch
        if broker_id not in self.ctx.live_brokers:
            _log.warning(f"Ignoring AllocateProducerIds due to unknown broker {broker_id}")
            return ErrorCode.BROKER_ID_NOT_REGISTERED, None
        if broker_epoch != self.ctx.broker_epoch(broker_id):
            _log.warning(f"Ignoring AllocateProducerIds due to stale broker epoch "
                         f"{broker_epoch} for broker {broker_id}")
            return ErrorCode.STALE_BROKER_EPOCH, None
        # A failure raises: _answer_error answers UNKNOWN_SERVER_ERROR (and a lost store
        # connection also resigns, as for every event).
        return ErrorCode.NO_ERROR, new_producer_id_block(self.store, broker_id)

    # -- AlterPartition (Kafka's processAlterPartition / tryProcessAlterPartition) -------
    def _process_AlterPartitionReceived(self, event: ev.AlterPartitionReceived):
        version, request = event.version, event.request
        if not self._active:
            return _alter_partition_error(version, ErrorCode.NOT_CONTROLLER)
        ctx, broker_id = self.ctx, request.broker_id
        if broker_id not in ctx.live_brokers:
            _log.info(f"Ignoring AlterPartition due to unknown broker {broker_id}")
            return _alter_partition_error(version, ErrorCode.STALE_BROKER_EPOCH)
        if request.broker_epoch != ctx.broker_epoch(broker_id):
            _log.info(f"Ignoring AlterPartition due to stale broker epoch "
                      f"{request.broker_epoch} and local broker epoch "
                      f"{ctx.broker_epoch(broker_id)} for broker {broker_id}")
            return _alter_partition_error(version, ErrorCode.STALE_BROKER_EPOCH)
        wanted, unknown_ids = self._alter_partition_wanted(request, version)
        results: dict[TopicPartition, object] = {}      # error code or LeaderAndIsr
        to_write: dict[TopicPartition, LeaderAndIsr] = {}
        for tp, proposed in wanted.items():
            outcome = self._check_alter_partition(broker_id, tp, proposed, version)
            if isinstance(outcome, LeaderAndIsr) and outcome is proposed:
                to_write[tp] = proposed
            else:
                results[tp] = outcome
        written = self._zk.update_leader_and_isr(to_write)
        for tp, outcome in written.finished.items():
            if isinstance(outcome, Exception):
                _log.error(f"Failed to update ISR for partition {tp[0]}-{tp[1]}",
                           error=repr(outcome))
                results[tp] = _store_error_code(outcome)
            else:
                _log.debug(f"ISR for partition {tp[0]}-{tp[1]} updated to {list(outcome.isr)}")
                ctx.put_leadership(tp, outcome)
                results[tp] = outcome
        for tp in written.to_retry:
            _log.info(f"Failed to update ISR to {list(to_write[tp].isr)} for partition "
                      f"{tp[0]}-{tp[1]}, bad ZK version.")
            results[tp] = ErrorCode.INVALID_UPDATE_VERSION
        if wanted:
            self._send_update_metadata(sorted(ctx.live_or_shutting_down_broker_ids()),
                                       [tp for tp in wanted if ctx.replicas(tp)])
        response = self._alter_partition_response(version, request, wanted, results,
                                                  unknown_ids)
        # Kafka answers first, then completes the reassignments the new ISRs allow.
        self._after_answer(lambda: self._reassign.on_isr_changed(
            [tp for tp, r in results.items() if isinstance(r, LeaderAndIsr)]))
        return response

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

    def _alter_partition_wanted(self, request, version: int):
        """(tp -> proposed LeaderAndIsr in request order, topic ids the context lacks)."""
        names = {text: name for name, text in self.ctx.topic_ids.items()}
        wanted: dict[TopicPartition, LeaderAndIsr] = {}
        unknown_ids: list = []
        for topic in request.topics or ():
            if version >= 2:
                name = names.get(_id_text(topic.topic_id))
                if name is None:
                    unknown_ids.append(topic)
                    continue
            else:
                name = topic.topic_name
            for p in topic.partitions or ():
                isr = ([b.broker_id for b in p.new_isr_with_epochs or ()] if version >= 3
                       else list(p.new_isr or ()))
                recovery = p.leader_recovery_state if version >= 1 else LEADER_RECOVERED
                wanted[(name, p.partition_index)] = LeaderAndIsr(
                    request.broker_id, p.leader_epoch, tuple(isr), self.ctx.epoch,
                    p.partition_epoch, recovery)
        return wanted, unknown_ids

    def _check_alter_partition(self, broker_id: int, tp: TopicPartition, proposed: LeaderAndIsr,
                               version: int):
        """The proposed LeaderAndIsr when it may be written, the current one when already
        there, else the error code (Kafka's checks, in Kafka's order)."""
        current = self.ctx.leadership.get(tp)
        if current is None:
            return ErrorCode.UNKNOWN_TOPIC_OR_PARTITION
        if (proposed.partition_epoch > current.partition_epoch
                or proposed.leader_epoch > current.leader_epoch):
            # the leader knows a newer state: this controller is likely stale
            return ErrorCode.NOT_CONTROLLER
        if proposed.leader_epoch < current.leader_epoch:
            return ErrorCode.FENCED_LEADER_EPOCH
        if (proposed.leader, proposed.leader_epoch, tuple(proposed.isr),
                proposed.leader_recovery_state) == (
                current.leader, current.leader_epoch, tuple(current.isr),
                current.leader_recovery_state):
            return current      # already so (idempotent retry)
        if proposed.partition_epoch < current.partition_epoch:
            return ErrorCode.INVALID_UPDATE_VERSION
        if proposed.leader_recovery_state == LEADER_RECOVERING and len(proposed.isr) > 1:
            _log.info(f"Rejecting AlterPartition from node {broker_id} for {tp[0]}-{tp[1]} "
                      f"because leader is recovering and ISR is greater than 1")
            return ErrorCode.INVALID_REQUEST
        if (current.leader_recovery_state == LEADER_RECOVERED
                and proposed.leader_recovery_state == LEADER_RECOVERING):
            _log.info(f"Rejecting AlterPartition from node {broker_id} for {tp[0]}-{tp[1]} "
                      f"because the leader recovery state cannot change from RECOVERED to "
                      f"RECOVERING")
            return ErrorCode.INVALID_REQUEST
        ineligible = sorted(set(proposed.isr) - self.ctx.live_broker_ids())
        if ineligible:
            _log.info(f"Rejecting AlterPartition request from node {broker_id} for "
                      f"{tp[0]}-{tp[1]} because it specified ineligible replicas "
                      f"{ineligible} in the new ISR {list(proposed.isr)}.")
            return (ErrorCode.INELIGIBLE_REPLICA if version > 1
                    else ErrorCode.OPERATION_NOT_ATTEMPTED)
        return proposed

    def _alter_partition_response(self, version: int, request, wanted, results,
                                  unknown_ids: list):
        topic_cls = AlterPartitionResponse.TopicData
        part_cls = topic_cls.PartitionData
        topics: dict[str, list] = {}
        for tp in wanted:
            outcome = results[tp]
            if isinstance(outcome, LeaderAndIsr):
                entry = part_cls(partition_index=tp[1], error_code=0, leader_id=outcome.leader,
                                 leader_epoch=outcome.leader_epoch, isr=list(outcome.isr),
                                 leader_recovery_state=outcome.leader_recovery_state,
                                 partition_epoch=outcome.partition_epoch)
            else:
                entry = part_cls(partition_index=tp[1], error_code=int(outcome), leader_id=0,
                                 leader_epoch=0, isr=[], leader_recovery_state=0,
                                 partition_epoch=0)
            topics.setdefault(tp[0], []).append(entry)
        out = []
        for topic in unknown_ids:
            out.append(topic_cls(topic_id=topic.topic_id, topic_name="", partitions=[
                part_cls(partition_index=p.partition_index,
                         error_code=ErrorCode.UNKNOWN_TOPIC_ID, leader_id=0, leader_epoch=0,
                         isr=[], leader_recovery_state=0, partition_epoch=0)
                for p in topic.partitions or ()]))
        for name, parts in topics.items():
            topic_id = _alter_partition_topic_id(self.ctx.topic_ids.get(name))
            out.append(topic_cls(topic_name=name, topic_id=topic_id, partitions=parts))
        return AlterPartitionResponse[version](throttle_time_ms=0, error_code=0, topics=out)

    # -- ElectLeaders (Kafka's processReplicaLeaderElection) ---------------------------
    def _process_ReplicaLeaderElection(self, event: ev.ReplicaLeaderElection):
        ctx, kind = self.ctx, event.election_type
        wanted = event.partitions if event.partitions is not None else ctx.all_partitions()
        if not self._active:
            return {tp: (ErrorCode.NOT_CONTROLLER, None) for tp in wanted}
        results: dict[TopicPartition, tuple[int, str | None]] = {}
        electable = []
        for tp in wanted:
            if not ctx.replicas(tp):
                _log.info(f"Skipping replica leader election ({_kind(kind)}) for partition "
                          f"{tp[0]}-{tp[1]} by AdminClientTriggered since it doesn't exist.")
                results[tp] = (ErrorCode.UNKNOWN_TOPIC_OR_PARTITION,
                               "The partition does not exist.")
            elif ctx.is_topic_queued_for_deletion(tp[0]):
                results[tp] = (ErrorCode.INVALID_TOPIC_EXCEPTION, "The topic is being deleted")
            elif self._election_needed(tp, kind):
                electable.append(tp)
            else:
                results[tp] = (ErrorCode.ELECTION_NOT_NEEDED, _NOT_NEEDED)
        if electable:
            strategy = PREFERRED_STRATEGY if kind == PREFERRED else OFFLINE_UNCLEAN
            outcome = self._psm.handle_state_changes(electable, PartitionStateName.ONLINE, strategy)
            failed = (ErrorCode.PREFERRED_LEADER_NOT_AVAILABLE if kind == PREFERRED
                      else ErrorCode.ELIGIBLE_LEADERS_NOT_AVAILABLE)
            for tp in electable:
                res = (outcome or {}).get(tp)
                if _succeeded(res):
                    # the new leader as a third item: the handler waits to see it
                    results[tp] = (ErrorCode.NO_ERROR, None, res.leader)
                else:
                    if isinstance(res, ControllerMovedError):
                        raise ControllerMovedError(str(res))
                    message = str(res) if isinstance(res, BaseException) and str(res) else (
                        f"Failed to elect leader for partition {tp[0]}-{tp[1]} under "
                        f"strategy {_STRATEGY_NAMES.get(kind)}")
                    _log.info(f"Error completing replica leader election ({_kind(kind)}) for "
                              f"partition {tp[0]}-{tp[1]}", error=message)
                    results[tp] = (failed, message)
            # an unclean election may leave the ISR at a reassignment's targets
            self._after_answer(lambda: self._reassign.on_isr_changed(_elected(outcome)))
        return {tp: results[tp] for tp in wanted}

    # -- partition reassignment (Kafka's processApiPartitionReassignment & co) ---------
    def _process_ApiPartitionReassignment(self, event: ev.ApiPartitionReassignment):
        if not self._active:
            return ErrorCode.NOT_CONTROLLER, NOT_CONTROLLER_MESSAGE
        return self._reassign.process_api(event.reassignments)

    def _process_ListPartitionReassignments(self, event: ev.ListPartitionReassignments):
        if not self._active:
            return ErrorCode.NOT_CONTROLLER, NOT_CONTROLLER_MESSAGE
        return self._reassign.list(event.partitions)

    def _process_ZkPartitionReassignment(self, event: ev.ZkPartitionReassignment) -> None:
        """The legacy znode was created (Kafka acts on creation only; other watch events
        just re-arm the exists watch)."""
        if not self._active:
            return
        if event.created:
            self._reassign.process_zk()
        else:
            self.store.exists(paths.ADMIN_REASSIGN_PARTITIONS,
                              watch=self._reassign_znode_watch())

    def _reassign_znode_watch(self):
        return self._watcher("data", paths.ADMIN_REASSIGN_PARTITIONS,
                             lambda e: ev.ZkPartitionReassignment(
                                 created=e.type == EventType.CREATED))

    # -- /admin/preferred_replica_election (Kafka's ZkTriggered replica election) ---------
    def _process_ZkPreferredReplicaElection(self, _event) -> None:
        if self._active:
            self._preferred_replica_election_from_znode()

    def _preferred_replica_election_from_znode(self) -> None:
        """Run the preferred election the znode asks for, then delete it (watched by an
        exists watch, so its creation is seen)."""
        path = paths.ADMIN_PREFERRED_REPLICA_ELECTION
        watch = self._watcher("data", path, lambda e: ev.ZkPreferredReplicaElection())
        if self.store.exists(path, watch=watch) is None:
            return
        try:
            data, _ = self.store.get(path)
            wanted = paths.decode_preferred_replica_election(data)
        except NoNodeError:
            return
        except ValueError as e:
            _log.warning("unreadable preferred replica election request", error=str(e))
            wanted = []
        try:
            ctx = self.ctx
            electable = [tp for tp in dict.fromkeys(wanted) if ctx.replicas(tp)
                         and not ctx.is_topic_queued_for_deletion(tp[0])
                         and self._election_needed(tp, PREFERRED)]
            if electable:
                _log.info(f"Starting replica leader election (PREFERRED) for partitions "
                          f"{_tps(electable)} triggered by ZkTriggered")
                self._psm.handle_state_changes(electable, PartitionStateName.ONLINE,
                                               PREFERRED_STRATEGY)
        finally:
            try:
                self._zk.write_fenced(DeleteOp(path))
            except NoNodeError:
                pass
            self.store.exists(path, watch=watch)

    # -- auto leader rebalance (Kafka's checkAndTriggerAutoLeaderRebalance) ---------------
    def _schedule_auto_leader_rebalance(self, delay_s: float) -> None:
        if self._rebalance_timer is not None:
            self._rebalance_timer.cancel()
        self._rebalance_timer = asyncio.get_running_loop().call_later(
            delay_s, self._enqueue, ev.AutoPreferredReplicaLeaderElection())

    def _process_AutoPreferredReplicaLeaderElection(self, _event) -> None:
        if not self._active:
            return
        try:
            _log.info("Processing automatic preferred replica leader election")
            self._check_and_trigger_auto_leader_rebalance()
        finally:
            if self._active:
                self._schedule_auto_leader_rebalance(
                    self._broker.config["leader.imbalance.check.interval.seconds"])

    def _check_and_trigger_auto_leader_rebalance(self) -> None:
        """Per preferred broker: if more than leader.imbalance.per.broker.percentage of
        the partitions it should lead are led elsewhere, run a preferred election for
        those whose preferred replica can lead (live and in the ISR)."""
        ctx = self.ctx
        by_preferred: dict[int, list[TopicPartition]] = {}
        for tp in ctx.all_partitions():
            replicas = ctx.replicas(tp)
            if replicas and not ctx.is_topic_queued_for_deletion(tp[0]):
                by_preferred.setdefault(replicas[0], []).append(tp)
        threshold = self._broker.config["leader.imbalance.per.broker.percentage"] / 100
        for preferred, partitions in sorted(by_preferred.items()):
            elsewhere = [tp for tp in partitions if tp in ctx.leadership
                         and ctx.leadership[tp].leader != preferred]
            if len(elsewhere) / len(partitions) <= threshold:
                continue
            candidates = [tp for tp in elsewhere if preferred in ctx.leadership[tp].isr
                          and ctx.is_replica_online(preferred, tp)]
            if candidates:
                _log.info(f"Leader imbalance on broker {preferred}: preferred replica "
                          f"election for {_tps(candidates)}")
                self._psm.handle_state_changes(candidates, PartitionStateName.ONLINE,
                                               PREFERRED_STRATEGY)

    def _election_needed(self, tp: TopicPartition, kind: int) -> bool:
        li = self.ctx.leadership.get(tp)
        leader = li.leader if li is not None else NO_LEADER
        if kind == PREFERRED:
            return leader != self.ctx.replicas(tp)[0]
        return leader == NO_LEADER or leader not in self.ctx.live_broker_ids()


class _TrackedChannel:
    """The channel, counting per broker the requests not yet answered, so shutdown can
    wait for them (``drained``).  A removed broker's requests are dropped by the
    channel without callbacks: its count goes with it."""

    def __init__(self, channel) -> None:
        self._channel = channel
        self._pending: dict[int, int] = {}
        self._idle = asyncio.Event()
        self._idle.set()

    def __getattr__(self, name):
        return getattr(self._channel, name)

    def send(self, node_id: int, request, callback=None) -> None:
        self._pending[node_id] = self._pending.get(node_id, 0) + 1
        self._idle.clear()

        def answered(response, node_id=node_id) -> None:
            self._done(node_id)
            if callback is not None:
                callback(response)
        try:
            self._channel.send(node_id, request, answered)
        except BaseException:
            self._done(node_id)
            raise
        if node_id != self._channel.local_node_id and not self._channel.has_broker(node_id):
            self._forget(node_id)       # not in the channel: dropped at once

    def remove_broker(self, node_id: int) -> None:
        self._channel.remove_broker(node_id)
        self._forget(node_id)

    def close(self) -> None:
        self._channel.close()
        self._pending.clear()
        self._idle.set()

    async def drained(self, timeout_s: float) -> bool:
        try:
            await asyncio.wait_for(self._idle.wait(), timeout_s)
            return True
        except asyncio.TimeoutError:
            _log.warning("controller requests still unanswered at shutdown",
                         pending={b: n for b, n in self._pending.items() if n})
            return False

    def _done(self, node_id: int) -> None:
        if self._pending.get(node_id, 0) > 0:
            self._pending[node_id] -= 1
        self._check_idle()

    def _forget(self, node_id: int) -> None:
        self._pending.pop(node_id, None)
        self._check_idle()

    def _check_idle(self) -> None:
        if not any(self._pending.values()):
            self._idle.set()


# -- helpers -----------------------------------------------------------------------
NOT_CONTROLLER_MESSAGE = "This is not the correct controller for this cluster."


def _ibp_at_least(ibp: str, release: tuple[int, int]) -> bool:
    """``inter.broker.protocol.version`` (``3.9``, ``3.3-IV0``, ``0.10.2``...) at or after
    the first IV of ``release`` (major, minor)."""
    parts = ibp.split("-", 1)[0].split(".")
    try:
        major, minor = int(parts[0]), int(parts[1]) if len(parts) > 1 else 0
    except ValueError:
        return True             # the validator accepted it; assume the current protocol
    return (major, minor) >= release


def _elected(results) -> list[TopicPartition]:
    """The partitions a state machine call wrote a new leader/ISR for."""
    return [tp for tp, r in (results or {}).items() if _succeeded(r)]


def _succeeded(result) -> bool:
    """A state machine result: a LeaderAndIsr (or anything not an exception) is success."""
    return result is not None and not isinstance(result, BaseException)


def _partition_errors(response, topic_ids: dict[str, str]):
    """(tp, error code) of a LeaderAndIsr response: v5+ by topic id, older by name."""
    names = {text: name for name, text in topic_ids.items()}
    for topic in getattr(response, "topics", None) or ():
        tid = topic.topic_id
        name = names.get(tid if isinstance(tid, str) else _id_text(tid))
        if name is None:
            continue
        for pe in topic.partition_errors or ():
            yield (name, pe.partition_index), pe.error_code
    for pe in getattr(response, "partition_errors", None) or ():
        yield (pe.topic_name, pe.partition_index), pe.error_code


def _alter_partition_error(version: int, code: int):
    """AlterPartition answered with a top-level error and no topics (Kafka's
    AlterPartitionRequest.getErrorResponse)."""
    return AlterPartitionResponse[version](throttle_time_ms=0, error_code=int(code), topics=[])


def _alter_partition_topic_id(text: str | None):
    if not text:
        return uuid.UUID(int=0)
    try:
        return parse_topic_id(text)
    except (ValueError, TypeError):
        return uuid.UUID(int=0)


def _store_error_code(exc: Exception) -> int:
    """Kafka's Errors.forException for a failed znode write."""
    if isinstance(exc, NoNodeError):
        return ErrorCode.UNKNOWN_TOPIC_OR_PARTITION
    return ErrorCode.UNKNOWN


def _id_text(topic_id) -> str:
    try:
        return topic_id_text(topic_id)
    except Exception:       # noqa: BLE001 - an id we cannot read matches nothing
        return ""


def _join(ids: Iterable[int]) -> str:
    return ",".join(str(i) for i in ids)


def _set(names: Iterable[str]) -> str:
    return ",".join(sorted(names))


def _tps(partitions: Iterable[TopicPartition]) -> str:
    return ",".join(f"{t}-{p}" for t, p in partitions)


def _kind(kind: int) -> str:
    return "PREFERRED" if kind == PREFERRED else "UNCLEAN"


def _assignment_text(assignment: dict[str, dict[int, list[int]]]) -> str:
    return ", ".join(f"{t}-{p} -> ReplicaAssignment(replicas={','.join(map(str, r))}, "
                     f"addingReplicas=, removingReplicas=)"
                     for t, parts in assignment.items() for p, r in sorted(parts.items()))
