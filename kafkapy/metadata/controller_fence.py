"""Which controller this broker obeys: the fence in front of the controller's requests.

LeaderAndIsr, StopReplica and UpdateMetadata change this broker's partitions and metadata
cache, and ControlledShutdown (served by the active controller) moves leaderships off a
broker; anyone who reaches a listener can send them.  ``ControllerFence`` decides, in one
place, whether such a request comes from the controller the metadata store elected.  It
owns the controller epoch this broker knows (Kafka's ReplicaManager.controllerEpoch) and
the controller known for it.

A request from the network (``admit``):

- broker epoch (LeaderAndIsr v2+, StopReplica v1+, UpdateMetadata v5+) not -1 and older
  than this broker's registration -> STALE_BROKER_EPOCH (Kafka's isBrokerEpochStale; a
  newer one is possible: the controller saw the registration first);
- controller epoch older than the known one -> STALE_CONTROLLER_EPOCH;
- the known epoch, from the controller known for it -> admitted; from another id ->
  STALE_CONTROLLER_EPOCH;
- a higher epoch (a new controller's first request, or a forged one), or any epoch while
  no controller is known yet -> the store is read: admitted only when ``/controller_epoch``
  holds exactly the request's epoch and ``/controller`` names exactly its controller id,
  which then become the known ones; anything else -> STALE_CONTROLLER_EPOCH.
  Only this rare path reads the store, off the event loop for ZooKeeper, after a
  ``sync`` (the ZooKeeper server this broker reads from may lag behind the one the new
  controller wrote through).  A store that
  cannot answer (connection loss) closes the connection instead: the sending controller
  resends the same request after a backoff, as after a network failure (kafkapy's
  channel and Kafka's RequestSendThread both do).

Refusals the store decided (or a wrong controller id at the known epoch) are logged once
per connection, one line.  Kafka 3.9 without an authorizer takes a higher epoch from
anyone; this fence is why one forged request cannot make a broker refuse its real
controller (STALE_CONTROLLER_EPOCH to every later request) until a restart.

A request the active controller delivers to itself in-process (``admit_local``) is its
own decision, taken after it won that epoch in the store: only the broker epoch and the
older-epoch checks apply, and its epoch and id become the known ones, with no store read.

ControlledShutdown (``check_controlled_shutdown``) reads ``/brokers/ids/<id>``: a broker
that is not registered -> BROKER_NOT_AVAILABLE (Kafka's answer for an unknown broker); a
request not carrying exactly that registration's czxid (the broker epoch: a different
one, -1, or none at all in v0-1) -> STALE_BROKER_EPOCH.  Kafka 3.9 brokers (IBP >= 2.4)
and kafkapy's shutdown client send v3 with their epoch.

Invariants: the known epoch only grows; a refused request changes nothing here; store
confirmations run one at a time, and requests arriving meanwhile wait for it and are then
decided in arrival order against what it left; all state is touched from the event loop.
"""
from __future__ import annotations

import asyncio
from typing import Callable

import structlog

from kafkapy.api.context import CloseConnection
from kafkapy.metadata import paths
from kafkapy.metadata.store import STORE_UNAVAILABLE, ConnectionClosedError, NoNodeError
from kafkapy.metadata.zk_store import ZooKeeperStore
from kafkapy.protocol.errors import ErrorCode

_log = structlog.get_logger("kafkapy.metadata.controller_fence")

UNKNOWN_BROKER_EPOCH = -1
#: The first version carrying broker_epoch: LeaderAndIsr 2, StopReplica 1, UpdateMetadata 5,
#: ControlledShutdown 2.
_BROKER_EPOCH_SINCE = {4: 2, 5: 1, 6: 5, 7: 2}
_CANNOT_ANSWER = (*STORE_UNAVAILABLE, ConnectionClosedError)
_MAX_WARNED_PEERS = 1024
_ASK_STORE = object()       # ``_check``: only the store can tell


class StoreCannotConfirm(CloseConnection):
    """The store did not answer: the connection closes unanswered (the sender retries)."""


class ControllerFence:
    def __init__(self, store, broker_epoch: Callable[[], int]) -> None:
        """``broker_epoch()`` is this broker's current registration czxid (-1 before it)."""
        self._store = store
        self._broker_epoch = broker_epoch
        #: the highest controller epoch seen (0: Kafka's InitialControllerEpoch)
        self.epoch = 0
        #: the controller known for ``epoch`` (None: none confirmed yet)
        self.controller_id: int | None = None
        self._confirming: asyncio.Future | None = None
        self._warned: dict[str, None] = {}      # peers already logged, oldest first

    # -- LeaderAndIsr, StopReplica, UpdateMetadata ----------------------------------------
    def admit_local(self, request) -> int:
        """In-process from this broker's own controller: 0 (epoch taken) or the error."""
        code = self._check(request)
        if code is _ASK_STORE:
            self._take(request)
            return ErrorCode.NO_ERROR
        return code

    async def admit(self, request, peer: str) -> int:
        """From the network: 0 (epoch taken) or the error that refuses the whole request.
        Raises ``StoreCannotConfirm`` when a needed store read fails."""
        while self._confirming is not None:
            await asyncio.shield(self._confirming)
        code = self._check(request)
        if code is not _ASK_STORE:
            if code == ErrorCode.STALE_CONTROLLER_EPOCH and request.controller_epoch == self.epoch:
                self._refused(request, peer, known_controller=self.controller_id)
            return code
        self._confirming = confirming = asyncio.get_running_loop().create_future()
        try:
            store_epoch, store_controller = await self._read_controller()
        finally:
            self._confirming = None
            if not confirming.done():
                confirming.set_result(None)
        code = self._check(request)     # an in-process delivery may have moved it meanwhile
        if code is not _ASK_STORE:
            return code
        if (request.controller_epoch, request.controller_id) != (store_epoch, store_controller):
            self._refused(request, peer, store_epoch=store_epoch,
                          store_controller=store_controller)
            return ErrorCode.STALE_CONTROLLER_EPOCH
        _log.info(f"Controller {request.controller_id} at epoch {request.controller_epoch} "
                  "confirmed by the metadata store", known_epoch=self.epoch)
        self._take(request)
        return ErrorCode.NO_ERROR

    def _check(self, request):
        """The decision without the store: an error code, 0, or ``_ASK_STORE``."""
        if self._broker_epoch_is_stale(request):
            return ErrorCode.STALE_BROKER_EPOCH
        epoch = request.controller_epoch
        if epoch < self.epoch:
            return ErrorCode.STALE_CONTROLLER_EPOCH
        if epoch > self.epoch or self.controller_id is None:
            return _ASK_STORE
        if request.controller_id != self.controller_id:
            return ErrorCode.STALE_CONTROLLER_EPOCH
        return ErrorCode.NO_ERROR

    def _take(self, request) -> None:
        self.epoch = request.controller_epoch
        self.controller_id = request.controller_id

    def _broker_epoch_is_stale(self, request) -> bool:
        epoch = _broker_epoch(request)
        return epoch != UNKNOWN_BROKER_EPOCH and epoch < self._broker_epoch()

    async def _read_controller(self) -> tuple[int | None, int | None]:
        """(``/controller_epoch``, ``/controller``'s broker id); None for a missing or
        unreadable node (which confirms nothing)."""
        epoch, controller = await self._read([paths.CONTROLLER_EPOCH, paths.CONTROLLER])
        return (_decoded(epoch, paths.decode_controller_epoch),
                _decoded(controller, lambda data: paths.decode_controller(data).broker_id))

    # -- ControlledShutdown ------------------------------------------------------------
    async def check_controlled_shutdown(self, request, peer: str) -> int:
        """0 when ``request`` names a registered broker with its registration's epoch,
        else the error to answer.  Raises ``StoreCannotConfirm`` when the read fails."""
        broker_id = request.broker_id
        (registration,) = await self._read([paths.broker_path(broker_id)])
        if isinstance(registration, NoNodeError):
            return ErrorCode.BROKER_NOT_AVAILABLE
        if isinstance(registration, Exception):
            raise StoreCannotConfirm(repr(registration))
        registered = registration[1].czxid
        epoch = _broker_epoch(request)
        if epoch == registered:
            return ErrorCode.NO_ERROR
        self._warn(peer, f"Refused ControlledShutdown of broker {broker_id}: broker epoch "
                         f"{epoch} is not its registration's {registered}",
                   version=request.version, peer=peer)
        return ErrorCode.STALE_BROKER_EPOCH

    # -- shared ------------------------------------------------------------------------
    async def _read(self, wanted: list[str]) -> list:
        """``get_many`` of ``wanted``: ZooKeeper's round trip runs in a worker thread (kazoo
        is thread-safe); an in-memory store answers on the loop (it is not thread-safe).
        Raises ``StoreCannotConfirm`` when the store cannot answer."""
        if isinstance(self._store, ZooKeeperStore):
            try:
                results = await asyncio.get_running_loop().run_in_executor(
                    None, self._synced_get_many, wanted)
            except RuntimeError as err:     # the executor is gone: the broker is stopping
                raise StoreCannotConfirm(str(err)) from None
        else:
            results = self._store.get_many(wanted)
        for result in results:
            if isinstance(result, _CANNOT_ANSWER):
                raise StoreCannotConfirm(f"the metadata store cannot answer: {result!r}")
        return results

    def _synced_get_many(self, wanted: list[str]) -> list:
        """``get_many`` after a ``sync``: the ZooKeeper server this broker talks to may lag
        behind the one the new controller wrote through, and a genuine new controller's
        request refused here would not be resent."""
        try:
            self._store.sync(wanted[0])
        except Exception as err:        # noqa: BLE001 - every read then fails alike
            return [err for _ in wanted]
        return self._store.get_many(wanted)

    def _refused(self, request, peer: str, **details) -> None:
        self._warn(peer, f"Refused {type(request).__name__} of controller "
                         f"{request.controller_id} at epoch {request.controller_epoch}: "
                         "not confirmed by the metadata store",
                   version=request.version, known_epoch=self.epoch, peer=peer, **details)

    def _warn(self, peer: str, message: str, /, **details) -> None:
        """One line per connection (``peer`` is its "host:port")."""
        if peer in self._warned:
            return
        if len(self._warned) >= _MAX_WARNED_PEERS:
            del self._warned[next(iter(self._warned))]
        self._warned[peer] = None
        _log.warning(message, **details)


def _broker_epoch(request) -> int:
    if request.version >= _BROKER_EPOCH_SINCE[request.API_KEY]:
        return request.broker_epoch
    return UNKNOWN_BROKER_EPOCH


def _decoded(result, decode) -> int | None:
    if isinstance(result, Exception):
        return None
    try:
        return decode(result[0])
    except ValueError:          # ZNodeDataError: not what a controller writes
        return None
