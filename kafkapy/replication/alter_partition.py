"""The broker side of ISR changes (Kafka 3.9's DefaultAlterPartitionManager, ZK mode).

Job: a partition leader's proposed ISR (``Partition``'s pending expand/shrink) goes
to the active controller as AlterPartition v3 (topic ids, NewIsrWithEpochs); the
controller's answer is handed back to the partition, which applies it (new ISR,
leader epoch, partition epoch = the state znode's zk version) unless a newer
LeaderAndIsr replaced the pending change meanwhile.

Invariants (as Kafka's):
 - at most one queued change per partition (``submit`` answers False for a second
   one: Kafka's OPERATION_NOT_ATTEMPTED, the partition goes back to its committed
   state);
 - at most one request in flight; everything submitted meanwhile is batched into
   the next one, sent on the next loop turn after the answer;
 - an item leaves the queue only with an answer for its partition; a top-level
   error (NOT_CONTROLLER, STALE_BROKER_EPOCH, ...), a lost connection or a timeout
   keeps every item and sends them again after a short backoff (Kafka never times
   an AlterPartition out; a LeaderAndIsr makes a late answer harmless);
 - the request goes in-process to this broker's controller when it is the active
   one, else over a ``BrokerConnection`` to the controller's inter-broker endpoint
   in the metadata cache (replaced when the controller moves).

It also owns the two knobs partitions read (``replica_lag_time_max_ms``,
``is_replica_eligible``: alive in the metadata cache, Kafka's ZK-mode
isReplicaIsrEligible) and the periodic ISR-shrink task (``start``: every
replica.lag.time.max.ms / 2, Kafka's isr-expiration).

Wiring: the replica manager is made with this manager (it hands it to every
partition it creates), and the controller is made after both; so neither is
given as an object.  What this manager asks of them are callables that reach
them when called, once the broker works: ``shrink_isrs`` (the isr-expiration
task's check), ``high_watermark_moved(key)`` (wake what waits on a partition whose
new ISR moved its high watermark) and ``controller()`` (this broker's controller,
or None before it exists).
"""
from __future__ import annotations

import asyncio
import uuid
from dataclasses import dataclass
from typing import TYPE_CHECKING, Callable

import structlog

from kafkapy.network.client import BrokerConnection
from kafkapy.network.links import Links
from kafkapy.protocol.errors import ErrorCode, error_name
from kafkapy.protocol.inter_broker import AlterPartitionRequest
from kafkapy.protocol.topic_partition import TopicPartition

if TYPE_CHECKING:   # annotations only
    from kafkapy.config.broker import BrokerConfig
    from kafkapy.controller.controller import KafkaController
    from kafkapy.metadata.cache import MetadataCache
    from kafkapy.replication.partition import Partition, PendingIsrChange

_log = structlog.get_logger("kafkapy.replication.alter_partition")

REQUEST_VERSION = 3         # Kafka 3.9 at IBP 3.9 (KIP-903: NewIsrWithEpochs)
_RETRY_S = 0.05             # Kafka reschedules after a top-level error in 50 ms
_NOT_CONTROLLER_RETRY_S = 0.1   # until the cache names the new controller (retry.backoff.ms)
_CONNECT_RETRY_S = 0.5      # no controller known / unreachable
_ZERO_UUID = uuid.UUID(int=0)

_TopicData = AlterPartitionRequest.TopicData
_PartitionData = _TopicData.PartitionData
_BrokerState = _PartitionData.BrokerState


@dataclass(eq=False)
class _Item:
    partition: Partition
    pending: PendingIsrChange


class AlterPartitionManager:
    """Given to the replica manager when it is made (every partition it creates gets it
    as its ``isr_manager``); reaches the replica manager and the controller only through
    the callables it is given (module docstring: wiring)."""

    def __init__(self, *, config: BrokerConfig, cache: MetadataCache, node_id: int,
                 broker_epoch: Callable[[], int], inter_broker_listener: str,
                 controller: Callable[[], KafkaController | None],
                 shrink_isrs: Callable[[], object],
                 high_watermark_moved: Callable[[TopicPartition], None],
                 links: Links | None = None) -> None:
        self._cache = cache
        self._links = links     # whether the controller is reachable (None: always)
        self._node_id = node_id
        self._broker_epoch = broker_epoch
        self._inter_broker_listener = inter_broker_listener
        self._controller = controller
        self._shrink_isrs = shrink_isrs
        self._high_watermark_moved = high_watermark_moved
        self.replica_lag_time_max_ms = int(config["replica.lag.time.max.ms"])
        self._connect_timeout_s = int(config["controller.socket.timeout.ms"]) / 1000.0
        self._request_timeout_s = int(config["request.timeout.ms"]) / 1000.0
        self._unsent: dict[TopicPartition, _Item] = {}
        self._inflight = False
        self._scheduled: asyncio.Handle | asyncio.TimerHandle | None = None
        self._conn: BrokerConnection | None = None
        self._conn_controller: tuple[int, str, int] | None = None
        self._task: asyncio.Task | None = None
        self._shrink_task: asyncio.Task | None = None
        self._closed = False

    # -- what partitions use ---------------------------------------------------------
    def is_replica_eligible(self, broker_id: int) -> bool:
        """ZK mode: the follower's broker is alive in the metadata cache."""
        return self._cache.is_alive(broker_id)

    def submit(self, partition: Partition, pending: PendingIsrChange) -> bool:
        """Queue ``pending`` for ``partition``; False if a change is already queued."""
        if self._closed:
            return False
        key = (partition.topic, partition.index)
        if key in self._unsent:
            return False
        self._unsent[key] = _Item(partition, pending)
        self._schedule(0)
        return True

    # -- the periodic shrink check ---------------------------------------------------
    def start(self) -> None:
        """Start Kafka's isr-expiration task: ``shrink_isrs`` (the replica manager's
        ``maybe_shrink_isr``) every replica.lag.time.max.ms / 2."""
        if self._shrink_task is None:
            self._shrink_task = asyncio.get_running_loop().create_task(
                self._shrink_periodically(), name="isr-expiration")

    async def _shrink_periodically(self) -> None:
        interval_s = max(self.replica_lag_time_max_ms / 2, 1) / 1000.0
        while not self._closed:
            await asyncio.sleep(interval_s)
            try:
                self._shrink_isrs()
            except Exception:       # noqa: BLE001 - the task must go on
                _log.exception("ISR shrink check failed")

    def close(self) -> None:
        """Stop sending; queued changes are dropped (the broker is stopping)."""
        self._closed = True
        for task in (self._shrink_task, self._task):
            if task is not None:
                task.cancel()
        if self._scheduled is not None:
            self._scheduled.cancel()
        self._unsent.clear()
        self._close_connection()

    # -- sending -------------------------------------------------------------------
    def _schedule(self, delay_s: float) -> None:
        if self._closed or self._inflight or self._scheduled is not None:
            return
        loop = asyncio.get_running_loop()
        self._scheduled = (loop.call_soon(self._send_pending) if delay_s <= 0
                           else loop.call_later(delay_s, self._send_pending))

    def _send_pending(self) -> None:
        self._scheduled = None
        if self._closed or self._inflight or not self._unsent:
            return
        self._inflight = True
        items = list(self._unsent.values())
        self._task = asyncio.get_running_loop().create_task(self._exchange(items),
                                                            name="alter-partition")

    async def _exchange(self, items: list[_Item]) -> None:
        retry_s = 0.0
        try:
            request, names = self._build(items)
            response = await self._send(request)
            if response is None:
                retry_s = _CONNECT_RETRY_S
            else:
                retry_s = self._handle_response(response, items, names)
        except asyncio.CancelledError:
            raise
        except (ConnectionError, asyncio.TimeoutError, OSError) as exc:
            _log.info("AlterPartition to the controller failed; retrying", error=repr(exc))
            self._close_connection()
            retry_s = _CONNECT_RETRY_S
        except Exception:       # noqa: BLE001 - keep the items, try again
            _log.exception("AlterPartition failed; retrying")
            retry_s = _CONNECT_RETRY_S
        finally:
            self._inflight = False
            self._task = None
        # Another batch right away after an answer, later after a failure (Kafka).
        if self._unsent:
            self._schedule(retry_s)

    def _build(self, items: list[_Item]):
        """AlterPartition v3 for ``items``; also the topic id -> name map of the request."""
        by_topic: dict[str, list] = {}
        names: dict[uuid.UUID, str] = {}
        ids: dict[str, uuid.UUID] = {}
        for item in items:
            partition, pending = item.partition, item.pending
            topic = partition.topic
            if topic not in ids:
                meta = self._cache.topic(topic)
                topic_id = meta.topic_id if meta is not None else _ZERO_UUID
                ids[topic] = topic_id
                names[topic_id] = topic
            by_topic.setdefault(topic, []).append(_PartitionData(
                partition_index=partition.index, leader_epoch=pending.leader_epoch,
                new_isr_with_epochs=[_BrokerState(broker_id=r, broker_epoch=self._epoch_of(
                    partition, r)) for r in pending.new_isr],
                leader_recovery_state=pending.leader_recovery_state,
                partition_epoch=pending.partition_epoch))
        request = AlterPartitionRequest[REQUEST_VERSION](
            broker_id=self._node_id, broker_epoch=self._broker_epoch(),
            topics=[_TopicData(topic_id=ids[t], partitions=ps) for t, ps in by_topic.items()])
        return request, names

    def _epoch_of(self, partition: Partition, replica_id: int) -> int:
        """Kafka's addBrokerEpochToIsr: the follower's broker epoch from its fetch."""
        if replica_id == self._node_id:
            return self._broker_epoch()
        follower = partition.followers.get(replica_id)
        return follower.broker_epoch if follower is not None else -1

    async def _send(self, request):
        """The answer, or None when no controller is known."""
        controller = self._controller()      # None until the broker has made it
        if controller is not None and controller.is_active:
            return await controller.alter_partition(request, REQUEST_VERSION)
        found = self._controller_endpoint()
        if found is None:
            return None
        if found != self._conn_controller or self._conn is None or not self._conn.connected:
            self._close_connection()
            _, host, port = found
            conn = BrokerConnection(client_id=f"broker-{self._node_id}-alter-partition",
                                    request_timeout_s=self._request_timeout_s,
                                    links=self._links)
            await conn.connect(host, port, self._connect_timeout_s)
            self._conn, self._conn_controller = conn, found
        return await self._conn.send(request)

    def _controller_endpoint(self) -> tuple[int, str, int] | None:
        controller_id = self._cache.controller_id
        if controller_id is None or controller_id < 0:
            return None
        endpoint = self._cache.brokers_for(self._inter_broker_listener).get(controller_id)
        if endpoint is None:
            return None
        return controller_id, endpoint.host, endpoint.port

    def _close_connection(self) -> None:
        if self._conn is not None:
            self._conn.close()
        self._conn = self._conn_controller = None

    # -- answers -------------------------------------------------------------------
    def _handle_response(self, response, items: list[_Item],
                         names: dict[uuid.UUID, str]) -> float:
        """Kafka's handleAlterPartitionResponse; returns the delay before the next send."""
        error = response.error_code
        if error != ErrorCode.NO_ERROR:
            _log.info("Controller returned a top-level error to AlterPartition; retrying",
                      error=error_name(error))
            if error == ErrorCode.NOT_CONTROLLER:
                self._close_connection()    # the controller moved: look it up again
                return _NOT_CONTROLLER_RETRY_S
            return _RETRY_S
        answers: dict[TopicPartition, object] = {}
        for topic in response.topics or ():
            name = names.get(topic.topic_id)
            if not name:
                _log.error("Received an unexpected topic in the AlterPartition response, "
                           "ignoring it.", topic_id=str(topic.topic_id))
                continue
            for p in topic.partitions or ():
                answers[(name, p.partition_index)] = p
        woken = []
        retried = False
        for item in items:
            key = (item.partition.topic, item.partition.index)
            answer = answers.get(key)
            if answer is None:
                _log.warning("Partition was sent but not included in the response",
                             partition=f"{key[0]}-{key[1]}")
                continue
            if self._unsent.get(key) is item:
                del self._unsent[key]
            moved, retry = item.partition.alter_partition_answered(
                item.pending, answer.error_code, answer.leader_epoch,
                list(answer.isr or ()), answer.partition_epoch)
            if retry and not self._closed:
                self._unsent.setdefault(key, item)
                retried = True
            if moved:
                woken.append(key)
        for key in woken:
            self._high_watermark_moved(key)
        # a partition the controller could not update (its store unreachable) waits a
        # little, instead of being sent again at once for as long as that lasts
        return _RETRY_S if retried else 0.0
