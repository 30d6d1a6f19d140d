"""BrokerConnection with ``links`` (``kafkapy.network.links``) against a real in-process broker.

While the link is down the connection behaves as across a network partition: connecting
waits (then times out), requests are held and written in order once the link is back, an
answer that arrived is handed over only then, and request timeouts run meanwhile.
"""
from __future__ import annotations

import asyncio

import pytest

from kafkapy.network.client import BrokerConnection
from kafkapy.protocol.messages import REQUESTS

ApiVersions = REQUESTS[18]
STALL_S = 0.2       # long enough for a request to a local broker to be answered many times


class Switch:
    """A ``Links`` with one link, up or down."""

    def __init__(self, up: bool = True) -> None:
        self.up = up
        self._changed = asyncio.Event()

    def reachable(self, host: str, port: int) -> bool:
        return self.up

    async def wait_reachable(self, host: str, port: int) -> None:
        while not self.up:
            await self._changed.wait()

    def set(self, up: bool) -> None:
        self.up = up
        self._changed.set()
        self._changed = asyncio.Event()


@pytest.fixture
def b(async_kafka_broker):
    """A broker in the test's event loop (the kafkapy.testing pytest plugin's)."""
    return async_kafka_broker


def _request():
    return ApiVersions[3](client_software_name="links-test", client_software_version="1")


async def test_connect_across_a_cut_link_times_out_and_never_reaches_the_broker(b):
    conn = BrokerConnection(links=Switch(up=False))
    with pytest.raises(asyncio.TimeoutError):
        await conn.connect(b.host, b.port, timeout_s=STALL_S)
    assert b.server.socket_server.connection_count == 0


async def test_connect_goes_on_once_the_link_is_back(b):
    switch = Switch(up=False)
    conn = BrokerConnection(links=switch)
    connecting = asyncio.ensure_future(conn.connect(b.host, b.port, timeout_s=10))
    await asyncio.sleep(STALL_S)
    assert not connecting.done()
    switch.set(True)
    await connecting
    try:
        assert (await conn.send(_request())).error_code == 0
    finally:
        conn.close()


async def test_requests_are_held_then_sent_in_order(b):
    switch = Switch()
    conn = BrokerConnection(links=switch)
    await conn.connect(b.host, b.port)
    try:
        switch.set(False)
        sends = [asyncio.ensure_future(conn.send(_request())) for _ in range(3)]
        await asyncio.sleep(STALL_S)
        assert not any(s.done() for s in sends)
        assert b.server.socket_server.inflight_requests() == 0     # nothing reached it
        switch.set(True)
        answers = await asyncio.gather(*sends)
        ids = [a._header.correlation_id for a in answers]
        assert ids == sorted(ids) and all(a.error_code == 0 for a in answers)
        assert conn.connected
    finally:
        conn.close()


async def test_an_answer_that_arrived_is_handed_over_once_the_link_is_back(b):
    switch = Switch()
    conn = BrokerConnection(links=switch)
    await conn.connect(b.host, b.port)
    try:
        sending = asyncio.ensure_future(conn.send(_request()))
        await asyncio.sleep(0)          # the request is written
        switch.set(False)
        await asyncio.sleep(STALL_S)    # its answer is in the socket by now
        assert not sending.done()
        switch.set(True)
        assert (await sending).error_code == 0
    finally:
        conn.close()


async def test_a_request_across_a_cut_link_times_out_and_closes_the_connection(b):
    switch = Switch()
    conn = BrokerConnection(links=switch)
    await conn.connect(b.host, b.port)
    switch.set(False)
    with pytest.raises(asyncio.TimeoutError):
        await conn.send(_request(), timeout_s=STALL_S)
    assert not conn.connected
    switch.set(True)
    with pytest.raises(ConnectionError):
        await conn.send(_request())


async def test_without_links_nothing_is_asked(b):
    conn = BrokerConnection()
    await conn.connect(b.host, b.port)
    try:
        assert (await conn.send(_request())).error_code == 0
    finally:
        conn.close()
