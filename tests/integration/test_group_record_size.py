"""A group whose record would exceed the offsets topic's max.message.bytes is not stored.

A member joining with megabytes of protocol metadata makes the group's metadata record
larger than ``__consumer_offsets`` accepts; Kafka's append refuses it (the coordinator
answers the sync with UNKNOWN_SERVER_ERROR) and nothing reaches the log, so a restart does
not reload it."""
from __future__ import annotations

import os

import pytest

from kafkapy.protocol.messages import REQUESTS
from tests.support.broker_process import BrokerProcess
from tests.support.wire import WireClient

METADATA = os.urandom(3 << 20)      # 3 MiB, over the 1 MiB max.message.bytes


@pytest.fixture
def broker(tmp_path):
    with BrokerProcess(tmp_path / "logs").start() as b:
        yield b


def _offsets_log_bytes(log_dir) -> int:
    return sum(os.path.getsize(os.path.join(root, name))
               for root, _, names in os.walk(log_dir) if "__consumer_offsets" in root
               for name in names if name.endswith(".log"))


def test_group_with_huge_member_metadata_is_refused_not_persisted(broker):
    client = WireClient(broker.bootstrap, timeout=30)
    coordinator = client.request(10, 2, key="huge", key_type=0)
    for _ in range(50):                         # the offsets topic is created on first use
        if coordinator.error_code == 0:
            break
        coordinator = client.request(10, 2, key="huge", key_type=0)
    assert coordinator.error_code == 0
    protocol = REQUESTS[11].JoinGroupRequestProtocol(version=5, name="range", metadata=METADATA)
    join = client.request(11, 5, group_id="huge", session_timeout_ms=10000,
                          rebalance_timeout_ms=10000, member_id="", group_instance_id=None,
                          protocol_type="consumer", protocols=[protocol])
    if join.error_code == 79:                   # MEMBER_ID_REQUIRED: join again with it
        join = client.request(11, 5, group_id="huge", session_timeout_ms=10000,
                              rebalance_timeout_ms=10000, member_id=join.member_id,
                              group_instance_id=None, protocol_type="consumer",
                              protocols=[protocol])
    assert join.error_code == 0
    assignment = REQUESTS[14].SyncGroupRequestAssignment(version=3, member_id=join.member_id,
                                                         assignment=b"")
    sync = client.request(14, 3, group_id="huge", generation_id=join.generation_id,
                          member_id=join.member_id, group_instance_id=None,
                          assignments=[assignment])
    assert sync.error_code == -1                # UNKNOWN_SERVER_ERROR, as Kafka answers
    client.close()
    assert _offsets_log_bytes(broker.log_dir) < len(METADATA)
    broker.restart()
    assert "Traceback" not in broker.output()
    assert _offsets_log_bytes(broker.log_dir) < len(METADATA)
