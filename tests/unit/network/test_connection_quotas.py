"""ConnectionQuotas' rules without sockets: per-address limits and overrides, listener slots,
the protected inter-broker listener, Kafka's creation-rate throttle, live reconfiguration."""
from __future__ import annotations

from types import SimpleNamespace

from kafkapy.config.broker import BrokerConfig
from kafkapy.network.connection_quotas import ConnectionQuotas, _Sensor, parse_overrides

TWO_LISTENERS = {
    "listeners": "INTERNAL://127.0.0.1:9092,EXTERNAL://127.0.0.1:9093",
    "listener.security.protocol.map": "INTERNAL:PLAINTEXT,EXTERNAL:PLAINTEXT",
    "inter.broker.listener.name": "INTERNAL"}


def _config(**props) -> BrokerConfig:
    return BrokerConfig.from_properties({k.replace("_", "."): v for k, v in props.items()})


class _Conn:
    def __init__(self, last_active: float) -> None:
        self.last_active, self.closing, self.peer = last_active, False, f"c{last_active}"

    def close(self) -> None:
        self.closing = True


def _server(quotas, listener, conns=()):
    server = SimpleNamespace(listener=listener, open_connections=lambda: list(conns))
    quotas.add_server(server)
    return server


def test_overrides_parse_addresses_names_and_skip_bad_entries():
    assert parse_overrides("127.0.0.2:1, localhost:0,[::1]:4,bad,x:y") == {
        "127.0.0.2": 1, "127.0.0.1": 0, "0:0:0:0:0:0:0:1": 4}
    assert parse_overrides("") == {}


def test_per_address_limit_and_override():
    q = ConnectionQuotas(_config(max_connections_per_ip="2",
                                 max_connections_per_ip_overrides="127.0.0.3:1"))
    assert q.inc("PLAINTEXT", "127.0.0.2") is None and q.inc("PLAINTEXT", "127.0.0.2") is None
    assert q.inc("PLAINTEXT", "127.0.0.2") == 2          # not counted
    assert q.count("127.0.0.2") == 2 and q.total == 2
    assert q.inc("PLAINTEXT", "127.0.0.3") is None and q.inc("PLAINTEXT", "127.0.0.3") == 1
    q.dec("PLAINTEXT", "127.0.0.2")
    assert q.inc("PLAINTEXT", "127.0.0.2") is None


def test_listener_slot_waits_and_wakes_on_close_and_on_a_raised_limit():
    q = ConnectionQuotas(_config(max_connections="1"))
    _server(q, "PLAINTEXT")
    assert q.slot_available("PLAINTEXT")
    q.inc("PLAINTEXT", "127.0.0.1")
    assert not q.slot_available("PLAINTEXT")
    woken = []
    q.wait_for_slot(lambda: woken.append(1))
    q.dec("PLAINTEXT", "127.0.0.1")
    assert woken == [1] and q.slot_available("PLAINTEXT")
    q.inc("PLAINTEXT", "127.0.0.1")
    q.wait_for_slot(lambda: woken.append(2))
    q.reconfigure(_config(max_connections="5"))
    assert woken == [1, 2] and q.slot_available("PLAINTEXT")


def test_protected_listener_evicts_the_least_recently_used_of_the_others():
    q = ConnectionQuotas(_config(max_connections="2", **{k.replace(".", "_"): v
                                                         for k, v in TWO_LISTENERS.items()}))
    old, new = _Conn(1.0), _Conn(2.0)
    _server(q, "EXTERNAL", [old, new])
    _server(q, "INTERNAL")
    q.inc("EXTERNAL", "127.0.0.1")
    q.inc("EXTERNAL", "127.0.0.1")
    assert not q.slot_available("EXTERNAL") and q.slot_available("INTERNAL")
    q.inc("INTERNAL", "127.0.0.1")
    assert old.closing and not new.closing


def test_lowered_max_connections_closes_least_recently_used():
    conns = [_Conn(float(i)) for i in range(4)]
    q = ConnectionQuotas(_config())
    _server(q, "PLAINTEXT", conns)
    for _ in conns:
        q.inc("PLAINTEXT", "127.0.0.1")
    q.reconfigure(_config(max_connections="2"))
    assert [c.closing for c in conns] == [True, True, False, False]


def test_rate_takes_a_burst_then_throttles_like_kafka():
    rate = _Sensor(samples=11, window_ms=1000)
    rate.bound = 1
    assert [rate.record(0) for _ in range(10)] == [0] * 10   # 10 / 10 s window: at the bound
    # 11 / 10 s: (1.1 - 1) / 1 * 10000 ms = 1000 ms, capped at one window
    assert rate.record(0) == 1000
    later = _Sensor(samples=11, window_ms=1000)
    later.bound = 20
    assert max(later.record(0) for _ in range(200)) == 0   # 200 / 10 s = the bound
    assert later.record(0) == 50                            # 20.1/s: 0.1 / 20 * 10000 ms
    assert later.record(1500) == 0                          # 202 / 10.5 s: under it again


def test_ip_connection_creation_rate_override_default_and_untaken_connections():
    q = ConnectionQuotas(_config())         # quota.window.num 11 of 1 s: 10 windows' span

    def ip(address: str) -> int:
        return q.record_ip_creation("PLAINTEXT", address, 0)
    assert ip("127.0.0.1") == 0                 # no ip quota: never throttled
    q.update_ip_rate(None, 1)
    q.update_ip_rate("127.0.0.2", 2)
    assert [ip("127.0.0.1") for _ in range(10)] == [0] * 9 + [0]
    throttled = ip("127.0.0.1")
    assert 0 < throttled <= 1000                # at most one window
    assert ip("127.0.0.1") == throttled         # the refused one was taken back
    assert [ip("127.0.0.2") for _ in range(20)].count(0) == 20
    assert ip("127.0.0.2") > 0
    q.update_ip_rate("127.0.0.2", None)         # back to the default (1/s)
    assert ip("127.0.0.2") > 0
    q.update_ip_rate(None, None)
    assert ip("127.0.0.1") == 0


def test_connections_an_ip_quota_turns_away_leave_the_listener_and_broker_rates():
    """Kafka's updateListenerMetrics: a connection over its address's rate is taken back
    out of the listener's and the broker's creation rates, so a client hammering the
    broker from a throttled address does not hold other addresses' connections back."""
    q = ConnectionQuotas(_config(max_connection_creation_rate="5"))   # 50 over 10 s
    q.update_ip_rate("127.0.0.1", 1)

    def connect(address: str) -> int:
        assert q.record_creation("PLAINTEXT", 0) == 0
        return q.record_ip_creation("PLAINTEXT", address, 0)
    answers = [connect("127.0.0.1") for _ in range(100)]
    assert answers.count(0) == 10               # the address's 1/s over the 10 s span
    # 10 connections counted, not 100: another address is let in at once
    assert [connect("127.0.0.3") for _ in range(40)] == [0] * 40    # 50: the bound
    assert q.record_creation("PLAINTEXT", 0) > 0    # the 51st is over it: held


def test_an_address_idle_for_an_hour_loses_its_rate():
    """Per-IP creation rates expire after an hour without a connection (Kafka's sensor
    expiration): an address seen once is not kept for ever."""
    q = ConnectionQuotas(_config())
    q.update_ip_rate(None, 1)
    q.record_ip_creation("PLAINTEXT", "127.0.0.3", 0)
    q.record_ip_creation("PLAINTEXT", "127.0.0.4", 3_599_999)
    assert set(q._ip_sensors) == {"127.0.0.3", "127.0.0.4"}
    q.record_ip_creation("PLAINTEXT", "127.0.0.4", 3_600_000)       # swept just before
    assert set(q._ip_sensors) == {"127.0.0.3", "127.0.0.4"}
    q.record_ip_creation("PLAINTEXT", "127.0.0.4", 3_659_999)       # a minute on: swept
    assert set(q._ip_sensors) == {"127.0.0.4"}
