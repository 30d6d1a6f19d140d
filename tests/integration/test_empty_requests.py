"""Requests that name no partitions are answered at once, as Kafka answers them.

A Fetch with no partitions and ``max_wait_ms`` > 0 is what a Java consumer sends when it
closes (it ends its fetch session); a Produce with acks=-1 and no topics is legal too.
Neither has anything to wait for, so the broker answers immediately and logs nothing.
"""
from __future__ import annotations

import pytest

from tests.support.broker_process import BrokerProcess
from tests.support.wire import WireClient


@pytest.fixture(scope="module")
def broker(tmp_path_factory):
    with BrokerProcess(tmp_path_factory.mktemp("empty") / "logs").start() as b:
        yield b


def _fetch_fields(version: int) -> dict:
    fields = dict(replica_id=-1, max_wait_ms=60000, min_bytes=1, topics=[])
    if version >= 3:
        fields["max_bytes"] = 1 << 20
    if version >= 4:
        fields["isolation_level"] = 0
    if version >= 7:
        fields.update(session_id=0, session_epoch=-1, forgotten_topics_data=[])
    if version >= 11:
        fields["rack_id"] = ""
    if version >= 15:
        del fields["replica_id"]
    return fields


@pytest.mark.parametrize("version", [4, 11, 17])
def test_fetch_naming_no_partitions_is_answered_at_once(broker, version):
    client = WireClient(broker.bootstrap)
    try:
        # max_wait_ms is a minute and the client gives up after 10 s: an answer at all
        # means nothing was awaited.
        response = client.request(1, version, **_fetch_fields(version))
        assert response.responses == []
        if version >= 7:
            assert response.error_code == 0
        assert client.request(18, 0).error_code == 0     # the connection still serves
    finally:
        client.close()
    output = broker.output()
    assert "Traceback" not in output and "watch key" not in output, output
