"""The request quota (Kafka's ClientRequestQuotaManager) on a mock clock: the request's
loop time as a percentage, the throttle bounded to one window, the answer carrying the
larger throttle, exempt requests, and one record per request."""
from __future__ import annotations

from kafkapy.api.context import RequestContext
from kafkapy.api.request_timer import RequestTimer
from kafkapy.clock import MockClock
from kafkapy.protocol.messages import RESPONSES
from kafkapy.quota.client import DEFAULT, ClientQuotas
from kafkapy.quota.request import RequestQuota, exempt, record
from kafkapy.network.zero_copy import ZeroCopyResponse

_MS = 1_000_000     # ns
_METADATA, _LEADER_AND_ISR, _PRODUCE = 3, 4, 0


class _Connection:
    def __init__(self) -> None:
        self.throttles: list[int] = []

    def throttle(self, throttle_ms: int) -> None:
        self.throttles.append(throttle_ms)

    def on_close(self, callback):
        return lambda: None


def _quotas(percentage: float | None = 1.0, entity=(None, DEFAULT)):
    clock = MockClock()
    quotas = ClientQuotas(None, clock)
    if percentage is not None:
        quotas.request.set_quota(entity, percentage)
    return quotas, clock


def _ctx(loop_ms: float, api_key: int = _METADATA, version: int = 9, client_id: str = "C",
         connection=None, connection_auth=None) -> RequestContext:
    ctx = RequestContext(None, api_key, version, 1, client_id, "127.0.0.1:1",
                         RESPONSES.get(api_key, object), connection=connection,
                         connection_auth=connection_auth)
    ctx.timer = RequestTimer()
    ctx.timer.ns = int(loop_ms * _MS)
    return ctx


def _metadata_answer(throttle_ms: int = 0):
    return RESPONSES[_METADATA](version=9, throttle_time_ms=throttle_ms, brokers=[],
                                cluster_id=None, controller_id=0, topics=[])


def test_loop_time_is_a_percentage_and_the_throttle_is_bounded_to_one_window():
    quotas, clock = _quotas(1.0)
    # 100 ms of loop time is 10 %: over the 10 windows a fresh rate assumes, 1 %/s
    assert record(quotas.request, _ctx(100)) == 0
    assert quotas.request.sensor("ANONYMOUS", "C").rate.measure(clock.time_ms()) == 1.0
    # 20 % over 10 s = 2 %/s: Kafka's throttle (2 - 1) / 1 * 10 s, bounded to one window
    assert record(quotas.request, _ctx(100)) == 1000
    # a byte-rate quota of the same excess is not bounded
    quotas.produce.set_quota((None, DEFAULT), 1.0)
    quotas.produce.record("ANONYMOUS", "C", 10)
    assert quotas.produce.record("ANONYMOUS", "C", 10) == 10_000


def test_a_small_excess_throttles_less_than_a_window():
    quotas, clock = _quotas(1.0)
    record(quotas.request, _ctx(100))
    clock.advance(11_000)           # that sample has left the 11 windows
    assert record(quotas.request, _ctx(95)) == 0
    # 10.5 % over the 10 s minimum window: (1.05 - 1) / 1 * 10 s
    assert record(quotas.request, _ctx(10)) == 500


def test_recorded_once_and_only_with_a_timer():
    quotas, _ = _quotas(1.0)
    ctx = _ctx(100)
    record(quotas.request, ctx)
    assert record(quotas.request, _ctx(0)) == 0
    assert record(quotas.request, ctx) == 0         # already recorded: nothing added
    untimed = _ctx(100)
    untimed.timer = None                            # no quota when it was dispatched
    assert record(quotas.request, untimed) == 0
    assert quotas.request.sensor("ANONYMOUS", "C").rate.measure(0) < 1.1


def test_unlimited_clients_and_disabled_quota_are_not_throttled():
    quotas, _ = _quotas(1.0, entity=(None, "limited"))
    for _ in range(20):
        assert record(quotas.request, _ctx(500, client_id="other")) == 0
    assert record(quotas.request, _ctx(100, client_id="limited")) == 0
    assert record(quotas.request, _ctx(100, client_id="limited")) == 1000
    disabled, _ = _quotas(None)
    assert not RequestQuota(disabled.request).enabled
    assert record(disabled.request, _ctx(10_000)) == 0


def test_completed_answers_the_throttle_and_mutes_the_connection():
    quotas, _ = _quotas(1.0)
    hook = RequestQuota(quotas.request)
    assert hook.enabled
    conn = _Connection()
    first = _metadata_answer()
    hook.completed(_ctx(100, connection=conn), first)
    assert first.throttle_time_ms == 0 and conn.throttles == []
    second = _metadata_answer()
    hook.completed(_ctx(100, connection=conn), second)
    assert second.throttle_time_ms == 1000 and conn.throttles == [1000]
    sensor = quotas.request.sensor("ANONYMOUS", "C")
    assert (sensor.throttled, sensor.throttle_ms_total) == (1, 1000)


def test_the_larger_throttle_is_answered():
    quotas, _ = _quotas(1.0)
    hook = RequestQuota(quotas.request)
    hook.completed(_ctx(100), _metadata_answer())
    conn = _Connection()
    # the byte-rate throttle the handler answered (and muted for) is the longer one
    longer = _metadata_answer(throttle_ms=5000)
    hook.completed(_ctx(100, connection=conn), longer)
    assert longer.throttle_time_ms == 5000 and conn.throttles == []
    assert quotas.request.sensor("ANONYMOUS", "C").throttled == 0
    shorter = _metadata_answer(throttle_ms=10)
    hook.completed(_ctx(100, connection=conn), shorter)
    assert shorter.throttle_time_ms == 1000 and conn.throttles == [1000]


def test_an_answer_under_a_zero_copy_wrapper_and_one_without_the_field():
    quotas, _ = _quotas(1.0)
    hook = RequestQuota(quotas.request)
    hook.completed(_ctx(100), _metadata_answer())
    wrapped = ZeroCopyResponse(_metadata_answer(), {})
    hook.completed(_ctx(100), wrapped)
    assert wrapped.response.throttle_time_ms == 1000
    conn = _Connection()
    old = RESPONSES[_METADATA](version=0, brokers=[], topics=[])    # no throttle field
    hook.completed(_ctx(100, version=0, connection=conn), old)
    assert conn.throttles == [1000]     # muted all the same, as Kafka's channel


def test_exempt_requests_are_never_recorded():
    quotas, _ = _quotas(1.0)
    hook = RequestQuota(quotas.request)
    conn = _Connection()
    for ctx, answer in [
            (_ctx(10_000, api_key=_LEADER_AND_ISR, version=7, connection=conn), object()),
            (_ctx(10_000, api_key=_PRODUCE, version=9, connection=conn), None),    # acks=0
            (_ctx(10_000, connection=conn, connection_auth=object()), _metadata_answer())]:
        hook.completed(ctx, answer)
        assert ctx.timer.recorded
    follower = _ctx(10_000, api_key=1, version=12, connection=conn)
    exempt(follower)
    hook.completed(follower, None)
    assert conn.throttles == [] and not quotas.request.sensors


def test_request_sensors_in_the_metrics_values():
    quotas, clock = _quotas(1.0)
    hook = RequestQuota(quotas.request)
    hook.completed(_ctx(100), _metadata_answer())
    hook.completed(_ctx(100), _metadata_answer())
    rows = [row for row in quotas.sensor_values() if row[0] == "Request"]
    assert rows == [("Request", "", "C", 2.0, 1000.0)]
