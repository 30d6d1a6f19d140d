"""The request quota: Kafka 3.9's ClientRequestQuotaManager (``request_percentage``).

Kafka records, per request, the time a request handler thread spent on it as a
percentage of one second (``nanos * 100 / 1e9``) into the client's ``Request`` sensor
(the same eight user/client-id levels, windows and rate as the byte-rate quotas:
``ClientQuotas.request``); when the client's rate is then above its
``request_percentage``, the answer carries the throttle time, at most one quota window
(``quota.window.size.seconds``), and the channel is muted for it.  kafkapy has one event
loop: the time is the loop time spent in the request's handler
(``kafkapy.api.request_timer``), and 100 % is the whole loop.

Which requests (Kafka's KafkaApis and RequestHandlerHelper):
- exempt: the inter-broker requests Kafka answers with ``sendResponseExemptThrottle``
  (LeaderAndIsr, StopReplica, UpdateMetadata, ControlledShutdown, WriteTxnMarkers,
  AlterPartition), a follower's Fetch, a Produce with acks=0 (no answer), and the SASL
  exchange of a connection still authenticating (Kafka's authenticator answers those
  before any request handler sees them);
- every other request is recorded once: by the handlers whose own quota also throttles
  them, with it (``record``): a consumer Fetch when its answer is decided (a throttled
  fetch answers no partitions, as Kafka's getThrottledResponse), a Produce with its byte
  rate, CreateTopics/CreatePartitions/DeleteTopics with the controller mutation quota;
  the others when their answer is ready (``RequestQuota.completed``);
- the throttle answered is the larger of the two, the connection is muted for it, and
  only the larger one's throttle-time sensor counts it (Kafka's choice of quota manager
  to throttle with).

Cost: with no ``request_percentage`` configured anywhere, ``enabled`` is False: the
listener makes no timer and calls nothing here.
"""
from __future__ import annotations

from typing import TYPE_CHECKING, Callable

from kafkapy.quota.client import session_user

if TYPE_CHECKING:
    from kafkapy.api.context import RequestContext
    from kafkapy.quota.client import ClientQuotaManager

#: ``ClientRequestQuotaManager.NanosToPercentagePerSecond``
NANOS_TO_PERCENTAGE = 100.0 / 1_000_000_000
#: Requests answered with Kafka's sendResponseExemptThrottle whatever their content.
EXEMPT_API_KEYS = frozenset({
    4,      # LeaderAndIsr
    5,      # StopReplica
    6,      # UpdateMetadata
    7,      # ControlledShutdown
    27,     # WriteTxnMarkers
    56,     # AlterPartition
})


def record(quota: ClientQuotaManager, ctx: RequestContext) -> int:
    """Record the request's loop time so far: the request throttle in ms (0 when within
    the quota, unquoted, or already recorded)."""
    timer = ctx.timer
    if timer is None or timer.recorded:
        return 0
    timer.recorded = True
    if not quota.enabled:
        return 0
    return quota.record(session_user(ctx.session), ctx.client_id or "",
                        timer.elapsed_ns() * NANOS_TO_PERCENTAGE)


def exempt(ctx: RequestContext) -> None:
    """The request's time is not held against its client (a follower's Fetch)."""
    if ctx.timer is not None:
        ctx.timer.recorded = True


class RequestQuota:
    """The listener's side of the request quota (``kafkapy.api.request_timer.RequestQuota``)."""

    def __init__(self, quota: ClientQuotaManager) -> None:
        self._quota = quota

    @property
    def enabled(self) -> bool:
        return self._quota.enabled

    def completed(self, ctx: RequestContext, response) -> None:
        if response is None or ctx.api_key in EXEMPT_API_KEYS or ctx.connection_auth is not None:
            exempt(ctx)
            return
        throttle_ms = record(self._quota, ctx)
        if throttle_ms <= 0:
            return
        answer = _message(response)
        fields = getattr(type(answer), "fields", None)
        answered = (getattr(answer, "throttle_time_ms", 0) or 0) if fields else 0
        if throttle_ms <= answered:
            return      # a longer throttle of the handler's own: already answered and muted
        throttled(self._quota, ctx, throttle_ms)
        if fields is not None and "throttle_time_ms" in fields:
            answer.throttle_time_ms = throttle_ms
        ctx.throttle(throttle_ms)


def throttled(quota: ClientQuotaManager, ctx: RequestContext, throttle_ms: int) -> None:
    """Count a request throttle in the client's Request throttle-time sensor."""
    quota.throttled(session_user(ctx.session), ctx.client_id or "", throttle_ms)


def throttle_with(quota: ClientQuotaManager, ctx: RequestContext, own_ms: int,
                  count_own: Callable[[int], None]) -> int:
    """The throttle of a request whose handler has a quota of its own (byte rate,
    controller mutations) that throttles it ``own_ms``: the request's time recorded in
    ``quota`` too, the larger throttle counted in its sensor (``count_own`` for the
    handler's), the connection muted for it; answers it (0: none)."""
    request_ms = record(quota, ctx)
    throttle_ms = max(own_ms, request_ms)
    if throttle_ms <= 0:
        return 0
    if own_ms > request_ms:
        count_own(own_ms)
    else:
        throttled(quota, ctx, request_ms)
    ctx.throttle(throttle_ms)
    return throttle_ms


def _message(response):
    """The message object of an answer, under its zero-copy or spliced wrapper."""
    for _ in range(3):
        if isinstance(getattr(type(response), "fields", None), dict):
            return response
        inner = getattr(response, "response", None)
        if inner is None:
            return response
        response = inner
    return response
