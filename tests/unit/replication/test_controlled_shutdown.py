"""Broker-side controlled shutdown against fake controllers (asyncio servers on 127.0.0.1).

The fake answers ControlledShutdown v3 from a script (remaining partitions,
errors, dropped connections, no answer), so the retry rules can be checked
without a cluster.  Backoff waits go through an injected sleep that records them.
"""
from __future__ import annotations

import asyncio

from kafkapy.replication.controlled_shutdown import cache_controller_endpoint, controlled_shutdown
from kafkapy.metadata.cache import BrokerEndpoint, MetadataCache
from kafkapy.protocol.inter_broker import ControlledShutdownResponse
from tests.support.broker_process import free_port
from tests.support.fake_broker_server import fakes  # noqa: F401  (fixture)

Remaining = ControlledShutdownResponse.RemainingPartition
WAIT_S = 20.0


def scripted(*answers):
    """Respond with the scripted (error_code, [(topic, partition)]) answers, the last one repeated."""
    queue = list(answers)

    def respond(request):
        error_code, remaining = queue.pop(0) if len(queue) > 1 else queue[0]
        return ControlledShutdownResponse[request.API_VERSION](
            error_code=error_code,
            remaining_partitions=[Remaining(topic_name=t, partition_index=p) for t, p in remaining])
    return respond


def make_broker(node_id: int = 3, broker_epoch: int = 4242, controller=None) -> dict:
    """What ``controlled_shutdown`` is given by the broker (keyword arguments)."""
    config = {"controlled.shutdown.max.retries": 3, "controlled.shutdown.retry.backoff.ms": 5000,
              "controller.socket.timeout.ms": 2000, "request.timeout.ms": 2000}
    cache = MetadataCache("cluster", node_id, inter_broker_listener="INTERNAL")
    return dict(config=config, cache=cache, inter_broker_listener="INTERNAL", node_id=node_id,
                broker_epoch=lambda: broker_epoch, controller=controller)


class Sleeps:
    def __init__(self) -> None:
        self.waits: list[float] = []

    async def __call__(self, seconds: float) -> None:
        self.waits.append(seconds)


async def run(broker, lookup, sleeps=None, **kw) -> bool:
    return await asyncio.wait_for(controlled_shutdown(
        **broker, controller_endpoint_lookup=lookup, sleep=sleeps or Sleeps(), **kw), WAIT_S)


async def test_first_attempt_succeeds_with_v3_broker_id_and_epoch(fakes):
    controller = await fakes(respond=scripted((0, [])))
    broker = make_broker()
    sleeps = Sleeps()
    assert await run(broker, lambda: (1, "127.0.0.1", controller.port), sleeps)
    [(api_key, request, client_id)] = controller.received
    assert (api_key, request.API_VERSION) == (7, 3)
    assert (request.broker_id, request.broker_epoch) == (3, 4242)
    assert client_id == "3"
    assert sleeps.waits == []


async def test_retries_while_partitions_remain_then_succeeds(fakes):
    controller = await fakes(respond=scripted((0, [("t", 0), ("t", 1)]), (0, [("t", 1)]), (0, [])))
    sleeps = Sleeps()
    assert await run(make_broker(), lambda: (1, "127.0.0.1", controller.port), sleeps)
    assert len(controller.received) == 3
    assert sleeps.waits == [5.0, 5.0]  # controlled.shutdown.retry.backoff.ms between attempts
    assert controller.connections == 1  # one connection kept across answered attempts


async def test_gives_up_after_max_retries(fakes):
    controller = await fakes(respond=scripted((0, [("t", 0)])))
    sleeps = Sleeps()
    assert not await run(make_broker(), lambda: (1, "127.0.0.1", controller.port), sleeps,
                         retries=4, backoff_ms=10)
    assert len(controller.received) == 4
    assert sleeps.waits == [0.01, 0.01, 0.01]  # none after the last attempt


async def test_error_then_new_controller(fakes):
    old = await fakes(respond=scripted((41, [])))  # NOT_CONTROLLER
    new = await fakes(respond=scripted((0, [])))
    endpoints = iter([(1, "127.0.0.1", old.port), (2, "127.0.0.1", new.port)])
    assert await run(make_broker(), lambda: next(endpoints))
    assert len(old.received) == 1 and len(new.received) == 1


async def test_network_failures_are_retried_on_a_new_connection(fakes):
    controller = await fakes(respond=scripted((0, [])))
    controller.drop_next = 1
    assert await run(make_broker(), lambda: (1, "127.0.0.1", controller.port))
    assert len(controller.received) == 2 and controller.connections == 2


async def test_unreachable_then_reachable_controller(fakes):
    port = free_port()
    started = []

    async def sleep(seconds):
        if not started:  # the controller comes up during the first backoff
            started.append(await fakes(port=port, respond=scripted((0, []))))
    assert await run(make_broker(), lambda: (1, "127.0.0.1", port), sleep)
    assert len(started[0].received) == 1


async def test_answer_timeout_counts_as_a_failed_attempt(fakes):
    controller = await fakes(respond=scripted((0, [])))
    controller.hold.clear()
    sleeps = Sleeps()

    async def sleep(seconds):
        sleeps.waits.append(seconds)
        controller.hold.set()
    assert await run(make_broker(), lambda: (1, "127.0.0.1", controller.port), sleep,
                     request_timeout_ms=300)
    assert len(sleeps.waits) == 1 and controller.connections == 2


async def test_no_controller_known_fails_without_sending(fakes):
    sleeps = Sleeps()
    assert not await run(make_broker(), lambda: None, sleeps)
    assert sleeps.waits == [5.0, 5.0]


async def test_previous_controller_is_reused_when_the_cache_forgets_it(fakes):
    controller = await fakes(respond=scripted((0, [("t", 0)]), (0, [])))
    endpoints = iter([(1, "127.0.0.1", controller.port), None])
    assert await run(make_broker(), lambda: next(endpoints))
    assert len(controller.received) == 2


async def test_cache_lookup_uses_the_inter_broker_listener():
    cache = MetadataCache("cluster", 3, inter_broker_listener="INTERNAL")
    assert cache_controller_endpoint(cache, "INTERNAL") is None  # controller_id -1
    cache.controller_id = 1
    assert cache_controller_endpoint(cache, "INTERNAL") is None  # not registered
    cache.put_broker(BrokerEndpoint(1, "external", 9092),
                     {"INTERNAL": BrokerEndpoint(1, "internal", 9093),
                      "EXTERNAL": BrokerEndpoint(1, "external", 9092)})
    assert cache_controller_endpoint(cache, "INTERNAL") == (1, "internal", 9093)


async def test_default_lookup_reads_the_cache(fakes):
    controller = await fakes(respond=scripted((0, [])))
    broker = make_broker()
    cache = broker["cache"]
    cache.controller_id = 1
    cache.put_broker(BrokerEndpoint(1, "127.0.0.1", controller.port),
                     {"INTERNAL": BrokerEndpoint(1, "127.0.0.1", controller.port)})
    assert await asyncio.wait_for(controlled_shutdown(**broker, sleep=Sleeps()), WAIT_S)
    assert len(controller.received) == 1


async def test_this_broker_as_active_controller_is_asked_in_process():
    calls = []

    class LocalController:
        is_active = True

        async def controlled_shutdown(self, broker_id, broker_epoch):
            calls.append((broker_id, broker_epoch))
            return (0, [("t", 0)]) if len(calls) == 1 else (0, [])
    broker = make_broker(controller=LocalController())
    assert await run(broker, lambda: (3, "127.0.0.1", free_port()))
    assert calls == [(3, 4242), (3, 4242)]


async def test_each_attempt_sends_the_current_broker_epoch(fakes):
    controller = await fakes(respond=scripted((0, [("t", 0)]), (0, [])))
    epochs = iter([4242, 5151])
    epoch = [next(epochs)]

    async def sleep(seconds):   # the session is replaced during the backoff
        epoch[0] = next(epochs)
    broker = {**make_broker(), "broker_epoch": lambda: epoch[0]}
    assert await run(broker, lambda: (1, "127.0.0.1", controller.port), sleep)
    assert [r.broker_epoch for _, r, _ in controller.received] == [4242, 5151]
