"""The broker side of controlled shutdown (Kafka 3.9 KafkaServer.controlledShutdown, ZK mode).

Before it stops, a broker asks the active controller to move leadership away
from it: ControlledShutdownRequest v3 (broker_id, broker_epoch) to the
controller found in this broker's MetadataCache (controller_id, and that
broker's endpoint on the inter-broker listener).  The controller answers with
the partitions this broker still leads; the broker tries
``controlled.shutdown.max.retries`` times, waiting
``controlled.shutdown.retry.backoff.ms`` after a failed attempt (an error code,
partitions remaining, no known controller, or a network failure/timeout),
and then shuts down either way.

As Kafka: one connection is kept across attempts and replaced only when the
controller changed or the previous attempt failed on the network; an attempt
when the cache knows no controller reuses the previous controller if there was
one; connect timeout = controller.socket.timeout.ms, answer timeout =
request.timeout.ms; client id = the broker id.  Differences: no wait after the
last attempt (Kafka sleeps once more before giving up), and when this broker is
itself the active controller the request is handled in-process (its
``KafkaController.controlled_shutdown``) instead of through its own listener, so
it works whatever the order in which the server closes listeners.

The broker epoch is read at each attempt (``broker_epoch()``): a ZooKeeper session
replaced meanwhile registers the broker again under a new one.
"""
from __future__ import annotations

import asyncio
from typing import TYPE_CHECKING, Awaitable, Callable

import structlog

from kafkapy.network.client import BrokerConnection
from kafkapy.network.links import Links
from kafkapy.protocol.errors import ErrorCode
from kafkapy.protocol.inter_broker import ControlledShutdownRequest

if TYPE_CHECKING:
    from kafkapy.config.broker import BrokerConfig
    from kafkapy.controller.controller import KafkaController
    from kafkapy.metadata.cache import MetadataCache

_log = structlog.get_logger("kafkapy.controller.shutdown")
_REQUEST_VERSION = 3  # IBP >= 2.4-IV1

Endpoint = tuple[int, str, int]  # (controller id, host, port)
EndpointLookup = Callable[[], "Endpoint | None"]


def cache_controller_endpoint(cache: MetadataCache,
                              inter_broker_listener: str) -> Endpoint | None:
    """The controller's endpoint on ``inter_broker_listener`` from the metadata cache, or
    None when unknown."""
    controller_id = cache.controller_id
    if controller_id is None or controller_id < 0:
        _log.info("No controller present in the metadata cache")
        return None
    endpoint = cache.brokers_for(inter_broker_listener).get(controller_id)
    if endpoint is None:
        _log.info("Broker registration for controller is not available in the metadata cache",
                  controller=controller_id)
        return None
    return controller_id, endpoint.host, endpoint.port


async def controlled_shutdown(*, config: BrokerConfig, cache: MetadataCache,
                              inter_broker_listener: str, node_id: int,
                              broker_epoch: Callable[[], int],
                              controller: KafkaController | None,
                              controller_endpoint_lookup: EndpointLookup | None = None,
                              retries: int | None = None, backoff_ms: int | None = None,
                              socket_timeout_ms: int | None = None,
                              request_timeout_ms: int | None = None,
                              links: Links | None = None,
                              sleep: Callable[[float], Awaitable[None]] = asyncio.sleep) -> bool:
    """True when the controller reported no partitions left on this broker.  The
    controller is found in ``cache`` unless ``controller_endpoint_lookup`` is given;
    ``controller`` is this broker's own, asked in-process while it is the active one;
    ``links``: whether the controller is reachable (None: always)."""
    retries = int(config["controlled.shutdown.max.retries"] if retries is None else retries)
    backoff_ms = int(config["controlled.shutdown.retry.backoff.ms"] if backoff_ms is None else backoff_ms)
    connect_timeout_s = _ms(config, "controller.socket.timeout.ms", socket_timeout_ms) / 1000.0
    request_timeout_s = _ms(config, "request.timeout.ms", request_timeout_ms) / 1000.0
    lookup = controller_endpoint_lookup or (
        lambda: cache_controller_endpoint(cache, inter_broker_listener))
    attempt = _Attempts(node_id, broker_epoch, controller, connect_timeout_s, request_timeout_s,
                        links)
    _log.info("Starting controlled shutdown", broker=node_id, retries=retries)
    try:
        remaining_retries = retries
        while remaining_retries > 0:
            remaining_retries -= 1
            if await attempt.run(lookup()):
                _log.info("Controlled shutdown succeeded", broker=node_id)
                return True
            if remaining_retries > 0:
                await sleep(backoff_ms / 1000.0)
                _log.warning("Retrying controlled shutdown after the previous attempt failed...",
                             retries_remaining=remaining_retries)
    finally:
        attempt.close()
    _log.warning("Proceeding to do an unclean shutdown as all the controlled shutdown attempts failed",
                 broker=node_id)
    return False


class _Attempts:
    """The state carried between attempts: the controller last used and its connection."""

    def __init__(self, node_id: int, broker_epoch: Callable[[], int],
                 controller: KafkaController | None, connect_timeout_s: float,
                 request_timeout_s: float, links: Links | None) -> None:
        self._node_id = node_id
        self._links = links
        self._broker_epoch = broker_epoch
        self._local = controller
        self._connect_timeout_s = connect_timeout_s
        self._request_timeout_s = request_timeout_s
        self._controller: Endpoint | None = None
        self._conn: BrokerConnection | None = None

    async def run(self, found: Endpoint | None) -> bool:
        if found is not None and found != self._controller:
            self.close()
            self._controller = found
        if self._controller is None:
            return False
        local = self._local
        if self._controller[0] == self._node_id and local is not None and local.is_active:
            error_code, remaining = await local.controlled_shutdown(
                self._node_id, self._broker_epoch())
            return _succeeded(error_code, [f"{t}-{p}" for t, p in remaining])
        try:
            response = await self._send()
        except (ConnectionError, asyncio.TimeoutError, OSError) as exc:
            self.close()  # Kafka's ioException: connect afresh next time
            _log.warning("Error during controlled shutdown, possibly because leader movement took "
                         "longer than the configured controller.socket.timeout.ms and/or "
                         "request.timeout.ms", error=repr(exc), controller=self._controller[0])
            return False
        remaining = [f"{p.topic_name}-{p.partition_index}" for p in response.remaining_partitions]
        return _succeeded(response.error_code, remaining)

    async def _send(self):
        if self._conn is None or not self._conn.connected:
            self.close()
            _, host, port = self._controller
            conn = BrokerConnection(client_id=str(self._node_id),
                                    request_timeout_s=self._request_timeout_s,
                                    links=self._links)
            await conn.connect(host, port, self._connect_timeout_s)
            self._conn = conn
        request = ControlledShutdownRequest[_REQUEST_VERSION](
            broker_id=self._node_id, broker_epoch=self._broker_epoch())
        return await self._conn.send(request)

    def close(self) -> None:
        if self._conn is not None:
            self._conn.close()
            self._conn = None


def _succeeded(error_code: int, remaining: list[str]) -> bool:
    if error_code == ErrorCode.NO_ERROR and not remaining:
        return True
    if remaining:
        _log.info("Remaining partitions to move", partitions=remaining)
    if error_code != ErrorCode.NO_ERROR:
        _log.info("Error from controller", error=_error_name(error_code))
    return False


def _error_name(code: int) -> str:
    try:
        return ErrorCode(code).name
    except ValueError:
        return str(code)


def _ms(config, key: str, given: int | None) -> int:
    return int(config[key] if given is None else given)
