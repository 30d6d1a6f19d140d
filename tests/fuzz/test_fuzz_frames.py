"""Fuzzing the wire: mutated frames of every advertised API and version.

After each batch of mutated frames the broker must answer a Metadata request from a new
connection within a second, and at the end its log must hold no traceback: a bad request
costs its sender the connection (or an error code), never the broker.  First, each seed
unmutated must be answered: a well-formed request of any advertised API and version gets
an answer, if only an error code, never a closed connection.  Hypothesis drives
the batches, derandomized so a run is reproducible; `make fuzz` runs the same mutations for
10^6 frames (bench/fuzz_frames.py).
"""
from __future__ import annotations

import random

import pytest
from hypothesis import HealthCheck, Phase, given, settings
from hypothesis import strategies as st

from tests.support.broker_process import BrokerProcess
from tests.support.fuzz_frames import seed_frames
from tests.support.fuzz_serving import SENT, _topic, answered, assert_serving, send_batch
from tests.support.wire import WireClient

FRAMES_PER_BATCH = 25
BATCHES = 120
PRODUCE = 0

pytestmark = pytest.mark.timeout(600)


@pytest.fixture(scope="module")
def broker(tmp_path_factory):
    b = BrokerProcess(tmp_path_factory.mktemp("fuzz") / "logs").start()
    admin = WireClient(b.bootstrap)
    admin.request(3, 4, topics=[_topic()], allow_auto_topic_creation=True)
    admin.close()
    yield b
    b.stop()


@settings(max_examples=BATCHES, deadline=None, derandomize=True, database=None,
          phases=(Phase.explicit, Phase.generate),   # a broker's state is not replayable
          suppress_health_check=list(HealthCheck))
@given(seed=st.integers(min_value=0, max_value=2**32 - 1))
def _fuzz_batch(bootstrap: str, seed: int) -> None:
    send_batch(bootstrap, random.Random(seed), FRAMES_PER_BATCH)
    assert_serving(bootstrap)


def test_every_well_formed_seed_is_answered(broker):
    """The unmutated seed of every advertised (API, version) gets an answer (an error code
    at worst), never a closed connection; Produce's seeds ask acks=0, which Kafka never
    answers."""
    unanswered = [(key, version) for key, version, frame in seed_frames()
                  if key != PRODUCE and not answered(broker.bootstrap, frame)]
    assert not unanswered
    assert broker.proc.poll() is None


def test_mutated_frames_never_hurt_the_broker(broker):
    _fuzz_batch(broker.bootstrap)
    assert SENT[0] == BATCHES * FRAMES_PER_BATCH
    assert broker.proc.poll() is None
    output = broker.output_path.read_text(errors="replace")    # all of it, not the tail
    assert "Traceback" not in output, output[output.find("Traceback") - 2000:][:8000]
