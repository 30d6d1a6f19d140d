"""ControllerChannelManager against fake brokers (``tests.support.fake_broker_server``).

A fake broker decodes each request with our protocol classes and answers the
matching response version (error 0), or holds/drops it on demand, so the
channel's FIFO, one-in-flight, resend-after-reconnect and removal behaviour can
be staged.  Every wait is bounded.
"""
from __future__ import annotations

import asyncio

import pytest

from kafkapy.controller.channel import ControllerChannelManager
from kafkapy.protocol.inter_broker import (
    StopReplicaRequest, UpdateMetadataRequest, UpdateMetadataResponse)
from tests.support.broker_process import free_port
from tests.support.fake_broker_server import WAIT_S, fakes  # noqa: F401  (fixture)


def update_metadata(epoch: int, controller_id: int = 0):
    return UpdateMetadataRequest[8](controller_id=controller_id, is_k_raft_controller=False, type=0,
                                    controller_epoch=epoch, broker_epoch=-1, topic_states=[],
                                    live_brokers=[])


def stop_replica(epoch: int):
    return StopReplicaRequest[4](controller_id=0, is_k_raft_controller=False, controller_epoch=epoch,
                                 broker_epoch=-1, topic_states=[])


@pytest.fixture
async def channel():
    delivered = []

    def local_deliver(request):
        delivered.append(request)
        return UpdateMetadataResponse[request.API_VERSION](error_code=0)
    chan = ControllerChannelManager(asyncio.get_running_loop(), local_node_id=0,
                                    local_deliver=local_deliver, socket_timeout_ms=2000)
    chan.delivered_locally = delivered
    yield chan
    chan.close()
    await asyncio.wait_for(chan.wait_closed(), WAIT_S)


class Answers:
    """Collects callback responses; ``wait(n)`` until n have come."""

    def __init__(self) -> None:
        self.items: list[tuple[str, object]] = []
        self._changed = asyncio.Event()

    def callback(self, tag: str):
        def record(response) -> None:
            self.items.append((tag, response))
            self._changed.set()
        return record

    async def wait(self, count: int) -> None:
        async def until() -> None:
            while len(self.items) < count:
                self._changed.clear()
                await self._changed.wait()
        await asyncio.wait_for(until(), WAIT_S)


async def test_requests_to_one_broker_run_in_order_one_at_a_time(channel, fakes):
    fake = await fakes()
    fake.hold.clear()
    channel.add_broker(1, "127.0.0.1", fake.port)
    answers = Answers()
    for epoch in range(1, 11):
        request = update_metadata(epoch) if epoch % 2 else stop_replica(epoch)
        channel.send(1, request, answers.callback(str(epoch)))
    await fake.wait_received(1)
    await asyncio.sleep(0.2)  # a pipelining channel would have sent more by now
    assert len(fake.received) == 1
    assert channel.queue_size(1) == 9 and channel.total_queue_size() == 9
    fake.hold.set()
    await answers.wait(10)
    assert [tag for tag, _ in answers.items] == [str(e) for e in range(1, 11)]
    assert [r.controller_epoch for _, r, _ in fake.received] == list(range(1, 11))
    assert [type(r).__name__ for _, r in answers.items][:2] == ["UpdateMetadataResponse",
                                                                "StopReplicaResponse"]
    assert all(r.error_code == 0 for _, r in answers.items)
    assert channel.queue_size(1) == 0
    # Kafka's channel NetworkClient uses the controller's broker id as its client id
    assert {client_id for _, _, client_id in fake.received} == {"0"}
    assert fake.connections == 1


async def test_queues_of_different_brokers_are_independent(channel, fakes):
    slow, fast = await fakes(), await fakes()
    slow.hold.clear()
    channel.add_broker(1, "127.0.0.1", slow.port)
    channel.add_broker(2, "127.0.0.1", fast.port)
    answers = Answers()
    channel.send(1, update_metadata(1), answers.callback("slow"))
    channel.send(2, update_metadata(1), answers.callback("fast"))
    await answers.wait(1)
    assert [tag for tag, _ in answers.items] == ["fast"]
    slow.hold.set()
    await answers.wait(2)


async def test_broker_down_then_up_gets_the_queued_requests(channel, fakes):
    port = free_port()
    channel.add_broker(1, "127.0.0.1", port)
    answers = Answers()
    for epoch in (1, 2, 3):
        channel.send(1, update_metadata(epoch), answers.callback(str(epoch)))
    await asyncio.sleep(0.5)  # several refused connection attempts
    assert answers.items == []
    fake = await fakes(port=port)
    await answers.wait(3)
    assert [tag for tag, _ in answers.items] == ["1", "2", "3"]


async def test_reconnects_after_the_broker_restarts(channel, fakes):
    fake = await fakes()
    port = fake.port
    channel.add_broker(1, "127.0.0.1", port)
    answers = Answers()
    channel.send(1, update_metadata(1), answers.callback("before"))
    await answers.wait(1)
    await fake.stop()
    channel.send(1, update_metadata(2), answers.callback("during"))
    await asyncio.sleep(0.3)
    restarted = await fakes(port=port)
    channel.send(1, update_metadata(3), answers.callback("after"))
    await answers.wait(3)
    assert [tag for tag, _ in answers.items] == ["before", "during", "after"]
    assert [r.controller_epoch for _, r, _ in restarted.received] == [2, 3]


async def test_request_lost_with_its_connection_is_resent_once_answered_once(channel, fakes):
    fake = await fakes()
    fake.drop_next = 2  # the broker dies twice while handling the first request
    channel.add_broker(1, "127.0.0.1", fake.port)
    answers = Answers()
    channel.send(1, update_metadata(7), answers.callback("a"))
    channel.send(1, update_metadata(8), answers.callback("b"))
    await answers.wait(2)
    assert [r.controller_epoch for _, r, _ in fake.received] == [7, 7, 7, 8]
    assert [tag for tag, _ in answers.items] == ["a", "b"]
    assert fake.answered == 2 and fake.connections == 3


async def test_removed_broker_drops_queued_and_in_flight_requests(channel, fakes):
    fake = await fakes()
    fake.hold.clear()
    channel.add_broker(1, "127.0.0.1", fake.port)
    answers = Answers()
    for epoch in (1, 2, 3):
        channel.send(1, update_metadata(epoch), answers.callback(str(epoch)))
    await fake.wait_received(1)
    channel.remove_broker(1)
    assert not channel.has_broker(1) and channel.queue_size(1) == 0
    fake.hold.set()
    channel.send(1, update_metadata(4), answers.callback("4"))  # not in the channel: dropped
    await asyncio.sleep(0.3)
    assert answers.items == []
    assert len(fake.received) == 1
    # added again: a fresh queue that works
    channel.add_broker(1, "127.0.0.1", fake.port)
    channel.send(1, update_metadata(5), answers.callback("5"))
    await answers.wait(1)
    assert [tag for tag, _ in answers.items] == ["5"]


async def test_removal_stops_retrying_an_unreachable_broker(channel):
    port = free_port()
    channel.add_broker(1, "127.0.0.1", port)
    answers = Answers()
    channel.send(1, update_metadata(1), answers.callback("x"))
    await asyncio.sleep(0.3)
    channel.remove_broker(1)
    await asyncio.wait_for(channel.wait_closed(), WAIT_S)
    assert answers.items == []


async def test_local_delivery_is_synchronous_and_skips_the_network(channel, fakes):
    answers = Answers()
    request = update_metadata(4)
    channel.add_broker(0, "127.0.0.1", free_port())  # ourselves: no queue, no connection
    channel.send(0, request, answers.callback("local"))
    assert [tag for tag, _ in answers.items] == ["local"]  # before send returned
    assert channel.delivered_locally == [request]
    assert not channel.has_broker(0) and channel.queue_size(0) == 0
    channel.send(0, update_metadata(5))  # no callback: delivered all the same
    assert len(channel.delivered_locally) == 2


async def test_endpoint_change_moves_the_queue_to_the_new_address(channel, fakes):
    old, new = await fakes(), await fakes()
    old.hold.clear()
    channel.add_broker(1, "127.0.0.1", old.port)
    answers = Answers()
    channel.send(1, update_metadata(1), answers.callback("1"))
    await old.wait_received(1)
    channel.add_broker(1, "127.0.0.1", new.port)
    await answers.wait(1)
    assert [r.controller_epoch for _, r, _ in new.received] == [1]


async def test_a_failing_callback_does_not_stop_the_queue(channel, fakes):
    fake = await fakes()
    channel.add_broker(1, "127.0.0.1", fake.port)
    answers = Answers()

    def explode(response):
        raise RuntimeError("callback bug")
    channel.send(1, update_metadata(1), explode)
    channel.send(1, update_metadata(2), answers.callback("after"))
    await answers.wait(1)


async def test_close_stops_everything(fakes):
    fake = await fakes()
    chan = ControllerChannelManager(asyncio.get_running_loop(), 0, None, client_id="c",
                                    socket_timeout_ms=2000)
    chan.add_broker(1, "127.0.0.1", fake.port)
    chan.add_broker(2, "127.0.0.1", free_port())  # unreachable: retrying
    answers = Answers()
    chan.send(1, update_metadata(1), answers.callback("1"))
    chan.send(2, update_metadata(1), answers.callback("2"))
    await answers.wait(1)
    chan.close()
    await asyncio.wait_for(chan.wait_closed(), WAIT_S)
    assert chan.broker_ids == []
    chan.add_broker(1, "127.0.0.1", fake.port)  # ignored after close
    chan.send(1, update_metadata(2), answers.callback("late"))
    await asyncio.sleep(0.1)
    assert [tag for tag, _ in answers.items] == ["1"]
    assert fake.received[0][2] == "c"
