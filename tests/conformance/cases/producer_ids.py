"""AllocateProducerIds (67): a broker asks the controller for a producer id block.

Each broker is its own cluster's controller (broker id 1, broker epoch = the czxid of its
registration, never 1).  Only answers that claim nothing are compared: an unknown broker
(BROKER_ID_NOT_REGISTERED), a stale broker epoch and the default epoch -1 (both
STALE_BROKER_EPOCH: Kafka's controller accepts only the registration's epoch).  A granted
block needs the real broker epoch, which no request reveals; the mixed-cluster tests
(tests/mixed) cover it with Kafka 3.9 brokers asking kafkapy's controller.
"""
from __future__ import annotations

from tests.conformance.cases import for_api
from tests.conformance.cases.common import case


@for_api(67)
def allocate_producer_ids(v: int):
    yield case("unknown-broker", {"broker_id": 999, "broker_epoch": 5})
    yield case("stale-broker-epoch", {"broker_id": 1, "broker_epoch": 1})
    yield case("no-broker-epoch", {"broker_id": 1, "broker_epoch": -1})
