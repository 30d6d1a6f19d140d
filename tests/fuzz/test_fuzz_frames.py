"""Fuzzing the wire: mutated frames of every advertised API and version.

After each batch of mutated frames the broker must answer a Metadata request from a new
connection within a second, and at the end its log must hold no traceback: a bad request
costs its sender the connection (or an error code), never the broker.  Hypothesis drives
the batches, derandomized so a run is reproducible; `make fuzz` runs the same mutations for
10^6 frames (bench/fuzz_frames.py).
"""
from __future__ import annotations

import random
import socket

import pytest
from hypothesis import HealthCheck, Phase, given, settings
from hypothesis import strategies as st

from kafkapy.protocol.messages import REQUESTS
from tests.support.broker_process import BrokerProcess
from tests.fuzz.frames import TOPIC, mutate, seed_frames
from tests.support.wire import WireClient

FRAMES_PER_BATCH = 25
BATCHES = 120

pytestmark = pytest.mark.timeout(600)

_SEEDS = seed_frames()


@pytest.fixture(scope="module")
def broker(tmp_path_factory):
    b = BrokerProcess(tmp_path_factory.mktemp("fuzz") / "logs").start()
    admin = WireClient(b.bootstrap)
    admin.request(3, 4, topics=[_topic()], allow_auto_topic_creation=True)
    admin.close()
    yield b
    b.stop()


def send_one(bootstrap: str, frame: bytes) -> None:
    """One frame on a connection of its own, read until the broker answers or closes (or
    0.5 s pass: a long poll), so every frame is really handled, never lost in a socket
    the broker already closed."""
    with socket.create_connection(_address(bootstrap), timeout=2) as sock:
        try:
            sock.sendall(frame)
            sock.shutdown(socket.SHUT_WR)
            sock.settimeout(0.5)
            while sock.recv(65536):
                pass
        except OSError:
            pass


def _topic():
    return REQUESTS[3].MetadataRequestTopic(version=4, name=TOPIC)


def _address(bootstrap: str) -> tuple[str, int]:
    host, port = bootstrap.rsplit(":", 1)
    return host, int(port)


SENT = [0]


def send_batch(bootstrap: str, rng: random.Random, frames: int) -> None:
    for _ in range(frames):
        _, _, seed = rng.choice(_SEEDS)
        send_one(bootstrap, mutate(seed, rng))
        SENT[0] += 1


def assert_serving(bootstrap: str) -> None:
    client = WireClient(bootstrap, timeout=1.0)
    try:
        # The topic may have been deleted by a fuzzed DeleteTopics: any answer will do.
        response = client.request(3, 4, topics=[_topic()], allow_auto_topic_creation=False)
        assert response.brokers
    finally:
        client.close()


@settings(max_examples=BATCHES, deadline=None, derandomize=True, database=None,
          phases=(Phase.explicit, Phase.generate),   # a broker's state is not replayable
          suppress_health_check=list(HealthCheck))
@given(seed=st.integers(min_value=0, max_value=2**32 - 1))
def _fuzz_batch(bootstrap: str, seed: int) -> None:
    send_batch(bootstrap, random.Random(seed), FRAMES_PER_BATCH)
    assert_serving(bootstrap)


def test_mutated_frames_never_hurt_the_broker(broker):
    _fuzz_batch(broker.bootstrap)
    assert SENT[0] == BATCHES * FRAMES_PER_BATCH
    assert broker.proc.poll() is None
    output = broker.output()
    assert "Traceback" not in output, output[-8000:]
